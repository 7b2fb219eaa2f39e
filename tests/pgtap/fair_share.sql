-- Fair share across the keys of a limit group: jobq_set_limit's share, jobq_set_weight,
-- jobq_limits' share and jobq_limit_usage's weight, and the claim's order under round_robin
-- and weighted, in one session.
--
-- Not covered here: 100,000 pending jobs, 10,000 starts, concurrent sessions with kills and
-- lock expiries: tests/python/test_fair_share.py.
BEGIN;
SELECT plan(25);

DELETE FROM jobq_jobs;
DELETE FROM jobq_limits;
DELETE FROM jobq_limit_keys;

-- Claims n times with batch 1, completing each job, and returns the keys in start order.
CREATE FUNCTION pg_temp.keys_started(n integer) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_keys text := '';
    r record;
BEGIN
    FOR i IN 1 .. n LOOP
        FOR r IN SELECT * FROM jobq_dequeue('tap', NULL, 1) LOOP
            v_keys := v_keys || coalesce(r.limit_key, '-');
            PERFORM jobq_complete(r.id, 'tap');
        END LOOP;
    END LOOP;
    RETURN v_keys;
END;
$$;

------------------------------------------------------------------------------------------
-- Bad input: 22023 naming the argument, and nothing changed
------------------------------------------------------------------------------------------

SELECT jobq_set_limit('kept', max_running => 2, share => 'weighted');
SELECT jobq_set_weight('kept', 'k', 2);
CREATE TEMP TABLE snap_limits AS SELECT * FROM jobq_limits;
CREATE TEMP TABLE snap_keys AS SELECT * FROM jobq_limit_keys;

SELECT throws_ok($$SELECT jobq_set_limit('kept', share => 'fair')$$, '22023',
    'jobq_set_limit: share must be fifo, round_robin or weighted (or NULL: fifo), got fair',
    'share unknown: 22023');
SELECT throws_ok($$SELECT jobq_set_weight('kept', 'k', 0)$$, '22023',
    'jobq_set_weight: weight must be a positive finite number, got 0', 'weight 0: 22023');
SELECT throws_ok($$SELECT jobq_set_weight('kept', 'k', -2)$$, '22023',
    'jobq_set_weight: weight must be a positive finite number, got -2', 'weight negative: 22023');
SELECT throws_ok($$SELECT jobq_set_weight('kept', 'k', 'NaN')$$, '22023',
    'jobq_set_weight: weight must be a positive finite number, got NaN', 'weight NaN: 22023');
SELECT throws_ok($$SELECT jobq_set_weight('kept', 'k', 'Infinity')$$, '22023',
    'jobq_set_weight: weight must be a positive finite number, got Infinity',
    'weight infinite: 22023');
SELECT throws_ok($$SELECT jobq_set_weight('kept', 'k', NULL)$$, '22023',
    'jobq_set_weight: weight must be a positive finite number, got NULL', 'weight NULL: 22023');
SELECT throws_ok($$SELECT jobq_set_weight(NULL, 'k', 2)$$, '22023',
    'jobq_set_weight: limit_group must be a non-blank string', 'limit_group NULL: 22023');
SELECT throws_ok($$SELECT jobq_set_weight('kept', ' ', 2)$$, '22023',
    'jobq_set_weight: limit_key must be NULL or a non-blank string', 'limit_key blank: 22023');
SELECT results_eq('SELECT * FROM jobq_limits', 'SELECT * FROM snap_limits',
                  'the refused calls changed no limit');
SELECT results_eq('SELECT * FROM jobq_limit_keys', 'SELECT * FROM snap_keys',
                  'the refused calls changed no weight');

------------------------------------------------------------------------------------------
-- Setting, reading and removing a share
------------------------------------------------------------------------------------------

SELECT jobq_set_limit('kept');
SELECT jobq_set_limit('rr', share => 'round_robin');
SELECT results_eq('SELECT limit_group, max_running, max_starts, per, share FROM jobq_limits()',
    $$VALUES ('rr'::text, NULL::integer, NULL::integer, NULL::interval, 'round_robin'::text)$$,
    'a share needs no cap; jobq_limits shows it');
SELECT is((SELECT count(*)::integer FROM jobq_limit_keys WHERE limit_group = 'kept'), 0,
          'removing a group removes its weights');
SELECT jobq_set_limit('rr', max_running => 5);
SELECT is((SELECT share FROM jobq_limits()), 'fifo', 'share NULL is fifo');
SELECT jobq_set_limit('rr', share => 'fifo');
SELECT is_empty('SELECT * FROM jobq_limits()', 'no cap and fifo: the group is removed');
SELECT jobq_set_weight('w', NULL, 4);
SELECT is((SELECT weight FROM jobq_limit_keys WHERE limit_group = 'w' AND limit_key = ''),
          4::real, 'a NULL limit_key is the group''s keyless key');
DELETE FROM jobq_limit_keys;

------------------------------------------------------------------------------------------
-- The claim's order
------------------------------------------------------------------------------------------

-- Tenant A enqueues 3 jobs, then tenant B 3: one slot takes them in turn (without caps,
-- downwards in key order from a first claim at the lowest key).
SELECT jobq_set_limit('t', share => 'round_robin');
SELECT jobq_enqueue('j', limit_group => 't', limit_key => 'A', run_at => now() - interval '2 s')
FROM generate_series(1, 3);
SELECT jobq_enqueue('j', limit_group => 't', limit_key => 'B', run_at => now() - interval '1 s')
FROM generate_series(1, 3);
SELECT is(pg_temp.keys_started(6), 'ABABAB', 'round_robin: A, B, A, B, A, B');

-- The same under fifo: claim order.
SELECT jobq_set_limit('t', max_running => 5);
SELECT jobq_enqueue('j', limit_group => 't', limit_key => 'A', run_at => now() - interval '2 s')
FROM generate_series(1, 3);
SELECT jobq_enqueue('j', limit_group => 't', limit_key => 'B', run_at => now() - interval '1 s')
FROM generate_series(1, 3);
SELECT is(pg_temp.keys_started(6), 'AAABBB', 'fifo: claim order');

-- weighted 2:1
SELECT jobq_set_limit('t', share => 'weighted');
SELECT jobq_set_weight('t', 'A', 2);
-- Both keys at one pass, so that the share holds from the first start (a new key would rejoin
-- one of its own starts ahead: B one start, A half a start).
UPDATE jobq_limit_keys SET pass = 3 WHERE limit_group = 't';
SELECT jobq_enqueue('j', limit_group => 't', limit_key => k, run_at => now() - interval '1 s')
FROM generate_series(1, 6), (VALUES ('A'), ('B')) AS v (k);
SELECT is((SELECT weight FROM jobq_limit_usage() WHERE limit_key = 'A'), 2::real,
          'jobq_limit_usage shows the weight');
SELECT is((SELECT weight FROM jobq_limit_usage() WHERE limit_key = 'B'), 1::real,
          'a key without one weighs 1');
SELECT is((SELECT count(*)::integer FROM regexp_matches(pg_temp.keys_started(9), 'A', 'g')), 6,
          'weighted 2:1: 6 of 9 starts to A');
DELETE FROM jobq_jobs;

-- A batch is shared, and a claim is never short while a key has work.
SELECT jobq_set_limit('t', share => 'round_robin');
SELECT jobq_enqueue('j', limit_group => 't', limit_key => k)
FROM generate_series(1, 20), (VALUES ('A'), ('B')) AS v (k);
SELECT results_eq(
    $$SELECT limit_key, count(*)::integer FROM jobq_dequeue('tap', NULL, 8) GROUP BY 1 ORDER BY 1$$,
    $$VALUES ('A'::text, 4), ('B'::text, 4)$$, 'a batch of 8 over two keys: 4 each');
DELETE FROM jobq_jobs WHERE limit_key = 'B';
SELECT is((SELECT count(*)::integer FROM jobq_dequeue('tap', NULL, 10)), 10,
          'one key left: the claim goes on turn after turn until its batch is full');

-- Caps stay exact: max_running 1 per key under round_robin.
DELETE FROM jobq_jobs;
SELECT jobq_set_limit('t', max_running => 1, share => 'round_robin');
SELECT jobq_enqueue('j', limit_group => 't', limit_key => k)
FROM generate_series(1, 5), (VALUES ('A'), ('B'), ('C')) AS v (k);
SELECT is((SELECT count(*)::integer FROM jobq_dequeue('tap', NULL, 10)), 3,
          'one per key, three keys: 3 of a batch of 10');
SELECT is((SELECT count(*)::integer FROM jobq_dequeue('tap', NULL, 10)), 0,
          'every key full: nothing more');

-- A higher priority goes first, whatever the passes.
DELETE FROM jobq_jobs;
UPDATE jobq_limit_keys SET pass = 100 WHERE limit_key = 'A';
SELECT jobq_set_limit('t', share => 'round_robin');
SELECT jobq_enqueue('j', limit_group => 't', limit_key => 'B') FROM generate_series(1, 3);
SELECT jobq_enqueue('j', priority => 9, limit_group => 't', limit_key => 'A');
SELECT is(pg_temp.keys_started(2), 'AB', 'A''s priority 9 before B, though A''s pass is ahead');

SELECT * FROM finish();
ROLLBACK;
