-- jobq__metric_bounds (private): the upper bounds, in seconds, of the buckets of the
-- histograms jobq_wait_seconds and jobq_run_seconds (a last bucket, +Inf, holds the rest).
-- From 5 ms (a claim of a job that has just been enqueued) to a day (a backlog, a long job).
-- jobq_metric_counters stores per-bucket counts by position: changing this list changes the
-- meaning of the stored counts, so it never changes in place (a new list needs new columns).

CREATE OR REPLACE FUNCTION jobq__metric_bounds() RETURNS double precision[]
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT '{0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,30,60,120,300,600,1800,3600,7200,21600,86400}'::double precision[]
$$;

COMMENT ON FUNCTION jobq__metric_bounds() IS
'Private. The bucket bounds (seconds) of jobq_wait_seconds and jobq_run_seconds, in order.';

REVOKE EXECUTE ON FUNCTION jobq__metric_bounds() FROM PUBLIC;
