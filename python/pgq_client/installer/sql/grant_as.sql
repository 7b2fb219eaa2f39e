-- After the privileges of new objects are set (exact_privileges.sql would take these back): a
-- function new in this schema gets the EXECUTE grants of the functions it is granted as.
DO $jobq$
DECLARE
    v_grant record;
BEGIN
    IF pg_catalog.current_setting({setting}, true) IS DISTINCT FROM 'true' THEN
        RETURN;  -- it existed: its grants are whatever jobq grant / revoke made them
    END IF;
    FOR v_grant IN
        SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS is_grantable
        FROM pg_catalog.pg_proc AS p
        CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
        WHERE p.pronamespace = pg_catalog.to_regnamespace(
                pg_catalog.quote_ident(pg_catalog.current_schema()))
          AND p.proname = ANY (ARRAY[{sources}]::text[])
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> 0  -- PUBLIC never
          AND a.grantee <> p.proowner
        GROUP BY a.grantee
    LOOP
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION %I.%I TO %I%s', pg_catalog.current_schema(), {name},
            pg_catalog.pg_get_userbyid(v_grant.grantee),
            CASE WHEN v_grant.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END
        );
    END LOOP;
END
$jobq$;
