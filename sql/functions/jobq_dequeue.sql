-- jobq_dequeue: the claim. Takes back stale claims within the caller's filters, then claims up
-- to batch_size available jobs with FOR UPDATE SKIP LOCKED, in the order of the partial index
-- jobq_jobs_claim_idx (priority DESC, available_at, id).
--
-- SET enable_bitmapscan = off: every claim leaves a dead entry at the head of
-- jobq_jobs_claim_idx (the job's pending version), and every completion one in
-- jobq_jobs_locked_idx (its processing version), until VACUUM removes them; autovacuum visits
-- a database at most once per autovacuum_naptime (one minute by default). When the statistics
-- say that few jobs are pending (gathered on a quiet or new queue, the usual case), the
-- planner's generic plan for the claim is a bitmap scan of jobq_jobs_claim_idx followed by a
-- sort: it visits every entry, dead ones included, and their heap rows, on every call.
-- Measured (claims of 50 jobs, medians): 1.2 ms with no dead entries, 3.6 ms with 50,000,
-- 11 ms with 200,000, 28 ms with 500,000; under a steady load of 8,400 jobs/s on a new table,
-- completions fell from 8,300 to 1,000 jobs/s within 70 seconds, before autovacuum's first
-- visit. With bitmap scans off, the claim is an index scan in the order of the ORDER BY that
-- stops at batch_size rows, and the stale-claim step an index scan of jobq_jobs_locked_idx in
-- locked_at order. A plain index scan also marks the entries of dead rows as dead in the index
-- as it passes them (a bitmap scan does not), so later claims skip them without visiting the
-- heap: 0.65, 0.80, 1.7 and 3.6 ms in the same measurement. The claim still steps over dead
-- entries until VACUUM removes them: see docs/operations.md on autovacuum_naptime for queues
-- that run thousands of jobs a second. The setting applies only while jobq_dequeue runs (a
-- function SET clause): the caller's session and transaction keep their own.
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_dequeue(
    worker_id text,
    job_types text[] DEFAULT NULL,
    batch_size integer DEFAULT 1,
    lock_timeout interval DEFAULT '5 minutes',
    queues text[] DEFAULT NULL
) RETURNS SETOF jobq_jobs
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_bitmapscan = off
AS $$
DECLARE
    v_error text;
    v_ended text[];
BEGIN
    v_error := jobq__worker_id_error(jobq_dequeue.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_dequeue: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- At most 10,000: a claim locks and updates its whole batch in one statement, and a worker
    -- cannot run more at once than it can hold; a larger batch only holds row locks longer.
    IF batch_size IS NULL OR batch_size < 1 OR batch_size > 10000 THEN
        RAISE EXCEPTION 'jobq_dequeue: batch_size must be between 1 and 10000, got %',
            coalesce(batch_size::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF lock_timeout IS NULL OR lock_timeout <= interval '0' THEN
        RAISE EXCEPTION 'jobq_dequeue: lock_timeout must be a positive interval, got %',
            coalesce(lock_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- What this worker asks for, for jobq_unserved_job_types (one look-up; a write at most
    -- every 5 seconds per worker).
    PERFORM jobq__worker_seen(jobq_dequeue.worker_id, jobq_dequeue.job_types, jobq_dequeue.queues);

    -- 1. Take back stale claims within the caller's filters: their worker is presumed dead.
    --    Each is recorded in errors (which worker lost it). One with a cancel request is not
    --    run again: cancelled. One that has attempts left goes back to pending with its
    --    original available_at, so that step 2 ranks it like any other pending job; one that
    --    has used all its attempts is not run again: dead_letter. The index
    --    jobq_jobs_locked_idx makes this a short range scan that finds nothing in the common
    --    case; the jobs that ended and that a client awaits are announced on the done channel.
    WITH stale AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.status = 'processing'
          AND j.locked_at
              < pg_catalog.now() - least(jobq_dequeue.lock_timeout, interval '1000 years')
          AND (jobq_dequeue.job_types IS NULL OR j.job_type = ANY (jobq_dequeue.job_types))
          AND (jobq_dequeue.queues IS NULL OR j.queue = ANY (jobq_dequeue.queues))
        ORDER BY j.locked_at
        LIMIT jobq_dequeue.batch_size
        FOR UPDATE SKIP LOCKED
    ),

    taken AS (
        UPDATE jobq_jobs AS j
        SET
            status = CASE
                WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                WHEN j.attempts >= j.max_attempts THEN 'dead_letter'
                ELSE 'pending'
            END,
            -- locked_by is cut to the 200 characters a worker_id may have: a claim recorded
            -- before that bound existed must not make its takeover fail for its size.
            last_error = pg_catalog.format(
                'lock expired: worker %s held attempt %s since %s (lock_timeout %s)',
                pg_catalog.substr(j.locked_by, 1, 200), j.attempts, j.locked_at,
                jobq_dequeue.lock_timeout
            ),
            errors = jobq__append_error(j.errors, pg_catalog.jsonb_build_object(
                'attempt', j.attempts,
                'at', pg_catalog.now(),
                'worker', pg_catalog.substr(j.locked_by, 1, 200),
                'error', pg_catalog.format(
                    'lock expired: worker %s held attempt %s since %s (lock_timeout %s)',
                    pg_catalog.substr(j.locked_by, 1, 200), j.attempts, j.locked_at,
                    jobq_dequeue.lock_timeout
                ),
                'kind', 'lock_expired'
            )),
            finished_at = CASE
                WHEN j.cancel_requested_at IS NOT NULL OR j.attempts >= j.max_attempts
                    THEN pg_catalog.now()
            END,
            locked_at = NULL,
            locked_by = NULL,
            updated_at = pg_catalog.now()
        FROM stale
        WHERE j.id = stale.id
        RETURNING j.id, j.status, j.awaited
    )

    SELECT pg_catalog.array_agg(t.id::text) FILTER (WHERE t.awaited AND t.status <> 'pending')
    INTO v_ended
    FROM taken AS t;
    IF v_ended IS NOT NULL THEN
        PERFORM jobq__notify_events('done', v_ended);
    END IF;

    -- 2. The claim, in one statement: the candidates (in the order the partial index
    --    jobq_jobs_claim_idx gives) are locked with SKIP LOCKED in a MATERIALIZED CTE, so the
    --    LIMIT is applied once and no plan can lock or return more than batch_size rows;
    --    the UPDATE is joined to them.
    RETURN QUERY
    WITH candidates AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.status = 'pending'
          AND j.available_at <= pg_catalog.now()
          AND (jobq_dequeue.job_types IS NULL OR j.job_type = ANY (jobq_dequeue.job_types))
          AND (jobq_dequeue.queues IS NULL OR j.queue = ANY (jobq_dequeue.queues))
        ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
        LIMIT jobq_dequeue.batch_size
        FOR UPDATE SKIP LOCKED
    ),

    claimed AS (
        UPDATE jobq_jobs AS j
        SET
            status = 'processing',
            attempts = j.attempts + 1,
            locked_at = pg_catalog.now(),
            locked_by = jobq_dequeue.worker_id,
            updated_at = pg_catalog.now()
        FROM candidates AS c
        WHERE j.id = c.id
        RETURNING j.*
    )

    SELECT c.*
    FROM claimed AS c
    ORDER BY c.priority DESC, c.available_at ASC, c.id ASC;
END;
$$;

COMMENT ON FUNCTION jobq_dequeue(text, text[], integer, interval, text[]) IS
'Claims up to batch_size jobs for a worker and returns them: status processing, locked_at
now, locked_by the worker, attempts + 1. Candidates: pending jobs whose available_at has
come, and processing jobs whose lock is older than lock_timeout (their worker is presumed
dead): such a takeover is recorded in errors (kind lock_expired, the worker that lost it), and
a stale job with a cancel request (jobq_cancel) goes to cancelled, one with no attempts left to
dead_letter, instead of running again. Each call also records the worker''s filters in
jobq_workers (written at most every 5 seconds per worker), for jobq_unserved_job_types.
Runs with enable_bitmapscan = off (for this function only; the caller keeps its own setting):
the claim is then an index scan in claim order that stops after batch_size rows and marks the
dead index entries left by earlier claims as it passes them, instead of a bitmap scan and sort
that visits every dead entry on every call until VACUUM removes them.
Arguments: worker_id (who claims: non-blank, at most 200 characters), job_types (NULL = all),
batch_size (1-10000), lock_timeout (> 0; beyond 1000 years it means never), queues (NULL =
all).
Result: the claimed rows of jobq_jobs, highest priority first, then available_at, then id.
Errors: 22023 worker_id NULL, blank or longer than 200 characters, batch_size outside 1-10000,
lock_timeout <= 0.
Concurrency: FOR UPDATE SKIP LOCKED: it never waits, concurrent callers never receive the
same job, and one call never locks or claims more than batch_size pending rows. A takeover that
ends a job a client awaits sends a NOTIFY on the done channel (payload: the job id).';

REVOKE EXECUTE ON FUNCTION jobq_dequeue(text, text[], integer, interval, text[]) FROM PUBLIC;
