-- Whether %(schema)s exists.
SELECT EXISTS (  -- noqa: CP03, LT01, LT06
    SELECT FROM pg_catalog.pg_namespace AS n
    WHERE n.nspname OPERATOR (pg_catalog.=) %(schema)s::pg_catalog.name
) AS present
