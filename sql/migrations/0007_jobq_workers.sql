-- 0007_jobq_workers.sql — what workers ask for: one row per worker_id, written by its claims.
--
-- A job whose type no worker handles waits silently: a burst run finds "no job available",
-- and a queue-age warning comes only much later without naming the type. Every claim
-- (jobq_dequeue) records its worker's filters here, at most once every few seconds per worker
-- (jobq__worker_seen), so the database knows, for workers in any language, which job types and
-- queues are asked for; jobq_unserved_job_types() and the unserved_job_types check of
-- jobq_health() name the pending jobs that nobody asked for recently.

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

REVOKE ALL ON TABLE jobq_workers FROM PUBLIC;
