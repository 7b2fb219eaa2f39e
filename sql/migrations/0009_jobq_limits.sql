-- 0009_jobq_limits.sql — concurrency and rate limits, enforced inside the claim.
--
-- 1. jobq_jobs.limit_group, jobq_jobs.limit_key: the limit a job counts against (NULL: none).
-- 2. jobq_jobs_claim_idx is rebuilt without the limited jobs (limit_group IS NOT NULL), which
--    get an index of their own, jobq_jobs_limited_idx, with one range per (job_type, queue,
--    limit_group, limit_key): a claim that finds no limited job in its filters (one index
--    probe) runs exactly as before, and one that does reads the head of each key's range
--    instead of stepping over the jobs a full key holds back.
-- 3. jobq_jobs_limit_running_idx: the processing jobs of each (limit_group, limit_key), which
--    a claim counts under the key's lock.
-- 4. jobq_limits (one row per limited group, written by jobq_set_limit), jobq_limit_keys (one
--    row per limited key that has started a job: the claim updates it with every start, so
--    that a claim in a REPEATABLE READ transaction that could not see a concurrent start fails
--    with a serialization error instead of counting wrong) and jobq_limit_starts (the sliding
--    window of a rate limit: one row per claim that started jobs of the key, with the running
--    total of starts, kept while within the window).
--
-- The rebuild of jobq_jobs_claim_idx takes a lock that blocks writes to jobq_jobs until the
-- migration commits, and reads the whole table: on a large table, apply it when the queue is
-- quiet. Its entries are the same as before (no job has a limit_group yet).

ALTER TABLE jobq_jobs ADD COLUMN limit_group text;
ALTER TABLE jobq_jobs ADD COLUMN limit_key text;
ALTER TABLE jobq_jobs ADD CONSTRAINT jobq_jobs_limit_key_needs_group
CHECK (limit_key IS NULL OR limit_group IS NOT NULL);

COMMENT ON COLUMN jobq_jobs.limit_group IS
'The limit group the job counts against (jobq_set_limit sets the group''s limits); NULL: no
limit. A group with no limit set is unlimited.';
COMMENT ON COLUMN jobq_jobs.limit_key IS
'Within limit_group, the key whose limits the job counts against (each key of a group has the
group''s limits for itself, such as one customer); NULL: the whole group shares one.';
COMMENT ON CONSTRAINT jobq_jobs_limit_key_needs_group ON jobq_jobs IS
'A limit_key means something only within a limit_group.';

DROP INDEX jobq_jobs_claim_idx;

CREATE INDEX jobq_jobs_claim_idx ON jobq_jobs (job_type, queue, priority DESC, available_at, id)
WHERE status = 'pending' AND NOT scheduled AND limit_group IS NULL;

COMMENT ON INDEX jobq_jobs_claim_idx IS
'The claim: pending jobs available now (not scheduled) without a limit, one range per
(job_type, queue) pair, each in claim order (priority DESC, available_at, id). jobq_dequeue
reads the ranges its filters select, and merges them when there are several.';

CREATE INDEX jobq_jobs_limited_idx ON jobq_jobs (
    job_type, queue, limit_group, (coalesce(limit_key, '')), priority DESC, available_at, id
)
WHERE status = 'pending' AND NOT scheduled AND limit_group IS NOT NULL;

COMMENT ON INDEX jobq_jobs_limited_idx IS
'The claim of limited jobs: pending jobs available now (not scheduled) with a limit_group, one
range per (job_type, queue, limit_group, limit_key), each in claim order. jobq_dequeue probes
it once to learn whether its filters hold limited jobs, and then reads the head of each
key''s range (a key that is full is skipped whole, whatever it holds back). An empty
limit_key cannot be enqueued, so the empty string stands for NULL.';

CREATE INDEX jobq_jobs_limit_running_idx ON jobq_jobs (limit_group, (coalesce(limit_key, '')))
WHERE status = 'processing' AND limit_group IS NOT NULL;

COMMENT ON INDEX jobq_jobs_limit_running_idx IS
'The processing jobs of each (limit_group, limit_key): the claim counts them under the key''s
lock, jobq_limit_usage() reports them.';

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

CREATE INDEX jobq_limit_starts_at_idx ON jobq_limit_starts (
    limit_group, limit_key, started_at, total
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
COMMENT ON INDEX jobq_limit_starts_at_idx IS
'The last row of a key older than the window: one probe per claim of a rate-limited key.';

REVOKE ALL ON TABLE jobq_limit_starts FROM PUBLIC;
