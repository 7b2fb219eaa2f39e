-- 0002_jobq_schedules.sql — periodic jobs: the table jobq_schedules, one row per schedule.
--
-- A schedule is a row, managed through jobq_schedule / jobq_unschedule and fired by jobq_tick
-- (sql/functions/). Any number of sessions may tick at once: a tick locks the due rows with
-- FOR UPDATE SKIP LOCKED, and each fire's job carries an idempotency key made of the schedule's
-- name and the fire time, so a fire is enqueued once whoever ticks. next_run_at is the next
-- fire time (an instant); a tick with nothing due is one look-up in jobq_schedules_due_idx.

CREATE TABLE jobq_schedules (
    name text NOT NULL,  -- noqa: RF04
    cron text NOT NULL,
    timezone text NOT NULL DEFAULT 'UTC',
    job_type text NOT NULL,
    payload jsonb NOT NULL DEFAULT '{}',
    queue text NOT NULL DEFAULT 'default',
    priority integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL DEFAULT 5,
    catch_up text NOT NULL DEFAULT 'latest',
    paused boolean NOT NULL DEFAULT FALSE,
    next_run_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT jobq_schedules_pkey PRIMARY KEY (name),
    CONSTRAINT jobq_schedules_catch_up_check CHECK (catch_up IN ('skip', 'latest', 'all')),
    CONSTRAINT jobq_schedules_max_attempts_check CHECK (max_attempts >= 1)
);

COMMENT ON TABLE jobq_schedules IS
'jobq periodic jobs (cron schedules), one row per name. Change it only through jobq_schedule()
and jobq_unschedule(); jobq_tick() fires the due ones.';
COMMENT ON COLUMN jobq_schedules.name IS
'The schedule''s name (1-200 characters), unique; part of each fire''s idempotency key.';
COMMENT ON COLUMN jobq_schedules.cron IS
'Five-field cron expression (minute hour day-of-month month day-of-week) or an @ shortcut
(@hourly, @daily, @weekly, @monthly, @yearly), as given.';
COMMENT ON COLUMN jobq_schedules.timezone IS
'IANA time zone in which the cron fields are wall-clock times.';
COMMENT ON COLUMN jobq_schedules.job_type IS 'job_type of each job a fire enqueues.';
COMMENT ON COLUMN jobq_schedules.payload IS 'payload of each job a fire enqueues.';
COMMENT ON COLUMN jobq_schedules.queue IS 'queue of each job a fire enqueues.';
COMMENT ON COLUMN jobq_schedules.priority IS 'priority of each job a fire enqueues.';
COMMENT ON COLUMN jobq_schedules.max_attempts IS 'max_attempts of each job a fire enqueues.';
COMMENT ON COLUMN jobq_schedules.catch_up IS
'What a tick does with fires that nobody ticked in time: skip (none of them), latest (the most
recent only), all (each of them, the 1,000 most recent at most).';
COMMENT ON COLUMN jobq_schedules.paused IS
'A paused schedule fires nothing; resuming it starts from the next fire after the resume.';
COMMENT ON COLUMN jobq_schedules.next_run_at IS
'The next fire time (an instant). A tick fires the schedule once this has come.';
COMMENT ON COLUMN jobq_schedules.created_at IS 'When the schedule was first created.';
COMMENT ON COLUMN jobq_schedules.updated_at IS 'When jobq_schedule() last changed its definition.';
COMMENT ON CONSTRAINT jobq_schedules_catch_up_check ON jobq_schedules IS
'The catch-up policies: skip, latest, all.';

-- The due schedules, exactly what a tick looks for: active rows by next fire time.
CREATE INDEX jobq_schedules_due_idx ON jobq_schedules (next_run_at) WHERE NOT paused;

COMMENT ON INDEX jobq_schedules_due_idx IS
'Due schedules for jobq_tick: a tick with nothing due reads one entry of this index.';

REVOKE ALL ON TABLE jobq_schedules FROM PUBLIC;
