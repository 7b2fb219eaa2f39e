-- jobq_metrics() RETURNS TABLE(metric text, labels jsonb, value double precision)
--
-- Counters per queue and job type that move exactly with their event,
-- are transactional (a rolled-back enqueue counts nothing) and survive jobq_prune; the gauges
-- jobq_jobs (per queue and status, equal to the jobs present) and
-- jobq_oldest_available_age_seconds (per queue); the histograms jobq_wait_seconds and
-- jobq_run_seconds as _bucket (cumulative, monotone, +Inf = _count), _sum and _count rows.
-- jobq_metrics_recount(), jobq_configure(metrics => ...) and the fold of dead backends' rows.
--
-- Time: now() is constant in this transaction, so waits and run times are set exactly by
-- backdating available_at and claimed_at. Every counted statement after the first of this
-- transaction goes to jobq_metric_deltas: jobq_metrics() reads (and folds) both.
BEGIN;
SELECT plan(97);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
DELETE FROM jobq_metric_counters;
DELETE FROM jobq_metric_deltas;
DELETE FROM jobq_metric_labels;

-- One sample: NULL when there is no such row.
CREATE FUNCTION pg_temp.v(m text, l jsonb) RETURNS double precision
LANGUAGE sql AS $$ SELECT value FROM jobq_metrics() WHERE metric = m AND labels = l $$;
CREATE FUNCTION pg_temp.l(q text, t text) RETURNS jsonb
LANGUAGE sql AS $$ SELECT jsonb_build_object('queue', q, 'job_type', t) $$;
-- The gauge jobq_jobs as rows, and the same counted from the table.
CREATE FUNCTION pg_temp.gauge() RETURNS TABLE (queue text, status text, jobs bigint)
LANGUAGE sql AS $$
    SELECT labels ->> 'queue', labels ->> 'status', value::bigint
    FROM jobq_metrics() WHERE metric = 'jobq_jobs' AND value <> 0
    ORDER BY 1, 2
$$;
CREATE FUNCTION pg_temp.counted() RETURNS TABLE (queue text, status text, jobs bigint)
LANGUAGE sql AS $$
    SELECT j.queue, j.status, count(*) FROM jobq_all_jobs AS j GROUP BY 1, 2 ORDER BY 1, 2
$$;

-- A new installation does not count (migration 0012): jobq_metrics() says so and nothing else.
SELECT results_eq(
    'SELECT metric, labels, value FROM jobq_metrics()',
    $$VALUES ('jobq_metrics_counting'::text, '{}'::jsonb, 0::double precision)$$,
    'a new installation does not count: jobq_metrics_counting 0, no other row');
SELECT jobq_enqueue('a', queue => 'q') AS uncounted \gset
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('q', 'a')), NULL,
          'while counting is off an enqueue adds no counter');
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT is(jobq_configure(metrics => true) ->> 'metrics', 'true', 'metrics => true turns it on');
SELECT results_eq(
    'SELECT metric, labels, value FROM jobq_metrics()',
    $$VALUES ('jobq_metrics_counting'::text, '{}'::jsonb, 1::double precision)$$,
    'counting, nothing counted yet: jobq_metrics_counting 1, no other row');

------------------------------------------------------------------------------------------
-- enqueue
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('a', queue => 'q', idempotency_key => 'k1',
                    run_at => now() - interval '1 second') AS a1 \gset
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('q', 'a')), 1::double precision,
          'jobq_enqueue: enqueued 1');
SELECT is(pg_temp.v('jobq_jobs', '{"queue": "q", "status": "pending"}'), 1::double precision,
          'jobq_jobs{status=pending} 1');
SELECT jobq_enqueue('a', queue => 'q', idempotency_key => 'k1') AS dup \gset
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('q', 'a')), 1::double precision,
          'an existing idempotency key adds no job and counts nothing');

SAVEPOINT before_rollback;
SELECT jobq_enqueue('a', queue => 'q') AS rolled_back \gset
SELECT count(*) AS n FROM jobq_enqueue_many('[{"job_type": "a", "queue": "q"}]') \gset
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('q', 'a')), 3::double precision,
          'counted inside the transaction that enqueues');
ROLLBACK TO SAVEPOINT before_rollback;
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('q', 'a')), 1::double precision,
          'a rolled-back enqueue (and enqueue_many) is not counted');

SELECT count(*) AS n FROM jobq_enqueue_many($$[
    {"job_type": "a", "queue": "q"}, {"job_type": "a", "queue": "q"},
    {"job_type": "b", "queue": "q"}, {"job_type": "a", "queue": "q", "idempotency_key": "k1"},
    {"job_type": "a", "queue": "r"}
]$$) \gset
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('q', 'a')), 3::double precision,
          'jobq_enqueue_many: 2 more of a in q (the existing key counts nothing)');
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('q', 'b')), 1::double precision,
          'jobq_enqueue_many: 1 of b in q');
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('r', 'a')), 1::double precision,
          'jobq_enqueue_many: 1 of a in r');
SELECT is(pg_temp.v('jobq_started_total', pg_temp.l('r', 'a')), 0::double precision,
          'every counter of a label set is there, 0 until its event');

-- One statement per call, whatever the number of jobs: this transaction has counted already,
-- so each later counted statement appends its rows to jobq_metric_deltas, one per label set.
SELECT count(*) AS d0 FROM jobq_metric_deltas \gset
SELECT count(*) AS n FROM jobq_enqueue_many((
    SELECT jsonb_agg(jsonb_build_object('job_type', 'z', 'queue', 'z' || (g % 2)))
    FROM generate_series(1, 100) AS g
)) \gset
SELECT is((SELECT count(*) FROM jobq_metric_deltas) - :d0, 2::bigint,
          'enqueue_many of 100 jobs in two queues: one row per (queue, job_type), not per job');
SELECT count(*) AS d1 FROM jobq_metric_deltas \gset
SELECT count(*) AS n FROM jobq_dequeue('wz', job_types => '{z}', batch_size => 100) \gset
SELECT is((SELECT count(*) FROM jobq_metric_deltas) - :d1, 2::bigint,
          'a claim of 100 jobs: one row per (queue, job_type)');
SELECT is(pg_temp.v('jobq_started_total', pg_temp.l('z0', 'z'))
          + pg_temp.v('jobq_started_total', pg_temp.l('z1', 'z')), 100::double precision,
          'and they count all 100');

------------------------------------------------------------------------------------------
-- claim, complete: started, wait and run histograms
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs WHERE id <> :'a1';
SELECT jobq_metrics_recount() AS recounted \gset
SELECT is(:recounted::bigint, 1::bigint, 'jobq_metrics_recount: counts the jobs present');
SELECT results_eq('SELECT * FROM pg_temp.gauge()', 'SELECT * FROM pg_temp.counted()',
                  'after a recount the gauge is the jobs present');

SELECT id AS c1, claimed_at AS c1_at FROM jobq_dequeue('w1', job_types => '{a}', queues => '{q}') \gset
SELECT is(:'c1'::uuid, :'a1'::uuid, 'the job available for 1 second is claimed');
SELECT is(pg_temp.v('jobq_started_total', pg_temp.l('q', 'a')), 1::double precision,
          'jobq_dequeue: started 1');
SELECT is(pg_temp.v('jobq_wait_seconds_count', pg_temp.l('q', 'a')), 1::double precision,
          'jobq_wait_seconds_count 1');
SELECT is(pg_temp.v('jobq_wait_seconds_sum', pg_temp.l('q', 'a')), 1::double precision,
          'jobq_wait_seconds_sum: waited exactly 1 second (available_at to claim)');
SELECT is(pg_temp.v('jobq_wait_seconds_bucket', pg_temp.l('q', 'a') || '{"le": "0.5"}'),
          0::double precision, 'a wait of 1 s is not in le=0.5');
SELECT is(pg_temp.v('jobq_wait_seconds_bucket', pg_temp.l('q', 'a') || '{"le": "1"}'),
          1::double precision, 'a wait of exactly 1 s is in le=1 (less than or equal)');
SELECT is(pg_temp.v('jobq_wait_seconds_bucket', pg_temp.l('q', 'a') || '{"le": "+Inf"}'),
          1::double precision, 'and in le=+Inf');
SELECT is(:'c1_at'::timestamptz, now(), 'jobq_jobs.claimed_at: when the claim was made');
SELECT results_eq('SELECT * FROM pg_temp.gauge()', 'SELECT * FROM pg_temp.counted()',
                  'the gauge follows the claim');

UPDATE jobq_jobs SET claimed_at = now() - interval '2.5 seconds' WHERE id = :'a1';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT ok(jobq_complete(:'a1', 'w1'), 'completed');
SELECT is(pg_temp.v('jobq_succeeded_total', pg_temp.l('q', 'a')), 1::double precision,
          'jobq_complete: succeeded 1');
SELECT is(pg_temp.v('jobq_run_seconds_sum', pg_temp.l('q', 'a')), 2.5::double precision,
          'jobq_run_seconds_sum: 2.5 s from claim to completion');
SELECT is(pg_temp.v('jobq_run_seconds_bucket', pg_temp.l('q', 'a') || '{"le": "1"}'),
          0::double precision, 'run of 2.5 s: not in le=1');
SELECT is(pg_temp.v('jobq_run_seconds_bucket', pg_temp.l('q', 'a') || '{"le": "2.5"}'),
          1::double precision, 'run of 2.5 s: in le=2.5');

-- complete_many, with one job it does not hold
SELECT jobq_enqueue('a', queue => 'q') AS m1, jobq_enqueue('a', queue => 'q') AS m2 \gset
SELECT count(*) AS n FROM jobq_dequeue('w1', batch_size => 2) \gset
SELECT is(jobq_complete_many(ARRAY[:'m1', :'m2', gen_random_uuid()]::uuid[], 'w1'), 2,
          'complete_many of two held jobs');
SELECT is(pg_temp.v('jobq_succeeded_total', pg_temp.l('q', 'a')), 3::double precision,
          'jobq_complete_many: succeeded + 2');
SELECT is(pg_temp.v('jobq_run_seconds_count', pg_temp.l('q', 'a')), 3::double precision,
          'jobq_run_seconds_count 3');
SELECT ok(NOT jobq_complete(:'m1', 'w1'), 'a second completion changes nothing');
SELECT is(pg_temp.v('jobq_succeeded_total', pg_temp.l('q', 'a')), 3::double precision,
          'and counts nothing');
-- a claim made before migration 0010 has no claimed_at: its run is counted, not observed
SELECT jobq_enqueue('a', queue => 'q') AS m3 \gset
SELECT count(*) AS n FROM jobq_dequeue('w1') \gset
UPDATE jobq_jobs SET claimed_at = NULL WHERE id = :'m3';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT ok(jobq_complete(:'m3', 'w1'), 'a job claimed before claimed_at existed completes');
SELECT is(pg_temp.v('jobq_succeeded_total', pg_temp.l('q', 'a')), 4::double precision,
          'it counts as succeeded');
SELECT is(pg_temp.v('jobq_run_seconds_count', pg_temp.l('q', 'a')), 3::double precision,
          'but its run time, unknown, is not observed');

------------------------------------------------------------------------------------------
-- failures, dead letters, takeovers, cancels, releases, requeues
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('f', queue => 'q', max_attempts => 2) AS f1,
       jobq_enqueue('f', queue => 'q') AS f2 \gset
SELECT count(*) AS n FROM jobq_dequeue('w1', job_types => '{f}', batch_size => 2) \gset
SELECT is(jobq_fail(:'f1', 'w1', 'boom', backoff => '0'), 'pending', 'a retry');
SELECT is(jobq_fail(:'f2', 'w1', 'bad input', retry => false), 'failed', 'a permanent failure');
SELECT is(pg_temp.v('jobq_failed_total', pg_temp.l('q', 'f')), 2::double precision,
          'jobq_fail: failed attempts 2');
SELECT count(*) AS n FROM jobq_dequeue('w1', job_types => '{f}') \gset
SELECT is(
    (SELECT status FROM jobq_fail_many(ARRAY[:'f1']::uuid[], 'w1', ARRAY['boom again'])),
    'dead_letter', 'the last attempt fails: dead_letter');
SELECT is(pg_temp.v('jobq_failed_total', pg_temp.l('q', 'f')), 3::double precision,
          'jobq_fail_many: failed attempts 3');
SELECT is(pg_temp.v('jobq_dead_lettered_total', pg_temp.l('q', 'f')), 1::double precision,
          'dead_lettered 1');

-- takeovers: one with attempts left (back to pending), one exhausted (dead_letter)
SELECT jobq_enqueue('t', queue => 'q') AS t1, jobq_enqueue('t', queue => 'q', max_attempts => 1) AS t2 \gset
SELECT count(*) AS n FROM jobq_dequeue('w1', job_types => '{t}', batch_size => 2) \gset
-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600) WHERE job_type = 't';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT count(*) AS n FROM jobq_dequeue('w2', job_types => '{t}', batch_size => 2,
                                        lock_timeout => '5 minutes') \gset
SELECT is(pg_temp.v('jobq_lock_expired_total', pg_temp.l('q', 't')), 2::double precision,
          'a takeover counts lock_expired, per job taken back');
SELECT is(pg_temp.v('jobq_dead_lettered_total', pg_temp.l('q', 't')), 1::double precision,
          'the exhausted one counts dead_lettered');
SELECT is(pg_temp.v('jobq_started_total', pg_temp.l('q', 't')), 3::double precision,
          'the one with attempts left was claimed again: started 3');

-- cancel: a pending job at once, a processing one when it then fails or is released
SELECT jobq_enqueue('c', queue => 'q') AS x1, jobq_enqueue('c', queue => 'q') AS x2,
       jobq_enqueue('c', queue => 'q', run_at => now() + interval '1 hour') AS x3 \gset
SELECT count(*) AS n FROM jobq_dequeue('w1', job_types => '{c}', batch_size => 2) \gset
SELECT count(*) AS n FROM jobq_cancel(ARRAY[:'x1', :'x2', :'x3']::uuid[]) \gset
-- The cancel requests are applied with SET CONSTRAINTS ALL, not by the constraint's name: on
-- a Citus node the name is the shell table's, and the shard's trigger has its own.
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT is(pg_temp.v('jobq_cancelled_total', pg_temp.l('q', 'c')), 1::double precision,
          'jobq_cancel: the pending job counts cancelled; the running ones only got a request');
SELECT is(jobq_fail(:'x1', 'w1', 'stopped'), 'cancelled', 'a running job with a request fails');
SELECT is(jobq_release(ARRAY[:'x2']::uuid[], 'w1'), 1, 'the other is released');
SELECT is(pg_temp.v('jobq_cancelled_total', pg_temp.l('q', 'c')), 3::double precision,
          'failure and release of a job with a cancel request count cancelled');
SELECT is(pg_temp.v('jobq_released_total', pg_temp.l('q', 'c')), 1::double precision,
          'jobq_release: released 1');

SELECT jobq_enqueue('r', queue => 'q') AS r1 \gset
SELECT count(*) AS n FROM jobq_dequeue('w1', job_types => '{r}') \gset
SELECT is(jobq_release(ARRAY[:'r1']::uuid[], 'w1'), 1, 'a claim given back');
SELECT is(pg_temp.v('jobq_released_total', pg_temp.l('q', 'r')), 1::double precision,
          'released 1');

SELECT ok(jobq_requeue_dead_letter(:'f1'), 'the dead letter is requeued');
SELECT is(jobq_requeue_dead_letters(job_type => 'c', include_cancelled => true), 3, 'the cancelled ones too');
SELECT is(pg_temp.v('jobq_requeued_total', pg_temp.l('q', 'f')) + pg_temp.v('jobq_requeued_total', pg_temp.l('q', 'c')),
          4::double precision, 'requeued 4');
SELECT results_eq('SELECT * FROM pg_temp.gauge()', 'SELECT * FROM pg_temp.counted()',
                  'after every kind of change the gauge jobq_jobs is the jobs present');

------------------------------------------------------------------------------------------
-- prune keeps the counters; histograms are well formed
------------------------------------------------------------------------------------------

CREATE TEMP TABLE before_prune AS
SELECT metric, labels, value FROM jobq_metrics() WHERE metric <> 'jobq_jobs' AND metric NOT LIKE 'jobq_oldest%';
UPDATE jobq_jobs_history SET finished_at = now() - interval '30 days';
SELECT ok(jobq_prune('7 days', '{succeeded,failed,dead_letter,cancelled}') > 0, 'pruned');
SELECT is_empty($$SELECT * FROM jobq_all_jobs WHERE finished_at IS NOT NULL$$, 'no finished job left');
SELECT set_eq(
    $$SELECT metric, labels, value FROM jobq_metrics() WHERE metric <> 'jobq_jobs' AND metric NOT LIKE 'jobq_oldest%'$$,
    'SELECT * FROM before_prune',
    'jobq_prune changes no counter and no histogram');
SELECT results_eq('SELECT * FROM pg_temp.gauge()', 'SELECT * FROM pg_temp.counted()',
                  'the gauge jobq_jobs follows the prune');

SELECT is_empty($$
    SELECT b.metric, b.labels
    FROM jobq_metrics() AS b
    JOIN jobq_metrics() AS c
      ON c.metric = b.metric AND c.labels - 'le' = b.labels - 'le'
    WHERE b.metric LIKE '%\_bucket'
      AND (CASE WHEN b.labels ->> 'le' = '+Inf' THEN 'Infinity' ELSE b.labels ->> 'le' END)::float8
          < (CASE WHEN c.labels ->> 'le' = '+Inf' THEN 'Infinity' ELSE c.labels ->> 'le' END)::float8
      AND b.value > c.value
$$, 'every histogram''s buckets are monotone');
SELECT is_empty($$
    SELECT b.metric, b.labels
    FROM jobq_metrics() AS b
    JOIN jobq_metrics() AS c
      ON c.metric = replace(b.metric, '_bucket', '_count') AND c.labels = b.labels - 'le'
    WHERE b.metric LIKE '%\_bucket' AND b.labels ->> 'le' = '+Inf' AND b.value <> c.value
$$, 'every +Inf bucket equals its _count');
SELECT is(
    (SELECT count(*) FROM jobq_metrics() WHERE metric = 'jobq_wait_seconds_bucket' AND labels ->> 'job_type' = 'a'),
    44::bigint, '22 buckets (21 bounds and +Inf) per queue and job type with counts');

------------------------------------------------------------------------------------------
-- the age of the oldest available job
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('o', queue => 'old', run_at => now() - interval '90 seconds', priority => 5) AS o1,
       jobq_enqueue('o', queue => 'old', run_at => now() - interval '60 seconds') AS o2,
       jobq_enqueue('o', queue => 'later', run_at => now() + interval '1 hour') AS o3 \gset
SELECT is(pg_temp.v('jobq_oldest_available_age_seconds', '{"queue": "old"}'), 90::double precision,
          'the oldest available job, whatever its priority');
SELECT is(pg_temp.v('jobq_oldest_available_age_seconds', '{"queue": "later"}'), 0::double precision,
          'a queue with only a job for later: 0');
UPDATE jobq_jobs SET available_at = now() - interval '2 hours' WHERE id = :'o3';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is(pg_temp.v('jobq_oldest_available_age_seconds', '{"queue": "later"}'), 7200::double precision,
          'a scheduled job that came due and that no claim promoted yet counts');
SELECT jobq_set_limit('olim', max_running => 1);
SELECT jobq_enqueue('o', queue => 'limited', run_at => now() - interval '30 seconds',
                    limit_group => 'olim');
SELECT is(pg_temp.v('jobq_oldest_available_age_seconds', '{"queue": "limited"}'), 30::double precision,
          'a limited job (outside the claim index) counts too');

------------------------------------------------------------------------------------------
-- metrics off and on; the fold of rows of backends that have exited
------------------------------------------------------------------------------------------

SELECT is(jobq_configure(metrics => false) ->> 'metrics', 'false', 'metrics => false');
SELECT is(pg_temp.v('jobq_metrics_counting', '{}'), 0::double precision,
          'jobq_metrics_counting 0 while off');
SELECT jobq_enqueue('a', queue => 'q') AS off1 \gset
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('q', 'a')), 6::double precision,
          'while off nothing is counted (a1, two of enqueue_many, m1, m2, m3 before)');
SELECT is(jobq_configure(metrics => true) ->> 'metrics', 'true', 'metrics => true');
SELECT results_eq('SELECT * FROM pg_temp.gauge()', 'SELECT * FROM pg_temp.counted()',
                  'turned on again, the gauge is counted anew');

CREATE TEMP TABLE before_fold AS SELECT metric, labels, value FROM jobq_metrics();
-- A row of a backend that has exited (no live backend has pid 2^31 - 1): 5 enqueued, one run
-- of at most 5 ms.
INSERT INTO jobq_metric_counters (shard, queue, job_type, enqueued, jobs_pending, run_buckets, run_sum)
VALUES (2147483647, 'q', 'a', 5, 0, '{1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}', 0.004);
SELECT set_eq(
    'SELECT metric, labels, value FROM jobq_metrics()',
    $$SELECT metric, labels,
             value + CASE
                 WHEN labels <> '{"queue": "q", "job_type": "a"}' AND labels - 'le' <> '{"queue": "q", "job_type": "a"}' THEN 0
                 WHEN metric = 'jobq_enqueued_total' THEN 5
                 WHEN metric IN ('jobq_run_seconds_bucket', 'jobq_run_seconds_count') THEN 1
                 WHEN metric = 'jobq_run_seconds_sum' THEN 0.004
                 ELSE 0
             END
      FROM before_fold$$,
    'the row of the exited backend is added once, bucket by bucket');
SELECT is_empty('SELECT * FROM jobq_metric_counters WHERE shard = 2147483647',
                'the row of the backend that exited was folded into shard 0');

------------------------------------------------------------------------------------------
-- a claim of limited jobs (jobq__claim_limited) counts like any other claim
SELECT jobq_set_limit('lim', max_running => 2);
SELECT jobq_enqueue('lt', queue => 'lq', limit_group => 'lim', limit_key => k)
FROM (VALUES ('k1'), ('k1'), ('k1'), ('k2')) AS v (k);
SELECT is((SELECT count(*)::int FROM jobq_dequeue('wl', ARRAY['lt'], batch_size => 10)), 3,
          'limited claim: three jobs (two of key k1, at most two at once, and k2)');
SELECT is(pg_temp.v('jobq_started_total', pg_temp.l('lq', 'lt')), 3::double precision,
          'a limited claim counts its starts');
SELECT results_eq($$SELECT * FROM pg_temp.gauge() WHERE queue = 'lq'$$,
                  $$SELECT * FROM pg_temp.counted() WHERE queue = 'lq'$$,
                  'and moves the gauge as the table moved');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE queue = 'lq' AND claimed_at IS NULL
           AND status = 'processing'), 0, 'and sets claimed_at');

------------------------------------------------------------------------------------------
-- a bounded label space: at most metrics_label_sets (queue, job_type) label sets under their
-- own names, the others under the overflow label set ('', ''); jobq_metrics_forget()
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
DELETE FROM jobq_metric_counters;
DELETE FROM jobq_metric_deltas;
DELETE FROM jobq_metric_labels;
SELECT is(jobq_configure(metrics_label_sets => 2) ->> 'metrics_label_sets', '2', 'a bound of 2');
SELECT jobq_enqueue('bt', queue => q) FROM (VALUES ('b1'), ('b2'), ('b3'), ('b4'), ('b1')) AS v (q);
SELECT count(*) FROM jobq_enqueue_many(
    '[{"job_type": "bt", "queue": "b5"}, {"job_type": "bt", "queue": "b2"},
      {"job_type": "bt", "queue": "b6"}]');
SELECT results_eq(
    $$SELECT labels ->> 'queue', value FROM jobq_metrics()
      WHERE metric = 'jobq_enqueued_total' ORDER BY 1$$,
    $$VALUES (''::text, 4::double precision), ('b1', 2), ('b2', 2)$$,
    'the first two label sets under their names, the next four jobs under the overflow set');
SELECT is((SELECT count(DISTINCT (labels ->> 'queue', labels ->> 'job_type')) FROM jobq_metrics()
           WHERE labels ? 'job_type'),
          3::bigint, 'three label sets (the bound and the overflow) in every per-type metric');
SELECT is((SELECT count(DISTINCT labels ->> 'queue') FROM jobq_metrics() WHERE labels ? 'queue'),
          3::bigint, 'and three queue labels in the per-queue gauges');
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('', '')) + 4, 8::double precision,
          'every enqueue is counted once: 4 + 2 + 2');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('wb', ARRAY['bt'], batch_size => 5)), 5,
          'five jobs claimed');
SELECT is((SELECT sum(value) FROM jobq_metrics() WHERE metric = 'jobq_started_total'),
          5::double precision, 'the claims are counted, over the label sets');
SELECT results_eq(
    $$SELECT queue, status, jobs FROM pg_temp.gauge()$$,
    $$SELECT CASE WHEN j.queue IN ('b1', 'b2') THEN j.queue ELSE '' END, j.status, count(*)
      FROM jobq_all_jobs AS j GROUP BY 1, 2 ORDER BY 1, 2$$,
    'the gauge jobq_jobs is the jobs present, those of other label sets under queue ""');
SELECT is((SELECT value FROM jobq_metrics() WHERE metric = 'jobq_oldest_available_age_seconds'
           AND labels = '{"queue": ""}'), 0::double precision,
          'the oldest-age gauge of the other queues is under queue ""');
-- forget: b1 and b3 have no jobs left; b3 was never admitted, so only b1 goes
DELETE FROM jobq_jobs WHERE queue IN ('b1', 'b3');
SELECT is(jobq_metrics_forget(), 1::bigint, 'jobq_metrics_forget removes the label set b1');
SELECT results_eq(
    $$SELECT DISTINCT labels ->> 'queue' FROM jobq_metrics()
      WHERE metric = 'jobq_enqueued_total' ORDER BY 1$$,
    $$VALUES (''::text), ('b2')$$, 'b1 is gone; b2 and the overflow set (its jobs remain) stay');
SELECT jobq_enqueue('bt', queue => 'b7');
SELECT is(pg_temp.v('jobq_enqueued_total', pg_temp.l('b7', 'bt')), 1::double precision,
          'the room made is taken by the next new label set');
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT is(jobq_metrics_forget(), 3::bigint, 'with no job left, every label set goes: b2, b7, ""');
SELECT results_eq($$SELECT metric FROM jobq_metrics()$$, $$VALUES ('jobq_metrics_counting'::text)$$,
                  'nothing left but the counting gauge');
SELECT is((SELECT count(*)::int FROM jobq_metric_labels), 0, 'no admission left');
SELECT jobq_configure(metrics_label_sets => 1000);

SELECT * FROM finish();
ROLLBACK;
