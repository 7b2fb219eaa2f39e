-- 0014_jobq_names_and_bulk_audit.sql — what an operator's tools read.
--
-- jobq_names finds every job type and queue that has jobs, through indexes whose leading
-- columns are the names, one distinct pair at a time (a skip scan). The claim indexes already
-- hold the jobs available now; these two hold the rest: the jobs that wait (for their run_at,
-- a retry's backoff or their dependencies), which no enqueue of a job available now writes an
-- entry into, and the finished ones. The history's index costs each finished job one entry,
-- which B-tree deduplication packs with the others of its pair (few distinct pairs).

CREATE INDEX jobq_jobs_later_names_idx ON jobq_jobs (job_type, queue)
WHERE status = 'waiting' OR (status = 'pending' AND scheduled);

COMMENT ON INDEX jobq_jobs_later_names_idx IS
'The names of the jobs that wait: for their dependencies (waiting) or their run_at or a
retry''s backoff (scheduled). jobq_names reads it one distinct pair at a time. A job
available now has no entry.';

CREATE INDEX jobq_jobs_history_names_idx ON jobq_jobs_history (job_type, queue);

COMMENT ON INDEX jobq_jobs_history_names_idx IS
'The names of the finished jobs: jobq_names reads it one distinct pair at a time in each
partition. Deduplicated: few distinct pairs, so it stays small.';
