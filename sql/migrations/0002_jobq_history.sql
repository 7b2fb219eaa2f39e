-- 0002_jobq_history.sql — finished jobs leave jobq_jobs for jobq_jobs_history, a table
-- partitioned by status and then by finished_at, so that retention drops whole partitions.
--
-- jobq_jobs keeps the live jobs (pending, processing): the statements that finish a job move
-- its row in the same transaction (DELETE from jobq_jobs, INSERT into the history; never an
-- UPDATE of a partition key), and a requeue moves it back. jobq_all_jobs shows both.
-- docs/retention.md says what a DBA sees; docs/decisions/0008-finished-jobs-history.md why.

-- Retention -----------------------------------------------------------------------------------
-- One row per finished status: how long its jobs are kept and how many days one partition of
-- that status spans. Changed through jobq_set_retention (admin); read by
-- jobq_maintain_history, which makes partitions ahead and drops the expired ones.

CREATE TABLE jobq_retention (
    status text NOT NULL,
    keep interval,
    partition_days integer NOT NULL,
    CONSTRAINT jobq_retention_pkey PRIMARY KEY (status),
    CONSTRAINT jobq_retention_status_check CHECK (
        status IN ('succeeded', 'failed', 'dead_letter', 'cancelled')
    ),
    CONSTRAINT jobq_retention_keep_check CHECK (keep > interval '0'),
    CONSTRAINT jobq_retention_partition_days_check CHECK (partition_days BETWEEN 1 AND 31)
);

COMMENT ON TABLE jobq_retention IS
'How long finished jobs are kept, per status: jobq_maintain_history (run by jobq_tick) drops
each partition of jobq_jobs_history whose every row finished more than keep ago. Changed only
through jobq_set_retention() (admin).';
COMMENT ON COLUMN jobq_retention.status IS 'A finished status.';
COMMENT ON COLUMN jobq_retention.keep IS
'How long jobs of this status are kept after finished_at; NULL: until jobq_prune deletes them
or they are requeued. A partition is dropped once its upper bound is older than keep, so a job
stays up to partition_days longer than keep.';
COMMENT ON COLUMN jobq_retention.partition_days IS
'The days of finished_at one partition of this status spans (1-31): the granularity of
retention. New partitions take it; existing ones keep their bounds.';
COMMENT ON CONSTRAINT jobq_retention_pkey ON jobq_retention IS 'One row per finished status.';
COMMENT ON INDEX jobq_retention_pkey IS 'The index of jobq_retention_pkey.';
COMMENT ON CONSTRAINT jobq_retention_status_check ON jobq_retention IS
'Only finished statuses have a retention: live jobs are never in the history.';
COMMENT ON CONSTRAINT jobq_retention_keep_check ON jobq_retention IS
'A retention is positive (NULL: kept until pruned).';
COMMENT ON CONSTRAINT jobq_retention_partition_days_check ON jobq_retention IS
'A partition spans 1 to 31 days.';

-- Succeeded jobs are kept 7 days (jobq_prune's default age); failed, dead_letter and cancelled
-- jobs stay until requeued or pruned, as before, in weekly partitions.
INSERT INTO jobq_retention (status, keep, partition_days) VALUES
('succeeded', interval '7 days', 1),
('failed', NULL, 7),
('dead_letter', NULL, 7),
('cancelled', NULL, 7);

REVOKE ALL ON TABLE jobq_retention FROM PUBLIC;

-- History -------------------------------------------------------------------------------------
-- The columns of jobq_jobs, in its order. Two levels: a list partition per finished status
-- (jobq__history_<status>, which a status's retention acts on), each a range partition by
-- finished_at (jobq__history_<status>_<first day, YYYYMMDD>) with a DEFAULT partition for a
-- finished_at no partition covers (jobq_maintain_history moves such rows out when it makes
-- the partition of their days). There is no DEFAULT at the top: a live status cannot be
-- stored here. Partitions are private (jobq__ names): they are reached through the parent,
-- whose privileges apply.

CREATE TABLE jobq_jobs_history (
    id uuid NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text,
    status text NOT NULL,
    priority integer NOT NULL,
    attempts integer NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamptz NOT NULL,
    locked_at timestamptz,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    scheduled boolean NOT NULL,
    result jsonb,
    cancel_requested_at timestamptz,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamptz
) PARTITION BY LIST (status);

COMMENT ON TABLE jobq_jobs_history IS
'jobq finished jobs (succeeded, failed, dead_letter, cancelled), moved here from jobq_jobs by
the statement that finished them; the columns of jobq_jobs. Partitioned by status, then by
finished_at (partitions jobq__history_<status>_<YYYYMMDD>, made ahead and dropped by
jobq_maintain_history per jobq_retention). Change it only through the jobq_* functions.';
COMMENT ON COLUMN jobq_jobs_history.id IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.queue IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.job_type IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.payload IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.idempotency_key IS
'As in jobq_jobs: a key stays taken while its job is here (jobq_enqueue looks here too).';
COMMENT ON COLUMN jobq_jobs_history.status IS
'A finished status: the key of the first level of partitions.';
COMMENT ON COLUMN jobq_jobs_history.priority IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.attempts IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.max_attempts IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.available_at IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.locked_at IS
'As in jobq_jobs (NULL: finished jobs hold no claim).';
COMMENT ON COLUMN jobq_jobs_history.locked_by IS
'As in jobq_jobs (NULL: finished jobs hold no claim).';
COMMENT ON COLUMN jobq_jobs_history.last_error IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.errors IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.created_at IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.updated_at IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.finished_at IS
'When the job finished: the key of the second level of partitions, which retention drops.';
COMMENT ON COLUMN jobq_jobs_history.scheduled IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.result IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.cancel_requested_at IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.cancel_reason IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.limit_group IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.limit_key IS 'As in jobq_jobs.';
COMMENT ON COLUMN jobq_jobs_history.claimed_at IS 'As in jobq_jobs.';

-- No primary key: a unique index of a partitioned table must contain the partition key. An id
-- is unique across jobq_jobs and the history because a row only ever moves (DELETE and INSERT
-- of the same id in one statement).
CREATE INDEX jobq_jobs_history_id_idx ON jobq_jobs_history (id);

COMMENT ON INDEX jobq_jobs_history_id_idx IS
'A finished job by id: jobq_job_status, jobq_await, jobq_get_job and the requeue find it.';

CREATE INDEX jobq_jobs_history_finished_idx ON jobq_jobs_history (finished_at, id);

COMMENT ON INDEX jobq_jobs_history_finished_idx IS
'Finished jobs by finished_at: jobq_prune and the listings of finished jobs (newest first).';

CREATE INDEX jobq_jobs_history_idempotency_key_idx ON jobq_jobs_history (job_type, idempotency_key)
WHERE idempotency_key IS NOT NULL;

COMMENT ON INDEX jobq_jobs_history_idempotency_key_idx IS
'Keys of finished jobs: jobq_enqueue returns such a job''s id. Not unique (a partitioned
index cannot be without finished_at); the enqueue protocol keeps a key on one job. Partial:
jobs without a key cost no entry.';

REVOKE ALL ON TABLE jobq_jobs_history FROM PUBLIC;

-- The partitions of each status, those that hold the finished jobs already there and today's
-- and the next two days' (what jobq_maintain_history makes ahead), then the rows themselves.
-- An install older than its partitions keeps its earlier jobs in one partition per status,
-- from the first day to today's period, dropped when its newest job has expired.
DO $do$
DECLARE
    v_status text;
    v_days integer;
    v_today date := (pg_catalog.now() AT TIME ZONE 'UTC')::date;
    v_start date;
    v_end date;
    v_first date;
    v_parent text;
BEGIN
    FOR v_status, v_days IN SELECT r.status, r.partition_days FROM jobq_retention AS r LOOP
        v_parent := 'jobq__history_' || v_status;
        EXECUTE pg_catalog.format(
            'CREATE TABLE %I PARTITION OF jobq_jobs_history FOR VALUES IN (%L) '
            'PARTITION BY RANGE (finished_at)', v_parent, v_status
        );
        EXECUTE pg_catalog.format(
            'CREATE TABLE %I PARTITION OF %I DEFAULT', v_parent || '_default', v_parent
        );
        v_start := DATE '1970-01-01'
            + ((v_today - DATE '1970-01-01') / v_days) * v_days;
        SELECT (pg_catalog.min(j.finished_at) AT TIME ZONE 'UTC')::date INTO v_first
        FROM jobq_jobs AS j WHERE j.status = v_status;
        IF v_first < v_start THEN
            EXECUTE pg_catalog.format(
                'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                v_parent || '_' || pg_catalog.to_char(v_first, 'YYYYMMDD'), v_parent,
                v_first::timestamp AT TIME ZONE 'UTC', v_start::timestamp AT TIME ZONE 'UTC'
            );
        END IF;
        WHILE v_start <= v_today + 2 LOOP
            v_end := v_start + v_days;
            EXECUTE pg_catalog.format(
                'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                v_parent || '_' || pg_catalog.to_char(v_start, 'YYYYMMDD'), v_parent,
                v_start::timestamp AT TIME ZONE 'UTC', v_end::timestamp AT TIME ZONE 'UTC'
            );
            v_start := v_end;
        END LOOP;
    END LOOP;
END;
$do$;

WITH moved AS (
    DELETE FROM jobq_jobs AS j
    WHERE j.finished_at IS NOT NULL
    RETURNING
        j.id, j.queue, j.job_type, j.payload, j.idempotency_key, j.status, j.priority,
        j.attempts, j.max_attempts, j.available_at, j.locked_at, j.locked_by, j.last_error,
        j.errors, j.created_at, j.updated_at, j.finished_at, j.scheduled, j.result,
        j.cancel_requested_at, j.cancel_reason, j.limit_group, j.limit_key, j.claimed_at
)

INSERT INTO jobq_jobs_history (
    id, queue, job_type, payload, idempotency_key, status, priority, attempts, max_attempts,
    available_at, locked_at, locked_by, last_error, errors, created_at, updated_at,
    finished_at, scheduled, result, cancel_requested_at, cancel_reason, limit_group,
    limit_key, claimed_at
)
SELECT
    m.id,
    m.queue,
    m.job_type,
    m.payload,
    m.idempotency_key,
    m.status,
    m.priority,
    m.attempts,
    m.max_attempts,
    m.available_at,
    m.locked_at,
    m.locked_by,
    m.last_error,
    m.errors,
    m.created_at,
    m.updated_at,
    m.finished_at,
    m.scheduled,
    m.result,
    m.cancel_requested_at,
    m.cancel_reason,
    m.limit_group,
    m.limit_key,
    m.claimed_at
FROM moved AS m;

-- A row of jobq_jobs that a statement makes finished moves to the history at the end of that
-- statement: the trigger's body is jobq__retire_row (sql/functions/jobq__retire_row.sql), whose
-- placeholder below is created only where the function is missing and replaced by its file
-- in the same `jobq migrate`. The WHEN clause keeps every other write from queuing an event.
DO $do$
BEGIN
    IF pg_catalog.to_regprocedure('jobq__retire_row()') IS NULL THEN
        CREATE FUNCTION jobq__retire_row() RETURNS trigger
        LANGUAGE plpgsql
        AS $f$
        BEGIN
            RETURN NULL;
        END;
        $f$;
    END IF;
END;
$do$;

REVOKE EXECUTE ON FUNCTION jobq__retire_row() FROM PUBLIC;

CREATE TRIGGER jobq_jobs_retire
AFTER INSERT OR UPDATE ON jobq_jobs
FOR EACH ROW WHEN (new.finished_at IS NOT NULL)
EXECUTE FUNCTION jobq__retire_row();

COMMENT ON TRIGGER jobq_jobs_retire ON jobq_jobs IS
'Moves a job that a statement finished (failure, cancel, release, takeover, or any other write)
to jobq_jobs_history at the end of that statement (jobq__retire_row): jobq_jobs holds live jobs
only.';

-- The status CHECKs of jobq_jobs call jobq__statuses(), which is granted to nobody. Planning
-- a query of jobq_all_jobs that has a condition tries to leave out its UNION ALL branches by
-- their tables' CHECK constraints, which evaluates that function as the querying role: an
-- admin's SELECT ... FROM jobq_all_jobs WHERE ... would fail with 42501. Made NOT VALID, the
-- constraints are still enforced on every write, and the planner never reads them; every row
-- was checked by the same constraints until now. (sqlfluff reads `ANY(` as a function name.)
ALTER TABLE jobq_jobs
DROP CONSTRAINT jobq_jobs_status_check,
DROP CONSTRAINT jobq_jobs_finished_check,
ADD CONSTRAINT jobq_jobs_status_check CHECK (
    status = ANY(jobq__statuses())  -- noqa: CP03
) NOT VALID,
ADD CONSTRAINT jobq_jobs_finished_check CHECK (
    (status = ANY(jobq__statuses(finished => TRUE))) = (finished_at IS NOT NULL)  -- noqa: CP03
) NOT VALID;

COMMENT ON CONSTRAINT jobq_jobs_status_check ON jobq_jobs IS
'status is one of jobq__statuses(). Text with a CHECK rather than an enum, whose values could
never be dropped. NOT VALID: enforced on every write, never read by the planner (which would
call jobq__statuses as the role that queries jobq_all_jobs).';
COMMENT ON CONSTRAINT jobq_jobs_finished_check ON jobq_jobs IS
'finished_at is set exactly for the finished statuses, jobq__statuses(finished => true). NOT
VALID, as jobq_jobs_status_check.';

-- Every job ------------------------------------------------------------------------------------

CREATE VIEW jobq_all_jobs AS
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
    j.claimed_at
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
    h.claimed_at
FROM jobq_jobs_history AS h;

COMMENT ON VIEW jobq_all_jobs IS
'Every job, live (jobq_jobs) or finished (jobq_jobs_history), with the columns of jobq_jobs.
A job is in exactly one of the two at any snapshot: a row moves by a DELETE and an INSERT in
one transaction. A filter on status reaches only the table (and partitions) that can hold it.';

REVOKE ALL ON TABLE jobq_all_jobs FROM PUBLIC;
