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
BEGIN
    -- Back from jobq_jobs_history to jobq_jobs (jobq__requeue), with the status it leaves,
    -- for jobq_metrics' gauge.
    SELECT r.queue, r.job_type, r.old_status INTO v_queue, v_job_type, v_old_status
    FROM jobq__requeue(ARRAY[jobq_requeue_dead_letter.job_id]) AS r;
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
