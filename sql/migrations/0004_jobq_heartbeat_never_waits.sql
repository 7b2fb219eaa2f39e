-- 0004_jobq_heartbeat_never_waits.sql — a heartbeat skips the rows that another transaction
-- has locked at that moment, so it never waits and can never be part of a deadlock.
--
-- Until now jobq_heartbeat locked each job it renewed as its UPDATE reached it, in whatever
-- order the plan visited the rows, and waited for any row another transaction had locked.
-- A worker renews every job it holds while, on another connection, it acknowledges some of
-- them (jobq_complete_many, jobq_fail, jobq_release). Two such statements over overlapping
-- rows lock them in different orders, and PostgreSQL aborts one of them with 40P01
-- (deadlock_timeout, one second, later). Measured: a heartbeat of 2,000 held jobs repeated
-- beside jobq_complete_many of the same jobs in batches of 50 met 34 deadlocks in three
-- rounds. Every client that heartbeats from its own thread or connection would have had to
-- serialise those calls itself.
--
-- Now the heartbeat first locks the held rows with FOR UPDATE SKIP LOCKED and renews those
-- it got. A row locked by someone else is not renewed this time and not counted:
--   * by an acknowledgement of the same worker: the claim is ending anyway;
--   * by a takeover in jobq_dequeue: the claim is ending anyway (it was stale);
--   * by any other transaction (an operator's UPDATE left open): the next heartbeat renews
--     it. Before, the whole heartbeat waited for that transaction, and none of the worker's
--     claims was renewed meanwhile.
-- Heartbeats run every third of the lock timeout (the Python Worker's default), so one
-- skipped beat leaves two thirds of the timeout. The signature, privileges and the other
-- functions are unchanged; the comment gains the skipped rows.

CREATE OR REPLACE FUNCTION jobq_heartbeat(worker_id text, job_ids uuid[]) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_renewed integer;
BEGIN
    -- The inner SELECT locks the rows that the worker holds and nobody else has locked, and
    -- is evaluated once (an InitPlan); the UPDATE then renews exactly those. Both find the
    -- rows by the primary key (no status test: see 0003_jobq_fence_by_primary_key).
    UPDATE jobq_jobs AS j
    SET locked_at = now()
    WHERE j.id = ANY (ARRAY(
        SELECT h.id
        FROM jobq_jobs AS h
        WHERE h.id = ANY (jobq_heartbeat.job_ids)
          AND h.locked_by = jobq_heartbeat.worker_id
        FOR UPDATE SKIP LOCKED
    ))
      AND j.locked_by = jobq_heartbeat.worker_id;
    GET DIAGNOSTICS v_renewed = ROW_COUNT;
    RETURN v_renewed;
END;
$$;

COMMENT ON FUNCTION jobq_heartbeat(text, uuid[]) IS
'Renews locked_at (to now()) of those job_ids that worker_id still holds, so that a long job
of a live worker is never taken over. Never waits: a held job whose row another transaction
has locked at that moment (an acknowledgement in flight, a takeover, an open UPDATE) is skipped
this time, so a heartbeat cannot deadlock with the same worker''s jobq_complete_many, jobq_fail
or jobq_release on another connection. Result: how many claims were renewed; a smaller number
than asked means some claims are lost or were being acknowledged at that moment.';
