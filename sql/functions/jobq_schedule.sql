-- jobq_schedule: creates or replaces a periodic job (a cron schedule) and returns its next
-- fire time. Every argument is checked here, so that a tick never meets a schedule it cannot
-- read: the cron expression (jobq__cron_parse, which also must fire within ten years), the
-- time zone (a name of the IANA database as pg_timezone_names lists it: abbreviations such as
-- 'CEST' and POSIX strings such as 'UTC+3', which AT TIME ZONE would accept, are refused),
-- the job's arguments with jobq_enqueue's words, and the payload limit.
--
-- The zone is looked up as the TimeZone setting looks it up: the setting takes a zone file's
-- name in any case and shows it in the file's own, so a name shown exactly as given is a zone
-- file's, and the setting refuses the files that pg_timezone_names leaves out (leap-second
-- zones). A POSIX string is shown as given too, in upper case; it always holds a digit, so a
-- name with a digit (Etc/GMT+3, EST5EDT) is looked for in pg_timezone_names, which reads
-- every zone file: the setting reads one, once per session.
--
-- Replacing keeps next_run_at when the timing (cron and timezone) is unchanged and the
-- schedule stays active, so that a fire that is due but not yet ticked still fires (with the
-- new job arguments) and missed fires still follow the catch-up policy. A new timing, or a
-- resume (paused true -> false), starts from the next fire after now: resuming never bursts.
--
-- Concurrency: INSERT ... ON CONFLICT DO UPDATE takes the row lock that a tick takes with FOR
-- UPDATE SKIP LOCKED. A tick that holds it makes this call wait until it commits (the new
-- definition then applies from the next tick on); a tick that comes while this call holds it
-- passes the schedule over, and the next tick after the commit uses the new definition.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_schedule(
    name text,
    cron text,
    job_type text,
    payload jsonb DEFAULT '{}',
    timezone text DEFAULT 'UTC',
    queue text DEFAULT 'default',
    priority integer DEFAULT 0,
    max_attempts integer DEFAULT 5,
    catch_up text DEFAULT 'latest',
    paused boolean DEFAULT FALSE
) RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    v_error text;
    v_masks bigint[];
    v_next timestamptz;
    v_size integer;
    v_limit integer;
    v_zone_known boolean := FALSE;
    v_session_zone CONSTANT text := pg_catalog.current_setting('timezone');
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF jobq__blank(jobq_schedule.name) THEN
        RAISE EXCEPTION 'jobq_schedule: name must be a non-blank string'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_schedule.name) > 200 THEN
        RAISE EXCEPTION 'jobq_schedule: name is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_schedule.name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- cron is parsed again on every tick, and timezone looked up: both are short.
    IF pg_catalog.length(jobq_schedule.cron) > 1000 THEN
        RAISE EXCEPTION 'jobq_schedule: cron is % characters long, at most 1000 are allowed',
            pg_catalog.length(jobq_schedule.cron)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_schedule.timezone) > 100 THEN
        RAISE EXCEPTION 'jobq_schedule: timezone is % characters long, at most 100 are allowed',
            pg_catalog.length(jobq_schedule.timezone)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_schedule.catch_up) > 100 THEN
        RAISE EXCEPTION 'jobq_schedule: catch_up must be skip, latest or all, got a string of % '
            'characters', pg_catalog.length(jobq_schedule.catch_up)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_error := jobq__job_argument_problem(
        jobq_schedule.job_type, jobq_schedule.queue, NULL::text,
        jobq_schedule.max_attempts, jobq_schedule.priority
    );
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_schedule: %', v_error
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_schedule.payload IS NULL THEN
        RAISE EXCEPTION 'jobq_schedule: payload must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass ''{}'' for a job without arguments.';
    END IF;
    IF pg_catalog.jsonb_typeof(jobq_schedule.payload) <> 'object' THEN
        RAISE EXCEPTION 'jobq_schedule: payload must be a JSON object, got a JSON %',
            pg_catalog.jsonb_typeof(jobq_schedule.payload)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_size := pg_catalog.octet_length(jobq_schedule.payload::text);  -- as jobq_enqueue
    SELECT s.max_payload_bytes INTO v_limit FROM jobq_settings AS s;
    IF v_size > v_limit THEN
        RAISE EXCEPTION 'jobq_schedule: payload is % bytes, the limit is % bytes', v_size, v_limit
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    IF jobq_schedule.catch_up IS NULL
       OR jobq_schedule.catch_up NOT IN ('skip', 'latest', 'all') THEN
        RAISE EXCEPTION 'jobq_schedule: catch_up must be skip, latest or all, got %',
            coalesce(pg_catalog.quote_literal(jobq_schedule.catch_up), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_schedule.paused IS NULL THEN
        RAISE EXCEPTION 'jobq_schedule: paused must be true or false, got NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_schedule.timezone IS NOT NULL THEN
        BEGIN
            PERFORM pg_catalog.set_config('timezone', jobq_schedule.timezone, TRUE);
            v_zone_known := pg_catalog.current_setting('timezone')
                OPERATOR(pg_catalog.=) jobq_schedule.timezone;
        EXCEPTION WHEN invalid_parameter_value THEN
            v_zone_known := FALSE;
        END;
        -- A local setting would outlast the call: the function's SET clause undoes only its
        -- own (search_path) when it returns.
        PERFORM pg_catalog.set_config('timezone', v_session_zone, TRUE);
    END IF;
    IF v_zone_known AND jobq_schedule.timezone OPERATOR(pg_catalog.~) '[0-9]' THEN
        v_zone_known := EXISTS (
            SELECT FROM pg_catalog.pg_timezone_names AS z
            WHERE z.name OPERATOR(pg_catalog.=) jobq_schedule.timezone
        );
    END IF;
    IF NOT v_zone_known THEN
        RAISE EXCEPTION 'jobq_schedule: timezone % is not a known IANA time zone',
            coalesce(pg_catalog.quote_literal(jobq_schedule.timezone), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A name such as ''UTC'', ''Europe/London'' or ''America/New_York''.';
    END IF;
    v_masks := jobq__cron_parse(jobq_schedule.cron);
    v_next := jobq__cron_next(v_masks, jobq_schedule.timezone, v_now);
    IF v_next IS NULL THEN
        RAISE EXCEPTION 'jobq_schedule: cron % never fires (no match within ten years)',
            pg_catalog.quote_literal(jobq_schedule.cron)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    INSERT INTO jobq_schedules AS s (
        name, cron, timezone, job_type, payload, queue, priority, max_attempts, catch_up,
        paused, next_run_at
    )
    VALUES (
        jobq_schedule.name, jobq_schedule.cron, jobq_schedule.timezone, jobq_schedule.job_type,
        jobq_schedule.payload, jobq_schedule.queue, jobq_schedule.priority,
        jobq_schedule.max_attempts, jobq_schedule.catch_up, jobq_schedule.paused, v_next
    )
    ON CONFLICT (name) DO UPDATE SET
        cron = excluded.cron,
        timezone = excluded.timezone,
        job_type = excluded.job_type,
        payload = excluded.payload,
        queue = excluded.queue,
        priority = excluded.priority,
        max_attempts = excluded.max_attempts,
        catch_up = excluded.catch_up,
        paused = excluded.paused,
        next_run_at = CASE
            WHEN s.cron = excluded.cron AND s.timezone = excluded.timezone
                 AND NOT s.paused AND NOT excluded.paused
                THEN s.next_run_at
            ELSE excluded.next_run_at
        END,
        updated_at = v_now
    RETURNING s.next_run_at INTO v_next;
    RETURN v_next;
END;
$$;

COMMENT ON FUNCTION jobq_schedule(
    text, text, text, jsonb, text, text, integer, integer, text, boolean
) IS
'Creates or replaces the schedule `name` and returns its next fire time.
Arguments: name (1-200 chars), cron (at most 1000 chars; five fields: minute hour
day-of-month month day-of-week, with *, lists, ranges, steps, month and weekday names; or
@hourly, @daily, @weekly, @monthly, @yearly), job_type, payload, queue, priority, max_attempts
(those of each job a fire enqueues, checked as jobq_enqueue does: job_type and queue 1-200
chars, payload at most max_payload_bytes bytes in its text form), timezone (IANA name, at most
100 chars; the cron fields are wall-clock times there: a time skipped by daylight saving fires
at the end of the gap, a repeated one once), catch_up
(skip, latest or all: what a tick does with fires nobody ticked in time), paused (fires nothing
while true).
Result: next_run_at. Replacing keeps it when cron and timezone are unchanged and the schedule
stays active; otherwise (and on resume) it is the next fire after now.
Errors: 22023 bad name/cron (naming the field)/timezone/catch_up/paused/job_type/queue/
priority/max_attempts, or a cron that never fires; 22004 NULL payload; 54000 payload too large.
Concurrency: waits for a tick that holds the schedule; a tick running meanwhile passes it over.';

REVOKE EXECUTE ON FUNCTION jobq_schedule(
    text, text, text, jsonb, text, text, integer, integer, text, boolean
) FROM PUBLIC;
