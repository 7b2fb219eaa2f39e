-- Whether the schema's lock table belongs to jobq's owner (the owner of jobq_migrations, or
-- the role that runs this before there is one): a table another role made could hold a key
-- that role knows. No row: there is no lock table yet.
SELECT
    c.relowner OPERATOR (pg_catalog.=) coalesce(
        (
            SELECT m.relowner FROM pg_catalog.pg_class AS m
            WHERE
                m.relnamespace OPERATOR (pg_catalog.=) c.relnamespace
                AND m.relname OPERATOR (pg_catalog.=) 'jobq_migrations'::pg_catalog.name
        ),
        (
            SELECT r.oid FROM pg_catalog.pg_roles AS r
            WHERE r.rolname OPERATOR (pg_catalog.=) current_user
        )
    ) AS ours
FROM pg_catalog.pg_class AS c
INNER JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR (pg_catalog.=) c.relnamespace
WHERE
    n.nspname OPERATOR (pg_catalog.=) {schema_name}::pg_catalog.name
    AND c.relname OPERATOR (pg_catalog.=) 'jobq__migrate_lock'::pg_catalog.name
