-- Concurrency and rate limits: jobq_set_limit, jobq_limits,
-- jobq_limit_usage, the limit_group / limit_key arguments of jobq_enqueue and
-- jobq_enqueue_many, and the claim (jobq_dequeue) under limits, in one session.
--
-- A key's slot is held by its processing jobs: the claim never makes more than max_running of
-- them processing, never starts more than max_starts within per; jobs held back stay pending
-- with no attempt spent; jobs behind them that no limit holds back are claimed (no
-- head-of-line blocking); completion, failure, release and takeover free the slot; removing a
-- limit frees the waiting jobs for the next claim. Time for the rate window is moved by
-- backdating the window's rows, never by sleeping.
--
-- Not covered here: concurrent sessions (an open transaction holding a key, 32 sessions with
-- kills and lock expiries, a rate over wall-clock time): tests/faults/test_limits.py.
BEGIN;
SELECT plan(59);

DELETE FROM jobq_jobs;
DELETE FROM jobq_limits;

------------------------------------------------------------------------------------------
-- jobq_set_limit: bad input is 22023 naming the argument, and changes nothing
------------------------------------------------------------------------------------------

SELECT jobq_set_limit('kept', max_running => 4);
CREATE TEMP TABLE snap_limits AS SELECT * FROM jobq_limits;

SELECT throws_ok($$SELECT jobq_set_limit(NULL, 1)$$, '22023',
    'jobq_set_limit: limit_group must be a non-blank string', 'limit_group NULL: 22023');
SELECT throws_ok($$SELECT jobq_set_limit(E' \u200b', 1)$$, '22023',
    'jobq_set_limit: limit_group must be NULL or a non-blank string', 'limit_group blank: 22023');
SELECT throws_ok($$SELECT jobq_set_limit(repeat('g', 201), 1)$$, '22023',
    'jobq_set_limit: limit_group is 201 characters long, at most 200 are allowed',
    'limit_group of 201 characters: 22023');
SELECT throws_ok($$SELECT jobq_set_limit('kept', max_running => 0)$$, '22023',
    'jobq_set_limit: max_running must be at least 1 (or NULL: no limit), got 0', 'max_running 0: 22023');
SELECT throws_ok($$SELECT jobq_set_limit('kept', max_starts => 0, per => '1 second')$$, '22023',
    'jobq_set_limit: max_starts must be at least 1 (or NULL: no limit), got 0', 'max_starts 0: 22023');
SELECT throws_ok($$SELECT jobq_set_limit('kept', max_starts => 5)$$, '22023',
    'jobq_set_limit: max_starts and per go together, got max_starts 5 and per NULL',
    'max_starts without per: 22023');
SELECT throws_ok($$SELECT jobq_set_limit('kept', 1, per => '1 second')$$, '22023',
    'jobq_set_limit: max_starts and per go together, got max_starts NULL and per 00:00:01',
    'per without max_starts: 22023');
SELECT throws_ok($$SELECT jobq_set_limit('kept', max_starts => 5, per => '0')$$, '22023',
    'jobq_set_limit: per must be a positive interval of hours, minutes and seconds, at most 10000 hours, got 00:00:00',
    'per 0: 22023');
SELECT throws_ok($$SELECT jobq_set_limit('kept', max_starts => 5, per => '1 day')$$, '22023',
    'jobq_set_limit: per must be a positive interval of hours, minutes and seconds, at most 10000 hours, got 1 day',
    'per in days (no fixed length): 22023');
SELECT throws_ok($$SELECT jobq_set_limit('kept', max_starts => 5, per => '10001 hours')$$, '22023',
    'jobq_set_limit: per must be a positive interval of hours, minutes and seconds, at most 10000 hours, got 10001:00:00',
    'per over 10000 hours: 22023');
SELECT results_eq('SELECT * FROM jobq_limits', 'SELECT * FROM snap_limits',
                  'the refused calls changed nothing');

------------------------------------------------------------------------------------------
-- jobq_set_limit and jobq_limits: set, change, remove
------------------------------------------------------------------------------------------

SELECT jobq_set_limit('api', max_starts => 100, per => '1 minute');
SELECT jobq_set_limit(limit_group => 'cust', max_running => 2);
SELECT results_eq('SELECT * FROM jobq_limits()',
    $$VALUES ('api'::text, NULL::int, 100, interval '1 minute', 'fifo'::text),
             ('cust', 2, NULL, NULL, 'fifo'), ('kept', 4, NULL, NULL, 'fifo')$$,
    'jobq_limits: one row per group, by group');
SELECT jobq_set_limit('kept', max_running => 1, max_starts => 3, per => '1 hour');
SELECT results_eq($$SELECT * FROM jobq_limits() WHERE limit_group = 'kept'$$,
    $$VALUES ('kept'::text, 1, 3, interval '1 hour', 'fifo'::text)$$, 'setting a group again replaces its limits');
SELECT jobq_set_limit('kept');
SELECT is((SELECT count(*)::int FROM jobq_limits() WHERE limit_group = 'kept'), 0,
          'both limits NULL removes the group''s limit');
SELECT lives_ok($$SELECT jobq_set_limit('never-set')$$, 'removing a limit that does not exist is a no-op');

------------------------------------------------------------------------------------------
-- enqueue: limit_group and limit_key
------------------------------------------------------------------------------------------

CREATE TEMP TABLE snap_jobs AS SELECT * FROM jobq_jobs;
SELECT throws_ok($$SELECT jobq_enqueue('t', limit_key => 'k')$$, '22023',
    'jobq_enqueue: limit_key needs a limit_group', 'a limit_key without a limit_group: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', limit_group => ' ')$$, '22023',
    'jobq_enqueue: limit_group must be NULL or a non-blank string', 'a blank limit_group: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', limit_group => 'g', limit_key => E'\u00a0')$$, '22023',
    'jobq_enqueue: limit_key must be NULL or a non-blank string', 'a blank limit_key: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', limit_group => 'g', limit_key => repeat('k', 201))$$, '22023',
    'jobq_enqueue: limit_key is 201 characters long, at most 200 are allowed', 'a limit_key of 201 characters: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "t"}, {"job_type": "t", "limit_group": 5}]')$$,
    '22023', 'jobq_enqueue_many: jobs element 2 (counting from 1) limit_group must be a string or null',
    'enqueue_many: a limit_group that is not a string: 22023 naming the element');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "t", "limit_key": "k"}]')$$,
    '22023', 'jobq_enqueue_many: jobs element 1 (counting from 1) limit_key needs a limit_group',
    'enqueue_many: a limit_key without a limit_group: 22023 naming the element');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "t", "limit_group": "g", "limit_key": ""}]')$$,
    '22023', 'jobq_enqueue_many: jobs element 1 (counting from 1) limit_key must be NULL or a non-blank string',
    'enqueue_many: a blank limit_key: 22023 naming the element');
SELECT results_eq('SELECT * FROM jobq_jobs', 'SELECT * FROM snap_jobs', 'the refused enqueues added nothing');

SELECT jobq_enqueue('t', limit_group => 'cust', limit_key => 'acme') AS one \gset
SELECT results_eq(format('SELECT limit_group, limit_key FROM jobq_jobs WHERE id = %L', :'one'),
    $$VALUES ('cust'::text, 'acme'::text)$$, 'jobq_enqueue stores limit_group and limit_key');
CREATE TEMP TABLE many AS
SELECT * FROM jobq_enqueue_many('[{"job_type": "t", "limit_group": "cust", "limit_key": "a"},
                                  {"job_type": "t", "limit_group": "cust"},
                                  {"job_type": "t", "idempotency_key": "ik", "limit_group": "api"},
                                  {"job_type": "t"}]');
CREATE TEMP TABLE many_fast AS
SELECT * FROM jobq_enqueue_many('[{"job_type": "t", "limit_group": "fast", "limit_key": "b"}]');
SELECT results_eq(
    $$SELECT j.limit_group, j.limit_key FROM many AS e JOIN jobq_jobs AS j ON j.id = e.id ORDER BY e.ord$$,
    $$VALUES ('cust'::text, 'a'::text), ('cust', NULL), ('api', NULL), (NULL, NULL)$$,
    'jobq_enqueue_many stores them, with idempotency keys in the array');
SELECT results_eq(
    $$SELECT j.limit_group, j.limit_key FROM many_fast AS e JOIN jobq_jobs AS j ON j.id = e.id$$,
    $$VALUES ('fast'::text, 'b'::text)$$, 'and without');
DELETE FROM jobq_jobs;

------------------------------------------------------------------------------------------
-- The claim under max_running
------------------------------------------------------------------------------------------

-- cust/acme: 4 jobs at the highest priorities; cust/zeta: 1 job; unlimited jobs below them
SELECT jobq_enqueue('t', priority => 10, limit_group => 'cust', limit_key => 'acme') AS a10,
       jobq_enqueue('t', priority => 9, limit_group => 'cust', limit_key => 'acme') AS a9,
       jobq_enqueue('t', priority => 8, limit_group => 'cust', limit_key => 'acme') AS a8,
       jobq_enqueue('t', priority => 7, limit_group => 'cust', limit_key => 'acme') AS a7,
       jobq_enqueue('t', priority => 6, limit_group => 'cust', limit_key => 'zeta') AS z6,
       jobq_enqueue('t', priority => 1) AS u1,
       jobq_enqueue('t', priority => 0) AS u0 \gset

SELECT results_eq(
    $$SELECT id FROM jobq_dequeue('w1', batch_size => 10)$$,
    format($$VALUES (%L::uuid), (%L), (%L), (%L), (%L)$$, :'a10', :'a9', :'z6', :'u1', :'u0'),
    'max_running 2: two jobs of cust/acme (the first in claim order), then the jobs behind it that no limit holds back, in claim order'
);
SELECT results_eq(
    format($$SELECT status, attempts, locked_by FROM jobq_jobs WHERE id IN (%L, %L) ORDER BY priority DESC$$, :'a8', :'a7'),
    $$VALUES ('pending'::text, 0, NULL::text), ('pending', 0, NULL)$$,
    'the held-back jobs stay pending and spend no attempt');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w1', batch_size => 10)), 0,
          'a full key gives nothing more');

SELECT ok(jobq_complete(:'a10', 'w1'), 'completion frees a slot ...');
SELECT results_eq($$SELECT id FROM jobq_dequeue('w1', batch_size => 10)$$,
                  format($$VALUES (%L::uuid)$$, :'a8'), '... and the next claim takes the next job of the key, one');
SELECT is(jobq_fail(:'a9', 'w1', 'boom', backoff => '0'), 'pending', 'failure with a retry frees a slot ...');
SELECT results_eq($$SELECT id FROM jobq_dequeue('w1', batch_size => 10)$$,
                  format($$VALUES (%L::uuid)$$, :'a9'),
                  '... and the failed job, first in claim order again, takes it');
SELECT is(jobq_release(ARRAY[:'a9']::uuid[], 'w1'), 1, 'release frees a slot ...');
SELECT results_eq($$SELECT id, attempts FROM jobq_dequeue('w1', batch_size => 10)$$,
                  format($$VALUES (%L::uuid, 2)$$, :'a9'), '... which the released job takes again (its attempt given back)');

-- takeover: a8 and a9 are processing; backdate a8's lock so that it is stale
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600) WHERE id = :'a8';
SELECT results_eq($$SELECT id, attempts FROM jobq_dequeue('w2', batch_size => 10, lock_timeout => '10 minutes')$$,
                  format($$VALUES (%L::uuid, 2)$$, :'a8'),
                  'a takeover frees the stale job''s slot, and claims one job in it, not one more');
SELECT is((SELECT count(*)::int FROM jobq_jobs WHERE limit_key = 'acme' AND status = 'processing'), 2,
          'cust/acme: still two processing');

-- usage
SELECT results_eq(
    $$SELECT limit_group, limit_key, running, max_running, starts_in_window, pending FROM jobq_limit_usage()$$,
    $$VALUES ('cust'::text, 'acme'::text, 2::bigint, 2, NULL::bigint, 1::bigint),
             ('cust', 'zeta', 1, 2, NULL, 0)$$,
    'jobq_limit_usage: running and pending per key of a limited group');

-- removing the limit frees the waiting jobs for the next claim
SELECT jobq_set_limit('cust');
SELECT results_eq($$SELECT id FROM jobq_dequeue('w1', batch_size => 10)$$,
                  format($$VALUES (%L::uuid)$$, :'a7'),
                  'removing the limit: the held-back job is claimed by the next claim');
SELECT is((SELECT count(*)::int FROM jobq_limit_usage()), 0, 'an unlimited group has no usage rows');

------------------------------------------------------------------------------------------
-- max_running 1: serial execution in priority order; NULL keys; groups without a limit;
-- filters
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
SELECT jobq_set_limit('serial', max_running => 1);
SELECT jobq_enqueue('s', priority => 1, limit_group => 'serial') AS s1,
       jobq_enqueue('s', priority => 3, limit_group => 'serial') AS s3,
       jobq_enqueue('s', priority => 2, limit_group => 'serial') AS s2,
       jobq_enqueue('s', priority => 9, limit_group => 'serial', limit_key => 'other') AS o9,
       jobq_enqueue('s', priority => 5, limit_group => 'nolimit', limit_key => 'x') AS n5,
       jobq_enqueue('s', priority => 4, limit_group => 'nolimit', limit_key => 'x') AS n4 \gset
SELECT results_eq($$SELECT id FROM jobq_dequeue('w', ARRAY['s'], batch_size => 10)$$,
                  format($$VALUES (%L::uuid), (%L), (%L), (%L)$$, :'o9', :'n5', :'n4', :'s3'),
                  'max_running 1: one job per key (the NULL key is one key of its own); a group with no limit set is unlimited');
SELECT ok(jobq_complete(:'s3', 'w'), 'the serial job completes');
SELECT results_eq($$SELECT id FROM jobq_dequeue('w', ARRAY['s'], batch_size => 10)$$,
                  format($$VALUES (%L::uuid)$$, :'s2'), 'then the next in priority order');
SELECT ok(jobq_complete(:'s2', 'w'), 'it completes');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w', ARRAY['other-type'], batch_size => 10)), 0,
          'a claim for another job type takes no limited job');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w', batch_size => 10, queues => ARRAY['elsewhere'])), 0,
          'a claim for another queue takes no limited job');
SELECT results_eq($$SELECT id FROM jobq_dequeue('w', batch_size => 10, queues => ARRAY['default'])$$,
                  format($$VALUES (%L::uuid)$$, :'s1'), 'then the last, in the queue filter');

------------------------------------------------------------------------------------------
-- The claim under max_starts per per (sliding window)
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
SELECT jobq_set_limit('rate', max_starts => 3, per => '1 hour');
SELECT count(*) FROM (SELECT jobq_enqueue('r', limit_group => 'rate') FROM generate_series(1, 8)) AS g;
SELECT jobq_set_limit('rate5', max_starts => 5, per => '1 hour');
SELECT count(*) FROM (SELECT jobq_enqueue('r5', limit_group => 'rate5') FROM generate_series(1, 8)) AS g;
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w', ARRAY['r5'], batch_size => 100)), 5,
          'rate 5 per hour, a first claim of 100: 5 (no start recorded yet still means 5 at most)');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w', batch_size => 2)), 2, 'rate 3 per hour: 2 of 2 asked');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w', batch_size => 5)), 1, 'then 1: 3 within the window');
UPDATE jobq_jobs SET status = 'succeeded', finished_at = now(), locked_at = NULL, locked_by = NULL
WHERE status = 'processing';
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w', batch_size => 5)), 0,
          'finished jobs still count: the window holds starts, not running jobs');
SELECT results_eq($$SELECT starts_in_window, max_starts, per, pending FROM jobq_limit_usage()
                    WHERE limit_group = 'rate'$$,
    $$VALUES (3::bigint, 3, interval '1 hour', 5::bigint)$$, 'jobq_limit_usage: starts within the window');
-- the first claim (2 starts) leaves the window; the second (1 start) stays in it. Times are
-- moved back with IMMUTABLE operations only (seconds since the epoch, to_timestamp):
-- timestamptz - interval is STABLE, which Citus refuses over a column in an UPDATE, and this
-- file also runs on a tenant's Citus node (make test-citus).
UPDATE jobq_limit_starts
SET started_at = to_timestamp(extract(epoch FROM started_at - timestamptz 'epoch') - 3600)
WHERE limit_group = 'rate' AND total = 2;
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w', batch_size => 5)), 2,
          'as the first starts leave the window, that many may start again');
UPDATE jobq_limit_starts
SET started_at = to_timestamp(extract(epoch FROM started_at - timestamptz 'epoch') - 7200)
WHERE limit_group = 'rate';
UPDATE jobq_limit_keys
SET last_start_at = to_timestamp(extract(epoch FROM last_start_at - timestamptz 'epoch') - 7200)
WHERE limit_group = 'rate';
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w', batch_size => 5)), 3, 'a whole window later, 3 again');
SELECT is((SELECT count(*)::int FROM jobq_limit_starts
           WHERE limit_group = 'rate' AND started_at < now() - interval '1 hour'), 1,
          'rows older than the window are deleted, but the one that marks its start');
SELECT is((SELECT started FROM jobq_limit_keys WHERE limit_group = 'rate'), 8::bigint,
          'jobq_limit_keys counts the starts of the key');
SELECT jobq_set_limit('rate');
SELECT is((SELECT count(*)::int FROM jobq_limit_starts WHERE limit_group = 'rate')
          + (SELECT count(*)::int FROM jobq_limit_keys WHERE limit_group = 'rate'), 0,
          'removing the limit removes its bookkeeping');

------------------------------------------------------------------------------------------
-- No head-of-line blocking when a key has jobs under two job types: its second job, beyond
-- its room, takes no place of the batch, so the claim reads on to the next key (issue 41).
------------------------------------------------------------------------------------------
DELETE FROM jobq_jobs;
SELECT jobq_set_limit('hol', max_running => 1);
SELECT jobq_enqueue('hol_t1', priority => 10, limit_group => 'hol') AS a \gset hol_
SELECT jobq_enqueue('hol_t2', priority => 9, limit_group => 'hol') AS b \gset hol_
SELECT jobq_enqueue('hol_t1', priority => 8, limit_group => 'hol', limit_key => 'x') AS c \gset hol_
SAVEPOINT hol;
SELECT results_eq(
    $$SELECT id FROM jobq_dequeue('w1', batch_size => 2)$$,
    ARRAY[:'hol_a'::uuid, :'hol_c'::uuid],
    'a key full after its first job: the claim takes the free key''s job next (a and c)'
);
ROLLBACK TO SAVEPOINT hol;
SELECT jobq_enqueue('hol_t3', priority => 0) AS u \gset hol_
SELECT results_eq(
    $$SELECT id FROM jobq_dequeue('w1', batch_size => 2)$$,
    ARRAY[:'hol_a'::uuid, :'hol_c'::uuid],
    '... and ahead of an unlimited job of lower priority (a and c, not a and it)'
);

SELECT * FROM finish();
ROLLBACK;
