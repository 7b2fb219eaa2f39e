-- jobq_health(stuck_after, max_pending_age, max_transaction_age)
--   RETURNS TABLE(check_name, queue, severity, value, detail)
--
-- Admin only (see privileges.sql). One row per check (and per queue for
-- oldest_pending_age), severity ok or warning. Only the checks on jobq_jobs are asserted
-- exactly; dead_tuples, idle_in_transaction and oldest_transaction depend on the server and
-- the other sessions, so only their presence and shape are checked.
BEGIN;
SELECT plan(15);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

SELECT throws_ok($$SELECT * FROM jobq_health(stuck_after => '0')$$, '22023',
    'jobq_health: stuck_after must be a positive interval, got 00:00:00',
    'stuck_after 0: 22023');
SELECT throws_ok($$SELECT * FROM jobq_health(max_pending_age => NULL)$$, '22023', NULL,
    'max_pending_age NULL: 22023');
SELECT throws_ok($$SELECT * FROM jobq_health(max_transaction_age => '-1 second')$$, '22023', NULL,
    'max_transaction_age negative: 22023');

SELECT set_eq('SELECT check_name FROM jobq_health()',
              $$VALUES ('stuck_processing'), ('unheeded_cancels'), ('dead_letters'), ('dead_tuples'),
                       ('idle_in_transaction'), ('oldest_transaction'), ('schema_owner'),
                       ('schema_create'), ('unserved_job_types')$$,
              'an empty queue: the nine global checks, no oldest_pending_age row');
SELECT results_eq(
    $$SELECT check_name, severity, value FROM jobq_health()
      WHERE check_name IN ('stuck_processing', 'dead_letters', 'unheeded_cancels') ORDER BY 1$$,
    $$VALUES ('dead_letters'::text, 'ok'::text, 0::float8), ('stuck_processing', 'ok', 0),
             ('unheeded_cancels', 'ok', 0)$$,
    'an empty queue: nothing stuck, no dead letters, no cancel waiting'
);
SELECT is_empty($$SELECT * FROM jobq_health() WHERE severity NOT IN ('ok', 'warning')$$,
                'severity is ok or warning');

SELECT lives_ok($$SELECT * FROM jobq_health(stuck_after => '10000 years')$$,
                'stuck_after => 10000 years works (no "timestamp out of range")');

-- a stuck claim, an old pending job in q1, a fresh one in q2, a future one, a dead letter
INSERT INTO jobq_jobs (job_type, queue, status, available_at, locked_at, locked_by, finished_at) VALUES
    ('t', 'q1', 'processing',  now() - interval '3 hours',    now() - interval '2 hours', 'w', NULL),
    ('t', 'q1', 'pending',     now() - interval '20 minutes', NULL, NULL, NULL),
    ('t', 'q1', 'pending',     now() - interval '1 minute',   NULL, NULL, NULL),
    ('t', 'q2', 'pending',     now() - interval '1 minute',   NULL, NULL, NULL),
    ('t', 'q2', 'pending',     now() + interval '1 day',      NULL, NULL, NULL),
    ('t', 'q2', 'dead_letter', now() - interval '1 day',      NULL, NULL, now());
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
-- two running jobs asked to stop, 2 hours and 5 minutes ago
INSERT INTO jobq_jobs (job_type, queue, status, locked_at, locked_by, cancel_requested_at) VALUES
    ('t', 'q3', 'processing', now(), 'w', now() - interval '2 hours'),
    ('t', 'q3', 'processing', now(), 'w', now() - interval '5 minutes');
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history

SELECT results_eq(
    $$SELECT severity, value FROM jobq_health() WHERE check_name = 'stuck_processing'$$,
    $$VALUES ('warning'::text, 1::float8)$$,
    'a lock older than stuck_after (1 hour): warning, 1'
);
SELECT results_eq(
    $$SELECT severity, value FROM jobq_health(stuck_after => '3 hours') WHERE check_name = 'stuck_processing'$$,
    $$VALUES ('ok'::text, 0::float8)$$,
    'stuck_after => 3 hours: the 2-hour-old lock is fine'
);
SELECT results_eq(
    $$SELECT queue, severity, value FROM jobq_health() WHERE check_name = 'oldest_pending_age' ORDER BY queue$$,
    $$VALUES ('q1'::text, 'warning'::text, 1200::float8), ('q2', 'ok', 60)$$,
    'oldest_pending_age per queue, in seconds; a job available in the future does not count'
);
SELECT results_eq(
    $$SELECT queue, severity FROM jobq_health(max_pending_age => '30 minutes')
      WHERE check_name = 'oldest_pending_age' ORDER BY queue$$,
    $$VALUES ('q1'::text, 'ok'::text), ('q2', 'ok')$$,
    'max_pending_age => 30 minutes: both queues fine'
);
SELECT results_eq(
    $$SELECT severity, value FROM jobq_health() WHERE check_name = 'dead_letters'$$,
    $$VALUES ('warning'::text, 1::float8)$$,
    'a dead letter: warning, 1'
);
SELECT results_eq(
    $$SELECT severity, value FROM jobq_health() WHERE check_name = 'unheeded_cancels'$$,
    $$VALUES ('warning'::text, 1::float8)$$,
    'a job still running an hour (stuck_after) after its cancel request: warning, 1'
);
SELECT results_eq(
    $$SELECT severity, value FROM jobq_health(stuck_after => '1 minute')
      WHERE check_name = 'unheeded_cancels'$$,
    $$VALUES ('warning'::text, 2::float8)$$,
    'stuck_after => 1 minute: both requests count'
);
SELECT is(
    (SELECT count(*)::int FROM jobq_health(stuck_after => '1 minute', max_pending_age => '1 minute',
                                           max_transaction_age => '1 minute')),
    12, 'named arguments; one row per check, per queue with available jobs, and per queue and '
        'job type that no worker claimed (q1/t and q2/t: no worker ever claimed here)'
);

SELECT * FROM finish();
ROLLBACK;
