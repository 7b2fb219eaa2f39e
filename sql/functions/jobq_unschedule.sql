-- jobq_unschedule: deletes a schedule. Jobs its fires already enqueued stay (they are jobs
-- like any other); a tick holding the row makes this call wait for it.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_unschedule(name text) RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF jobq_unschedule.name IS NULL THEN
        RAISE EXCEPTION 'jobq_unschedule: name must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_unschedule.name) > 200 THEN
        RAISE EXCEPTION 'jobq_unschedule: name is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_unschedule.name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM jobq_schedules AS s WHERE s.name = jobq_unschedule.name;
    RETURN FOUND;
END;
$$;

COMMENT ON FUNCTION jobq_unschedule(text) IS
'Deletes a schedule. Jobs already enqueued by its fires are kept (they are jobs like any
other).
Arguments: name (the schedule''s name, at most 200 characters).
Result: whether it existed (false: nothing changed).
Errors: 22023 NULL name, or one longer than 200 characters.
Concurrency: waits for a tick that holds the schedule.';

REVOKE EXECUTE ON FUNCTION jobq_unschedule(text) FROM PUBLIC;
