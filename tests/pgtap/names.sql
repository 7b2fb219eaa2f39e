-- jobq_names() RETURNS TABLE(kind, name)
--
-- The queue names and job types that exist: those of every job, live or finished (available
-- with or without a limit, waiting for dependencies, for a run_at or a retry's backoff,
-- running, and finished in each status, with or without a key), and of metrics' label sets,
-- schedules, workers' filters and pauses; each index of jobs read one distinct name at a time.
BEGIN;
SELECT plan(7);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
DELETE FROM jobq_metric_labels;

SELECT is_empty($$SELECT * FROM jobq_names()$$, 'no jobs, schedules, workers or pauses: no names');

-- Each source names its own queue and job type, so that each is seen by itself.
-- available: three hundred jobs of three types in two queues; limited; running
SELECT jobq_enqueue('t' || (n % 3), queue => 'q' || (n % 2)) FROM generate_series(1, 300) AS n;
SELECT jobq_enqueue('lim', queue => 'limited', limit_group => 'g');
SELECT jobq_enqueue('run', queue => 'running');
SELECT count(*) FROM jobq_dequeue('w', job_types => '{run}');
-- waiting for a dependency (its dependency is running); waiting for its run_at
SELECT jobq_enqueue('child', queue => 'childq',
                    depends_on => ARRAY[(SELECT id FROM jobq_jobs WHERE job_type = 'run')]);
SELECT jobq_enqueue('later', queue => 'laterq', run_at => now() + interval '1 day');
-- waiting for a retry's backoff
SELECT jobq_enqueue('retried', queue => 'retryq');
SELECT jobq_fail(id, 'w', 'boom', backoff => '1 hour') FROM jobq_dequeue('w', job_types => '{retried}');
-- finished without a key, one of each status, and one with a key
SELECT jobq_enqueue('ok_t', queue => 'okq');
SELECT jobq_complete(id, 'w') FROM jobq_dequeue('w', job_types => '{ok_t}');
SELECT jobq_enqueue('failed_t', queue => 'failq');
SELECT jobq_fail(id, 'w', 'no', retry => false) FROM jobq_dequeue('w', job_types => '{failed_t}');
SELECT jobq_enqueue('dead_t', queue => 'deadq', max_attempts => 1);
SELECT jobq_fail(id, 'w', 'no') FROM jobq_dequeue('w', job_types => '{dead_t}');
SELECT jobq_cancel(ARRAY[jobq_enqueue('cancel_t', queue => 'cancelq')]);
SELECT jobq_cancel(ARRAY[jobq_enqueue('keyed', idempotency_key => 'k1', queue => 'keyq')]);
-- the small tables: a schedule, a pause, a worker's filters (the claims above wrote theirs)
DELETE FROM jobq_workers;
INSERT INTO jobq_workers (worker_id, job_types, queues) VALUES ('w9', '{wt}', '{wq}');
SELECT jobq_schedule('nightly', '0 3 * * *', 'cleanup', queue => 'maintenance');
SELECT jobq_pause('held');

SELECT results_eq(
    $$SELECT name FROM jobq_names() WHERE kind = 'queue'$$,
    $$VALUES ('cancelq'::text), ('childq'), ('deadq'), ('failq'), ('held'), ('keyq'), ('laterq'),
             ('limited'), ('maintenance'), ('okq'), ('q0'), ('q1'), ('retryq'), ('running'), ('wq')$$,
    'queues: of every kind of job, schedules, pauses and workers, by name'
);
SELECT results_eq(
    $$SELECT name FROM jobq_names() WHERE kind = 'job_type'$$,
    $$VALUES ('cancel_t'::text), ('child'), ('cleanup'), ('dead_t'), ('failed_t'), ('keyed'),
             ('later'), ('lim'), ('ok_t'), ('retried'), ('run'), ('t0'), ('t1'), ('t2'), ('wt')$$,
    'job types: of every kind of job, live or finished, with or without a key, schedules, workers'
);
SELECT is((SELECT array_agg(kind ORDER BY ord) FROM jobq_names() WITH ORDINALITY AS n (kind, name, ord)),
          (SELECT array_agg(k) FROM (SELECT 'queue'::text AS k FROM generate_series(1, 15)
                                     UNION ALL SELECT 'job_type' FROM generate_series(1, 15)) AS x),
          'the queues first');
SELECT is((SELECT array_agg(DISTINCT status ORDER BY status) FROM jobq_all_jobs
           WHERE job_type IN ('child', 'later', 'retried', 'ok_t', 'failed_t', 'dead_t', 'cancel_t')),
          '{cancelled,dead_letter,failed,pending,succeeded,waiting}',
          'the jobs are in the states named (the names above come from each of them)');

-- the metrics' label sets; and the jobs are read one distinct name at a time: no sequential
-- scan, a few index fetches for 300 available jobs and 300 finished ones (this transaction's
-- own counts)
INSERT INTO jobq_metric_labels (queue, job_type) VALUES ('counted_q', 'counted_t');
INSERT INTO jobq_jobs_history (id, queue, job_type, payload, status, priority, attempts,
                               max_attempts, available_at, errors, created_at, updated_at,
                               finished_at, scheduled)
SELECT gen_random_uuid(), 'okq', 'ok_t', '{}', 'succeeded', 0, 1, 5, now(), '[]', now(), now(),
       now(), false
FROM generate_series(1, 300);
CREATE TEMP VIEW scans AS
SELECT sum(s.seq_scan) AS seq_scan, sum(s.idx_tup_fetch) AS fetched
FROM pg_stat_xact_user_tables AS s
WHERE s.relid = 'jobq_jobs'::regclass
   OR s.relid IN (SELECT relid FROM pg_partition_tree('jobq_jobs_history'));
CREATE TEMP TABLE before_call AS SELECT * FROM scans;
SELECT ok((SELECT count(*) FROM jobq_names() WHERE name IN ('counted_q', 'counted_t')) = 2,
          'the pairs metrics counts');
SELECT results_eq(
    $$SELECT s.seq_scan - b.seq_scan, s.fetched - b.fetched < 60 FROM scans AS s, before_call AS b$$,
    $$VALUES (0::numeric, true)$$,
    'a skip scan: no sequential scan of jobq_jobs or the history, fewer than 60 rows fetched for 600 jobs'
);
SELECT * FROM finish();
ROLLBACK;
