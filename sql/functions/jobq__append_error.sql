-- jobq__append_error (private): errors with one more entry, keeping the 50 most recent. A job
-- that fails or loses its lock forever must not grow its row without bound (each entry holds
-- an error of up to 10,000 characters). Used by jobq_fail and by jobq_dequeue's takeover.
--
-- A single-expression LANGUAGE sql function without SET clauses or subqueries, so that the
-- planner inlines it into the UPDATE that calls it; the slice is a jsonpath, which in lax mode
-- also takes a shorter array whole.

CREATE OR REPLACE FUNCTION jobq__append_error(errors jsonb, entry jsonb) RETURNS jsonb
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN pg_catalog.jsonb_array_length(errors) < 50 THEN errors || entry
        ELSE pg_catalog.jsonb_path_query_array(errors, '$[last - 48 to last]') || entry
    END
$$;

COMMENT ON FUNCTION jobq__append_error(jsonb, jsonb) IS
'Private. errors (a JSON array) with entry appended, keeping the 50 most recent entries.';

REVOKE EXECUTE ON FUNCTION jobq__append_error(jsonb, jsonb) FROM PUBLIC;
