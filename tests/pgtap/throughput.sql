-- jobq_throughput(since, bucket) RETURNS TABLE(bucket_start, succeeded, failed, dead_letter,
--                                             cancelled, failed_attempts)
--
-- Per bucket of the window: the jobs that finished in each finished status (by finished_at)
-- and the failed attempts (error entries without a kind, by their time), of finished and live
-- jobs; every bucket has its row. Bad input is 22023 naming the argument.
BEGIN;
SELECT plan(16);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

SELECT is((SELECT count(*) FROM jobq_throughput()), 61::bigint,
          'an hour of minutes: 61 buckets (the one holding now() - 1 hour to the one holding now())');
SELECT is((SELECT sum(succeeded + failed + dead_letter + cancelled + failed_attempts)
           FROM jobq_throughput()), 0::numeric, 'nothing happened: zeros');

CREATE TEMP TABLE made AS
SELECT jobq_enqueue('a', jsonb_build_object('n', n), max_attempts => CASE WHEN n = 4 THEN 1 ELSE 5 END) AS id
FROM generate_series(1, 6) AS n;
SELECT count(*) FROM jobq_dequeue('w', batch_size => 10);
-- two succeed, one fails and retries, one has no attempt left, one fails for good, one is cancelled
SELECT jobq_complete(id, 'w') FROM jobq_jobs WHERE payload ->> 'n' IN ('1', '2', '6');
SELECT jobq_fail(id, 'w', 'ValueError: x') FROM jobq_jobs WHERE payload ->> 'n' IN ('3', '4');
SELECT jobq_fail(id, 'w', 'KeyError: y', retry => false) FROM jobq_jobs WHERE payload ->> 'n' = '5';
SELECT jobq_enqueue('b') AS cancelled_id \gset
SELECT * FROM jobq_cancel(ARRAY[:'cancelled_id'::uuid]);
-- one success is older than the window; a lock takeover and an old entry of the retrying job
-- do not count
UPDATE jobq_jobs_history SET finished_at = now() - interval '2 hours' WHERE payload ->> 'n' = '6';
UPDATE jobq_jobs SET errors = errors
    || jsonb_build_object('attempt', 1, 'at', now(), 'worker', 'v', 'error', 'lock', 'kind', 'lock_expired')
    || jsonb_build_object('attempt', 0, 'at', now() - interval '3 hours', 'worker', 'v', 'error', 'old')
WHERE payload ->> 'n' = '3';

SELECT results_eq(
    $$SELECT sum(succeeded), sum(failed), sum(dead_letter), sum(cancelled), sum(failed_attempts)
      FROM jobq_throughput()$$,
    $$VALUES (2::numeric, 1::numeric, 1::numeric, 1::numeric, 3::numeric)$$,
    'within the hour: 2 succeeded, 1 failed, 1 dead letter, 1 cancelled, 3 failed attempts '
    '(the retrying one''s, the dead letter''s and the failed one''s)'
);
SELECT results_eq(
    $$SELECT succeeded, failed, dead_letter, cancelled, failed_attempts
      FROM jobq_throughput() ORDER BY bucket_start DESC LIMIT 1$$,
    $$VALUES (2::bigint, 1::bigint, 1::bigint, 1::bigint, 3::bigint)$$,
    'all of it in the bucket that holds now()'
);
SELECT is((SELECT sum(succeeded) FROM jobq_throughput(since => interval '3 hours')), 3::numeric,
          'a longer window counts the older success');
SELECT is((SELECT sum(failed_attempts) FROM jobq_throughput(since => interval '4 hours')), 4::numeric,
          'and the older failed attempt, never the lock takeover');
SELECT ok((SELECT bool_and(bucket_start <= now()) AND max(bucket_start) > now() - interval '1 minute'
           FROM jobq_throughput()), 'the last bucket holds now()');
SELECT is((SELECT count(DISTINCT bucket_start) FROM jobq_throughput(interval '1 hour', interval '5 minutes')),
          13::bigint, 'bucket: 5 minutes gives 13 buckets');
SELECT ok((SELECT bool_and(extract(epoch FROM bucket_start)::bigint % 300 = 0)
           FROM jobq_throughput(interval '1 hour', interval '5 minutes')),
          'buckets are aligned to multiples of bucket');

SELECT throws_ok($$SELECT * FROM jobq_throughput(since => interval '0')$$, '22023',
                 'jobq_throughput: since must be more than 0 and at most 7 days, got 00:00:00', 'since 0');
SELECT throws_ok($$SELECT * FROM jobq_throughput(since => NULL)$$, '22023',
                 'jobq_throughput: since must be more than 0 and at most 7 days, got NULL', 'since NULL');
SELECT throws_ok($$SELECT * FROM jobq_throughput(since => interval '8 days')$$, '22023',
                 'jobq_throughput: since must be more than 0 and at most 7 days, got 8 days', 'since 8 days');
SELECT throws_ok($$SELECT * FROM jobq_throughput(bucket => interval '0.5 seconds')$$, '22023',
                 'jobq_throughput: bucket must be between 1 second and 1 day, got 00:00:00.5', 'bucket under a second');
SELECT throws_ok($$SELECT * FROM jobq_throughput(bucket => NULL)$$, '22023',
                 'jobq_throughput: bucket must be between 1 second and 1 day, got NULL', 'bucket NULL');
SELECT throws_ok($$SELECT * FROM jobq_throughput(interval '7 days', interval '1 second')$$, '22023',
                 'jobq_throughput: since / bucket must be at most 10080 buckets, got 7 days / 00:00:01',
                 'too many buckets');
SELECT is((SELECT count(*) FROM jobq_throughput(interval '7 days', interval '1 minute')), 10081::bigint,
          'a week of minutes is allowed');

SELECT * FROM finish();
ROLLBACK;
