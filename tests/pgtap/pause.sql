-- jobq_pause(queue, reason) RETURNS boolean
-- jobq_resume(queue) RETURNS boolean
-- jobq_queues() RETURNS TABLE(queue, paused, paused_at, reason, pending, processing)
--
-- While a queue is paused no claim takes its jobs (limited or not, whatever the filters): they
-- stay pending with no attempt spent and keep their order; a running job still completes; an
-- enqueue still succeeds; other queues are claimed as usual. Bad input is 22023 naming the
-- argument and changes nothing; a role without the admin grant gets 42501.
--
-- Not covered here: resume's NOTIFY (delivered at commit; tests/python/test_cli_queues.py).
BEGIN;
SELECT plan(33);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
DELETE FROM jobq_paused_queues;

SELECT jobq_enqueue('t', queue => 'mail', priority => 1, run_at => now() - interval '3 minutes') AS m1,
       jobq_enqueue('t', queue => 'mail', run_at => now() - interval '2 minutes') AS m2,
       jobq_enqueue('t', queue => 'mail', run_at => now() - interval '1 minute') AS running,
       jobq_enqueue('t', queue => 'other') AS o1 \gset
UPDATE jobq_jobs SET priority = 9 WHERE id = :'running';
SELECT is((SELECT id FROM jobq_dequeue('w0', queues => '{mail}')), :'running'::uuid, 'a mail job is running');

------------------------------------------------------------------------------------------
-- pause, queues
------------------------------------------------------------------------------------------

SELECT is(jobq_pause('mail', reason => 'smtp down'), true, 'jobq_pause pauses a queue: true');
SELECT is(jobq_pause('mail', 'again'), false, 'pausing it again: false');
SELECT is(jobq_pause(queue => 'empty'), true, 'a queue without jobs can be paused (named argument)');
SELECT results_eq(
    'SELECT queue, paused, paused_at, reason, pending, processing FROM jobq_queues()',
    $$VALUES ('empty'::text, true, now(), NULL::text, 0::bigint, 0::bigint),
             ('mail', true, now(), 'smtp down', 2, 1),
             ('other', false, NULL, NULL, 1, 0)$$,
    'jobq_queues: every queue with jobs or a pause, its pause (the first reason kept) and counts'
);

------------------------------------------------------------------------------------------
-- claims skip paused queues
------------------------------------------------------------------------------------------

CREATE TEMP TABLE before AS SELECT * FROM jobq_jobs WHERE queue = 'mail' AND status = 'pending';
SELECT results_eq($$SELECT id FROM jobq_dequeue('w1', batch_size => 10)$$,
                  format('VALUES (%L::uuid)', :'o1'), 'a claim with no filter takes only the other queue''s job');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w1', queues => '{mail}', batch_size => 10)$$,
                'a claim of the paused queue alone gets nothing');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w1', job_types => '{t}', queues => '{mail,other}', batch_size => 10)$$,
                'nor with both filters');
SELECT is_empty($$SELECT * FROM jobq_dequeue('w1', job_types => '{t}', batch_size => 10)$$,
                'nor by job type');
SELECT results_eq('SELECT * FROM jobq_jobs WHERE queue = ''mail'' AND status = ''pending'' ORDER BY id',
                  'SELECT * FROM before ORDER BY id',
                  'its pending jobs are untouched: still pending, no attempt spent');
SELECT jobq_enqueue('t', queue => 'mail') AS m3 \gset
SELECT is((SELECT status FROM jobq_jobs WHERE id = :'m3'), 'pending', 'an enqueue into the paused queue succeeds');
SELECT is(jobq_complete(:'running', 'w0'), true, 'a job that was running completes');

-- limited jobs of the paused queue are held too; those of other queues are not
SELECT jobq_set_limit('g', max_running => 5);
SELECT jobq_enqueue('t', queue => 'mail', limit_group => 'g') AS lm,
       jobq_enqueue('t', queue => 'other', limit_group => 'g') AS lo \gset
SELECT results_eq($$SELECT id FROM jobq_dequeue('w2', batch_size => 10)$$,
                  format('VALUES (%L::uuid)', :'lo'), 'a limited job of the paused queue is not claimed either');

-- an expired claim of the paused queue goes back to pending and waits there
SELECT jobq_resume('mail') AS r \gset
SELECT is((SELECT id FROM jobq_dequeue('w3', queues => '{mail}')), :'m1'::uuid, 'resumed: the head of the queue is claimed');
SELECT is(jobq_pause('mail'), true, 'paused again');
-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600) WHERE id = :'m1';
SELECT is_empty($$SELECT * FROM jobq_dequeue('w4', batch_size => 10)$$, 'an expired claim of a paused queue is not claimed again');
SELECT results_eq(format('SELECT status, attempts, locked_by FROM jobq_jobs WHERE id = %L', :'m1'),
                  $$VALUES ('pending'::text, 1, NULL::text)$$, '... it waits pending, its expired attempt counted');

------------------------------------------------------------------------------------------
-- resume
------------------------------------------------------------------------------------------

SELECT is(jobq_resume('mail'), true, 'jobq_resume: true');
SELECT is(jobq_resume('mail'), false, 'resuming a queue that is not paused: false');
SELECT is(jobq_resume(queue => 'never'), false, 'an unknown queue: false');
SELECT results_eq($$SELECT id FROM jobq_dequeue('w5', queues => '{mail}', batch_size => 4)$$,
                  format('VALUES (%L::uuid), (%L::uuid), (%L::uuid), (%L::uuid)', :'m1', :'m2', :'m3', :'lm'),
                  'resumed: its jobs are claimed in their order (priority, then available_at)');
SELECT results_eq('SELECT queue, paused FROM jobq_queues() WHERE queue IN (''mail'', ''empty'')',
                  $$VALUES ('empty'::text, true), ('mail', false)$$, 'jobq_queues shows the change');

------------------------------------------------------------------------------------------
-- bad input: 22023 naming the argument, nothing changed
------------------------------------------------------------------------------------------

CREATE TEMP TABLE snap AS SELECT * FROM jobq_paused_queues;
SELECT throws_ok($$SELECT jobq_pause(NULL)$$, '22023', 'jobq_pause: queue must be a non-blank string',
                 'jobq_pause: queue NULL is 22023');
SELECT throws_ok($$SELECT jobq_pause(E' \u200b')$$, '22023', 'jobq_pause: queue must be a non-blank string',
                 'jobq_pause: a blank queue is 22023');
SELECT throws_ok(format('SELECT jobq_pause(%L)', repeat('q', 201)), '22023',
                 'jobq_pause: queue is 201 characters long, at most 200 are allowed', 'jobq_pause: a queue of 201 characters');
SELECT throws_ok(format('SELECT jobq_pause(%L, %L)', 'q', repeat('r', 1001)), '22023',
                 'jobq_pause: reason is 1001 characters long, at most 1000 are allowed', 'jobq_pause: a reason of 1001 characters');
SELECT throws_ok($$SELECT jobq_resume(NULL)$$, '22023', 'jobq_resume: queue must be a non-blank string',
                 'jobq_resume: queue NULL is 22023');
SELECT throws_ok($$SELECT jobq_resume('')$$, '22023', 'jobq_resume: queue must be a non-blank string',
                 'jobq_resume: an empty queue is 22023');
SELECT throws_ok(format('SELECT jobq_resume(%L)', repeat('q', 201)), '22023',
                 'jobq_resume: queue is 201 characters long, at most 200 are allowed', 'jobq_resume: a queue of 201 characters');
SELECT results_eq('SELECT * FROM jobq_paused_queues ORDER BY queue', 'SELECT * FROM snap ORDER BY queue',
                  'the refused calls changed nothing');

------------------------------------------------------------------------------------------
-- admin only
------------------------------------------------------------------------------------------

CREATE ROLE t_pause_worker;
-- The schema jobq is installed in (public here, a tenant's schema on Citus).
SELECT format('GRANT USAGE ON SCHEMA %I, tap TO t_pause_worker', current_schema()) \gexec
GRANT EXECUTE ON FUNCTION jobq_dequeue(text, text[], integer, interval, text[]) TO t_pause_worker;
SET ROLE t_pause_worker;
SELECT throws_ok($$SELECT jobq_pause('mail')$$, '42501', 'permission denied for function jobq_pause',
                 'a worker cannot pause');
SELECT throws_ok($$SELECT jobq_resume('empty')$$, '42501', 'permission denied for function jobq_resume',
                 'a worker cannot resume');
RESET ROLE;
SELECT results_eq('SELECT * FROM jobq_paused_queues ORDER BY queue', 'SELECT * FROM snap ORDER BY queue',
                  '... and nothing changed');

SELECT * FROM finish();
ROLLBACK;
