-- Bounds on every input, so that no argument can make a later call fail
-- for its size or stop the queue:
--
--  1. worker_id: a non-blank string of at most 200 characters, in every function that takes
--     one (NULL and blank are 22023 too).
--  2. blank means Unicode white space and invisible characters too (U+00A0, U+2000-U+200B,
--     U+FEFF, U+3000, ...), for job_type, queue, idempotency_key and worker_id alike.
--  3. batch_size 1..10,000; a jobs array of more than 100,000 elements is 54000.
--  4. The payload is a JSON object ('null'::jsonb, arrays, strings, numbers, booleans: 22023),
--     in jobq_enqueue and in each element of jobq_enqueue_many.
--  5. An idempotency key too long for its index (in bytes) is 22023 naming the argument, never
--     an index error.
--  6. A failure report never fails for its size: error is stored cut to its first 10,000
--     characters, errors keeps the 50 most recent entries (jobq_fail and the takeover in
--     jobq_dequeue), and a takeover never fails for the size of the claim it records.
--  7. Size limits measure the logical size, the text form, however the value arrives: 4 MB
--     of repeated text, passed from a table column where it is stored compressed in well
--     under the 1 MiB limit, is 54000 as a payload (jobq_enqueue, jobq_enqueue_many,
--     jobq_enqueue_arrays, jobq_schedule) and as a result (jobq_complete, jobq_complete_many).
--  8. Every text argument of every public function has a bound, refused with 22023 naming the
--     argument: the filters of jobq_dequeue (at most 1,000 names of at most 200 characters:
--     they are stored in jobq_workers), cron (1,000 characters), timezone and catch_up (100),
--     the name of jobq_unschedule, the job_type and queue filters of jobq_list_jobs,
--     jobq_jobs_page and jobq_requeue_dead_letters (200), the statuses of jobq_list_jobs and
--     jobq_prune (100 names). The others were bounded already (sections 1 to 6, and each
--     function's own file); the table of docs/sql-api.md lists them all.
-- Every refused call changes nothing: the table is compared with a snapshot after them.
BEGIN;
SELECT plan(127);

DELETE FROM jobq_jobs;

SELECT jobq_enqueue('a') AS held, jobq_enqueue('a', run_at => now() + interval '1 hour') AS later
\gset
SELECT id AS claimed FROM jobq_dequeue('w1') \gset
CREATE TEMP TABLE snap AS SELECT * FROM jobq_jobs;

------------------------------------------------------------------------------------------
-- 1. worker_id, in every function that takes one
------------------------------------------------------------------------------------------

CREATE TEMP TABLE calls (fn text, call text);
INSERT INTO calls VALUES
    ('jobq_dequeue', 'SELECT * FROM jobq_dequeue(%s)'),
    ('jobq_complete', format('SELECT jobq_complete(%L, %%s)', :'held')),
    ('jobq_complete_many', format('SELECT jobq_complete_many(ARRAY[%L]::uuid[], %%s)', :'held')),
    ('jobq_fail', format('SELECT jobq_fail(%L, %%s, ''e'')', :'held')),
    ('jobq_fail_many', format('SELECT * FROM jobq_fail_many(ARRAY[%L]::uuid[], %%s, ''{e}'')', :'held')),
    ('jobq_heartbeat', format('SELECT jobq_heartbeat(%%s, ARRAY[%L]::uuid[])', :'held')),
    ('jobq_release', format('SELECT jobq_release(ARRAY[%L]::uuid[], %%s)', :'held'));

-- (function, worker_id literal, expected message after 'fn: ')
CREATE TEMP TABLE bad_workers AS
SELECT c.fn, c.call, w.literal, w.message, w.what
FROM calls AS c
CROSS JOIN (VALUES
    ('NULL', 'worker_id must be a non-blank string', 'NULL'),
    ('''''', 'worker_id must be a non-blank string', 'empty'),
    (quote_literal(E' \t\n'), 'worker_id must be a non-blank string', 'ASCII white space'),
    (quote_literal(E'\u00a0\u200b\u3000\ufeff'), 'worker_id must be a non-blank string',
     'no-break, zero-width and ideographic spaces'),
    (quote_literal(repeat('w', 201)),
     'worker_id is 201 characters long, at most 200 are allowed', '201 characters')
) AS w (literal, message, what);

SELECT throws_ok(
    format(b.call, b.literal), '22023', b.fn || ': ' || b.message,
    b.fn || ': worker_id ' || b.what || ' is 22023'
)
FROM bad_workers AS b
ORDER BY b.fn, b.what;

SELECT results_eq('SELECT * FROM jobq_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'none of the refused worker_ids changed anything');

-- 200 characters (of any script) is a worker_id
SELECT is(jobq_heartbeat(repeat('w', 200), ARRAY[:'held']::uuid[]), 0,
          'a worker_id of 200 characters is accepted');
SELECT is((SELECT count(*)::int FROM jobq_dequeue(repeat('ü', 200))), 0,
          'a worker_id of 200 two-byte characters is accepted');

------------------------------------------------------------------------------------------
-- 2. blank: Unicode white space and invisible characters, one definition for every argument
------------------------------------------------------------------------------------------

SELECT throws_ok(format('SELECT jobq_enqueue(%L)', b.value), '22023',
                 'jobq_enqueue: job_type must be a non-blank string',
                 'job_type of ' || b.what || ' is blank: 22023')
FROM (VALUES
    (E'\u00a0', 'U+00A0 no-break space'),
    (E'\u2000\u2005\u200a', 'U+2000..U+200A spaces'),
    (E'\u200b', 'U+200B zero-width space'),
    (E'\u200c\u200d\u2060', 'zero-width joiners and word joiner'),
    (E'\ufeff', 'U+FEFF zero-width no-break space'),
    (E'\u3000', 'U+3000 ideographic space'),
    (E'\u1680\u180e\u2028\u2029\u202f\u205f\u0085', 'other Unicode spaces and separators'),
    (E'\u3164\uffa0\u00ad', 'Hangul fillers and the soft hyphen')
) AS b (value, what);
SELECT throws_ok($$SELECT jobq_enqueue('a', queue => E'\u200b\u00a0')$$, '22023',
    'jobq_enqueue: queue must be a non-blank string', 'queue of zero-width and no-break spaces: 22023');
SELECT throws_ok($$SELECT jobq_enqueue('a', idempotency_key => E'\ufeff')$$, '22023',
    'jobq_enqueue: idempotency_key must be NULL or a non-blank string',
    'idempotency_key of U+FEFF: 22023');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many(jsonb_build_array(jsonb_build_object('job_type', E'\u3000')))$$,
    '22023', 'jobq_enqueue_many: jobs element 1 (counting from 1) job_type must be a non-blank string',
    'jobq_enqueue_many uses the same definition of blank');
SELECT ok(jobq_enqueue(E'a\u200b', queue => E'\u00a0q') IS NOT NULL,
          'a value with some visible character is not blank');
DELETE FROM jobq_jobs WHERE job_type = E'a\u200b';

------------------------------------------------------------------------------------------
-- 3. batch_size and the size of a jobs array
------------------------------------------------------------------------------------------

SELECT throws_ok($$SELECT * FROM jobq_dequeue('w', batch_size => 10001)$$, '22023',
    'jobq_dequeue: batch_size must be between 1 and 10000, got 10001', 'batch_size 10001: 22023');
SELECT throws_ok($$SELECT * FROM jobq_dequeue('w', batch_size => 1000000000)$$, '22023',
    'jobq_dequeue: batch_size must be between 1 and 10000, got 1000000000', 'batch_size 10^9: 22023');
SELECT lives_ok($$SELECT * FROM jobq_dequeue('w2', batch_size => 10000, job_types => '{none}')$$,
    'batch_size 10000 is accepted');
SELECT throws_ok(
    $$SELECT * FROM jobq_enqueue_many((SELECT jsonb_agg('{"job_type": "a"}'::jsonb)
                                       FROM generate_series(1, 100001)))$$,
    '54000', 'jobq_enqueue_many: jobs has 100001 elements, at most 100000 are allowed',
    'a jobs array of 100,001 elements: 54000'
);

------------------------------------------------------------------------------------------
-- 4. The payload is a JSON object
------------------------------------------------------------------------------------------

SELECT throws_ok(format('SELECT jobq_enqueue(''a'', %L::jsonb)', p.value), '22023',
                 'jobq_enqueue: payload must be a JSON object, got a JSON ' || p.kind,
                 'jobq_enqueue: payload ' || p.value || ' is 22023')
FROM (VALUES ('null', 'null'), ('[1, 2]', 'array'), ('"s"', 'string'), ('1', 'number'),
             ('true', 'boolean'), ('[]', 'array')) AS p (value, kind);
SELECT throws_ok($$SELECT jobq_enqueue('a', NULL)$$, '22004',
    'jobq_enqueue: payload must not be NULL', 'a SQL NULL payload stays 22004');
SELECT throws_ok(
    format('SELECT * FROM jobq_enqueue_many(%L)',
           '[{"job_type": "a"}, {"job_type": "a", "payload": ' || p.value || '}]'),
    '22023',
    'jobq_enqueue_many: jobs element 2 (counting from 1) payload must be a JSON object, got a JSON '
        || p.kind,
    'jobq_enqueue_many: payload ' || p.value || ' is 22023, naming the element')
FROM (VALUES ('null', 'null'), ('[1]', 'array'), ('"s"', 'string'), ('1.5', 'number'),
             ('false', 'boolean')) AS p (value, kind);

------------------------------------------------------------------------------------------
-- 5. An idempotency key too long for its index, in bytes
------------------------------------------------------------------------------------------

-- 1,000 distinct CJK characters: 3,000 bytes that do not compress, more than the 2,704 a btree
-- entry may hold. Within the 1,000 characters, so only a check in bytes refuses it in time.
SELECT string_agg(chr(19968 + (g * 7919) % 20000), '' ORDER BY g) AS cjk_key
FROM generate_series(1, 1000) AS g \gset
SELECT throws_ok(format('SELECT jobq_enqueue(''a'', idempotency_key => %L)', :'cjk_key'), '22023',
    'jobq_enqueue: idempotency_key is 3000 bytes long, at most 1800 are allowed',
    'a key of 1,000 three-byte characters: 22023 naming idempotency_key, not an index error');
SELECT throws_ok(
    format('SELECT * FROM jobq_enqueue_many(%L)',
           jsonb_build_array(jsonb_build_object('job_type', 'a', 'idempotency_key', :'cjk_key'))),
    '22023',
    'jobq_enqueue_many: jobs element 1 (counting from 1) idempotency_key is 3000 bytes long, at most 1800 are allowed',
    'jobq_enqueue_many refuses it the same way');
-- The index entry holds the job type too: the longest key beside the longest job type of
-- four-byte characters (800 bytes) still fits.
SELECT string_agg(chr(128512 + g), '' ORDER BY g) AS wide_type
FROM generate_series(1, 200) AS g \gset
SELECT ok(jobq_enqueue(:'wide_type', idempotency_key => left(:'cjk_key', 600)) IS NOT NULL,
          'a key of 1,800 bytes beside a job type of 800 bytes fits its index');
SELECT throws_ok(
    format('SELECT jobq_enqueue(%L, idempotency_key => %L)', :'wide_type',
           left(:'cjk_key', 601)),
    '22023', 'jobq_enqueue: idempotency_key is 1803 bytes long, at most 1800 are allowed',
    'a key of 1,803 bytes is refused before the index');
DELETE FROM jobq_jobs WHERE idempotency_key IS NOT NULL;

SELECT results_eq('SELECT * FROM jobq_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'none of the refused calls above changed anything');

------------------------------------------------------------------------------------------
-- 6. A failure report never fails for its size
------------------------------------------------------------------------------------------

SELECT is(jobq_fail(:'claimed', 'w1', repeat('é', 2000000), backoff => '0'), 'pending',
          'jobq_fail with an error of 2 million characters succeeds');
SELECT is((SELECT length(last_error) FROM jobq_jobs WHERE id = :'claimed'), 10000,
          'last_error keeps the first 10,000 characters');
SELECT is((SELECT length(errors -> -1 ->> 'error') FROM jobq_jobs WHERE id = :'claimed'), 10000,
          'so does the entry in errors');

-- jobq_fail_many cuts each error the same way
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w1')), 1, 'claimed again');
SELECT is((SELECT status FROM jobq_fail_many(ARRAY[:'claimed']::uuid[], 'w1',
                                             ARRAY[repeat('é', 2000000)], backoffs => '{0}')),
          'pending', 'jobq_fail_many with an error of 2 million characters succeeds');
SELECT is((SELECT length(last_error) FROM jobq_jobs WHERE id = :'claimed'), 10000,
          'jobq_fail_many: last_error keeps the first 10,000 characters');
SELECT is((SELECT length(errors -> -1 ->> 'error') FROM jobq_jobs WHERE id = :'claimed'), 10000,
          'jobq_fail_many: so does the entry in errors');

-- errors keeps the 50 most recent entries
UPDATE jobq_jobs SET max_attempts = 1000 WHERE id = :'claimed';
DO $$
BEGIN
    FOR i IN 2..60 LOOP
        PERFORM jobq_dequeue('w1');
        PERFORM jobq_fail(j.id, 'w1', 'failure ' || i, backoff => '0')
        FROM jobq_jobs AS j WHERE j.locked_by = 'w1';
    END LOOP;
END;
$$;
SELECT is((SELECT attempts FROM jobq_jobs WHERE id = :'claimed'), 61, '61 failed attempts');
SELECT is((SELECT jsonb_array_length(errors) FROM jobq_jobs WHERE id = :'claimed'), 50,
          'errors keeps 50 entries');
SELECT is((SELECT errors -> 0 ->> 'attempt' FROM jobq_jobs WHERE id = :'claimed'), '12',
          'the oldest kept is attempt 12');
SELECT is((SELECT errors -> -1 ->> 'error' FROM jobq_jobs WHERE id = :'claimed'), 'failure 60',
          'the newest is the last failure');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w1')), 1, 'claimed once more');
SELECT is((SELECT status FROM jobq_fail_many(ARRAY[:'claimed']::uuid[], 'w1', '{many}',
                                             backoffs => '{0}')),
          'pending', 'jobq_fail_many records attempt 62');
SELECT is((SELECT format('%s entries, attempts %s to %s, the newest: %s',
                          jsonb_array_length(errors), errors -> 0 ->> 'attempt',
                          errors -> -1 ->> 'attempt', errors -> -1 ->> 'error')
           FROM jobq_jobs WHERE id = :'claimed'),
          '50 entries, attempts 13 to 62, the newest: many',
          'jobq_fail_many keeps the 50 most recent entries too');

-- A takeover records the lost claim the same way, and never fails for its size: a claim
-- recorded before worker_id was bounded (locked_by of a million characters here) is cut to
-- the 200 characters of a worker_id.
SELECT id AS claimed2 FROM jobq_dequeue('w1') \gset
-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_by = repeat('x', 1000000), locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600)
WHERE id = :'claimed2';
SELECT is((SELECT locked_by FROM jobq_dequeue('w3', lock_timeout => '1 minute')), 'w3',
          'a stale claim with a huge worker id is taken over');
SELECT is((SELECT jsonb_array_length(errors) FROM jobq_jobs WHERE id = :'claimed2'), 50,
          'the takeover keeps 50 entries too');
SELECT is((SELECT errors -> -1 ->> 'kind' FROM jobq_jobs WHERE id = :'claimed2'), 'lock_expired',
          'the newest entry is the takeover');
SELECT is((SELECT length(errors -> -1 ->> 'worker') FROM jobq_jobs WHERE id = :'claimed2'), 200,
          'the lost worker id is recorded cut to 200 characters');
SELECT cmp_ok((SELECT length(last_error) FROM jobq_jobs WHERE id = :'claimed2'), '<', 400,
              'and so is last_error');

SELECT is(jobq__append_error('[]', '{"n": 1}'), '[{"n": 1}]', 'append to an empty history');
SELECT is(
    jobq__append_error((SELECT jsonb_agg(g) FROM generate_series(1, 70) AS g), '71'),
    (SELECT jsonb_agg(g) FROM generate_series(22, 71) AS g),
    'a history longer than 50 (kept from before the bound) is cut to the 50 most recent'
);

------------------------------------------------------------------------------------------
-- 7. Logical sizes, for values that arrive compressed
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('r') AS r7 \gset
SELECT id AS claimed7 FROM jobq_dequeue('w7', job_types => '{r}') \gset
DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_jobs;
CREATE TEMP TABLE snap_schedules AS SELECT * FROM jobq_schedules;

-- Each value is read from a column of a temp table, where it is stored compressed, so that it
-- reaches the function as it would from a producer's own table.
CREATE TEMP TABLE big (v jsonb, jobs jsonb, vs jsonb[]);
INSERT INTO big (v) VALUES (jsonb_build_object('s', repeat('a', 4000000)));
UPDATE big SET jobs = jsonb_build_array(jsonb_build_object('job_type', 'big', 'payload', v)),
               vs = ARRAY[v];
SELECT cmp_ok((SELECT pg_column_size(v) FROM big), '<', 1048576,
              'the 4 MB payload is stored in less than the 1 MiB limit');
SELECT cmp_ok((SELECT pg_column_size(jobs) FROM big), '<', 1048576, 'so is a jobs array holding it');

SELECT throws_ok($$SELECT jobq_enqueue('big', (SELECT v FROM big))$$, '54000',
    'jobq_enqueue: payload is 4000009 bytes, the limit is 1048576 bytes',
    'jobq_enqueue: a payload that arrives compressed is measured by its text form');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many((SELECT jobs FROM big))$$, '54000',
    'jobq_enqueue_many: jobs element 1 (counting from 1): payload is 4000009 bytes, the limit is 1048576 bytes',
    'jobq_enqueue_many: the same');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_arrays('{big}', (SELECT vs FROM big))$$, '54000',
    'jobq_enqueue_arrays: element 1 (counting from 1): payload is 4000009 bytes, the limit is 1048576 bytes',
    'jobq_enqueue_arrays: the same');
SELECT throws_ok(
    $$SELECT jobq_schedule('big', '@daily', 'big', (SELECT v FROM big))$$, '54000',
    'jobq_schedule: payload is 4000009 bytes, the limit is 1048576 bytes',
    'jobq_schedule: the same for a schedule''s payload');
SELECT throws_ok(
    format($$SELECT jobq_complete(%L, 'w7', result => (SELECT v FROM big))$$, :'claimed7'),
    '54000', 'jobq_complete: result is 4000009 bytes, the limit is 1048576 bytes',
    'jobq_complete: a result that arrives compressed is measured by its text form');
SELECT throws_ok(
    format($$SELECT jobq_complete_many(ARRAY[%L]::uuid[], 'w7', results => (SELECT vs FROM big))$$,
           :'claimed7'),
    '54000', 'jobq_complete_many: results[1] is 4000009 bytes, the limit is 1048576 bytes',
    'jobq_complete_many: the same');
-- A number of a few stored bytes prints as up to 131,072 digits: the text form counts.
SELECT jsonb_object_agg('k' || g, ('1e100000')::numeric) AS digits
FROM generate_series(1, 11) AS g \gset
SELECT throws_ok(format('SELECT jobq_enqueue(''big'', %L::jsonb)', :'digits'), '54000',
    format('jobq_enqueue: payload is %s bytes, the limit is 1048576 bytes',
           octet_length(:'digits'::jsonb::text)),
    'a payload of 11 numbers, ' || pg_column_size(:'digits'::jsonb)
    || ' bytes stored, is measured by its digits');
SELECT results_eq('SELECT * FROM jobq_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'none of the oversized values was added or stored');
SELECT results_eq('SELECT * FROM jobq_schedules', 'SELECT * FROM snap_schedules',
                  'and no schedule was created');

------------------------------------------------------------------------------------------
-- 8. A bound on every text argument
------------------------------------------------------------------------------------------

DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_jobs;
CREATE TEMP TABLE snap_workers AS SELECT * FROM jobq_workers;
SELECT array_agg('t' || g) AS names_1001, array_agg(repeat('n', 196) || g) FILTER (WHERE g <= 1000)
    AS names_long_ok
FROM generate_series(1, 1001) AS g \gset
SELECT array_fill('s'::text, ARRAY[101]) AS statuses_101 \gset

SELECT throws_ok(format('SELECT * FROM jobq_dequeue(''w8'', job_types => %L::text[])', :'names_1001'),
    '22023', 'jobq_dequeue: job_types has 1001 names, at most 1000 are allowed',
    'jobq_dequeue: a job_types filter of 1,001 names is 22023');
SELECT throws_ok(format('SELECT * FROM jobq_dequeue(''w8'', queues => %L::text[])', :'names_1001'),
    '22023', 'jobq_dequeue: queues has 1001 names, at most 1000 are allowed',
    'jobq_dequeue: a queues filter of 1,001 names is 22023');
SELECT throws_ok(
    format('SELECT * FROM jobq_dequeue(''w8'', job_types => ARRAY[''a'', %L])', repeat('x', 201)),
    '22023', 'jobq_dequeue: job_types has a name of 201 characters, at most 200 are allowed',
    'jobq_dequeue: a job_types name of 201 characters is 22023');
SELECT throws_ok(
    format('SELECT * FROM jobq_dequeue(''w8'', queues => ARRAY[%L, ''q''])', repeat('é', 201)),
    '22023', 'jobq_dequeue: queues has a name of 201 characters, at most 200 are allowed',
    'jobq_dequeue: a queues name of 201 characters is 22023');
SELECT results_eq('SELECT * FROM jobq_workers', 'SELECT * FROM snap_workers',
                  'the refused filters were not stored');
SELECT is(
    (SELECT count(*)::integer FROM jobq_dequeue('w8', job_types => :'names_long_ok'::text[],
                                                queues => :'names_long_ok'::text[])),
    0, 'filters of 1,000 names of up to 200 characters are accepted'
);

SELECT throws_ok(format('SELECT jobq_schedule(''s8'', %L, ''j'')', repeat('* ', 500) || '*'),
    '22023', 'jobq_schedule: cron is 1001 characters long, at most 1000 are allowed',
    'jobq_schedule: a cron of 1,001 characters is 22023');
SELECT throws_ok(format('SELECT jobq_schedule(''s8'', ''@daily'', ''j'', timezone => %L)',
                        repeat('Europe/', 15)),
    '22023', 'jobq_schedule: timezone is 105 characters long, at most 100 are allowed',
    'jobq_schedule: a timezone of 105 characters is 22023');
SELECT throws_ok(format('SELECT jobq_schedule(''s8'', ''@daily'', ''j'', catch_up => %L)',
                        repeat('x', 101)),
    '22023', 'jobq_schedule: catch_up must be skip, latest or all, got a string of 101 characters',
    'jobq_schedule: a catch_up of 101 characters is 22023, without echoing it');
SELECT throws_ok(format('SELECT jobq_unschedule(%L)', repeat('s', 201)),
    '22023', 'jobq_unschedule: name is 201 characters long, at most 200 are allowed',
    'jobq_unschedule: a name of 201 characters is 22023');
SELECT is(jobq_unschedule(repeat('s', 200)), FALSE, 'a name of 200 characters is looked up');
SELECT is((SELECT count(*)::integer FROM jobq_schedules WHERE name = 's8'), 0,
          'no refused schedule was created');

SELECT throws_ok(format('SELECT * FROM jobq_list_jobs(job_type => %L)', repeat('j', 201)),
    '22023', 'jobq_list_jobs: job_type is 201 characters long, at most 200 are allowed',
    'jobq_list_jobs: a job_type of 201 characters is 22023');
SELECT throws_ok(format('SELECT * FROM jobq_list_jobs(queue => %L)', repeat('q', 201)),
    '22023', 'jobq_list_jobs: queue is 201 characters long, at most 200 are allowed',
    'jobq_list_jobs: a queue of 201 characters is 22023');
SELECT throws_ok(format('SELECT * FROM jobq_list_jobs(statuses => %L::text[])', :'statuses_101'),
    '22023', 'jobq_list_jobs: statuses has 101 elements, at most 100 are allowed',
    'jobq_list_jobs: 101 statuses are 22023');
SELECT throws_ok(format('SELECT * FROM jobq_jobs_page(''pending'', queue => %L)', repeat('q', 201)),
    '22023', 'jobq_jobs_page: queue is 201 characters long, at most 200 are allowed',
    'jobq_jobs_page: a queue of 201 characters is 22023');
SELECT throws_ok(format('SELECT * FROM jobq_jobs_page(''pending'', job_type => %L)', repeat('j', 201)),
    '22023', 'jobq_jobs_page: job_type is 201 characters long, at most 200 are allowed',
    'jobq_jobs_page: a job_type of 201 characters is 22023');
SELECT throws_ok(format('SELECT jobq_requeue_dead_letters(job_type => %L)', repeat('j', 201)),
    '22023', 'jobq_requeue_dead_letters: job_type is 201 characters long, at most 200 are allowed',
    'jobq_requeue_dead_letters: a job_type of 201 characters is 22023');
SELECT throws_ok(format('SELECT jobq_requeue_dead_letters(queue => %L)', repeat('q', 201)),
    '22023', 'jobq_requeue_dead_letters: queue is 201 characters long, at most 200 are allowed',
    'jobq_requeue_dead_letters: a queue of 201 characters is 22023');
SELECT throws_ok(format('SELECT jobq_prune(''0'', %L::text[])',
                        array_fill('succeeded'::text, ARRAY[101])),
    '22023', 'jobq_prune: statuses has 101 elements, at most 100 are allowed',
    'jobq_prune: 101 statuses are 22023');
SELECT lives_ok(
    format($$SELECT * FROM jobq_list_jobs(%L::text[], %L, %L),
                  jobq_jobs_page('pending', %L, %L),
                  jobq_requeue_dead_letters(%L, %L)$$,
           array_fill('pending'::text, ARRAY[100]), repeat('j', 200), repeat('q', 200),
           repeat('q', 200), repeat('j', 200), repeat('j', 200), repeat('q', 200)),
    'filters of 200 characters and 100 statuses are accepted');
SELECT results_eq('SELECT * FROM jobq_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'none of the refused calls changed a job');

-- Both filters at their bound: the claim finds the pairs that hold jobs, not every pair.
SELECT jobq_enqueue('t7', queue => repeat('n', 196) || '7') AS in_filters \gset
SELECT jobq_enqueue('t7', queue => 'elsewhere') AS outside_queues \gset
SELECT is(
    (SELECT array_agg(id) FROM jobq_dequeue('w8', job_types => (:'names_1001'::text[])[1:1000],
                                            queues => :'names_long_ok'::text[], batch_size => 10)),
    ARRAY[:'in_filters'::uuid],
    'filters of 1,000 types and 1,000 queues claim the job of a listed pair, and only it'
);
SELECT is((SELECT status FROM jobq_jobs WHERE id = :'outside_queues'), 'pending',
          'a job of a listed type in a queue not listed stays pending');

SELECT * FROM finish();
ROLLBACK;
