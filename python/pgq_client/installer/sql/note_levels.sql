-- A role granted a level before an upgrade keeps it for the functions the upgrade adds (a
-- worker role without jobq_release_orphans would leave a lost claim's jobs stranded). So at
-- the start of the transaction: the public functions installed, and the roles that hold every
-- one of a level among them, by EXECUTE granted to the role itself (what `jobq grant` gives;
-- a member of a granted group inherits from the group). Each row of the levels lists a level
-- with its functions; admin's NULL is every public one. grant_levels.sql uses both at the end.
SELECT
    pg_catalog.set_config(
        'jobq.functions_before',
        coalesce(pg_catalog.array_agg(p.proname::text)::text, '{{}}'),
        TRUE
    )
FROM pg_catalog.pg_proc AS p
INNER JOIN pg_catalog.pg_namespace AS n ON p.pronamespace = n.oid
WHERE
    n.nspname = {schema_name}
    AND p.prokind = 'f'
    AND pg_catalog.left(p.proname, 5) = 'jobq_'
    AND pg_catalog.left(p.proname, 6) != 'jobq__';

WITH levels (level, functions) AS (
    VALUES {levels}
),

level_functions AS (
    SELECT
        l.level,
        p.proname,
        p.proacl,
        p.proowner
    FROM levels AS l
    INNER JOIN pg_catalog.pg_proc AS p
        ON l.functions IS NULL OR p.proname::text = any(l.functions)
    INNER JOIN pg_catalog.pg_namespace AS n ON p.pronamespace = n.oid
    WHERE
        n.nspname = {schema_name}
        AND p.prokind = 'f'
        AND pg_catalog.left(p.proname, 5) = 'jobq_'
        AND pg_catalog.left(p.proname, 6) != 'jobq__'
),

held AS (
    SELECT
        f.level,
        a.grantee,
        pg_catalog.count(DISTINCT f.proname) AS function_count
    FROM level_functions AS f
    CROSS JOIN LATERAL pg_catalog.aclexplode(f.proacl) AS a
    WHERE a.privilege_type = 'EXECUTE' AND a.grantee != 0 AND a.grantee != f.proowner
    GROUP BY f.level, a.grantee
)

SELECT
    pg_catalog.set_config(
        'jobq.level_roles',
        coalesce(pg_catalog.array_agg(h.level || ':' || h.grantee::text)::text, '{{}}'),
        TRUE
    )
FROM held AS h
WHERE h.function_count = (
    SELECT pg_catalog.count(*) FROM level_functions AS f
    WHERE f.level = h.level
);
