-- jobq_prune(older_than interval DEFAULT '7 days', statuses text[] DEFAULT '{succeeded}',
--            batch_size int DEFAULT NULL) RETURNS bigint
--
-- Deletes jobs in the given finished statuses whose finished_at is
-- older than older_than, returns how many; pending or processing in statuses is refused
-- (22023), as is a status name that does not exist. batch_size: at most that many per call,
-- the oldest first (random ids of installs before migration 0005 included). Jobs are inserted directly with
-- finished_at in the past (the table's CHECKs keep them consistent).
BEGIN;
SELECT plan(39);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

INSERT INTO jobq_jobs (job_type, status, finished_at, locked_at, locked_by) VALUES
    ('succeeded_8d',   'succeeded',   now() - interval '8 days',   NULL, NULL),
    ('succeeded_6d',   'succeeded',   now() - interval '6 days',   NULL, NULL),
    ('succeeded_1s',   'succeeded',   now() - interval '1 second', NULL, NULL),
    ('succeeded_now',  'succeeded',   now(),                       NULL, NULL),
    ('failed_10d',     'failed',      now() - interval '10 days',  NULL, NULL),
    ('dead_10d',       'dead_letter', now() - interval '10 days',  NULL, NULL),
    ('pending',        'pending',     NULL,                        NULL, NULL),
    ('processing',     'processing',  NULL,  now() - interval '30 days', 'w');
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
UPDATE jobq_jobs SET created_at = now() - interval '60 days', updated_at = now() - interval '60 days';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history

------------------------------------------------------------------------------------------
-- Bad input: 22023, nothing deleted
------------------------------------------------------------------------------------------

CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT throws_ok($$SELECT jobq_prune(statuses => '{pending}')$$, '22023',
    'jobq_prune: statuses may not include ''pending'': only finished jobs are pruned',
    'pending in statuses: refused with 22023');
SELECT throws_ok($$SELECT jobq_prune(statuses => '{processing}')$$, '22023',
    'jobq_prune: statuses may not include ''processing'': only finished jobs are pruned',
    'processing in statuses: refused with 22023');
SELECT throws_ok($$SELECT jobq_prune(statuses => '{succeeded,pending}')$$, '22023',
    'jobq_prune: statuses may not include ''pending'': only finished jobs are pruned',
    'pending among finished statuses: refused, nothing pruned');
SELECT throws_ok($$SELECT jobq_prune(statuses => '{succeded}')$$, '22023',
    'jobq_prune: statuses contains ''succeded'', which is not a status',
    'a misspelt status: 22023');
SELECT throws_ok($$SELECT jobq_prune(statuses => '{Succeeded}')$$, '22023',
    'jobq_prune: statuses contains ''Succeeded'', which is not a status',
    'status names are case-sensitive: 22023');
SELECT throws_ok($$SELECT jobq_prune(statuses => ARRAY[NULL]::text[])$$, '22023',
    'jobq_prune: statuses contains NULL, which is not a status', 'a NULL status: 22023');
SELECT throws_ok($$SELECT jobq_prune(statuses => '{}')$$, '22023',
    'jobq_prune: statuses must name at least one finished status', 'an empty list: 22023');
SELECT throws_ok($$SELECT jobq_prune(statuses => NULL)$$, '22023',
    'jobq_prune: statuses must name at least one finished status', 'statuses NULL: 22023');
SELECT throws_ok($$SELECT jobq_prune(older_than => NULL)$$, '22023',
    'jobq_prune: older_than must be an interval >= 0, got NULL', 'older_than NULL: 22023');
SELECT throws_ok($$SELECT jobq_prune(older_than => '-1 day')$$, '22023',
    'jobq_prune: older_than must be an interval >= 0, got -1 days', 'older_than negative: 22023');
SELECT throws_ok($$SELECT jobq_prune('0', batch_size => 0)$$, '22023',
    'jobq_prune: batch_size must be at least 1 or NULL (all at once), got 0', 'batch_size 0: 22023');
SELECT throws_ok($$SELECT jobq_prune('0', batch_size => -5)$$, '22023',
    'jobq_prune: batch_size must be at least 1 or NULL (all at once), got -5', 'batch_size negative: 22023');
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'no bad call deleted anything');

------------------------------------------------------------------------------------------
-- Pruning
------------------------------------------------------------------------------------------

SELECT is(jobq_prune(), 1::bigint, 'defaults: succeeded jobs finished more than 7 days ago (1)');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE job_type = 'succeeded_8d'), 0, '... the 8-day-old one is gone');
SELECT is(jobq_prune(), 0::bigint, 'a second run deletes nothing');

SELECT is(jobq_prune(older_than => '5 days'), 1::bigint, 'older_than => 5 days: the 6-day-old one');
SELECT is(jobq_prune('0'), 1::bigint, 'older_than 0: finished before now (the one a second old)');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE job_type = 'succeeded_now'), 1,
          '... a job finished exactly now is not older than 0, and stays');

SELECT is(jobq_prune(older_than => '11 days', statuses => '{failed,dead_letter}'), 0::bigint,
          'failed and dead_letter jobs younger than older_than stay');
SELECT is(jobq_prune(older_than => '1 day', statuses => '{failed}'), 1::bigint,
          'statuses => {failed}: only failed jobs');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'dead_letter'), 1, '... the dead_letter job stays');
SELECT is(jobq_prune('1 day', '{dead_letter,dead_letter}'), 1::bigint, 'a status listed twice is fine');

SELECT is(jobq_prune('0', '{succeeded,failed,dead_letter}'), 0::bigint,
          'every finished status, older than 0: nothing left to prune');
SELECT results_eq('SELECT job_type FROM jobq_all_jobs ORDER BY job_type',
                  $$VALUES ('pending'), ('processing'), ('succeeded_now')$$,
                  'pending and processing jobs are never pruned, however old');

SELECT lives_ok($$SELECT jobq_prune(older_than => '10000 years')$$,
                'older_than => 10000 years prunes nothing, without "timestamp out of range"');

SET LOCAL timezone = 'Asia/Kolkata';
SELECT is(jobq_prune('0', '{succeeded}'), 0::bigint, 'the cut-off is the same under another session time zone');
RESET timezone;

------------------------------------------------------------------------------------------
-- Batches: at most batch_size per call, the oldest first, every finished status
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
INSERT INTO jobq_jobs (id, job_type, status, finished_at)
SELECT CASE WHEN g % 2 = 0 THEN gen_random_uuid() ELSE jobq__uuid_v7() END,  -- ids of before 0005, and new ones
       's' || g, 'succeeded', now() - interval '1 day' * (20 - g)
FROM generate_series(1, 5) AS g;
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
INSERT INTO jobq_jobs (id, job_type, status, finished_at) VALUES
    (gen_random_uuid(), 'f', 'failed',      now() - interval '30 days'),
    (gen_random_uuid(), 'd', 'dead_letter', now() - interval '30 days'),
    (gen_random_uuid(), 'recent', 'succeeded', now() - interval '1 hour');
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history

SELECT is(jobq_prune('7 days', batch_size => 2), 2::bigint, 'batch_size => 2: two jobs');
SELECT results_eq($$SELECT job_type FROM jobq_all_jobs WHERE status = 'succeeded' ORDER BY finished_at$$,
                  $$VALUES ('s3'), ('s4'), ('s5'), ('recent')$$,
                  '... the two that finished first');
SELECT is(jobq_prune('7 days', batch_size => 2), 2::bigint, 'the next batch: two more');
SELECT is(jobq_prune('7 days', batch_size => 2), 1::bigint, 'the last batch: fewer than batch_size, so done');
SELECT is(jobq_prune('7 days', batch_size => 2), 0::bigint, 'then nothing');
SELECT is(jobq_prune('7 days', '{succeeded,failed,dead_letter}', batch_size => 1), 1::bigint,
          'several statuses: batch_size counts them together');
SELECT is(jobq_prune('7 days', '{succeeded,failed,dead_letter}', batch_size => 5), 1::bigint,
          '... the rest of them');
SELECT results_eq($$SELECT job_type FROM jobq_all_jobs$$, $$VALUES ('recent')$$,
                  'random (version 4) ids of installs before 0005 are pruned like the new ones; a recent job stays');

-- The oldest first across statuses (by finished_at): a failed job that finished before a
-- succeeded one goes first, whatever the names of their statuses.
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
INSERT INTO jobq_jobs (job_type, status, finished_at) VALUES
    ('succeeded_9d', 'succeeded',   now() - interval '9 days'),
    ('failed_10d',   'failed',      now() - interval '10 days'),
    ('dead_12d',     'dead_letter', now() - interval '12 days'),
    ('cancel_11d',   'cancelled',   now() - interval '11 days');
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is(jobq_prune('7 days', '{succeeded,failed}', batch_size => 1), 1::bigint,
          'across succeeded and failed, batch_size => 1: one job');
SELECT results_eq($$SELECT job_type FROM jobq_all_jobs ORDER BY job_type$$,
                  $$VALUES ('cancel_11d'), ('dead_12d'), ('succeeded_9d')$$,
                  '... the failed one, which finished before the succeeded one');
SELECT is(jobq_prune('7 days', '{succeeded,failed,dead_letter,cancelled}', batch_size => 2), 2::bigint,
          'every finished status, batch_size => 2: two jobs');
SELECT results_eq($$SELECT job_type FROM jobq_all_jobs$$, $$VALUES ('succeeded_9d')$$,
                  '... the dead_letter (12 days) and the cancelled (11 days), not the newer succeeded one');

SELECT * FROM finish();
ROLLBACK;
