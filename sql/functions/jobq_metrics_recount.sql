-- jobq_metrics_recount (admin): sets the gauge jobq_jobs of jobq_metrics() to the jobs present,
-- counted once. The gauge is kept by the jobq functions as they change jobs (in their own
-- transactions, so it stays exact); this is for what they did not see: writes to jobq_jobs by
-- hand, status changes made while metrics were off (jobq_configure calls it when they are
-- turned on again) or by an older jobq during an upgrade.
--
-- It reads the whole table, once, with writes blocked (LOCK ... IN SHARE MODE: it waits for
-- the writing transactions of the moment, whose changes are then in the count, and new writers
-- wait until its transaction commits): run it when the queue is quiet. Counters and histograms
-- are left as they are: they count events, which cannot be counted again afterwards. Each
-- (queue, job_type) is counted under its label set (jobq__metric_labels: its own while the
-- bound of label sets allows, else the overflow label set), as the functions count it.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_metrics_recount() RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_jobs bigint;
BEGIN
    LOCK TABLE jobq_jobs, jobq_jobs_history IN SHARE MODE;
    UPDATE jobq_metric_counters AS c
    SET
        jobs_pending = 0, jobs_processing = 0, jobs_succeeded = 0, jobs_failed = 0,
        jobs_dead_letter = 0, jobs_cancelled = 0
    WHERE c.jobs_pending <> 0 OR c.jobs_processing <> 0 OR c.jobs_succeeded <> 0
       OR c.jobs_failed <> 0 OR c.jobs_dead_letter <> 0 OR c.jobs_cancelled <> 0;
    UPDATE jobq_metric_deltas AS c
    SET
        jobs_pending = 0, jobs_processing = 0, jobs_succeeded = 0, jobs_failed = 0,
        jobs_dead_letter = 0, jobs_cancelled = 0
    WHERE c.jobs_pending <> 0 OR c.jobs_processing <> 0 OR c.jobs_succeeded <> 0
       OR c.jobs_failed <> 0 OR c.jobs_dead_letter <> 0 OR c.jobs_cancelled <> 0;

    WITH raw AS MATERIALIZED (
        SELECT
            j.queue, j.job_type,
            pg_catalog.count(*) FILTER (WHERE j.status = 'pending') AS pending,
            pg_catalog.count(*) FILTER (WHERE j.status = 'processing') AS processing,
            pg_catalog.count(*) FILTER (WHERE j.status = 'succeeded') AS succeeded,
            pg_catalog.count(*) FILTER (WHERE j.status = 'failed') AS failed,
            pg_catalog.count(*) FILTER (WHERE j.status = 'dead_letter') AS dead_letter,
            pg_catalog.count(*) FILTER (WHERE j.status = 'cancelled') AS cancelled
        FROM jobq_all_jobs AS j
        GROUP BY j.queue, j.job_type
    ),

    labels AS MATERIALIZED (
        SELECT m.queue, m.job_type, m.label_queue, m.label_job_type
        FROM jobq__metric_labels(
            ARRAY(SELECT r.queue FROM raw AS r ORDER BY r.queue, r.job_type),
            ARRAY(SELECT r.job_type FROM raw AS r ORDER BY r.queue, r.job_type)
        ) AS m
    ),

    counts AS (
        SELECT
            l.label_queue AS queue, l.label_job_type AS job_type,
            pg_catalog.sum(r.pending)::bigint AS pending,
            pg_catalog.sum(r.processing)::bigint AS processing,
            pg_catalog.sum(r.succeeded)::bigint AS succeeded,
            pg_catalog.sum(r.failed)::bigint AS failed,
            pg_catalog.sum(r.dead_letter)::bigint AS dead_letter,
            pg_catalog.sum(r.cancelled)::bigint AS cancelled
        FROM raw AS r
        INNER JOIN labels AS l ON l.queue = r.queue AND l.job_type = r.job_type
        GROUP BY l.label_queue, l.label_job_type
    ),

    written AS (
        INSERT INTO jobq_metric_counters AS c (
            shard, queue, job_type, jobs_pending, jobs_processing, jobs_succeeded, jobs_failed,
            jobs_dead_letter, jobs_cancelled
        )
        SELECT
            0, n.queue, n.job_type, n.pending, n.processing, n.succeeded, n.failed,
            n.dead_letter, n.cancelled
        FROM counts AS n
        ORDER BY n.queue, n.job_type
        ON CONFLICT (queue, job_type, shard) DO UPDATE SET
            jobs_pending = excluded.jobs_pending,
            jobs_processing = excluded.jobs_processing,
            jobs_succeeded = excluded.jobs_succeeded,
            jobs_failed = excluded.jobs_failed,
            jobs_dead_letter = excluded.jobs_dead_letter,
            jobs_cancelled = excluded.jobs_cancelled
        RETURNING c.jobs_pending + c.jobs_processing + c.jobs_succeeded + c.jobs_failed
            + c.jobs_dead_letter + c.jobs_cancelled AS jobs
    )

    SELECT coalesce(pg_catalog.sum(w.jobs), 0)::bigint INTO v_jobs FROM written AS w;
    RETURN v_jobs;
END;
$$;

COMMENT ON FUNCTION jobq_metrics_recount() IS
'Admin only. Sets the gauge jobq_jobs of jobq_metrics() to the jobs present, counted once by
queue, job_type and status, for changes the jobq functions did not count (writes to jobq_jobs
by hand, changes made while metrics were off or by an older jobq during an upgrade).
Counters and histograms are left as they are. Reads the whole table.
Arguments: none.
Result: how many jobs were counted.
Errors: none.
Concurrency: LOCK TABLE jobq_jobs, jobq_jobs_history IN SHARE MODE: waits for the
transactions writing jobs at that moment, and blocks writers until the caller''s transaction ends; run it when the queue is
quiet, in a transaction of its own.';

REVOKE EXECUTE ON FUNCTION jobq_metrics_recount() FROM PUBLIC;
