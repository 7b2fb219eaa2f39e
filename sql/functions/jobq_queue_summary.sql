-- jobq_queue_summary: per queue, what waits, what runs and what went wrong, for dashboards
-- (`jobq web`'s overview) and operators. Unlike jobq_stats, which counts every row, it reads
-- only the partial indexes of unfinished jobs, the partitions of failed, dead-letter and
-- cancelled jobs in jobq_jobs_history, and the recent end of the succeeded ones: its cost
-- follows the backlog, the jobs kept for an operator and the recent throughput, never the
-- number of succeeded jobs kept.
--
-- SET enable_seqscan = off: each read has the predicate of a partial index, but with
-- statistics gathered while most rows were pending, limited or dead-letter jobs the planner
-- read jobq_jobs itself, finished jobs included, on every call. The setting applies while
-- this function runs (a function SET clause), not to the caller.
--
-- SET jit = off, beside it: plans made while this function runs (its own, and those of the
-- helpers it calls, which PL/pgSQL keeps for the session whoever called them first) are
-- costed without sequential scans, where a scan that has no other way, even of a one-row
-- table, passes jit_above_cost. Made with jit off, such a plan is never compiled, here or in
-- a later caller of the helper: jobq__metrics_count's read of its setting, made so, was
-- compiled in every later enqueue and completion of the session.
--
-- paused: whether jobq_pause holds the queue, so that a monitor, which may not call the
-- admin-only jobq_queues, sees a pause on the dashboard overview and in `jobq stats`. One
-- primary-key probe of jobq_paused_queues per queue row; a paused queue has its row even
-- without jobs.
--! levels: monitor, admin
--! replaces: jobq_queue_summary(interval)

CREATE OR REPLACE FUNCTION jobq_queue_summary(recent interval DEFAULT '5 minutes')
RETURNS TABLE (
    queue text,
    available bigint,
    scheduled bigint,
    processing bigint,
    failed bigint,
    dead_letter bigint,
    cancelled bigint,
    oldest_available_at timestamptz,
    succeeded_recent bigint,
    paused boolean
)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_now timestamptz := pg_catalog.now();
BEGIN
    IF recent IS NULL OR recent < interval '0' OR recent > interval '1 day' THEN
        RAISE EXCEPTION 'jobq_queue_summary: recent must be between 0 and 1 day, got %',
            coalesce(recent::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    RETURN QUERY
    SELECT
        p.queue,
        pg_catalog.count(*) FILTER (WHERE p.status = 'pending' AND p.available_at <= v_now),
        pg_catalog.count(*) FILTER (WHERE p.status = 'pending' AND p.available_at > v_now),
        pg_catalog.count(*) FILTER (WHERE p.status = 'processing'),
        pg_catalog.count(*) FILTER (WHERE p.status = 'failed'),
        pg_catalog.count(*) FILTER (WHERE p.status = 'dead_letter'),
        pg_catalog.count(*) FILTER (WHERE p.status = 'cancelled'),
        pg_catalog.min(p.available_at) FILTER (WHERE p.status = 'pending'
                                               AND p.available_at <= v_now),
        pg_catalog.count(*) FILTER (WHERE p.status = 'succeeded'),
        EXISTS (SELECT FROM jobq_paused_queues AS pq
                WHERE pq.queue OPERATOR(pg_catalog.=) p.queue)
    FROM (
        -- One branch per partial index, each matching its predicate exactly.
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
        UNION ALL
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
        UNION ALL
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs AS j WHERE j.status = 'pending' AND j.scheduled
        UNION ALL
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs AS j WHERE j.status = 'processing'
        UNION ALL
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs_history AS j WHERE j.status IN ('failed', 'dead_letter', 'cancelled')
        UNION ALL
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs_history AS j WHERE j.status = 'succeeded' AND j.finished_at >= v_now - recent
        UNION ALL
        -- Every paused queue has its row, jobs or not, so that the pause shows (and can be
        -- lifted) wherever the summary is shown; it counts as no job (status NULL).
        SELECT pq.queue, NULL, NULL
        FROM jobq_paused_queues AS pq
    ) AS p
    GROUP BY p.queue
    ORDER BY p.queue;
END;
$$;

COMMENT ON FUNCTION jobq_queue_summary(interval) IS
'Admin and monitor. Per queue: jobs available now, scheduled for later, processing, failed,
dead_letter and cancelled, the oldest available_at among the available ones, and the jobs that
succeeded within recent, and whether the queue is paused (jobq_pause). Reads only the partial indexes of those jobs (never the succeeded
jobs older than recent), so it stays cheap however many finished jobs are kept; it runs with
enable_seqscan = off and jit = off (for this function only) so that no statistics make it
read the table instead. A queue with none of these jobs and no pause has no row.
Arguments: recent (how far back succeeded jobs are counted, 0 to 1 day, default 5 minutes).
Result: rows (queue, available, scheduled, processing, failed, dead_letter, cancelled,
oldest_available_at, succeeded_recent, paused), by queue; every paused queue has a row, with
or without jobs.
Errors: 22023 a NULL or negative recent, or one over 1 day.
Concurrency: a snapshot, as any query; it takes no lock.';

REVOKE EXECUTE ON FUNCTION jobq_queue_summary(interval) FROM PUBLIC;
