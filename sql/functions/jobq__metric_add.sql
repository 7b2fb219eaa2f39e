-- jobq__metric_add (private): two arrays of bucket counts added element by element; an empty
-- array (no observation yet) adds nothing. Used by the upserts of jobq__metrics_count and the
-- fold of jobq_metrics(). PL/pgSQL rather than SQL: a SQL body with a subquery is not inlined,
-- and would be planned again at every call.

CREATE OR REPLACE FUNCTION jobq__metric_add(a bigint[], b bigint[]) RETURNS bigint[]
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $$
DECLARE
    v_sum bigint[] := a;
BEGIN
    IF coalesce(pg_catalog.cardinality(b), 0) = 0 THEN
        RETURN a;
    END IF;
    IF coalesce(pg_catalog.cardinality(a), 0) = 0 THEN
        RETURN b;
    END IF;
    FOR i IN 1 .. greatest(pg_catalog.cardinality(a), pg_catalog.cardinality(b)) LOOP
        v_sum[i] := coalesce(a[i], 0) + coalesce(b[i], 0);
    END LOOP;
    RETURN v_sum;
END;
$$;

COMMENT ON FUNCTION jobq__metric_add(bigint[], bigint[]) IS
'Private. Element-wise sum of two arrays of bucket counts (an empty array counts as zeros).';

REVOKE EXECUTE ON FUNCTION jobq__metric_add(bigint[], bigint[]) FROM PUBLIC;
