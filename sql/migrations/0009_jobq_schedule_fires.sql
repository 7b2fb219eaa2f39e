-- 0009_jobq_schedule_fires.sql — each schedule keeps its latest fire and the job that fire
-- enqueued, written by the tick that fires it (jobq__tick, in the same subtransaction as the
-- advance of next_run_at), so that `jobq schedule list` and the dashboard link a schedule to
-- the job it made last. One row per schedule: the older fires' jobs are found by their
-- idempotency key (jobq:schedule:<name>:<fire time>), so no table of fires grows with time.
-- Both columns are NULL until the first fire; an existing install gets them NULL.

ALTER TABLE jobq_schedules
ADD COLUMN last_fired_at timestamptz,
ADD COLUMN last_job_id uuid;

COMMENT ON COLUMN jobq_schedules.last_fired_at IS
'The fire time of the latest fire a tick enqueued (its job''s run_at); NULL before the first.
Written by jobq_tick with next_run_at.';
COMMENT ON COLUMN jobq_schedules.last_job_id IS
'The id of the job that fire enqueued (or the job an earlier tick enqueued for the same fire,
which the idempotency key returns); NULL before the first fire. The job may since have been
pruned.';
