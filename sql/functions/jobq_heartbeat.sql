-- jobq_heartbeat: renews the claims a worker still holds, so that a long job of a live worker
-- is never taken over. A renewal moves locked_until by the claim's own lock length
-- (locked_until - locked_at, set by the claim from its lock_timeout), so a claim keeps the lock
-- length it was made with whoever renews it, and no heartbeat needs to know it.
--
-- It never waits for a row lock, so it can never be part of a deadlock. A worker renews every
-- job it holds while, on another connection, it acknowledges some of them
-- (jobq_complete_many, jobq_fail, jobq_release); two such statements over overlapping rows
-- that lock them as the plan reaches them lock them in different orders, and PostgreSQL aborts
-- one with 40P01 a deadlock_timeout later; beside batched acknowledgements this is frequent,
-- not rare (docs/decisions/0005-heartbeat-never-waits.md). So the heartbeat first locks the
-- held rows with FOR UPDATE SKIP LOCKED and renews those it got. A row locked by someone
-- else is not renewed this time and not counted:
--   * by an acknowledgement of the same worker: the claim is ending anyway;
--   * by a takeover in jobq_dequeue: the claim is ending anyway (it was stale);
--   * by any other transaction (an operator's UPDATE left open): the next heartbeat renews
--     it, and meanwhile the worker's other claims are renewed.
-- Heartbeats run every third of the lock timeout (the Python Worker's default), so one skipped
-- beat leaves two thirds of the timeout.
--
-- Both statements find the rows by the primary key and test no status: see the note on
-- jobq_jobs_claim_check in sql/migrations/.
--
-- Cancel requests: the result stays a count, so a worker learns of the cancel requests for the
-- jobs it holds by calling jobq_cancel_requested with the same ids in the same statement
-- (SELECT jobq_heartbeat(w, ids), ARRAY(SELECT jobq_cancel_requested(ids))): no extra round
-- trip, and never later than one heartbeat interval, notification or not.
--
-- SET enable_seqscan = off (and jit = off, as everywhere sequential scans are off: a plan made
-- under it may be costed past jit_above_cost): statistics gathered on a drained queue (finished
-- jobs leave jobq_jobs) say the table is empty, and a generic plan made on them (kept for the
-- session) is a sequential scan, which reads the whole table on every call once a backlog arrives
-- (docs/decisions/0003-planner-settings-of-hot-functions.md). Without it, the primary key.
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_heartbeat(worker_id text, job_ids uuid[]) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_renewed integer;
    v_error text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__worker_id_error(jobq_heartbeat.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_heartbeat: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The inner SELECT locks the rows that the worker holds and nobody else has locked, and
    -- is evaluated once (an InitPlan); the UPDATE then renews exactly those. Both find the
    -- rows by the primary key (no status test: locked_by implies processing).
    UPDATE jobq_jobs AS j
    SET
        locked_at = v_now,
        -- a claim written without locked_until (by hand) gets jobq_dequeue's default length
        locked_until = v_now + coalesce(j.locked_until - j.locked_at, interval '5 minutes')
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
'Renews the claims of the jobs that the worker still holds (locked_at to now, locked_until to
now + the claim''s own lock length), so that a long job of a
live worker is never taken over. Never waits: a held job whose row another transaction has
locked at that moment (an acknowledgement in flight, a takeover, an open UPDATE) is skipped
this time. A worker learns of cancel requests in the same statement with
jobq_cancel_requested(job_ids).
Arguments: worker_id (the worker that claimed them: non-blank, at most 200 characters),
job_ids (the jobs).
Result: how many claims were renewed; a smaller number than asked means some claims are lost
or were being acknowledged at that moment.
Errors: 22023 worker_id NULL, blank or longer than 200 characters.
Concurrency: it cannot deadlock with the same worker''s jobq_complete_many, jobq_fail_many or
jobq_release on another connection (it skips the rows they hold).
Runs with enable_seqscan = off and jit = off (for this function only; the caller keeps its own
settings):
each job is found by its primary key whatever the statistics say.';

REVOKE EXECUTE ON FUNCTION jobq_heartbeat(text, uuid[]) FROM PUBLIC;
