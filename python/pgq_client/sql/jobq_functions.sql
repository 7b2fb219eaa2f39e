-- jobq grant and revoke: jobq's functions in %(schema)s that jobq's owner owns, by signature
-- (regprocedure), so that an overload is never named for another.
SELECT
    p.proname::pg_catalog.text AS name,  -- noqa: RF04
    p.oid::pg_catalog.regprocedure::pg_catalog.text AS signature
FROM pg_catalog.pg_proc AS p
INNER JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR (pg_catalog.=) p.pronamespace
WHERE
    n.nspname OPERATOR (pg_catalog.=) %(schema)s::pg_catalog.name
    AND p.prokind OPERATOR (pg_catalog.=) 'f'::pg_catalog."char"  -- noqa: RF06
    AND pg_catalog.starts_with(p.proname::pg_catalog.text, 'jobq_'::pg_catalog.text)
    AND p.proowner OPERATOR (pg_catalog.=) {jobq_owner}
ORDER BY 1, 2
