-- jobq__metric_bucket (private): the position (1-based) of the bucket of jobq__metric_bounds()
-- that an observation of `seconds` falls in: the first bound >= seconds (Prometheus buckets
-- are "less than or equal"), or one past the last bound for +Inf. width_bucket counts the
-- thresholds <= its operand, which puts a value equal to a bound in the bucket above; on the
-- negated, reversed bounds it counts the bounds >= seconds instead. A NULL or negative
-- duration (clocks of two sessions) counts as 0. Inlined by the planner.

CREATE OR REPLACE FUNCTION jobq__metric_bucket(seconds double precision) RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT 22 - pg_catalog.width_bucket(
        -greatest(coalesce(seconds, 0), 0),
        '{-86400,-21600,-7200,-3600,-1800,-600,-300,-120,-60,-30,-10,-5,-2.5,-1,-0.5,-0.25,-0.1,-0.05,-0.025,-0.01,-0.005}'::double precision[]
    )
$$;

COMMENT ON FUNCTION jobq__metric_bucket(double precision) IS
'Private. The 1-based bucket of jobq__metric_bounds() for a duration in seconds (22: +Inf).';

REVOKE EXECUTE ON FUNCTION jobq__metric_bucket(double precision) FROM PUBLIC;
