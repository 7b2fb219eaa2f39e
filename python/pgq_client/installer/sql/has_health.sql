-- Whether the schema has jobq_health (an install from a test's own function files may not).
SELECT pg_catalog.to_regproc(
    pg_catalog.concat({schema_ident}::pg_catalog.text, '.jobq_health')
) IS NOT NULL AS present
