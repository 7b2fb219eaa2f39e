-- jobq__history_truncate (private): empties one partition of jobq_jobs_history whole, in
-- constant time whatever its rows (TRUNCATE: no row deleted one by one, no dead row left for
-- VACUUM), for jobq_maintain_history (an expired partition whose DROP must wait) and
-- jobq_prune (a partition that lies wholly in the range it was asked to delete).
--
-- TRUNCATE locks the partition alone (ACCESS EXCLUSIVE), not its parents: completions, which
-- insert into the partition of the present, never wait for it; only readers of every partition
-- (a look-up by id or key) and a requeue or prune of its own rows do. The caller bounds the
-- wait with its lock_timeout and handles lock_not_available.
--
-- When the rows must be counted (count_rows, or metrics on: the gauge jobq_jobs of
-- jobq_metrics() follows every job that leaves), they are read once under SHARE, which lets
-- readers go on and keeps requeues and prunes of those rows out until the TRUNCATE; that read
-- is O(rows), the one cost that grows with them. Without it, nothing reads the rows.
-- Returns the rows emptied, or NULL when nothing counted them.
-- No SET clause: it runs inside its callers, with their search_path and lock_timeout.

CREATE OR REPLACE FUNCTION jobq__history_truncate(partition_name text, count_rows boolean)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
AS $$
-- Its one write is a TRUNCATE of dynamic SQL, which plpgsql_check cannot see: without this
-- option it would call the function STABLE.
-- @plpgsql_check_options: performance_warnings = false
DECLARE
    v_rows bigint;
BEGIN
    IF (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton) THEN
        EXECUTE pg_catalog.format('LOCK TABLE %I IN SHARE MODE', partition_name);
        EXECUTE pg_catalog.format(
            'SELECT pg_catalog.count(*), jobq__metrics_count(''pruned''::text, '
            'pg_catalog.array_agg(h.queue), pg_catalog.array_agg(h.job_type), '
            'pg_catalog.array_agg(h.status), NULL::double precision[]) '
            'FROM %I AS h HAVING pg_catalog.count(*) > 0', partition_name
        ) INTO v_rows;
        v_rows := coalesce(v_rows, 0::bigint);
    ELSIF count_rows THEN
        EXECUTE pg_catalog.format('LOCK TABLE %I IN SHARE MODE', partition_name);
        EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM %I', partition_name)
        INTO v_rows;
    END IF;
    EXECUTE pg_catalog.format('TRUNCATE TABLE %I', partition_name);
    RETURN v_rows;
END;
$$;

COMMENT ON FUNCTION jobq__history_truncate(text, boolean) IS
'Private. Empties one partition of jobq_jobs_history by TRUNCATE (constant time; locks that
partition only). Arguments: partition_name, count_rows (count the rows first). Rows are read
once, under SHARE, when count_rows is true or metrics are on (the jobq_jobs gauge counts them
as pruned). Result: the rows emptied, or NULL when not counted. Errors: lock_not_available
(55P03) when the caller''s lock_timeout passes.';

REVOKE EXECUTE ON FUNCTION jobq__history_truncate(text, boolean) FROM PUBLIC;
