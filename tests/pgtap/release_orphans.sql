-- jobq_release_orphans(worker_id, job_ids) RETURNS int
--
-- A worker that lost the reply to a claim gets those jobs back at once
-- when it reconnects: every job locked by its worker id that it does not list as held is
-- released as jobq_release does (pending, available now, attempts - 1, no error recorded).
-- Jobs of other workers, and the ones it lists, are left alone.
--
-- Not covered here: NOTIFY (delivered at commit) and a row locked by another session (SKIP
-- LOCKED needs two sessions): see the Python and fault suites.
BEGIN;
SELECT plan(12);

DELETE FROM jobq_jobs;

SELECT jobq_enqueue('o', run_at => now() - interval '4 minutes') AS held,
       jobq_enqueue('o', run_at => now() - interval '3 minutes') AS lost1,
       jobq_enqueue('o', run_at => now() - interval '2 minutes') AS lost2,
       jobq_enqueue('o', run_at => now() - interval '1 minute') AS other,
       jobq_enqueue('o', run_at => now() + interval '1 hour') AS pend \gset
SELECT count(*) AS n1 FROM jobq_dequeue('w1', batch_size => 3) \gset
SELECT count(*) AS n2 FROM jobq_dequeue('w2') \gset
SELECT jobq_enqueue('o', run_at => now() - interval '5 minutes') AS done \gset
SELECT count(*) AS n3 FROM jobq_dequeue('w1', job_types => '{o}', batch_size => 1) \gset
SELECT jobq_complete(:'done', 'w1') AS completed \gset

------------------------------------------------------------------------------------------
-- Bad input: 22023, nothing changed
------------------------------------------------------------------------------------------

CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;
SELECT throws_ok($$SELECT jobq_release_orphans(NULL, '{}')$$, '22023',
    'jobq_release_orphans: worker_id must be a non-blank string', 'worker_id NULL: 22023');
SELECT throws_ok($$SELECT jobq_release_orphans(' ', '{}')$$, '22023',
    'jobq_release_orphans: worker_id must be a non-blank string', 'worker_id blank: 22023');
SELECT throws_ok($$SELECT jobq_release_orphans('w1', NULL)$$, '22023',
    'jobq_release_orphans: job_ids must be an array of the jobs the worker holds, not NULL',
    'job_ids NULL: 22023 (it would mean "release everything")');
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'no bad call changed anything');

------------------------------------------------------------------------------------------
-- Release what the worker does not hold
------------------------------------------------------------------------------------------

SELECT is(jobq_release_orphans('w1', ARRAY[:'held', gen_random_uuid()]::uuid[]), 2,
          'w1 holds one of its three claims: the other two are released, and counted');
SELECT results_eq(
    format($$SELECT id, status, attempts, available_at, locked_at, locked_by, scheduled, last_error,
                    errors
             FROM jobq_all_jobs WHERE id IN (%L, %L) ORDER BY id$$, :'lost1', :'lost2'),
    format($$SELECT * FROM (VALUES
             (%L::uuid, 'pending'::text, 0, now(), NULL::timestamptz, NULL::text, false, NULL::text, '[]'::jsonb),
             (%L::uuid, 'pending'::text, 0, now(), NULL::timestamptz, NULL::text, false, NULL::text, '[]'::jsonb)
             ) AS v ORDER BY 1$$, :'lost1', :'lost2'),
    'released as jobq_release does: pending, available now, attempt not counted, no error'
);
SELECT results_eq(
    format($$SELECT id, status, locked_by FROM jobq_all_jobs WHERE id IN (%L, %L, %L, %L) ORDER BY id$$,
           :'held', :'other', :'pend', :'done'),
    format($$SELECT * FROM (VALUES (%L::uuid, 'processing'::text, 'w1'::text),
                                   (%L::uuid, 'processing', 'w2'),
                                   (%L::uuid, 'pending', NULL),
                                   (%L::uuid, 'succeeded', NULL)) AS v ORDER BY 1$$,
           :'held', :'other', :'pend', :'done'),
    'the job it holds, another worker''s, a pending and a finished one are left alone'
);
SELECT is(jobq_release_orphans('w1', ARRAY[:'held']::uuid[]), 0, 'called again: nothing left to release');
SELECT is(jobq_release_orphans(worker_id => 'w2', job_ids => '{}'), 1,
          'named arguments; an empty list releases every claim of that worker');
SELECT is(jobq_release_orphans('nobody', '{}'), 0, 'a worker with no claim: 0');
SELECT results_eq(
    $$SELECT id FROM jobq_dequeue('w3', batch_size => 10)$$,
    format('SELECT id FROM jobq_all_jobs WHERE id IN (%L, %L, %L) ORDER BY available_at, id',
           :'lost1', :'lost2', :'other'),
    'the released jobs are claimed again at once, in claim order'
);
SELECT is((SELECT max(attempts) FROM jobq_all_jobs WHERE id IN (:'lost1', :'lost2', :'other')), 1,
          '... as attempt 1: the lost claim did not count');

SELECT * FROM finish();
ROLLBACK;
