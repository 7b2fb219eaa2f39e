-- jobq_dequeue(worker_id, job_types, batch_size, lock_timeout, queues) RETURNS SETOF jobq_jobs
--
-- Claims up to batch_size pending jobs whose available_at has come, and
-- processing jobs whose lock is older than lock_timeout; filters (NULL = all); order
-- priority DESC, available_at, id (of the choice and of the rows returned); a claim sets
-- processing, locked_at, locked_by, attempts + 1; a takeover is recorded in errors naming the
-- worker that lost it; a stale job with no attempts left goes to dead_letter, not run again.
-- Time is moved by backdating locked_at / available_at (now() is fixed in this transaction).
--
-- Not covered here: two concurrent callers never get the same job (SKIP LOCKED needs two
-- sessions: see tests/python/test_sql_core.py).
BEGIN;
SELECT plan(83);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

------------------------------------------------------------------------------------------
-- Bad input
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('t') AS untouched \gset
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT throws_ok($$SELECT * FROM jobq_dequeue(NULL)$$, '22023',
    'jobq_dequeue: worker_id must be a non-blank string', 'worker_id NULL: 22023');
SELECT throws_ok($$SELECT * FROM jobq_dequeue(' ')$$, '22023',
    'jobq_dequeue: worker_id must be a non-blank string', 'worker_id blank: 22023');
SELECT throws_ok($$SELECT * FROM jobq_dequeue('w', batch_size => 0)$$, '22023',
    'jobq_dequeue: batch_size must be between 1 and 10000, got 0', 'batch_size 0: 22023');
SELECT throws_ok($$SELECT * FROM jobq_dequeue('w', batch_size => -5)$$, '22023',
    'jobq_dequeue: batch_size must be between 1 and 10000, got -5', 'batch_size negative: 22023');
SELECT throws_ok($$SELECT * FROM jobq_dequeue('w', batch_size => NULL)$$, '22023',
    'jobq_dequeue: batch_size must be between 1 and 10000, got NULL', 'batch_size NULL: 22023');
SELECT throws_ok($$SELECT * FROM jobq_dequeue('w', lock_timeout => '0')$$, '22023',
    'jobq_dequeue: lock_timeout must be a positive interval, got 00:00:00', 'lock_timeout 0: 22023');
SELECT throws_ok($$SELECT * FROM jobq_dequeue('w', lock_timeout => '-1 minute')$$, '22023',
    'jobq_dequeue: lock_timeout must be a positive interval, got -00:01:00',
    'lock_timeout negative: 22023');
SELECT throws_ok($$SELECT * FROM jobq_dequeue('w', lock_timeout => NULL)$$, '22023',
    'jobq_dequeue: lock_timeout must be a positive interval, got NULL', 'lock_timeout NULL: 22023');
SELECT results_eq('SELECT * FROM jobq_all_jobs', 'SELECT * FROM snap',
                  'no bad call claimed or changed anything');

------------------------------------------------------------------------------------------
-- One claim: what it sets
------------------------------------------------------------------------------------------

CREATE TEMP TABLE got AS SELECT * FROM jobq_dequeue('w1');
SELECT results_eq(
    'SELECT id, status, attempts, locked_by, locked_at, updated_at FROM got',
    format($$VALUES (%L::uuid, 'processing'::text, 1, 'w1'::text, now(), now())$$, :'untouched'),
    'a claim: status processing, attempts + 1, locked_by = worker_id, locked_at = now()'
);
SELECT results_eq('SELECT * FROM got', 'SELECT * FROM jobq_all_jobs',
                  'the row returned is the row as stored after the claim');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w2')$$,
                'a job claimed (and not stale) is not claimed again');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w1')$$,
                '... not even by the same worker');

------------------------------------------------------------------------------------------
-- Order: priority DESC, then available_at, then id; future jobs wait
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
CREATE TEMP TABLE o (name text PRIMARY KEY, id uuid);
INSERT INTO o VALUES
    ('p5_old',    jobq_enqueue('o', priority => 5,  run_at => now() - interval '2 minutes')),
    ('p5_new',    jobq_enqueue('o', priority => 5,  run_at => now() - interval '1 minute')),
    ('p0_tie_1',  jobq_enqueue('o', priority => 0,  run_at => now() - interval '3 minutes')),
    ('p0_tie_2',  jobq_enqueue('o', priority => 0,  run_at => now() - interval '3 minutes')),
    ('neg',       jobq_enqueue('o', priority => -1, run_at => now() - interval '1 hour')),
    ('now',       jobq_enqueue('o', priority => -2)),
    ('future',    jobq_enqueue('o', priority => 99, run_at => now() + interval '1 second'));

-- the expected order, the tie of p0_tie_1/p0_tie_2 broken by id
CREATE TEMP TABLE expected AS
SELECT row_number() OVER (ORDER BY j.priority DESC, j.available_at, j.id) AS pos, j.id
FROM jobq_all_jobs AS j WHERE j.id <> (SELECT id FROM o WHERE name = 'future');

SAVEPOINT order_test;
SELECT results_eq(
    $$SELECT id FROM jobq_dequeue('w', batch_size => 100)$$,
    'SELECT id FROM expected ORDER BY pos',
    'rows returned in order priority DESC, available_at, id'
);
SELECT results_eq(
    $$SELECT o.name FROM expected AS e JOIN o USING (id) WHERE e.pos <= 2 ORDER BY e.pos$$,
    $$VALUES ('p5_old'), ('p5_new')$$,
    'same priority: the older available_at first'
);
SELECT is((SELECT status FROM jobq_all_jobs WHERE id = (SELECT id FROM o WHERE name = 'future')),
          'pending', 'a job available in the future is not claimed, whatever its priority');
ROLLBACK TO SAVEPOINT order_test;

-- the choice follows the same order: batches of 2 take the first 2, then the next 2, ...
SELECT results_eq($$SELECT id FROM jobq_dequeue('w', batch_size => 2)$$,
                  'SELECT id FROM expected WHERE pos IN (1, 2) ORDER BY pos',
                  'batch 1 of 2: the first two in order');
SELECT results_eq($$SELECT id FROM jobq_dequeue('w', batch_size => 2)$$,
                  'SELECT id FROM expected WHERE pos IN (3, 4) ORDER BY pos',
                  'batch 2 of 2: the next two (the tie broken by id)');
SELECT results_eq($$SELECT id FROM jobq_dequeue('w', batch_size => 1)$$,
                  'SELECT id FROM expected WHERE pos = 5',
                  'batch_size 1: exactly one, the next');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'processing'), 5,
          'never more than batch_size claimed: 2 + 2 + 1');
SELECT results_eq($$SELECT id FROM jobq_dequeue('w', batch_size => 10)$$,
                  'SELECT id FROM expected WHERE pos = 6',
                  'a job enqueued with run_at NULL is available at once');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w', batch_size => 10)$$,
                'nothing left that is available now');

------------------------------------------------------------------------------------------
-- Filters: job_types, queues; NULL = all; an empty array = none
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('x', queue => 'q1') AS x_q1, jobq_enqueue('y', queue => 'q1') AS y_q1,
       jobq_enqueue('x', queue => 'q2') AS x_q2, jobq_enqueue('y', queue => 'q2') AS y_q2 \gset

SAVEPOINT filters;
SELECT set_eq($$SELECT id FROM jobq_dequeue('w', job_types => '{x}', batch_size => 10)$$,
              format('VALUES (%L::uuid), (%L::uuid)', :'x_q1', :'x_q2'),
              'job_types => {x}: only x jobs, of every queue');
ROLLBACK TO SAVEPOINT filters;
SELECT set_eq($$SELECT id FROM jobq_dequeue('w', queues => '{q2}', batch_size => 10)$$,
              format('VALUES (%L::uuid), (%L::uuid)', :'x_q2', :'y_q2'),
              'queues => {q2}: only q2 jobs, of every type');
ROLLBACK TO SAVEPOINT filters;
SELECT set_eq($$SELECT id FROM jobq_dequeue('w', job_types => '{y}', queues => '{q1}', batch_size => 10)$$,
              format('VALUES (%L::uuid)', :'y_q1'),
              'both filters: the intersection');
ROLLBACK TO SAVEPOINT filters;
SELECT set_eq($$SELECT id FROM jobq_dequeue('w', job_types => '{x,y}', queues => '{q1,q2}', batch_size => 10)$$,
              'SELECT id FROM jobq_all_jobs',
              'several types and queues: any of them');
ROLLBACK TO SAVEPOINT filters;
SELECT set_eq($$SELECT id FROM jobq_dequeue('w', job_types => NULL, batch_size => 10, queues => NULL)$$,
              'SELECT id FROM jobq_all_jobs',
              'NULL filters: all types and all queues');
ROLLBACK TO SAVEPOINT filters;
SELECT is_empty($$SELECT * FROM jobq_dequeue('w', job_types => '{}', batch_size => 10)$$,
                'job_types => {} (empty): nothing');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w', job_types => '{nope}', batch_size => 10)$$,
                'an unknown job type: nothing');

------------------------------------------------------------------------------------------
-- Stale claims: takeover after lock_timeout, recorded in errors
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('s', max_attempts => 3) AS stale \gset
SELECT is((SELECT id FROM jobq_dequeue('w-old')), :'stale'::uuid, 'w-old claims the job');

-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 299), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 299) WHERE id = :'stale';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is_empty($$SELECT * FROM jobq_dequeue('w-new')$$,
                'a lock younger than lock_timeout (default 5 minutes) is not taken over');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w-new', lock_timeout => '5 minutes')$$,
                '... nor with lock_timeout given explicitly');

UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 360), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 360) WHERE id = :'stale';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is_empty($$SELECT * FROM jobq_dequeue('w-new', job_types => '{other}')$$,
                'a stale job outside the filters is left alone');
SELECT is((SELECT locked_by FROM jobq_all_jobs WHERE id = :'stale'), 'w-old',
          '... and keeps its claim');

CREATE TEMP TABLE taken AS SELECT * FROM jobq_dequeue('w-new');
SELECT results_eq(
    'SELECT id, status, attempts, locked_by, locked_at FROM taken',
    format($$VALUES (%L::uuid, 'processing'::text, 2, 'w-new'::text, now())$$, :'stale'),
    'a lock older than lock_timeout is taken over: new claim, attempts + 1'
);
SELECT is(jsonb_array_length((SELECT errors FROM jobq_all_jobs WHERE id = :'stale')), 1,
          'the takeover adds one entry to errors');
SELECT results_eq(
    format($$SELECT e ->> 'attempt', e ->> 'worker', e ->> 'kind', (e ->> 'at')::timestamptz
             FROM jobq_all_jobs AS j, jsonb_array_elements(j.errors) AS e WHERE j.id = %L$$, :'stale'),
    $$VALUES ('1'::text, 'w-old'::text, 'lock_expired'::text, now())$$,
    'the entry names the attempt and the worker that lost the claim'
);
SELECT matches((SELECT last_error FROM jobq_all_jobs WHERE id = :'stale'),
               '^lock expired: worker w-old held attempt 1 since ',
               'last_error says the lock expired and whose it was');

-- a custom lock_timeout
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 360), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 360) WHERE id = :'stale';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is((SELECT locked_by FROM jobq_dequeue('w-fast', lock_timeout => '1 minute')), 'w-fast',
          'lock_timeout => 1 minute takes over an expired lock');

-- a very long lock_timeout means "never take over"; it must not overflow now() - lock_timeout
SELECT lives_ok($$SELECT * FROM jobq_dequeue('w-patient', lock_timeout => '10000 years')$$,
                'lock_timeout => 10000 years works (no "timestamp out of range")');

-- attempts used up: dead_letter, not returned
SELECT is((SELECT attempts FROM jobq_all_jobs WHERE id = :'stale'), 3, 'the job is at its last attempt');
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600) WHERE id = :'stale';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is_empty($$SELECT * FROM jobq_dequeue('w-late', batch_size => 10)$$,
                'a stale job with attempts = max_attempts is not returned');
SELECT results_eq(
    format($$SELECT status, attempts, locked_at, locked_by, finished_at, jsonb_array_length(errors),
                    errors -> -1 ->> 'worker'
             FROM jobq_all_jobs WHERE id = %L$$, :'stale'),
    $$VALUES ('dead_letter'::text, 3, NULL::timestamptz, NULL::text, now(), 3, 'w-fast'::text)$$,
    '... it goes to dead_letter, claim cleared, finished now, its expiry recorded'
);
SELECT matches((SELECT last_error FROM jobq_all_jobs WHERE id = :'stale'), '^lock expired: worker w-fast',
               '... with last_error saying its lock expired');

-- a stale job and a pending one: both are candidates, in claim order
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('m', run_at => now() - interval '1 hour') AS old_job,
       jobq_enqueue('m', run_at => now() - interval '1 minute') AS new_job \gset
SELECT is((SELECT id FROM jobq_dequeue('w-dead')), :'old_job'::uuid, 'the older job is claimed first');
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 600) WHERE id = :'old_job';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT results_eq($$SELECT id FROM jobq_dequeue('w', batch_size => 2)$$,
                  format('VALUES (%L::uuid), (%L::uuid)', :'old_job', :'new_job'),
                  'a taken-over job keeps its place (its available_at) in the claim order');

-- the lock length is the claim's own (locked_until), whatever the lock_timeout of the claim that looks
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('lk') AS short_lock, jobq_enqueue('lk2') AS long_lock \gset
SELECT is((SELECT locked_until FROM jobq_dequeue('w-short', '{lk}', lock_timeout => '20 seconds')),
          now() + interval '20 seconds', 'a claim sets locked_until to now() + its lock_timeout');
SELECT is((SELECT locked_until FROM jobq_dequeue('w-long', '{lk2}', lock_timeout => '1 hour')),
          now() + interval '1 hour', '... each claim its own');
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 30), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 30);
SELECT results_eq($$SELECT id, locked_by, locked_until FROM jobq_dequeue('w-default', batch_size => 10)$$,
                  format($$VALUES (%L::uuid, 'w-default'::text, now() + interval '5 minutes')$$, :'short_lock'),
                  'a 20-second lock 30 seconds old is taken over by a claim of the default 5 minutes; the 1-hour lock is not');
SELECT matches((SELECT last_error FROM jobq_jobs WHERE id = :'short_lock'),
               '^lock expired: worker w-short held attempt 1 since .* \(lock_timeout 00:00:20\)$',
               'the record names the lost claim''s own lock length');
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 600)
WHERE id = :'long_lock';
SELECT is_empty($$SELECT * FROM jobq_dequeue('w-quick', '{lk2}', lock_timeout => '1 second')$$,
                'a 1-hour lock 10 minutes old is not taken over, even by a claim with lock_timeout => 1 second');

------------------------------------------------------------------------------------------
-- Several (job_type, queue) ranges: merged in claim order, whatever the filters
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
CREATE TEMP TABLE m (name text PRIMARY KEY, id uuid);
INSERT INTO m VALUES
    ('x_q1_p5',       jobq_enqueue('x', priority => 5, queue => 'q1', run_at => now() - interval '5 minutes')),
    ('y_q2_p5_older', jobq_enqueue('y', priority => 5, queue => 'q2', run_at => now() - interval '6 minutes')),
    ('y_q1_p1',       jobq_enqueue('y', priority => 1, queue => 'q1', run_at => now() - interval '9 minutes')),
    ('x_q2_p1',       jobq_enqueue('x', priority => 1, queue => 'q2', run_at => now() - interval '8 minutes')),
    ('z_q1_p9',       jobq_enqueue('z', priority => 9, queue => 'q1')),
    ('x_q3_p0_tie',   jobq_enqueue('x', queue => 'q3', run_at => now() - interval '1 minute')),
    ('y_q2_p0_tie',   jobq_enqueue('y', queue => 'q2', run_at => now() - interval '1 minute')),
    ('x_q1_later',    jobq_enqueue('x', priority => 100, queue => 'q1', run_at => now() + interval '1 minute'));

-- the claim order over the jobs a filter allows, claimed two at a time until none is left
CREATE FUNCTION pg_temp.drained_in_order(types text[], queues text[]) RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
    v_expected uuid[];
    v_got uuid[] := '{}';
    v_batch uuid[];
BEGIN
    SELECT array_agg(j.id ORDER BY j.priority DESC, j.available_at, j.id) INTO v_expected
    FROM jobq_all_jobs AS j
    WHERE j.available_at <= now()
      AND (types IS NULL OR j.job_type = ANY (types))
      AND (queues IS NULL OR j.queue = ANY (queues));
    LOOP
        SELECT array_agg(d.id ORDER BY d.ordinality) INTO v_batch
        FROM jobq_dequeue('w', job_types => types, batch_size => 2, queues => queues)
             WITH ORDINALITY AS d;
        EXIT WHEN v_batch IS NULL;
        v_got := v_got || v_batch;
    END LOOP;
    RETURN v_got = v_expected;
END;
$fn$;

SAVEPOINT ranges;
SELECT ok(pg_temp.drained_in_order('{x,y}', NULL),
          'job_types => {x,y}: every queue of both types, merged in claim order, two at a time');
ROLLBACK TO SAVEPOINT ranges;
SELECT ok(pg_temp.drained_in_order(NULL, '{q1,q2}'),
          'queues => {q1,q2}: every type of both queues, merged in claim order');
ROLLBACK TO SAVEPOINT ranges;
SELECT ok(pg_temp.drained_in_order('{x,y,z}', '{q1,q2,q3}'),
          'both filters, nine (type, queue) pairs: merged in claim order');
ROLLBACK TO SAVEPOINT ranges;
SELECT ok(pg_temp.drained_in_order(NULL, NULL), 'no filter: every pair, merged in claim order');
ROLLBACK TO SAVEPOINT ranges;
SELECT results_eq(
    $$SELECT id FROM jobq_dequeue('w', job_types => '{x,y}', batch_size => 3)$$,
    $$SELECT id FROM m WHERE name IN ('y_q2_p5_older', 'x_q1_p5', 'y_q1_p1')
      ORDER BY array_position(ARRAY['y_q2_p5_older', 'x_q1_p5', 'y_q1_p1'], name)$$,
    'one claim of several ranges returns its rows in claim order'
);
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'processing'), 3,
          '... and claims exactly batch_size of them');
ROLLBACK TO SAVEPOINT ranges;
SELECT is_empty($$SELECT * FROM jobq_dequeue('w', job_types => '{x}', queues => '{q9}', batch_size => 10)$$,
                'a pair with no jobs: nothing');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w', job_types => ARRAY[NULL]::text[], batch_size => 10)$$,
                'job_types => {NULL}: nothing');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w', queues => ARRAY[NULL]::text[], batch_size => 10)$$,
                'queues => {NULL}: nothing');
SELECT results_eq($$SELECT id FROM jobq_dequeue('w', job_types => '{x,x}', queues => '{q3,q3}', batch_size => 10)$$,
                  $$SELECT id FROM m WHERE name = 'x_q3_p0_tie'$$,
                  'a type or queue listed twice: each job once');
ROLLBACK TO SAVEPOINT ranges;

------------------------------------------------------------------------------------------
-- Scheduled jobs: outside the claim index until due, then promoted by the next claim
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('s', priority => 1000000, run_at => now() + interval '1 year') AS s_future,
       jobq_enqueue('s', run_at => now() + interval '1 second') AS s_soon,
       jobq_enqueue('s', run_at => now()) AS s_now,
       jobq_enqueue('s') AS s_null,
       jobq_enqueue('s', run_at => now() - interval '1 hour') AS s_past \gset
SELECT results_eq(
    format($$SELECT id, scheduled FROM jobq_all_jobs WHERE id IN (%L, %L, %L, %L, %L) ORDER BY id$$,
           :'s_future', :'s_soon', :'s_now', :'s_null', :'s_past'),
    format($$SELECT * FROM (VALUES (%L::uuid, true), (%L::uuid, true), (%L::uuid, false),
                                   (%L::uuid, false), (%L::uuid, false)) AS v ORDER BY 1$$,
           :'s_future', :'s_soon', :'s_now', :'s_null', :'s_past'),
    'jobq_enqueue: scheduled exactly when run_at is in the future'
);
CREATE TEMP TABLE many_ids AS
SELECT * FROM jobq_enqueue_many(jsonb_build_array(
    jsonb_build_object('job_type', 'm', 'run_at', now() + interval '1 day'),
    jsonb_build_object('job_type', 'm', 'run_at', now() - interval '1 day'),
    jsonb_build_object('job_type', 'm'),
    jsonb_build_object('job_type', 'm', 'idempotency_key', 'sk', 'run_at', now() + interval '1 day')
));
SELECT results_eq(
    $$SELECT e.ord, j.scheduled FROM many_ids AS e JOIN jobq_jobs AS j USING (id) ORDER BY e.ord$$,
    $$VALUES (1, true), (2, false), (3, false), (4, true)$$,
    'jobq_enqueue_many: the same, with and without idempotency keys'
);
DELETE FROM jobq_jobs WHERE job_type = 'm';

SELECT results_eq($$SELECT id FROM jobq_dequeue('w', batch_size => 10)$$,
                  format('SELECT id FROM jobq_all_jobs WHERE id IN (%L, %L, %L) ORDER BY available_at, id',
                         :'s_past', :'s_now', :'s_null'),
                  'scheduled jobs are not claimed before they are due, whatever their priority');
UPDATE jobq_jobs SET available_at = now() - interval '1 second' WHERE id = :'s_future';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is((SELECT scheduled FROM jobq_all_jobs WHERE id = :'s_future'), true,
          'a scheduled job that has come due is still marked (a claim promotes it) ...');
SELECT results_eq($$SELECT id, status, attempts FROM jobq_dequeue('w', batch_size => 10)$$,
                  format($$VALUES (%L::uuid, 'processing'::text, 1)$$, :'s_future'),
                  '... the next claim promotes and claims it');
SELECT is((SELECT scheduled FROM jobq_all_jobs WHERE id = :'s_soon'), true,
          'a job not yet due stays scheduled');

-- The promotion is bounded: at most 1,000 per claim, the earliest first; the rest next time.
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
INSERT INTO jobq_jobs (job_type, available_at, scheduled)
SELECT 'due', now() - interval '1 hour' + g * interval '1 second', true
FROM generate_series(1, 1001) AS g;
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w', batch_size => 1)), 1,
          '1,001 due scheduled jobs: a claim of one takes one');
SELECT results_eq(
    $$SELECT (count(*) FILTER (WHERE scheduled))::int,
             max(available_at) FILTER (WHERE scheduled) = now() - interval '1 hour' + interval '1001 seconds'
      FROM jobq_all_jobs$$,
    $$VALUES (1, true)$$,
    '... after promoting the 1,000 earliest: the latest is still scheduled'
);
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w', batch_size => 10000)), 1000,
          'the next claim promotes the last one and claims all that are left');

-- Every other way back to pending clears the mark.
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('r', max_attempts => 3) AS r1, jobq_enqueue('r', max_attempts => 3) AS r2 \gset
SELECT count(*) FROM jobq_dequeue('w', batch_size => 2);
SELECT is(jobq_fail(:'r1', 'w', 'again', backoff => '10 seconds'), 'pending', 'a retry with a backoff ...');
SELECT is((SELECT scheduled FROM jobq_all_jobs WHERE id = :'r1'), true, '... waits scheduled');
SELECT is(jobq_fail(:'r2', 'w', 'again', backoff => '0'), 'pending', 'a retry without backoff ...');
SELECT is((SELECT scheduled FROM jobq_all_jobs WHERE id = :'r2'), false, '... is claimable at once');
SELECT is((SELECT id FROM jobq_dequeue('w')), :'r2'::uuid, '... and claimed');
SELECT is(jobq_release(ARRAY[:'r2'::uuid], 'w'), 1, 'a released job ...');
SELECT is((SELECT scheduled FROM jobq_all_jobs WHERE id = :'r2'), false, '... is not scheduled');

------------------------------------------------------------------------------------------
-- Time zones
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SET LOCAL timezone = 'Asia/Kathmandu';   -- UTC+05:45
SELECT jobq_enqueue('tz', run_at => now() + interval '1 minute') AS tz_future,
       jobq_enqueue('tz', run_at => now()) AS tz_now \gset
SELECT results_eq($$SELECT id, locked_at FROM jobq_dequeue('w', batch_size => 10)$$,
                  format('VALUES (%L::uuid, now())', :'tz_now'),
                  'under another session time zone: the same choice, locked_at = now()');
RESET timezone;

------------------------------------------------------------------------------------------
-- Expired claims are candidates in claim order beside pending jobs, and a stale job that
-- ends (dead_letter) takes no place of the batch (issue 41)
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('exp', priority => 0) AS a \gset exp_
SELECT id FROM jobq_dequeue('w1');
SELECT jobq_enqueue('exp', priority => 9) AS b \gset exp_
SELECT id FROM jobq_dequeue('w1');
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600) WHERE id = :'exp_a';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3540), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3540) WHERE id = :'exp_b';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SAVEPOINT expired;
SELECT results_eq(
    $$SELECT priority FROM jobq_dequeue('w2', batch_size => 1, lock_timeout => '1 minute')$$,
    $$VALUES (9)$$,
    'two expired claims, batch_size 1: the higher priority one, not the older lock'
);
SELECT is((SELECT status FROM jobq_all_jobs WHERE id = :'exp_a'), 'processing',
          '... the other stays as it was, for a later claim');
ROLLBACK TO SAVEPOINT expired;
UPDATE jobq_jobs SET max_attempts = 1 WHERE id = :'exp_a';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT results_eq(
    $$SELECT id FROM jobq_dequeue('w2', batch_size => 1, lock_timeout => '1 minute')$$,
    ARRAY[:'exp_b'::uuid],
    'the older one has no attempt left: it ends, and the other is claimed all the same'
);
SELECT is((SELECT status FROM jobq_all_jobs WHERE id = :'exp_a'), 'dead_letter',
          '... the one with no attempt left is dead_letter');
SELECT is((SELECT attempts FROM jobq_all_jobs WHERE id = :'exp_b'), 2,
          '... the one taken over has its second attempt');

SELECT * FROM finish();
ROLLBACK;
