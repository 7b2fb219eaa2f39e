-- The role that owns jobq in the schema (the owner of jobq_migrations); no row: no jobq there.
SELECT c.relowner::pg_catalog.regrole::pg_catalog.text AS owner_role
FROM pg_catalog.pg_class AS c
INNER JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR (pg_catalog.=) c.relnamespace
WHERE
    n.nspname OPERATOR (pg_catalog.=) {schema_name}::pg_catalog.name
    AND c.relname OPERATOR (pg_catalog.=) 'jobq_migrations'::pg_catalog.name
