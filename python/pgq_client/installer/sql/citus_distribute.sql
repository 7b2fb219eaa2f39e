-- The statements that fit the functions and tables of a distributed schema to Citus, in order:
-- 1. each function of the files (named, in the order they are applied: a node checks a SQL
--    body against the functions it calls) that Citus does not colocate yet is distributed,
--    colocated with jobq_jobs, so that a call from the coordinator runs on the schema's node;
-- 2. a function's own {setting} (force_generic_plan) defeats the custom plan Citus forces for
--    a statement with parameters ("could not create distributed plan"): it is reset;
-- 3. the {nested} functions write from inside their callers' statements on the schema's shard,
--    a nested distributed statement that Citus refuses unless allowed (safe: the tables are
--    colocated and it runs locally, in the same transaction);
-- 4. where such a call is not delegated, the node runs it in a session of its own: it gets
--    the schema's search_path;
-- 5. citus_schema_move copies the schema by logical replication, which needs every table's
--    rows identified: a table without a primary key gets REPLICA IDENTITY FULL;
-- 6. a function distributed by step 1 may arrive on the nodes with PostgreSQL's default
--    EXECUTE for PUBLIC (seen for those whose result is a table's row type, such as
--    jobq_dequeue and jobq_get_job), which the file had revoked: the REVOKE is repeated, and
--    Citus sends it to every node.
WITH f AS (
    SELECT
        p.oid,
        p.proname::pg_catalog.text AS proname,
        p.oid::pg_catalog.regprocedure::pg_catalog.text AS signature,
        pg_catalog.array_to_string(p.proconfig, ',') AS config,
        pg_catalog.array_position(
            ARRAY[{names}]::pg_catalog.text[], p.proname::pg_catalog.text
        ) AS file_order,
        NOT EXISTS (
            SELECT FROM pg_catalog.pg_dist_object AS o
            WHERE
                o.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                AND o.objid = p.oid
                AND o.colocationid IS NOT NULL
        ) AS undistributed,
        p.proacl IS NOT NULL AND NOT EXISTS (
            SELECT FROM pg_catalog.aclexplode(p.proacl) AS a
            WHERE a.grantee = 0
        ) AS public_revoked
    FROM pg_catalog.pg_proc AS p
    WHERE p.pronamespace = pg_catalog.to_regnamespace({schema_ident}::text)
)

SELECT s.command
FROM (
    SELECT
        1 AS step,
        f.file_order,
        pg_catalog.format(
            'SELECT pg_catalog.create_distributed_function(%L::pg_catalog.regprocedure, '
            'colocate_with => %L::text)',
            f.signature,
            pg_catalog.format('%s.jobq_jobs', {schema_ident}::text)
        ) AS command
    FROM f
    WHERE f.file_order IS NOT NULL AND f.undistributed
    UNION ALL
    SELECT
        2 AS step,
        f.file_order,
        pg_catalog.format('ALTER FUNCTION %s RESET %I', f.signature, {setting}::text) AS command
    FROM f
    WHERE f.config LIKE '%' || {setting}::text || '=%'
    UNION ALL
    SELECT
        3 AS step,
        f.file_order,
        pg_catalog.format(
            'ALTER FUNCTION %s SET %s = on', f.signature, {nested_setting}::text
        ) AS command
    FROM f
    WHERE f.proname = any(ARRAY[{nested}]::pg_catalog.text[])
    UNION ALL
    SELECT
        4 AS step,
        f.file_order,
        pg_catalog.format(
            'ALTER FUNCTION %s SET search_path = %s, pg_temp', f.signature, {schema_ident}::text
        ) AS command
    FROM f
    WHERE f.proname = any(ARRAY[{nested}]::pg_catalog.text[])
    UNION ALL
    SELECT
        5 AS step,
        NULL AS file_order,
        pg_catalog.format(
            'ALTER TABLE %s REPLICA IDENTITY FULL', c.oid::pg_catalog.regclass
        ) AS command
    FROM pg_catalog.pg_class AS c
    WHERE
        c.relnamespace = pg_catalog.to_regnamespace({schema_ident}::text)
        AND c.relkind = 'r'
        AND c.relreplident = 'd'
        AND NOT EXISTS (
            SELECT FROM pg_catalog.pg_index AS i
            WHERE i.indrelid = c.oid AND i.indisprimary
        )
    UNION ALL
    SELECT
        6 AS step,
        f.file_order,
        pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f.signature) AS command
    FROM f
    WHERE f.file_order IS NOT NULL AND f.undistributed AND f.public_revoked
) AS s
ORDER BY s.step, s.file_order, s.command
