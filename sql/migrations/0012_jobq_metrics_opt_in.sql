-- 0012_jobq_metrics_opt_in.sql — counting for jobq_metrics() becomes a choice, off by default.
--
-- Counting costs one more write in every counted call (an upsert of the backend's row of
-- jobq_metric_counters), which make bench shows as fewer enqueues, claims and completions
-- per second (docs/performance.md has the figures). That is a price to choose, not one to
-- pay unasked, so a new installation starts with it off: jobq_configure(metrics => true)
-- turns it on (and counts the jobs present for the gauge jobq_jobs).
--
-- An installation that has already counted something (a row in jobq_metric_counters or
-- jobq_metric_deltas: it ran with migration 0010 or 0011, or 0010 found jobs to count) keeps
-- counting, so that an upgrade never stops the metrics that someone's dashboards and alerts
-- read. jobq_metrics() tells which (the gauge jobq_metrics_counting).

ALTER TABLE jobq_settings ALTER COLUMN metrics SET DEFAULT FALSE;

UPDATE jobq_settings
SET metrics = FALSE
WHERE
    NOT EXISTS (SELECT 1 FROM jobq_metric_counters)
    AND NOT EXISTS (SELECT 1 FROM jobq_metric_deltas);

COMMENT ON COLUMN jobq_settings.metrics IS
'Whether the jobq functions count what they do for jobq_metrics() (jobq_configure(metrics =>
...)); false on a new installation. While false, the counters stand still, and the gauge
jobq_jobs is recounted when it is turned on again.';
