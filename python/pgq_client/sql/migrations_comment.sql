-- The comment of jobq_migrations, where the runner names the schema's latest breaking
-- change, read from the catalogue, which every role may read: in the given schema, or the
-- search_path's.
SELECT pg_catalog.obj_description(c.oid, 'pg_class'::pg_catalog.name) AS description
FROM pg_catalog.pg_class AS c
INNER JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR (pg_catalog.=) c.relnamespace
WHERE
    c.relname OPERATOR (pg_catalog.=) 'jobq_migrations'::pg_catalog.name
    AND CASE
        WHEN %(schema)s::pg_catalog.text IS NULL
            THEN
                c.oid OPERATOR (pg_catalog.=)
                pg_catalog.to_regclass('jobq_migrations'::pg_catalog.text)
        ELSE n.nspname OPERATOR (pg_catalog.=) %(schema)s::pg_catalog.name
    END
