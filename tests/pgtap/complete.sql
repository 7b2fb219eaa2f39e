-- jobq_complete(job_id, worker_id, attempt, result) RETURNS boolean
-- jobq_complete_many(job_ids, worker_id, attempts, results) RETURNS int
--
-- Succeeded only while worker_id still holds the claim (of that attempt,
-- when given); returns whether it did (how many did); otherwise nothing changes. A worker
-- whose claim was taken over can no longer complete; with attempt, not even when the same
-- worker id took the job again. complete_many's `attempts` array gives one attempt per job
-- id. The result (results) argument is stored as the
-- job's result; one larger than max_payload_bytes is 54000 and changes nothing; a fenced-off
-- completion stores no result.
BEGIN;
SELECT plan(57);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

------------------------------------------------------------------------------------------
-- jobq_complete: happy path
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('c') AS a \gset
SELECT id AS claimed_a FROM jobq_dequeue('w1') \gset

SELECT is(jobq_complete(:'a', 'w1'), true, 'the worker holding the claim completes the job');
SELECT results_eq(
    format($$SELECT status, attempts, locked_at, locked_by, finished_at, updated_at, errors
             FROM jobq_all_jobs WHERE id = %L$$, :'a'),
    $$VALUES ('succeeded'::text, 1, NULL::timestamptz, NULL::text, now(), now(), '[]'::jsonb)$$,
    'succeeded: claim cleared, finished_at = now(), attempts kept, no error'
);
SELECT is(jobq_complete(:'a', 'w1'), false, 'a second completion returns false');

SELECT jobq_enqueue('c') AS b \gset
SELECT id AS claimed_b FROM jobq_dequeue('w1') \gset
SELECT is(jobq_complete(job_id => :'b', worker_id => 'w1', attempt => 1), true,
          'named arguments, with the attempt of the claim');

------------------------------------------------------------------------------------------
-- jobq_complete: false, and nothing changed
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('c') AS pending_job, jobq_enqueue('c') AS held \gset
UPDATE jobq_jobs SET available_at = now() + interval '1 day' WHERE id = :'pending_job';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT id AS claimed_held FROM jobq_dequeue('w1') \gset
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT is(jobq_complete(gen_random_uuid(), 'w1'), false, 'an unknown job: false');
SELECT is(jobq_complete(:'pending_job', 'w1'), false, 'a pending job: false');
SELECT is(jobq_complete(:'held', 'w2'), false, 'a job held by another worker: false');
SELECT is(jobq_complete(:'held', 'w1', attempt => 2), false, 'another attempt than the claim''s: false');
SELECT is(jobq_complete(:'held', 'w1', attempt => 0), false, 'attempt 0: false');
SELECT is(jobq_complete(NULL, 'w1'), false, 'job_id NULL: false');
SELECT throws_ok(format($$SELECT jobq_complete(%L, NULL)$$, :'held'), '22023',
    'jobq_complete: worker_id must be a non-blank string', 'worker_id NULL: 22023');
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'none of these changed anything');

------------------------------------------------------------------------------------------
-- Fencing: a claim taken over can no longer complete
------------------------------------------------------------------------------------------

-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600) WHERE id = :'held';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is(jobq_complete(:'held', 'w1'), true,
          'a lock that expired but was not taken over is still held: true');

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('c') AS f \gset
SELECT id AS claimed_f FROM jobq_dequeue('w1') \gset
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 360), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 360) WHERE id = :'f';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is((SELECT locked_by FROM jobq_dequeue('w2')), 'w2', 'w2 takes over the stale claim of w1');
DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT is(jobq_complete(:'f', 'w1'), false, 'the old worker cannot complete after a takeover');
SELECT is(jobq_complete(:'f', 'w1', attempt => 1), false, '... not even naming its own attempt');
SELECT is(jobq_complete_many(ARRAY[:'f'::uuid], 'w1'), 0, '... nor through complete_many');
SELECT results_eq('SELECT * FROM jobq_all_jobs', 'SELECT * FROM snap',
                  'the new claim is untouched');
SELECT is(jobq_complete(:'f', 'w2', attempt => 1), false, 'the new holder with the old attempt: false');
SELECT is(jobq_complete(:'f', 'w2', attempt => 2), true, 'the new holder with its attempt: true');

-- the same worker id claims the job again (a restarted worker with a fixed id)
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('c') AS g \gset
SELECT id AS claimed_g FROM jobq_dequeue('w1') \gset
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 360), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 360) WHERE id = :'g';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is((SELECT attempts FROM jobq_dequeue('w1')), 2, 'w1 takes its own stale job again: attempt 2');
SELECT is(jobq_complete(:'g', 'w1', attempt => 1), false,
          'attempt fencing: the first claim of w1 cannot complete the second');
SELECT is((SELECT status FROM jobq_all_jobs WHERE id = :'g'), 'processing', '... and nothing changed');
SELECT is(jobq_complete(:'g', 'w1', attempt => 2), true, 'the second claim completes');

------------------------------------------------------------------------------------------
-- jobq_complete_many
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
CREATE TEMP TABLE m AS
SELECT n, jobq_enqueue('m', payload => jsonb_build_object('n', n)) AS id FROM generate_series(1, 6) AS n;
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w1', batch_size => 4)), 4, 'w1 claims 4 jobs');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w2', batch_size => 1)), 1, 'w2 claims 1 job');
DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs WHERE locked_by IS DISTINCT FROM 'w1';

SELECT is(
    jobq_complete_many(job_ids => (SELECT array_agg(id) || gen_random_uuid() FROM m), worker_id => 'w1'),
    4,
    'complete_many completes exactly the jobs the worker holds and returns how many'
);
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'succeeded'), 4, 'four succeeded');
SELECT results_eq(
    'SELECT * FROM jobq_all_jobs WHERE id IN (SELECT id FROM snap) ORDER BY id',
    'SELECT * FROM snap ORDER BY id',
    'the job of w2 and the pending job are unchanged'
);
SELECT is(jobq_complete_many('{}', 'w2'), 0, 'an empty array: 0');

SELECT id AS w2_job FROM jobq_all_jobs WHERE locked_by = 'w2' \gset
SELECT is(jobq_complete_many(ARRAY[:'w2_job', :'w2_job']::uuid[], 'w2'), 1,
          'a job id given twice counts once');

-- attempts (extension): one attempt per id
SELECT id AS last_job FROM jobq_dequeue('w3') \gset
SELECT is(jobq_complete_many(ARRAY[:'last_job']::uuid[], 'w3', attempts => ARRAY[2]), 0,
          'attempts: a claim of another attempt is not completed');
SELECT throws_ok(
    format($$SELECT jobq_complete_many(ARRAY[%L]::uuid[], 'w3', attempts => ARRAY[1, 2])$$, :'last_job'),
    '22023', 'jobq_complete_many: attempts has 2 elements, job_ids has 1',
    'attempts and job_ids of different lengths: 22023'
);
SELECT is((SELECT status FROM jobq_all_jobs WHERE id = :'last_job'), 'processing', '... nothing changed');
SELECT is(jobq_complete_many(ARRAY[:'last_job']::uuid[], 'w3', attempts => ARRAY[1]), 1,
          'attempts: the claim of that attempt is completed');

-- NULL job_ids: like jobq_heartbeat(w, NULL) and jobq_release(NULL, w), nothing to do (0).
SELECT lives_ok($$SELECT jobq_complete_many(NULL, 'w1')$$,
                'job_ids NULL completes nothing instead of raising');
SELECT throws_ok($$SELECT jobq_complete_many(ARRAY[gen_random_uuid()], NULL)$$, '22023',
    'jobq_complete_many: worker_id must be a non-blank string', 'worker_id NULL: 22023');

------------------------------------------------------------------------------------------
-- Results
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_configure(max_payload_bytes => 100) AS configured \gset
SELECT jobq_enqueue('r') AS r1 \gset
SELECT id AS claimed_r1 FROM jobq_dequeue('w1') \gset
SELECT is(jobq_complete(:'r1', 'w1', result => '{"pages": 12, "ok": true}'), true,
          'a completion with a result (named argument)');
SELECT is((SELECT result FROM jobq_all_jobs WHERE id = :'r1'), '{"pages": 12, "ok": true}'::jsonb,
          'the result is stored');
SELECT jobq_enqueue('r') AS r2 \gset
SELECT id AS claimed_r2 FROM jobq_dequeue('w1') \gset
SELECT is(jobq_complete(:'r2', 'w1', 1, '"a string"'), true, 'positional; any JSON value');
SELECT is((SELECT result FROM jobq_all_jobs WHERE id = :'r2'), '"a string"'::jsonb, 'a JSON string is stored');
SELECT is(jobq_complete(:'r2', 'w1', result => '1'), false, 'a second completion: false');
SELECT is((SELECT result FROM jobq_all_jobs WHERE id = :'r2'), '"a string"'::jsonb, '... and the result is unchanged');

-- the limit, to the byte (the text form, as for payloads)
SELECT jobq_enqueue('r') AS r3 \gset
SELECT id AS claimed_r3 FROM jobq_dequeue('w1') \gset
SELECT octet_length(jsonb_build_object('s', repeat('x', n))::text) AS size, n AS fits
FROM generate_series(1, 200) AS n
WHERE octet_length(jsonb_build_object('s', repeat('x', n))::text) = 100 \gset
DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;
SELECT throws_ok(
    format($$SELECT jobq_complete(%L, 'w1', result => jsonb_build_object('s', repeat('x', %s)))$$,
           :'r3', :fits + 1),
    '54000', 'jobq_complete: result is 101 bytes, the limit is 100 bytes',
    'a result one byte over max_payload_bytes: 54000'
);
SELECT throws_ok(
    format($$SELECT jobq_complete_many(ARRAY[%L, %L]::uuid[], 'w1',
                                       results => ARRAY['1', jsonb_build_object('s', repeat('x', %s))])$$,
           :'r3', :'r1', :fits + 1),
    '54000', 'jobq_complete_many: results[2] is 101 bytes, the limit is 100 bytes',
    'complete_many names the result over the limit'
);
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'a result over the limit changes nothing (the job is still processing)');
SELECT is(jobq_complete(:'r3', 'w1', result => jsonb_build_object('s', repeat('x', :fits))), true,
          'a result of exactly max_payload_bytes is stored');

-- a fenced-off completion stores no result
SELECT jobq_enqueue('r') AS r4 \gset
SELECT id AS claimed_r4 FROM jobq_dequeue('w1') \gset
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600) WHERE id = :'r4';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is((SELECT locked_by FROM jobq_dequeue('w2')), 'w2', 'w2 takes over the stale claim of w1');
SELECT is(jobq_complete(:'r4', 'w1', result => '{"stale": true}'), false, 'the old worker''s completion is fenced off');
SELECT is(jobq_complete_many(ARRAY[:'r4']::uuid[], 'w1', results => ARRAY['{"stale": true}'::jsonb]), 0,
          '... through complete_many too');
SELECT results_eq(format($$SELECT status, result FROM jobq_all_jobs WHERE id = %L$$, :'r4'),
                  $$VALUES ('processing'::text, NULL::jsonb)$$, 'no result was stored');
SELECT is(jobq_complete(:'r4', 'w2', attempt => 2), true, 'the new holder completes without a result');
SELECT is((SELECT result FROM jobq_all_jobs WHERE id = :'r4'), NULL, 'a completion without a result stores NULL');

-- complete_many: one result per id, NULL for none
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('m') AS m1 \gset
SELECT jobq_enqueue('m') AS m2 \gset
SELECT jobq_enqueue('m') AS m3 \gset
SELECT count(*) AS claimed_m FROM jobq_dequeue('w1', batch_size => 3) \gset
SELECT throws_ok(
    format($$SELECT jobq_complete_many(ARRAY[%L, %L]::uuid[], 'w1', results => ARRAY['1'::jsonb])$$, :'m1', :'m2'),
    '22023', 'jobq_complete_many: results has 1 elements, job_ids has 2',
    'results and job_ids of different lengths: 22023'
);
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'processing'), 3, '... nothing changed');
SELECT is(
    jobq_complete_many(ARRAY[:'m1', :'m2', :'m3']::uuid[], 'w1', attempts => ARRAY[1, 1, 2],
                       results => ARRAY['{"n": 1}', NULL, '{"n": 3}']::jsonb[]),
    2, 'complete_many with attempts and results: the two claims of those attempts'
);
SELECT results_eq(
    format($$SELECT status, result FROM jobq_all_jobs WHERE id IN (%L, %L, %L)
             ORDER BY array_position(ARRAY[%L, %L, %L]::uuid[], id)$$,
           :'m1', :'m2', :'m3', :'m1', :'m2', :'m3'),
    $$VALUES ('succeeded'::text, '{"n": 1}'::jsonb), ('succeeded', NULL), ('processing', NULL)$$,
    'each result goes to its job; NULL stores none; the fenced one (attempt 2) stores nothing'
);

SELECT * FROM finish();
ROLLBACK;
