-- jobq_error_summary(since, per_type) RETURNS TABLE(job_type, error, failures, jobs, last_seen)
-- jobq__error_line(error) RETURNS text
--
-- The failed attempts of the window, per job type and exception line (a traceback's last
-- line, not its first), most frequent first, at most per_type per job type; from jobs waiting
-- to retry and jobs that ended failed or dead_letter. Bad input is 22023 naming the argument.
BEGIN;
SELECT plan(12);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

SELECT is(jobq__error_line(E'Traceback (most recent call last):\n  File "h.py", line 3\nValueError: bad\n'),
          'ValueError: bad', 'a whole traceback: its last line');
SELECT is(jobq__error_line(E'worker error: Traceback (most recent call last):\n  x\nKeyError: 1'),
          'worker error: KeyError: 1', 'after the worker''s prefix too');
SELECT is(jobq__error_line(E'\n  ValueError: a  \n  File "y"'), 'ValueError: a',
          'otherwise the first non-blank line, trimmed');
SELECT is(jobq__error_line(NULL), '', 'NULL: empty');

CREATE TEMP TABLE made AS
SELECT jobq_enqueue('send', max_attempts => 1) AS id FROM generate_series(1, 2)
UNION ALL SELECT jobq_enqueue('send', max_attempts => 5) FROM generate_series(1, 3)
UNION ALL SELECT jobq_enqueue('report', max_attempts => 1);
SELECT count(*) FROM jobq_dequeue('w', batch_size => 10);
SELECT jobq_fail(j.id, 'w', CASE WHEN j.job_type = 'report' THEN 'OSError: disk full'
                                  WHEN j.max_attempts = 1 THEN E'Traceback (most recent call last):\n  File "a"\nTimeoutError: smtp'
                                  ELSE 'ConnectionError: refused' END)
FROM jobq_jobs AS j WHERE j.status = 'processing';
-- an attempt older than the window does not count
UPDATE jobq_jobs SET errors = jsonb_set(errors, '{0,at}', to_jsonb(now() - interval '2 hours'))
WHERE id = (SELECT id FROM jobq_jobs WHERE job_type = 'send' ORDER BY id LIMIT 1);

SELECT results_eq(
    $$SELECT job_type, error, failures, jobs FROM jobq_error_summary()$$,
    $$VALUES ('report'::text, 'OSError: disk full'::text, 1::bigint, 1::bigint),
             ('send', 'ConnectionError: refused', 2, 2),
             ('send', 'TimeoutError: smtp', 2, 2)$$,
    'per job type, the exception lines, most frequent first (ties: the latest seen, then by text): '
    'retrying and dead-letter jobs, within the hour'
);
SELECT results_eq(
    $$SELECT job_type, error FROM jobq_error_summary(per_type => 1)$$,
    $$VALUES ('report'::text, 'OSError: disk full'::text), ('send', 'ConnectionError: refused')$$,
    'per_type: the first of each job type'
);
SELECT is((SELECT count(*) FROM jobq_error_summary(since => interval '3 hours') WHERE job_type = 'send'
           AND error = 'ConnectionError: refused' AND failures = 3), 1::bigint,
          'a longer window counts the older attempt');
SELECT ok((SELECT bool_and(last_seen > now() - interval '1 minute') FROM jobq_error_summary()),
          'last_seen: the latest attempt');

SELECT throws_ok($$SELECT * FROM jobq_error_summary(since => interval '0')$$, '22023',
                 'jobq_error_summary: since must be more than 0 and at most 31 days, got 00:00:00', 'since 0');
SELECT throws_ok($$SELECT * FROM jobq_error_summary(since => NULL)$$, '22023',
                 'jobq_error_summary: since must be more than 0 and at most 31 days, got NULL', 'since NULL');
SELECT throws_ok($$SELECT * FROM jobq_error_summary(per_type => 0)$$, '22023',
                 'jobq_error_summary: per_type must be between 1 and 100, got 0', 'per_type 0');
SELECT throws_ok($$SELECT * FROM jobq_error_summary(per_type => 101)$$, '22023',
                 'jobq_error_summary: per_type must be between 1 and 100, got 101', 'per_type 101');

SELECT * FROM finish();
ROLLBACK;
