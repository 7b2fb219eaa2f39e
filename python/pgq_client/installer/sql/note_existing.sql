-- The objects of the schema before this transaction: at its end, exact_privileges.sql gives
-- those created since exactly the privileges jobq means.
SELECT
    pg_catalog.set_config(
        'jobq.existing_objects',
        coalesce(pg_catalog.array_agg(o.entry)::text, '{{}}'),
        TRUE
    )
FROM (
    SELECT 'class:' || c.oid AS entry
    FROM pg_catalog.pg_class AS c
    INNER JOIN pg_catalog.pg_namespace AS n ON c.relnamespace = n.oid
    WHERE n.nspname = {schema_name}
    UNION ALL
    SELECT 'proc:' || p.oid AS entry
    FROM pg_catalog.pg_proc AS p
    INNER JOIN pg_catalog.pg_namespace AS n ON p.pronamespace = n.oid
    WHERE n.nspname = {schema_name}
    UNION ALL
    SELECT 'type:' || t.oid AS entry
    FROM pg_catalog.pg_type AS t
    INNER JOIN pg_catalog.pg_namespace AS n ON t.typnamespace = n.oid
    WHERE n.nspname = {schema_name}
    UNION ALL
    SELECT 'namespace:' || n.oid AS entry
    FROM pg_catalog.pg_namespace AS n
    WHERE n.nspname = {schema_name}
) AS o;
