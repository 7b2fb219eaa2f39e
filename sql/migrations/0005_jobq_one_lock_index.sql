-- 0005_jobq_one_lock_index.sql — drops jobq_jobs_locked_idx (processing jobs by locked_at):
-- jobq_jobs_locked_until_idx (processing jobs by locked_until) serves every reader of processing
-- jobs, so each claim, heartbeat and completion writes one lock index entry instead of two.
-- jobq_dequeue's takeover step reads it as a range up to now; jobq_jobs_page lists processing
-- jobs in its order (the lock that expires first comes first); jobq_health and
-- jobq_release_orphans read every processing job through it, as they read the dropped one
-- (docs/decisions/0010-one-lock-index.md).

DROP INDEX jobq_jobs_locked_idx;

COMMENT ON INDEX jobq_jobs_locked_until_idx IS
'Processing jobs by the expiry of their lock: jobq_dequeue finds the expired claims with a short
range scan (usually empty), jobq_jobs_page lists processing jobs in this order, jobq_health and
jobq_release_orphans read the processing jobs through it.';

COMMENT ON CONSTRAINT jobq_jobs_claim_check ON jobq_jobs IS
'A claim (locked_at and locked_by) exists exactly while the job is processing. The fenced
functions rely on it: they find a claim by id and locked_by = worker_id alone, which implies
processing. Testing the status as well would match the predicate of jobq_jobs_locked_until_idx,
and with a generic plan and statistics gathered while few jobs are processing the planner may
choose that index over the primary key, scanning every claimed job on each call.';
