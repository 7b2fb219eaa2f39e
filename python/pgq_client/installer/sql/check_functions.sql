-- After the files: each left exactly one function of its name (jobq has no overloads), and a
-- function that replaced older signatures gets the EXECUTE grants they had.
DO $jobq$
DECLARE
    v_name text;
    v_count integer;
    v_new regprocedure;
    v_acl aclitem[];
    v_grant record;
BEGIN
    FOREACH v_name IN ARRAY ARRAY[{names}]::text[] LOOP
        SELECT pg_catalog.count(*)::integer, pg_catalog.min(p.oid)::regprocedure
        INTO v_count, v_new
        FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace = pg_catalog.to_regnamespace(
                pg_catalog.quote_ident(pg_catalog.current_schema()))
          AND p.proname = v_name;
        IF v_count = 0 THEN
            RAISE EXCEPTION 'jobq migrate: function file %.sql defines no function %',
                v_name, v_name
                USING ERRCODE = 'invalid_function_definition';
        ELSIF v_count > 1 THEN
            RAISE EXCEPTION 'jobq migrate: schema % has % functions named % after %.sql',
                pg_catalog.current_schema(), v_count, v_name, v_name
                USING ERRCODE = 'invalid_function_definition',
                      HINT = 'jobq has no overloads: name the older signature in a '
                          || '"--! replaces:" line of the file, so that it is dropped first.';
        END IF;
        v_acl := nullif(nullif(
            pg_catalog.current_setting('jobq.replaced_acl_' || v_name, true), ''
        ), '{{}}')::aclitem[];
        CONTINUE WHEN v_acl IS NULL;
        -- In the order of the old ACL, so that the new function's ACL reads as the old one did.
        FOR v_grant IN
            SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS is_grantable
            FROM pg_catalog.aclexplode(v_acl) WITH ORDINALITY AS a
            WHERE a.privilege_type = 'EXECUTE'
              AND a.grantee <> 0  -- PUBLIC: the file revokes it on purpose
              AND a.grantee <> (SELECT p.proowner FROM pg_catalog.pg_proc AS p
                                WHERE p.oid = v_new)
            GROUP BY a.grantee
            ORDER BY pg_catalog.min(a.ordinality)
        LOOP
            EXECUTE pg_catalog.format(
                'GRANT EXECUTE ON FUNCTION %s TO %I%s', v_new,
                pg_catalog.pg_get_userbyid(v_grant.grantee),
                CASE WHEN v_grant.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END
            );
        END LOOP;
    END LOOP;
END
$jobq$;
