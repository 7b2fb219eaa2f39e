-- jobq_workers_summary: the workers, for dashboards (`jobq web`'s workers page) and operators:
-- each worker_id that claimed within the last day (jobq_workers, written by its claims) or
-- holds a job now, with its filters, the jobs it holds and how fresh its claims are. A claim or
-- a heartbeat sets locked_at to now, so the latest locked_at of a worker's jobs is its last
-- heartbeat; a held job whose locked_until has passed is stale (its worker is presumed dead and
-- the next claim within its filters takes it over).
--
-- Reads jobq_workers (one row per worker) and the processing jobs through their partial index;
-- SET enable_seqscan = off and jit = off as jobq_queue_summary does, for the same reasons.
-- Job metadata only (ids, times): a monitor may read it.
--! levels: monitor, admin

CREATE OR REPLACE FUNCTION jobq_workers_summary() RETURNS TABLE (
    worker_id text,
    job_types text[],
    queues text[],
    first_claim_at timestamptz,
    last_claim_at timestamptz,
    jobs_held bigint,
    stale_jobs bigint,
    last_heartbeat_at timestamptz,
    lock_expires_at timestamptz,
    held_job_ids uuid[]
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
    WITH held AS (
        SELECT
            j.locked_by,
            pg_catalog.count(*) AS jobs_held,
            pg_catalog.count(*) FILTER (
                WHERE j.locked_until OPERATOR(pg_catalog.<) pg_catalog.now()
            ) AS stale_jobs,
            pg_catalog.max(j.locked_at) AS last_heartbeat_at,
            pg_catalog.min(j.locked_until) AS lock_expires_at,
            -- the 100 held longest since their last renewal: enough to act on, bounded in size
            (pg_catalog.array_agg(j.id ORDER BY j.locked_at, j.id))[1:100] AS held_job_ids
        FROM jobq_jobs AS j
        WHERE j.status = 'processing'
        GROUP BY j.locked_by
    )

    SELECT
        coalesce(w.worker_id, h.locked_by),
        w.job_types,
        w.queues,
        w.first_claim_at,
        w.last_claim_at,
        coalesce(h.jobs_held, 0),
        coalesce(h.stale_jobs, 0),
        h.last_heartbeat_at,
        h.lock_expires_at,
        coalesce(h.held_job_ids, '{}')
    FROM jobq_workers AS w
    FULL JOIN held AS h ON h.locked_by OPERATOR(pg_catalog.=) w.worker_id
    ORDER BY 1
$$;

COMMENT ON FUNCTION jobq_workers_summary() IS
'Admin and monitor. One row per worker: each worker_id that claimed within the last day or
holds a processing job now.
Arguments: none.
Result: worker_id, job_types and queues (the filters of its last claim; NULL: all, or unknown
for a worker that holds jobs but has no record), first_claim_at and last_claim_at (its claims,
recorded at most every 5 seconds; NULL without a record), jobs_held (processing jobs it holds),
stale_jobs (of those, the ones whose locked_until has passed: the next claim within their
filters takes them over), last_heartbeat_at (the latest claim or heartbeat of its jobs),
lock_expires_at (the earliest locked_until of its jobs), held_job_ids (up to 100 of its jobs,
least recently renewed first), by worker_id. No payload, result or error text.
Errors: none.
Concurrency: a snapshot, as any query; it takes no lock.';

REVOKE EXECUTE ON FUNCTION jobq_workers_summary() FROM PUBLIC;
