-- The schema of the installation for a client given none: the first schema of the
-- connection's search_path that holds jobq_enqueue. It runs with the application's
-- search_path, so it names every function, operator and type it uses in pg_catalog.
SELECT s.name::pg_catalog.text AS schema  -- noqa: RF04
FROM pg_catalog.unnest(pg_catalog.current_schemas(FALSE)) WITH ORDINALITY AS s (name, position)
WHERE
    EXISTS (
        SELECT FROM pg_catalog.pg_proc AS p
        INNER JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR (pg_catalog.=) p.pronamespace
        WHERE
            n.nspname OPERATOR (pg_catalog.=) s.name
            AND p.proname OPERATOR (pg_catalog.=) 'jobq_enqueue'::pg_catalog.name
    )
ORDER BY s.position
LIMIT 1
