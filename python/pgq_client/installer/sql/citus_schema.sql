-- Make the schema a Citus distributed schema: its tables, whole, on one worker node.
SELECT pg_catalog.citus_schema_distribute({schema_ident}::pg_catalog.text::pg_catalog.regnamespace)
