-- jobq revoke: whether anything but jobq lives in %(schema)s (then USAGE stays).
SELECT EXISTS (  -- noqa: CP03, LT01, LT06
    SELECT FROM pg_catalog.pg_class AS c
    INNER JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR (pg_catalog.=) c.relnamespace
    WHERE
        n.nspname OPERATOR (pg_catalog.=) %(schema)s::pg_catalog.name
        AND NOT pg_catalog.starts_with(c.relname::pg_catalog.text, 'jobq_'::pg_catalog.text)
    UNION ALL
    SELECT FROM pg_catalog.pg_proc AS p
    INNER JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR (pg_catalog.=) p.pronamespace
    WHERE
        n.nspname OPERATOR (pg_catalog.=) %(schema)s::pg_catalog.name
        AND NOT pg_catalog.starts_with(p.proname::pg_catalog.text, 'jobq_'::pg_catalog.text)
) AS others  -- noqa: RF04
