-- jobq__notify_released (private): the body of the deferred constraint trigger
-- jobq_jobs_released, which fires at the commit of a transaction for each job that it released
-- (waiting_on down to 0, pending). It wakes the workers of the job's queue (one notification
-- per queue: PostgreSQL folds identical ones) when the job is still pending and available at
-- that moment, and does nothing when the same transaction has claimed it (or moved it on):
--   * a worker that completes a job and claims the next in one transaction (a chain) takes
--     what its completion released: nobody else needs waking for it, and a transaction
--     without a NOTIFY commits beside the others, whereas PostgreSQL commits notifying
--     transactions one at a time (a lock held until the commit record is flushed);
--   * a released job that is still pending at the commit is one that no claim took: a worker
--     that sleeps (its last claim came back short) claims only when notified or when its
--     poll_interval has passed, so the job's queue is notified, as every release did before.
-- No other rule is safe: a queue that already has available jobs may have workers asleep all
-- the same (a claim that took those jobs before this commit came back short), and a
-- transaction cannot know whether another worker will claim after its commit.
-- A scheduled job (available later) is not notified: workers find it by polling, as an
-- enqueue with run_at.
--
-- SECURITY DEFINER with a pinned search_path: it runs at the caller's COMMIT, outside the
-- function that released the job, as the caller and with the caller's search_path.

CREATE OR REPLACE FUNCTION jobq__notify_released() RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF EXISTS (
        SELECT FROM jobq_jobs AS j
        WHERE j.id OPERATOR(pg_catalog.=) new.id
          AND j.status OPERATOR(pg_catalog.=) 'pending'
          AND j.available_at OPERATOR(pg_catalog.<=) v_now
    ) THEN
        PERFORM pg_catalog.pg_notify(jobq__channel(), new.queue);
    END IF;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION jobq__notify_released() IS
'Private. Trigger of jobq_jobs (jobq_jobs_released, deferred to the commit, for each job that a
completion released): notifies the job''s queue on this installation''s channel when the job is
still pending and available, i.e. when the releasing transaction did not claim it itself.';

REVOKE EXECUTE ON FUNCTION jobq__notify_released() FROM PUBLIC;
