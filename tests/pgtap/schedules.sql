-- Schedules: the cron parser (each field form, names, @ shortcuts, the
-- day-of-month / day-of-week rule, bad input with 22023 naming the field), wall-clock times
-- across daylight-saving changes, jobq_schedule's validation and replace rules, and jobq_tick's
-- catch-up policies, pause and resume, with the clock moved through the private jobq__tick.
-- Concurrency (32 ticking sessions, a definition racing a tick) is in
-- tests/python/test_schedules.py.
BEGIN;
SELECT plan(78);

DELETE FROM jobq_jobs;
DELETE FROM jobq_schedules;
SET LOCAL timezone = 'UTC';

-- The fires of an expression between two instants (both included), as text in UTC.
CREATE FUNCTION pg_temp.fires(cron text, tz text, after timestamptz, n integer)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    v_masks bigint[] := jobq__cron_parse(cron);
    v_out text[] := '{}';
    v_at timestamptz := after;
BEGIN
    FOR i IN 1..n LOOP
        v_at := jobq__cron_next(v_masks, tz, v_at);
        v_out := v_out || to_char(v_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI');
    END LOOP;
    RETURN v_out;
END;
$$;

------------------------------------------------------------------------------------------
-- Parser: field forms
------------------------------------------------------------------------------------------

SELECT is(pg_temp.fires('* * * * *', 'UTC', '2026-01-01 00:00Z', 2),
    ARRAY['2026-01-01 00:01', '2026-01-01 00:02'], 'every minute, strictly after the instant');
SELECT is(pg_temp.fires('5,10 * * * *', 'UTC', '2026-01-01 00:05Z', 3),
    ARRAY['2026-01-01 00:10', '2026-01-01 01:05', '2026-01-01 01:10'], 'a list of minutes');
SELECT is(pg_temp.fires('58-59 1-2 * * *', 'UTC', '2026-01-01 00:00Z', 3),
    ARRAY['2026-01-01 01:58', '2026-01-01 01:59', '2026-01-01 02:58'], 'ranges of minutes and hours');
SELECT is(pg_temp.fires('*/20 * * * *', 'UTC', '2026-01-01 00:00Z', 3),
    ARRAY['2026-01-01 00:20', '2026-01-01 00:40', '2026-01-01 01:00'], 'a step over *');
SELECT is(pg_temp.fires('10-50/20 * * * *', 'UTC', '2026-01-01 00:00Z', 3),
    ARRAY['2026-01-01 00:10', '2026-01-01 00:30', '2026-01-01 00:50'], 'a step over a range');
SELECT is(pg_temp.fires('45/10 * * * *', 'UTC', '2026-01-01 00:00Z', 3),
    ARRAY['2026-01-01 00:45', '2026-01-01 00:55', '2026-01-01 01:45'], 'N/S: from N to the end of the field');
SELECT is(pg_temp.fires('0 0 1 jan,Jul *', 'UTC', '2026-01-01 00:00Z', 2),
    ARRAY['2026-07-01 00:00', '2027-01-01 00:00'], 'month names, any case');
SELECT is(pg_temp.fires('0 0 * feb-mar *', 'UTC', '2026-03-31 00:00Z', 1),
    ARRAY['2027-02-01 00:00'], 'a range of month names');
SELECT is(pg_temp.fires('0 12 * * mon-fri', 'UTC', '2026-03-06 13:00Z', 2),
    ARRAY['2026-03-09 12:00', '2026-03-10 12:00'], 'weekday names: Friday afternoon to Monday');
SELECT is(pg_temp.fires('0 0 * * 7', 'UTC', '2026-03-01 00:00Z', 1),
    pg_temp.fires('0 0 * * 0', 'UTC', '2026-03-01 00:00Z', 1), 'day-of-week 7 is Sunday, like 0');
SELECT is(pg_temp.fires('0 0 * * sun', 'UTC', '2026-03-01 00:00Z', 1),
    ARRAY['2026-03-08 00:00'], 'sun: the next Sunday');
SELECT is(pg_temp.fires('0 0 29 2 *', 'UTC', '2026-01-01 00:00Z', 1),
    ARRAY['2028-02-29 00:00'], 'the 29th of February waits for a leap year');

------------------------------------------------------------------------------------------
-- Parser: @ shortcuts and the day rule
------------------------------------------------------------------------------------------

SELECT is(jobq__cron_parse('@hourly'), jobq__cron_parse('0 * * * *'), '@hourly');
SELECT is(jobq__cron_parse('@daily'), jobq__cron_parse('0 0 * * *'), '@daily');
SELECT is(jobq__cron_parse('@weekly'), jobq__cron_parse('0 0 * * 0'), '@weekly');
SELECT is(jobq__cron_parse('@monthly'), jobq__cron_parse('0 0 1 * *'), '@monthly');
SELECT is(jobq__cron_parse('@YEARLY'), jobq__cron_parse('0 0 1 1 *'), '@yearly, any case');
-- 2026-03-13 is a Friday: both day fields restricted, either matches.
SELECT is(pg_temp.fires('0 0 13 * fri', 'UTC', '2026-03-01 00:00Z', 4),
    ARRAY['2026-03-06 00:00', '2026-03-13 00:00', '2026-03-20 00:00', '2026-03-27 00:00'],
    'day-of-month and day-of-week both restricted: either matches (the 13th or a Friday)');
SELECT is(pg_temp.fires('0 0 */10 * fri', 'UTC', '2026-03-01 00:00Z', 2),
    ARRAY['2026-05-01 00:00', '2026-07-31 00:00'],
    'a day field starting with *: both must match (day 1, 11, 21, 31 that is a Friday)');
SELECT is(pg_temp.fires('0 0 1 * *', 'UTC', '2026-03-02 00:00Z', 1),
    ARRAY['2026-04-01 00:00'], 'only day-of-month restricted');

------------------------------------------------------------------------------------------
-- Parser: bad input, 22023 naming the field
------------------------------------------------------------------------------------------

SELECT throws_ok($$SELECT jobq__cron_parse('* * * *')$$, '22023',
    'jobq_schedule: cron must have 5 fields, got 4 in ''* * * *''', 'four fields');
SELECT throws_ok($$SELECT jobq__cron_parse('  ')$$, '22023',
    'jobq_schedule: cron must be a non-blank cron expression', 'blank');
SELECT throws_ok($$SELECT jobq__cron_parse('60 * * * *')$$, '22023',
    'jobq_schedule: cron minute field ''60'' is out of range 0-59', 'minute 60');
SELECT throws_ok($$SELECT jobq__cron_parse('0 24 * * *')$$, '22023',
    'jobq_schedule: cron hour field ''24'' is out of range 0-23', 'hour 24');
SELECT throws_ok($$SELECT jobq__cron_parse('0 0 0 * *')$$, '22023',
    'jobq_schedule: cron day-of-month field ''0'' is out of range 1-31', 'day 0');
SELECT throws_ok($$SELECT jobq__cron_parse('0 0 * 13 *')$$, '22023',
    'jobq_schedule: cron month field ''13'' is out of range 1-12', 'month 13');
SELECT throws_ok($$SELECT jobq__cron_parse('0 0 * * 8')$$, '22023',
    'jobq_schedule: cron day-of-week field ''8'' is out of range 0-7', 'weekday 8');
SELECT throws_ok($$SELECT jobq__cron_parse('0 0 * foo *')$$, '22023',
    'jobq_schedule: cron month field has ''foo'' where a month (1-12 or jan-dec) is expected',
    'an unknown month name');
SELECT throws_ok($$SELECT jobq__cron_parse('0 0 * * jan')$$, '22023',
    'jobq_schedule: cron day-of-week field has ''jan'' where a weekday (0-7 or sun-sat) is expected',
    'a month name in the weekday field');
SELECT throws_ok($$SELECT jobq__cron_parse('*/0 * * * *')$$, '22023',
    'jobq_schedule: cron minute field has a step of 0 in ''*/0''', 'step 0');
SELECT throws_ok($$SELECT jobq__cron_parse('*/x * * * *')$$, '22023',
    'jobq_schedule: cron minute field has a bad step in ''*/x''', 'a step that is not a number');
SELECT throws_ok($$SELECT jobq__cron_parse('30-10 * * * *')$$, '22023',
    'jobq_schedule: cron minute field range ''30-10'' goes backwards', 'a backwards range');
SELECT throws_ok($$SELECT jobq__cron_parse('1,,2 * * * *')$$, '22023',
    'jobq_schedule: cron minute field has a bad range ''''', 'an empty list item');
SELECT throws_ok($$SELECT jobq__cron_parse('@reboot')$$, '22023',
    'jobq_schedule: cron shortcut ''@reboot'' is not supported', '@reboot');

------------------------------------------------------------------------------------------
-- Daylight saving: skipped times at the end of the gap, repeated ones once
------------------------------------------------------------------------------------------

SELECT is(pg_temp.fires('30 2 * * *', 'America/New_York', '2026-03-07 00:00Z', 3),
    ARRAY['2026-03-07 07:30', '2026-03-08 07:00', '2026-03-09 06:30'],
    'New York, 2026-03-08: 02:30 does not exist and fires at 03:00 EDT (07:00 UTC)');
SELECT is(pg_temp.fires('*/30 * * * *', 'America/New_York', '2026-03-08 05:45Z', 4),
    ARRAY['2026-03-08 06:00', '2026-03-08 06:30', '2026-03-08 07:00', '2026-03-08 07:30'],
    'New York, 2026-03-08, every 30 minutes: 02:00 and 02:30 are one fire at 03:00 EDT');
SELECT is(pg_temp.fires('30 2 * * *', 'America/New_York', '2026-10-31 00:00Z', 3),
    ARRAY['2026-10-31 06:30', '2026-11-01 07:30', '2026-11-02 07:30'],
    'New York, 2026-11-01: 02:30 (after the repeated hour) fires once, at 02:30 EST');
SELECT is(pg_temp.fires('30 1 * * *', 'America/New_York', '2026-10-31 12:00Z', 2),
    ARRAY['2026-11-01 05:30', '2026-11-02 06:30'],
    'New York, 2026-11-01: the repeated 01:30 fires once, at its first occurrence (EDT)');
SELECT is(pg_temp.fires('*/30 * * * *', 'America/New_York', '2026-11-01 04:45Z', 4),
    ARRAY['2026-11-01 05:00', '2026-11-01 05:30', '2026-11-01 07:00', '2026-11-01 07:30'],
    'New York, 2026-11-01, every 30 minutes: 01:00 and 01:30 once each, then 02:00 EST');
SELECT is(pg_temp.fires('*/30 * * * *', 'America/New_York', '2026-11-01 06:10Z', 1),
    ARRAY['2026-11-01 07:00'],
    'from inside the second 01:00-02:00 the next fire is 02:00 EST, not a repeat');
SELECT is(pg_temp.fires('30 1 * * *', 'Europe/London', '2026-03-28 12:00Z', 2),
    ARRAY['2026-03-29 01:00', '2026-03-30 00:30'],
    'London, 2026-03-29: 01:30 does not exist and fires at 02:00 BST (01:00 UTC)');
SELECT is(pg_temp.fires('30 1 * * *', 'Europe/London', '2026-10-24 12:00Z', 2),
    ARRAY['2026-10-25 00:30', '2026-10-26 01:30'],
    'London, 2026-10-25: the repeated 01:30 fires once (BST)');
SELECT is(pg_temp.fires('0 9 * * *', 'Asia/Kathmandu', '2026-01-01 00:00Z', 1),
    ARRAY['2026-01-01 03:15'], 'a zone at +05:45');

------------------------------------------------------------------------------------------
-- jobq_schedule: validation (22023 and friends), nothing changed
------------------------------------------------------------------------------------------

SELECT throws_ok($$SELECT jobq_schedule('s', '61 * * * *', 't')$$, '22023',
    'jobq_schedule: cron minute field ''61'' is out of range 0-59', 'a bad cron');
SELECT throws_ok($$SELECT jobq_schedule('s', '0 0 30 2 *', 't')$$, '22023',
    'jobq_schedule: cron ''0 0 30 2 *'' never fires (no match within ten years)', 'a cron that never fires');
SELECT throws_ok($$SELECT jobq_schedule('s', '* * * * *', 't', timezone => 'Mars/Olympus')$$, '22023',
    'jobq_schedule: timezone ''Mars/Olympus'' is not a known IANA time zone', 'an unknown zone');
SELECT throws_ok($$SELECT jobq_schedule('s', '* * * * *', 't', timezone => 'UTC+3')$$, '22023',
    'jobq_schedule: timezone ''UTC+3'' is not a known IANA time zone', 'a POSIX zone string');
SELECT throws_ok($$SELECT jobq_schedule('s', '* * * * *', 't', catch_up => 'some')$$, '22023',
    'jobq_schedule: catch_up must be skip, latest or all, got ''some''', 'a bad catch_up');
SELECT throws_ok($$SELECT jobq_schedule(' ', '* * * * *', 't')$$, '22023',
    'jobq_schedule: name must be a non-blank string', 'a blank name');
SELECT throws_ok($$SELECT jobq_schedule('s', '* * * * *', '')$$, '22023',
    'jobq_schedule: job_type must be a non-blank string', 'a blank job_type');
SELECT throws_ok($$SELECT jobq_schedule('s', '* * * * *', 't', max_attempts => 0)$$, '22023',
    'jobq_schedule: max_attempts must be between 1 and 1000, got 0', 'max_attempts 0');
SELECT throws_ok($$SELECT jobq_schedule('s', '* * * * *', 't', payload => NULL)$$, '22004',
    'jobq_schedule: payload must not be NULL', 'a NULL payload');
SELECT throws_ok($$SELECT jobq_schedule('s', '* * * * *', 't', payload => '[1]')$$, '22023',
    'jobq_schedule: payload must be a JSON object, got a JSON array', 'an array payload');
SELECT is_empty($$SELECT * FROM jobq_schedules$$, 'no bad call created anything');

------------------------------------------------------------------------------------------
-- jobq_schedule: create, replace; jobq_tick with a moved clock
------------------------------------------------------------------------------------------

SELECT is(jobq_schedule('hourly', '@hourly', 'report', '{"k": 1}', catch_up => 'skip'),
    date_trunc('hour', now()) + interval '1 hour', 'create: returns the next fire');
SELECT is_empty($$SELECT * FROM jobq_tick()$$, 'nothing due now: the tick enqueues nothing');

-- Three hours and ten minutes without a tick, for each policy.
SELECT jobq_schedule('latest', '@hourly', 'report', catch_up => 'latest');
SELECT jobq_schedule('all', '@hourly', 'report', catch_up => 'all');
SELECT is(
    (SELECT array_agg(schedule || ' ' || to_char(fire_at - date_trunc('hour', now()), 'HH24:MI')
                      ORDER BY schedule, fire_at)
     FROM jobq__tick(date_trunc('hour', now()) + interval '3 hours 10 minutes')),
    ARRAY['all 01:00', 'all 02:00', 'all 03:00', 'latest 03:00'],
    'three hours missed: skip enqueues none, latest the most recent, all each of them');
SELECT is(
    (SELECT array_agg(j.idempotency_key || ' ' || (j.available_at = s.fire_at)::text
                      ORDER BY j.idempotency_key)
     FROM jobq_jobs AS j
     JOIN (VALUES (date_trunc('hour', now()) + interval '3 hours')) AS s (fire_at)
       ON j.idempotency_key = 'jobq:schedule:latest:'
          || to_char(s.fire_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
    ARRAY['jobq:schedule:latest:' || to_char((date_trunc('hour', now()) + interval '3 hours') AT TIME ZONE 'UTC',
          'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' true'],
    'a fire''s job: the idempotency key names the schedule and the fire in UTC; run_at is the fire time');
SELECT is(
    (SELECT array_agg(name || ' ' || to_char(next_run_at - date_trunc('hour', now()), 'HH24:MI') ORDER BY name)
     FROM jobq_schedules),
    ARRAY['all 04:00', 'hourly 04:00', 'latest 04:00'],
    'every policy advances next_run_at to the first fire after the tick');
SELECT is(
    (SELECT array_agg(s.name || ' '
                      || coalesce(to_char(s.last_fired_at - date_trunc('hour', now()), 'HH24:MI'), '-')
                      || ' ' || (s.last_job_id IS NOT DISTINCT FROM (
                          SELECT j.id FROM jobq_jobs AS j
                          WHERE j.idempotency_key = 'jobq:schedule:' || s.name || ':'
                                || to_char(s.last_fired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                      ))::text ORDER BY s.name)
     FROM jobq_schedules AS s),
    ARRAY['all 03:00 true', 'hourly - true', 'latest 03:00 true'],
    'last_fired_at and last_job_id: the latest fire and the job it enqueued; none for a schedule that fired nothing');
SELECT ok(
    (SELECT f.last_job_id IS NOT NULL AND f.last_job_id = t.last_job_id AND f.last_fired_at = t.last_fired_at
     FROM jobq_schedules() AS f JOIN jobq_schedules AS t USING (name) WHERE f.name = 'latest'),
    'jobq_schedules() lists them');
SELECT is_empty(
    $$SELECT * FROM jobq__tick(date_trunc('hour', now()) + interval '3 hours 20 minutes')$$,
    'a second tick finds nothing due');
SELECT is((SELECT to_char(last_fired_at - date_trunc('hour', now()), 'HH24:MI') FROM jobq_schedules
           WHERE name = 'all'), '03:00', 'a tick that fires nothing keeps the last fire');
SELECT is(
    (SELECT count(*)::int FROM jobq__tick(date_trunc('hour', now()) + interval '4 hours 30 seconds')
     WHERE schedule = 'hourly'),
    1, 'skip: a fire at most a minute old is on time and fires');
SELECT is(
    (SELECT count(*)::int FROM jobq__tick(date_trunc('hour', now()) + interval '2000 hours 30 minutes')
     WHERE schedule = 'all'),
    1000, 'all: at most the 1,000 most recent fires');

-- Replace: same timing keeps a due fire; pause fires nothing; resume does not burst.
SELECT jobq_schedule('all', '@hourly', 'report', '{"v": 2}', catch_up => 'all', paused => true);
SELECT is_empty(
    $$SELECT * FROM jobq__tick(date_trunc('hour', now()) + interval '3000 hours') WHERE schedule = 'all'$$,
    'a paused schedule fires nothing');
SELECT is(jobq_schedule('all', '@hourly', 'report', '{"v": 2}', catch_up => 'all'),
    date_trunc('hour', now()) + interval '1 hour',
    'resume: next_run_at is the next fire after now, so no burst of the paused hours');
SELECT is(jobq_schedule('latest', '@hourly', 'report', '{"v": 3}', catch_up => 'latest'),
    (SELECT next_run_at FROM jobq_schedules WHERE name = 'latest'),
    'a replace with the same timing keeps next_run_at');
SELECT is(jobq_schedule('latest', '*/30 * * * *', 'report', '{"v": 3}'),
    date_trunc('hour', now()) + CASE WHEN extract(minute FROM now()) < 30
        THEN interval '30 minutes' ELSE interval '1 hour' END,
    'a new timing starts from the next fire after now');
SELECT ok(jobq_unschedule('latest'), 'unschedule: true for a schedule that exists');
SELECT ok(NOT jobq_unschedule('latest'), 'unschedule: false when it is gone');

-- jobq_schedule_run_now: a fire now, as a tick's (its key, last_fired_at, last_job_id)
SELECT jobq_schedule('manual', '0 3 * * *', 'report', '{"k": 1}', queue => 'reports', priority => 2,
                     paused => true) AS manual_next \gset
SELECT jobq_schedule_run_now('manual') AS ran \gset
SELECT results_eq(
    $$SELECT job_type, queue, priority, payload, status, idempotency_key, available_at <= now()
      FROM jobq_all_jobs WHERE id = (SELECT last_job_id FROM jobq_schedules WHERE name = 'manual')$$,
    $$SELECT 'report'::text, 'reports'::text, 2, '{"k": 1}'::jsonb, 'pending'::text,
             'jobq:schedule:manual:' || to_char(date_trunc('second', now()) AT TIME ZONE 'UTC',
                                                'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
             true$$,
    'run now: the schedule''s job, available now, with the key of a fire at this second, is its last job'
);
SELECT is((SELECT last_job_id FROM jobq_schedules WHERE name = 'manual'), :'ran'::uuid,
          '... the id returned');
SELECT is((SELECT (last_fired_at, next_run_at, paused)::text FROM jobq_schedules WHERE name = 'manual'),
          (SELECT (date_trunc('second', now()), :'manual_next'::timestamptz, true)::text),
          '... last_fired_at is the fire; next_run_at and paused are unchanged');
SELECT is(jobq_schedule_run_now('manual'), :'ran'::uuid,
          'a second run within the same second is the same fire: the same job');
SELECT is(jobq_schedule_run_now('nope'), NULL, 'no such schedule: NULL');
SELECT throws_ok($$SELECT jobq_schedule_run_now(NULL)$$, '22023',
    'jobq_schedule_run_now: name must not be NULL', 'a NULL name is 22023');
SELECT throws_ok(format('SELECT jobq_schedule_run_now(%L)', repeat('s', 201)), '22023',
    'jobq_schedule_run_now: name is 201 characters long, at most 200 are allowed',
    'a name of 201 characters is 22023, naming it');

SELECT * FROM finish();
ROLLBACK;
