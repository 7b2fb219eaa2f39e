-- Every jobq function of the schema by signature (overloads are rows of their own), with
-- what jobq doctor compares to the files.
SELECT
    p.oid::pg_catalog.regprocedure::pg_catalog.text,
    p.proname::pg_catalog.text,
    p.prosrc,
    p.prosecdef,
    p.provolatile::pg_catalog.text,
    l.lanname::pg_catalog.text,
    coalesce(p.proconfig, '{{}}')::pg_catalog.text[]
FROM pg_catalog.pg_proc AS p
INNER JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR (pg_catalog.=) p.pronamespace
INNER JOIN pg_catalog.pg_language AS l ON l.oid OPERATOR (pg_catalog.=) p.prolang
WHERE
    n.nspname OPERATOR (pg_catalog.=) {schema_name}::pg_catalog.name
    AND pg_catalog.starts_with(p.proname::pg_catalog.text, 'jobq_'::pg_catalog.text)
ORDER BY 1
