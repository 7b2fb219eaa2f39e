-- Before a file that names older signatures: drop those that exist and keep their ACL, which
-- check_functions.sql gives to the new function.
DO $jobq$
DECLARE
    v_signature text;
    v_old regprocedure;
    v_acl aclitem[] := '{{}}';
BEGIN
    FOREACH v_signature IN ARRAY ARRAY[{signatures}]::text[] LOOP
        v_old := pg_catalog.to_regprocedure(
            pg_catalog.format('%I.%s', pg_catalog.current_schema(), v_signature)
        );
        CONTINUE WHEN v_old IS NULL;
        v_acl := v_acl || coalesce(
            (SELECT p.proacl FROM pg_catalog.pg_proc AS p WHERE p.oid = v_old), '{{}}'
        );
        EXECUTE pg_catalog.format('DROP FUNCTION %s', v_old);
    END LOOP;
    PERFORM pg_catalog.set_config({setting}, v_acl::text, true);
END
$jobq$;
