-- 0001_jobq_core.sql — the jobq tables: jobq_settings, jobq_jobs, and the indexes of the claim.
--
-- The migration runner (`jobq migrate`) runs this file in one transaction with `search_path`
-- set to the target schema followed by pg_temp, so every object lands in that schema. The
-- functions are not here: each lives in its own file in sql/functions/, applied after the
-- numbered migrations whenever its content changes, so that the file always holds the
-- current body (see sql/README.md).
--
-- Storage settings of jobq_jobs: a queue table is updated several times per row (claim,
-- completion) and its rows die fast. No such update can be HOT (each changes status, which
-- the partial indexes filter on), but fillfactor 70 leaves room on each page for the new
-- version of a row, so it is written to the same page and the page's dead versions are pruned
-- in place. The autovacuum thresholds are per-table and absolute, so dead rows of claimed and
-- finished jobs are reclaimed after a few thousand changes rather than after 20 % of the table
-- has turned over, whatever its size.

CREATE TABLE jobq_settings (
    singleton boolean NOT NULL DEFAULT TRUE,
    max_payload_bytes integer NOT NULL DEFAULT 1048576,
    CONSTRAINT jobq_settings_pkey PRIMARY KEY (singleton),
    CONSTRAINT jobq_settings_singleton_check CHECK (singleton),
    CONSTRAINT jobq_settings_max_payload_bytes_check CHECK (max_payload_bytes > 0)
);

COMMENT ON TABLE jobq_settings IS
'Settings of this jobq installation (one row). Changed only through jobq_configure().';

INSERT INTO jobq_settings (singleton) VALUES (TRUE);

CREATE TABLE jobq_jobs (
    id uuid NOT NULL DEFAULT gen_random_uuid(),
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
    CONSTRAINT jobq_jobs_pkey PRIMARY KEY (id),
    CONSTRAINT jobq_jobs_status_check CHECK (
        status IN ('pending', 'processing', 'succeeded', 'failed', 'dead_letter')
    ),
    CONSTRAINT jobq_jobs_max_attempts_check CHECK (max_attempts >= 1),
    CONSTRAINT jobq_jobs_attempts_check CHECK (attempts >= 0),
    -- A claim (locked_at, locked_by) exists exactly while the job is processing. The fenced
    -- functions (jobq_complete, jobq_complete_many, jobq_fail, jobq_heartbeat, jobq_release)
    -- rely on it: they match a claim by `id` and `locked_by = worker_id` alone, which implies
    -- status = 'processing'. Testing the status as well would match the predicate of the
    -- partial index jobq_jobs_locked_idx, and with a generic plan and statistics gathered while
    -- few jobs were processing (ANALYZE on a quiet queue) the planner chooses that index over
    -- the primary key: each call then scans every claimed job (a worker reporting 4,000
    -- failures in one statement took 2.3 s instead of 0.25 s).
    CONSTRAINT jobq_jobs_claim_check CHECK (
        (status = 'processing') = (locked_at IS NOT NULL AND locked_by IS NOT NULL)
    ),
    -- finished_at is set exactly for the three finished statuses.
    CONSTRAINT jobq_jobs_finished_check CHECK (
        (status IN ('succeeded', 'failed', 'dead_letter')) = (finished_at IS NOT NULL)
    )
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
'jobq jobs, one row per job. Change it only through the jobq_* functions.';

-- One job per idempotency key; NULLs never collide. Partial, so that jobs without a key (the
-- common case) cost no entry here, neither when inserted nor on any later update of the row.
CREATE UNIQUE INDEX jobq_jobs_idempotency_key_key ON jobq_jobs (idempotency_key)
WHERE idempotency_key IS NOT NULL;

-- The claim of pending jobs: exactly the filter (status = pending) and the order
-- (priority DESC, available_at, id) of jobq_dequeue. Finished jobs are not in it, so the
-- claim does not slow down as succeeded jobs pile up; future jobs sort after the ones
-- available now (same priority), so the scan stops at the first LIMIT rows.
CREATE INDEX jobq_jobs_claim_idx ON jobq_jobs (priority DESC, available_at, id)
WHERE status = 'pending';

-- Recovery of stale claims: processing jobs by the age of their lock.
CREATE INDEX jobq_jobs_locked_idx ON jobq_jobs (locked_at)
WHERE status = 'processing';

-- Failed and dead-letter jobs, for operators (listing, health, requeue, prune of those).
-- Succeeded jobs are left out on purpose, so that a completion writes no entry here; pruning
-- succeeded jobs is a periodic scan of the table.
CREATE INDEX jobq_jobs_failed_idx ON jobq_jobs (status, finished_at)
WHERE status IN ('failed', 'dead_letter');

-- Nothing for PUBLIC: `jobq grant ROLE --as producer|worker|admin` grants what a role needs.
REVOKE ALL ON TABLE jobq_jobs, jobq_settings FROM PUBLIC;
