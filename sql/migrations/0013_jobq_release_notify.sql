-- 0013_jobq_release_notify.sql — a job that a completion releases wakes the workers of its
-- queue at the commit, and only if that transaction has not claimed it itself
-- (docs/workflows.md, "Waking workers"): a worker that completes a job and claims the one it
-- released in one transaction then commits without a NOTIFY, and PostgreSQL serialises the
-- commits of notifying transactions.

-- The trigger's body is jobq__notify_released (sql/functions/jobq__notify_released.sql), whose
-- placeholder below is created only where the function is missing and replaced by its file in
-- the same `jobq migrate`.
DO $do$
BEGIN
    IF pg_catalog.to_regprocedure('jobq__notify_released()') IS NULL THEN
        CREATE FUNCTION jobq__notify_released() RETURNS trigger
        LANGUAGE plpgsql
        AS $f$
        BEGIN
            RETURN NULL;
        END;
        $f$;
    END IF;
END;
$do$;

REVOKE EXECUTE ON FUNCTION jobq__notify_released() FROM PUBLIC;

-- UPDATE OF waiting_on: only the statements that change a job's dependencies consider it at
-- all (enqueues, claims, completions and heartbeats never set waiting_on), and the WHEN
-- clause queues an event for a released row only.
CREATE CONSTRAINT TRIGGER jobq_jobs_released
AFTER UPDATE OF waiting_on ON jobq_jobs
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW
WHEN (old.waiting_on > 0 AND new.waiting_on = 0 AND new.status = 'pending')
EXECUTE FUNCTION jobq__notify_released();

COMMENT ON TRIGGER jobq_jobs_released ON jobq_jobs IS
'Wakes the workers of the queue of a job that its last dependency released, at the commit
(jobq__notify_released), unless the releasing transaction claimed the job itself.';
COMMENT ON CONSTRAINT jobq_jobs_released ON jobq_jobs IS
'The constraint of the trigger of the same name: DEFERRABLE INITIALLY DEFERRED, so that the
notification is decided at the commit, after any claim of the same transaction (a caller that
sets it IMMEDIATE gets the notification at once, as before).';
