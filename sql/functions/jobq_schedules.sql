-- jobq_schedules: lists the schedules with their next fire time, as an instant and as the
-- wall-clock time of the schedule's own time zone (what an operator compares with the cron).
-- last_fired_at and last_job_id: the latest fire a tick enqueued and its job, so that a
-- listing links a schedule to what it made.
--! levels: admin
--! replaces: jobq_schedules()

CREATE OR REPLACE FUNCTION jobq_schedules()
RETURNS TABLE (
    name text, cron text, timezone text, job_type text, payload jsonb, queue text,
    priority integer, max_attempts integer, catch_up text, paused boolean,
    next_run_at timestamptz, next_run_local timestamp, created_at timestamptz,
    updated_at timestamptz, last_fired_at timestamptz, last_job_id uuid
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT s.name, s.cron, s.timezone, s.job_type, s.payload, s.queue, s.priority,
           s.max_attempts, s.catch_up, s.paused, s.next_run_at,
           s.next_run_at AT TIME ZONE s.timezone, s.created_at, s.updated_at,
           s.last_fired_at, s.last_job_id
    FROM jobq_schedules AS s
    ORDER BY s.name
$$;

COMMENT ON FUNCTION jobq_schedules() IS
'Lists every schedule. A paused schedule fires nothing: its next_run_at is recomputed when it
is resumed.
Arguments: none.
Result: one row per schedule, by name: its definition (name, cron, timezone, job_type,
payload, queue, priority, max_attempts, catch_up), paused, next_run_at (the next fire, an
instant), next_run_local (the same as wall-clock time in the schedule''s timezone),
created_at, updated_at, last_fired_at and last_job_id (the latest fire a tick enqueued and
the id of its job; NULL before the first fire).
Errors: none.
Concurrency: a snapshot, as any query; it takes no lock.';

REVOKE EXECUTE ON FUNCTION jobq_schedules() FROM PUBLIC;
