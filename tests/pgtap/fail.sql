-- jobq_fail(job_id, worker_id, error, retry, backoff, attempt) RETURNS text
--
-- Only while worker_id holds the claim (of that attempt, when given),
-- else NULL and nothing changes. Records last_error and appends {attempt, at, worker, error}
-- to errors. Attempts left and retry: pending, available after attempts × backoff
-- (arithmetic, capped at 365 days); no attempts left: dead_letter; retry => false: failed.
-- now() is constant inside this transaction, so the backoff is compared exactly.
BEGIN;
SELECT plan(45);

DELETE FROM jobq_jobs;

------------------------------------------------------------------------------------------
-- Bad input
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('f') AS bad \gset
SELECT id AS claimed_bad FROM jobq_dequeue('w1') \gset
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT throws_ok(format($$SELECT jobq_fail(%L, 'w1', 'e', retry => NULL)$$, :'bad'), '22023',
    'jobq_fail: retry must be true or false, not NULL', 'retry NULL: 22023');
SELECT throws_ok(format($$SELECT jobq_fail(%L, 'w1', 'e', backoff => NULL)$$, :'bad'), '22023',
    'jobq_fail: backoff must be an interval >= 0, got NULL', 'backoff NULL: 22023');
SELECT throws_ok(format($$SELECT jobq_fail(%L, 'w1', 'e', backoff => '-1 second')$$, :'bad'), '22023',
    'jobq_fail: backoff must be an interval >= 0, got -00:00:01', 'backoff negative: 22023');
SELECT results_eq('SELECT * FROM jobq_all_jobs', 'SELECT * FROM snap', 'bad calls changed nothing');

------------------------------------------------------------------------------------------
-- Retries: pending again after attempts × backoff, then dead_letter
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
SELECT jobq_enqueue('f', max_attempts => 3) AS j \gset

SELECT is((SELECT attempts FROM jobq_dequeue('w1')), 1, 'attempt 1 claimed by w1');
SELECT is(jobq_fail(:'j', 'w1', 'boom 1'), 'pending', 'attempt 1 of 3 fails: pending');
SELECT results_eq(
    format($$SELECT status, attempts, available_at, locked_at, locked_by, finished_at, last_error,
                    updated_at
             FROM jobq_all_jobs WHERE id = %L$$, :'j'),
    $$VALUES ('pending'::text, 1, now() + interval '10 seconds', NULL::timestamptz, NULL::text,
              NULL::timestamptz, 'boom 1'::text, now())$$,
    'available again after 1 × the default backoff of 10 seconds; claim cleared; last_error set'
);
SELECT is(
    (SELECT errors FROM jobq_all_jobs WHERE id = :'j'),
    jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now(), 'worker', 'w1', 'error', 'boom 1')),
    'errors holds one entry {attempt, at, worker, error}'
);
SELECT is_empty($$SELECT * FROM jobq_dequeue('w1')$$, 'not claimable before its backoff has passed');

UPDATE jobq_jobs SET available_at = now() WHERE id = :'j';   -- let the backoff pass
SELECT is((SELECT attempts FROM jobq_dequeue('w2')), 2, 'attempt 2 claimed by w2');
SELECT is(jobq_fail(job_id => :'j', worker_id => 'w2', error => 'boom 2', backoff => '1 minute', attempt => 2),
          'pending', 'attempt 2 of 3 fails (named arguments): pending');
SELECT is((SELECT available_at FROM jobq_all_jobs WHERE id = :'j'), now() + interval '2 minutes',
          'available again after 2 × 1 minute');

UPDATE jobq_jobs SET available_at = now() - interval '1 second' WHERE id = :'j';
SELECT is((SELECT attempts FROM jobq_dequeue('w3')), 3, 'attempt 3 claimed by w3');
SELECT is(jobq_fail(:'j', 'w3', 'boom 3'), 'dead_letter', 'the last attempt fails: dead_letter');
SELECT results_eq(
    format($$SELECT status, attempts, available_at, locked_at, locked_by, finished_at, last_error
             FROM jobq_all_jobs WHERE id = %L$$, :'j'),
    $$VALUES ('dead_letter'::text, 3, now() - interval '1 second', NULL::timestamptz, NULL::text,
              now(), 'boom 3'::text)$$,
    'dead_letter: finished now, available_at left as it was, claim cleared'
);
SELECT results_eq(
    format($$SELECT (e ->> 'attempt')::int, e ->> 'worker', e ->> 'error', (e ->> 'at')::timestamptz
             FROM jobq_all_jobs AS j, jsonb_array_elements(j.errors) WITH ORDINALITY AS x (e, n)
             WHERE j.id = %L ORDER BY x.n$$, :'j'),
    $$VALUES (1, 'w1'::text, 'boom 1'::text, now()), (2, 'w2', 'boom 2', now()), (3, 'w3', 'boom 3', now())$$,
    'errors grows by one entry per failed attempt, in order'
);
SELECT is(jobq_fail(:'j', 'w3', 'again'), NULL, 'a finished job cannot fail again: NULL');

------------------------------------------------------------------------------------------
-- retry => false: failed, whatever attempts are left
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
SELECT jobq_enqueue('f', max_attempts => 5) AS p \gset
SELECT id AS claimed_p FROM jobq_dequeue('w1') \gset
SELECT is(jobq_fail(:'p', 'w1', 'bad input', retry => false), 'failed', 'retry => false: failed');
SELECT results_eq(
    format($$SELECT status, attempts, available_at, finished_at, last_error, jsonb_array_length(errors)
             FROM jobq_all_jobs WHERE id = %L$$, :'p'),
    $$VALUES ('failed'::text, 1, now(), now(), 'bad input'::text, 1)$$,
    'failed: finished now, not rescheduled, error recorded'
);

SELECT jobq_enqueue('f', max_attempts => 1) AS p1 \gset
SELECT id AS claimed_p1 FROM jobq_dequeue('w1') \gset
SELECT is(jobq_fail(:'p1', 'w1', 'x', retry => false), 'failed',
          'retry => false on the last attempt: failed (not dead_letter)');

SELECT jobq_enqueue('f') AS nullerr \gset
SELECT id AS claimed_nullerr FROM jobq_dequeue('w1') \gset
SELECT is(jobq_fail(:'nullerr', 'w1', NULL), 'pending', 'error NULL is accepted');
SELECT results_eq(
    format($$SELECT last_error, errors -> 0 ->> 'error' FROM jobq_all_jobs WHERE id = %L$$, :'nullerr'),
    $$VALUES (''::text, ''::text)$$,
    '... and recorded as an empty string'
);

------------------------------------------------------------------------------------------
-- Not the holder: NULL, nothing changed (fencing)
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
SELECT jobq_enqueue('f') AS h, jobq_enqueue('f', run_at => now() + interval '1 hour') AS waiting \gset
SELECT id AS claimed_h FROM jobq_dequeue('w1') \gset
DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT is(jobq_fail(gen_random_uuid(), 'w1', 'e'), NULL, 'an unknown job: NULL');
SELECT is(jobq_fail(:'waiting', 'w1', 'e'), NULL, 'a pending job: NULL');
SELECT is(jobq_fail(:'h', 'w2', 'e'), NULL, 'another worker''s job: NULL');
SELECT is(jobq_fail(:'h', 'w1', 'e', attempt => 2), NULL, 'another attempt: NULL');
SELECT throws_ok(format($$SELECT jobq_fail(%L, NULL, 'e')$$, :'h'), '22023',
    'jobq_fail: worker_id must be a non-blank string', 'worker_id NULL: 22023');
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'none of these changed anything');

-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 360), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 360) WHERE id = :'h';
SELECT is((SELECT locked_by FROM jobq_dequeue('w2')), 'w2', 'w2 takes over the stale claim of w1');
DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;
SELECT is(jobq_fail(:'h', 'w1', 'late'), NULL, 'the old worker cannot fail the job after a takeover');
SELECT is(jobq_fail(:'h', 'w1', 'late', attempt => 1), NULL, '... not even naming its attempt');
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  '... and the new claim, last_error and errors are untouched');

-- the same worker id, a later claim: attempt fences the earlier one off
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 360), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 360) WHERE id = :'h';
SELECT is((SELECT locked_by || '/' || attempts FROM jobq_dequeue('w1')), 'w1/3', 'w1 claims the job again (attempt 3)');
SELECT is(jobq_fail(:'h', 'w1', 'stale', attempt => 2), NULL, 'attempt 2 cannot fail attempt 3 of the same worker');
SELECT is(jobq_fail(:'h', 'w1', 'current', attempt => 3), 'pending', 'attempt 3 can');

------------------------------------------------------------------------------------------
-- Backoff arithmetic: attempts × backoff, exact, capped at 365 days, no overflow
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
SELECT jobq_enqueue('b', max_attempts => 1000) AS b \gset

SELECT id AS claimed_b FROM jobq_dequeue('w') \gset
UPDATE jobq_jobs SET attempts = 3 WHERE id = :'b';
SELECT is(jobq_fail(:'b', 'w', 'e', backoff => '1.5 seconds'), 'pending', 'attempt 3, backoff 1.5 s');
SELECT is((SELECT available_at FROM jobq_all_jobs WHERE id = :'b'), now() + interval '4.5 seconds',
          '3 × 1.5 s = 4.5 s exactly');

UPDATE jobq_jobs SET available_at = now() WHERE id = :'b';
SELECT id AS claimed_b2 FROM jobq_dequeue('w') \gset
SELECT is(jobq_fail(:'b', 'w', 'e', backoff => '0'), 'pending', 'backoff 0');
SELECT is((SELECT available_at FROM jobq_all_jobs WHERE id = :'b'), now(), '... available again at once');

SELECT id AS claimed_b3 FROM jobq_dequeue('w') \gset
UPDATE jobq_jobs SET attempts = 999 WHERE id = :'b';
SELECT is(jobq_fail(:'b', 'w', 'e', backoff => '100 years'), 'pending', 'attempt 999 × 100 years');
SELECT is((SELECT available_at FROM jobq_all_jobs WHERE id = :'b'), now() + interval '31536000 seconds',
          '... is capped at 365 days (of 24 hours), without overflow');

SELECT is(jobq__retry_at('2000-01-01 00:00+00', 2147483647, interval '178000000 years'),
          timestamptz '2000-01-01 00:00+00' + interval '31536000 seconds',
          'the helper caps the largest attempts × the largest interval without overflow');
SELECT is(jobq__retry_at('2000-01-01 00:00+00', 2, interval '1 month'),
          timestamptz '2000-01-01 00:00+00' + interval '5184000 seconds',
          'a month counts as 30 days: 2 × 1 month = 60 days, as a time (not calendar) interval');

-- a session time zone with DST and a 30-minute offset does not move the result
SET LOCAL timezone = 'Australia/Lord_Howe';
UPDATE jobq_jobs SET available_at = now(), attempts = 2 WHERE id = :'b';
SELECT id AS claimed_b4 FROM jobq_dequeue('w') \gset
SELECT is(jobq_fail(:'b', 'w', 'tz', backoff => '1 day'), 'pending', 'attempt 3 × 1 day under Lord Howe time');
RESET timezone;
SELECT is((SELECT available_at FROM jobq_all_jobs WHERE id = :'b'), now() + interval '72 hours',
          '... is exactly 72 hours later, whatever the session time zone');

SELECT * FROM finish();
ROLLBACK;
