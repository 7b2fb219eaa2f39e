-- jobq_queues: every queue that has live jobs or is paused, with its pause and its counts of
-- pending and processing jobs, for the CLI's `jobq queue list` and the dashboard. It counts the
-- live jobs (jobq_jobs: finished ones are in the history) through the partial indexes that hold
-- them, one branch per index with its predicate exactly, as jobq_queue_summary does.
--
-- SET enable_seqscan = off, SET jit = off: as in jobq_queue_summary, statistics gathered while
-- the table looked different (empty, or mostly of one kind) would otherwise make the planner
-- read the whole table; without sequential scans the branches read their indexes, and a plan
-- costed so is never compiled.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_queues()
RETURNS TABLE (
    queue text,
    paused boolean,
    paused_at timestamptz,
    reason text,
    pending bigint,
    processing bigint
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
    SELECT
        coalesce(c.queue, p.queue),
        p.queue IS NOT NULL,
        p.paused_at,
        p.reason,
        coalesce(c.pending, 0),
        coalesce(c.processing, 0)
    FROM (
        SELECT
            j.queue,
            pg_catalog.count(*) FILTER (WHERE j.status = 'pending') AS pending,
            pg_catalog.count(*) FILTER (WHERE j.status = 'processing') AS processing
        FROM (
            SELECT j.queue, j.status
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
            UNION ALL
            SELECT j.queue, j.status
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
            UNION ALL
            SELECT j.queue, j.status
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND j.scheduled
            UNION ALL
            SELECT j.queue, j.status
            FROM jobq_jobs AS j
            WHERE j.status = 'processing'
        ) AS j
        GROUP BY j.queue
    ) AS c
    FULL JOIN jobq_paused_queues AS p ON p.queue = c.queue
    ORDER BY 1
$$;

COMMENT ON FUNCTION jobq_queues() IS
'Admin only. Every queue that has pending or processing jobs or is paused (jobq_pause), one row
each, by name.
Arguments: none.
Result: queue, paused (true while jobq_pause holds it), paused_at and reason (NULL unless
paused), pending and processing (its jobs in those statuses; pending includes jobs scheduled
for later).
Errors: none.
Concurrency: reads only; counts every live job once.';

REVOKE EXECUTE ON FUNCTION jobq_queues() FROM PUBLIC;
