-- 0006_jobq_cancel_results.sql — cancellation, results and waiting: the columns result,
-- cancel_requested_at, cancel_reason and awaited of jobq_jobs. The status cancelled itself is
-- one more name in jobq__statuses() (functions/jobq__statuses.sql), which the status CHECK
-- constraints ask: the function file, applied right after the migrations, adds it.
--
-- Every new column is nullable or has a constant default, so adding it rewrites no row
-- (PostgreSQL 11 and later store the default in the catalogue). The new constraint is checked
-- against the existing rows once, here; the index of failed jobs is built again to include
-- cancelled ones, which reads the table once.
--
-- awaited is the flag that keeps completions cheap: a completion (or failure, cancel, takeover)
-- sends a notification on the installation's done channel only for a job someone marked as
-- awaited (jobq_await with timeout 0, what a LISTENing client such as Queue.wait calls), and it
-- reads the flag from the row it updates anyway. Without it every completion would NOTIFY,
-- and every notifying commit in the cluster takes one lock in turn, listened to or not.

ALTER TABLE jobq_jobs
ADD COLUMN result jsonb,
ADD COLUMN cancel_requested_at timestamptz,
ADD COLUMN cancel_reason text,
ADD COLUMN awaited boolean NOT NULL DEFAULT FALSE;

-- A pending job never carries a cancel request: jobq_cancel cancels a pending job at once, and
-- every way a processing job with a request can end (failure, release, takeover) ends it
-- cancelled. So the claim, which takes pending jobs only, can never run a job after its
-- cancel took effect, and a requeue clears the request.
ALTER TABLE jobq_jobs ADD CONSTRAINT jobq_jobs_cancel_check CHECK (
    status <> 'pending' OR (cancel_requested_at IS NULL AND cancel_reason IS NULL)
);

-- The operators' jobs (listing, health, requeue, prune of those), cancelled ones now included.
DROP INDEX jobq_jobs_failed_idx;
CREATE INDEX jobq_jobs_failed_idx ON jobq_jobs (status, finished_at)
WHERE status IN ('failed', 'dead_letter', 'cancelled');

COMMENT ON COLUMN jobq_jobs.result IS
'What the handler returned (any JSON value), stored by jobq_complete(result => ...) or
jobq_complete_many(results => ...) when the job succeeded; NULL otherwise. At most
max_payload_bytes (jobq_settings).';
COMMENT ON COLUMN jobq_jobs.cancel_requested_at IS
'When jobq_cancel() asked a processing job to stop; NULL without a request. The job keeps
running: one that then fails, is released or is taken over ends cancelled, one that completes
ends succeeded. Workers learn of it through jobq_cancel_requested() (with their heartbeat) and a
notification.';
COMMENT ON COLUMN jobq_jobs.cancel_reason IS
'The reason given to jobq_cancel() for a processing job (cut to 10,000 characters), if any. A
job cancelled while pending has its reason in last_error instead.';
COMMENT ON COLUMN jobq_jobs.awaited IS
'True once a client asked to be notified of the job''s end (jobq_await with timeout 0): its
completion, failure, cancel or takeover then sends a NOTIFY on the installation''s done channel
with the job id as payload. Jobs nobody waits for cost no notification.';
COMMENT ON COLUMN jobq_jobs.status IS
'pending: waits (also between retries); processing: claimed; succeeded: done; failed: a
permanent failure the worker asked for (no retry); dead_letter: used all its attempts;
cancelled: cancelled by jobq_cancel. succeeded, failed, dead_letter and cancelled are finished.
The names are those of jobq__statuses().';
COMMENT ON COLUMN jobq_jobs.finished_at IS
'When the job reached a finished status (succeeded, failed, dead_letter, cancelled); NULL
otherwise (jobq_jobs_finished_check). jobq_prune deletes jobs by its age.';
COMMENT ON CONSTRAINT jobq_jobs_cancel_check ON jobq_jobs IS
'A pending job has no cancel request, so a job is never claimed again after its cancel took
effect.';
COMMENT ON INDEX jobq_jobs_failed_idx IS
'Failed, dead_letter and cancelled jobs by finished_at, for operators (listing, health, requeue,
prune). Succeeded jobs are left out, so that a completion writes no entry here.';
