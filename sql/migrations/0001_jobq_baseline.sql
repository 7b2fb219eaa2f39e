-- 0001_jobq_baseline.sql — the jobq schema of release 0.1.0: every table, index, constraint,
-- type and setting, each with its COMMENT beside it.
--
-- `jobq migrate` runs this file in one transaction with `search_path` set to the target schema
-- (then pg_temp), so every object lands in that schema; the runner has already made
-- jobq_migrations (its records) and jobq__migrate_lock (the key of its advisory lock). The
-- functions are not here: each lives in its own file in sql/functions/, applied after the
-- migrations, so a function file always holds the current body. Two objects below need a
-- function before those files run (the status CHECKs of jobq_jobs, the trigger of
-- jobq_cancel_requests): each group creates a placeholder of that function only where it is
-- missing, with the signature of its file, which replaces the body in the same `jobq migrate`.
--
-- Every later change of a table, an index or data is a new numbered migration; this file is
-- never edited (sql/README.md).

-- Settings ------------------------------------------------------------------------------------
-- One row per installation, so that each schema (tenant) has its own limits, metrics switch
-- and lock seed. Only jobq_configure() (admin) changes it: a producer cannot raise its own
-- payload limit.

CREATE TABLE jobq_settings (
    singleton boolean NOT NULL DEFAULT TRUE,
    max_payload_bytes integer NOT NULL DEFAULT 1048576,
    metrics boolean NOT NULL DEFAULT FALSE,
    lock_seed bigint NOT NULL DEFAULT 0,
    metrics_label_sets integer NOT NULL DEFAULT 1000,
    CONSTRAINT jobq_settings_pkey PRIMARY KEY (singleton),
    CONSTRAINT jobq_settings_singleton_check CHECK (singleton),
    CONSTRAINT jobq_settings_max_payload_bytes_check CHECK (max_payload_bytes > 0),
    CONSTRAINT jobq_settings_metrics_label_sets_check CHECK (
        metrics_label_sets BETWEEN 0 AND 1000000
    )
);

COMMENT ON TABLE jobq_settings IS
'Settings of this jobq installation, one row, so that each schema (tenant) has its own.
Changed only through jobq_configure(), admin only: a producer cannot raise its own limits.';
COMMENT ON COLUMN jobq_settings.singleton IS
'Always true: the key that keeps this table at one row.';
COMMENT ON COLUMN jobq_settings.max_payload_bytes IS
'The largest payload jobq_enqueue and jobq_enqueue_many accept, in bytes of jsonb (default
1048576, 1 MiB); larger ones are refused with 54000.';
COMMENT ON COLUMN jobq_settings.metrics IS
'Whether the jobq functions count what they do for jobq_metrics() (jobq_configure(metrics =>
...)); false on a new installation. While false, the counters stand still, and the gauge
jobq_jobs is recounted when it is turned on again.';
COMMENT ON COLUMN jobq_settings.lock_seed IS
'A secret of this installation (64 random bits, drawn at install): the seed of the hash
that numbers the advisory lock of each limit key (jobq__claim_limited), so that a role that
knows a group and key cannot compute the lock''s number and hold it. Readable by jobq''s owner
and admins only; never returned by jobq_configure.';
COMMENT ON COLUMN jobq_settings.metrics_label_sets IS
'How many (queue, job_type) label sets jobq_metrics() counts under their own names (admitted to
jobq_metric_labels, first come first served); the counts of the others go to the overflow label
set, queue '''' and job_type ''''. Default 1000; jobq_configure(metrics_label_sets => ...).';
COMMENT ON CONSTRAINT jobq_settings_pkey ON jobq_settings IS
'One row: singleton is its key.';
COMMENT ON INDEX jobq_settings_pkey IS
'The index of jobq_settings_pkey (one row).';
COMMENT ON CONSTRAINT jobq_settings_singleton_check ON jobq_settings IS
'singleton is true, so no second row can be added.';
COMMENT ON CONSTRAINT jobq_settings_max_payload_bytes_check ON jobq_settings IS
'The payload limit is positive.';
COMMENT ON CONSTRAINT jobq_settings_metrics_label_sets_check ON jobq_settings IS
'The label-set bound is 0 (everything in the overflow label set) to 1,000,000.';

-- The lock seed: 64 random bits (an MD5 of two gen_random_uuid(), whose bits come from
-- pg_strong_random), drawn once per installation. The column's default 0 is never kept: the
-- table has this one row.
INSERT INTO jobq_settings (singleton, lock_seed)
SELECT
    TRUE AS singleton,
    (
        'x' || pg_catalog.substr(
            pg_catalog.md5(
                pg_catalog.gen_random_uuid()::text || pg_catalog.gen_random_uuid()::text
            ),
            1,
            16
        )
    )::bit(64)::bigint AS lock_seed;

REVOKE ALL ON TABLE jobq_settings FROM PUBLIC;

-- Jobs ----------------------------------------------------------------------------------------
-- One row per job, live or finished. A queue table is updated several times per row (claim,
-- completion) and its rows die fast, hence its storage settings (the table's comment explains
-- each). The claim reads partial indexes that hold exactly what it may claim, so its cost does
-- not grow with finished jobs, future jobs or jobs of other types; every other index is partial
-- too, so that the most frequent writes (enqueue, completion) add as few entries as possible.
--
-- The status names are written once, in jobq__statuses() (sql/functions/jobq__statuses.sql),
-- which the two status CHECKs call. The placeholder below has the file's signature, and makes
-- the constraints possible before the function files run; it is created only where the
-- function is missing, so a schema that has the real one keeps it.

DO $do$
BEGIN
    IF pg_catalog.to_regprocedure('jobq__statuses(boolean)') IS NULL THEN
        CREATE FUNCTION jobq__statuses(finished boolean DEFAULT NULL) RETURNS text[]
        LANGUAGE plpgsql
        IMMUTABLE
        PARALLEL SAFE
        AS $f$
        BEGIN
            RETURN NULL;
        END;
        $f$;
    END IF;
END;
$do$;

REVOKE EXECUTE ON FUNCTION jobq__statuses(boolean) FROM PUBLIC;

-- The id's default is the expression of jobq__uuid_v7() (sql/functions/jobq__uuid_v7.sql),
-- written out: a default that named the function would tie the column to it, and this file
-- runs before the function files. Its built-ins are resolved here, once, and stored by OID.
-- (sqlfluff reads `ANY(` as a function name, hence the noqa.)
CREATE TABLE jobq_jobs (
    id uuid NOT NULL DEFAULT pg_catalog.encode(
        pg_catalog.set_bit(
            pg_catalog.set_bit(
                pg_catalog.overlay(
                    pg_catalog.uuid_send(pg_catalog.gen_random_uuid()),
                    pg_catalog.substr(
                        pg_catalog.int8send(
                            pg_catalog.floor(
                                pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
                                * 1000::double precision
                            )::bigint
                        ),
                        3
                    ),
                    1,
                    6
                ),
                52,
                1
            ),
            53,
            1
        ),
        'hex'
    )::uuid,
    queue text NOT NULL DEFAULT 'default',
    job_type text NOT NULL,
    payload jsonb NOT NULL DEFAULT '{}',
    idempotency_key text,
    status text NOT NULL DEFAULT 'pending',
    priority integer NOT NULL DEFAULT 0,
    attempts integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL DEFAULT 5,
    available_at timestamptz NOT NULL DEFAULT now(),
    locked_at timestamptz,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL DEFAULT '[]',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    scheduled boolean NOT NULL DEFAULT FALSE,
    result jsonb,
    cancel_requested_at timestamptz,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamptz,
    CONSTRAINT jobq_jobs_pkey PRIMARY KEY (id),
    CONSTRAINT jobq_jobs_status_check CHECK (status = ANY(jobq__statuses())),  -- noqa: CP03
    CONSTRAINT jobq_jobs_max_attempts_check CHECK (max_attempts >= 1),
    CONSTRAINT jobq_jobs_attempts_check CHECK (attempts >= 0),
    CONSTRAINT jobq_jobs_claim_check CHECK (
        (status = 'processing') = (locked_at IS NOT NULL AND locked_by IS NOT NULL)
    ),
    CONSTRAINT jobq_jobs_finished_check CHECK (
        (status = ANY(jobq__statuses(finished => TRUE))) = (finished_at IS NOT NULL)  -- noqa: CP03
    ),
    CONSTRAINT jobq_jobs_cancel_check CHECK (
        status <> 'pending' OR (cancel_requested_at IS NULL AND cancel_reason IS NULL)
    ),
    CONSTRAINT jobq_jobs_limit_key_needs_group CHECK (limit_key IS NULL OR limit_group IS NOT NULL)
) WITH (
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0.0,
    autovacuum_vacuum_insert_threshold = 20000,
    autovacuum_analyze_scale_factor = 0.0,
    autovacuum_analyze_threshold = 10000,
    autovacuum_vacuum_cost_delay = 0
);

COMMENT ON TABLE jobq_jobs IS
'jobq jobs, one row per job. Change it only through the jobq_* functions.

Its storage settings (\d+ shows them as Options) suit a table whose rows are updated several
times (claim, completion) and die fast.

fillfactor=70: no such update can be HOT (each changes status, which the partial indexes
filter on), but 30 % free space on each page lets the new version of a row go to the same
page, where the dead versions are pruned in place instead of spreading over the table.

autovacuum_vacuum_scale_factor=0, autovacuum_vacuum_threshold=5000: vacuum after 5,000 dead
rows whatever the size of the table (by default it waits until 20 % of the table has turned
over). Claims step over the dead index entries of claimed and finished jobs until VACUUM
removes them, so their number is kept small, and independent of how many jobs are kept.

autovacuum_vacuum_insert_scale_factor=0, autovacuum_vacuum_insert_threshold=20000: a queue
that mostly receives jobs is vacuumed every 20,000 inserts too (visibility map, freezing).

autovacuum_analyze_scale_factor=0, autovacuum_analyze_threshold=10000: statistics follow the
queue every 10,000 changes; the planner''s choices depend on how many jobs are pending.

autovacuum_vacuum_cost_delay=0: VACUUM of this table is never throttled, so that it ends
before new dead entries pile up.';
COMMENT ON COLUMN jobq_jobs.id IS
'The job''s id, made by jobq: a UUID version 7 (time-ordered: 48 bits of Unix time in
milliseconds, then random bits). Callers rely on no order of ids.';
COMMENT ON COLUMN jobq_jobs.queue IS
'The queue the job belongs to (default ''default''; 1-200 characters): a worker may serve
some queues only (jobq_dequeue queues).';
COMMENT ON COLUMN jobq_jobs.job_type IS
'Which handler runs the job (1-200 characters): a worker claims only the job types it has
handlers for (jobq_dequeue job_types).';
COMMENT ON COLUMN jobq_jobs.payload IS
'The job''s arguments, a JSON object handed to the handler; at most
jobq_settings.max_payload_bytes of jsonb.';
COMMENT ON COLUMN jobq_jobs.idempotency_key IS
'Dedupe of one logical task of one job type: enqueuing a key that exists with the same
job_type, in any status, adds nothing and returns that job''s id
(jobq_jobs_idempotency_key_key). The same key under another job_type is another job. NULL: no
dedupe; NULLs never collide.';
COMMENT ON COLUMN jobq_jobs.status IS
'pending: waits (also between retries); processing: claimed; succeeded: done; failed: a
permanent failure the worker asked for (no retry); dead_letter: used all its attempts;
cancelled: cancelled by jobq_cancel. succeeded, failed, dead_letter and cancelled are finished.
The names are those of jobq__statuses().';
COMMENT ON COLUMN jobq_jobs.priority IS
'Higher runs first: claims take jobs by priority (high first), then available_at, then id.
-1000000 to 1000000, default 0.';
COMMENT ON COLUMN jobq_jobs.attempts IS
'Claims so far, the current one included: a claim adds 1, jobq_release gives it back, a
requeue starts again at 0. A worker passes it back as attempt to fence its claim.';
COMMENT ON COLUMN jobq_jobs.max_attempts IS
'Claims allowed (1-1000, default 5). A failure of the last attempt, or a stale claim of it
taken over, moves the job to dead_letter.';
COMMENT ON COLUMN jobq_jobs.available_at IS
'Not claimed before this time: run_at (or now) at enqueue, now + attempts × backoff after a
failure, now after a release or a requeue. A pending job whose available_at is in the future
when it is written is marked scheduled until a claim after that time promotes it.';
COMMENT ON COLUMN jobq_jobs.locked_at IS
'When the current claim was made or last renewed (jobq_heartbeat); NULL unless processing. A
claim older than the claiming worker''s lock_timeout is taken over by the next jobq_dequeue.';
COMMENT ON COLUMN jobq_jobs.locked_by IS
'The worker_id holding the current claim; NULL unless processing. jobq_complete, jobq_fail,
jobq_heartbeat and jobq_release act on a job only while it matches their worker_id.';
COMMENT ON COLUMN jobq_jobs.last_error IS
'The error of the latest failed attempt or expired lock; kept when the job is requeued.';
COMMENT ON COLUMN jobq_jobs.errors IS
'Every failure of the job, oldest first: a JSON array with one object per failed attempt,
{"attempt": n, "at": time, "worker": worker_id, "error": text}, and "kind": "lock_expired"
in the object jobq_dequeue adds when it takes over a stale claim. Kept when the job is
requeued.';
COMMENT ON COLUMN jobq_jobs.created_at IS
'When the job was enqueued.';
COMMENT ON COLUMN jobq_jobs.updated_at IS
'When a jobq function last changed the job (a heartbeat renews locked_at only).';
COMMENT ON COLUMN jobq_jobs.finished_at IS
'When the job reached a finished status (succeeded, failed, dead_letter, cancelled); NULL
otherwise (jobq_jobs_finished_check). jobq_prune deletes jobs by its age.';
COMMENT ON COLUMN jobq_jobs.scheduled IS
'Internal to the claim: true while a pending job waits for an available_at that was in the
future when it was enqueued or retried. Such jobs are left out of jobq_jobs_claim_idx; every
claim first clears the flag of the jobs that have come due (jobq_jobs_scheduled_idx). Meaningful
only while the job is pending.';
COMMENT ON COLUMN jobq_jobs.result IS
'What the handler returned (any JSON value), stored by jobq_complete(result => ...) or
jobq_complete_many(results => ...) when the job succeeded; NULL otherwise. At most
max_payload_bytes (jobq_settings).';
COMMENT ON COLUMN jobq_jobs.cancel_requested_at IS
'When jobq_cancel() asked a processing job to stop (its transaction''s time), set on the row
when that transaction commits (jobq_cancel_requests); NULL without a request. The job keeps
running: one that then fails, is released or is taken over ends cancelled, one that completes
ends succeeded. Workers learn of it through jobq_cancel_requested() (with their heartbeat) and a
notification.';
COMMENT ON COLUMN jobq_jobs.cancel_reason IS
'The reason given to jobq_cancel() for a processing job (cut to 10,000 characters), if any. A
job cancelled while pending has its reason in last_error instead.';
COMMENT ON COLUMN jobq_jobs.limit_group IS
'The limit group the job counts against (jobq_set_limit sets the group''s limits); NULL: no
limit. A group with no limit set is unlimited.';
COMMENT ON COLUMN jobq_jobs.limit_key IS
'Within limit_group, the key whose limits the job counts against (each key of a group has the
group''s limits for itself, such as one customer); NULL: the whole group shares one.';
COMMENT ON COLUMN jobq_jobs.claimed_at IS
'When the latest claim was made (jobq_dequeue); heartbeats do not move it, unlike locked_at.
jobq_run_seconds measures from here to the end of the attempt. NULL for a job never claimed.';
COMMENT ON CONSTRAINT jobq_jobs_pkey ON jobq_jobs IS
'A job is identified by its id.';
COMMENT ON INDEX jobq_jobs_pkey IS
'The primary key: jobq_complete, jobq_fail, jobq_heartbeat and jobq_release find their jobs
by id.';
COMMENT ON CONSTRAINT jobq_jobs_status_check ON jobq_jobs IS
'status is one of jobq__statuses(). Text with a CHECK rather than an enum, whose values could
never be dropped.';
COMMENT ON CONSTRAINT jobq_jobs_max_attempts_check ON jobq_jobs IS
'A job may be claimed at least once (jobq_enqueue also refuses more than 1000).';
COMMENT ON CONSTRAINT jobq_jobs_attempts_check ON jobq_jobs IS
'attempts is never negative (jobq_release gives an attempt back down to 0 at most).';
COMMENT ON CONSTRAINT jobq_jobs_claim_check ON jobq_jobs IS
'A claim (locked_at and locked_by) exists exactly while the job is processing. The fenced
functions rely on it: they find a claim by id and locked_by = worker_id alone, which implies
processing. Testing the status as well would match the predicate of jobq_jobs_locked_idx, and
with a generic plan and statistics gathered while few jobs are processing the planner may
choose that index over the primary key, scanning every claimed job on each call.';
COMMENT ON CONSTRAINT jobq_jobs_finished_check ON jobq_jobs IS
'finished_at is set exactly for the finished statuses, jobq__statuses(finished => true).';
COMMENT ON CONSTRAINT jobq_jobs_cancel_check ON jobq_jobs IS
'A pending job has no cancel request, so a job is never claimed again after its cancel took
effect.';
COMMENT ON CONSTRAINT jobq_jobs_limit_key_needs_group ON jobq_jobs IS
'A limit_key means something only within a limit_group.';

-- deduplicate_items off on the two claim indexes: every entry ends with the job's id, so no two
-- are equal and deduplication would only spend a pass over a full leaf page before each split.
CREATE INDEX jobq_jobs_claim_idx ON jobq_jobs (
    (pg_catalog.hashtextextended(job_type, 0)),
    (pg_catalog.hashtextextended(queue, 0)),
    priority DESC,
    available_at,
    id
)
WITH (deduplicate_items = off)
WHERE status = 'pending' AND NOT scheduled AND limit_group IS NULL;

COMMENT ON INDEX jobq_jobs_claim_idx IS
'The claim: pending jobs available now (not scheduled) without a limit, one range per
(job_type, queue) pair, keyed by the 64-bit hashes of the two names
(hashtextextended(name, 0): fixed-width keys, cheaper to insert than the texts), each in claim
order (priority DESC, available_at, id). jobq_dequeue reads the ranges its filters select,
comparing the names of the rows it reads (two pairs whose hashes collide share a range), and
merges them when there are several.';

CREATE INDEX jobq_jobs_limited_idx ON jobq_jobs (
    job_type, queue, limit_group, (coalesce(limit_key, '')), priority DESC, available_at, id
)
WITH (deduplicate_items = off)
WHERE status = 'pending' AND NOT scheduled AND limit_group IS NOT NULL;

COMMENT ON INDEX jobq_jobs_limited_idx IS
'The claim of limited jobs: pending jobs available now (not scheduled) with a limit_group, one
range per (job_type, queue, limit_group, limit_key), each in claim order. jobq_dequeue probes
it once to learn whether its filters hold limited jobs, and then reads the head of each
key''s range (a key that is full is skipped whole, whatever it holds back). An empty
limit_key cannot be enqueued, so the empty string stands for NULL.';

CREATE INDEX jobq_jobs_scheduled_idx ON jobq_jobs (available_at)
WHERE status = 'pending' AND scheduled;

COMMENT ON INDEX jobq_jobs_scheduled_idx IS
'Scheduled jobs by the time they come due: every claim promotes the due ones (clears
scheduled), so that they enter jobq_jobs_claim_idx.';

CREATE INDEX jobq_jobs_locked_idx ON jobq_jobs (locked_at)
WHERE status = 'processing';

COMMENT ON INDEX jobq_jobs_locked_idx IS
'Stale claims: processing jobs by the age of their lock, so that jobq_dequeue finds the
claims older than lock_timeout with a short range scan (usually empty).';

CREATE INDEX jobq_jobs_limit_running_idx ON jobq_jobs (limit_group, (coalesce(limit_key, '')))
WHERE status = 'processing' AND limit_group IS NOT NULL;

COMMENT ON INDEX jobq_jobs_limit_running_idx IS
'The processing jobs of each (limit_group, limit_key): the claim counts them under the key''s
lock, jobq_limit_usage() reports them.';

CREATE INDEX jobq_jobs_succeeded_idx ON jobq_jobs (finished_at)
WHERE status = 'succeeded';

COMMENT ON INDEX jobq_jobs_succeeded_idx IS
'Succeeded jobs by finished_at, for jobq_prune (the oldest first, in batches). A completion
appends one entry at its right-hand end.';

CREATE INDEX jobq_jobs_failed_idx ON jobq_jobs (status, finished_at)
WHERE status IN ('failed', 'dead_letter', 'cancelled');

COMMENT ON INDEX jobq_jobs_failed_idx IS
'Failed, dead_letter and cancelled jobs by finished_at, for operators (listing, health, requeue,
prune). Succeeded jobs are left out, so that a completion writes no entry here.';

CREATE UNIQUE INDEX jobq_jobs_idempotency_key_key ON jobq_jobs (job_type, idempotency_key)
WHERE idempotency_key IS NOT NULL;

COMMENT ON INDEX jobq_jobs_idempotency_key_key IS
'One job per (job_type, idempotency_key): the same key under another job type is another job.
Partial (only non-NULL keys): NULLs never collide, and a job without a key, the common case,
costs no entry here, when inserted or on any update.';

REVOKE ALL ON TABLE jobq_jobs FROM PUBLIC;

-- Schedules -----------------------------------------------------------------------------------
-- A periodic job is a row, managed through jobq_schedule / jobq_unschedule and fired by
-- jobq_tick. Any number of sessions may tick at once: a tick locks the due rows with FOR UPDATE
-- SKIP LOCKED, and each fire's job carries an idempotency key made of the schedule's name and
-- the fire time, so a fire is enqueued once whoever ticks. A tick with nothing due is one
-- look-up in jobq_schedules_due_idx.

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
COMMENT ON CONSTRAINT jobq_schedules_pkey ON jobq_schedules IS
'A schedule is identified by its name, which is also part of the idempotency key of each job
it fires (so that a fire is enqueued once, whoever ticks).';
COMMENT ON INDEX jobq_schedules_pkey IS
'The index of jobq_schedules_pkey: jobq_schedule and jobq_unschedule find a schedule by name.';
COMMENT ON CONSTRAINT jobq_schedules_catch_up_check ON jobq_schedules IS
'The catch-up policies: skip, latest, all.';
COMMENT ON CONSTRAINT jobq_schedules_max_attempts_check ON jobq_schedules IS
'Each job a fire enqueues may be claimed at least once (jobq_schedule also refuses more than
1000, as jobq_enqueue does).';

CREATE INDEX jobq_schedules_due_idx ON jobq_schedules (next_run_at) WHERE NOT paused;

COMMENT ON INDEX jobq_schedules_due_idx IS
'Due schedules for jobq_tick: a tick with nothing due reads one entry of this index.';

REVOKE ALL ON TABLE jobq_schedules FROM PUBLIC;

-- Workers -------------------------------------------------------------------------------------
-- A job whose type no worker handles would wait silently. Every claim records its worker's
-- filters here, at most once every few seconds per worker (jobq__worker_seen), so the database
-- knows, for workers in any language, which job types and queues are asked for:
-- jobq_unserved_job_types() and jobq_health() name the pending jobs that nobody asked for.

CREATE TABLE jobq_workers (
    worker_id text NOT NULL,
    job_types text[],
    queues text[],
    first_claim_at timestamptz NOT NULL DEFAULT now(),
    last_claim_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT jobq_workers_pkey PRIMARY KEY (worker_id)
);

COMMENT ON TABLE jobq_workers IS
'jobq: the filters of each worker''s recent claims, one row per worker_id, written by
jobq_dequeue (through jobq__worker_seen). Read by jobq_unserved_job_types() and jobq_health();
rows of workers that have not claimed for a day are deleted by later claims.';
COMMENT ON COLUMN jobq_workers.worker_id IS 'The worker_id its claims gave.';
COMMENT ON COLUMN jobq_workers.job_types IS
'The job_types filter of its last claim; NULL: every job type.';
COMMENT ON COLUMN jobq_workers.queues IS 'The queues filter of its last claim; NULL: every queue.';
COMMENT ON COLUMN jobq_workers.first_claim_at IS 'When this worker_id was first recorded.';
COMMENT ON COLUMN jobq_workers.last_claim_at IS
'When a claim last recorded it (at most a few seconds old while the worker claims, since
records are refreshed only when older than that or when the filters change).';
COMMENT ON CONSTRAINT jobq_workers_pkey ON jobq_workers IS
'One row per worker_id: a claim refreshes its worker''s row instead of adding one.';
COMMENT ON INDEX jobq_workers_pkey IS
'The index of jobq_workers_pkey: jobq__worker_seen finds its worker''s row by worker_id.';

REVOKE ALL ON TABLE jobq_workers FROM PUBLIC;

-- Limits --------------------------------------------------------------------------------------
-- Concurrency and rate limits are enforced inside the claim, per (limit_group, limit_key) of
-- the jobs (the columns of jobq_jobs above; jobq_jobs_limited_idx and
-- jobq_jobs_limit_running_idx serve them). jobq_limits holds each group's limit;
-- jobq_limit_keys is written by the claim with every start of a key, so that a claim in a
-- REPEATABLE READ transaction that could not see a concurrent start fails with a serialization
-- error instead of counting wrong; jobq_limit_starts is the sliding window of a rate limit.

CREATE TABLE jobq_limits (
    limit_group text NOT NULL,
    max_running integer,
    max_starts integer,
    per interval,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT jobq_limits_pkey PRIMARY KEY (limit_group),
    CONSTRAINT jobq_limits_max_running_positive CHECK (max_running >= 1),
    CONSTRAINT jobq_limits_rate_complete CHECK (
        (max_starts IS NULL AND per IS NULL)
        OR (
            max_starts IS NOT NULL AND per IS NOT NULL
            AND max_starts >= 1 AND per > interval '0'
        )
    ),
    CONSTRAINT jobq_limits_some_limit CHECK (max_running IS NOT NULL OR max_starts IS NOT NULL)
);

COMMENT ON TABLE jobq_limits IS
'jobq: the limit of each limited group, one row per limit_group, written by jobq_set_limit. A
group without a row is unlimited. Each (limit_group, limit_key) pair has these limits for
itself.';
COMMENT ON COLUMN jobq_limits.limit_group IS 'The group, as jobs name it in limit_group.';
COMMENT ON COLUMN jobq_limits.max_running IS
'At most this many jobs of one key processing at once; NULL: no such limit.';
COMMENT ON COLUMN jobq_limits.max_starts IS
'At most this many jobs of one key started (claimed) within any window of length per; NULL:
no rate limit.';
COMMENT ON COLUMN jobq_limits.per IS 'The window of max_starts; NULL exactly when max_starts is.';
COMMENT ON COLUMN jobq_limits.updated_at IS 'When jobq_set_limit last set this limit.';
COMMENT ON CONSTRAINT jobq_limits_pkey ON jobq_limits IS 'One limit per group.';
COMMENT ON INDEX jobq_limits_pkey IS
'The index of jobq_limits_pkey: the claim reads the limit of each group it meets.';
COMMENT ON CONSTRAINT jobq_limits_max_running_positive ON jobq_limits IS
'max_running is at least 1 (a group that must not run is paused another way).';
COMMENT ON CONSTRAINT jobq_limits_rate_complete ON jobq_limits IS
'A rate limit has both max_starts (at least 1) and per (positive), or neither.';
COMMENT ON CONSTRAINT jobq_limits_some_limit ON jobq_limits IS
'A row sets at least one limit: removing both removes the row.';

REVOKE ALL ON TABLE jobq_limits FROM PUBLIC;

CREATE TABLE jobq_limit_keys (
    limit_group text NOT NULL,
    limit_key text NOT NULL,
    started bigint NOT NULL DEFAULT 0,
    last_start_at timestamptz,
    CONSTRAINT jobq_limit_keys_pkey PRIMARY KEY (limit_group, limit_key)
);

COMMENT ON TABLE jobq_limit_keys IS
'jobq: one row per (limit_group, limit_key) of a limited group that has started a job, written
by the claim under the key''s lock with every start. The write is what makes a claim in a
REPEATABLE READ or SERIALIZABLE transaction fail (40001) rather than miss a start that a
concurrent claim committed after its snapshot. jobq_set_limit deletes a group''s rows when it
removes the limit.';
COMMENT ON COLUMN jobq_limit_keys.limit_group IS 'The group.';
COMMENT ON COLUMN jobq_limit_keys.limit_key IS
'The key within the group; the empty string stands for a NULL limit_key (an empty one cannot
be enqueued).';
COMMENT ON COLUMN jobq_limit_keys.started IS
'Jobs of this key started while the group was limited.';
COMMENT ON COLUMN jobq_limit_keys.last_start_at IS
'When the key last started jobs (the clock of the claim that held the key''s lock; never
earlier than the start before it).';
COMMENT ON CONSTRAINT jobq_limit_keys_pkey ON jobq_limit_keys IS 'One row per key.';
COMMENT ON INDEX jobq_limit_keys_pkey IS 'The index of jobq_limit_keys_pkey.';

REVOKE ALL ON TABLE jobq_limit_keys FROM PUBLIC;

CREATE TABLE jobq_limit_starts (
    limit_group text NOT NULL,
    limit_key text NOT NULL,
    total bigint NOT NULL,
    started integer NOT NULL,
    started_at timestamptz NOT NULL,
    CONSTRAINT jobq_limit_starts_pkey PRIMARY KEY (limit_group, limit_key, total)
);

COMMENT ON TABLE jobq_limit_starts IS
'jobq: the sliding window of each rate-limited key: one row per claim that started jobs of the
key, with the running total of the key''s recorded starts. The starts within the window ending
now are the latest total minus the total of the last row older than the window, found with
one probe of jobq_limit_starts_at_idx; rows older than that one are deleted by the claims.';
COMMENT ON COLUMN jobq_limit_starts.limit_group IS 'The group.';
COMMENT ON COLUMN jobq_limit_starts.limit_key IS
'The key within the group (the empty string for a NULL limit_key).';
COMMENT ON COLUMN jobq_limit_starts.total IS 'Starts recorded for the key, this claim''s included.';
COMMENT ON COLUMN jobq_limit_starts.started IS 'Jobs of the key this claim started.';
COMMENT ON COLUMN jobq_limit_starts.started_at IS
'When (the clock under the key''s lock, never earlier than the row before).';
COMMENT ON CONSTRAINT jobq_limit_starts_pkey ON jobq_limit_starts IS
'Each total once per key: the rows of a key in start order.';
COMMENT ON INDEX jobq_limit_starts_pkey IS
'The index of jobq_limit_starts_pkey: the first and the latest row of a key.';

CREATE INDEX jobq_limit_starts_at_idx ON jobq_limit_starts (
    limit_group, limit_key, started_at, total
);

COMMENT ON INDEX jobq_limit_starts_at_idx IS
'The last row of a key older than the window: one probe per claim of a rate-limited key.';

REVOKE ALL ON TABLE jobq_limit_starts FROM PUBLIC;

-- Metrics -------------------------------------------------------------------------------------
-- The numbers behind jobq_metrics() (Prometheus), kept by the database itself and off until
-- jobq_configure(metrics => true): counting costs one more write in every counted call. Each
-- jobq function that changes jobs adds to its own backend's row of jobq_metric_counters (shard
-- = its pid), in the same transaction, so counting never makes one session wait for another.
-- A transaction upserts its row once and appends its later counts to jobq_metric_deltas,
-- because updating one row again and again within a transaction costs more each time.
-- jobq_metric_labels bounds the label sets that producers can create.

CREATE TABLE jobq_metric_counters (
    shard integer NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    enqueued bigint NOT NULL DEFAULT 0,
    started bigint NOT NULL DEFAULT 0,
    succeeded bigint NOT NULL DEFAULT 0,
    failed bigint NOT NULL DEFAULT 0,
    dead_lettered bigint NOT NULL DEFAULT 0,
    cancelled bigint NOT NULL DEFAULT 0,
    lock_expired bigint NOT NULL DEFAULT 0,
    released bigint NOT NULL DEFAULT 0,
    requeued bigint NOT NULL DEFAULT 0,
    jobs_pending bigint NOT NULL DEFAULT 0,
    jobs_processing bigint NOT NULL DEFAULT 0,
    jobs_succeeded bigint NOT NULL DEFAULT 0,
    jobs_failed bigint NOT NULL DEFAULT 0,
    jobs_dead_letter bigint NOT NULL DEFAULT 0,
    jobs_cancelled bigint NOT NULL DEFAULT 0,
    wait_buckets bigint[] NOT NULL DEFAULT '{}',
    wait_sum double precision NOT NULL DEFAULT 0,
    run_buckets bigint[] NOT NULL DEFAULT '{}',
    run_sum double precision NOT NULL DEFAULT 0,
    CONSTRAINT jobq_metric_counters_pkey PRIMARY KEY (queue, job_type, shard)
) WITH (fillfactor = 50);

COMMENT ON TABLE jobq_metric_counters IS
'jobq: the numbers behind jobq_metrics(), per (queue, job_type), one row per backend that
wrote them (shard: its pid; 0: folded rows of backends that have exited). Written by the jobq
functions in the transaction of the change they count (jobq__metrics_count), so a rollback
counts nothing; jobq_prune lowers the gauge, never a counter. Sum over shards (and the rows of
jobq_metric_deltas) to read. fillfactor 50:
room on the page for the updates of a busy row to stay HOT.';
COMMENT ON COLUMN jobq_metric_counters.shard IS
'The pid of the backend that writes this row (so no two sessions ever wait for one another
here); 0 for the sums that jobq_metrics() folded in from backends that have exited.';
COMMENT ON COLUMN jobq_metric_counters.queue IS 'The jobs'' queue.';
COMMENT ON COLUMN jobq_metric_counters.job_type IS 'The jobs'' job_type.';
COMMENT ON COLUMN jobq_metric_counters.enqueued IS
'Jobs added (jobq_enqueue, jobq_enqueue_many, schedules); an existing idempotency key adds none.';
COMMENT ON COLUMN jobq_metric_counters.started IS 'Claims of pending jobs (jobq_dequeue).';
COMMENT ON COLUMN jobq_metric_counters.succeeded IS
'Completions (jobq_complete, jobq_complete_many).';
COMMENT ON COLUMN jobq_metric_counters.failed IS
'Failed attempts reported by jobq_fail or jobq_fail_many, whatever the job''s next status.';
COMMENT ON COLUMN jobq_metric_counters.dead_lettered IS
'Jobs that went to dead_letter (a last failed attempt, or a takeover with no attempts left).';
COMMENT ON COLUMN jobq_metric_counters.cancelled IS
'Jobs that went to cancelled (jobq_cancel of a pending job; a failure, release or takeover of
a job with a cancel request).';
COMMENT ON COLUMN jobq_metric_counters.lock_expired IS
'Claims taken back by jobq_dequeue because their lock was older than lock_timeout.';
COMMENT ON COLUMN jobq_metric_counters.released IS
'Claims given back unstarted (jobq_release, jobq_release_orphans).';
COMMENT ON COLUMN jobq_metric_counters.requeued IS
'Finished jobs made pending again (jobq_requeue_dead_letter, jobq_requeue_dead_letters).';
COMMENT ON COLUMN jobq_metric_counters.jobs_pending IS
'Change in the number of pending jobs (the gauge jobq_jobs is the sum over shards).';
COMMENT ON COLUMN jobq_metric_counters.jobs_processing IS
'Change in the number of processing jobs (summed over shards).';
COMMENT ON COLUMN jobq_metric_counters.jobs_succeeded IS
'Change in the number of succeeded jobs (summed over shards; jobq_prune subtracts).';
COMMENT ON COLUMN jobq_metric_counters.jobs_failed IS
'Change in the number of failed jobs (summed over shards).';
COMMENT ON COLUMN jobq_metric_counters.jobs_dead_letter IS
'Change in the number of dead_letter jobs (summed over shards).';
COMMENT ON COLUMN jobq_metric_counters.jobs_cancelled IS
'Change in the number of cancelled jobs (summed over shards).';
COMMENT ON COLUMN jobq_metric_counters.wait_buckets IS
'jobq_wait_seconds: claims per bucket of jobq__metric_bounds() (not cumulative; the last
element is above the highest bound); empty until the first observation.';
COMMENT ON COLUMN jobq_metric_counters.wait_sum IS
'jobq_wait_seconds: the sum of the observed waits (available_at to claim), in seconds.';
COMMENT ON COLUMN jobq_metric_counters.run_buckets IS
'jobq_run_seconds: finished attempts per bucket of jobq__metric_bounds() (not cumulative).';
COMMENT ON COLUMN jobq_metric_counters.run_sum IS
'jobq_run_seconds: the sum of the observed run times (claim to completion or failure).';
COMMENT ON CONSTRAINT jobq_metric_counters_pkey ON jobq_metric_counters IS
'One row per (queue, job_type, shard): the upsert of jobq__metrics_count finds its own row.';
COMMENT ON INDEX jobq_metric_counters_pkey IS
'The index of jobq_metric_counters_pkey, for the upserts of jobq__metrics_count.';

REVOKE ALL ON TABLE jobq_metric_counters FROM PUBLIC;

-- The columns of jobq_metric_counters, without its key: rows are only appended and folded.
CREATE TABLE jobq_metric_deltas (LIKE jobq_metric_counters INCLUDING DEFAULTS);

COMMENT ON TABLE jobq_metric_deltas IS
'jobq: counts of jobq_metric_counters written by the second and later counted statements of a
transaction (one row per statement and (queue, job_type), appended: no index, no update), so
that a transaction that enqueues jobs one by one costs the same per job whatever its length.
jobq_metrics() and jobq_prune() fold the rows into jobq_metric_counters (shard 0).';
COMMENT ON COLUMN jobq_metric_deltas.shard IS 'The pid of the backend that wrote the row.';
COMMENT ON COLUMN jobq_metric_deltas.queue IS 'The jobs'' queue.';
COMMENT ON COLUMN jobq_metric_deltas.job_type IS 'The jobs'' job_type.';
COMMENT ON COLUMN jobq_metric_deltas.enqueued IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.started IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.succeeded IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.failed IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.dead_lettered IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.cancelled IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.lock_expired IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.released IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.requeued IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_pending IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_processing IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_succeeded IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_failed IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_dead_letter IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_cancelled IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.wait_buckets IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.wait_sum IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.run_buckets IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.run_sum IS 'As in jobq_metric_counters.';

REVOKE ALL ON TABLE jobq_metric_deltas FROM PUBLIC;

-- No unique index: two sessions admitting the same new label set at once must not wait for
-- one another (counting never waits for another session's transaction), so each inserts a row
-- and the set is counted once, as the distinct pairs. A label set not admitted is counted under
-- the overflow label set (queue '' and job_type '': no real queue or job type is blank).
CREATE TABLE jobq_metric_labels (
    queue text NOT NULL,
    job_type text NOT NULL
);

COMMENT ON TABLE jobq_metric_labels IS
'jobq: the (queue, job_type) label sets that jobq_metrics() counts under their own names, at
most jobq_settings.metrics_label_sets distinct pairs (a pair admitted by two sessions at once
may have two rows). Written by jobq__metrics_count when it meets a new pair while there is
room, emptied of pairs without jobs by jobq_metrics_forget().';
COMMENT ON COLUMN jobq_metric_labels.queue IS 'The label set''s queue.';
COMMENT ON COLUMN jobq_metric_labels.job_type IS 'The label set''s job_type.';

CREATE INDEX jobq_metric_labels_idx ON jobq_metric_labels (queue, job_type);

COMMENT ON INDEX jobq_metric_labels_idx IS
'Whether a pair is admitted: one probe by jobq__metrics_count for a pair its backend has not
counted yet.';

REVOKE ALL ON TABLE jobq_metric_labels FROM PUBLIC;

-- Cancel requests -----------------------------------------------------------------------------
-- A cancel request for a running job reaches the job's row only when the cancelling
-- transaction commits. jobq_cancel writes the request here (a row of the caller's own, which
-- no worker statement reads or waits for), and a deferred constraint trigger applies it to the
-- job while the transaction commits: the job's row lock is then held from that moment to the
-- commit record, never across the caller's own statements, so a producer that keeps its
-- transaction open cannot stall the worker's completion, failure, heartbeat or release.
--
-- The trigger's body is jobq__cancel_apply (sql/functions/jobq__cancel_apply.sql); the
-- placeholder below has its signature, is created only where the function is missing, and is
-- replaced by the function file in the same `jobq migrate`.

CREATE TABLE jobq_cancel_requests (
    job_id uuid NOT NULL,
    reason text,
    requested_at timestamptz NOT NULL
);

COMMENT ON TABLE jobq_cancel_requests IS
'Cancel requests for processing jobs, staged by jobq_cancel() in the caller''s transaction and
applied to jobq_jobs (cancel_requested_at, cancel_reason) by the deferred trigger
jobq_cancel_requests_apply while that transaction commits, which deletes them: the table is
empty outside an open jobq_cancel() transaction. No key: two transactions that cancel the same
job never wait for each other here.';
COMMENT ON COLUMN jobq_cancel_requests.job_id IS
'The processing job to ask to stop.';
COMMENT ON COLUMN jobq_cancel_requests.reason IS
'The reason given to jobq_cancel(), cut to 10,000 characters; NULL: none.';
COMMENT ON COLUMN jobq_cancel_requests.requested_at IS
'When jobq_cancel() was called (the transaction''s time): becomes the job''s cancel_requested_at.';

REVOKE ALL ON TABLE jobq_cancel_requests FROM PUBLIC;

DO $do$
BEGIN
    IF pg_catalog.to_regprocedure('jobq__cancel_apply()') IS NULL THEN
        CREATE FUNCTION jobq__cancel_apply() RETURNS trigger
        LANGUAGE plpgsql
        AS $f$
        BEGIN
            RETURN NULL;
        END;
        $f$;
    END IF;
END;
$do$;

REVOKE EXECUTE ON FUNCTION jobq__cancel_apply() FROM PUBLIC;

CREATE CONSTRAINT TRIGGER jobq_cancel_requests_apply
AFTER INSERT ON jobq_cancel_requests
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION jobq__cancel_apply();

COMMENT ON TRIGGER jobq_cancel_requests_apply ON jobq_cancel_requests IS
'Applies a staged cancel request to its job while the cancelling transaction commits
(jobq__cancel_apply).';
COMMENT ON CONSTRAINT jobq_cancel_requests_apply ON jobq_cancel_requests IS
'The constraint of the trigger of the same name: DEFERRABLE INITIALLY DEFERRED, so that a
request reaches the job''s row at the commit; jobq_cancel() sets it DEFERRED for its own
statements whatever the caller set.';

-- Awaits --------------------------------------------------------------------------------------
-- A client's interest in a job's end (jobq_await with timeout 0, what Queue.wait calls) is a
-- row here rather than a flag on the job: an INSERT into a table of its own neither waits for
-- a claim or an acknowledgement of the job in flight nor holds the job's row lock in the
-- producer's transaction. Hence no unique index (a second insert of the same key would wait
-- for the first one's transaction) and no foreign key (its check would lock the job's row,
-- which a claim's FOR UPDATE SKIP LOCKED would then pass over). The statements that end a job
-- delete its rows and notify only when they find one (jobq__awaits_end), so jobs nobody waits
-- for cost no notification.

CREATE TABLE jobq_awaits (
    job_id uuid NOT NULL,
    awaited_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE jobq_awaits IS
'Jobs whose end a client waits to be told of (jobq_await with timeout 0, as Queue.wait calls
it): the statement that ends such a job (completion, failure, cancel, release, takeover)
deletes its rows and sends a NOTIFY on the done channel. Registering takes no lock on the
job: no unique index, no foreign key. Empty unless someone waits; jobq_prune removes the rows
of jobs that ended or are gone.';
COMMENT ON COLUMN jobq_awaits.job_id IS
'The awaited job (not a foreign key: its check would lock the job''s row). Two clients waiting
for one job may give it two rows.';
COMMENT ON COLUMN jobq_awaits.awaited_at IS 'When jobq_await registered the interest.';

CREATE INDEX jobq_awaits_job_idx ON jobq_awaits (job_id);

COMMENT ON INDEX jobq_awaits_job_idx IS
'The rows of a job: one probe per ending statement (an empty index when nobody waits). Not
unique, so that registering never waits for another transaction.';

REVOKE ALL ON TABLE jobq_awaits FROM PUBLIC;

-- Dashboard -----------------------------------------------------------------------------------
-- The row type of jobq_jobs_page(), which lists jobs one page at a time without payloads (the
-- monitor level may call it). A function whose arguments (status, queue, job_type) are also
-- the names of its result's columns cannot declare them with RETURNS TABLE, hence a type. No
-- index of its own: each status is listed through the partial index that already holds it.
-- Types are usable by everyone by default; the function that returns this one is not.

CREATE TYPE jobq_job_summary AS (
    id uuid,
    queue text,
    job_type text,
    status text,
    priority integer,
    attempts integer,
    max_attempts integer,
    available_at timestamptz,
    created_at timestamptz,
    updated_at timestamptz,
    locked_at timestamptz,
    locked_by text,
    finished_at timestamptz,
    last_error text,
    cancel_requested boolean,
    sort_at timestamptz,
    matches boolean
);

COMMENT ON TYPE jobq_job_summary IS
'jobq: one job as jobq_jobs_page() lists it: the columns of jobq_jobs of the same names
(no payload, no result, no errors history; cancel_requested is cancel_requested_at IS NOT NULL)
and sort_at, the time the listing of its status is ordered by (available_at for pending jobs,
locked_at for processing ones, finished_at for finished ones), which with id is the cursor of
the next page; matches, false only on the row that marks where a filtered search of finished
jobs stopped (the last job it examined: not one of the jobs listed, the cursor to search on).';

-- Migration records ---------------------------------------------------------------------------
-- jobq_migrations and jobq__migrate_lock belong to the migration runner, which makes them (with
-- the comments of the lock table and of jobq_migrations itself) before any migration runs. The
-- records' columns explain themselves here like every other column of a jobq table.

COMMENT ON COLUMN jobq_migrations.version IS
'What was applied: a migration (NNNN_name, its file name without .sql) or a function file
(functions/jobq_name).';
COMMENT ON COLUMN jobq_migrations.checksum IS
'SHA-256 of the file as applied. An applied migration whose file has changed is refused; a
function file whose content differs is applied again, by a jobq that knows this checksum.';
COMMENT ON COLUMN jobq_migrations.applied_at IS
'When the file was applied (a function file: when it was last applied).';
COMMENT ON COLUMN jobq_migrations.breaking IS
'True for a migration marked --! breaking-change: a client of an older jobq, which does not
have that migration, refuses this schema.';
COMMENT ON CONSTRAINT jobq_migrations_pkey ON jobq_migrations IS
'One record per migration or function file.';
COMMENT ON INDEX jobq_migrations_pkey IS
'The index of jobq_migrations_pkey.';
