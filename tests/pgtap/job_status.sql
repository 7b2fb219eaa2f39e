-- jobq_job_status(job_ids) RETURNS TABLE(id, status, attempts, result, last_error,
--                                         finished_at, cancel_requested)
--
-- One row per known id, no payload; cancel_requested is false, never
-- NULL, without a request.
BEGIN;
SELECT plan(8);

DELETE FROM jobq_jobs;

-- each job is claimed alone, right after it is enqueued
SELECT jobq_enqueue('s') AS done \gset
SELECT id AS claimed FROM jobq_dequeue('w1') \gset
SELECT jobq_enqueue('s') AS asked \gset
SELECT id AS claimed FROM jobq_dequeue('w1') \gset
SELECT jobq_enqueue('s') AS failed \gset
SELECT id AS claimed FROM jobq_dequeue('w1') \gset
SELECT jobq_enqueue('s', '{"secret": 1}') AS pending \gset
SELECT jobq_complete(:'done', 'w1', result => '{"pages": 3}') AS ignored \gset
SELECT status AS ignored FROM jobq_cancel(ARRAY[:'asked']::uuid[]) \gset
-- The cancel requests are applied with SET CONSTRAINTS ALL, not by the constraint's name: on
-- a Citus node the name is the shell table's, and the shard's trigger has its own.
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT jobq_fail(:'failed', 'w1', 'boom', retry => false) AS ignored \gset

SELECT results_eq(
    format($$SELECT id, status, attempts, result, last_error, finished_at, cancel_requested
             FROM jobq_job_status(ARRAY[%L, %L, %L, %L]::uuid[]) ORDER BY status$$,
           :'pending', :'done', :'asked', :'failed'),
    format($$VALUES
        (%L::uuid, 'failed'::text, 1, NULL::jsonb, 'boom'::text, now(), false),
        (%L::uuid, 'pending', 0, NULL, NULL, NULL, false),
        (%L::uuid, 'processing', 1, NULL, NULL, NULL, true),
        (%L::uuid, 'succeeded', 1, '{"pages": 3}', NULL, now(), false)$$,
        :'failed', :'pending', :'asked', :'done'),
    'status, attempts, result, last_error, finished_at and cancel_requested of each job'
);
SELECT is_empty(
    format($$SELECT * FROM jobq_job_status(ARRAY[%L]::uuid[]) WHERE cancel_requested IS NULL$$, :'pending'),
    'cancel_requested is false, never NULL'
);
SELECT is((SELECT count(*)::int FROM jobq_job_status(ARRAY[gen_random_uuid()])), 0, 'an unknown id: no row');
SELECT is((SELECT count(*)::int FROM jobq_job_status(job_ids => ARRAY[:'done', :'done']::uuid[])), 1,
          'named argument; an id given twice: one row');
SELECT is_empty($$SELECT * FROM jobq_job_status(NULL)$$, 'job_ids NULL: no rows');
SELECT is_empty($$SELECT * FROM jobq_job_status('{}')$$, 'an empty array: no rows');
SELECT hasnt_column('public', 'jobq_job_status', 'payload', 'no payload column');
SELECT is(
    (SELECT array_agg(a.name ORDER BY a.ord)
     FROM pg_proc AS p,
          unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a (name, mode, ord)
     WHERE p.oid = 'jobq_job_status'::regproc AND a.mode = 't'),
    ARRAY['id', 'status', 'attempts', 'result', 'last_error', 'finished_at', 'cancel_requested']::text[],
    'the documented result columns, in their order (no payload)'
);

SELECT * FROM finish();
ROLLBACK;
