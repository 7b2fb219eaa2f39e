-- jobq__cancel_apply (private): the body of the deferred constraint trigger
-- jobq_cancel_requests_apply, which applies a cancel request that jobq_cancel staged in
-- jobq_cancel_requests to the job's row while the cancelling transaction commits.
--
-- Why at commit: an UPDATE of a processing job's row holds its lock until the transaction
-- ends, and the worker's completion, failure, heartbeat and release of that job wait for it.
-- Made here, the lock lasts from the deferred triggers to the commit record, whatever the
-- caller does between its jobq_cancel() and its COMMIT. The UPDATE waits for a worker
-- statement in flight on the row and re-reads it, so the request and the attempt's end are
-- ordered as one row lock orders them:
--   * still processing: the request is set (cancel_requested_at, cancel_reason); a worker
--     statement that comes after it waits for the commit, re-reads the row and sees it;
--   * pending again (the attempt was failed with a retry or released before the commit): the
--     job is cancelled at once, as jobq_cancel cancels a pending job;
--   * finished, or a request already set: nothing changes.
-- A caller that sets the constraint IMMEDIATE after its jobq_cancel() (SET CONSTRAINTS)
-- applies its requests then, and holds those rows until it commits: a choice it makes for
-- the jobs it cancels, which the Worker's bounded lock waits absorb (see docs/guarantees.md).
--
-- SECURITY DEFINER with a pinned search_path: it runs at the caller's COMMIT, outside
-- jobq_cancel, as the caller and with the caller's search_path.

CREATE OR REPLACE FUNCTION jobq__cancel_apply() RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_status text;
    v_queue text;
    v_job_type text;
    v_worker text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    UPDATE jobq_jobs AS j
    SET
        status = CASE WHEN j.status IN ('pending', 'waiting') THEN 'cancelled' ELSE j.status END,
        finished_at = CASE WHEN j.status IN ('pending', 'waiting') THEN v_now END,
        waiting_on = 0,
        last_error = CASE
            WHEN j.status IN ('pending', 'waiting') THEN coalesce(new.reason, 'cancelled')
            ELSE j.last_error
        END,
        cancel_requested_at = CASE WHEN j.status = 'processing' THEN new.requested_at END,
        cancel_reason = CASE WHEN j.status = 'processing' THEN new.reason END,
        updated_at = v_now
    WHERE j.id = new.job_id
      AND (
          j.status IN ('pending', 'waiting')
          OR (j.status = 'processing' AND j.cancel_requested_at IS NULL)
      )
    RETURNING j.status, j.queue, j.job_type, j.locked_by
    INTO v_status, v_queue, v_job_type, v_worker;

    -- Every row of the table is this transaction's own until it commits, and none outlives it.
    DELETE FROM jobq_cancel_requests AS r WHERE r.job_id = new.job_id;

    IF v_status = 'cancelled' THEN
        PERFORM jobq__metrics_count(
            'cancelled'::text, ARRAY[v_queue], ARRAY[v_job_type], NULL::text[],
            NULL::double precision[]
        );
        -- announced on the done channel when a client awaits it (jobq_awaits)
        PERFORM jobq__notify_events('done'::text, jobq__awaits_end(ARRAY[new.job_id]));
    ELSIF v_status = 'processing' THEN
        PERFORM jobq__notify_events('cancel'::text, ARRAY[v_worker]);
    END IF;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION jobq__cancel_apply() IS
'Private. Trigger of jobq_cancel_requests (deferred, at the commit of a jobq_cancel() call''s
transaction): sets the cancel request on the job if it is still processing, cancels it if it
is pending again, leaves a finished one alone, and deletes the staged row.';

REVOKE EXECUTE ON FUNCTION jobq__cancel_apply() FROM PUBLIC;
