-- jobq_metrics_forget (admin): removes from jobq_metrics() the (queue, job_type) label sets
-- that have no jobs left (pruned, or never kept), with their counters and histograms, and
-- their admission to jobq_metric_labels, so that room is made for new label sets under the
-- bound (jobq_settings.metrics_label_sets) and a scrape stops showing names that producers
-- used once. The overflow label set ('', '') goes too when every job left is counted under
-- its own label set. Prometheus sees a removed series end, as when a target restarts.
--
-- It reads jobq_all_jobs whole, once (its distinct pairs: no index holds every job by queue and
-- job type), with writes to jobq_jobs blocked (LOCK ... IN SHARE MODE, as
-- jobq_metrics_recount) so that no job of a pair it removes is being added meanwhile, and
-- the metric tables locked against folds and counts (SHARE ROW EXCLUSIVE) until it commits:
-- run it when the queue is quiet, in a transaction of its own.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_metrics_forget() RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_forgotten bigint;
BEGIN
    LOCK TABLE jobq_jobs, jobq_jobs_history IN SHARE MODE;
    LOCK TABLE jobq_metric_counters, jobq_metric_deltas, jobq_metric_labels
    IN SHARE ROW EXCLUSIVE MODE;

    WITH present AS MATERIALIZED (
        SELECT DISTINCT j.queue, j.job_type FROM jobq_all_jobs AS j
    ),

    labels AS MATERIALIZED (
        SELECT DISTINCT c.queue, c.job_type
        FROM (
            SELECT l.queue, l.job_type FROM jobq_metric_labels AS l
            UNION ALL
            SELECT x.queue, x.job_type FROM jobq_metric_counters AS x
            UNION ALL
            SELECT d.queue, d.job_type FROM jobq_metric_deltas AS d
        ) AS c
    ),

    gone AS MATERIALIZED (
        SELECT l.queue, l.job_type
        FROM labels AS l
        WHERE NOT (l.queue = '' AND l.job_type = '')
          AND NOT EXISTS (
              SELECT FROM present AS p WHERE p.queue = l.queue AND p.job_type = l.job_type
          )
        UNION ALL
        SELECT o.queue, o.job_type
        FROM labels AS o
        WHERE o.queue = '' AND o.job_type = ''
          AND NOT EXISTS (
              SELECT FROM present AS p
              WHERE NOT EXISTS (
                  SELECT FROM jobq_metric_labels AS m
                  WHERE m.queue = p.queue AND m.job_type = p.job_type
              )
          )
    ),

    forgot_labels AS (
        DELETE FROM jobq_metric_labels AS m
        USING gone AS g
        WHERE m.queue = g.queue AND m.job_type = g.job_type
        RETURNING 1
    ),

    forgot_counters AS (
        DELETE FROM jobq_metric_counters AS c
        USING gone AS g
        WHERE c.queue = g.queue AND c.job_type = g.job_type
        RETURNING 1
    ),

    forgot_deltas AS (
        DELETE FROM jobq_metric_deltas AS d
        USING gone AS g
        WHERE d.queue = g.queue AND d.job_type = g.job_type
        RETURNING 1
    )

    SELECT pg_catalog.count(*) INTO v_forgotten FROM gone;
    RETURN v_forgotten;
END;
$$;

COMMENT ON FUNCTION jobq_metrics_forget() IS
'Admin only. Removes from jobq_metrics() every (queue, job_type) label set that has no job
left, in any status: its counters, histograms and gauge rows, and its admission under the
bound jobq_settings.metrics_label_sets, so that new label sets are counted under their own
names again; the overflow label set (queue '''', job_type '''') goes too when no job left is
counted under it. The removed series end, as a restarted target''s do.
Arguments: none.
Result: how many label sets were removed.
Errors: none.
Concurrency: LOCK TABLE jobq_jobs, jobq_jobs_history IN SHARE MODE (waits for the
transactions writing jobs at that moment, blocks writers until the caller''s transaction ends) and the metric tables in
SHARE ROW EXCLUSIVE MODE; reads jobq_all_jobs whole, once. Run it when the queue is quiet, in a
transaction of its own.';

REVOKE EXECUTE ON FUNCTION jobq_metrics_forget() FROM PUBLIC;
