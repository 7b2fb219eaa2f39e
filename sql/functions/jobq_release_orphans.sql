-- jobq_release_orphans: gives back the claims of a worker that the worker itself does not know
-- it holds, as soon as it can reach the database again.
--
-- A claim commits on the server and its reply is lost (the connection broke between the
-- commit and the client reading the rows): the worker never learns which jobs it claimed, never
-- runs them and never renews them, and without this they stay processing under its live worker
-- id until lock_timeout (5 minutes by default) expires. A worker that reconnects after a claim
-- that failed this way calls this with the ids of every job it knows it holds (claimed and not
-- yet acknowledged); every other job locked by its worker id is released as jobq_release does:
-- pending, available now, the attempt not counted, no error recorded, other workers woken.
--
-- It relies on worker ids being unique per worker process (the Python Worker's default
-- host:pid:random is): a second process using the same id would have its claims released.
-- The worker must not call it while one of its own claims is in flight, whose jobs it does not
-- know yet (the Python Worker waits until none is).
--
-- The jobs are found among the processing ones (jobq_jobs_locked_until_idx), since no index leads
-- with locked_by: the cost is that of reading the claims of every worker, paid once per lost
-- claim. Rows another transaction has locked are skipped (SKIP LOCKED): the call never waits.
--
-- SET enable_seqscan = off: with statistics gathered while most rows were processing (a burst
-- claimed on a small table), the planner read the whole of jobq_jobs for the worker's rows,
-- finished jobs included, instead of the processing ones in jobq_jobs_locked_until_idx. The setting
-- applies while this function runs (a function SET clause), not to the caller.
--
-- SET jit = off, beside it: plans made while this function runs (its own, and those of the
-- helpers it calls, which PL/pgSQL keeps for the session whoever called them first) are
-- costed without sequential scans, where a scan that has no other way, even of a one-row
-- table, passes jit_above_cost. Made with jit off, such a plan is never compiled, here or in
-- a later caller of the helper: jobq__metrics_count's read of its setting, made so, was
-- compiled in every later enqueue and completion of the session.
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_release_orphans(worker_id text, job_ids uuid[]) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_released integer;
    v_queues text[];
    v_ended text[];
    v_error text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__worker_id_error(jobq_release_orphans.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_release_orphans: %', v_error
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'jobq_release_orphans: job_ids must be an array of the jobs the worker '
                        'holds, not NULL'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass ''{}'' when the worker holds no job.';
    END IF;

    WITH orphans AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.status = 'processing'
          AND j.locked_by = jobq_release_orphans.worker_id
          AND j.id <> ALL (jobq_release_orphans.job_ids)
        FOR UPDATE SKIP LOCKED
    ),

    released AS (
        UPDATE jobq_jobs AS j
        SET
            -- A job with a cancel request is not given back but cancelled (as jobq_release).
            status = CASE WHEN j.cancel_requested_at IS NULL THEN 'pending' ELSE 'cancelled' END,
            available_at = v_now,
            attempts = greatest(j.attempts - 1, 0),
            finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN v_now END,
            scheduled = FALSE,
            locked_at = NULL,
            locked_by = NULL,
            locked_until = NULL,
            updated_at = v_now
        WHERE j.id = ANY (ARRAY(SELECT o.id FROM orphans AS o))
        RETURNING j.id, j.queue, j.status, j.job_type
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'released'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            pg_catalog.array_agg(c.status), NULL::double precision[]
        ) AS n
        FROM released AS c
        HAVING pg_catalog.count(*) > 0
    )

    SELECT
        pg_catalog.count(*)::integer,
        pg_catalog.array_agg(DISTINCT r.queue) FILTER (WHERE r.status = 'pending'),
        pg_catalog.array_agg(r.id::text) FILTER (WHERE r.status = 'cancelled')
    INTO v_released, v_queues, v_ended
    FROM released AS r
    LEFT JOIN counted ON TRUE;
    PERFORM jobq__notify(v_queues);
    PERFORM jobq__notify_events('done'::text, jobq__awaits_end(v_ended::uuid[]));
    RETURN v_released;
END;
$$;

COMMENT ON FUNCTION jobq_release_orphans(text, uuid[]) IS
'Releases every job locked by worker_id except job_ids, the jobs the worker knows it holds:
for a worker that reconnects after a claim whose reply was lost (the claim committed, the
worker never saw its jobs), so that those jobs run again at once instead of after
lock_timeout. Released as jobq_release does: pending, available now, attempts - 1, claim
cleared, no error recorded; other workers are woken (NOTIFY on the installation''s channel).
A job with a cancel request (jobq_cancel) becomes cancelled instead and is never run again.
Arguments: worker_id (non-blank; must be unique per worker process), job_ids (every job the
worker still holds: claimed, running or not yet acknowledged; ''{}'' for none).
Result: how many jobs were released (cancelled ones included).
Runs with enable_seqscan = off and jit = off (for this function only; the caller keeps its own
settings): the processing jobs are read through jobq_jobs_locked_until_idx whatever the statistics
say.
Errors: 22023 worker_id NULL, blank or longer than 200 characters; NULL job_ids.
Concurrency: skips rows locked by another transaction (never waits). Call it only while no
claim of this worker is in flight: the jobs of a claim not yet returned would be released.';

REVOKE EXECUTE ON FUNCTION jobq_release_orphans(text, uuid[]) FROM PUBLIC;
