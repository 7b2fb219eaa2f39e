-- The one-level history of a Citus distributed schema (docs/scaling.md, decision 0028): Citus
-- distributes no partitioned table that is a partition itself, and jobq_jobs_history is
-- partitioned by status and each status by day. Each status's partition that is partitioned
-- becomes a plain table of the same name, its rows kept; the functions read which layout a
-- status has from the catalogue (a plain jobq__history_<status>: retention deletes its expired
-- rows in batches instead of emptying day partitions). The commands, in order, per status:
-- 1. its rows are kept aside in a temporary table, dropped at the commit;
-- 2. the status's partitioned table is dropped, with its day and DEFAULT partitions;
-- 3. a plain partition of the same name and bound takes its place (the indexes of
--    jobq_jobs_history give it theirs; owner and privileges as the migrations made the first);
-- 4. the rows come back.
-- Run in one transaction, before citus_schema_distribute; nothing to do on a second run.
WITH s AS (
    SELECT
        c.relname::pg_catalog.text AS relname,
        c.oid::pg_catalog.regclass::pg_catalog.text AS partition_name,
        pg_catalog.pg_get_expr(c.relpartbound, c.oid) AS bound
    FROM pg_catalog.pg_inherits AS i
    INNER JOIN pg_catalog.pg_class AS c ON i.inhrelid = c.oid
    WHERE
        i.inhparent = pg_catalog.to_regclass(
            pg_catalog.format('%s.jobq_jobs_history', {schema_ident}::text)
        )::pg_catalog.oid
        AND c.relkind = 'p'
)

SELECT v.command
FROM s
CROSS JOIN
    LATERAL (
        VALUES
        (
            1,
            pg_catalog.format(
                'CREATE TEMPORARY TABLE %I ON COMMIT DROP AS SELECT * FROM %s',
                'jobq__keep_' || s.relname, s.partition_name
            )
        ),
        (2, pg_catalog.format('DROP TABLE %s', s.partition_name)),
        (
            3,
            pg_catalog.format(
                'CREATE TABLE %s PARTITION OF %s.jobq_jobs_history %s',
                s.partition_name, {schema_ident}::text, s.bound
            )
        ),
        (
            4,
            pg_catalog.format(
                'INSERT INTO %s SELECT * FROM %I', s.partition_name, 'jobq__keep_' || s.relname
            )
        )
    ) AS v (step, command)
ORDER BY s.relname, v.step
