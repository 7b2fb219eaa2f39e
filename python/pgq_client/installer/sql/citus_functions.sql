-- The functions of the schema, by signature, whose settings name a given one (the setting a
-- Citus install resets; NULL: none), or that are named (those it lets run nested distributed
-- statements).
SELECT p.oid::pg_catalog.regprocedure::text
FROM pg_catalog.pg_proc AS p
WHERE
    p.pronamespace = pg_catalog.to_regnamespace({schema_ident}::text)
    AND (
        pg_catalog.array_to_string(p.proconfig, ',') LIKE '%' || {setting}::text || '=%'
        OR p.proname = any(ARRAY[{names}]::text[])
    )
