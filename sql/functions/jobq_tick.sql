-- jobq_tick: fires the due schedules now. The work is jobq__tick's (which takes the time as
-- an argument, for tests); this is the public face with the database's clock. With nothing
-- due it is one look-up in jobq_schedules_due_idx, so every Worker may call it every few
-- seconds, and pg_cron or a system timer may call it too: ticks need no leader. Each tick
-- also runs jobq_maintain_history (partitions of the finished jobs made ahead and dropped) and
-- jobq_maintain_indexes (a bloated index of jobq_jobs rebuilt), which with nothing to do read
-- the catalogue only.
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_tick()
RETURNS TABLE (schedule text, fire_at timestamptz, job_id uuid)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    RETURN QUERY
    SELECT t.schedule, t.fire_at, t.job_id FROM jobq__tick(pg_catalog.now()) AS t;
    -- Then the history's partitions: last, so that the locks its DDL may take are held for
    -- the shortest time (until the commit that follows); its report is left to a direct call.
    -- Then, unless a partition was dropped (its locks held until the commit, which a rebuild
    -- would make the completions wait longer for), at most one index rebuilt.
    IF NOT EXISTS (
        SELECT FROM jobq_maintain_history('100 milliseconds'::interval) AS m
        WHERE m.action = 'dropped'
    ) THEN
        PERFORM jobq_maintain_indexes('50 milliseconds'::interval, 4::real);
    END IF;
END;
$$;

COMMENT ON FUNCTION jobq_tick() IS
'Enqueues one job for each fire of each active schedule that is due by the database''s clock,
and advances its next_run_at, in the caller''s transaction. Each job has run_at = its fire
time and the idempotency key jobq:schedule:<name>:<fire time in UTC, ISO 8601, e.g.
2026-03-08T07:00:00Z>. Fires nobody ticked in time follow the schedule''s catch_up: skip
(none; a fire more than a minute old is missed), latest (the most recent), all (each, the
1,000 most recent at most). Then runs jobq_maintain_history() (partitions of the finished
jobs made ahead and dropped per jobq_retention, each step waiting at most 100 ms for its lock)
and, unless it dropped a partition, jobq_maintain_indexes() (the most bloated index of jobq_jobs
rebuilt, its lock waited for at most 50 ms).
Arguments: none.
Result: one row per fire enqueued: schedule, fire_at, job_id (the existing job when another
tick enqueued that fire already).
Errors: none of its own; a schedule whose enqueue fails is left due (its jobs and its advance
rolled back together) with a WARNING naming it, and the others still fire.
Concurrency: any number of sessions may tick at once; due schedules are locked FOR UPDATE SKIP
LOCKED and each fire is enqueued exactly once.';

REVOKE EXECUTE ON FUNCTION jobq_tick() FROM PUBLIC;
