-- jobq__schedule_fire (private): one fire of a schedule, enqueued. jobq_tick (jobq__tick) and
-- jobq_schedule_run_now both fire through it, so that a fire's job and its idempotency key
-- (jobq:schedule:<name>:<the fire in UTC to the second, ISO 8601>) are the same whoever fires:
-- a run now and a tick that fire the same schedule in the same second enqueue one job. The
-- job is available at the fire's time, with the schedule's job type, payload, queue, priority
-- and max_attempts, without limits or dependencies. No SET clause: it runs inside its
-- callers, with their search_path (plpgsql: jobq_enqueue, installed after it, is resolved at
-- the first call).

CREATE OR REPLACE FUNCTION jobq__schedule_fire(
    name text,
    job_type text,
    payload jsonb,
    queue text,
    priority integer,
    max_attempts integer,
    fire_at timestamptz
) RETURNS uuid
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    RETURN jobq_enqueue(
        job_type => jobq__schedule_fire.job_type,
        payload => jobq__schedule_fire.payload,
        idempotency_key => pg_catalog.concat(
            'jobq:schedule:', jobq__schedule_fire.name, ':',
            pg_catalog.to_char(
                jobq__schedule_fire.fire_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'
            )
        ),
        max_attempts => jobq__schedule_fire.max_attempts,
        run_at => jobq__schedule_fire.fire_at,
        priority => jobq__schedule_fire.priority,
        queue => jobq__schedule_fire.queue,
        limit_group => NULL::text,
        limit_key => NULL::text,
        depends_on => NULL::uuid[],
        on_dependency_failure => 'cancel'::text
    );
END;
$$;

COMMENT ON FUNCTION jobq__schedule_fire(text, text, jsonb, text, integer, integer, timestamptz) IS
'Private. Enqueues one fire of the schedule name (its job type, payload, queue, priority and
max_attempts), available at fire_at, with the idempotency key
jobq:schedule:<name>:<fire_at in UTC to the second, ISO 8601>; returns the job''s id (the
existing job''s when that fire was already enqueued). Used by jobq__tick and
jobq_schedule_run_now.';

REVOKE EXECUTE ON FUNCTION jobq__schedule_fire(
    text, text, jsonb, text, integer, integer, timestamptz
) FROM PUBLIC;
