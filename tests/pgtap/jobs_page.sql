-- jobq_jobs_page(status, queue, job_type, after_at, after_id, max_rows, scan_limit)
--     RETURNS SETOF jobq_job_summary
--
-- One page of the jobs of one status, without payloads: pending by (available_at, id),
-- processing by (locked_until, id), soonest lock expiry first, finished statuses newest first by (finished_at, id); the next
-- page starts after the (sort_at, id) of the previous page's last row. A page of finished jobs
-- examines at most scan_limit of them and, stopped there short of max_rows matches, ends with
-- a marker row (matches false: the last job examined). 22023 for an unknown or NULL status,
-- max_rows outside 1..1000, scan_limit outside 1..1000000, only one of after_at and after_id.
BEGIN;
SELECT plan(31);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

-- Five succeeded jobs, two of them finished at the same instant (the id breaks the tie), in
-- queues q1/q2; pending jobs available now and later (scheduled); two processing jobs, the later
-- claim holding the shorter lock; one of each other finished status.
INSERT INTO jobq_jobs (id, job_type, queue, status, finished_at, payload) VALUES
    ('00000000-0000-0000-0000-000000000001', 'a', 'q1', 'succeeded', now() - interval '5 min', '{"secret": 1}'),
    ('00000000-0000-0000-0000-000000000002', 'b', 'q2', 'succeeded', now() - interval '4 min', '{}'),
    ('00000000-0000-0000-0000-000000000003', 'a', 'q1', 'succeeded', now() - interval '3 min', '{}'),
    ('00000000-0000-0000-0000-000000000004', 'a', 'q2', 'succeeded', now() - interval '3 min', '{}'),
    ('00000000-0000-0000-0000-000000000005', 'b', 'q1', 'succeeded', now() - interval '1 min', '{}');
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
INSERT INTO jobq_jobs (id, job_type, queue, status, available_at, scheduled) VALUES
    ('00000000-0000-0000-0000-000000000011', 'a', 'q1', 'pending', now() - interval '2 min', false),
    ('00000000-0000-0000-0000-000000000012', 'a', 'q1', 'pending', now() + interval '1 hour', true),
    ('00000000-0000-0000-0000-000000000013', 'b', 'q2', 'pending', now() - interval '3 min', false);
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
INSERT INTO jobq_jobs (id, job_type, queue, status, locked_at, locked_until, locked_by, attempts, cancel_requested_at) VALUES
    ('00000000-0000-0000-0000-000000000021', 'a', 'q1', 'processing', now() - interval '1 min', now() + interval '4 min', 'w1', 1, now()),
    ('00000000-0000-0000-0000-000000000022', 'b', 'q2', 'processing', now(), now() + interval '20 seconds', 'w2', 1, NULL);
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
INSERT INTO jobq_jobs (id, job_type, queue, status, finished_at, last_error) VALUES
    ('00000000-0000-0000-0000-000000000031', 'a', 'q1', 'failed', now() - interval '2 min', 'no'),
    ('00000000-0000-0000-0000-000000000032', 'a', 'q1', 'dead_letter', now() - interval '2 min', 'boom'),
    ('00000000-0000-0000-0000-000000000033', 'a', 'q2', 'dead_letter', now() - interval '1 min', 'bang'),
    ('00000000-0000-0000-0000-000000000034', 'b', 'q2', 'cancelled', now() - interval '1 min', 'stop');
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history

CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT throws_ok($$SELECT * FROM jobq_jobs_page(status => 'done')$$, '22023',
    'jobq_jobs_page: status must be one of waiting, pending, processing, succeeded, failed, dead_letter, cancelled, got ''done''',
    'an unknown status: 22023');
SELECT throws_ok($$SELECT * FROM jobq_jobs_page(status => NULL)$$, '22023',
    'jobq_jobs_page: status must be one of waiting, pending, processing, succeeded, failed, dead_letter, cancelled, got NULL',
    'a NULL status: 22023');
SELECT throws_ok($$SELECT * FROM jobq_jobs_page('pending', max_rows => 0)$$, '22023',
    'jobq_jobs_page: max_rows must be between 1 and 1000, got 0', 'max_rows 0: 22023');
SELECT throws_ok($$SELECT * FROM jobq_jobs_page('pending', max_rows => 1001)$$, '22023',
    'jobq_jobs_page: max_rows must be between 1 and 1000, got 1001', 'max_rows 1001: 22023');
SELECT throws_ok($$SELECT * FROM jobq_jobs_page('pending', max_rows => NULL)$$, '22023',
    'jobq_jobs_page: max_rows must be between 1 and 1000, got NULL', 'max_rows NULL: 22023');
SELECT throws_ok($$SELECT * FROM jobq_jobs_page('succeeded', scan_limit => 0)$$, '22023',
    'jobq_jobs_page: scan_limit must be between 1 and 1000000, got 0', 'scan_limit 0: 22023');
SELECT throws_ok($$SELECT * FROM jobq_jobs_page('succeeded', scan_limit => NULL)$$, '22023',
    'jobq_jobs_page: scan_limit must be between 1 and 1000000, got NULL', 'scan_limit NULL: 22023');
SELECT throws_ok($$SELECT * FROM jobq_jobs_page('succeeded', scan_limit => 1000001)$$, '22023',
    'jobq_jobs_page: scan_limit must be between 1 and 1000000, got 1000001', 'scan_limit over a million: 22023');
SELECT throws_ok($$SELECT * FROM jobq_jobs_page('succeeded', after_id => '00000000-0000-0000-0000-000000000001')$$,
    '22023', NULL, 'after_id without after_at: 22023');
SELECT throws_ok($$SELECT * FROM jobq_jobs_page('succeeded', after_at => now())$$,
    '22023', NULL, 'after_at without after_id: 22023');
SELECT throws_ok($$SELECT * FROM jobq_jobs_page('succeeded', after_at => now())$$,
    '22023', 'jobq_jobs_page: after_at and after_id go together (the sort_at and id of the last row of the previous page), got after_at '
    || now()::text || ', after_id NULL', 'the message names both arguments');

SELECT results_eq(
    $$SELECT id::text FROM jobq_jobs_page('succeeded')$$,
    $$VALUES ('00000000-0000-0000-0000-000000000005'), ('00000000-0000-0000-0000-000000000004'),
             ('00000000-0000-0000-0000-000000000003'), ('00000000-0000-0000-0000-000000000002'),
             ('00000000-0000-0000-0000-000000000001')$$,
    'succeeded: newest first, the id breaking ties (descending)');
SELECT results_eq(
    $$SELECT id::text FROM jobq_jobs_page('succeeded', max_rows => 2)$$,
    $$VALUES ('00000000-0000-0000-0000-000000000005'), ('00000000-0000-0000-0000-000000000004')$$,
    'max_rows: the first page');
SELECT results_eq(
    $$SELECT p.id::text FROM jobq_jobs_page('succeeded', max_rows => 2) AS first
      CROSS JOIN LATERAL (SELECT 1) AS o
      JOIN LATERAL jobq_jobs_page('succeeded', after_at => first.sort_at, after_id => first.id, max_rows => 2) AS p ON true
      WHERE first.id = '00000000-0000-0000-0000-000000000004'$$,
    $$VALUES ('00000000-0000-0000-0000-000000000003'), ('00000000-0000-0000-0000-000000000002')$$,
    'the next page starts after the last row, across a tie of finished_at');
SELECT is_empty(
    $$SELECT * FROM jobq_jobs_page('succeeded', after_at => now() - interval '5 min',
                                   after_id => '00000000-0000-0000-0000-000000000001')$$,
    'after the last row: an empty page');
SELECT results_eq(
    $$SELECT id::text FROM jobq_jobs_page('succeeded', queue => 'q1', job_type => 'a')$$,
    $$VALUES ('00000000-0000-0000-0000-000000000003'), ('00000000-0000-0000-0000-000000000001')$$,
    'queue and job_type filters');
SELECT results_eq(
    $$SELECT id::text, sort_at FROM jobq_jobs_page('pending')$$,
    $$SELECT id::text, available_at FROM snap WHERE status = 'pending' ORDER BY available_at, id$$,
    'pending: available and scheduled jobs, oldest available_at first; sort_at is available_at');
SELECT results_eq(
    $$SELECT p.id::text FROM jobq_jobs_page('pending', after_at => now() - interval '3 min',
                                            after_id => '00000000-0000-0000-0000-000000000013') AS p$$,
    $$VALUES ('00000000-0000-0000-0000-000000000011'), ('00000000-0000-0000-0000-000000000012')$$,
    'pending: the next page');
SELECT jobq_enqueue('p', queue => 'q1') AS wparent \gset
SELECT jobq_enqueue('w', queue => 'q1', depends_on => ARRAY[:'wparent']::uuid[]) AS w1 \gset
SELECT jobq_enqueue('w', queue => 'q2', depends_on => ARRAY[:'wparent']::uuid[]) AS w2 \gset
SELECT results_eq(
    $$SELECT p.id::text, p.status FROM jobq_jobs_page('waiting', queue => 'q1') AS p$$,
    format($$VALUES (%L, 'waiting')$$, :'w1'),
    'waiting: the jobs that wait for a dependency, oldest first, filtered like the others');
DELETE FROM jobq_jobs WHERE id IN (:'w1', :'w2', :'wparent');
SELECT results_eq(
    $$SELECT id::text, sort_at, cancel_requested, locked_by FROM jobq_jobs_page('processing')$$,
    $$SELECT id::text, locked_until, cancel_requested_at IS NOT NULL, locked_by FROM snap
      WHERE status = 'processing' ORDER BY locked_until, id$$,
    'processing: soonest lock expiry first, not oldest claim; sort_at is locked_until; cancel_requested reports the request');
SELECT results_eq(
    $$SELECT p.id::text FROM jobq_jobs_page('processing', max_rows => 1) AS first
      JOIN LATERAL jobq_jobs_page('processing', after_at => first.sort_at, after_id => first.id) AS p ON true$$,
    $$VALUES ('00000000-0000-0000-0000-000000000021')$$,
    'processing: the next page starts after the last row');
SELECT results_eq(
    $$SELECT id::text FROM jobq_jobs_page('processing', queue => 'q1')$$,
    $$VALUES ('00000000-0000-0000-0000-000000000021')$$,
    'processing: the queue filter');
SELECT results_eq(
    $$SELECT id::text, last_error FROM jobq_jobs_page('dead_letter')$$,
    $$VALUES ('00000000-0000-0000-0000-000000000033', 'bang'), ('00000000-0000-0000-0000-000000000032', 'boom')$$,
    'dead_letter: newest first, with the last error');
SELECT results_eq(
    $$SELECT id::text FROM jobq_jobs_page('failed') UNION ALL SELECT id::text FROM jobq_jobs_page('cancelled')$$,
    $$VALUES ('00000000-0000-0000-0000-000000000031'), ('00000000-0000-0000-0000-000000000034')$$,
    'failed and cancelled: only their own status');
-- q1/a among the succeeded, newest first: 5 (b, q1) 4 (a, q2) 3 (a, q1) 2 (b, q2) 1 (a, q1)
SELECT results_eq(
    $$SELECT id::text, matches FROM jobq_jobs_page('succeeded', queue => 'q1', job_type => 'a', scan_limit => 2)$$,
    $$VALUES ('00000000-0000-0000-0000-000000000004', false)$$,
    'scan_limit: two jobs examined, no match, the marker is the last one examined');
SELECT results_eq(
    $$SELECT id::text, matches FROM jobq_jobs_page('succeeded', queue => 'q1', job_type => 'a', scan_limit => 3)$$,
    $$VALUES ('00000000-0000-0000-0000-000000000003', true), ('00000000-0000-0000-0000-000000000003', false)$$,
    'a match that is the last job examined is listed, then marks where the search stopped');
SELECT results_eq(
    $$SELECT p.id::text, p.matches FROM jobq_jobs_page('succeeded', queue => 'q1', job_type => 'a', scan_limit => 2) AS m,
             jobq_jobs_page('succeeded', queue => 'q1', job_type => 'a', after_at => m.sort_at,
                            after_id => m.id, scan_limit => 10) AS p$$,
    $$VALUES ('00000000-0000-0000-0000-000000000003', true), ('00000000-0000-0000-0000-000000000001', true)$$,
    'the search goes on from the marker; the end of the jobs is no marker');
SELECT is(
    (SELECT cancel_requested FROM jobq_jobs_page('succeeded', max_rows => 1)), false,
    'cancel_requested is false, never NULL, without a request');
SELECT columns_are(current_schema(), 'jobq_job_summary', ARRAY[
    'id', 'queue', 'job_type', 'status', 'priority', 'attempts', 'max_attempts', 'available_at',
    'created_at', 'updated_at', 'locked_at', 'locked_by', 'finished_at', 'last_error',
    'cancel_requested', 'sort_at', 'matches'], 'the row type has no payload, result or errors');
SELECT is((SELECT count(*)::int FROM jobq_jobs_page('succeeded', 'q2', NULL, NULL, NULL, 10)), 2,
          'positional call');
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'listing, and the refused calls, change nothing');

SELECT * FROM finish();
ROLLBACK;
