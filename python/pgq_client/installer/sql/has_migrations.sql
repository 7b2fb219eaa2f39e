-- Whether the schema has a jobq_migrations table (a schema without one has no jobq).
SELECT pg_catalog.to_regclass(
    pg_catalog.concat({schema_ident}::pg_catalog.text, '.jobq_migrations')
) IS NOT NULL AS present
