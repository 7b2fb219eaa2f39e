-- jobq_enqueue(job_type, payload, idempotency_key, max_attempts, run_at, priority, queue)
--
-- A pending job available at run_at (NULL = now); dedupe by
-- (job_type, idempotency_key) in any status (nothing added or changed, the existing id returned); every
-- bad argument raises 22023 / 22004 / 54000 with a message that names it, and changes nothing.
--
-- Not covered here: NOTIFY jobq. Notifications are queued only at commit and this file always
-- rolls back, so the wake-up is tested by the Python suite. Concurrent enqueues of one key are
-- likewise a Python (threads + barrier) test.
BEGIN;
SELECT plan(53);

DELETE FROM jobq_jobs;  -- a known start; the ROLLBACK at the end restores everything

------------------------------------------------------------------------------------------
-- Happy paths
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('ocr') AS minimal \gset

SELECT results_eq(
    format($$SELECT queue, job_type, payload, idempotency_key, status, priority, attempts,
                    max_attempts, available_at, locked_at, locked_by, last_error, errors,
                    created_at, updated_at, finished_at
             FROM jobq_all_jobs WHERE id = %L$$, :'minimal'),
    $$VALUES ('default'::text, 'ocr'::text, '{}'::jsonb, NULL::text, 'pending'::text, 0, 0, 5,
              now(), NULL::timestamptz, NULL::text, NULL::text, '[]'::jsonb,
              now(), now(), NULL::timestamptz)$$,
    'enqueue(job_type) makes a pending job with the documented defaults, available now'
);

SELECT jobq_enqueue(
    job_type => 'mail',
    payload => '{"to": "a@example.org", "n": [1, 2]}',
    idempotency_key => 'mail:1',
    max_attempts => 3,
    run_at => now() + interval '1 hour',
    priority => 7,
    queue => 'outbound'
) AS named \gset

SELECT results_eq(
    format($$SELECT queue, job_type, payload, idempotency_key, status, priority, attempts,
                    max_attempts, available_at
             FROM jobq_all_jobs WHERE id = %L$$, :'named'),
    $$VALUES ('outbound'::text, 'mail'::text, '{"to": "a@example.org", "n": [1, 2]}'::jsonb,
              'mail:1'::text, 'pending'::text, 7, 0, 3, now() + interval '1 hour')$$,
    'a call with every argument named stores every argument'
);

SELECT jobq_enqueue('pos', '{"p": 1}', 'pos:1', 2, now() - interval '1 day', -3, 'q2') AS positional \gset

SELECT results_eq(
    format($$SELECT queue, job_type, payload, idempotency_key, priority, max_attempts,
                    available_at
             FROM jobq_all_jobs WHERE id = %L$$, :'positional'),
    $$VALUES ('q2'::text, 'pos'::text, '{"p": 1}'::jsonb, 'pos:1'::text, -3, 2,
              now() - interval '1 day')$$,
    'a positional call works the same; a run_at in the past is kept as given'
);

SELECT ok(
    jobq_enqueue('x', run_at => NULL) IS NOT NULL,
    'run_at => NULL means now'
);
SELECT is(
    (SELECT available_at FROM jobq_all_jobs WHERE job_type = 'x'), now(),
    'run_at => NULL: available_at = now()'
);

SELECT lives_ok(
    $$SELECT jobq_enqueue(job_type => repeat('t', 200), queue => repeat('q', 200),
                          idempotency_key => repeat('k', 1000), max_attempts => 1000,
                          priority => 1000000)$$,
    'upper bounds are accepted: job_type/queue 200 chars, key 1000 chars, max_attempts 1000, priority 1000000'
);
SELECT lives_ok(
    $$SELECT jobq_enqueue(job_type => 'lower', max_attempts => 1, priority => -1000000)$$,
    'lower bounds are accepted: max_attempts 1, priority -1000000'
);
SELECT throws_ok(
    $$SELECT jobq_enqueue('scalar', payload => '"just a string"')$$, '22023',
    'jobq_enqueue: payload must be a JSON object, got a JSON string',
    'a payload is a JSON object: a string is 22023 (bounds.sql: arrays, numbers, null)'
);

SELECT isnt(
    jobq_enqueue('nokey'), jobq_enqueue('nokey'),
    'NULL idempotency keys never collide: two calls make two jobs'
);
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE job_type = 'nokey'), 2,
          'two rows for two keyless enqueues');

SAVEPOINT before_rollback;
SELECT jobq_enqueue('rolled_back') AS rolled_back \gset
ROLLBACK TO SAVEPOINT before_rollback;
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE job_type = 'rolled_back'), 0,
          'enqueue runs in the caller''s transaction: a rollback removes the job');

------------------------------------------------------------------------------------------
-- Dedupe by idempotency_key: same id, nothing added or changed, in any status
------------------------------------------------------------------------------------------

CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT is(
    jobq_enqueue(job_type => 'mail', payload => '{"different": true}', idempotency_key => 'mail:1',
                 max_attempts => 9, run_at => now(), priority => -5, queue => 'elsewhere'),
    :'named'::uuid,
    'an existing key of the same job type returns the existing id, whatever the other arguments'
);
SELECT results_eq(
    'SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
    'a duplicate enqueue adds and changes nothing'
);

-- Keys are per job type: the same key under another type is another job, whose id is all its
-- producer gets, so it can neither read nor cancel the first.
SELECT jobq_enqueue(job_type => 'other', payload => '{"different": true}',
                    idempotency_key => 'mail:1', queue => 'elsewhere') AS other \gset
SELECT isnt(:'other'::uuid, :'named'::uuid,
            'the same key under another job type makes another job');
SELECT results_eq(
    format($$SELECT job_type, payload, queue, status FROM jobq_all_jobs
             WHERE idempotency_key = 'mail:1' ORDER BY id = %L$$, :'other'),
    $$VALUES ('mail'::text, '{"to": "a@example.org", "n": [1, 2]}'::jsonb, 'outbound'::text,
              'pending'::text),
             ('other', '{"different": true}', 'elsewhere', 'pending')$$,
    'each job type has its own job under the key, the first one unchanged'
);
SELECT is(jobq_enqueue('other', idempotency_key => 'mail:1'), :'other'::uuid,
          'the other job type dedupes on its own job');
SELECT results_eq(
    format('SELECT job_id, status FROM jobq_cancel(ARRAY[%L]::uuid[])',
           jobq_enqueue('other', idempotency_key => 'mail:1')),
    format($$VALUES (%L::uuid, 'cancelled'::text)$$, :'other'),
    'a cancel through the id the other type''s enqueue returned cancels that job alone'
);
SELECT is((SELECT status FROM jobq_all_jobs WHERE id = :'named'), 'pending',
          'the first job type''s job is still pending');
DELETE FROM jobq_jobs WHERE id = :'other';
SELECT isnt(jobq_enqueue('mail', idempotency_key => 'MAIL:1'), :'named'::uuid,
            'keys are compared exactly (case-sensitive)');

-- the key still dedupes once the job is processing, succeeded, failed or dead_letter
SELECT jobq_enqueue('life', idempotency_key => 'life:1', max_attempts => 1) AS life \gset
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w1', job_types => '{life}')), 1, 'life:1 claimed');
SELECT is(jobq_enqueue('life', idempotency_key => 'life:1'), :'life'::uuid,
          'dedupe while processing');
SELECT is(jobq_complete(:'life', 'w1'), true, 'life:1 completed');
SELECT is(jobq_enqueue('life', idempotency_key => 'life:1'), :'life'::uuid,
          'dedupe once succeeded');
UPDATE jobq_jobs_history SET status = 'failed' WHERE id = :'life';
SELECT is(jobq_enqueue('life', idempotency_key => 'life:1'), :'life'::uuid,
          'dedupe once failed');
UPDATE jobq_jobs_history SET status = 'dead_letter' WHERE id = :'life';
SELECT is(jobq_enqueue('life', idempotency_key => 'life:1'), :'life'::uuid,
          'dedupe once dead_letter');
SELECT is(
    (SELECT status FROM jobq_all_jobs WHERE id = :'life'), 'dead_letter',
    'a duplicate enqueue does not revive a finished job'
);

------------------------------------------------------------------------------------------
-- Bad input: SQLSTATE, a message naming the argument, and nothing changed
------------------------------------------------------------------------------------------

DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT throws_ok($$SELECT jobq_enqueue(NULL)$$, '22023',
    'jobq_enqueue: job_type must be a non-blank string', 'job_type NULL: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('')$$, '22023',
    'jobq_enqueue: job_type must be a non-blank string', 'job_type empty: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('   ')$$, '22023',
    'jobq_enqueue: job_type must be a non-blank string', 'job_type blank: 22023');
SELECT throws_ok($$SELECT jobq_enqueue(repeat('t', 201))$$, '22023',
    'jobq_enqueue: job_type is 201 characters long, at most 200 are allowed',
    'job_type longer than 200 characters: 22023');

SELECT throws_ok($$SELECT jobq_enqueue('t', queue => NULL)$$, '22023',
    'jobq_enqueue: queue must be a non-blank string', 'queue NULL: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', queue => ' ')$$, '22023',
    'jobq_enqueue: queue must be a non-blank string', 'queue blank: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', queue => repeat('q', 201))$$, '22023',
    'jobq_enqueue: queue is 201 characters long, at most 200 are allowed',
    'queue longer than 200 characters: 22023');

SELECT throws_ok($$SELECT jobq_enqueue('t', idempotency_key => '')$$, '22023',
    'jobq_enqueue: idempotency_key must be NULL or a non-blank string',
    'idempotency_key empty: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', idempotency_key => repeat('k', 1001))$$, '22023',
    'jobq_enqueue: idempotency_key is 1001 characters long, at most 1000 are allowed',
    'idempotency_key longer than 1000 characters: 22023');

SELECT throws_ok($$SELECT jobq_enqueue('t', max_attempts => 0)$$, '22023',
    'jobq_enqueue: max_attempts must be between 1 and 1000, got 0', 'max_attempts 0: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', max_attempts => -1)$$, '22023',
    'jobq_enqueue: max_attempts must be between 1 and 1000, got -1', 'max_attempts -1: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', max_attempts => NULL)$$, '22023',
    'jobq_enqueue: max_attempts must be between 1 and 1000, got NULL', 'max_attempts NULL: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', max_attempts => 1001)$$, '22023',
    'jobq_enqueue: max_attempts must be between 1 and 1000, got 1001', 'max_attempts 1001: 22023');

SELECT throws_ok($$SELECT jobq_enqueue('t', priority => NULL)$$, '22023',
    'jobq_enqueue: priority must be between -1000000 and 1000000, got NULL', 'priority NULL: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', priority => 1000001)$$, '22023',
    'jobq_enqueue: priority must be between -1000000 and 1000000, got 1000001',
    'priority above 1000000: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', priority => -1000001)$$, '22023',
    'jobq_enqueue: priority must be between -1000000 and 1000000, got -1000001',
    'priority below -1000000: 22023');

SELECT throws_ok($$SELECT jobq_enqueue('t', run_at => 'infinity')$$, '22023',
    'jobq_enqueue: run_at must be a finite time, got infinity', 'run_at infinity: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('t', run_at => '-infinity')$$, '22023',
    'jobq_enqueue: run_at must be a finite time, got -infinity', 'run_at -infinity: 22023');

SELECT throws_ok($$SELECT jobq_enqueue('t', payload => NULL)$$, '22004',
    'jobq_enqueue: payload must not be NULL', 'payload NULL: 22004');

SELECT throws_ok(
    $$SELECT jobq_enqueue('t', payload => jsonb_build_object('blob', repeat('x', 1100000)))$$,
    '54000',
    format('jobq_enqueue: payload is %s bytes, the limit is 1048576 bytes',
           octet_length(jsonb_build_object('blob', repeat('x', 1100000))::text)),
    'payload over the default 1 MiB limit: 54000, with its size and the limit'
);
-- the limit applies to a duplicate too: a bad call is bad whatever its key
SELECT throws_ok($$SELECT jobq_enqueue('t', idempotency_key => 'mail:1', priority => 1000001)$$,
    '22023', NULL, 'validation happens before dedupe');

SELECT results_eq(
    'SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
    'none of the bad calls added or changed a row'
);

------------------------------------------------------------------------------------------
-- Time zones: the caller's TimeZone and DateStyle do not change what is stored
------------------------------------------------------------------------------------------

SET LOCAL timezone = 'Pacific/Chatham';     -- UTC+12:45 / +13:45
SET LOCAL datestyle = 'SQL, DMY';
SELECT jobq_enqueue('tz', run_at => '2031-03-04 05:06:07+00') AS tz_job \gset
SELECT jobq_enqueue('tz_now') AS tz_now \gset
RESET timezone;
RESET datestyle;
SELECT is((SELECT available_at FROM jobq_all_jobs WHERE id = :'tz_job'),
          '2031-03-04 05:06:07+00'::timestamptz,
          'run_at given with an offset is stored as that instant under any session time zone');
SELECT is((SELECT available_at FROM jobq_all_jobs WHERE id = :'tz_now'), now(),
          'run_at NULL is now() under any session time zone');

------------------------------------------------------------------------------------------
-- From a trigger: an application table whose inserts enqueue a job in the same transaction
------------------------------------------------------------------------------------------

CREATE TABLE pg_temp.orders (id integer PRIMARY KEY, email text NOT NULL);
CREATE FUNCTION pg_temp.enqueue_receipt() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM jobq_enqueue(
        job_type => 'send_receipt',
        payload => jsonb_build_object('order', NEW.id, 'to', NEW.email),
        idempotency_key => 'receipt:' || NEW.id
    );
    RETURN NEW;
END;
$fn$;
CREATE TRIGGER orders_receipt AFTER INSERT ON pg_temp.orders
FOR EACH ROW EXECUTE FUNCTION pg_temp.enqueue_receipt();

INSERT INTO pg_temp.orders VALUES (1, 'a@example.com'), (2, 'b@example.com');
SELECT bag_eq(
    $$SELECT idempotency_key, payload FROM jobq_all_jobs WHERE job_type = 'send_receipt'$$,
    $$VALUES ('receipt:1', '{"order": 1, "to": "a@example.com"}'::jsonb),
             ('receipt:2', '{"order": 2, "to": "b@example.com"}'::jsonb)$$,
    'a trigger enqueues one job per inserted row, in the inserting transaction'
);

SAVEPOINT before_order_3;
INSERT INTO pg_temp.orders VALUES (3, 'c@example.com');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE idempotency_key = 'receipt:3'), 1,
          'the trigger''s job is there before the rollback');
ROLLBACK TO SAVEPOINT before_order_3;
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE idempotency_key = 'receipt:3'), 0,
          'rolling back the application''s insert removes the job it enqueued');

SELECT * FROM finish();
ROLLBACK;
