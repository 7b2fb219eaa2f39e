-- jobq_names() RETURNS TABLE(kind, name)
--
-- The queue names and job types that exist, from the jobs available (with or without a limit)
-- and running, the job types of keyed jobs live and finished, metrics' label sets, schedules,
-- workers' filters and pauses; each index of jobs read one distinct name at a time.
BEGIN;
SELECT plan(6);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
DELETE FROM jobq_metric_labels;

SELECT is_empty($$SELECT * FROM jobq_names()$$, 'no jobs, schedules, workers or pauses: no names');

-- three hundred jobs of three types in two queues, a limited one, a running one
SELECT jobq_enqueue('t' || (n % 3), queue => 'q' || (n % 2)) FROM generate_series(1, 300) AS n;
SELECT jobq_enqueue('lim', queue => 'limited', limit_group => 'g');
SELECT jobq_enqueue('run', queue => 'running');
SELECT count(*) FROM jobq_dequeue('w', job_types => '{run}');
-- a finished job with a key, one without (named by nothing else), a schedule, a pause
SELECT jobq_enqueue('keyed', idempotency_key => 'k1', queue => 'gone');
SELECT jobq_enqueue('unkeyed', queue => 'gone2');
UPDATE jobq_jobs SET status = 'cancelled', finished_at = now() WHERE job_type IN ('keyed', 'unkeyed');
SELECT jobq_schedule('nightly', '0 3 * * *', 'cleanup', queue => 'maintenance');
SELECT jobq_pause('held');

SELECT results_eq(
    $$SELECT name FROM jobq_names() WHERE kind = 'queue'$$,
    $$VALUES ('held'::text), ('limited'), ('maintenance'), ('q0'), ('q1'), ('running')$$,
    'queues: of available, limited and running jobs, schedules and pauses, by name'
);
SELECT results_eq(
    $$SELECT name FROM jobq_names() WHERE kind = 'job_type'$$,
    $$VALUES ('cleanup'::text), ('keyed'), ('lim'), ('run'), ('t0'), ('t1'), ('t2')$$,
    'job types: also those of finished jobs with a key'
);
SELECT is((SELECT array_agg(kind ORDER BY ord) FROM jobq_names() WITH ORDINALITY AS n (kind, name, ord)),
          (SELECT array_agg(k) FROM (SELECT 'queue'::text AS k FROM generate_series(1, 6)
                                     UNION ALL SELECT 'job_type' FROM generate_series(1, 7)) AS x),
          'the queues first');

-- the metrics' label sets; and the jobs are read one distinct name at a time: no sequential
-- scan, a few index fetches for 300 available jobs (this transaction's own counts)
INSERT INTO jobq_metric_labels (queue, job_type) VALUES ('counted_q', 'counted_t');
CREATE TEMP TABLE before_call AS
SELECT seq_scan, idx_tup_fetch FROM pg_stat_xact_user_tables WHERE relid = 'jobq_jobs'::regclass;
SELECT ok((SELECT count(*) FROM jobq_names() WHERE name IN ('counted_q', 'counted_t')) = 2,
          'the pairs metrics counts');
SELECT results_eq(
    $$SELECT s.seq_scan - b.seq_scan, s.idx_tup_fetch - b.idx_tup_fetch < 20
      FROM pg_stat_xact_user_tables AS s, before_call AS b WHERE s.relid = 'jobq_jobs'::regclass$$,
    $$VALUES (0::bigint, true)$$,
    'a skip scan: no sequential scan of jobq_jobs, fewer than 20 rows fetched for 300 jobs'
);
SELECT * FROM finish();
ROLLBACK;
