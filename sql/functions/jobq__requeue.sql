-- jobq__requeue (private): what both requeue functions do to their jobs. The dead_letter,
-- failed and cancelled jobs among job_ids move from jobq_jobs_history back to jobq_jobs,
-- pending, available now, attempts 0, claim and cancel request cleared, error history kept,
-- in one statement (a DELETE whose rows the INSERT takes: a row never moves between
-- partitions by an UPDATE). The DELETE locks each row, so two requeues of one job move it
-- once. Its idempotency key moves with it: while the row is in neither table for others
-- (until this transaction commits), an enqueue of the key waits on this transaction's row in
-- jobq_jobs (jobq_enqueue). No SET clause: it runs inside its callers, with their search_path.

CREATE OR REPLACE FUNCTION jobq__requeue(job_ids uuid[])
RETURNS TABLE (queue text, job_type text, old_status text)
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    RETURN QUERY
    WITH moved AS (
        DELETE FROM jobq_jobs_history AS h
        WHERE h.id = ANY (jobq__requeue.job_ids)
          AND h.status IN ('dead_letter', 'failed', 'cancelled')
        RETURNING
            h.id, h.queue, h.job_type, h.payload, h.idempotency_key, h.status, h.priority,
            h.max_attempts, h.last_error, h.errors, h.created_at, h.result, h.limit_group,
            h.limit_key, h.claimed_at
    ),

    back AS (
        INSERT INTO jobq_jobs AS j (
            id, queue, job_type, payload, idempotency_key, status, priority, attempts,
            max_attempts, available_at, last_error, errors, created_at, updated_at, scheduled,
            result, limit_group, limit_key, claimed_at
        )
        SELECT
            m.id, m.queue, m.job_type, m.payload, m.idempotency_key, 'pending', m.priority, 0,
            m.max_attempts, v_now, m.last_error, m.errors, m.created_at, v_now, FALSE,
            m.result, m.limit_group, m.limit_key, m.claimed_at
        FROM moved AS m
        RETURNING j.id
    )

    SELECT m.queue, m.job_type, m.status
    FROM moved AS m
    JOIN back AS b ON b.id = m.id;
END;
$$;

COMMENT ON FUNCTION jobq__requeue(uuid[]) IS
'Private. Moves the dead_letter, failed and cancelled jobs among job_ids from
jobq_jobs_history back to jobq_jobs, pending and available now (attempts 0, claim and cancel
request cleared, error history kept); returns the queue, job type and former status of each.';

REVOKE EXECUTE ON FUNCTION jobq__requeue(uuid[]) FROM PUBLIC;
