-- jobq_list_jobs(statuses, job_type, queue, max_rows) RETURNS SETOF jobq_jobs
--
-- Admin only (it shows payloads; see privileges.sql). Lists jobs, most
-- recently changed first (updated_at DESC, then id), filtered by statuses (NULL = all),
-- job_type and queue (NULL = any), at most max_rows. 22023 for an unknown status or
-- max_rows < 1.
BEGIN;
SELECT plan(13);

DELETE FROM jobq_jobs;

INSERT INTO jobq_jobs (job_type, queue, status, finished_at, locked_at, locked_by, updated_at) VALUES
    ('a', 'q1', 'pending',     NULL,  NULL,  NULL, now() - interval '5 minutes'),
    ('a', 'q1', 'processing',  NULL,  now(), 'w',  now() - interval '4 minutes'),
    ('b', 'q1', 'succeeded',   now(), NULL,  NULL, now() - interval '3 minutes'),
    ('a', 'q2', 'failed',      now(), NULL,  NULL, now() - interval '2 minutes'),
    ('b', 'q2', 'dead_letter', now(), NULL,  NULL, now() - interval '1 minute');

CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT throws_ok($$SELECT * FROM jobq_list_jobs(max_rows => 0)$$, '22023',
    'jobq_list_jobs: max_rows must be at least 1, got 0', 'max_rows 0: 22023');
SELECT throws_ok($$SELECT * FROM jobq_list_jobs(max_rows => NULL)$$, '22023',
    'jobq_list_jobs: max_rows must be at least 1, got NULL', 'max_rows NULL: 22023');
SELECT throws_ok($$SELECT * FROM jobq_list_jobs(statuses => '{pending,done}')$$, '22023',
    'jobq_list_jobs: statuses contains ''done'', which is not a status', 'an unknown status: 22023');
SELECT throws_ok($$SELECT * FROM jobq_list_jobs(statuses => ARRAY[NULL]::text[])$$, '22023',
    'jobq_list_jobs: statuses contains NULL, which is not a status', 'a NULL status: 22023');

SELECT results_eq(
    'SELECT status FROM jobq_list_jobs()',
    $$VALUES ('dead_letter'::text), ('failed'), ('succeeded'), ('processing'), ('pending')$$,
    'no filter: every job, most recently changed first'
);
SELECT results_eq('SELECT * FROM jobq_list_jobs()', 'SELECT * FROM snap ORDER BY updated_at DESC, id',
                  'whole rows, as stored');
SELECT results_eq($$SELECT status FROM jobq_list_jobs(statuses => '{failed,dead_letter}')$$,
                  $$VALUES ('dead_letter'::text), ('failed')$$, 'statuses filter');
SELECT results_eq($$SELECT status FROM jobq_list_jobs(job_type => 'a')$$,
                  $$VALUES ('failed'::text), ('processing'), ('pending')$$, 'job_type filter');
SELECT results_eq($$SELECT status FROM jobq_list_jobs(queue => 'q1', job_type => 'a')$$,
                  $$VALUES ('processing'::text), ('pending')$$, 'queue and job_type filters together');
SELECT results_eq($$SELECT status FROM jobq_list_jobs(max_rows => 2)$$,
                  $$VALUES ('dead_letter'::text), ('failed')$$, 'max_rows: the most recent ones');
SELECT is_empty($$SELECT * FROM jobq_list_jobs(statuses => '{}')$$, 'an empty statuses list: nothing');
SELECT is((SELECT count(*)::int FROM jobq_list_jobs('{pending}', 'a', 'q1', 100)), 1, 'positional call');
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'listing changes nothing');

SELECT * FROM finish();
ROLLBACK;
