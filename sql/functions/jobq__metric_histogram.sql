-- jobq__metric_histogram (private): bucket positions (jobq__metric_bucket) turned into the
-- per-bucket counts that jobq_metric_counters stores: 22 elements, one per bucket of
-- jobq__metric_bounds() and +Inf; '{}' when there is none. PL/pgSQL: one pass, plan cached.

CREATE OR REPLACE FUNCTION jobq__metric_histogram(buckets integer[]) RETURNS bigint[]
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $$
DECLARE
    v_counts bigint[];
    v_i integer;
BEGIN
    IF coalesce(pg_catalog.cardinality(buckets), 0) = 0 THEN
        RETURN '{}'::bigint[];
    END IF;
    v_counts := pg_catalog.array_fill(0::bigint, ARRAY[22]);
    FOREACH v_i IN ARRAY buckets LOOP
        v_counts[v_i] := v_counts[v_i] + 1;
    END LOOP;
    RETURN v_counts;
END;
$$;

COMMENT ON FUNCTION jobq__metric_histogram(integer[]) IS
'Private. Per-bucket counts (22 elements) of a list of bucket positions; ''{}'' for none.';

REVOKE EXECUTE ON FUNCTION jobq__metric_histogram(integer[]) FROM PUBLIC;
