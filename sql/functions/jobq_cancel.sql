-- jobq_cancel: cancels jobs. A pending job is cancelled at once; a processing job keeps
-- running with a cancel request (cancel_requested_at), which its worker learns of through
-- jobq_cancel_requested (sent with its heartbeat, so within one heartbeat interval even when
-- it missed every notification) and, sooner, through a NOTIFY on the installation's cancel
-- channel whose payload is the worker's id. Whichever way that attempt then ends other than
-- a completion (failure, release, takeover), the job ends cancelled (jobq_fail, jobq_release,
-- jobq_dequeue); a completion ends it succeeded. A finished job is left alone.
--
-- The rows to change are locked in id order before they are changed, so that two cancels of
-- overlapping sets wait for each other instead of deadlocking. Under READ COMMITTED a row that
-- a concurrent claim or completion held is re-read once its lock is released: a job claimed
-- meanwhile gets a request, one completed meanwhile is left alone. The statuses returned are
-- then read by a second statement, with a snapshot taken after those waits.
--! levels: producer, worker, admin
--! granted-as: jobq_enqueue

CREATE OR REPLACE FUNCTION jobq_cancel(
    job_ids uuid[],
    reason text DEFAULT NULL
) RETURNS TABLE (job_id uuid, status text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_reason text := pg_catalog.substr(jobq_cancel.reason, 1, 10000);
    v_ended text[];
    v_workers text[];
    -- The transaction's time, as a value: Citus refuses now() in a CASE, a COALESCE,
    -- RETURNING or ON CONFLICT DO UPDATE; a value is the same for PostgreSQL.
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF pg_catalog.cardinality(jobq_cancel.job_ids) > 100000 THEN
        RAISE EXCEPTION 'jobq_cancel: job_ids has % elements, at most 100000 are allowed',
            pg_catalog.cardinality(jobq_cancel.job_ids)
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Cancel in several calls.';
    END IF;

    WITH locked AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.id = ANY (jobq_cancel.job_ids)
          AND (j.status = 'pending' OR (j.status = 'processing' AND j.cancel_requested_at IS NULL))
        ORDER BY j.id
        FOR UPDATE
    ),

    changed AS (
        UPDATE jobq_jobs AS j
        SET
            status = CASE WHEN j.status = 'pending' THEN 'cancelled' ELSE j.status END,
            finished_at = CASE WHEN j.status = 'pending' THEN v_now END,
            last_error = CASE
                WHEN j.status = 'pending' THEN coalesce(v_reason, 'cancelled')
                ELSE j.last_error
            END,
            cancel_requested_at = CASE
                WHEN j.status = 'processing' THEN v_now
            END,
            cancel_reason = CASE WHEN j.status = 'processing' THEN v_reason END,
            updated_at = v_now
        FROM locked
        WHERE j.id = locked.id
          -- Locked rows were re-read: a job completed while we waited for its lock is finished.
          AND (j.status = 'pending' OR (j.status = 'processing' AND j.cancel_requested_at IS NULL))
        RETURNING j.id, j.status, j.locked_by, j.queue, j.job_type
    ),

    -- Only the pending jobs changed status; the running ones got a request.
    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'cancelled', pg_catalog.array_agg(k.queue), pg_catalog.array_agg(k.job_type)
        ) AS n
        FROM changed AS k
        WHERE k.status = 'cancelled'
        HAVING pg_catalog.count(*) > 0
    )

    SELECT
        pg_catalog.array_agg(c.id::text) FILTER (WHERE c.status = 'cancelled'),
        pg_catalog.array_agg(c.locked_by) FILTER (WHERE c.status = 'processing')
    INTO v_ended, v_workers
    FROM changed AS c
    LEFT JOIN counted ON TRUE;
    PERFORM jobq__notify_events('done', jobq__awaits_end(v_ended::uuid[]));
    PERFORM jobq__notify_events('cancel', v_workers);

    RETURN QUERY
    SELECT
        j.id,
        CASE
            WHEN j.status = 'processing' AND j.cancel_requested_at IS NOT NULL
                THEN 'cancel_requested'
            ELSE j.status
        END
    FROM jobq_jobs AS j
    WHERE j.id = ANY (jobq_cancel.job_ids)
    ORDER BY j.id;
END;
$$;

COMMENT ON FUNCTION jobq_cancel(uuid[], text) IS
'Cancels jobs. A pending job becomes cancelled at once (finished_at set, the reason as
last_error). A processing job keeps running and gets cancel_requested_at (and the reason in
cancel_reason); its worker is told by a NOTIFY on the cancel channel (payload: the worker id)
and by jobq_cancel_requested(); if that attempt then fails, is released or is taken over, the
job ends cancelled and never runs again; if it completes, it ends succeeded. A finished job, or
a processing one already asked, is left alone.
Arguments: job_ids (the jobs; at most 100,000), reason (why; cut to its first 10,000
characters; NULL: last_error says cancelled).
Result: one row per known id (unknown ids are left out), in id order: job_id and its status
after the call: cancelled, cancel_requested (processing with a request), or the finished status
it already had.
Errors: 54000 job_ids with more than 100,000 elements.
Concurrency: it locks the rows it changes in id order, waiting for concurrent claims and
completions, then acts on what they left: a job claimed meanwhile gets a request, one completed
meanwhile is left alone. A NOTIFY on the done channel for each job it cancelled that a client
awaits.';

REVOKE EXECUTE ON FUNCTION jobq_cancel(uuid[], text) FROM PUBLIC;
