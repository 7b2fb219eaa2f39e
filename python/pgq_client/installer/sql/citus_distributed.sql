-- Whether the schema is a Citus distributed schema.
SELECT pg_catalog.count(*) > 0 AS is_distributed
FROM pg_catalog.pg_dist_schema
WHERE schemaid = pg_catalog.to_regnamespace({schema_ident}::text)
