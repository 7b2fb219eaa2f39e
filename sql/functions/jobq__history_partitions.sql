-- jobq__history_partitions (private): the range partitions of one status's history
-- (jobq__history_<status>), with their bounds read from the catalogue, oldest first; the
-- DEFAULT partition is left out. The bounds are those of the partitions themselves, whatever
-- their names say, so that jobq_maintain_history never makes a partition that overlaps one.
-- A status whose history is one plain table (a Citus distributed schema, docs/scaling.md) has
-- none: the catalogue lists no partition of it, and its callers then make, empty and drop none.
-- No SET clause: it runs inside its callers, with their search_path.

CREATE OR REPLACE FUNCTION jobq__history_partitions(status text)
RETURNS TABLE (name text, lower_at timestamptz, upper_at timestamptz)
LANGUAGE sql
STABLE
AS $$
    SELECT
        c.relname::text,
        b.m[1]::timestamptz,
        b.m[2]::timestamptz
    FROM pg_catalog.pg_inherits AS i
    JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid
    CROSS JOIN LATERAL (
        SELECT pg_catalog.regexp_match(
            pg_catalog.pg_get_expr(c.relpartbound, c.oid),
            '^FOR VALUES FROM \(''([^'']+)''\) TO \(''([^'']+)''\)$'
        ) AS m
    ) AS b
    WHERE i.inhparent OPERATOR(pg_catalog.=) pg_catalog.to_regclass(
        'jobq__history_' OPERATOR(pg_catalog.||) jobq__history_partitions.status
    )::oid
      AND b.m IS NOT NULL
    ORDER BY 2
$$;

COMMENT ON FUNCTION jobq__history_partitions(text) IS
'Private. The range partitions of jobq_jobs_history for one finished status: name, lower_at
(inclusive) and upper_at (exclusive) bounds of finished_at, oldest first; the DEFAULT
partition is not listed. None for a status whose history is one table (Citus).';

REVOKE EXECUTE ON FUNCTION jobq__history_partitions(text) FROM PUBLIC;
