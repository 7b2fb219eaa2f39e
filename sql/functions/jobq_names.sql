-- jobq_names: the queue names and job types that exist, for the choices of a search form (the
-- dashboard's /find) and for completion in tools. jobq keeps no list of names: each kind of
-- job is read through an index whose leading columns are the names, one distinct value at a
-- time: a recursive CTE whose each step reads the first index entry after the previous value
-- (a "skip scan"), so the cost follows the number of distinct names, not of jobs.
--   - jobs available now without a limit: jobq_jobs_claim_idx, keyed by the 64-bit hashes of
--     job_type and queue (each step reads one row for the names; two pairs of names whose
--     hashes both collide would show as one);
--   - available jobs with a limit: jobq_jobs_limited_idx (job_type, queue);
--   - jobs that wait for their dependencies, their run_at or a retry's backoff:
--     jobq_jobs_later_names_idx (job_type, queue);
--   - running jobs: the processing jobs through jobq_jobs_locked_until_idx (as many as the
--     workers hold);
--   - finished jobs: jobq_jobs_history_names_idx (job_type, queue), in every partition of the
--     history (a step reads one entry of each, merged);
--   - the small tables that name queues and job types with no job: the label sets metrics
--     counts, the schedules, the workers' filters and the paused queues.
-- SET enable_seqscan = off and jit = off as in jobq_queue_summary: with statistics gathered
-- while most rows were of another kind, the planner must not read a whole table for a step.
--! levels: monitor, admin

CREATE OR REPLACE FUNCTION jobq_names()
RETURNS TABLE (kind text, name text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
    WITH RECURSIVE available AS (
        (
            SELECT
                pg_catalog.hashtextextended(j.job_type, 0) AS type_hash,
                pg_catalog.hashtextextended(j.queue, 0) AS queue_hash,
                j.job_type,
                j.queue
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
            ORDER BY 1, 2
            LIMIT 1
        )
        UNION ALL
        SELECT n.type_hash, n.queue_hash, n.job_type, n.queue
        FROM available AS a
        CROSS JOIN LATERAL (
            SELECT
                pg_catalog.hashtextextended(j.job_type, 0) AS type_hash,
                pg_catalog.hashtextextended(j.queue, 0) AS queue_hash,
                j.job_type,
                j.queue
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
              AND (pg_catalog.hashtextextended(j.job_type, 0),
                   pg_catalog.hashtextextended(j.queue, 0))
                  > (a.type_hash, a.queue_hash)
            ORDER BY 1, 2
            LIMIT 1
        ) AS n
    ),

    limited AS (
        (
            SELECT j.job_type, j.queue
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
            ORDER BY j.job_type, j.queue
            LIMIT 1
        )
        UNION ALL
        SELECT n.job_type, n.queue
        FROM limited AS l
        CROSS JOIN LATERAL (
            SELECT j.job_type, j.queue
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
              AND (j.job_type, j.queue) > (l.job_type, l.queue)
            ORDER BY j.job_type, j.queue
            LIMIT 1
        ) AS n
    ),

    later AS (
        (
            SELECT j.job_type, j.queue
            FROM jobq_jobs AS j
            WHERE j.status = 'waiting' OR (j.status = 'pending' AND j.scheduled)
            ORDER BY j.job_type, j.queue
            LIMIT 1
        )
        UNION ALL
        SELECT n.job_type, n.queue
        FROM later AS l
        CROSS JOIN LATERAL (
            SELECT j.job_type, j.queue
            FROM jobq_jobs AS j
            WHERE (j.status = 'waiting' OR (j.status = 'pending' AND j.scheduled))
              AND (j.job_type, j.queue) > (l.job_type, l.queue)
            ORDER BY j.job_type, j.queue
            LIMIT 1
        ) AS n
    ),

    finished AS (
        (
            SELECT h.job_type, h.queue
            FROM jobq_jobs_history AS h
            ORDER BY h.job_type, h.queue
            LIMIT 1
        )
        UNION ALL
        SELECT n.job_type, n.queue
        FROM finished AS f
        CROSS JOIN LATERAL (
            SELECT h.job_type, h.queue
            FROM jobq_jobs_history AS h
            WHERE (h.job_type, h.queue) > (f.job_type, f.queue)
            ORDER BY h.job_type, h.queue
            LIMIT 1
        ) AS n
    ),

    pairs AS (
        SELECT a.queue, a.job_type FROM available AS a
        UNION ALL
        SELECT l.queue, l.job_type FROM limited AS l
        UNION ALL
        SELECT j.queue, j.job_type FROM jobq_jobs AS j WHERE j.status = 'processing'
        UNION ALL
        SELECT l.queue, l.job_type FROM later AS l
        UNION ALL
        SELECT f.queue, f.job_type FROM finished AS f
        UNION ALL
        SELECT m.queue, m.job_type FROM jobq_metric_labels AS m
        UNION ALL
        SELECT s.queue, s.job_type FROM jobq_schedules AS s
        UNION ALL
        SELECT p.queue, NULL FROM jobq_paused_queues AS p
        UNION ALL
        SELECT q.queue, NULL FROM jobq_workers AS w, pg_catalog.unnest(w.queues) AS q (queue)
        UNION ALL
        SELECT NULL, t.job_type FROM jobq_workers AS w, pg_catalog.unnest(w.job_types) AS t (job_type)
    )

    SELECT DISTINCT x.kind, x.name
    FROM pairs AS p
    CROSS JOIN LATERAL (VALUES ('queue', p.queue), ('job_type', p.job_type)) AS x (kind, name)
    WHERE x.name IS NOT NULL
    ORDER BY x.kind DESC, x.name
$$;

COMMENT ON FUNCTION jobq_names() IS
'Admin and monitor. The queue names and job types that exist, for a search form''s choices:
those of every job, live or finished (available, waiting for its run_at, a retry or its
dependencies, running, succeeded, failed, dead_letter, cancelled), and the names in the label
sets metrics counts (when metrics are on), the schedules, the workers'' filters and the paused
queues. Each index of jobs is read one distinct name at a time (a skip scan), so the cost
follows the number of names (and of history partitions), not of jobs.
Arguments: none.
Result: rows (kind: queue or job_type, name), the queues first, each by name.
Errors: none.
Concurrency: a snapshot; it takes no lock.';

REVOKE EXECUTE ON FUNCTION jobq_names() FROM PUBLIC;
