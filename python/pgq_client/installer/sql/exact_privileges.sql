-- Default privileges (ALTER DEFAULT PRIVILEGES of the installing role) are added to every
-- object when it is created: a stranger could so get SELECT on jobq_jobs or EXECUTE on
-- jobq_configure. So every object created in this transaction (see note_existing.sql) gets its
-- owner's privileges only; the files then REVOKE from PUBLIC what PostgreSQL grants by
-- default, and `jobq grant` grants the levels. Objects that existed before keep their grants:
-- a new migration never takes back what `jobq grant` gave. Types keep PUBLIC's USAGE, without
-- which nobody could name them.
DO $jobq$
DECLARE
    v_existing text[] := pg_catalog.current_setting('jobq.existing_objects')::text[];
    v_object record;
    v_grantee oid;
BEGIN
    FOR v_object IN
        SELECT
            'class:' || c.oid AS key,
            CASE WHEN c.relkind = 'S' THEN 'SEQUENCE' ELSE 'TABLE' END AS kind,
            pg_catalog.format('%I.%I', n.nspname, c.relname) AS name,
            c.relowner AS owner, c.relacl AS acl
        FROM pg_catalog.pg_class AS c
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = {schema_name} AND c.relacl IS NOT NULL
        UNION ALL
        SELECT 'proc:' || p.oid, 'ROUTINE', p.oid::pg_catalog.regprocedure::text, p.proowner,
               p.proacl
        FROM pg_catalog.pg_proc AS p
        JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
        WHERE n.nspname = {schema_name} AND p.proacl IS NOT NULL
        UNION ALL
        SELECT 'type:' || t.oid, 'TYPE', pg_catalog.format('%I.%I', n.nspname, t.typname),
               t.typowner, t.typacl
        FROM pg_catalog.pg_type AS t
        JOIN pg_catalog.pg_namespace AS n ON n.oid = t.typnamespace
        WHERE n.nspname = {schema_name} AND t.typacl IS NOT NULL
        UNION ALL
        SELECT 'namespace:' || n.oid, 'SCHEMA', pg_catalog.quote_ident(n.nspname), n.nspowner,
               n.nspacl
        FROM pg_catalog.pg_namespace AS n
        WHERE n.nspname = {schema_name} AND n.nspacl IS NOT NULL
    LOOP
        CONTINUE WHEN v_object.key = ANY (v_existing);
        FOR v_grantee IN
            SELECT DISTINCT a.grantee FROM pg_catalog.aclexplode(v_object.acl) AS a
            WHERE a.grantee <> v_object.owner
              AND NOT (v_object.kind = 'TYPE' AND a.grantee = 0)
        LOOP
            EXECUTE pg_catalog.format(
                'REVOKE ALL ON %s %s FROM %s CASCADE', v_object.kind, v_object.name,
                CASE WHEN v_grantee = 0 THEN 'PUBLIC'
                     ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(v_grantee)) END
            );
        END LOOP;
        EXECUTE pg_catalog.format(
            'GRANT ALL ON %s %s TO %I', v_object.kind, v_object.name,
            pg_catalog.pg_get_userbyid(v_object.owner)
        );
    END LOOP;
END
$jobq$;
