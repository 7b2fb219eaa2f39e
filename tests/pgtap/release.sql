-- jobq_release(job_ids, worker_id) RETURNS int
--
-- Gives back jobs that worker_id claimed but never started: pending,
-- available now, attempts - 1 (the claim is not counted), no error recorded. Jobs it does not
-- hold are left alone; returns how many were released.
--
-- Not covered here: NOTIFY (delivered at commit; see the Python suite).
BEGIN;
SELECT plan(14);

DELETE FROM jobq_jobs;

SELECT jobq_enqueue('r', run_at => now() - interval '3 minutes') AS a,
       jobq_enqueue('r', run_at => now() - interval '2 minutes') AS b,
       jobq_enqueue('r', run_at => now() - interval '1 minute') AS c,
       jobq_enqueue('r', run_at => now() + interval '1 hour') AS pend \gset
-- w1 claims a and b, w2 claims c
SELECT count(*) AS n1 FROM jobq_dequeue('w1', batch_size => 2) \gset
SELECT count(*) AS n2 FROM jobq_dequeue('w2') \gset
CREATE TEMP TABLE snap AS SELECT * FROM jobq_jobs WHERE id <> :'a';

SELECT is(jobq_release(ARRAY[:'a', :'c', :'pend', gen_random_uuid()]::uuid[], 'w1'), 1,
          'only the jobs the worker holds are released, and counted');
SELECT results_eq(
    format($$SELECT status, attempts, available_at, locked_at, locked_by, finished_at, updated_at,
                    last_error, errors
             FROM jobq_jobs WHERE id = %L$$, :'a'),
    $$VALUES ('pending'::text, 0, now(), NULL::timestamptz, NULL::text, NULL::timestamptz, now(),
              NULL::text, '[]'::jsonb)$$,
    'released: pending, available now, attempts back to 0, claim cleared, no error recorded'
);
SELECT results_eq('SELECT * FROM jobq_jobs WHERE id <> ' || quote_literal(:'a') || ' ORDER BY id',
                  'SELECT * FROM snap ORDER BY id',
                  'the jobs it does not hold (another worker''s, a pending one) are unchanged');

SELECT is(jobq_release(job_ids => ARRAY[:'b']::uuid[], worker_id => 'w1'), 1, 'named arguments');
SELECT is(jobq_release(ARRAY[:'b']::uuid[], 'w1'), 0, 'a job already released: 0');
SELECT is(jobq_release('{}', 'w2'), 0, 'an empty array: 0');
SELECT is(jobq_release(NULL, 'w2'), 0, 'job_ids NULL: 0');
SELECT throws_ok(format($$SELECT jobq_release(ARRAY[%L]::uuid[], NULL)$$, :'c'), '22023',
    'jobq_release: worker_id must be a non-blank string', 'worker_id NULL: 22023');

-- a released job is claimed again as the same attempt
SELECT is((SELECT attempts FROM jobq_dequeue('w3', batch_size => 10) WHERE id = :'a'), 1,
          'the released job is claimed again as attempt 1 (the released claim did not count)');

-- a job with a failed attempt behind it: attempts - 1, the error history unchanged
DELETE FROM jobq_jobs;
SELECT jobq_enqueue('r') AS e \gset
SELECT id AS claimed_e FROM jobq_dequeue('w1') \gset
SELECT jobq_fail(:'e', 'w1', 'first failure', backoff => '0') AS failed_e \gset
SELECT id AS claimed_e2 FROM jobq_dequeue('w1') \gset
SELECT is(jobq_release(ARRAY[:'e']::uuid[], 'w1'), 1, 'attempt 2 released');
SELECT results_eq(
    format($$SELECT attempts, last_error, jsonb_array_length(errors) FROM jobq_jobs WHERE id = %L$$, :'e'),
    $$VALUES (1, 'first failure'::text, 1)$$,
    'attempts 2 -> 1; last_error and errors of the earlier attempt kept, nothing added'
);

-- after a takeover the old holder releases nothing
SELECT id AS claimed_e3 FROM jobq_dequeue('w1') \gset
-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 360), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 360) WHERE id = :'e';
SELECT is((SELECT locked_by FROM jobq_dequeue('w2')), 'w2', 'w2 takes over the stale claim of w1');
SELECT is(jobq_release(ARRAY[:'e']::uuid[], 'w1'), 0, 'the old holder cannot release it');
SELECT is((SELECT status || '/' || locked_by FROM jobq_jobs WHERE id = :'e'), 'processing/w2',
          '... it stays with w2');

SELECT * FROM finish();
ROLLBACK;
