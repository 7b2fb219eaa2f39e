-- jobq_schedule_run_now: an operator fires a schedule at once (the dashboard's Run now), as a
-- tick fires it: its job through jobq_enqueue, with the fire's idempotency key
-- (jobq:schedule:<name>:<fire time in UTC, ISO 8601>), and last_fired_at and last_job_id
-- naming this fire, so that the schedule links to the job it made last whoever fired it. The
-- fire time is now to the second (the key's precision): two runs within one second make one
-- job. next_run_at is left as it is: the cron's own fires still come. A paused schedule runs
-- too (the operator asks for this one fire).
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_schedule_run_now(name text) RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_row record;
    v_fire CONSTANT timestamptz := pg_catalog.date_trunc('second', pg_catalog.now());
    v_id uuid;
BEGIN
    IF jobq_schedule_run_now.name IS NULL THEN
        RAISE EXCEPTION 'jobq_schedule_run_now: name must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_schedule_run_now.name) > 200 THEN
        RAISE EXCEPTION 'jobq_schedule_run_now: name is % characters long, at most 200 are '
            'allowed', pg_catalog.length(jobq_schedule_run_now.name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The row lock orders this fire with a tick's (which skips the row meanwhile) and keeps
    -- last_fired_at from going back in time under two concurrent runs.
    SELECT s.job_type, s.payload, s.queue, s.priority, s.max_attempts, s.last_fired_at
    INTO v_row
    FROM jobq_schedules AS s
    WHERE s.name = jobq_schedule_run_now.name
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v_id := jobq__schedule_fire(
        jobq_schedule_run_now.name, v_row.job_type, v_row.payload, v_row.queue, v_row.priority,
        v_row.max_attempts, v_fire
    );
    UPDATE jobq_schedules AS s
    SET last_fired_at = v_fire, last_job_id = v_id
    WHERE s.name = jobq_schedule_run_now.name
      AND (s.last_fired_at IS NULL OR s.last_fired_at <= v_fire);
    RETURN v_id;
END;
$$;

COMMENT ON FUNCTION jobq_schedule_run_now(text) IS
'Admin only. Fires a schedule now, as jobq_tick fires it: enqueues its job (job type,
payload, queue, priority, max_attempts of the schedule) available now, with the idempotency
key jobq:schedule:<name>:<now in UTC to the second, ISO 8601>, and records the fire as the
schedule''s last_fired_at and last_job_id. next_run_at is unchanged; a paused schedule runs
too.
Arguments: name (the schedule''s name, at most 200 characters).
Result: the job''s id (an existing job''s when a fire of this second was already enqueued);
NULL when there is no such schedule (nothing changes then).
Errors: 22023 NULL name, or one longer than 200 characters; those of jobq_enqueue (54000 a
payload over max_payload_bytes).
Concurrency: locks the schedule''s row (a tick skips it meanwhile); two runs within one second
enqueue one job.';

REVOKE EXECUTE ON FUNCTION jobq_schedule_run_now(text) FROM PUBLIC;
