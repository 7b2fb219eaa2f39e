-- jobq_stats() RETURNS TABLE(queue, job_type, status, jobs bigint, oldest_available_at)
--
-- One row per (queue, job_type, status) present, with the number of jobs
-- and the oldest available_at among them. Rows are set up through the API where that is
-- short, else inserted directly with explicit times.
BEGIN;
SELECT plan(6);

DELETE FROM jobq_jobs;

SELECT is_empty('SELECT * FROM jobq_stats()', 'an empty queue: no rows');

SELECT jobq_enqueue('a', queue => 'q1', run_at => now() - interval '2 hours') AS p1,
       jobq_enqueue('a', queue => 'q1', run_at => now() - interval '1 hour') AS p2,
       jobq_enqueue('a', queue => 'q1', run_at => now() + interval '1 hour') AS p3,
       jobq_enqueue('b', queue => 'q1', run_at => now() - interval '30 minutes') AS s1,
       jobq_enqueue('a', queue => 'q2', max_attempts => 1, run_at => now() - interval '3 hours') AS d1,
       jobq_enqueue('a', queue => 'q2', run_at => now() - interval '4 hours') AS f1 \gset
-- d1 and f1 (q2) end in dead_letter and failed; s1 (b) succeeds; p1 (the oldest a of q1) is processing
SELECT count(*) AS claimed_q2 FROM jobq_dequeue('w', queues => '{q2}', batch_size => 2) \gset
SELECT jobq_fail(:'d1', 'w', 'e') AS d1_status, jobq_fail(:'f1', 'w', 'e', retry => false) AS f1_status \gset
SELECT count(*) AS claimed_b FROM jobq_dequeue('w', job_types => '{b}') \gset
SELECT jobq_complete(:'s1', 'w') AS s1_done \gset
SELECT count(*) AS claimed_a FROM jobq_dequeue('w', queues => '{q1}') \gset

SELECT results_eq(
    'SELECT * FROM jobq_stats()',
    $$VALUES
        ('q1'::text, 'a'::text, 'pending'::text,     2::bigint, now() - interval '1 hour'),
        ('q1',       'a',       'processing',        1,         now() - interval '2 hours'),
        ('q1',       'b',       'succeeded',         1,         now() - interval '30 minutes'),
        ('q2',       'a',       'dead_letter',       1,         now() - interval '3 hours'),
        ('q2',       'a',       'failed',            1,         now() - interval '4 hours')$$,
    'one row per (queue, job_type, status), ordered so, with counts and the oldest available_at'
);
SELECT is((SELECT sum(jobs)::int FROM jobq_stats()), (SELECT count(*)::int FROM jobq_all_jobs),
          'the counts add up to the number of jobs');

-- statuses with no job are not listed; a new queue appears as soon as it has a job
SELECT is((SELECT count(*)::int FROM jobq_stats() WHERE queue = 'q3'), 0, 'no row for an empty queue');
SELECT jobq_enqueue('c', queue => 'q3') AS q3 \gset
SELECT results_eq($$SELECT job_type, status, jobs FROM jobq_stats() WHERE queue = 'q3'$$,
                  $$VALUES ('c'::text, 'pending'::text, 1::bigint)$$,
                  'a row for q3 once it has a job');

SET LOCAL timezone = 'Pacific/Marquesas';   -- UTC-09:30
SELECT results_eq('SELECT * FROM jobq_stats() ORDER BY 1, 2, 3',
                  $$SELECT queue, job_type, status, count(*), min(available_at)
                    FROM jobq_all_jobs GROUP BY 1, 2, 3 ORDER BY 1, 2, 3$$,
                  'the same figures under another session time zone');
RESET timezone;

SELECT * FROM finish();
ROLLBACK;
