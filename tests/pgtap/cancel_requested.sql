-- jobq_cancel_requested(job_ids) RETURNS SETOF uuid
--
-- Which of the given jobs have a cancel request, for workers in any
-- language; sent with the heartbeat in one statement.
BEGIN;
SELECT plan(7);

DELETE FROM jobq_jobs;

SELECT jobq_enqueue('c') AS a, jobq_enqueue('c') AS b, jobq_enqueue('c') AS p \gset
SELECT count(*) AS claimed FROM jobq_dequeue('w1', batch_size => 3) \gset
UPDATE jobq_jobs SET status = 'pending', locked_at = NULL, locked_by = NULL, attempts = 0 WHERE id = :'p';

SELECT is_empty(format($$SELECT * FROM jobq_cancel_requested(ARRAY[%L, %L]::uuid[])$$, :'a', :'b'),
                'no request yet: nothing');
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'a']::uuid[]) \gset
-- The cancel requests are applied with SET CONSTRAINTS ALL, not by the constraint's name: on
-- a Citus node the name is the shell table's, and the shard's trigger has its own.
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT results_eq(
    format($$SELECT * FROM jobq_cancel_requested(ARRAY[%L, %L, %L, gen_random_uuid()]::uuid[])$$, :'a', :'b', :'p'),
    format($$VALUES (%L::uuid)$$, :'a'),
    'the job with a request, and only it (unknown ids left out)'
);
SELECT results_eq(
    format($$SELECT * FROM jobq_cancel_requested(job_ids => ARRAY[%L, %L]::uuid[])$$, :'a', :'a'),
    format($$VALUES (%L::uuid)$$, :'a'),
    'named argument; an id given twice comes back once'
);
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'b']::uuid[]) \gset
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT set_eq(
    format($$SELECT * FROM jobq_cancel_requested(ARRAY[%L, %L]::uuid[])$$, :'a', :'b'),
    format($$VALUES (%L::uuid), (%L::uuid)$$, :'a', :'b'),
    'both requests'
);
SELECT is((SELECT status FROM jobq_cancel(ARRAY[:'p']::uuid[])), 'cancelled', 'a pending job is cancelled at once');
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT is_empty(format($$SELECT * FROM jobq_cancel_requested(ARRAY[%L]::uuid[])$$, :'p'),
                '... and carries no request: nothing for a worker to stop');
SELECT is_empty($$SELECT * FROM jobq_cancel_requested(NULL)$$, 'job_ids NULL: nothing');

SELECT * FROM finish();
ROLLBACK;
