-- jobq_configure(max_payload_bytes int DEFAULT NULL, metrics boolean DEFAULT NULL) RETURNS jsonb
--
-- Changes the settings of this installation (NULL leaves a setting
-- as it is) and returns them all; max_payload_bytes is the payload limit of jobq_enqueue and
-- jobq_enqueue_many (54000 beyond it); < 1 is refused with 22023. That only admins may call
-- it is checked in privileges.sql.
BEGIN;
SELECT plan(23);

DELETE FROM jobq_jobs;

SELECT is(jobq_configure(), '{"max_payload_bytes": 1048576, "metrics": false, "metrics_label_sets": 1000}'::jsonb,
          'no argument: changes nothing, returns the settings (default limit 1 MiB, metrics off)');
SELECT is(jobq_configure(max_payload_bytes => NULL), '{"max_payload_bytes": 1048576, "metrics": false, "metrics_label_sets": 1000}'::jsonb,
          'NULL leaves the setting as it is');
SELECT set_eq(
    'SELECT jsonb_object_keys(jobq_configure())',
    $$SELECT attname::text FROM pg_attribute
      WHERE attrelid = 'jobq_settings'::regclass AND attnum > 0 AND NOT attisdropped
        AND attname NOT IN ('singleton', 'lock_seed')$$,
    'the result names every setting of jobq_settings'
);
SELECT ok(NOT jobq_configure() ? 'lock_seed'
          AND strpos(jobq_configure()::text, (SELECT lock_seed::text FROM jobq_settings)) = 0,
          'the secret lock_seed is not a setting and never returned');

------------------------------------------------------------------------------------------
-- Bad input
------------------------------------------------------------------------------------------

SELECT throws_ok($$SELECT jobq_configure(max_payload_bytes => 0)$$, '22023',
    'jobq_configure: max_payload_bytes must be at least 1, got 0', 'max_payload_bytes 0: 22023');
SELECT throws_ok($$SELECT jobq_configure(-1)$$, '22023',
    'jobq_configure: max_payload_bytes must be at least 1, got -1', 'max_payload_bytes negative: 22023');
SELECT throws_ok($$SELECT jobq_configure(metrics_label_sets => -1)$$, '22023',
    'jobq_configure: metrics_label_sets must be between 0 and 1000000, got -1',
    'metrics_label_sets negative: 22023');
SELECT throws_ok($$SELECT jobq_configure(metrics_label_sets => 1000001)$$, '22023',
    'jobq_configure: metrics_label_sets must be between 0 and 1000000, got 1000001',
    'metrics_label_sets over 1,000,000: 22023');
SELECT is((SELECT max_payload_bytes FROM jobq_settings), 1048576, 'the setting is unchanged');
SELECT is((SELECT metrics_label_sets FROM jobq_settings), 1000, 'the label-set bound is unchanged');
SELECT is(jobq_configure(metrics_label_sets => 5) ->> 'metrics_label_sets', '5',
          'metrics_label_sets is set and returned');
SELECT is(jobq_configure(metrics_label_sets => 1000) ->> 'metrics_label_sets', '1000',
          '... and set back');

------------------------------------------------------------------------------------------
-- The limit applies to enqueue and enqueue_many, to the byte
------------------------------------------------------------------------------------------

-- a payload of exactly N bytes, and one of N + 1 (one more character in the string)
SELECT octet_length('{"s": "xxxxxxxxxx"}'::jsonb::text) AS n,
       octet_length('{"s": "xxxxxxxxxxx"}'::jsonb::text) AS n_plus_1 \gset

SELECT is(jobq_configure(max_payload_bytes => :n),
          jsonb_build_object('max_payload_bytes', :n, 'metrics', false, 'metrics_label_sets', 1000),
          'the limit is changed and the new settings returned');
SELECT is((SELECT max_payload_bytes FROM jobq_settings), :n, '... and stored in jobq_settings');

SELECT lives_ok($$SELECT jobq_enqueue('t', '{"s": "xxxxxxxxxx"}')$$,
                'enqueue: a payload of exactly the limit is accepted');
SELECT throws_ok($$SELECT jobq_enqueue('t', '{"s": "xxxxxxxxxxx"}')$$, '54000',
    format('jobq_enqueue: payload is %s bytes, the limit is %s bytes', :n_plus_1, :n),
    'enqueue: one byte over the new limit: 54000');
SELECT lives_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "t", "payload": {"s": "xxxxxxxxxx"}}]')$$,
                'enqueue_many: a payload of exactly the limit is accepted');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "t", "payload": {"s": "xxxxxxxxxxx"}}]')$$,
    '54000',
    format('jobq_enqueue_many: jobs element 1 (counting from 1): payload is %s bytes, the limit is %s bytes',
           :n_plus_1, :n),
    'enqueue_many: one byte over the new limit: 54000');
SELECT is((SELECT count(*)::int FROM jobq_jobs), 2, 'only the two payloads within the limit were enqueued');

SELECT is(jobq_configure(1), '{"max_payload_bytes": 1, "metrics": false, "metrics_label_sets": 1000}'::jsonb, 'the smallest limit, 1 byte, is accepted');
SELECT throws_ok($$SELECT jobq_enqueue('t')$$, '54000', NULL, '... then even {} is too large');

SELECT is(jobq_configure(2000000), '{"max_payload_bytes": 2000000, "metrics": false, "metrics_label_sets": 1000}'::jsonb, 'the limit can be raised');
SELECT lives_ok($$SELECT jobq_enqueue('t', jsonb_build_object('blob', repeat('x', 1100000)))$$,
                '... a payload over the default 1 MiB is accepted then');

SELECT * FROM finish();
ROLLBACK;
