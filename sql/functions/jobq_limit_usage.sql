-- jobq_limit_usage (monitor, admin: counts and names, no job data): how much of its limits
-- each key of a limited group uses now: the jobs processing, the starts within the rate window
-- ending now, the jobs waiting, and its weight. Read through the indexes the claim uses
-- (jobq_jobs_limit_running_idx, jobq_jobs_limited_idx, jobq_limit_starts_pkey) and
-- jobq_jobs_scheduled_idx, never the finished jobs, without the keys' locks: a snapshot, not a
-- reservation.
--
-- SET enable_seqscan = off: each read has the predicate of a partial index, but with
-- statistics gathered while most rows were pending limited jobs the planner read jobq_jobs
-- itself, finished jobs included, on every call. The setting applies while this function runs
-- (a function SET clause), not to the caller.
--
-- SET jit = off, beside it: plans made while this function runs (its own, and those of the
-- helpers it calls, which PL/pgSQL keeps for the session whoever called them first) are
-- costed without sequential scans, where a scan that has no other way, even of a one-row
-- table, passes jit_above_cost. Made with jit off, such a plan is never compiled, here or in
-- a later caller of the helper: jobq__metrics_count's read of its setting, made so, was
-- compiled in every later enqueue and completion of the session.
--! levels: monitor, admin
--! replaces: jobq_limit_usage()

CREATE OR REPLACE FUNCTION jobq_limit_usage() RETURNS TABLE (
    limit_group text,
    limit_key text,
    running bigint,
    max_running integer,
    starts_in_window bigint,
    max_starts integer,
    per interval,
    pending bigint,
    weight real
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
    -- Three reads, each with the exact predicate of a partial index (a single
    -- status IN ('pending', 'processing') matches none of them, and the planner would read
    -- jobq_jobs itself, finished jobs included): processing jobs, pending jobs available now,
    -- and pending jobs whose run_at is still ahead (jobq_jobs_scheduled_idx).
    WITH counts AS (
        SELECT
            u.limit_group, u.lk,
            pg_catalog.sum(u.running) AS running,
            pg_catalog.sum(u.pending) AS pending
        FROM (
            SELECT j.limit_group, coalesce(j.limit_key, '') AS lk, 1 AS running, 0 AS pending
            FROM jobq_jobs AS j
            WHERE j.status = 'processing' AND j.limit_group IS NOT NULL
            UNION ALL
            SELECT j.limit_group, coalesce(j.limit_key, ''), 0, 1
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
            UNION ALL
            SELECT j.limit_group, coalesce(j.limit_key, ''), 0, 1
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND j.scheduled AND j.limit_group IS NOT NULL
        ) AS u
        INNER JOIN jobq_limits AS l ON l.limit_group = u.limit_group
        GROUP BY u.limit_group, u.lk
    ),

    windows AS (
        SELECT
            s.limit_group, s.limit_key AS lk,
            pg_catalog.sum(s.started) FILTER (
                WHERE s.started_at > pg_catalog.clock_timestamp() - l.per
            ) AS starts
        FROM jobq_limit_starts AS s
        INNER JOIN jobq_limits AS l ON l.limit_group = s.limit_group
        WHERE l.per IS NOT NULL
        GROUP BY s.limit_group, s.limit_key
    )

    SELECT
        l.limit_group,
        CASE WHEN coalesce(c.lk, w.lk) <> '' THEN coalesce(c.lk, w.lk) END AS limit_key,
        coalesce(c.running, 0),
        l.max_running,
        CASE WHEN l.max_starts IS NOT NULL THEN coalesce(w.starts, 0)::bigint END,
        l.max_starts,
        l.per,
        coalesce(c.pending, 0),
        coalesce(k.weight, 1::real)
    FROM counts AS c
    FULL JOIN windows AS w ON w.limit_group = c.limit_group AND w.lk = c.lk
    INNER JOIN jobq_limits AS l ON l.limit_group = coalesce(c.limit_group, w.limit_group)
    LEFT JOIN jobq_limit_keys AS k
        ON k.limit_group = l.limit_group AND k.limit_key = coalesce(c.lk, w.lk)
    WHERE coalesce(c.running, 0) > 0 OR coalesce(c.pending, 0) > 0 OR coalesce(w.starts, 0) > 0
    ORDER BY 1, 2 NULLS FIRST
$$;

COMMENT ON FUNCTION jobq_limit_usage() IS
'Monitor and admin. What each (limit_group, limit_key) of a limited group uses of its limits
now: one row per key with jobs processing or pending, or starts within its rate window.
Arguments: none.
Result: limit_group, limit_key (NULL: the group''s jobs without a key), running (jobs
processing), max_running, starts_in_window (jobs started within the window of length per
that ends now; NULL without a rate limit), max_starts, per, pending (jobs waiting, held back
or not), weight (the key''s weight, jobq_set_weight; 1 unless set).
Reads the partial indexes of processing, pending and scheduled jobs, never the finished ones,
with enable_seqscan = off and jit = off (for this function only) whatever the statistics
say.
Errors: none.
Concurrency: reads committed state without taking the keys'' locks: a claim under way is not
counted until it commits.';

REVOKE EXECUTE ON FUNCTION jobq_limit_usage() FROM PUBLIC;
