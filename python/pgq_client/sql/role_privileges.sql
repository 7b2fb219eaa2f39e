-- The connected role, and which of the given functions (%(names)s, with their argument types
-- in %(signatures)s) of %(schema)s it may execute, NULL for one that is not installed: the
-- dashboard shows what it may not do disabled, in one round trip per page.
SELECT
    f.name,
    current_user::pg_catalog.text AS role,  -- noqa: RF04
    CASE
        WHEN p.oid IS NOT NULL
            THEN pg_catalog.has_function_privilege(p.oid, 'EXECUTE'::pg_catalog.text)
    END AS allowed
FROM pg_catalog.unnest(%(names)s::pg_catalog.text[]) WITH ORDINALITY AS f (name, i)
INNER JOIN pg_catalog.unnest(%(signatures)s::pg_catalog.text[]) WITH ORDINALITY AS s (signature, i)
    ON f.i OPERATOR (pg_catalog.=) s.i
CROSS JOIN LATERAL (  -- noqa: ST05
    SELECT
        pg_catalog.to_regprocedure(pg_catalog.concat(
            pg_catalog.quote_ident(%(schema)s::pg_catalog.text), '.', f.name, s.signature
        ))::pg_catalog.oid AS oid
) AS p
