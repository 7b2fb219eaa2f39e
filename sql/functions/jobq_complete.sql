-- jobq_complete: marks one job succeeded while the worker still holds its claim (fenced by
-- worker_id, and by the claim's attempt when given), and keeps what the handler returned.
--
-- The WHERE clause finds the job by its primary key and tests no status: see the note on
-- jobq_jobs_claim_check in sql/migrations/ (locked_by is set exactly while a
-- job is processing, and a status test would let the planner scan every claimed job).
--
-- The size limit is read from jobq_settings only when there is a result to check. The job
-- moves to jobq_jobs_history in the statement that completes it (a DELETE feeding an INSERT:
-- cheaper than an UPDATE followed by the move). Whether a client awaits the job comes back
-- from that statement: one probe of jobq_awaits_job_idx,
-- an index that is empty unless someone waits (jobq_await registers there, never on the
-- job's row), so a job nobody waits for sends no notification and costs no statement more.
--
-- SET enable_seqscan = off (and jit = off, as everywhere sequential scans are off: a plan made
-- under it may be costed past jit_above_cost): statistics gathered on a drained queue (finished
-- jobs leave jobq_jobs) say the table is empty, and a generic plan made on them (kept for the
-- session) is a sequential scan, which reads the whole table on every call once a backlog arrives
-- (docs/decisions/0003-planner-settings-of-hot-functions.md). Without it, the primary key.
--! levels: worker, admin
--! replaces: jobq_complete(uuid, text, integer)

CREATE OR REPLACE FUNCTION jobq_complete(
    job_id uuid,
    worker_id text,
    attempt integer DEFAULT NULL,
    result jsonb DEFAULT NULL
) RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_error text;
    v_size integer;
    v_limit integer;
    v_awaited boolean;
    v_queue text;
    v_job_type text;
    v_claimed_at timestamptz;
    v_has_dependents boolean;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__worker_id_error(jobq_complete.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_complete: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_complete.result IS NOT NULL THEN
        v_size := pg_catalog.octet_length(jobq_complete.result::text);  -- as jobq_enqueue
        SELECT s.max_payload_bytes INTO v_limit FROM jobq_settings AS s;
        IF v_size > v_limit THEN
            RAISE EXCEPTION 'jobq_complete: result is % bytes, the limit is % bytes',
                v_size, v_limit
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'Store large results elsewhere and return a reference; an admin '
                             'can change the limit with jobq_configure(max_payload_bytes => ...).';
        END IF;
    END IF;

    -- The job leaves jobq_jobs for the history in this one statement: the row the DELETE takes
    -- is inserted there succeeded, so a completion writes no new version into jobq_jobs.
    WITH moved AS (
        DELETE FROM jobq_jobs AS j
        -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
        -- test would let the planner scan jobq_jobs_locked_until_idx instead of the primary key.
        WHERE j.id = jobq_complete.job_id
          AND j.locked_by = jobq_complete.worker_id
          AND (jobq_complete.attempt IS NULL OR j.attempts = jobq_complete.attempt)
        RETURNING
            j.id, j.queue, j.job_type, j.payload, j.idempotency_key, j.priority, j.attempts,
            j.max_attempts, j.available_at, j.last_error, j.errors, j.created_at, j.scheduled,
            j.cancel_requested_at, j.cancel_reason, j.limit_group, j.limit_key, j.claimed_at,
            j.has_dependents
    ),

    kept AS (
        INSERT INTO jobq_jobs_history AS h (
            id, queue, job_type, payload, idempotency_key, status, priority, attempts,
            max_attempts, available_at, locked_at, locked_by, last_error, errors, created_at,
            updated_at, finished_at, scheduled, result, cancel_requested_at, cancel_reason,
            limit_group, limit_key, claimed_at
        )
        SELECT
            m.id, m.queue, m.job_type, m.payload, m.idempotency_key, 'succeeded', m.priority,
            m.attempts, m.max_attempts, m.available_at, NULL, NULL, m.last_error, m.errors,
            m.created_at, v_now, v_now, m.scheduled, jobq_complete.result,
            m.cancel_requested_at, m.cancel_reason, m.limit_group, m.limit_key, m.claimed_at
        FROM moved AS m
        RETURNING h.id, h.queue, h.job_type, h.claimed_at
    )

    -- Whether a client awaits the job is read in the same statement: a probe of an index that
    -- is empty unless someone waits, with no statement of its own.
    SELECT
        EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = k.id),
        k.queue, k.job_type, k.claimed_at, m.has_dependents
    INTO v_awaited, v_queue, v_job_type, v_claimed_at, v_has_dependents
    FROM kept AS k
    JOIN moved AS m ON m.id = k.id;
    -- Its dependents, only when the row says it has some: no statement for the others.
    IF v_has_dependents THEN
        PERFORM jobq__dependents_finished(ARRAY[jobq_complete.job_id], ARRAY['succeeded'::text]);
    END IF;
    IF v_awaited IS NOT NULL THEN
        PERFORM jobq__metrics_count(
            'succeeded'::text, ARRAY[v_queue], ARRAY[v_job_type], NULL::text[],
            ARRAY[extract(epoch FROM v_now - v_claimed_at)::double precision]
        );
    END IF;
    IF v_awaited AND jobq__awaits_end(ARRAY[jobq_complete.job_id]) IS NOT NULL THEN
        PERFORM pg_catalog.pg_notify(jobq__event_channel('done'::text), '');  -- no id: see jobq__notify_events
    END IF;
    RETURN v_awaited IS NOT NULL;
END;
$$;

COMMENT ON FUNCTION jobq_complete(uuid, text, integer, jsonb) IS
'Marks the job succeeded while the worker still holds its claim, and stores the handler''s
result. A job with a cancel request that completes ends succeeded.
Arguments: job_id (the job), worker_id (the worker that claimed it: non-blank, at most 200
characters), attempt (NULL = any; else only the claim of that attempt counts, so that a claim
that expired and was taken again, even by the same worker_id, is fenced off), result (any JSON
value, at most max_payload_bytes; NULL stores none).
Result: true if it completed the job; false otherwise (unknown job, not processing, claim
taken over or of another attempt), and nothing changes then: no result is stored.
Errors: 22023 worker_id NULL, blank or longer than 200 characters; 54000 result larger than
max_payload_bytes (nothing changes).
A dependent whose last dependency this was becomes pending in the same transaction.
Concurrency: the row lock orders it against a concurrent takeover or cancel; whichever commits
first wins, and a taken-over claim can no longer complete. A NOTIFY on the installation''s done
channel (an empty payload: listeners re-check) when a client awaits the job (jobq_await).
Runs with enable_seqscan = off and jit = off (for this function only; the caller keeps its own
settings):
each job is found by its primary key whatever the statistics say.';

REVOKE EXECUTE ON FUNCTION jobq_complete(uuid, text, integer, jsonb) FROM PUBLIC;
