-- jobq__available (private): the pending jobs available now, per (queue, job_type): how many,
-- and the oldest available_at among them. For the functions that report on the backlog
-- (jobq_health, jobq_unserved_job_types, jobq_metrics), not for a claim.
--
-- No index holds every pending job: they are in three partial indexes, jobq_jobs_claim_idx
-- (unlimited), jobq_jobs_limited_idx (limit_group set) and jobq_jobs_scheduled_idx (run_at
-- given, not yet promoted by a claim). So the read is one branch per index, whose predicate
-- it repeats: its cost follows the pending jobs, never the finished ones kept. (A read of
-- status = 'pending' alone matches no partial index: it read the whole table.)
--
-- SET enable_seqscan = off: statistics gathered while most rows were pending (a backlog
-- enqueued at once, then analyzed) could still have the planner read the table for a branch,
-- finished jobs included, on every later call. The setting applies while this function runs
-- (a function SET clause), to its one statement and not to its caller's.
--
-- SET search_path, and its callers call it in a statement of its own: both for Citus, which
-- may run the calling statement on the schema's node in a session of its own, and refuses a
-- read of jobq_jobs nested in a statement it runs there
-- (docs/decisions/0002-sql-that-citus-can-run.md).
--
-- limited => NULL: every available job; true: the limited ones only; false: the others.
-- Not SECURITY DEFINER: it runs as its callers, SECURITY DEFINER functions with a fixed
-- search_path, and is granted to nobody.

CREATE OR REPLACE FUNCTION jobq__available(limited boolean DEFAULT NULL) RETURNS TABLE (
    queue text,
    job_type text,
    jobs bigint,
    oldest_available_at timestamptz
)
LANGUAGE sql
STABLE
SET search_path FROM CURRENT
SET enable_seqscan = off
AS $$
    SELECT a.queue, a.job_type, pg_catalog.count(*), pg_catalog.min(a.available_at)
    FROM (
        SELECT j.queue, j.job_type, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending'
          AND NOT j.scheduled
          AND j.limit_group IS NULL
          AND j.available_at <= pg_catalog.now()
          AND (jobq__available.limited IS NULL OR NOT jobq__available.limited)

        UNION ALL

        SELECT j.queue, j.job_type, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending'
          AND NOT j.scheduled
          AND j.limit_group IS NOT NULL
          AND j.available_at <= pg_catalog.now()
          AND (jobq__available.limited IS NULL OR jobq__available.limited)

        UNION ALL

        SELECT j.queue, j.job_type, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending'
          AND j.scheduled
          AND j.available_at <= pg_catalog.now()
          AND (
              jobq__available.limited IS NULL
              OR jobq__available.limited = (j.limit_group IS NOT NULL)
          )
    ) AS a
    GROUP BY a.queue, a.job_type
$$;

COMMENT ON FUNCTION jobq__available(boolean) IS
'Private. The pending jobs available now (available_at come), per (queue, job_type): how many
and the oldest available_at, read from the partial indexes of pending jobs only (never a
finished job). limited: NULL every such job, true those with a limit_group, false the others.';

REVOKE EXECUTE ON FUNCTION jobq__available(boolean) FROM PUBLIC;
