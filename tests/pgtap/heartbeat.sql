-- jobq_heartbeat(worker_id, job_ids) RETURNS int
--
-- Renews the claims of those jobs that worker_id still holds (locked_at to now, locked_until
-- by the claim's own lock length); returns how many. A long job whose worker is alive is never
-- taken over. Locks are aged by backdating locked_at and locked_until.
BEGIN;
SELECT plan(17);

DELETE FROM jobq_jobs;

SELECT jobq_enqueue('h', run_at => now() - interval '3 minutes') AS a,
       jobq_enqueue('h', run_at => now() - interval '2 minutes') AS b,
       jobq_enqueue('h', run_at => now() - interval '1 minute') AS c,
       jobq_enqueue('h', run_at => now() + interval '1 hour') AS pend,
       jobq_enqueue('h') AS done \gset
-- w1 claims a and b, w2 claims c, w3 claims and completes done
SELECT count(*) AS n1 FROM jobq_dequeue('w1', batch_size => 2) \gset
SELECT count(*) AS n2 FROM jobq_dequeue('w2', batch_size => 1) \gset
SELECT count(*) AS n3 FROM jobq_dequeue('w3', batch_size => 1) \gset
SELECT jobq_complete(:'done', 'w3') AS completed \gset
SELECT results_eq('SELECT id, locked_by FROM jobq_jobs WHERE status = ''processing'' ORDER BY available_at',
                  format($$VALUES (%L::uuid, 'w1'::text), (%L::uuid, 'w1'), (%L::uuid, 'w2')$$, :'a', :'b', :'c'),
                  'w1 holds a and b, w2 holds c');

-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 240), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 240) WHERE status = 'processing';
CREATE TEMP TABLE snap AS SELECT * FROM jobq_jobs;

SELECT is(
    jobq_heartbeat('w1', ARRAY[:'a', :'b', :'c', :'pend', :'done', gen_random_uuid()]::uuid[]),
    2,
    'only the claims the worker holds are renewed, and counted'
);
SELECT results_eq(
    'SELECT id, locked_at FROM jobq_jobs WHERE status = ''processing'' ORDER BY available_at',
    format($$VALUES (%L::uuid, now()), (%L::uuid, now()), (%L::uuid, now() - interval '4 minutes')$$,
           :'a', :'b', :'c'),
    'a and b renewed to now(); c (held by w2) untouched'
);
SELECT results_eq(
    'SELECT id, locked_until FROM jobq_jobs WHERE status = ''processing'' ORDER BY available_at',
    format($$VALUES (%L::uuid, now() + interval '5 minutes'), (%L::uuid, now() + interval '5 minutes'),
                    (%L::uuid, now() + interval '1 minute')$$, :'a', :'b', :'c'),
    'their locks now expire one lock length (5 minutes, the claim''s) from now; c''s is as it was'
);
SELECT results_eq(
    $$SELECT id, queue, job_type, payload, idempotency_key, status, priority, attempts, max_attempts,
             available_at, locked_by, last_error, errors, created_at, updated_at, finished_at
      FROM jobq_jobs ORDER BY id$$,
    $$SELECT id, queue, job_type, payload, idempotency_key, status, priority, attempts, max_attempts,
             available_at, locked_by, last_error, errors, created_at, updated_at, finished_at
      FROM snap ORDER BY id$$,
    'a heartbeat changes nothing but locked_at and locked_until'
);

SELECT is(jobq_heartbeat(worker_id => 'w2', job_ids => ARRAY[:'c']::uuid[]), 1, 'named arguments');
SELECT is(jobq_heartbeat('w1', '{}'), 0, 'an empty array: 0');
SELECT is(jobq_heartbeat('w1', NULL), 0, 'job_ids NULL: 0');
SELECT throws_ok(format($$SELECT jobq_heartbeat(NULL, ARRAY[%L]::uuid[])$$, :'a'), '22023',
    'jobq_heartbeat: worker_id must be a non-blank string', 'worker_id NULL: 22023');
SELECT is(jobq_heartbeat('w1', ARRAY[:'a', :'a']::uuid[]), 1, 'an id given twice counts once');

-- A live worker is never taken over: its heartbeats keep the lock younger than lock_timeout.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 270), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 270) WHERE locked_by = 'w1';
SELECT is(jobq_heartbeat('w1', ARRAY[:'a', :'b']::uuid[]), 2, 'w1 heartbeats before its locks expire');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w9', lock_timeout => '5 minutes', batch_size => 10)$$,
                'so no other worker takes its jobs');

-- A lock that has expired but was not yet taken over can still be renewed: the claim is held.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 600) WHERE id = :'a';
SELECT is(jobq_heartbeat('w1', ARRAY[:'a']::uuid[]), 1, 'an expired but still held claim is renewed');

-- After a takeover the old worker's heartbeat renews nothing, and tells it so.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 600) WHERE id = :'b';
SELECT is((SELECT id FROM jobq_dequeue('w9', batch_size => 10)), :'b'::uuid, 'w9 takes over b');
SELECT is(jobq_heartbeat('w1', ARRAY[:'a', :'b']::uuid[]), 1,
          'the old holder renews only a: the smaller count tells it that b is lost');
SELECT is((SELECT locked_by FROM jobq_jobs WHERE id = :'b'), 'w9', 'b stays with w9');

-- A claim keeps the lock length it was made with: a 20-second claim is renewed by 20 seconds.
SELECT jobq_enqueue('short') AS short \gset
SELECT count(*) AS n4 FROM jobq_dequeue('w4', '{short}', lock_timeout => '20 seconds') \gset
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 15), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 15)
WHERE id = :'short';
SELECT jobq_heartbeat('w4', ARRAY[:'short']::uuid[]) AS renewed \gset
SELECT is((SELECT locked_until FROM jobq_jobs WHERE id = :'short'), now() + interval '20 seconds',
          'a 20-second claim renewed expires 20 seconds from now');

SELECT * FROM finish();
ROLLBACK;
