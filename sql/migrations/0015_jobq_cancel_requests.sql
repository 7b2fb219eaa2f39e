-- 0015_jobq_cancel_requests.sql — a cancel request for a running job reaches its row only when
-- the cancelling transaction commits.
--
-- jobq_cancel used to set cancel_requested_at on a processing job at once. That UPDATE holds the
-- job's row lock until the caller's transaction ends, and a producer that keeps its transaction
-- open after the call then stalls the worker's completion, failure, heartbeat and release of
-- that job for as long as it likes. Now jobq_cancel writes the request into jobq_cancel_requests
-- (a row of the caller's own, which no worker statement reads or waits for) and a deferred
-- constraint trigger applies it to the job's row while the transaction commits: the row lock is
-- then held from that moment to the commit record, never across the caller's own statements.
-- The trigger locks the job and re-reads it, so a request and an attempt that ends meanwhile
-- are ordered as before: an attempt that ended first leaves a pending job, which the request
-- then cancels at once; a completed job is left alone.
--
-- The function file jobq__cancel_apply.sql holds the trigger's body; the placeholder below lets
-- the trigger be created here, and the function file, applied right after the migrations in
-- the same run, replaces it.

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

-- Created only where it does not exist yet: a run that applies a newer function file first
-- (an install of these migrations with later function files) keeps that body.
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

COMMENT ON COLUMN jobq_jobs.cancel_requested_at IS
'When jobq_cancel() asked a processing job to stop (its transaction''s time), set on the row
when that transaction commits (jobq_cancel_requests); NULL without a request. The job keeps
running: one that then fails, is released or is taken over ends cancelled, one that completes
ends succeeded. Workers learn of it through jobq_cancel_requested() (with their heartbeat) and a
notification.';

COMMENT ON COLUMN jobq_jobs.awaited IS
'True once a client asked to be notified of the job''s end (jobq_await with timeout 0): its
completion, failure, cancel or takeover then sends a NOTIFY on the installation''s done channel,
with an empty payload (any role may LISTEN: the waiter re-reads the statuses of its jobs). Jobs
nobody waits for cost no notification.';
