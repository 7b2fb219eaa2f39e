-- jobq__retire (private): moves the finished ones among the given jobs from jobq_jobs to
-- jobq_jobs_history, in one statement (a DELETE whose rows the INSERT takes: no UPDATE of a
-- partition key, so no row ever moves between partitions and no 40001 can come of it). The
-- trigger jobq_jobs_retire (jobq__retire_row) calls it at the end of each statement that
-- made a row finished by an UPDATE or an INSERT (failure, cancel, release, takeover); the
-- completion, the hot path, moves its row itself in the statement that finishes it
-- (jobq_complete).
--
-- A moved job whose row says has_dependents passes its end on to its dependents here
-- (jobq__dependents_finished), in the same transaction; for the others has_dependents is read
-- with the row the DELETE takes and nothing more is done.
--
-- The statement that finished the rows still holds their locks, so nothing else can change
-- them before they move, and no other transaction ever sees a finished job in jobq_jobs. A job
-- with an idempotency key needs nothing more: an enqueue of its key that runs meanwhile finds
-- the row in jobq_jobs, or waits for this transaction and then finds it here (jobq_enqueue).
-- No SET clause: it runs inside its callers, with their search_path.

CREATE OR REPLACE FUNCTION jobq__retire(job_ids uuid[]) RETURNS integer
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_moved integer;
    v_parents uuid[];
    v_statuses text[];
BEGIN
    IF job_ids IS NULL OR pg_catalog.cardinality(job_ids) = 0 THEN
        RETURN 0;
    END IF;
    WITH moved AS (
        DELETE FROM jobq_jobs AS j
        WHERE j.id = ANY (jobq__retire.job_ids) AND j.finished_at IS NOT NULL
        RETURNING
            j.id, j.queue, j.job_type, j.payload, j.idempotency_key, j.status, j.priority,
            j.attempts, j.max_attempts, j.available_at, j.locked_at, j.locked_by,
            j.last_error, j.errors, j.created_at, j.updated_at, j.finished_at, j.scheduled,
            j.result, j.cancel_requested_at, j.cancel_reason, j.limit_group, j.limit_key,
            j.claimed_at, j.has_dependents
    ),

    kept AS (
        INSERT INTO jobq_jobs_history (
            id, queue, job_type, payload, idempotency_key, status, priority, attempts,
            max_attempts, available_at, locked_at, locked_by, last_error, errors, created_at,
            updated_at, finished_at, scheduled, result, cancel_requested_at, cancel_reason,
            limit_group, limit_key, claimed_at
        )
        SELECT
            m.id, m.queue, m.job_type, m.payload, m.idempotency_key, m.status, m.priority,
            m.attempts, m.max_attempts, m.available_at, m.locked_at, m.locked_by, m.last_error,
            m.errors, m.created_at, m.updated_at, m.finished_at, m.scheduled, m.result,
            m.cancel_requested_at, m.cancel_reason, m.limit_group, m.limit_key, m.claimed_at
        FROM moved AS m
        RETURNING 1
    )

    SELECT
        (SELECT pg_catalog.count(*) FROM kept)::integer,
        pg_catalog.array_agg(m.id) FILTER (WHERE m.has_dependents),
        pg_catalog.array_agg(m.status) FILTER (WHERE m.has_dependents)
    INTO v_moved, v_parents, v_statuses
    FROM moved AS m;
    IF v_parents IS NOT NULL THEN
        PERFORM jobq__dependents_finished(v_parents, v_statuses);
    END IF;
    RETURN v_moved;
END;
$$;

COMMENT ON FUNCTION jobq__retire(uuid[]) IS
'Private. Moves the finished jobs among job_ids from jobq_jobs to jobq_jobs_history (one
DELETE ... RETURNING feeding one INSERT); returns how many moved. Called by the trigger
jobq_jobs_retire at the end of the statement that finished them. Passes the end of those
with dependents on to them (jobq__dependents_finished).';

REVOKE EXECUTE ON FUNCTION jobq__retire(uuid[]) FROM PUBLIC;
