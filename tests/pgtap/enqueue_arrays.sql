-- jobq_enqueue_arrays(job_types text[], payloads jsonb[], idempotency_keys text[],
--                     max_attempts int[], run_ats timestamptz[], priorities int[],
--                     queues text[], limit_groups text[], limit_keys text[])
--                     RETURNS TABLE(ord int, id uuid)
--
-- The jobs of jobq_enqueue_many given one array per column: one row per job, ids in array
-- order (ord from 1); jobq_enqueue's semantics per job (defaults for NULL arrays, dedupe of
-- existing keys, the same id for a key repeated in the batch); 22023 for arrays of the wrong
-- length or shape and for a bad element, naming the element and the argument; 22004 a NULL
-- payload element; 54000 a payload over the limit or more than 100,000 jobs; nothing inserted
-- when any job is bad; the ids of one batch increasing in array order.
--
-- Not covered here: NOTIFY and concurrency (see tests/python/test_enqueue_speed.py).
BEGIN;
SELECT plan(66);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

------------------------------------------------------------------------------------------
-- Happy paths
------------------------------------------------------------------------------------------

CREATE TEMP TABLE res AS
SELECT * FROM jobq_enqueue_arrays(
    job_types => ARRAY['a', 'b', 'c'],
    payloads => ARRAY['{}', '{"n": 2}', '{"n": [3]}']::jsonb[],
    idempotency_keys => ARRAY[NULL, 'b:2', NULL],
    max_attempts => ARRAY[5, 3, 5],
    run_ats => ARRAY[NULL, '2031-01-02T03:04:05+02:00', NULL]::timestamptz[],
    priorities => ARRAY[0, 9, 0],
    queues => ARRAY['default', 'q', 'default']
);

SELECT results_eq('SELECT ord FROM res ORDER BY ord', ARRAY[1, 2, 3],
                  'one row per job, ord counting from 1');
SELECT is((SELECT count(DISTINCT id)::int FROM res), 3, 'three distinct ids');
SELECT results_eq(
    $$SELECT r.ord, j.job_type, j.queue, j.payload, j.idempotency_key, j.max_attempts,
             j.available_at, j.priority, j.status, j.attempts, j.scheduled
      FROM res AS r JOIN jobq_jobs AS j USING (id) ORDER BY r.ord$$,
    $$VALUES
        (1, 'a'::text, 'default'::text, '{}'::jsonb, NULL::text, 5, now(), 0, 'pending'::text, 0, false),
        (2, 'b', 'q', '{"n": 2}', 'b:2', 3, '2031-01-02 01:04:05+00'::timestamptz, 9, 'pending', 0, true),
        (3, 'c', 'default', '{"n": [3]}', NULL, 5, now(), 0, 'pending', 0, false)$$,
    'each id is the job of its elements; a future run_at is marked scheduled'
);
SELECT ok((SELECT pg_catalog.array_agg(id ORDER BY ord) = pg_catalog.array_agg(id ORDER BY id) FROM res),
          'the ids of a batch increase in array order');
SELECT ok((SELECT bool_and(id::text ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$') FROM res),
          'the ids are UUID version 7');

CREATE TEMP TABLE dflt AS SELECT * FROM jobq_enqueue_arrays(ARRAY['d', 'd']);
SELECT results_eq(
    $$SELECT j.queue, j.payload, j.idempotency_key, j.max_attempts, j.available_at, j.priority
      FROM dflt JOIN jobq_jobs AS j USING (id)$$,
    $$VALUES ('default'::text, '{}'::jsonb, NULL::text, 5, now(), 0),
             ('default', '{}', NULL, 5, now(), 0)$$,
    'NULL arrays: jobq_enqueue''s defaults for every job'
);

SELECT is_empty($$SELECT * FROM jobq_enqueue_arrays('{}')$$, 'no jobs: nothing enqueued');
SELECT is_empty($$SELECT * FROM jobq_enqueue_arrays('{}', '{}', '{}', '{}', '{}', '{}', '{}')$$,
                'no jobs, every array empty: nothing enqueued');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs), 5, 'five jobs so far');

-- dedupe: an existing key, and one key repeated within the batch; keys are per job type
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;
CREATE TEMP TABLE res2 AS
SELECT * FROM jobq_enqueue_arrays(
    ARRAY['x', 'b', 'z', 'x', 'b', 'y', 'y', 'w'],
    ARRAY['{"first": true}', '{"ignored": true}', '{}', '{"first": false}', '{}', '{}', '{}',
          '{}']::jsonb[],
    ARRAY['new:1', 'b:2', NULL, 'new:1', 'b:2', 'b:2', 'b:2', 'new:1']
);
SELECT results_eq('SELECT ord FROM res2 ORDER BY ord', ARRAY[1, 2, 3, 4, 5, 6, 7, 8],
                  'one row per job, duplicates included');
SELECT is((SELECT id FROM res2 WHERE ord = 2), (SELECT id FROM res WHERE ord = 2),
          'a key that exists under the same job type returns the existing id');
SELECT is((SELECT id FROM res2 WHERE ord = 5), (SELECT id FROM res WHERE ord = 2),
          'an existing key repeated in the batch returns the existing id again');
SELECT is((SELECT id FROM res2 WHERE ord = 4), (SELECT id FROM res2 WHERE ord = 1),
          'two jobs with one new key get the same id');
SELECT ok((SELECT id FROM res2 WHERE ord = 6) NOT IN (SELECT id FROM res)
          AND (SELECT id FROM res2 WHERE ord = 7) = (SELECT id FROM res2 WHERE ord = 6),
          'an existing key under another job type is another job (once, however often repeated)');
SELECT isnt((SELECT id FROM res2 WHERE ord = 8), (SELECT id FROM res2 WHERE ord = 1),
            'a new key under two job types in one batch makes two jobs');
SELECT is((SELECT payload FROM jobq_all_jobs WHERE idempotency_key = 'new:1' AND job_type = 'x'),
          '{"first": true}', 'of jobs sharing a key, the first is inserted');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs), 9,
          'four rows added: x new:1, the keyless z, y b:2 and w new:1');
SELECT results_eq(
    'SELECT * FROM jobq_all_jobs WHERE id IN (SELECT id FROM snap) ORDER BY id',
    'SELECT * FROM snap ORDER BY id',
    'the existing jobs are unchanged'
);

UPDATE jobq_jobs SET status = 'dead_letter', finished_at = now()
WHERE idempotency_key = 'b:2' AND job_type = 'b';
SELECT is((SELECT id FROM jobq_enqueue_arrays(ARRAY['b'], idempotency_keys => ARRAY['b:2'])),
          (SELECT id FROM res WHERE ord = 2), 'an existing key in dead_letter returns its id');
SELECT is((SELECT status FROM jobq_all_jobs WHERE idempotency_key = 'b:2' AND job_type = 'b'),
          'dead_letter', '... and does not revive it');

-- the same jobs through jobq_enqueue_many and jobq_enqueue_arrays are the same rows
CREATE TEMP TABLE twin_many AS SELECT * FROM jobq_enqueue_many(
    '[{"job_type": "twin", "payload": {"t": 1}, "max_attempts": 2, "priority": -3, "queue": "tq",
       "run_at": "2032-05-06T07:08:09Z"}]');
CREATE TEMP TABLE twin_arrays AS SELECT * FROM jobq_enqueue_arrays(
    ARRAY['twin'], ARRAY['{"t": 1}']::jsonb[], NULL, ARRAY[2], ARRAY['2032-05-06T07:08:09Z']::timestamptz[],
    ARRAY[-3], ARRAY['tq']);
SELECT results_eq(
    $$SELECT j.queue, j.job_type, j.payload, j.idempotency_key, j.status, j.priority, j.attempts,
             j.max_attempts, j.available_at, j.scheduled, j.errors, j.created_at
      FROM twin_arrays JOIN jobq_jobs AS j USING (id)$$,
    $$SELECT j.queue, j.job_type, j.payload, j.idempotency_key, j.status, j.priority, j.attempts,
             j.max_attempts, j.available_at, j.scheduled, j.errors, j.created_at
      FROM twin_many JOIN jobq_jobs AS j USING (id)$$,
    'a job given as arrays is the row jobq_enqueue_many makes of it'
);

-- limit_groups and limit_keys: stored per job, with and without idempotency keys; a NULL
-- element (or array) is no limit
CREATE TEMP TABLE lim AS SELECT * FROM jobq_enqueue_arrays(
    ARRAY['lim', 'lim', 'lim'], limit_groups => ARRAY['cust', 'cust', NULL],
    limit_keys => ARRAY['acme', NULL, NULL]);
SELECT results_eq(
    $$SELECT j.limit_group, j.limit_key FROM lim JOIN jobq_jobs AS j USING (id) ORDER BY lim.ord$$,
    $$VALUES ('cust'::text, 'acme'::text), ('cust', NULL), (NULL, NULL)$$,
    'limit_groups and limit_keys are stored per job (no keys): a NULL element is no limit'
);
CREATE TEMP TABLE lim_keyed AS SELECT * FROM jobq_enqueue_arrays(
    ARRAY['limk', 'limk', 'limk'], idempotency_keys => ARRAY['l1', NULL, 'l1'],
    limit_groups => ARRAY['cust', 'api', 'other'], limit_keys => ARRAY['zeta', NULL, 'x']);
SELECT results_eq(
    $$SELECT lk.ord, j.limit_group, j.limit_key FROM lim_keyed AS lk JOIN jobq_jobs AS j USING (id)
      ORDER BY lk.ord$$,
    $$VALUES (1, 'cust'::text, 'zeta'::text), (2, 'api', NULL), (3, 'cust', 'zeta')$$,
    'with idempotency keys too; a repeated key keeps the first job''s limit'
);
SELECT is((SELECT count(*)::int FROM lim_keyed AS lk JOIN jobq_jobs AS j USING (id)
           WHERE j.limit_group IS NULL), 0, 'no limited job lost its limit');
CREATE TEMP TABLE lim_many AS SELECT * FROM jobq_enqueue_many(
    '[{"job_type": "lim", "limit_group": "cust", "limit_key": "acme"},
      {"job_type": "lim", "limit_group": "cust", "idempotency_key": "lm"}]');
SELECT results_eq(
    $$SELECT j.limit_group, j.limit_key FROM lim_many JOIN jobq_jobs AS j USING (id) ORDER BY lim_many.ord$$,
    $$SELECT j.limit_group, j.limit_key FROM lim JOIN jobq_jobs AS j USING (id) WHERE lim.ord <= 2
      ORDER BY lim.ord$$,
    'limited jobs given as arrays are the rows jobq_enqueue_many makes of them'
);
SELECT lives_ok(
    format($$SELECT * FROM jobq_enqueue_arrays(ARRAY['lim'], limit_groups => ARRAY[%L],
                                               limit_keys => ARRAY[%L])$$,
           repeat('g', 200), repeat('k', 200)),
    'a limit_group and a limit_key of 200 characters are accepted'
);

-- bounds are the same as jobq_enqueue's
SELECT lives_ok(
    format($$SELECT * FROM jobq_enqueue_arrays(ARRAY[%L], NULL, ARRAY[%L], ARRAY[1000], NULL,
                                               ARRAY[-1000000], ARRAY[%L])$$,
           repeat('t', 200), repeat('k', 1000), repeat('q', 200)),
    'upper and lower bounds are accepted'
);

------------------------------------------------------------------------------------------
-- Bad input: the SQLSTATE, the element and the argument named; nothing inserted
------------------------------------------------------------------------------------------

DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;

SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(NULL)$$, '22023',
    'jobq_enqueue_arrays: job_types must be a one-dimensional array, got NULL',
    'job_types NULL: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY[['a'], ['b']])$$, '22023',
    'jobq_enqueue_arrays: job_types must be a one-dimensional array, got 2 dimensions',
    'job_types two-dimensional: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], ARRAY['{}']::jsonb[])$$, '22023',
    'jobq_enqueue_arrays: payloads has 1 elements, job_types has 2: each array has one element '
    || 'per job (or is NULL for the default)',
    'payloads shorter than job_types: 22023 naming payloads');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a'], queues => ARRAY['q', 'r'])$$, '22023',
    'jobq_enqueue_arrays: queues has 2 elements, job_types has 1: each array has one element '
    || 'per job (or is NULL for the default)',
    'queues longer than job_types: 22023 naming queues');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], priorities => ARRAY[[1], [2]])$$,
    '22023',
    'jobq_enqueue_arrays: priorities has 2 elements, job_types has 2: each array has one element '
    || 'per job (or is NULL for the default)',
    'a two-dimensional priorities: 22023 naming priorities');

SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], limit_groups => ARRAY['g'])$$,
    '22023',
    'jobq_enqueue_arrays: limit_groups has 1 elements, job_types has 2: each array has one element '
    || 'per job (or is NULL for the default)',
    'limit_groups shorter than job_types: 22023 naming limit_groups');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a'], limit_groups => ARRAY['g'],
                                                       limit_keys => ARRAY['k', 'l'])$$,
    '22023',
    'jobq_enqueue_arrays: limit_keys has 2 elements, job_types has 1: each array has one element '
    || 'per job (or is NULL for the default)',
    'limit_keys longer than job_types: 22023 naming limit_keys');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], limit_groups => ARRAY[['g'], ['h']])$$,
    '22023',
    'jobq_enqueue_arrays: limit_groups has 2 elements, job_types has 2: each array has one element '
    || 'per job (or is NULL for the default)',
    'a two-dimensional limit_groups: 22023 naming limit_groups');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], limit_keys => ARRAY[NULL, 'k'])$$,
    '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): limit_key needs a limit_group',
    'a limit_key without its limit_group (a NULL limit_groups): 22023 naming the element');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], limit_groups => ARRAY['g', NULL],
                                                       limit_keys => ARRAY['k', 'k'])$$,
    '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): limit_key needs a limit_group',
    'a limit_key beside a NULL limit_groups element: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], limit_groups => ARRAY['g', E' \u200b'])$$,
    '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): limit_group must be NULL or a non-blank string',
    'a blank limit_group: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a'], limit_groups => ARRAY['g'],
                                                       limit_keys => ARRAY[' '])$$,
    '22023',
    'jobq_enqueue_arrays: element 1 (counting from 1): limit_key must be NULL or a non-blank string',
    'a blank limit_key: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a'], limit_groups => ARRAY[%L])$$,
                        repeat('g', 201)),
    '22023',
    'jobq_enqueue_arrays: element 1 (counting from 1): limit_group is 201 characters long, at most 200 are allowed',
    'a limit_group of 201 characters: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a'], limit_groups => ARRAY['g'],
                                                              limit_keys => ARRAY[%L])$$,
                        repeat('k', 201)),
    '22023',
    'jobq_enqueue_arrays: element 1 (counting from 1): limit_key is 201 characters long, at most 200 are allowed',
    'a limit_key of 201 characters: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], priorities => ARRAY[0, NULL])$$, '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): priority must be between -1000000 and 1000000, got NULL',
    'a NULL priorities element: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', ' '], limit_groups => ARRAY[' ', 'g'])$$,
    '22023',
    'jobq_enqueue_arrays: element 1 (counting from 1): limit_group must be NULL or a non-blank string',
    'a bad limit in an earlier job is named before a bad job type in a later one');

SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', NULL])$$, '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): job_type must be a non-blank string',
    'a NULL job type: 22023 naming the element');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b', E'\u200b '])$$, '22023',
    'jobq_enqueue_arrays: element 3 (counting from 1): job_type must be a non-blank string',
    'a blank job type (zero-width space): 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', %L])$$, repeat('t', 201)), '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): job_type is 201 characters long, at most 200 are allowed',
    'a job type of 201 characters: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], queues => ARRAY['q', NULL])$$, '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): queue must be a non-blank string',
    'a NULL queue element: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], idempotency_keys => ARRAY['k', ' '])$$,
    '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): idempotency_key must be NULL or a non-blank string',
    'a blank key: 22023');
SELECT throws_ok(format($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a'], idempotency_keys => ARRAY[%L])$$,
                        repeat('é', 1500)),
    '22023',
    'jobq_enqueue_arrays: element 1 (counting from 1): idempotency_key is 1500 characters long, at most 1000 are allowed',
    'a key of 1,500 characters: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], max_attempts => ARRAY[1, 0])$$, '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): max_attempts must be between 1 and 1000, got 0',
    'max_attempts 0: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a'], max_attempts => ARRAY[NULL::int])$$, '22023',
    'jobq_enqueue_arrays: element 1 (counting from 1): max_attempts must be between 1 and 1000, got NULL',
    'a NULL max_attempts element: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a'], priorities => ARRAY[1000001])$$, '22023',
    'jobq_enqueue_arrays: element 1 (counting from 1): priority must be between -1000000 and 1000000, got 1000001',
    'priority over the bound: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], run_ats => ARRAY[NULL, 'infinity']::timestamptz[])$$,
    '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): run_at must be a finite time, got infinity',
    'run_at infinity: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], ARRAY['{}', '[1]']::jsonb[])$$, '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): payload must be a JSON object, got a JSON array',
    'a payload that is not an object: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], ARRAY['{}', 'null']::jsonb[])$$, '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): payload must be a JSON object, got a JSON null',
    'a JSON null payload: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], ARRAY['{}', NULL]::jsonb[])$$, '22004',
    'jobq_enqueue_arrays: element 2 (counting from 1): payload must not be NULL',
    'an SQL NULL payload element: 22004, as jobq_enqueue');
SELECT throws_ok(
    format($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', 'b'], ARRAY['{}', %L]::jsonb[])$$,
           jsonb_build_object('blob', repeat('x', 1100000))),
    '54000',
    format('jobq_enqueue_arrays: element 2 (counting from 1): payload is %s bytes, the limit is 1048576 bytes',
           octet_length(jsonb_build_object('blob', repeat('x', 1100000))::text)),
    'a payload over the limit: 54000, naming the element'
);
SELECT throws_ok(
    $$SELECT * FROM jobq_enqueue_arrays(array_fill('a'::text, ARRAY[100001]))$$,
    '54000', 'jobq_enqueue_arrays: job_types has 100001 elements, at most 100000 are allowed',
    'more than 100,000 jobs: 54000'
);
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays(ARRAY['a', ' ', 'c'], priorities => ARRAY[0, 0, 2000000])$$,
    '22023',
    'jobq_enqueue_arrays: element 2 (counting from 1): job_type must be a non-blank string',
    'of several bad jobs, the first is named');

SELECT results_eq(
    'SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
    'no bad call inserted or changed anything (good jobs before a bad one included)'
);

------------------------------------------------------------------------------------------
-- 10,000 jobs in one call
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

CREATE TEMP TABLE plain AS
SELECT * FROM jobq_enqueue_arrays(
    array_fill('bulk'::text, ARRAY[10000]),
    (SELECT array_agg(jsonb_build_object('n', g) ORDER BY g) FROM generate_series(1, 10000) AS g));
SELECT is((SELECT count(*)::int FROM plain), 10000, '10,000 jobs: 10,000 rows returned');
SELECT is(
    (SELECT count(*)::int FROM plain AS p JOIN jobq_jobs AS j USING (id)
     WHERE (j.payload ->> 'n')::int = p.ord),
    10000,
    '10,000 jobs: every ord is paired with the id of its own job'
);

CREATE TEMP TABLE keyed AS
SELECT * FROM jobq_enqueue_arrays(
    array_fill('bulk'::text, ARRAY[10000]), NULL,
    (SELECT array_agg('bulk:' || g ORDER BY g) FROM generate_series(1, 10000) AS g));
SELECT is((SELECT count(*)::int FROM jobq_all_jobs), 20000, '10,000 keyed jobs: 10,000 more rows');
SELECT is(
    (SELECT count(*)::int FROM keyed AS k JOIN jobq_jobs AS j USING (id)
     WHERE j.idempotency_key = 'bulk:' || k.ord),
    10000,
    '10,000 keyed jobs: ids in input order'
);
SELECT bag_eq(
    $$SELECT ord, id FROM jobq_enqueue_arrays(
          array_fill('bulk'::text, ARRAY[10000]), NULL,
          (SELECT array_agg('bulk:' || g ORDER BY g) FROM generate_series(1, 10000) AS g))$$,
    'SELECT ord, id FROM keyed',
    'the same 10,000 keys again: the same ids, in input order'
);
SELECT is((SELECT count(*)::int FROM jobq_all_jobs), 20000, '... and nothing added');

SELECT * FROM finish();
ROLLBACK;
