-- jobq_act_on_jobs(action, job_ids, reason) RETURNS TABLE(job_id, outcome)
-- jobq_audit_log(before_id, max_rows) RETURNS SETOF jobq_audit
--
-- Each action changes the jobs it applies to and leaves the others alone, saying why; every
-- call is recorded in jobq_audit (who, what, which ids, which changed, why) in the same
-- transaction. Bad input is 22023 naming the argument and changes and records nothing.
BEGIN;
SELECT plan(27);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
DELETE FROM jobq_audit;

SELECT jobq_enqueue('t', queue => 'q1') AS p1 \gset
SELECT jobq_enqueue('t', queue => 'q1', run_at => now() + interval '1 day') AS later \gset
SELECT jobq_enqueue('t', queue => 'q2') AS dead \gset
UPDATE jobq_jobs SET status = 'dead_letter', finished_at = now(), attempts = 5, last_error = 'x'
WHERE id = :'dead';
SELECT gen_random_uuid() AS unknown \gset

-- run_now
SELECT results_eq(
    format($$SELECT * FROM jobq_act_on_jobs('run_now', ARRAY[%L, %L, %L, %L, %L]::uuid[], 'hurry')$$,
           :'later', :'p1', :'dead', :'unknown', :'later'),
    format($$VALUES (%L::uuid, 'available now'::text), (%L, 'left alone: available already'),
                    (%L, 'left alone: dead_letter'), (%L, 'unknown')$$,
           :'later', :'p1', :'dead', :'unknown'),
    'run_now: a scheduled job becomes available, the others are left alone (each id once, in order)'
);
SELECT ok((SELECT available_at <= now() AND NOT scheduled FROM jobq_jobs WHERE id = :'later'),
          'the scheduled job is available now and no longer scheduled');
SELECT results_eq(
    $$SELECT login_role, acting_role, action, changed, reason FROM jobq_audit_log()$$,
    format($$VALUES (session_user::text COLLATE "default", session_user::text COLLATE "default", 'run_now'::text, ARRAY[%L]::uuid[], 'hurry'::text)$$,
           :'later'),
    'the action is recorded: who, what, the ids changed, why'
);
SELECT is((SELECT job_ids FROM jobq_audit_log()),
          ARRAY[:'later', :'p1', :'dead', :'unknown']::uuid[], '... and the ids asked for, each once');

-- requeue
SELECT results_eq(
    format($$SELECT * FROM jobq_act_on_jobs('requeue', ARRAY[%L, %L]::uuid[])$$, :'dead', :'p1'),
    format($$VALUES (%L::uuid, 'requeued'::text), (%L, 'left alone: pending')$$, :'dead', :'p1'),
    'requeue: a dead letter is pending again, a pending job left alone'
);
SELECT is((SELECT status FROM jobq_jobs WHERE id = :'dead'), 'pending', 'the dead letter is pending');

-- cancel
SELECT results_eq(
    format($$SELECT * FROM jobq_act_on_jobs('cancel', ARRAY[%L, %L]::uuid[], 'withdrawn')$$, :'p1', :'unknown'),
    format($$VALUES (%L::uuid, 'cancelled'::text), (%L, 'unknown')$$, :'p1', :'unknown'),
    'cancel: a pending job is cancelled, an unknown id said'
);
SELECT is((SELECT last_error FROM jobq_jobs_history WHERE id = :'p1'), 'withdrawn', 'with the reason as jobq_cancel keeps it');
SELECT results_eq(
    format($$SELECT * FROM jobq_act_on_jobs('cancel', ARRAY[%L]::uuid[])$$, :'p1'),
    format($$VALUES (%L::uuid, 'left alone: cancelled'::text)$$, :'p1'),
    'cancelling it again: left alone'
);

-- delete
SELECT results_eq(
    format($$SELECT * FROM jobq_act_on_jobs('delete', ARRAY[%L, %L]::uuid[], 'gdpr')$$, :'p1', :'later'),
    format($$VALUES (%L::uuid, 'deleted'::text), (%L, 'left alone: pending')$$, :'p1', :'later'),
    'delete: a finished job is deleted, a live one left alone'
);
SELECT is((SELECT count(*) FROM jobq_all_jobs WHERE id = :'p1'), 0::bigint, 'the finished job is gone');

SELECT results_eq(
    $$SELECT action, reason FROM jobq_audit_log()$$,
    $$VALUES ('delete'::text, 'gdpr'::text), ('cancel', NULL), ('cancel', 'withdrawn'), ('requeue', NULL),
             ('run_now', 'hurry')$$,
    'jobq_audit_log: every action, newest first'
);
SELECT results_eq(
    format('SELECT action FROM jobq_audit_log(before_id => %s, max_rows => 2)',
           (SELECT id FROM jobq_audit WHERE action = 'cancel' AND reason IS NULL)),
    $$VALUES ('cancel'::text), ('requeue')$$,
    'jobq_audit_log pages by id'
);

-- delete of a dependency that failed: what it held back under rule wait is cancelled, as
-- jobq_prune does, since nothing can release it any more
SELECT jobq_enqueue('t', queue => 'q3') AS fdep \gset
UPDATE jobq_jobs SET status = 'dead_letter', finished_at = now(), attempts = 5, last_error = 'x'
WHERE id = :'fdep';
SELECT jobq_enqueue('c', depends_on => ARRAY[:'fdep']::uuid[], on_dependency_failure => 'wait') AS w1 \gset
SELECT is((SELECT status FROM jobq_all_jobs WHERE id = :'w1'), 'waiting',
          'a job that waits for a dead-lettered dependency under rule wait');
SELECT results_eq(
    format($$SELECT * FROM jobq_act_on_jobs('delete', ARRAY[%L]::uuid[])$$, :'fdep'),
    format($$VALUES (%L::uuid, 'deleted'::text)$$, :'fdep'),
    'delete: the dependency is deleted'
);
SELECT is((SELECT status FROM jobq_all_jobs WHERE id = :'w1'), 'cancelled',
          'its waiting dependent is cancelled with it');

-- cancel of a job waiting for a dependency: cancelled, said and recorded as changed
SELECT jobq_enqueue('t', queue => 'q4') AS wdep \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'wdep']::uuid[]) AS w2 \gset
SELECT results_eq(
    format($$SELECT * FROM jobq_act_on_jobs('cancel', ARRAY[%L]::uuid[], 'not needed')$$, :'w2'),
    format($$VALUES (%L::uuid, 'cancelled'::text)$$, :'w2'),
    'cancel: a waiting job is cancelled'
);
SELECT is((SELECT changed FROM jobq_audit ORDER BY id DESC LIMIT 1), ARRAY[:'w2'::uuid],
          'and recorded as changed');

-- bad input: 22023, nothing changed or recorded
CREATE TEMP TABLE snap AS SELECT id, status, available_at FROM jobq_all_jobs;
SELECT throws_ok($$SELECT * FROM jobq_act_on_jobs('zap', ARRAY[gen_random_uuid()])$$, '22023',
                 'jobq_act_on_jobs: action must be one of cancel, requeue, delete, run_now, got ''zap''',
                 'an unknown action');
SELECT throws_ok($$SELECT * FROM jobq_act_on_jobs(NULL, ARRAY[gen_random_uuid()])$$, '22023',
                 'jobq_act_on_jobs: action must be one of cancel, requeue, delete, run_now, got NULL',
                 'a NULL action');
SELECT throws_ok($$SELECT * FROM jobq_act_on_jobs('cancel', NULL)$$, '22023',
                 'jobq_act_on_jobs: job_ids must not be NULL', 'NULL job_ids');
SELECT throws_ok($$SELECT * FROM jobq_act_on_jobs('cancel', '{}')$$, '22023',
                 'jobq_act_on_jobs: job_ids must hold 1 to 1000 ids, got 0', 'no ids');
SELECT throws_ok($$SELECT * FROM jobq_act_on_jobs('cancel', ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 1001)))$$,
                 '22023', 'jobq_act_on_jobs: job_ids must hold 1 to 1000 ids, got 1001', 'too many ids');
SELECT throws_ok(format($$SELECT * FROM jobq_act_on_jobs('cancel', ARRAY[%L, NULL]::uuid[])$$, :'later'), '22023',
                 'jobq_act_on_jobs: job_ids must not contain NULL', 'a NULL id');
SELECT throws_ok(format($$SELECT * FROM jobq_act_on_jobs('cancel', ARRAY[%L]::uuid[], repeat('r', 1001))$$, :'later'),
                 '22023', 'jobq_act_on_jobs: reason is 1001 characters long, at most 1000 are allowed',
                 'a reason too long');
SELECT throws_ok($$SELECT * FROM jobq_audit_log(max_rows => 0)$$, '22023',
                 'jobq_audit_log: max_rows must be between 1 and 1000, got 0', 'jobq_audit_log: max_rows 0');
SELECT results_eq('SELECT id, status, available_at FROM jobq_all_jobs ORDER BY id',
                  'SELECT * FROM snap ORDER BY id', 'nothing changed by the refused calls');

SELECT * FROM finish();
ROLLBACK;
