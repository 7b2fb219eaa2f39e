-- jobq_configure (admin): changes the settings of this installation and returns them all.
-- Settings live in this schema's jobq_settings (one row), so each tenant schema has its own,
-- and a producer, who may only call jobq_enqueue and jobq_enqueue_many, cannot change them.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_configure(max_payload_bytes integer DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_settings jsonb;
    v_max_payload_bytes integer;
BEGIN
    IF jobq_configure.max_payload_bytes IS NOT NULL AND jobq_configure.max_payload_bytes < 1 THEN
        RAISE EXCEPTION 'jobq_configure: max_payload_bytes must be at least 1, got %',
            jobq_configure.max_payload_bytes
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The settings are returned as columns and made into jsonb here: Citus refuses a STABLE
    -- function (jsonb_build_object) in RETURNING.
    UPDATE jobq_settings AS s
    SET max_payload_bytes = coalesce(jobq_configure.max_payload_bytes, s.max_payload_bytes)
    RETURNING s.max_payload_bytes
    INTO v_max_payload_bytes;
    v_settings := pg_catalog.jsonb_build_object('max_payload_bytes', v_max_payload_bytes);
    RETURN v_settings;
END;
$$;

COMMENT ON FUNCTION jobq_configure(integer) IS
'Admin only. Changes the settings of this installation and returns them all. Settings
live in this schema''s jobq_settings, so each tenant schema has its own.
Arguments: max_payload_bytes (the largest payload jobq_enqueue and jobq_enqueue_many accept,
in bytes of jsonb; default 1048576; NULL leaves it as it is).
Result: every setting, as a JSON object ({"max_payload_bytes": n}).
Errors: 22023 max_payload_bytes < 1.';

REVOKE EXECUTE ON FUNCTION jobq_configure(integer) FROM PUBLIC;
