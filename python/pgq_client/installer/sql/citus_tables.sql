-- The tables of the schema that logical replication cannot identify rows of (no primary key,
-- default replica identity): citus_schema_move needs them identified.
SELECT c.oid::pg_catalog.regclass::text
FROM pg_catalog.pg_class AS c
WHERE
    c.relnamespace = pg_catalog.to_regnamespace({schema_ident}::text)
    AND c.relkind = 'r'
    AND c.relreplident = 'd'
    AND NOT EXISTS (
        SELECT FROM pg_catalog.pg_index AS i
        WHERE i.indrelid = c.oid AND i.indisprimary
    )
