-- What workers ask for, and the jobs nobody serves:
--   jobq__worker_seen(worker_id, job_types, queues)   (private; called by every jobq_dequeue)
--   jobq_unserved_job_types(idle interval DEFAULT '15 minutes')
--     RETURNS TABLE(queue, job_type, jobs, oldest_available_at)
--   the unserved_job_types check of jobq_health
--   jobq_get_job(job_id uuid) RETURNS SETOF jobq_jobs
-- Admin only (see privileges.sql).
BEGIN;
SELECT plan(25);

DELETE FROM jobq_jobs;
DELETE FROM jobq_workers;

-- bad input: 22023, argument named, nothing read
SELECT throws_ok($$SELECT * FROM jobq_unserved_job_types(idle => NULL)$$, '22023',
    'jobq_unserved_job_types: idle must be a positive interval, got NULL', 'idle NULL: 22023');
SELECT throws_ok($$SELECT * FROM jobq_unserved_job_types(idle => '0')$$, '22023',
    'jobq_unserved_job_types: idle must be a positive interval, got 00:00:00', 'idle 0: 22023');
SELECT throws_ok($$SELECT * FROM jobq_get_job(job_id => NULL)$$, '22023',
    'jobq_get_job: job_id must not be NULL', 'job_id NULL: 22023');
SELECT lives_ok($$SELECT * FROM jobq_unserved_job_types(idle => '10000 years')$$,
    'idle => 10000 years works (no "timestamp out of range")');

-- jobs: available ones in (q1, email), (q1, emial), (q2, email); a future one in (q3, email);
-- a finished one in (q4, email)
SELECT jobq_enqueue('email', queue => 'q1');
SELECT jobq_enqueue('email', queue => 'q1');
SELECT jobq_enqueue('emial', queue => 'q1');
SELECT jobq_enqueue('email', queue => 'q2');
SELECT jobq_enqueue('email', queue => 'q3', run_at => now() + interval '1 day');
INSERT INTO jobq_jobs (job_type, queue, status, finished_at) VALUES ('email', 'q4', 'succeeded', now());

SELECT results_eq(
    $$SELECT queue, job_type, jobs FROM jobq_unserved_job_types()$$,
    $$VALUES ('q1'::text, 'email'::text, 2::bigint), ('q1', 'emial', 1), ('q2', 'email', 1)$$,
    'no worker has claimed: every available job is unserved, per queue and job type; future and '
    'finished jobs are not'
);
SELECT is((SELECT bool_and(oldest_available_at <= now()) FROM jobq_unserved_job_types()), true,
          'oldest_available_at is the oldest available_at of each group');

-- a claim records its worker's filters, even when it claims nothing
SELECT is_empty($$SELECT * FROM jobq_dequeue('w-email-q1', job_types => '{email}', queues => '{q9}')$$,
                'a claim of queue q9 finds nothing');
SELECT results_eq(
    $$SELECT worker_id, job_types, queues FROM jobq_workers$$,
    $$VALUES ('w-email-q1'::text, '{email}'::text[], '{q9}'::text[])$$,
    'the claim recorded its worker_id, job_types and queues, although it claimed nothing'
);
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w-email-q1', job_types => '{email}',
                                                  queues => '{q1}', batch_size => 10)),
          2, 'the same worker, now on queue q1, claims the two email jobs of q1');
SELECT results_eq(
    $$SELECT queues FROM jobq_workers WHERE worker_id = 'w-email-q1'$$,
    $$VALUES ('{q1}'::text[])$$,
    'changed filters are recorded at once (not only every 5 seconds)'
);
SELECT results_eq(
    $$SELECT queue, job_type, jobs FROM jobq_unserved_job_types()$$,
    $$VALUES ('q1'::text, 'emial'::text, 1::bigint), ('q2', 'email', 1)$$,
    'the misspelt type in q1 and the email job of q2 are still unserved'
);

-- a worker of every job type in queue q2; a worker of every queue that handles emial
-- (recorded directly: their claims would take the jobs whose serving is under test)
SELECT lives_ok($$SELECT jobq__worker_seen('w-all-q2', NULL, '{q2}')$$,
                'a worker of every job type claims in q2');
SELECT lives_ok($$SELECT jobq__worker_seen('w-emial', '{emial}', NULL)$$,
                'a worker of job type emial claims in every queue');
SELECT is_empty($$SELECT * FROM jobq_unserved_job_types()$$,
                'job_types NULL serves every type, queues NULL every queue: nothing unserved');

-- only recent claims count
UPDATE jobq_workers SET last_claim_at = now() - interval '20 minutes' WHERE worker_id = 'w-emial';
SELECT ok(jobq_enqueue('emial', queue => 'q1') IS NOT NULL, 'a second emial job in q1');
SELECT results_eq(
    $$SELECT queue, job_type, jobs FROM jobq_unserved_job_types()$$,
    $$VALUES ('q1'::text, 'emial'::text, 2::bigint)$$,
    'a worker whose last claim is older than idle (15 minutes) serves nothing'
);
SELECT is_empty($$SELECT * FROM jobq_unserved_job_types(idle => '1 hour')$$,
                'within idle => 1 hour it still counts');

-- jobq_health names them
SELECT results_eq(
    $$SELECT queue, severity, value, detail FROM jobq_health() WHERE check_name = 'unserved_job_types'$$,
    $$SELECT 'q1'::text, 'warning'::text, 2::float8,
             format('2 job(s) of type ''emial'' available, the oldest waiting for %s: no worker '
                    'claimed this job type in this queue within 00:15:00',
                    date_trunc('second', now() - min(available_at)))
      FROM jobq_all_jobs WHERE job_type = 'emial' AND status = 'pending'$$,
    'jobq_health: one warning per unserved queue and job type, naming the type'
);

-- the record is written at most every 5 seconds per worker when nothing changed, and the
-- rows of workers that have not claimed for a day go when another one is written
UPDATE jobq_workers SET last_claim_at = now() - interval '2 days' WHERE worker_id = 'w-all-q2';
UPDATE jobq_workers SET last_claim_at = now() - interval '1 second' WHERE worker_id = 'w-emial';
SELECT jobq__worker_seen('w-emial', '{emial}', NULL);
SELECT is((SELECT last_claim_at FROM jobq_workers WHERE worker_id = 'w-emial'),
          now() - interval '1 second', 'a record younger than 5 seconds is not rewritten');
SELECT is((SELECT count(*)::int FROM jobq_workers WHERE worker_id = 'w-all-q2'), 1,
          'and nothing is deleted then');
UPDATE jobq_workers SET last_claim_at = now() - interval '6 seconds' WHERE worker_id = 'w-emial';
SELECT jobq__worker_seen('w-emial', '{emial}', NULL);
SELECT is((SELECT last_claim_at FROM jobq_workers WHERE worker_id = 'w-emial'), now(),
          'an older one is');
SELECT is((SELECT count(*)::int FROM jobq_workers WHERE worker_id = 'w-all-q2'), 0,
          'a worker that has not claimed for a day is deleted then');

-- jobq_get_job
SELECT results_eq(
    $$SELECT g.id, g.job_type, g.queue FROM jobq_all_jobs AS j, jobq_get_job(j.id) AS g
      WHERE j.job_type = 'emial' ORDER BY g.id$$,
    $$SELECT id, job_type, queue FROM jobq_all_jobs WHERE job_type = 'emial' ORDER BY id$$,
    'jobq_get_job returns the job with that id'
);
SELECT is_empty($$SELECT * FROM jobq_get_job(gen_random_uuid())$$, 'an unknown id: no row');
SELECT results_eq(
    $$SELECT count(*)::int FROM jobq_all_jobs$$, $$VALUES (7)$$,
    'nothing was lost or added by the reads'
);

SELECT * FROM finish();
ROLLBACK;
