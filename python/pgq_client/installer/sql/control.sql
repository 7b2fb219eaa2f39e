-- Who else controls a schema, from the catalogue alone (no jobq function is called: one could
-- be what another role planted). jobq's owner is the owner of jobq_migrations, or the role
-- that runs this before there is one; its members and superusers are trusted as it is. Found:
-- objects in the schema that another role owns, and roles that may CREATE there (as the
-- schema's owner, by a grant, or through a role they may become; a predefined pg_ role through
-- its members), or PUBLIC's CREATE. Every operator and function is named in pg_catalog.
WITH s AS (
    SELECT
        n.oid,
        n.nspowner,
        n.nspacl
    FROM pg_catalog.pg_namespace AS n
    WHERE n.nspname OPERATOR (pg_catalog.=) {schema_name}::pg_catalog.name
),

o AS (
    SELECT coalesce(
        (
            SELECT c.relowner FROM pg_catalog.pg_class AS c, s
            WHERE
                c.relnamespace OPERATOR (pg_catalog.=) s.oid
                AND c.relname OPERATOR (pg_catalog.=) 'jobq_migrations'::pg_catalog.name
        ),
        (
            SELECT r.oid FROM pg_catalog.pg_roles AS r
            WHERE r.rolname OPERATOR (pg_catalog.=) current_user
        )
    ) AS owner  -- noqa: RF04
),

objects (kind, name, owner) AS (
    SELECT
        'relation',
        c.relname::pg_catalog.text,
        c.relowner
    FROM pg_catalog.pg_class AS c, s
    WHERE c.relnamespace OPERATOR (pg_catalog.=) s.oid
    UNION ALL
    SELECT
        'function',
        p.oid::pg_catalog.regprocedure::pg_catalog.text,
        p.proowner
    FROM pg_catalog.pg_proc AS p, s
    WHERE p.pronamespace OPERATOR (pg_catalog.=) s.oid
    UNION ALL
    SELECT
        'operator',
        p.oid::pg_catalog.regoperator::pg_catalog.text,
        p.oprowner
    FROM pg_catalog.pg_operator AS p, s
    WHERE p.oprnamespace OPERATOR (pg_catalog.=) s.oid
    UNION ALL
    SELECT
        'type',
        t.oid::pg_catalog.regtype::pg_catalog.text,
        t.typowner
    FROM pg_catalog.pg_type AS t, s
    WHERE
        t.typnamespace OPERATOR (pg_catalog.=) s.oid
        -- a relation's row type and an array type follow their relation and element type
        AND t.typrelid OPERATOR (pg_catalog.=) 0::pg_catalog.oid
        AND NOT t.typcategory OPERATOR (pg_catalog.=) 'A'::pg_catalog."char"  -- noqa: RF06
    UNION ALL
    SELECT
        'collation',
        c.collname::pg_catalog.text,
        c.collowner
    FROM pg_catalog.pg_collation AS c, s
    WHERE c.collnamespace OPERATOR (pg_catalog.=) s.oid
    UNION ALL
    SELECT
        'conversion',
        c.conname::pg_catalog.text,
        c.conowner
    FROM pg_catalog.pg_conversion AS c, s
    WHERE c.connamespace OPERATOR (pg_catalog.=) s.oid
    UNION ALL
    SELECT
        'operator class',
        c.opcname::pg_catalog.text,
        c.opcowner
    FROM pg_catalog.pg_opclass AS c, s
    WHERE c.opcnamespace OPERATOR (pg_catalog.=) s.oid
    UNION ALL
    SELECT
        'operator family',
        f.opfname::pg_catalog.text,
        f.opfowner
    FROM pg_catalog.pg_opfamily AS f, s
    WHERE f.opfnamespace OPERATOR (pg_catalog.=) s.oid
    UNION ALL
    SELECT
        'text search configuration',
        c.cfgname::pg_catalog.text,
        c.cfgowner
    FROM pg_catalog.pg_ts_config AS c, s
    WHERE c.cfgnamespace OPERATOR (pg_catalog.=) s.oid
    UNION ALL
    SELECT
        'text search dictionary',
        d.dictname::pg_catalog.text,
        d.dictowner
    FROM pg_catalog.pg_ts_dict AS d, s
    WHERE d.dictnamespace OPERATOR (pg_catalog.=) s.oid
    UNION ALL
    SELECT
        'statistics object',
        x.stxname::pg_catalog.text,
        x.stxowner
    FROM pg_catalog.pg_statistic_ext AS x, s
    WHERE x.stxnamespace OPERATOR (pg_catalog.=) s.oid
)

SELECT
    0 AS sort,
    pg_catalog.format(
        '%s %s belongs to %s, not to jobq''s owner %s',
        b.kind, b.name, b.owner::pg_catalog.regrole, o.owner::pg_catalog.regrole
    ) AS finding
FROM objects AS b, o
WHERE
    NOT b.owner OPERATOR (pg_catalog.=) o.owner
    AND NOT pg_catalog.pg_has_role(b.owner, o.owner, 'MEMBER'::pg_catalog.text)
UNION ALL
SELECT
    1 AS sort,
    pg_catalog.format(
        'every role (PUBLIC) may CREATE in schema %s', {schema_name}::pg_catalog.text
    ) AS finding
FROM s, pg_catalog.aclexplode(s.nspacl) AS a
WHERE
    a.privilege_type OPERATOR (pg_catalog.=) 'CREATE'::pg_catalog.text
    AND a.grantee OPERATOR (pg_catalog.=) 0::pg_catalog.oid
UNION ALL
SELECT
    2 AS sort,
    pg_catalog.format(
        'role %s may CREATE in schema %s', r.rolname, {schema_name}::pg_catalog.text
    ) AS finding
FROM pg_catalog.pg_roles AS r, s, o
WHERE
    NOT r.rolsuper
    AND NOT pg_catalog.starts_with(r.rolname::pg_catalog.text, 'pg_'::pg_catalog.text)
    AND NOT r.oid OPERATOR (pg_catalog.=) o.owner
    AND NOT pg_catalog.pg_has_role(r.oid, o.owner, 'MEMBER'::pg_catalog.text)
    AND (
        pg_catalog.pg_has_role(r.oid, s.nspowner, 'MEMBER'::pg_catalog.text)
        OR EXISTS (
            SELECT FROM pg_catalog.aclexplode(s.nspacl) AS a
            WHERE
                a.privilege_type OPERATOR (pg_catalog.=) 'CREATE'::pg_catalog.text
                AND NOT a.grantee OPERATOR (pg_catalog.=) 0::pg_catalog.oid
                AND pg_catalog.pg_has_role(r.oid, a.grantee, 'MEMBER'::pg_catalog.text)
        )
    )
ORDER BY 1, 2
