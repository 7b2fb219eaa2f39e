-- 0007_jobq_dependencies.sql — jobs that wait for other jobs (docs/workflows.md). A job with
-- dependencies is enqueued `waiting` and becomes `pending` in the transaction that makes its
-- last dependency succeed. The edges live in a table of their own; jobq_jobs gains two columns
-- that let a finishing job find its dependents with one index probe, and that let a job
-- without dependents skip that probe altogether.

ALTER TABLE jobq_jobs
ADD COLUMN waiting_on integer NOT NULL DEFAULT 0,
ADD COLUMN has_dependents boolean NOT NULL DEFAULT FALSE,
ADD CONSTRAINT jobq_jobs_waiting_check CHECK (status <> 'waiting' OR waiting_on > 0);

COMMENT ON COLUMN jobq_jobs.waiting_on IS
'How many of the job''s dependencies still hold it back: those that have not succeeded (for
on_dependency_failure run: not finished). The finishing transaction of a dependency
decrements it under the job''s row lock; the one that brings it to 0 makes the job pending,
so concurrent dependencies release it exactly once. 0 for a job without dependencies.';
COMMENT ON COLUMN jobq_jobs.has_dependents IS
'Whether another job depends on this one (set under this row''s lock when a dependent is
enqueued or grafted). The statements that finish a job read it with the row they finish: a
job without dependents costs no look-up of jobq_job_dependencies.';
COMMENT ON CONSTRAINT jobq_jobs_waiting_check ON jobq_jobs IS
'A waiting job has a dependency that holds it back; a job with none left is pending.';

-- The history has the columns of jobq_jobs, so that jobq_all_jobs keeps their row type.
ALTER TABLE jobq_jobs_history
ADD COLUMN waiting_on integer NOT NULL DEFAULT 0,
ADD COLUMN has_dependents boolean NOT NULL DEFAULT FALSE;

COMMENT ON COLUMN jobq_jobs_history.waiting_on IS
'As in jobq_jobs (0: a finished job waits for nothing).';
COMMENT ON COLUMN jobq_jobs_history.has_dependents IS
'As in jobq_jobs (FALSE here: jobq__requeue marks a requeued job that has dependents again).';

CREATE OR REPLACE VIEW jobq_all_jobs AS
SELECT
    j.id,
    j.queue,
    j.job_type,
    j.payload,
    j.idempotency_key,
    j.status,
    j.priority,
    j.attempts,
    j.max_attempts,
    j.available_at,
    j.locked_at,
    j.locked_by,
    j.last_error,
    j.errors,
    j.created_at,
    j.updated_at,
    j.finished_at,
    j.scheduled,
    j.result,
    j.cancel_requested_at,
    j.cancel_reason,
    j.limit_group,
    j.limit_key,
    j.claimed_at,
    j.locked_until,
    j.waiting_on,
    j.has_dependents
FROM jobq_jobs AS j
UNION ALL
SELECT
    h.id,
    h.queue,
    h.job_type,
    h.payload,
    h.idempotency_key,
    h.status,
    h.priority,
    h.attempts,
    h.max_attempts,
    h.available_at,
    h.locked_at,
    h.locked_by,
    h.last_error,
    h.errors,
    h.created_at,
    h.updated_at,
    h.finished_at,
    h.scheduled,
    h.result,
    h.cancel_requested_at,
    h.cancel_reason,
    h.limit_group,
    h.limit_key,
    h.claimed_at,
    h.locked_until,
    h.waiting_on,
    h.has_dependents
FROM jobq_jobs_history AS h;

CREATE TABLE jobq_job_dependencies (
    job_id uuid NOT NULL,
    depends_on uuid NOT NULL,
    on_failure text NOT NULL DEFAULT 'cancel',
    CONSTRAINT jobq_job_dependencies_pkey PRIMARY KEY (job_id, depends_on),
    CONSTRAINT jobq_job_dependencies_self_check CHECK (job_id <> depends_on),
    CONSTRAINT jobq_job_dependencies_on_failure_check CHECK (
        on_failure IN ('cancel', 'run', 'wait')
    )
);

COMMENT ON TABLE jobq_job_dependencies IS
'The dependencies between jobs, one row per edge: job_id runs only after depends_on (its
parent). Written by jobq_enqueue, jobq_enqueue_many and jobq_add_dependencies; read when a
parent finishes (through jobq_job_dependencies_depends_on_idx), by jobq_dependencies and by
jobq_job_graph. No foreign keys: a job moves between jobq_jobs and its history.';
COMMENT ON COLUMN jobq_job_dependencies.job_id IS 'The dependent job.';
COMMENT ON COLUMN jobq_job_dependencies.depends_on IS 'The job it waits for.';
COMMENT ON COLUMN jobq_job_dependencies.on_failure IS
'The dependent''s on_dependency_failure: cancel (it is cancelled when this parent ends failed,
dead_letter or cancelled), run (it runs once every parent has finished, whatever the outcome)
or wait (it keeps waiting until this parent, requeued, succeeds).';
COMMENT ON CONSTRAINT jobq_job_dependencies_pkey ON jobq_job_dependencies IS
'An edge is recorded once; a job''s parents are a range of this index.';
COMMENT ON INDEX jobq_job_dependencies_pkey IS 'The index of jobq_job_dependencies_pkey.';
COMMENT ON CONSTRAINT jobq_job_dependencies_self_check ON jobq_job_dependencies IS
'A job never waits for itself (the functions refuse any cycle before it is written).';
COMMENT ON CONSTRAINT jobq_job_dependencies_on_failure_check ON jobq_job_dependencies IS
'The three rules of on_dependency_failure.';

CREATE INDEX jobq_job_dependencies_depends_on_idx ON jobq_job_dependencies (depends_on);

COMMENT ON INDEX jobq_job_dependencies_depends_on_idx IS
'A job''s dependents: one probe when a job that has dependents finishes or is requeued.';

-- The waiting jobs, for a dashboard's list of them; a job that is not waiting has no entry, so
-- enqueues, claims and completions of jobs without dependencies never write to it.
CREATE INDEX jobq_jobs_waiting_idx ON jobq_jobs (created_at, id) WHERE status = 'waiting';

COMMENT ON INDEX jobq_jobs_waiting_idx IS
'The waiting jobs, oldest first: jobq_jobs_page(''waiting'') reads them through it.';

REVOKE ALL ON TABLE jobq_job_dependencies FROM PUBLIC;
