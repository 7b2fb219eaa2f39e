-- jobq_find_jobs(job_id, idempotency_key, job_type, queue, statuses, created_after,
--                created_before, finished_after, finished_before, payload_contains, after_id,
--                max_rows, scan_limit) RETURNS SETOF jobq_job_summary
--
-- Live and finished jobs alike, newest first, every filter ANDed; an idempotency key without a
-- job type is found under every job type; keyset paging by id; a search stopped by scan_limit
-- ends with a marker row. A monitor gets no last_error and may not search payloads (42501).
-- Bad input is 22023 naming the argument. The plans (index look-ups, no scan) are checked by
-- tests/python/test_find_jobs.py.
BEGIN;
SELECT plan(24);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

SELECT jobq_enqueue('mail', '{"to": "a@x", "n": 1}', idempotency_key => 'order-1', queue => 'q1') AS a1 \gset
SELECT jobq_enqueue('report', '{"n": 2}', idempotency_key => 'order-1', queue => 'q2',
                    run_at => now() + interval '1 hour') AS r1 \gset
SELECT jobq_enqueue('mail', '{"to": "b@x"}', queue => 'q1') AS b1 \gset
UPDATE jobq_jobs SET status = 'failed', finished_at = now() - interval '1 minute',
                     last_error = 'boom', attempts = 1
WHERE id = :'b1';

-- Ids made within one millisecond are ordered by their random bits: the expected order is
-- the ids', newest millisecond first.
SELECT id AS first, lead(id) OVER (ORDER BY id DESC) AS second
FROM jobq_all_jobs ORDER BY id DESC LIMIT 1 \gset
SELECT results_eq(
    $$SELECT id FROM jobq_find_jobs()$$,
    $$SELECT id FROM jobq_all_jobs ORDER BY id DESC$$,
    'no filter: every job, live and finished, by id descending'
);
SELECT results_eq(
    format('SELECT id, status, matches FROM jobq_find_jobs(job_id => %L)', :'b1'),
    format('VALUES (%L::uuid, %L::text, true)', :'b1', 'failed'),
    'by id: a finished job (from the history)'
);
SELECT is_empty(
    format('SELECT * FROM jobq_find_jobs(job_id => %L, queue => %L)', :'b1', 'q2'),
    'by id, with a filter it does not match: nothing'
);
SELECT results_eq(
    $$SELECT id FROM jobq_find_jobs(idempotency_key => 'order-1')$$,
    format('SELECT id FROM jobq_all_jobs WHERE id IN (%L, %L) ORDER BY id DESC', :'r1', :'a1'),
    'by idempotency key: the job of every job type that has it'
);
SELECT results_eq(
    $$SELECT id FROM jobq_find_jobs(idempotency_key => 'order-1', job_type => 'mail')$$,
    format('VALUES (%L::uuid)', :'a1'),
    'by idempotency key and job type: that one'
);
SELECT is_empty($$SELECT * FROM jobq_find_jobs(idempotency_key => 'nope')$$, 'an unknown key: nothing');
SELECT results_eq(
    $$SELECT id FROM jobq_find_jobs(job_type => 'mail', queue => 'q1')$$,
    format('SELECT id FROM jobq_all_jobs WHERE id IN (%L, %L) ORDER BY id DESC', :'b1', :'a1'),
    'by job type and queue'
);
SELECT results_eq(
    $$SELECT id FROM jobq_find_jobs(statuses => '{failed,dead_letter}')$$,
    format('VALUES (%L::uuid)', :'b1'),
    'by statuses: finished ones only'
);
SELECT results_eq(
    $$SELECT id FROM jobq_find_jobs(statuses => '{pending}', created_after => now() - interval '1 minute',
                                    created_before => now() + interval '1 minute')$$,
    format('SELECT id FROM jobq_all_jobs WHERE id IN (%L, %L) ORDER BY id DESC', :'r1', :'a1'),
    'by status and creation time'
);
SELECT results_eq(
    $$SELECT id FROM jobq_find_jobs(finished_after => now() - interval '2 minutes')$$,
    format('VALUES (%L::uuid)', :'b1'),
    'by finish time: finished jobs only'
);
SELECT results_eq(
    $$SELECT id FROM jobq_find_jobs(payload_contains => '{"to": "a@x"}')$$,
    format('VALUES (%L::uuid)', :'a1'),
    'by payload containment (@>)'
);
SELECT results_eq(
    format('SELECT id FROM jobq_find_jobs(after_id => %L, max_rows => 1)', :'first'),
    format('VALUES (%L::uuid)', :'second'),
    'the next page starts after the cursor'
);
SELECT results_eq(
    $$SELECT id, matches FROM jobq_find_jobs(queue => 'none', scan_limit => 2)$$,
    format('VALUES (%L::uuid, false)', :'second'),
    'a search stopped by scan_limit ends with a marker row: the last job examined'
);
SELECT is((SELECT sort_at FROM jobq_find_jobs(job_id => :'a1')),
          (SELECT created_at FROM jobq_jobs WHERE id = :'a1'), 'sort_at is created_at');

-- bad input: 22023, the argument named
SELECT throws_ok($$SELECT * FROM jobq_find_jobs(statuses => '{done}')$$, '22023',
                 'jobq_find_jobs: statuses contains ''done'', which is not a status', 'an unknown status');
SELECT throws_ok($$SELECT * FROM jobq_find_jobs(max_rows => 0)$$, '22023',
                 'jobq_find_jobs: max_rows must be between 1 and 1000, got 0', 'max_rows 0');
SELECT throws_ok($$SELECT * FROM jobq_find_jobs(scan_limit => NULL)$$, '22023',
                 'jobq_find_jobs: scan_limit must be between 1 and 1000000, got NULL', 'scan_limit NULL');
SELECT throws_like($$SELECT * FROM jobq_find_jobs(created_after => now(), created_before => now())$$,
                   'jobq_find_jobs: created_after % must be before created_before %', 'an empty creation range');
SELECT throws_like($$SELECT * FROM jobq_find_jobs(finished_after => now(), finished_before => now() - interval '1 s')$$,
                   'jobq_find_jobs: finished_after % must be before finished_before %', 'an empty finish range');
SELECT throws_ok(format('SELECT * FROM jobq_find_jobs(queue => %L)', repeat('q', 201)), '22023',
                 'jobq_find_jobs: queue is 201 characters long, at most 200 are allowed', 'a queue too long');

-- a monitor: metadata only
CREATE ROLE t_find_monitor;
-- The schema jobq is installed in (public here, a tenant's schema on Citus).
SELECT format('GRANT USAGE ON SCHEMA %I, tap TO t_find_monitor', current_schema()) \gexec
GRANT EXECUTE ON FUNCTION jobq_find_jobs(uuid, text, text, text, text[], timestamptz, timestamptz,
                                         timestamptz, timestamptz, jsonb, uuid, integer, integer)
    TO t_find_monitor;
SET ROLE t_find_monitor;
SELECT is((SELECT last_error FROM jobq_find_jobs(job_id => :'b1')), NULL, 'a monitor sees no error text');
SELECT throws_ok($$SELECT * FROM jobq_find_jobs(payload_contains => '{}')$$, '42501',
                 'jobq_find_jobs: payload_contains is for roles that may read payloads (EXECUTE on jobq_get_job)',
                 'a monitor may not search payloads');
SELECT throws_ok($$SELECT * FROM jobq_act_on_jobs('cancel', ARRAY[gen_random_uuid()])$$, '42501',
                 'permission denied for function jobq_act_on_jobs', 'nor act on jobs');
RESET ROLE;
SELECT is((SELECT last_error FROM jobq_find_jobs(job_id => :'b1')), 'boom', 'an admin does');

SELECT * FROM finish();
ROLLBACK;
