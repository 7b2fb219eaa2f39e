-- jobq_requeue_dead_letter: an operator gives one dead_letter, failed or cancelled job another
-- run. The error history is kept, so that the job's past failures stay visible after the
-- retry; a cancel request is cleared (the requeue is the operator's newer decision).
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_requeue_dead_letter(job_id uuid) RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_queue text;
    v_old_status text;
    v_job_type text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    -- The status it leaves, for jobq_metrics' gauge; the lock keeps it until the UPDATE.
    SELECT j.status INTO v_old_status
    FROM jobq_jobs AS j
    WHERE j.id = jobq_requeue_dead_letter.job_id
    FOR UPDATE;

    UPDATE jobq_jobs AS j
    SET
        status = 'pending',
        available_at = v_now,
        attempts = 0,
        scheduled = FALSE,
        locked_at = NULL,
        locked_by = NULL,
        finished_at = NULL,
        cancel_requested_at = NULL,
        cancel_reason = NULL,
        updated_at = v_now
    WHERE j.id = jobq_requeue_dead_letter.job_id
      AND j.status IN ('dead_letter', 'failed', 'cancelled')
    RETURNING j.queue, j.job_type INTO v_queue, v_job_type;
    IF v_queue IS NULL THEN
        RETURN false;
    END IF;
    PERFORM jobq__metrics_count(
        'requeued'::text, ARRAY[v_queue], ARRAY[v_job_type], ARRAY[v_old_status],
        NULL::double precision[]
    );
    PERFORM pg_catalog.pg_notify(jobq__channel(), v_queue);
    RETURN true;
END;
$$;

COMMENT ON FUNCTION jobq_requeue_dead_letter(uuid) IS
'Makes a dead_letter, failed or cancelled job pending again: available now, attempts 0,
claim and cancel request cleared, error history (last_error, errors) kept; wakes a worker (a
NOTIFY on the installation''s channel).
Arguments: job_id (the job).
Result: true if it did; false for any other status or an unknown id (nothing changes then).
Errors: none.';

REVOKE EXECUTE ON FUNCTION jobq_requeue_dead_letter(uuid) FROM PUBLIC;
