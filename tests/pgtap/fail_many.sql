-- jobq_fail_many(job_ids, worker_id, errors, retries, backoffs, attempts)
--     RETURNS TABLE(ord, job_id, status)
--
-- jobq_fail for many jobs in one statement: the same fencing and the same outcome per job
-- (checked by failing twin jobs, one set with jobq_fail one call at a time, the other with
-- one jobq_fail_many, and comparing the rows), one result row per element in input order,
-- a repeated id counted once, and every bad argument refused with 22023 naming it.
BEGIN;
SELECT plan(30);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

------------------------------------------------------------------------------------------
-- Bad input: 22023, naming the argument (and the element), nothing changed
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('f') AS bad \gset
SELECT id AS claimed_bad FROM jobq_dequeue('w1') \gset
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT throws_ok(format($$SELECT * FROM jobq_fail_many(ARRAY[%L]::uuid[], 'w1', NULL)$$, :'bad'),
    '22023', 'jobq_fail_many: errors must not be NULL', 'errors NULL: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_fail_many(ARRAY[%L]::uuid[], 'w1', '{a,b}')$$, :'bad'),
    '22023', 'jobq_fail_many: errors has 2 elements, job_ids has 1', 'errors of another length: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_fail_many(ARRAY[%L]::uuid[], 'w1', '{e}',
                                                       retries => '{t,f}')$$, :'bad'),
    '22023', 'jobq_fail_many: retries has 2 elements, job_ids has 1', 'retries of another length: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_fail_many(ARRAY[%L, %L]::uuid[], 'w1', '{e,e}',
                                                       retries => '{t,NULL}')$$, :'bad', :'bad'),
    '22023', 'jobq_fail_many: retries[2] must be true or false, not NULL', 'a NULL retry: 22023, naming it');
SELECT throws_ok(format($$SELECT * FROM jobq_fail_many(ARRAY[%L]::uuid[], 'w1', '{e}',
                                                       backoffs => '{1s,2s}')$$, :'bad'),
    '22023', 'jobq_fail_many: backoffs has 2 elements, job_ids has 1', 'backoffs of another length: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_fail_many(ARRAY[%L, %L]::uuid[], 'w1', '{e,e}',
                                                       backoffs => '{0,-1 second}')$$, :'bad', :'bad'),
    '22023', 'jobq_fail_many: backoffs[2] must be an interval >= 0, got -00:00:01',
    'a negative backoff: 22023, naming it');
SELECT throws_ok(format($$SELECT * FROM jobq_fail_many(ARRAY[%L]::uuid[], 'w1', '{e}',
                                                       backoffs => '{NULL}')$$, :'bad'),
    '22023', 'jobq_fail_many: backoffs[1] must be an interval >= 0, got NULL', 'a NULL backoff: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_fail_many(ARRAY[%L]::uuid[], 'w1', '{e}',
                                                       attempts => '{1,2}')$$, :'bad'),
    '22023', 'jobq_fail_many: attempts has 2 elements, job_ids has 1', 'attempts of another length: 22023');
SELECT results_eq('SELECT * FROM jobq_all_jobs', 'SELECT * FROM snap', 'bad calls changed nothing');

SELECT is_empty($$SELECT * FROM jobq_fail_many('{}', 'w1', '{}')$$, 'no jobs: no rows');
SELECT is_empty($$SELECT * FROM jobq_fail_many(NULL, 'w1', '{}')$$, 'job_ids NULL: no rows');

------------------------------------------------------------------------------------------
-- The same outcome as jobq_fail, job by job: twin jobs a<n> and b<n> for each case
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
CREATE TEMP TABLE cases (n integer, max_attempts integer, claimer text, error text, retry boolean,
                         backoff interval, attempt integer);
INSERT INTO cases VALUES
    (1, 3, 'w1', 'boom', TRUE, '10 seconds', NULL),   -- attempts left: pending after 1 × 10 s
    (2, 1, 'w1', 'last', TRUE, '10 seconds', NULL),   -- the last attempt: dead_letter
    (3, 3, 'w1', 'stop', FALSE, '10 seconds', NULL),  -- retry false: failed
    (4, 3, 'w1', NULL, TRUE, '0', 1),                 -- NULL error, no backoff, its attempt
    (5, 3, 'w1', 'x', TRUE, '1 minute', 2),           -- another attempt: not held
    (6, 3, 'w2', 'x', TRUE, '1 minute', NULL),        -- another worker's claim: not held
    (7, 3, NULL, 'x', TRUE, '1 minute', NULL);        -- never claimed (pending): not held
SELECT count(*) AS enqueued FROM cases AS c, LATERAL (VALUES ('a'), ('b')) AS t (twin),
    LATERAL jobq_enqueue(t.twin || c.n, max_attempts => c.max_attempts) \gset
SELECT count(*) AS claimed FROM cases AS c,
    LATERAL jobq_dequeue(c.claimer, job_types => ARRAY['a' || c.n, 'b' || c.n], batch_size => 2)
WHERE c.claimer IS NOT NULL \gset

CREATE TEMP TABLE one_by_one AS
SELECT c.n, jobq_fail(j.id, 'w1', c.error, c.retry, c.backoff, c.attempt) AS status
FROM cases AS c JOIN jobq_jobs AS j ON j.job_type = 'a' || c.n
ORDER BY c.n;

CREATE TEMP TABLE in_one AS
SELECT f.ord, f.job_id, f.status
FROM jobq_fail_many(
    (SELECT array_agg(j.id ORDER BY c.n) FROM cases AS c JOIN jobq_jobs AS j ON j.job_type = 'b' || c.n),
    'w1',
    (SELECT array_agg(c.error ORDER BY c.n) FROM cases AS c),
    (SELECT array_agg(c.retry ORDER BY c.n) FROM cases AS c),
    (SELECT array_agg(c.backoff ORDER BY c.n) FROM cases AS c),
    (SELECT array_agg(c.attempt ORDER BY c.n) FROM cases AS c)
) AS f;

SELECT results_eq(
    'SELECT ord, status FROM in_one ORDER BY ord',
    $$VALUES (1::integer, 'pending'::text), (2, 'dead_letter'), (3, 'failed'), (4, 'pending'),
             (5, NULL), (6, NULL), (7, NULL)$$,
    'one row per job, in input order: the new status, NULL where the claim is not held'
);
SELECT results_eq('SELECT ord::integer, status FROM in_one ORDER BY ord',
                  'SELECT n, status FROM one_by_one ORDER BY n',
                  'the statuses jobq_fail returns, job by job');
SELECT results_eq(
    $$SELECT i.job_id FROM in_one AS i ORDER BY i.ord$$,
    $$SELECT j.id FROM cases AS c JOIN jobq_all_jobs AS j ON j.job_type = 'b' || c.n ORDER BY c.n$$,
    'each row names its job'
);
SELECT results_eq(
    $$SELECT substr(job_type, 2), status, attempts, max_attempts, available_at, scheduled,
             locked_at, locked_by, finished_at, last_error, errors, updated_at
      FROM jobq_all_jobs WHERE job_type LIKE 'b%' ORDER BY 1$$,
    $$SELECT substr(job_type, 2), status, attempts, max_attempts, available_at, scheduled,
             locked_at, locked_by, finished_at, last_error, errors, updated_at
      FROM jobq_all_jobs WHERE job_type LIKE 'a%' ORDER BY 1$$,
    'every row is what jobq_fail made of its twin: status, available_at, scheduled, claim, '
    'last_error, errors'
);
SELECT results_eq(
    $$SELECT status, available_at, last_error, errors FROM jobq_all_jobs WHERE job_type IN ('b1', 'b4') ORDER BY job_type$$,
    $$VALUES ('pending'::text, now() + interval '10 seconds', 'boom'::text,
              jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now(), 'worker', 'w1', 'error', 'boom'))),
             ('pending', now(), '', jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now(), 'worker', 'w1', 'error', '')))$$,
    'pending after attempts × backoff; a NULL error is recorded as an empty string'
);
SELECT is((SELECT locked_by FROM jobq_all_jobs WHERE job_type = 'b6'), 'w2', 'another worker''s claim is untouched');

------------------------------------------------------------------------------------------
-- Defaults: retries NULL = all true, backoffs NULL = all 10 seconds, attempts NULL = any
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('d') AS d1, jobq_enqueue('d') AS d2 \gset
SELECT count(*) AS claimed FROM jobq_dequeue('w1', batch_size => 2) \gset
SELECT results_eq(
    format($$SELECT ord, status FROM jobq_fail_many(ARRAY[%L, %L]::uuid[], 'w1', '{e1,e2}')$$, :'d1', :'d2'),
    $$VALUES (1::integer, 'pending'::text), (2, 'pending')$$,
    'without retries, backoffs and attempts: both retried'
);
SELECT is((SELECT count(*)::integer FROM jobq_all_jobs WHERE available_at = now() + interval '10 seconds'), 2,
          '... after 1 × the default backoff of 10 seconds');

------------------------------------------------------------------------------------------
-- A repeated id counts once, for its first element; unknown and NULL ids get NULL
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('r') AS r \gset
SELECT id AS claimed_r FROM jobq_dequeue('w1') \gset
SELECT results_eq(
    format($$SELECT ord, job_id, status
             FROM jobq_fail_many(ARRAY[%L, gen_random_uuid(), %L, NULL]::uuid[], 'w1',
                                 '{first,unknown,second,null}',
                                 retries => '{f,t,t,t}')
             WHERE ord <> 2$$, :'r', :'r'),
    format($$VALUES (1::integer, %L::uuid, 'failed'::text), (3, %L::uuid, NULL), (4, NULL, NULL)$$, :'r', :'r'),
    'a repeated id: its first element applies (failed), the second finds no claim; NULL ids: NULL'
);
SELECT results_eq(
    format($$SELECT status, last_error, jsonb_array_length(errors) FROM jobq_all_jobs WHERE id = %L$$, :'r'),
    $$VALUES ('failed'::text, 'first'::text, 1)$$,
    '... one failure recorded, the first one'
);

------------------------------------------------------------------------------------------
-- Fencing after a takeover, by worker and by attempt
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('h') AS h \gset
SELECT id AS claimed_h FROM jobq_dequeue('w1') \gset
-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 360), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 360) WHERE id = :'h';
SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL));  -- finished rows live in the history
SELECT is((SELECT locked_by FROM jobq_dequeue('w2')), 'w2', 'w2 takes over the stale claim of w1');
DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;
SELECT is((SELECT status FROM jobq_fail_many(ARRAY[:'h']::uuid[], 'w1', '{late}')), NULL,
          'the old worker cannot fail the job after a takeover');
SELECT is((SELECT status FROM jobq_fail_many(ARRAY[:'h']::uuid[], 'w1', '{late}', attempts => '{1}')), NULL,
          '... not even naming its attempt');
SELECT is((SELECT status FROM jobq_fail_many(ARRAY[:'h']::uuid[], 'w2', '{late}', attempts => '{1}')), NULL,
          'the new worker naming the old attempt cannot either');
SELECT throws_ok(format($$SELECT * FROM jobq_fail_many(ARRAY[%L]::uuid[], NULL, '{late}')$$, :'h'),
    '22023', 'jobq_fail_many: worker_id must be a non-blank string', 'worker_id NULL: 22023');
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  '... and none of these changed anything');
SELECT is((SELECT status FROM jobq_fail_many(ARRAY[:'h']::uuid[], 'w2', '{now}', attempts => '{2}')),
          'pending', 'the holder of attempt 2 can');

-- A job with a cancel request ends cancelled, whatever retry says
DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_enqueue('c') AS c1 \gset
SELECT jobq_enqueue('c') AS c2 \gset
SELECT jobq_enqueue('c') AS c3 \gset
SELECT count(*) AS claimed_c FROM jobq_dequeue('w1', batch_size => 3) \gset
SELECT count(*) AS asked FROM jobq_cancel(ARRAY[:'c1', :'c2']::uuid[]) \gset
-- The cancel requests are applied with SET CONSTRAINTS ALL, not by the constraint's name: on
-- a Citus node the name is the shell table's, and the shard's trigger has its own.
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies the requests now, as COMMIT would
SELECT results_eq(
    format($$SELECT job_id, status FROM jobq_fail_many(ARRAY[%L, %L, %L]::uuid[], 'w1',
                                                       '{a,b,c}', retries => '{true,false,true}')$$,
           :'c1', :'c2', :'c3'),
    format($$VALUES (%L::uuid, 'cancelled'::text), (%L::uuid, 'cancelled'), (%L::uuid, 'pending')$$,
           :'c1', :'c2', :'c3'),
    'with a request: cancelled (retry or not); without: as before'
);
SELECT results_eq(
    format($$SELECT status, finished_at, last_error FROM jobq_all_jobs WHERE id IN (%L, %L) ORDER BY last_error$$,
           :'c1', :'c2'),
    $$VALUES ('cancelled'::text, now(), 'a'::text), ('cancelled', now(), 'b')$$,
    'cancelled, finished, the error recorded'
);

SELECT * FROM finish();
ROLLBACK;
