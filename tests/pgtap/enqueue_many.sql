-- jobq_enqueue_many(jobs jsonb) RETURNS TABLE(ord int, id uuid)
--
-- A JSON array of objects with jobq_enqueue's keys; one row per
-- element, ids in input order (ord from 1); jobq_enqueue's semantics per element (defaults,
-- dedupe of existing keys, the same id for repeated keys within the array); 22023 for a
-- malformed array, naming the element and the key; nothing inserted when any element is bad;
-- built for 10,000+ jobs per call.
--
-- A JSON null payload is refused with 22023 (a malformed element), not 22004 as jobq_enqueue
-- does for an SQL NULL: the element is bad JSON input, and its message names element and key.
--
-- Not covered here: NOTIFY (delivered at commit; see the Python suite).
BEGIN;
SELECT plan(55);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

------------------------------------------------------------------------------------------
-- Happy paths
------------------------------------------------------------------------------------------

CREATE TEMP TABLE res AS
SELECT * FROM jobq_enqueue_many(jobs => $j$[
    {"job_type": "a"},
    {"job_type": "b", "payload": {"n": 2}, "idempotency_key": "b:2", "max_attempts": 3,
     "run_at": "2031-01-02T03:04:05+02:00", "priority": 9, "queue": "q"},
    {"job_type": "c", "payload": {"n": [3]}, "run_at": null, "idempotency_key": null}
]$j$);

SELECT results_eq(
    'SELECT ord FROM res ORDER BY ord', ARRAY[1, 2, 3],
    'one row per element, ord counting from 1'
);
SELECT is((SELECT count(DISTINCT id)::int FROM res), 3, 'three distinct ids');
SELECT results_eq(
    $$SELECT r.ord, j.job_type, j.queue, j.payload, j.idempotency_key, j.max_attempts,
             j.available_at, j.priority, j.status, j.attempts
      FROM res AS r JOIN jobq_jobs AS j USING (id) ORDER BY r.ord$$,
    $$VALUES
        (1, 'a'::text, 'default'::text, '{}'::jsonb, NULL::text, 5, now(), 0, 'pending'::text, 0),
        (2, 'b', 'q', '{"n": 2}', 'b:2', 3, '2031-01-02 01:04:05+00'::timestamptz, 9, 'pending', 0),
        (3, 'c', 'default', '{"n": [3]}', NULL, 5, now(), 0, 'pending', 0)$$,
    'each id is the job of its element; missing keys take jobq_enqueue''s defaults'
);

SELECT is_empty($$SELECT * FROM jobq_enqueue_many('[]')$$, 'an empty array enqueues nothing');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs), 3, 'still three jobs');

-- dedupe: an existing key, and one key repeated within the array; keys are per job type
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;
CREATE TEMP TABLE res2 AS
SELECT * FROM jobq_enqueue_many($j$[
    {"job_type": "x", "idempotency_key": "new:1", "payload": {"first": true}},
    {"job_type": "b", "idempotency_key": "b:2", "payload": {"ignored": true}},
    {"job_type": "z"},
    {"job_type": "x", "idempotency_key": "new:1", "payload": {"first": false}},
    {"job_type": "b", "idempotency_key": "b:2"},
    {"job_type": "y", "idempotency_key": "b:2", "payload": {"own": true}},
    {"job_type": "y", "idempotency_key": "b:2"},
    {"job_type": "w", "idempotency_key": "new:1"}
]$j$);

SELECT results_eq(
    'SELECT ord FROM res2 ORDER BY ord', ARRAY[1, 2, 3, 4, 5, 6, 7, 8],
    'one row per element, duplicates included'
);
SELECT is((SELECT id FROM res2 WHERE ord = 2), (SELECT id FROM res WHERE ord = 2),
          'a key that exists under the same job type returns the existing id');
SELECT is((SELECT id FROM res2 WHERE ord = 5), (SELECT id FROM res WHERE ord = 2),
          'an existing key repeated in the array returns the existing id again');
SELECT is((SELECT id FROM res2 WHERE ord = 4), (SELECT id FROM res2 WHERE ord = 1),
          'two elements with one new key get the same id');
SELECT ok((SELECT id FROM res2 WHERE ord = 6) NOT IN (SELECT id FROM res)
          AND (SELECT id FROM res2 WHERE ord = 7) = (SELECT id FROM res2 WHERE ord = 6),
          'an existing key under another job type is another job (once, however often repeated)');
SELECT isnt((SELECT id FROM res2 WHERE ord = 8), (SELECT id FROM res2 WHERE ord = 1),
            'a new key under two job types in one array makes two jobs');
SELECT is((SELECT payload FROM jobq_all_jobs WHERE idempotency_key = 'new:1' AND job_type = 'x'),
          '{"first": true}', 'of elements sharing a key, the first is inserted');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs), 7,
          'four rows added: x new:1, the keyless z, y b:2 and w new:1');
SELECT results_eq(
    'SELECT * FROM jobq_all_jobs WHERE id IN (SELECT id FROM snap) ORDER BY id',
    'SELECT * FROM snap ORDER BY id',
    'the existing jobs are unchanged'
);

-- the existing key dedupes in any status
UPDATE jobq_jobs SET status = 'dead_letter', finished_at = now()
WHERE idempotency_key = 'b:2' AND job_type = 'b';
SELECT is((SELECT id FROM jobq_enqueue_many('[{"job_type": "b", "idempotency_key": "b:2"}]')),
          (SELECT id FROM res WHERE ord = 2), 'an existing key in dead_letter returns its id');
SELECT is((SELECT status FROM jobq_all_jobs WHERE idempotency_key = 'b:2' AND job_type = 'b'),
          'dead_letter', '... and does not revive it');

-- bounds are the same as jobq_enqueue's
SELECT lives_ok(
    format($$SELECT * FROM jobq_enqueue_many(%L)$$, jsonb_build_array(jsonb_build_object(
        'job_type', repeat('t', 200), 'queue', repeat('q', 200),
        'idempotency_key', repeat('k', 1000), 'max_attempts', 1000, 'priority', -1000000))),
    'upper and lower bounds are accepted'
);

------------------------------------------------------------------------------------------
-- Bad input: 22023 naming the element and the key; 54000; nothing inserted
------------------------------------------------------------------------------------------

DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT throws_ok($$SELECT * FROM jobq_enqueue_many(NULL)$$, '22023',
    'jobq_enqueue_many: jobs must be a JSON array of job objects, got NULL', 'jobs NULL: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('{"job_type": "a"}')$$, '22023',
    'jobq_enqueue_many: jobs must be a JSON array of job objects, got object',
    'jobs an object, not an array: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('"a"')$$, '22023',
    'jobq_enqueue_many: jobs must be a JSON array of job objects, got string',
    'jobs a string: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('null')$$, '22023',
    'jobq_enqueue_many: jobs must be a JSON array of job objects, got null',
    'jobs a JSON null: 22023');

SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a"}, 1]')$$, '22023',
    'jobq_enqueue_many: jobs element 2 (counting from 1) is a JSON number, not an object',
    'an element that is not an object: 22023, naming the element');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a"}, null]')$$, '22023',
    'jobq_enqueue_many: jobs element 2 (counting from 1) is a JSON null, not an object',
    'a null element: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[[{"job_type": "a"}]]')$$, '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) is a JSON array, not an object',
    'a nested array: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "run_At": "x", "foo": 1}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) has unknown key(s) foo, "run_At"; '
    || 'allowed: job_type, payload, idempotency_key, max_attempts, run_at, priority, queue, limit_group, limit_key, '
       || 'depends_on, after, on_dependency_failure',
    'unknown keys: 22023, naming them (keys are case-sensitive)');

SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"payload": {}}]')$$, '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) job_type must be a non-blank string',
    'job_type missing: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": 7}]')$$, '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) job_type must be a non-blank string',
    'job_type not a string: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "  "}]')$$, '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) job_type must be a non-blank string',
    'job_type blank: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_enqueue_many(%L)$$,
                        jsonb_build_array(jsonb_build_object('job_type', repeat('t', 201)))),
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) job_type is 201 characters long, at most 200 are allowed',
    'job_type longer than 200 characters: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "payload": null}]')$$, '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) payload must be a JSON object, got a JSON null',
    'payload JSON null: 22023, naming payload');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "idempotency_key": 1}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) idempotency_key must be a string or null',
    'idempotency_key not a string: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "idempotency_key": ""}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) idempotency_key must be NULL or a non-blank string',
    'idempotency_key empty: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "queue": null}]')$$, '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) queue must be a non-blank string',
    'queue null: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "queue": ""}]')$$, '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) queue must be a non-blank string',
    'queue blank: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "max_attempts": "5"}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) max_attempts must be an integer',
    'max_attempts a string: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "max_attempts": 1.5}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) max_attempts must be an integer',
    'max_attempts not whole: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a"}, {"job_type": "a", "max_attempts": 0}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 2 (counting from 1) max_attempts must be between 1 and 1000, got 0',
    'max_attempts 0: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "max_attempts": 1001}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) max_attempts must be between 1 and 1000, got 1001',
    'max_attempts 1001: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "priority": 99999999999}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) priority must be an integer',
    'priority beyond integer range: 22023 (no integer overflow)');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "priority": -1000001}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) priority must be between -1000000 and 1000000, got -1000001',
    'priority out of range: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "run_at": 1700000000}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) run_at must be an ISO 8601 time with a UTC offset (2030-01-31T08:00:00+01:00), or null; got 1700000000',
    'run_at a number: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a"}, {"job_type": "a", "run_at": "soon"}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 2 (counting from 1) run_at must be an ISO 8601 time with a UTC offset (2030-01-31T08:00:00+01:00), or null; got "soon"',
    'run_at not a time: 22023, naming the element');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "run_at": "2030-02-30T00:00:00Z"}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1): run_at ''2030-02-30T00:00:00Z'' is not a real time',
    'run_at out of range (30 February): 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "run_at": "infinity"}]')$$,
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) run_at must be an ISO 8601 time with a UTC offset (2030-01-31T08:00:00+01:00), or null; got "infinity"',
    'run_at infinity: 22023');

SELECT throws_ok(
    format($$SELECT * FROM jobq_enqueue_many(%L)$$, jsonb_build_array(
        jsonb_build_object('job_type', 'a'),
        jsonb_build_object('job_type', 'a', 'payload', jsonb_build_object('blob', repeat('x', 1100000))))),
    '54000',
    format('jobq_enqueue_many: jobs element 2 (counting from 1): payload is %s bytes, the limit is 1048576 bytes',
           octet_length(jsonb_build_object('blob', repeat('x', 1100000))::text)),
    'a payload over the limit: 54000, naming the element'
);

SELECT results_eq(
    'SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
    'no bad call inserted or changed anything (good elements before a bad one included)'
);

-- run_at is parsed inside the function, with the caller's TimeZone and DateStyle: a string
-- without an offset, or not in ISO 8601, would mean different instants in different sessions.
-- (In a savepoint, so that a failure here does not spill into the checks that follow.)
SAVEPOINT naive_run_at;
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "run_at": "2030-01-01T00:00:00"}]')$$,
    '22023', NULL,
    'run_at without a time zone offset: 22023 (else its instant depends on the session TimeZone)');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "a", "run_at": "01/02/2030 00:00+00"}]')$$,
    '22023', NULL,
    'run_at not in ISO 8601 (01/02/2030): 22023 (else its date depends on the session DateStyle)');
ROLLBACK TO SAVEPOINT naive_run_at;

------------------------------------------------------------------------------------------
-- Time zones: run_at strings with an offset mean the same instant in any session
------------------------------------------------------------------------------------------

SET LOCAL timezone = 'America/St_Johns';   -- UTC-03:30 / -02:30
SET LOCAL datestyle = 'German, DMY';
CREATE TEMP TABLE tz AS
SELECT * FROM jobq_enqueue_many('[{"job_type": "tz", "run_at": "2031-07-01T12:00:00Z"},
                                  {"job_type": "tz", "run_at": "2031-07-01T14:00:00+02:00"}]');
RESET timezone;
RESET datestyle;
SELECT results_eq(
    'SELECT j.available_at FROM tz JOIN jobq_jobs AS j USING (id) ORDER BY tz.ord',
    $$VALUES ('2031-07-01 12:00:00+00'::timestamptz), ('2031-07-01 12:00:00+00'::timestamptz)$$,
    'run_at with an offset is the same instant whatever the session TimeZone and DateStyle'
);

------------------------------------------------------------------------------------------
-- 10,000 jobs in one call
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

CREATE TEMP TABLE plain AS
SELECT * FROM jobq_enqueue_many((
    SELECT jsonb_agg(jsonb_build_object('job_type', 'bulk', 'payload', jsonb_build_object('n', g))
                     ORDER BY g)
    FROM generate_series(1, 10000) AS g));

SELECT is((SELECT count(*)::int FROM plain), 10000, '10,000 elements: 10,000 rows returned');
SELECT is(
    (SELECT count(*)::int FROM plain AS p JOIN jobq_jobs AS j USING (id)
     WHERE (j.payload ->> 'n')::int = p.ord),
    10000,
    '10,000 elements: every ord is paired with the id of its own element'
);

CREATE TEMP TABLE keyed AS
SELECT * FROM jobq_enqueue_many((
    SELECT jsonb_agg(jsonb_build_object('job_type', 'bulk', 'idempotency_key', 'bulk:' || g)
                     ORDER BY g)
    FROM generate_series(1, 10000) AS g));

SELECT is((SELECT count(*)::int FROM jobq_all_jobs), 20000, '10,000 keyed elements: 10,000 more jobs');
SELECT is(
    (SELECT count(*)::int FROM keyed AS k JOIN jobq_jobs AS j USING (id)
     WHERE j.idempotency_key = 'bulk:' || k.ord),
    10000,
    '10,000 keyed elements: ids in input order'
);
SELECT bag_eq(
    $$SELECT ord, id FROM jobq_enqueue_many((
          SELECT jsonb_agg(jsonb_build_object('job_type', 'bulk', 'idempotency_key', 'bulk:' || g)
                           ORDER BY g)
          FROM generate_series(1, 10000) AS g))$$,
    'SELECT ord, id FROM keyed',
    'the same 10,000 keys again: the same ids, in input order'
);
SELECT is((SELECT count(*)::int FROM jobq_all_jobs), 20000, '... and nothing added');

SELECT * FROM finish();
ROLLBACK;
