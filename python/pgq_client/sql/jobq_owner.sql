-- jobq's owner in %(schema)s: jobq_migrations' owner, else the connected role. jobq grant and
-- revoke touch only objects it owns, so that an object another role planted in the schema is
-- never granted or revoked.
SELECT coalesce(
    (
        SELECT c.relowner FROM pg_catalog.pg_class AS c
        INNER JOIN pg_catalog.pg_namespace AS n
            ON n.oid OPERATOR (pg_catalog.=) c.relnamespace
        WHERE
            n.nspname OPERATOR (pg_catalog.=) %(schema)s::pg_catalog.name
            AND c.relname OPERATOR (pg_catalog.=) 'jobq_migrations'::pg_catalog.name
    ),
    (
        SELECT r.oid FROM pg_catalog.pg_roles AS r
        WHERE r.rolname OPERATOR (pg_catalog.=) current_user
    )
)
