-- 0013_jobq_release_without_queueing.sql — releasing dependents without serialising their
-- parents' completions (docs/workflows.md, "Design"):
--   * a job that a completion releases wakes the workers of its queue at the commit, and only
--     if that transaction has not claimed it itself ("Waking workers"): a worker that completes
--     a job and claims the one it released in one transaction then commits without a NOTIFY,
--     and PostgreSQL serialises the commits of notifying transactions;
--   * a job that waits for many jobs counts most of them in a pool of counters of its own
--     (jobq_dependency_pools) instead of on its row, so that the completions of its
--     dependencies do not each wait for the previous one's commit to lock that row.

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

ALTER TABLE jobq_job_dependencies
ADD COLUMN pooled boolean NOT NULL DEFAULT FALSE;

COMMENT ON COLUMN jobq_job_dependencies.pooled IS
'Whether the dependent counts this edge in its pool (jobq_dependency_pools) rather than in its
waiting_on: set when one enqueue gives a job at least 64 unfinished dependencies under rule
cancel or wait (the edges of rule run, and those a graft adds, are counted on the row).';

CREATE TABLE jobq_dependency_pools (
    job_id uuid NOT NULL,
    shard smallint NOT NULL,
    remaining integer NOT NULL,
    CONSTRAINT jobq_dependency_pools_pkey PRIMARY KEY (job_id, shard),
    CONSTRAINT jobq_dependency_pools_remaining_check CHECK (remaining >= 0)
);

COMMENT ON TABLE jobq_dependency_pools IS
'The pooled dependencies of a job that waits for many (jobq_job_dependencies.pooled), split
in up to 16 counters: a dependency''s success takes one from a counter that no concurrent
completion holds, and only the completion that empties a counter decrements the job''s
waiting_on (which counts each counter not yet empty as one), under the job''s row lock. So a
fan-in''s completions lock its row 16 times in all, not once each. Written by jobq__add_edges,
read and written by jobq__dependents_finished; rows of a job that no longer waits are
leftovers that nothing reads (replaced if it is requeued).';
COMMENT ON COLUMN jobq_dependency_pools.job_id IS 'The dependent job.';
COMMENT ON COLUMN jobq_dependency_pools.shard IS 'The counter''s number, from 0.';
COMMENT ON COLUMN jobq_dependency_pools.remaining IS
'How many of the job''s pooled dependencies this counter still holds for (0: empty, counted
off the job''s waiting_on).';
COMMENT ON CONSTRAINT jobq_dependency_pools_pkey ON jobq_dependency_pools IS
'A job''s counters are a range of this index, in the order completions lock them.';
COMMENT ON INDEX jobq_dependency_pools_pkey IS 'The index of jobq_dependency_pools_pkey.';
COMMENT ON CONSTRAINT jobq_dependency_pools_remaining_check ON jobq_dependency_pools IS
'A counter never goes below empty: each dependency is taken off once.';

REVOKE ALL ON TABLE jobq_dependency_pools FROM PUBLIC;
