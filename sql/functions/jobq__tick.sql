-- jobq__tick (private): jobq_tick with the current time as an argument, so that tests can move
-- the clock. jobq_tick calls it with now().
--
-- Due schedules (active, next_run_at <= at) are locked FOR UPDATE SKIP LOCKED, so concurrent
-- ticks share them out without a leader and never wait for each other; a row that another
-- tick has just advanced is read again after its lock (READ COMMITTED) and no longer matches.
-- Each due fire is enqueued by jobq__schedule_fire (jobq_enqueue with run_at = the fire time, the
-- idempotency key jobq:schedule:<name>:<fire time in UTC, ISO 8601>), so a fire that a
-- concurrent or repeated tick (in any isolation level, or from a tick whose advance was lost)
-- has enqueued already is not enqueued again. Then next_run_at becomes the first fire after
-- `at`, and last_fired_at and last_job_id name the latest fire and its job.
--
-- Catch-up: the fires due are those in [next_run_at, at]. `all` enqueues each of them (the
-- 1,000 most recent at most), `latest` the most recent, `skip` the most recent only if it is
-- on time, that is at most one minute old: a tick that comes later than that finds every fire
-- missed. One minute covers a Worker (it ticks every few seconds), pg_cron and a system timer
-- firing each minute (with systemd, AccuracySec=1s).
--
-- Each schedule's fires and its advance are one subtransaction: when an enqueue fails (the
-- payload is over a limit lowered since, a trigger refuses it...), that schedule's jobs and its
-- advance are rolled back together, a WARNING names it, and the other schedules still fire;
-- the failed one is tried again by the next tick.

CREATE OR REPLACE FUNCTION jobq__tick(at timestamptz)
RETURNS TABLE (schedule text, fire_at timestamptz, job_id uuid)
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    v_row record;
    v_masks bigint[];
    v_fires timestamptz[];
    v_fire timestamptz;
    v_ids uuid[];
    v_id uuid;
BEGIN
    IF at IS NULL OR NOT pg_catalog.isfinite(at) THEN
        RAISE EXCEPTION 'jobq_tick: at must be a finite time, got %', coalesce(at::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR v_row IN
        SELECT s.name, s.cron, s.timezone, s.job_type, s.payload, s.queue, s.priority,
               s.max_attempts, s.catch_up, s.next_run_at
        FROM jobq_schedules AS s
        WHERE NOT s.paused AND s.next_run_at <= jobq__tick.at
        ORDER BY s.next_run_at
        FOR UPDATE SKIP LOCKED
    LOOP
        BEGIN
            v_masks := jobq__cron_parse(v_row.cron);
            v_fires := jobq__cron_fires(
                v_masks, v_row.timezone, v_row.next_run_at, jobq__tick.at,
                CASE WHEN v_row.catch_up = 'all' THEN 1000 ELSE 1 END
            );
            IF v_row.catch_up = 'skip'
               AND v_fires[1] < jobq__tick.at - interval '1 minute' THEN
                v_fires := '{}';
            END IF;
            v_ids := '{}';
            FOREACH v_fire IN ARRAY v_fires LOOP
                v_id := jobq__schedule_fire(
                    v_row.name, v_row.job_type, v_row.payload, v_row.queue, v_row.priority,
                    v_row.max_attempts, v_fire
                );
                v_ids := pg_catalog.array_append(v_ids, v_id);
            END LOOP;
            -- The latest fire (fires come oldest first) and its job, for the schedules'
            -- listings; a tick that fires nothing keeps the previous ones.
            UPDATE jobq_schedules AS s
            SET next_run_at = jobq__cron_next(v_masks, v_row.timezone, jobq__tick.at),
                last_fired_at = coalesce(v_fires[pg_catalog.cardinality(v_fires)], s.last_fired_at),
                last_job_id = coalesce(v_ids[pg_catalog.cardinality(v_ids)], s.last_job_id)
            WHERE s.name = v_row.name;
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'jobq_tick: schedule % not fired: % (SQLSTATE %)',
                pg_catalog.quote_literal(v_row.name), SQLERRM, SQLSTATE;
            CONTINUE;
        END;
        FOR v_i IN 1..pg_catalog.cardinality(v_fires) LOOP
            schedule := v_row.name;
            fire_at := v_fires[v_i];
            job_id := v_ids[v_i];
            RETURN NEXT;
        END LOOP;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION jobq__tick(timestamptz) IS
'Private. jobq_tick as of the time `at` (tests move the clock with it).';

REVOKE EXECUTE ON FUNCTION jobq__tick(timestamptz) FROM PUBLIC;
