-- 0003_jobq_locks_and_pauses.sql — a claim records when its lock expires (locked_until), so that
-- a takeover goes by the claiming worker's lock_timeout, not by the one of the worker that
-- looks: a worker with a 20-second lock that dies is taken over after 20 seconds by a worker
-- that uses the default 5 minutes, and a worker with a 1-hour lock is never taken over after 5
-- minutes by one that uses the default.

ALTER TABLE jobq_jobs ADD COLUMN locked_until timestamptz;

COMMENT ON COLUMN jobq_jobs.locked_until IS
'When the current claim''s lock expires: the claim sets it to locked_at + its own lock_timeout
(jobq_dequeue), each jobq_heartbeat moves it by the same length from the renewal. Any claim
takes over a processing job whose locked_until has passed, whatever its own lock_timeout. NULL
unless processing.';

-- The claims of an earlier jobq were made with a lock_timeout it did not record: they get the
-- default one (jobq_dequeue's, 5 minutes), which is what the Python Worker uses unless told
-- otherwise.
UPDATE jobq_jobs SET locked_until = locked_at + interval '5 minutes'
WHERE status = 'processing';

-- The stale-claim step of jobq_dequeue reads this index from its start up to now: a short range
-- scan that finds nothing in the common case, whatever the lock lengths of the claims.
-- jobq_jobs_locked_idx (by locked_at) stays for the listings of processing jobs in claim order.
CREATE INDEX jobq_jobs_locked_until_idx ON jobq_jobs (locked_until)
WHERE status = 'processing';

COMMENT ON INDEX jobq_jobs_locked_until_idx IS
'Stale claims: processing jobs by the expiry of their lock, so that jobq_dequeue finds the
expired ones with a short range scan (usually empty).';

COMMENT ON INDEX jobq_jobs_locked_idx IS
'Processing jobs by the time of their claim or last renewal: the listings of processing jobs
(oldest claim first), jobq_health''s stuck claims and jobq_release_orphans.';

-- Finished jobs hold no claim: the column is always NULL here, kept so that the history has the
-- columns of jobq_jobs.
ALTER TABLE jobq_jobs_history ADD COLUMN locked_until timestamptz;

COMMENT ON COLUMN jobq_jobs_history.locked_until IS
'As in jobq_jobs (NULL: finished jobs hold no claim).';

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
    j.locked_until
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
    h.locked_until
FROM jobq_jobs_history AS h;

-- Paused queues -------------------------------------------------------------------------------
-- One row per paused queue (jobq_pause, jobq_resume): durable and shared by every worker. The
-- claim reads it on every call, which costs one look at an empty table while nothing is paused.

CREATE TABLE jobq_paused_queues (
    queue text NOT NULL,
    paused_at timestamptz NOT NULL,
    reason text,
    CONSTRAINT jobq_paused_queues_pkey PRIMARY KEY (queue)
);

COMMENT ON TABLE jobq_paused_queues IS
'The paused queues: no jobq_dequeue claims their jobs while their row is here. Changed only
through jobq_pause() and jobq_resume() (admin); read by jobq_queues().';
COMMENT ON COLUMN jobq_paused_queues.queue IS 'The paused queue.';
COMMENT ON COLUMN jobq_paused_queues.paused_at IS 'When jobq_pause paused it.';
COMMENT ON COLUMN jobq_paused_queues.reason IS 'Why, as given to jobq_pause (NULL: none).';
COMMENT ON CONSTRAINT jobq_paused_queues_pkey ON jobq_paused_queues IS
'A queue is paused once: a second jobq_pause leaves the first pause as it was.';
COMMENT ON INDEX jobq_paused_queues_pkey IS 'The index of jobq_paused_queues_pkey.';

REVOKE ALL ON TABLE jobq_paused_queues FROM PUBLIC;
