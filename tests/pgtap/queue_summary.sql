-- jobq_queue_summary(recent) RETURNS TABLE(queue, available, scheduled, processing, failed,
--                                          dead_letter, cancelled, oldest_available_at, succeeded_recent,
--                                          paused)
--
-- Per queue: pending jobs available now and later, processing, failed, dead_letter, cancelled,
-- the oldest available_at of the available ones, the jobs that succeeded within recent, and
-- whether the queue is paused.
-- Queues with none of these have no row. 22023 for a NULL, negative or over-a-day recent.
BEGIN;
SELECT plan(11);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

INSERT INTO jobq_jobs (job_type, queue, status, available_at, scheduled) VALUES
    ('a', 'q1', 'pending', now() - interval '10 min', false),
    ('a', 'q1', 'pending', now() - interval '2 min', false),
    ('a', 'q1', 'pending', now() + interval '1 hour', true),
    -- scheduled, come due, not promoted by a claim yet: available
    ('b', 'q1', 'pending', now() - interval '20 min', true);
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
INSERT INTO jobq_jobs (job_type, queue, status, locked_at, locked_by) VALUES
    ('a', 'q2', 'processing', now(), 'w');
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
INSERT INTO jobq_jobs (job_type, queue, status, finished_at) VALUES
    ('a', 'q2', 'failed', now()),
    ('a', 'q2', 'dead_letter', now()),
    ('a', 'q2', 'dead_letter', now()),
    ('a', 'q2', 'cancelled', now()),
    ('a', 'q2', 'succeeded', now() - interval '1 min'),
    ('a', 'q3', 'succeeded', now() - interval '1 min'),
    ('a', 'q2', 'succeeded', now() - interval '10 min'),
    -- only old succeeded jobs: no row for q4
    ('a', 'q4', 'succeeded', now() - interval '1 day');
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history

DELETE FROM jobq_paused_queues;
-- q2 paused; q5 paused with no job: a row of zeros
INSERT INTO jobq_paused_queues (queue, paused_at) VALUES ('q2', now()), ('q5', now());

CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT throws_ok($$SELECT * FROM jobq_queue_summary(recent => NULL)$$, '22023',
    'jobq_queue_summary: recent must be between 0 and 1 day, got NULL', 'recent NULL: 22023');
SELECT throws_ok($$SELECT * FROM jobq_queue_summary(recent => '-1 second')$$, '22023',
    'jobq_queue_summary: recent must be between 0 and 1 day, got -00:00:01', 'a negative recent: 22023');
SELECT throws_ok($$SELECT * FROM jobq_queue_summary(recent => '25 hours')$$, '22023',
    'jobq_queue_summary: recent must be between 0 and 1 day, got 25:00:00', 'recent over a day: 22023');

SELECT results_eq(
    $$SELECT queue, available, scheduled, processing, failed, dead_letter, cancelled,
             oldest_available_at, succeeded_recent FROM jobq_queue_summary()$$,
    $$VALUES ('q1'::text, 3::bigint, 1::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint,
              now() - interval '20 min', 0::bigint),
             ('q2', 0, 0, 1, 1, 2, 1, NULL, 1),
             ('q3', 0, 0, 0, 0, 0, 0, NULL, 1),
             ('q5', 0, 0, 0, 0, 0, 0, NULL, 0)$$,
    'per queue: available (a due scheduled job included), scheduled, processing, failed, dead letters, cancelled, oldest available, succeeded in the last 5 minutes'
);
SELECT results_eq(
    $$SELECT queue, succeeded_recent FROM jobq_queue_summary(recent => '1 hour') WHERE queue IN ('q2', 'q3')$$,
    $$VALUES ('q2'::text, 2::bigint), ('q3', 1)$$,
    'recent: how far back succeeded jobs count'
);
SELECT results_eq(
    $$SELECT queue FROM jobq_queue_summary(recent => '0')$$,
    $$VALUES ('q1'::text), ('q2'), ('q5')$$,
    'recent 0: no succeeded job counts, queues with only those have no row (q5: its pause)'
);
SELECT is_empty($$SELECT * FROM jobq_queue_summary() WHERE queue = 'q4'$$,
                'a queue with only old succeeded jobs has no row');
SELECT results_eq(
    $$SELECT queue, paused FROM jobq_queue_summary()$$,
    $$VALUES ('q1'::text, false), ('q2', true), ('q3', false), ('q5', true)$$,
    'paused: true for a queue jobq_pause holds, false otherwise; a paused queue without jobs has its row'
);
SELECT results_eq(
    $$SELECT available, scheduled, processing, failed, dead_letter, cancelled, oldest_available_at,
             succeeded_recent FROM jobq_queue_summary() WHERE queue = 'q5'$$,
    $$VALUES (0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, NULL::timestamptz, 0::bigint)$$,
    'a paused queue without jobs counts none'
);
SELECT is((SELECT count(*)::int FROM jobq_queue_summary('1 day')), 5, 'positional call; 1 day is allowed');
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'the summary, and the refused calls, change nothing');

SELECT * FROM finish();
ROLLBACK;
