-- The partitioned tables of the schema that are partitions themselves (a second level of
-- partitioning), which Citus cannot distribute, by name.
SELECT c.relname::pg_catalog.text AS relation_name
FROM pg_catalog.pg_class AS c
WHERE
    c.relnamespace = pg_catalog.to_regnamespace({schema_ident}::text)
    AND c.relkind = 'p'
    AND c.relispartition
ORDER BY c.relname
