-- At the end of the transaction (after the exact privileges of new objects): each role noted
-- by note_levels.sql gets the functions of its level that were not there at the start, as
-- `jobq grant` would give them, and an admin SELECT on the jobq tables it cannot
-- read yet. Each grant is raised as a NOTICE, which the runner logs.
DO $jobq$
DECLARE
    v_grant record;
BEGIN
    FOR v_grant IN
        WITH roles AS (
            SELECT
                pg_catalog.split_part(r, ':', 1) AS level,
                pg_catalog.split_part(r, ':', 2)::oid AS grantee
            FROM pg_catalog.unnest(
                pg_catalog.current_setting('jobq.level_roles')::text[]
            ) AS r
        ),
        levels (level, functions) AS (
            VALUES {levels}
        ),
        added AS (
            SELECT p.proname::text AS name, p.proacl
            FROM pg_catalog.pg_proc AS p
            JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
            WHERE n.nspname = {schema_name}
              AND p.prokind = 'f'
              AND pg_catalog.left(p.proname, 5) = 'jobq_'
              AND pg_catalog.left(p.proname, 6) <> 'jobq__'
              AND NOT p.proname::text = ANY (
                  pg_catalog.current_setting('jobq.functions_before')::text[]
              )
        )
        SELECT g.* FROM (
            -- a function new in several of a role's levels: granted once, for the narrowest
            SELECT DISTINCT ON (r.grantee, a.name)
                'EXECUTE' AS privilege, 'FUNCTION' AS kind, a.name, r.grantee, r.level
            FROM roles AS r
            JOIN levels AS l ON l.level = r.level
            JOIN added AS a ON l.functions IS NULL OR a.name = ANY (l.functions)
            -- not one it got otherwise (a renamed function's grants, --! granted-as)
            WHERE NOT EXISTS (
                SELECT FROM pg_catalog.aclexplode(a.proacl) AS x
                WHERE x.grantee = r.grantee AND x.privilege_type = 'EXECUTE'
            )
            ORDER BY r.grantee, a.name, pg_catalog.array_position(
                ARRAY[{level_order}]::text[], r.level
            )
        ) AS g
        UNION ALL
        SELECT 'SELECT', 'TABLE', c.relname::text, r.grantee, r.level
        FROM roles AS r
        JOIN pg_catalog.pg_class AS c ON c.relname::text = ANY (ARRAY[{tables}]::text[])
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE r.level = 'admin'
          AND n.nspname = {schema_name}
          AND NOT EXISTS (
              SELECT FROM pg_catalog.aclexplode(c.relacl) AS a
              WHERE a.grantee = r.grantee AND a.privilege_type = 'SELECT'
          )
        ORDER BY 4, 2, 3
    LOOP
        CONTINUE WHEN NOT EXISTS (
            SELECT FROM pg_catalog.pg_roles AS o WHERE o.oid = v_grant.grantee
        );
        EXECUTE pg_catalog.format(
            'GRANT %s ON %s %I.%I TO %I', v_grant.privilege, v_grant.kind, {schema_name},
            v_grant.name, pg_catalog.pg_get_userbyid(v_grant.grantee)
        );
        RAISE NOTICE 'jobq migrate: granted % on % to % (it held the % level of schema %)',
            v_grant.privilege, v_grant.name,
            pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(v_grant.grantee)),
            v_grant.level, {schema_name};
    END LOOP;
END
$jobq$;
