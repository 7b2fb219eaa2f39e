-- jobq_cancel(job_ids, reason) RETURNS TABLE(job_id, status)
--
-- A pending job becomes cancelled at once (finished_at, reason as
-- last_error); a processing job keeps running and gets cancel_requested_at; a finished job is
-- left alone; one row per known id with the status after the call (cancel_requested for the
-- running ones). A job with a cancel request that then fails, is released or is taken over ends
-- cancelled and is never claimed again; one that completes ends succeeded. Requeue and prune
-- accept cancelled jobs.
BEGIN;
SELECT plan(51);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

------------------------------------------------------------------------------------------
-- pending, processing, finished, unknown
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('c') AS running \gset
SELECT id AS claimed FROM jobq_dequeue('w1') \gset
SELECT jobq_enqueue('c') AS pending, jobq_enqueue('c') AS done \gset
UPDATE jobq_jobs SET status = 'succeeded', finished_at = now() - interval '1 hour' WHERE id = :'done';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT gen_random_uuid() AS unknown \gset

SELECT results_eq(
    format($$SELECT job_id, status FROM jobq_cancel(ARRAY[%L, %L, %L, %L]::uuid[], 'user asked')
             ORDER BY status$$, :'pending', :'running', :'done', :'unknown'),
    format($$VALUES (%L::uuid, 'cancel_requested'::text), (%L::uuid, 'cancelled'), (%L::uuid, 'succeeded')$$,
           :'running', :'pending', :'done'),
    'one row per known id: cancelled (was pending), cancel_requested (processing), the finished status as it was'
);
-- The cancel requests are applied with SET CONSTRAINTS ALL, not by the constraint's name: on
-- a Citus node the name is the shell table's, and the shard's trigger has its own.
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT results_eq(
    format($$SELECT status, finished_at, last_error, cancel_requested_at, cancel_reason, updated_at
             FROM jobq_all_jobs WHERE id = %L$$, :'pending'),
    $$VALUES ('cancelled'::text, now(), 'user asked'::text, NULL::timestamptz, NULL::text, now())$$,
    'a pending job: cancelled at once, finished_at = now(), the reason as last_error'
);
SELECT results_eq(
    format($$SELECT status, locked_by, attempts, finished_at, cancel_requested_at, cancel_reason
             FROM jobq_all_jobs WHERE id = %L$$, :'running'),
    $$VALUES ('processing'::text, 'w1'::text, 1, NULL::timestamptz, now(), 'user asked'::text)$$,
    'a processing job keeps running (claim kept) and gets cancel_requested_at and the reason'
);
SELECT results_eq(
    format($$SELECT status, finished_at, cancel_requested_at FROM jobq_all_jobs WHERE id = %L$$, :'done'),
    $$VALUES ('succeeded'::text, now() - interval '1 hour', NULL::timestamptz)$$,
    'a finished job is left alone'
);

-- a second cancel changes nothing and reports the same statuses
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;
SELECT results_eq(
    format($$SELECT job_id, status FROM jobq_cancel(job_ids => ARRAY[%L, %L]::uuid[], reason => 'again')
             ORDER BY status$$, :'pending', :'running'),
    format($$VALUES (%L::uuid, 'cancel_requested'::text), (%L::uuid, 'cancelled')$$, :'running', :'pending'),
    'a repeated cancel (named arguments): the same statuses'
);
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'a repeated cancel changes nothing (the first request and its reason stay)');
SELECT is_empty($$SELECT * FROM jobq_cancel(NULL)$$, 'job_ids NULL: no rows');
SELECT is_empty($$SELECT * FROM jobq_cancel('{}')$$, 'an empty array: no rows');
SELECT is_empty(format($$SELECT * FROM jobq_cancel(ARRAY[%L]::uuid[])$$, :'unknown'), 'an unknown id: no row');
SELECT throws_ok(
    $$SELECT * FROM jobq_cancel(ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 100001)))$$,
    '54000', 'jobq_cancel: job_ids has 100001 elements, at most 100000 are allowed',
    'more than 100,000 ids: 54000'
);
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'none of these changed anything');

-- without a reason
SELECT jobq_enqueue('c') AS quiet \gset
SELECT is((SELECT status FROM jobq_cancel(ARRAY[:'quiet']::uuid[])), 'cancelled', 'no reason: cancelled');
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT is((SELECT last_error FROM jobq_all_jobs WHERE id = :'quiet'), 'cancelled',
          'no reason: last_error says cancelled');
SELECT jobq_enqueue('c') AS long_reason \gset
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'long_reason']::uuid[], repeat('r', 20000)) \gset
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT is((SELECT length(last_error) FROM jobq_all_jobs WHERE id = :'long_reason'), 10000,
          'a reason is cut to its first 10,000 characters');

------------------------------------------------------------------------------------------
-- A cancelled job is never claimed; a pending job never carries a request
------------------------------------------------------------------------------------------

SELECT is_empty($$SELECT * FROM jobq_dequeue('w2', batch_size => 100)$$,
                'cancelled jobs are not claimed (the running one is held)');
SELECT throws_ok(format($$UPDATE jobq_jobs SET status = 'pending', locked_at = NULL, locked_by = NULL
                          WHERE id = %L$$, :'running'), '23514', NULL,
    'jobq_jobs_cancel_check: a job with a cancel request cannot become pending');

------------------------------------------------------------------------------------------
-- How the attempt of a job with a request ends
------------------------------------------------------------------------------------------

-- fail: cancelled, whatever retry says; the error is recorded as for any failure
SELECT is(jobq_fail(:'running', 'w1', 'stopped by request'), 'cancelled', 'jobq_fail returns cancelled');
SELECT results_eq(
    format($$SELECT status, finished_at, last_error, locked_by, jsonb_array_length(errors), cancel_reason
             FROM jobq_all_jobs WHERE id = %L$$, :'running'),
    $$VALUES ('cancelled'::text, now(), 'stopped by request'::text, NULL::text, 1, 'user asked'::text)$$,
    'failed with a request: cancelled, finished, the error recorded, the reason kept'
);
SELECT jobq_enqueue('c') AS no_retry \gset
SELECT id AS claimed2 FROM jobq_dequeue('w1') \gset
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'no_retry']::uuid[]) \gset
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT is(jobq_fail(:'no_retry', 'w1', 'e', retry => false), 'cancelled', 'retry => false: cancelled too');
SELECT jobq_enqueue('c', max_attempts => 1) AS last_attempt \gset
SELECT id AS claimed3 FROM jobq_dequeue('w1') \gset
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'last_attempt']::uuid[]) \gset
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT is(jobq_fail(:'last_attempt', 'w1', 'e'), 'cancelled', 'on its last attempt: cancelled, not dead_letter');

-- complete: succeeded, the request stays visible
SELECT jobq_enqueue('c') AS finishes \gset
SELECT id AS claimed4 FROM jobq_dequeue('w1') \gset
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'finishes']::uuid[]) \gset
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT is(jobq_complete(:'finishes', 'w1', result => '"done anyway"'), true, 'a job asked to stop may still complete');
SELECT results_eq(
    format($$SELECT status, result, cancel_requested_at IS NOT NULL FROM jobq_all_jobs WHERE id = %L$$, :'finishes'),
    $$VALUES ('succeeded'::text, '"done anyway"'::jsonb, true)$$,
    'completed with a request: succeeded, with its result; the request stays on record'
);

-- release: cancelled instead of pending, the attempt not counted
SELECT jobq_enqueue('c') AS released \gset
SELECT id AS claimed5 FROM jobq_dequeue('w1') \gset
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'released']::uuid[]) \gset
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT is(jobq_release(ARRAY[:'released']::uuid[], 'w1'), 1, 'jobq_release counts it');
SELECT results_eq(
    format($$SELECT status, attempts, finished_at, locked_by FROM jobq_all_jobs WHERE id = %L$$, :'released'),
    $$VALUES ('cancelled'::text, 0, now(), NULL::text)$$,
    'released with a request: cancelled (never started, attempt not counted), not pending'
);

-- release of orphans (a worker that lost a claim's reply): cancelled as well
SELECT jobq_enqueue('c') AS orphan \gset
SELECT id AS claimed_o FROM jobq_dequeue('w9') \gset
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'orphan']::uuid[]) \gset
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT is(jobq_release_orphans('w9', '{}'), 1, 'jobq_release_orphans counts it');
SELECT results_eq(
    format($$SELECT status, attempts, finished_at, locked_by FROM jobq_all_jobs WHERE id = %L$$, :'orphan'),
    $$VALUES ('cancelled'::text, 0, now(), NULL::text)$$,
    'an orphan with a request: cancelled, not pending'
);

-- takeover of an expired claim: cancelled, recorded in errors, not claimed
SELECT jobq_enqueue('c') AS stale \gset
SELECT id AS claimed6 FROM jobq_dequeue('w1') \gset
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'stale']::uuid[]) \gset
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600) WHERE id = :'stale';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is_empty($$SELECT * FROM jobq_dequeue('w2', lock_timeout => '5 minutes')$$,
                'a stale claim with a request is not taken over to run again');
SELECT results_eq(
    format($$SELECT status, finished_at, locked_by, errors -> 0 ->> 'kind', errors -> 0 ->> 'worker'
             FROM jobq_all_jobs WHERE id = %L$$, :'stale'),
    $$VALUES ('cancelled'::text, now(), NULL::text, 'lock_expired'::text, 'w1'::text)$$,
    'taken over with a request: cancelled, the lost lock recorded in errors'
);
SELECT is(jobq_complete(:'stale', 'w1'), false, 'the old worker''s late completion is fenced off');
SELECT is(jobq_fail(:'stale', 'w1', 'late'), NULL, 'and so is its late failure');
SELECT is((SELECT status FROM jobq_all_jobs WHERE id = :'stale'), 'cancelled', 'the job stays cancelled');

------------------------------------------------------------------------------------------
-- Requeue and prune accept cancelled jobs
------------------------------------------------------------------------------------------

SELECT is(jobq_requeue_dead_letter(:'running'), true, 'jobq_requeue_dead_letter requeues a cancelled job');
SELECT results_eq(
    format($$SELECT status, attempts, finished_at, cancel_requested_at, cancel_reason, last_error
             FROM jobq_all_jobs WHERE id = %L$$, :'running'),
    $$VALUES ('pending'::text, 0, NULL::timestamptz, NULL::timestamptz, NULL::text, 'stopped by request'::text)$$,
    'requeued: pending, attempts 0, the cancel request cleared, the error history kept'
);
SELECT is(jobq_requeue_dead_letters(job_type => 'c'), 0, 'jobq_requeue_dead_letters leaves cancelled jobs alone by default');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'cancelled'), 8, '... all eight stay cancelled');
SELECT is(jobq_requeue_dead_letters(job_type => 'c', include_cancelled => true), 8,
          'jobq_requeue_dead_letters(include_cancelled => true) requeues every cancelled job');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'cancelled'), 0, 'none is left cancelled');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'pending' AND cancel_requested_at IS NOT NULL), 0,
          'no pending job carries a request');

SELECT jobq_enqueue('old') AS old \gset
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'old']::uuid[]) \gset
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
UPDATE jobq_jobs_history SET finished_at = now() - interval '8 days' WHERE id = :'old';
SELECT is(jobq_prune(statuses => '{cancelled}'), 1::bigint, 'jobq_prune deletes cancelled jobs older than 7 days');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE id = :'old'), 0, '... that one is gone');

------------------------------------------------------------------------------------------
-- A cancel racing a claim in the same transaction order: claimed first, then cancelled
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('r') AS raced \gset
SELECT id AS claimed7 FROM jobq_dequeue('w3') \gset
SELECT is((SELECT status FROM jobq_cancel(ARRAY[:'raced']::uuid[])), 'cancel_requested',
          'a cancel after the claim: a request, the job keeps its claim');
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT is((SELECT count(*)::int FROM jobq_cancel_requested(ARRAY[:'raced']::uuid[])), 1,
          'the worker sees the request');
SELECT is(jobq_heartbeat('w3', ARRAY[:'raced']::uuid[]), 1, 'the claim is still renewed (it is still running)');

-- statuses are reported under odd session settings too
SET LOCAL TimeZone = 'Pacific/Chatham';
SET LOCAL DateStyle = 'SQL, DMY';
SELECT is((SELECT cancel_requested_at FROM jobq_all_jobs WHERE id = :'raced'), now(),
          'cancel_requested_at is now(), whatever the session time zone');

------------------------------------------------------------------------------------------
-- A processing job's request is staged and reaches its row when the transaction commits
-- (the deferred trigger jobq_cancel_requests_apply; SET CONSTRAINTS ... IMMEDIATE fires it
-- here as COMMIT would), so that the caller holds no lock on the row in between.
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('s1') AS s_running, jobq_enqueue('s2') AS s_released, jobq_enqueue('s3') AS s_done \gset
SELECT count(*) AS ignored FROM jobq_dequeue('w5', job_types => '{s1,s2,s3}', batch_size => 3) \gset
SELECT is((SELECT count(*)::int FROM jobq_cancel(ARRAY[:'s_running', :'s_released', :'s_done']::uuid[], 'staged')
           WHERE status = 'cancel_requested'), 3, 'three processing jobs: cancel_requested');
SELECT results_eq(
    'SELECT count(*)::int, count(cancel_requested_at)::int FROM jobq_all_jobs',
    'VALUES (3, 0)',
    'before the commit, no job row is changed (no row lock for a worker to wait on)'
);
SELECT is((SELECT count(*)::int FROM jobq_cancel_requests), 3, '... the requests are staged');
-- the attempts of two of them end before the commit: one released, one completed
SELECT is(jobq_release(ARRAY[:'s_released']::uuid[], 'w5'), 1, 'a release before the commit is not held up');
SELECT is(jobq_complete(:'s_done', 'w5'), true, 'a completion before the commit is not held up');
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;
SELECT results_eq(
    format($$SELECT id, status, cancel_requested_at, cancel_reason, last_error, finished_at
             FROM jobq_all_jobs ORDER BY status$$),
    format($$VALUES (%L::uuid, 'cancelled'::text, NULL::timestamptz, NULL::text, 'staged'::text, now()),
                    (%L::uuid, 'processing', now(), 'staged', NULL, NULL),
                    (%L::uuid, 'succeeded', NULL, NULL, NULL, now())$$,
           :'s_released', :'s_running', :'s_done'),
    'at the commit: still running gets the request, pending again is cancelled, completed is left alone'
);
SELECT is((SELECT count(*)::int FROM jobq_cancel_requests), 0, 'no staged request outlives the commit');

SELECT * FROM finish();
ROLLBACK;
