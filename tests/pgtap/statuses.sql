-- The status names, written once: jobq__statuses() lists them, and the CHECK constraints of
-- jobq_jobs and the functions that take status names (jobq_prune, jobq_list_jobs) ask it,
-- so that adding a status is one edit of sql/functions/jobq__statuses.sql (and of
-- pgq_client.statuses.STATUS_IS_FINISHED, which tests/python compares with it).
BEGIN;
SELECT plan(9);

SELECT is(jobq__statuses(),
          ARRAY['waiting', 'pending', 'processing', 'succeeded', 'failed', 'dead_letter', 'cancelled'],
          'every status, in the order of a job''s life');
SELECT is(jobq__statuses(finished => TRUE), ARRAY['succeeded', 'failed', 'dead_letter', 'cancelled'],
          'the finished statuses');
SELECT is(jobq__statuses(finished => FALSE), ARRAY['waiting', 'pending', 'processing'],
          'the unfinished statuses');
SELECT is(
    (SELECT p.provolatile FROM pg_proc AS p WHERE p.oid = 'jobq__statuses'::regproc), 'i',
    'IMMUTABLE: a constraint folds it to a constant once per statement'
);

SELECT results_eq(
    $$SELECT conname::text COLLATE "default", pg_get_constraintdef(oid) FROM pg_constraint
      WHERE conrelid = 'jobq_jobs'::regclass
        AND conname IN ('jobq_jobs_status_check', 'jobq_jobs_finished_check') ORDER BY 1$$,
    $$VALUES ('jobq_jobs_finished_check'::text,
              'CHECK (((status = ANY (jobq__statuses(finished => true))) = (finished_at IS NOT NULL))) NOT VALID'::text),
             ('jobq_jobs_status_check', 'CHECK ((status = ANY (jobq__statuses()))) NOT VALID')$$,
    'the CHECK constraints ask jobq__statuses() instead of listing the names'
);

-- No function body lists statuses itself (three or more names in a row), except the one.
SELECT is_empty(
    $$SELECT p.proname FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace AND p.proname <> 'jobq__statuses'
        AND p.prosrc ~ ('''(pending|processing|succeeded|failed|dead_letter)''\s*,\s*'
                        '''(pending|processing|succeeded|failed|dead_letter)''\s*,\s*'
                        '''(pending|processing|succeeded|failed|dead_letter)''')$$,
    'no other function lists the statuses'
);

-- Its answers are what the constraints and functions enforce.
DELETE FROM jobq_jobs;
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, status) VALUES ('t', 'done')$$, '23514', NULL,
    'a name jobq__statuses() does not list is refused by jobq_jobs_status_check');
SELECT throws_ok($$SELECT jobq_prune(statuses => '{processing}')$$, '22023',
    'jobq_prune: statuses may not include ''processing'': only finished jobs are pruned',
    'jobq_prune refuses the unfinished statuses of jobq__statuses(finished => false)');
SELECT is_empty($$SELECT * FROM jobq_list_jobs(statuses => jobq__statuses())$$,
    'jobq_list_jobs accepts every status of jobq__statuses()');

SELECT * FROM finish();
ROLLBACK;
