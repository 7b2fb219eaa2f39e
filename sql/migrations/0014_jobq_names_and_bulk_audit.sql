-- 0014_jobq_names_and_bulk_audit.sql — two things an operator's tools read.
--
-- jobq_requeue_dead_letters records itself in jobq_audit, as jobq_act_on_jobs does: the
-- action requeue_dead_letters, with the filters it was called with (the jobs it requeued are
-- job_ids and changed).
--
-- jobq_names finds every job type and queue that has jobs, through indexes whose leading
-- columns are the names, one distinct pair at a time (a skip scan). The claim indexes already
-- hold the jobs available now; these two hold the rest: the jobs that wait (for their run_at,
-- a retry's backoff or their dependencies), which no enqueue of a job available now writes an
-- entry into, and the finished ones. The history's index costs each finished job one entry,
-- which B-tree deduplication packs with the others of its pair (few distinct pairs).

ALTER TABLE jobq_audit
DROP CONSTRAINT jobq_audit_action_check,
ADD CONSTRAINT jobq_audit_action_check CHECK (
    action IN ('cancel', 'requeue', 'delete', 'run_now', 'requeue_dead_letters')
),
ADD COLUMN filters jsonb;

COMMENT ON TABLE jobq_audit IS
'jobq: what operators did to jobs, one row per call of jobq_act_on_jobs or
jobq_requeue_dead_letters, written in the transaction of the change (a rolled-back action
leaves no row). Read through jobq_audit_log() (admin); kept until an administrator deletes
rows.';
COMMENT ON COLUMN jobq_audit.action IS
'cancel, requeue, delete or run_now (jobq_act_on_jobs), requeue_dead_letters (the bulk
requeue).';
COMMENT ON COLUMN jobq_audit.job_ids IS
'The jobs asked for, as given (duplicates removed); for requeue_dead_letters, the jobs its
filters matched.';
COMMENT ON COLUMN jobq_audit.filters IS
'requeue_dead_letters: the filters it was called with (job_type, queue, include_cancelled;
a NULL filter matches every value). NULL for the actions on jobs picked by id.';
COMMENT ON CONSTRAINT jobq_audit_action_check ON jobq_audit IS
'The actions jobq_act_on_jobs and jobq_requeue_dead_letters take.';

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
