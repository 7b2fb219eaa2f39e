-- jobq grant and revoke: jobq's tables, views and sequences in %(schema)s that jobq's owner
-- owns, private ones (jobq__) left out.
SELECT c.relname::pg_catalog.text AS name  -- noqa: RF04
FROM pg_catalog.pg_class AS c
INNER JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR (pg_catalog.=) c.relnamespace
WHERE
    n.nspname OPERATOR (pg_catalog.=) %(schema)s::pg_catalog.name
    -- noqa: disable=CP03, LT01, LT06, RF06
    AND c.relkind OPERATOR (pg_catalog.=) ANY ('{r,p,v,m,S,f}'::pg_catalog."char"[])
    -- noqa: enable=CP03, LT01, LT06, RF06
    AND pg_catalog.starts_with(c.relname::pg_catalog.text, 'jobq_'::pg_catalog.text)
    AND NOT pg_catalog.starts_with(c.relname::pg_catalog.text, 'jobq__'::pg_catalog.text)
    AND c.relowner OPERATOR (pg_catalog.=) {jobq_owner}
ORDER BY 1
