-- jobq_cancel: cancels jobs. A pending or waiting job is cancelled at once; a processing job keeps
-- running with a cancel request (cancel_requested_at), which its worker learns of through
-- jobq_cancel_requested (sent with its heartbeat, so within one heartbeat interval even when
-- it missed every notification) and, sooner, through a NOTIFY on the installation's cancel
-- channel. Whichever way that attempt then ends other than a completion (failure, release,
-- takeover), the job ends cancelled (jobq_fail, jobq_release, jobq_dequeue); a completion ends
-- it succeeded. A finished job is left alone.
--
-- A pending job's row is locked and changed here: claims pass over a locked pending row (SKIP
-- LOCKED), and no worker statement matches a pending row (they all require the worker's own
-- claim), so a caller that keeps its transaction open holds up no worker. A processing job's
-- row is not touched here: its worker completes, fails, releases and heartbeats it, and would
-- wait for that row lock for as long as the caller's transaction stays open. The request is
-- staged in jobq_cancel_requests instead, and the deferred trigger jobq_cancel_requests_apply
-- (jobq__cancel_apply) sets it on the row while the transaction commits, ordered against the
-- attempt's end by the row lock it then takes. The constraint is set DEFERRED here, whatever
-- the caller set, so that it does not fire inside this call.
--
-- The pending rows are locked in id order before they are changed, so that two cancels of
-- overlapping sets wait for each other instead of deadlocking. Under READ COMMITTED a row that
-- a concurrent claim held is re-read once its lock is released: a job claimed meanwhile is
-- skipped by that statement and staged by the next one, which reads with a later snapshot (as
-- does the one that returns the statuses); a job that became pending again by then is staged
-- too, and cancelled at commit.
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
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
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
          AND j.status IN ('pending', 'waiting')
        ORDER BY j.id
        FOR UPDATE
    ),

    changed AS (
        UPDATE jobq_jobs AS j
        SET
            status = 'cancelled',
            finished_at = v_now,
            waiting_on = 0,
            last_error = coalesce(v_reason, 'cancelled'),
            updated_at = v_now
        FROM locked
        WHERE j.id = locked.id
          -- Locked rows were re-read: a job claimed while we waited for its lock is processing.
          AND j.status IN ('pending', 'waiting')
        RETURNING j.id, j.queue, j.job_type
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'cancelled'::text, pg_catalog.array_agg(k.queue), pg_catalog.array_agg(k.job_type),
            NULL::text[], NULL::double precision[]
        ) AS n
        FROM changed AS k
        HAVING pg_catalog.count(*) > 0
    )

    SELECT pg_catalog.array_agg(c.id::text)
    INTO v_ended
    FROM changed AS c
    LEFT JOIN counted ON TRUE;
    -- The cancelled jobs that a client awaits (jobq_awaits) are announced on the done channel.
    IF v_ended IS NOT NULL THEN
        PERFORM jobq__notify_events('done'::text, jobq__awaits_end(v_ended::uuid[]));
    END IF;

    SET CONSTRAINTS jobq_cancel_requests_apply DEFERRED;
    INSERT INTO jobq_cancel_requests (job_id, reason, requested_at)
    SELECT j.id, v_reason, v_now
    FROM jobq_jobs AS j
    WHERE j.id = ANY (jobq_cancel.job_ids)
      AND (j.status = 'pending' OR (j.status = 'processing' AND j.cancel_requested_at IS NULL))
      AND NOT EXISTS (SELECT FROM jobq_cancel_requests AS r WHERE r.job_id = j.id)
    ORDER BY j.id;

    RETURN QUERY
    SELECT
        j.id,
        CASE
            WHEN j.status = 'processing' AND j.cancel_requested_at IS NOT NULL
                THEN 'cancel_requested'
            WHEN j.status IN ('pending', 'processing')
                 AND EXISTS (SELECT FROM jobq_cancel_requests AS r WHERE r.job_id = j.id)
                THEN 'cancel_requested'
            ELSE j.status
        END
    FROM jobq_all_jobs AS j  -- finished jobs are reported too, with their status
    WHERE j.id = ANY (jobq_cancel.job_ids)
    ORDER BY j.id;
END;
$$;

COMMENT ON FUNCTION jobq_cancel(uuid[], text) IS
'Cancels jobs. A pending or waiting job becomes cancelled at once (finished_at set, the
reason as last_error), and its dependents follow their on_dependency_failure rules. A processing job keeps running and gets a cancel request: cancel_requested_at
(and the reason in cancel_reason), set on its row when the caller''s transaction commits; its
worker is then told by a NOTIFY on the cancel channel and by jobq_cancel_requested(); if that
attempt then fails, is released or is taken over, the job ends cancelled and never runs again;
if it completes, it ends succeeded. A finished job, or a processing one already asked, is left
alone.
Arguments: job_ids (the jobs; at most 100,000), reason (why; cut to its first 10,000
characters; NULL: last_error says cancelled).
Result: one row per known id (unknown ids are left out), in id order: job_id and its status
after the call: cancelled, cancel_requested (processing with a request, or a request that this
transaction applies at its commit), or the finished status it already had.
Errors: 54000 job_ids with more than 100,000 elements.
Concurrency: it locks the pending rows it cancels, in id order, waiting for concurrent claims;
it takes no lock on a processing job''s row, so a transaction left open after it never holds
up that job''s worker. At commit, a deferred trigger locks each processing job asked, waits for
a worker statement in flight on it, and then sets the request, or cancels the job if its
attempt has ended with it pending again, or leaves it alone if it finished. A NOTIFY on the
done channel for each job it cancelled that a client awaits.';

REVOKE EXECUTE ON FUNCTION jobq_cancel(uuid[], text) FROM PUBLIC;
