-- jobq_requeue_dead_letter(job_id) RETURNS boolean
-- jobq_requeue_dead_letters(job_type, queue, include_cancelled, reason) RETURNS int
--
-- A dead_letter or failed job becomes pending again, available now,
-- attempts 0, claim cleared, error history (last_error, errors) kept. Anything else is left
-- alone (false / not counted). A cancelled job: the single form requeues it, the bulk form
-- only with include_cancelled => true. The bulk form records itself in jobq_audit.
--
-- Not covered here: NOTIFY (delivered at commit; see the Python suite).
BEGIN;
SELECT plan(41);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

-- One job in each status, made through the API (job_type = the status it ends in).
SELECT jobq_enqueue('dead_letter', max_attempts => 1, run_at => now() - interval '5 minutes') AS dl,
       jobq_enqueue('failed', run_at => now() - interval '4 minutes') AS fl,
       jobq_enqueue('succeeded', run_at => now() - interval '3 minutes') AS sc,
       jobq_enqueue('processing', run_at => now() - interval '2 minutes') AS pr \gset
SELECT count(*) AS claimed FROM jobq_dequeue('w', batch_size => 4) \gset
SELECT jobq_fail(:'dl', 'w', 'out of attempts') AS dl_status,
       jobq_fail(:'fl', 'w', 'permanent', retry => false) AS fl_status,
       jobq_complete(:'sc', 'w') AS sc_done,
       jobq_enqueue('pending') AS pe \gset

SELECT results_eq(
    'SELECT job_type, status FROM jobq_all_jobs ORDER BY job_type',
    $$VALUES ('dead_letter'::text, 'dead_letter'::text), ('failed', 'failed'), ('pending', 'pending'),
             ('processing', 'processing'), ('succeeded', 'succeeded')$$,
    'one job in each status'
);

------------------------------------------------------------------------------------------
-- jobq_requeue_dead_letter
------------------------------------------------------------------------------------------

CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs WHERE job_type NOT IN ('dead_letter', 'failed');

SELECT is(jobq_requeue_dead_letter(:'dl'), true, 'a dead_letter job is requeued: true');
SELECT results_eq(
    format($$SELECT status, attempts, available_at, locked_at, locked_by, finished_at, updated_at,
                    last_error, jsonb_array_length(errors), errors -> 0 ->> 'error'
             FROM jobq_all_jobs WHERE id = %L$$, :'dl'),
    $$VALUES ('pending'::text, 0, now(), NULL::timestamptz, NULL::text, NULL::timestamptz, now(),
              'out of attempts'::text, 1, 'out of attempts'::text)$$,
    'pending, available now, attempts 0, not finished; last_error and errors kept'
);
SELECT is(jobq_requeue_dead_letter(job_id => :'fl'), true, 'a failed job is requeued (named argument): true');
SELECT is((SELECT status || '/' || attempts FROM jobq_all_jobs WHERE id = :'fl'), 'pending/0', '... pending, attempts 0');

SELECT is(jobq_requeue_dead_letter(:'sc'), false, 'a succeeded job: false');
SELECT is(jobq_requeue_dead_letter(:'pr'), false, 'a processing job: false');
SELECT is(jobq_requeue_dead_letter(:'pe'), false, 'a pending job: false');
SELECT is(jobq_requeue_dead_letter(:'dl'), false, 'a job already requeued: false');
SELECT is(jobq_requeue_dead_letter(gen_random_uuid()), false, 'an unknown id: false');
SELECT is(jobq_requeue_dead_letter(NULL), false, 'NULL: false');
SELECT results_eq(
    'SELECT * FROM jobq_all_jobs WHERE id IN (SELECT id FROM snap) ORDER BY id',
    'SELECT * FROM snap ORDER BY id',
    'jobs in other statuses are unchanged'
);

-- the requeued job runs again from attempt 1, and its history keeps growing
SELECT is((SELECT attempts FROM jobq_dequeue('w2', job_types => '{dead_letter}')), 1,
          'the requeued job is claimed again as attempt 1');
SELECT is(jobq_fail(:'dl', 'w2', 'still failing'), 'dead_letter', 'it uses up its attempts again');
SELECT is(
    (SELECT jsonb_agg(e ->> 'error') FROM jobq_all_jobs AS j, jsonb_array_elements(j.errors) AS e WHERE j.id = :'dl'),
    '["out of attempts", "still failing"]'::jsonb,
    'errors holds the history of both runs'
);

------------------------------------------------------------------------------------------
-- jobq_requeue_dead_letters
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
-- six finished-unsuccessfully jobs: types a/b, queues q1/q2, and one job of each other status
INSERT INTO jobq_jobs (job_type, queue, status, attempts, finished_at, last_error, errors)
SELECT t, q, s, 5, now() - interval '1 hour', 'e', '[{"attempt": 5}]'
FROM (VALUES ('a', 'q1', 'dead_letter'), ('a', 'q2', 'dead_letter'), ('b', 'q1', 'dead_letter'),
             ('a', 'q1', 'failed'), ('b', 'q2', 'failed'), ('b', 'q2', 'dead_letter'),
             ('a', 'q1', 'succeeded')) AS v (t, q, s);
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT jobq_enqueue('a', queue => 'q1') AS pend \gset
DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs WHERE status NOT IN ('dead_letter', 'failed');

SELECT is(jobq_requeue_dead_letters(job_type => 'a', queue => 'q1'), 2,
          'job_type and queue: dead_letter and failed jobs of both (2)');
SELECT is(jobq_requeue_dead_letters(queue => 'q2'), 3, 'queue only: of every type (3)');
SELECT is(jobq_requeue_dead_letters(job_type => 'nope'), 0, 'an unknown job type: 0');
SELECT is(jobq_requeue_dead_letters(), 1, 'no filter: the rest (1)');
SELECT is(jobq_requeue_dead_letters(), 0, 'nothing left: 0');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'pending' AND attempts = 0
           AND available_at = now() AND finished_at IS NULL AND locked_by IS NULL), 7,
          'all six are pending, attempts 0, available now (plus the pending job)');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE id NOT IN (SELECT id FROM snap)
           AND last_error = 'e' AND errors = '[{"attempt": 5}]'), 6,
          'their error history is kept');
SELECT results_eq(
    'SELECT * FROM jobq_all_jobs WHERE id IN (SELECT id FROM snap) ORDER BY id',
    'SELECT * FROM snap ORDER BY id',
    'the succeeded and pending jobs are unchanged'
);

-- a job type filter alone
UPDATE jobq_jobs SET status = 'dead_letter', finished_at = now() WHERE id <> :'pend' AND status = 'pending';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is(jobq_requeue_dead_letters('b'), 3, 'job_type only (positional): of every queue (3)');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'dead_letter' AND job_type = 'a'), 3,
          '... the other type is left in dead_letter');

-- processing jobs are never touched, even when they match the filters
WITH m AS (DELETE FROM jobq_jobs_history WHERE job_type = 'a' AND status = 'dead_letter' RETURNING *)
INSERT INTO jobq_jobs (id, job_type, queue, status, attempts, locked_at, locked_by)
SELECT m.id, m.job_type, m.queue, 'processing', 1, now(), 'w' FROM m;
SELECT is(jobq_requeue_dead_letters('a'), 0, 'processing jobs are not requeued');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'processing'), 3, '... and stay processing');

-- cancelled jobs: left alone by the bulk form unless asked, requeued by the single form
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('c', queue => 'q1') AS c1, jobq_enqueue('c', queue => 'q1') AS c2,
       jobq_enqueue('c', queue => 'q2') AS c3, jobq_enqueue('c', queue => 'q1') AS cd \gset
SELECT count(*) AS cancelled FROM jobq_cancel(ARRAY[:'c1', :'c2', :'c3']::uuid[], 'customer withdrew') \gset
UPDATE jobq_jobs SET status = 'dead_letter', finished_at = now() WHERE id = :'cd';
SELECT is(jobq_requeue_dead_letters(), 1, 'the bulk form requeues the dead letter only');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'cancelled' AND last_error = 'customer withdrew'), 3,
          '... the cancelled jobs stay cancelled, their reason kept');
SELECT is(jobq_requeue_dead_letters(job_type => 'c', queue => 'q1', include_cancelled => false), 0,
          'include_cancelled => false: none');
SELECT is(jobq_requeue_dead_letters(queue => 'q1', include_cancelled => true), 2,
          'include_cancelled => true: the cancelled jobs of the filters');
SELECT is(jobq_requeue_dead_letter(:'c3'), true, 'the single form requeues a cancelled job');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'pending'), 4, '... all four pending now');
SELECT throws_ok($$SELECT jobq_requeue_dead_letters(include_cancelled => NULL)$$, '22023',
    'jobq_requeue_dead_letters: include_cancelled must be true or false, got NULL',
    'include_cancelled NULL is 22023, naming it');

-- the bulk form records itself in jobq_audit (who, the filters, the jobs matched and those
-- requeued, why), as jobq_act_on_jobs records an act, also as a role set by SET ROLE
DELETE FROM jobq_audit;
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('m', queue => 'mq'), jobq_enqueue('m', queue => 'mq'), jobq_enqueue('m', queue => 'other');
UPDATE jobq_jobs SET status = 'dead_letter', finished_at = now();
SELECT is(jobq_requeue_dead_letters(job_type => 'm', queue => 'mq', reason => 'relay fixed'), 2,
          'requeue all with a reason: the two dead letters of the filters');
SELECT results_eq(
    $$SELECT login_role, acting_role, action, reason, filters,
             (SELECT array_agg(i ORDER BY i) FROM unnest(job_ids) AS i),
             (SELECT array_agg(i ORDER BY i) FROM unnest(changed) AS i)
      FROM jobq_audit_log()$$,
    $$SELECT session_user::text COLLATE "default", session_user::text COLLATE "default",
             'requeue_dead_letters'::text, 'relay fixed'::text,
             '{"job_type": "m", "queue": "mq", "include_cancelled": false}'::jsonb,
             (SELECT array_agg(id ORDER BY id) FROM jobq_jobs WHERE queue = 'mq'),
             (SELECT array_agg(id ORDER BY id) FROM jobq_jobs WHERE queue = 'mq')$$,
    'the bulk requeue is recorded: who, what (filters, jobs matched and requeued), why'
);
SELECT throws_ok(format('SELECT jobq_requeue_dead_letters(reason => %L)', repeat('r', 1001)), '22023',
    'jobq_requeue_dead_letters: reason is 1001 characters long, at most 1000 are allowed',
    'a reason of 1001 characters is 22023, naming it');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE status = 'dead_letter'), 1,
          '... nothing changes then');
CREATE ROLE jobq_t_requeue_all;
-- The schema jobq is installed in (public here, a tenant's schema on Citus).
SELECT format('GRANT USAGE ON SCHEMA %I TO jobq_t_requeue_all', current_schema()) \gexec
GRANT EXECUTE ON FUNCTION jobq_requeue_dead_letters(text, text, boolean, text) TO jobq_t_requeue_all;
SET ROLE jobq_t_requeue_all;
SELECT jobq_requeue_dead_letters();
RESET ROLE;
SELECT results_eq(
    $$SELECT acting_role, action, reason, filters, cardinality(job_ids), cardinality(changed)
      FROM jobq_audit_log()$$,
    $$VALUES ('jobq_t_requeue_all'::text COLLATE "default", 'requeue_dead_letters'::text, NULL::text,
              '{"job_type": null, "queue": null, "include_cancelled": false}'::jsonb, 1, 1),
             (session_user, 'requeue_dead_letters', 'relay fixed',
              '{"job_type": "m", "queue": "mq", "include_cancelled": false}', 2, 2)$$,
    '... the refused call recorded nothing; a call under SET ROLE names that role'
);
SELECT is(jobq_requeue_dead_letters(job_type => 'nothing'), 0, 'a requeue that matches nothing');
SELECT is((SELECT (action, job_ids, changed)::text FROM jobq_audit_log() LIMIT 1),
          '(requeue_dead_letters,{},{})', '... is recorded too (someone tried)');

SELECT * FROM finish();
ROLLBACK;
