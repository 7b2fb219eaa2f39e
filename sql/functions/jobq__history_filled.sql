-- jobq__history_filled (private): whether one partition of jobq_jobs_history holds any row,
-- read by jobq_maintain_history before it empties or drops one: it stops at the first row
-- (no count), and takes no lock that a completion or a reader waits for (ACCESS SHARE).
-- No SET clause: it runs inside its callers, with their search_path.

CREATE OR REPLACE FUNCTION jobq__history_filled(partition_name text) RETURNS boolean
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_filled boolean;
BEGIN
    EXECUTE pg_catalog.format('SELECT EXISTS (SELECT FROM %I)', partition_name) INTO v_filled;
    RETURN v_filled;
END;
$$;

COMMENT ON FUNCTION jobq__history_filled(text) IS
'Private. Whether the partition of jobq_jobs_history named partition_name holds a row.
Arguments: partition_name. Result: true when it holds one. Errors: none of its own.';

REVOKE EXECUTE ON FUNCTION jobq__history_filled(text) FROM PUBLIC;
