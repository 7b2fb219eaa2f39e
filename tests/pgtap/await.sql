-- jobq_await(job_ids, timeout) RETURNS TABLE(<the columns of jobq_job_status>)
--
-- Returns as soon as every given job is finished, or when timeout (at
-- most 5 minutes, else 22023) has passed, with the statuses at that moment. With timeout 0 it
-- returns at once and registers interest in the unfinished jobs (their end is then notified: see
-- tests/python/test_results.py, NOTIFY is delivered at commit and these files roll back).
-- Seeing commits made while it waits, and the refusal under REPEATABLE READ, need other
-- sessions or a transaction of their own: tests/python/test_results.py.
BEGIN;
SELECT plan(18);

DELETE FROM jobq_jobs;

SELECT jobq_enqueue('a') AS done \gset
SELECT id AS claimed FROM jobq_dequeue('w1') \gset
SELECT jobq_complete(:'done', 'w1', result => '[1, 2]') AS ignored \gset
SELECT jobq_enqueue('a') AS running \gset
SELECT id AS claimed FROM jobq_dequeue('w1') \gset
SELECT jobq_enqueue('a') AS pending \gset

-- finished jobs: at once, whatever the timeout
SELECT results_eq(
    format($$SELECT id, status, attempts, result, last_error, finished_at, cancel_requested
             FROM jobq_await(ARRAY[%L, gen_random_uuid()]::uuid[], timeout => '5 minutes')$$, :'done'),
    format($$VALUES (%L::uuid, 'succeeded'::text, 1, '[1, 2]'::jsonb, NULL::text, now(), false)$$, :'done'),
    'every job finished: the rows of jobq_job_status, at once (an unknown id is left out, not waited for)'
);
SELECT results_eq(
    format($$SELECT * FROM jobq_await(ARRAY[%L]::uuid[], '5 minutes')$$, :'done'),
    format($$SELECT * FROM jobq_job_status(ARRAY[%L]::uuid[])$$, :'done'),
    'the same columns as jobq_job_status'
);

-- unfinished jobs: the statuses when the timeout has passed
SELECT results_eq(
    format($$SELECT status FROM jobq_await(ARRAY[%L, %L, %L]::uuid[], '200 milliseconds') ORDER BY status$$,
           :'done', :'running', :'pending'),
    $$VALUES ('pending'::text), ('processing'), ('succeeded')$$,
    'not all finished: after the timeout, the statuses at that moment'
);
SELECT is((SELECT count(*)::int FROM jobq_awaits), 0, 'a wait with a timeout registers nothing');

-- timeout 0: at once, and interest in the unfinished jobs is registered (jobq_awaits)
SELECT results_eq(
    format($$SELECT status FROM jobq_await(ARRAY[%L, %L, %L]::uuid[], '0') ORDER BY status$$,
           :'done', :'running', :'pending'),
    $$VALUES ('pending'::text), ('processing'), ('succeeded')$$,
    'timeout 0: the statuses at once'
);
SELECT results_eq(
    'SELECT j.status, count(a.job_id)::int FROM jobq_all_jobs AS j LEFT JOIN jobq_awaits AS a ON a.job_id = j.id GROUP BY j.status ORDER BY j.status',
    $$VALUES ('pending'::text, 1), ('processing', 1), ('succeeded', 0)$$,
    'timeout 0 registers the unfinished jobs, not the finished one'
);
SELECT is((SELECT count(*)::int FROM jobq_await(job_ids => ARRAY[:'pending']::uuid[], timeout => '0')), 1,
          'named arguments; a repeated registration is harmless');
SELECT is((SELECT count(*)::int FROM jobq_awaits WHERE job_id = :'pending'), 1,
          '... and writes nothing: one row per job');
SELECT is_empty($$SELECT * FROM jobq_await(NULL, '0')$$, 'job_ids NULL: no rows');
SELECT is_empty($$SELECT * FROM jobq_await('{}')$$, 'an empty array: no rows, at once (nothing to wait for)');

-- bad input
CREATE TEMP TABLE snap AS SELECT * FROM jobq_jobs;
SELECT throws_ok(format($$SELECT * FROM jobq_await(ARRAY[%L]::uuid[], NULL)$$, :'running'), '22023',
    'jobq_await: timeout must be between 0 and 5 minutes, got NULL', 'timeout NULL: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_await(ARRAY[%L]::uuid[], '-1 second')$$, :'running'), '22023',
    'jobq_await: timeout must be between 0 and 5 minutes, got -00:00:01', 'a negative timeout: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_await(ARRAY[%L]::uuid[], '5 minutes 1 second')$$, :'running'), '22023',
    'jobq_await: timeout must be between 0 and 5 minutes, got 00:05:01', 'over 5 minutes: 22023');
SELECT throws_ok($$SELECT * FROM jobq_await(ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 10001)), '0')$$,
    '54000', 'jobq_await: job_ids has 10001 elements, at most 10000 are allowed', 'more than 10,000 ids: 54000');
SELECT results_eq('SELECT * FROM jobq_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'refused calls changed nothing');
SELECT is((SELECT count(*)::int FROM jobq_awaits), 2, '... and registered nothing');

-- the statement that ends an awaited job removes its registration (and notifies)
SELECT ok(jobq_complete(:'running', 'w1'), 'the awaited running job completes');
SELECT is((SELECT count(*)::int FROM jobq_awaits WHERE job_id = :'running'), 0,
          '... its registration is gone with it');

SELECT * FROM finish();
ROLLBACK;
