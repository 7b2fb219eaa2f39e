-- jobq_capped_groups() RETURNS TABLE(limit_group text)
--
-- The limit groups with a max_running cap, by name: those whose completions free a slot a
-- claim can take. A group with a rate limit alone or a share alone is not one, nor is a group
-- whose cap was removed. Who may call it is in privileges.sql and test_privileges.py.
BEGIN;
SELECT plan(4);

DELETE FROM jobq_limits;

SELECT is_empty($$SELECT * FROM jobq_capped_groups()$$, 'no limits: no capped group');

SELECT jobq_set_limit('serial', max_running => 1);
SELECT jobq_set_limit('pair', max_running => 2, max_starts => 10, per => '1 minute');
SELECT jobq_set_limit('rate', max_starts => 10, per => '1 minute');
SELECT jobq_set_limit('fair', share => 'round_robin');
SELECT jobq_set_limit('gone', max_running => 3);
SELECT jobq_set_limit('gone');

SELECT results_eq(
    $$SELECT limit_group FROM jobq_capped_groups()$$,
    $$VALUES ('pair'::text), ('serial'::text)$$,
    'the groups with max_running, by name; rate alone, share alone and a removed cap are not'
);

SELECT jobq_set_limit('fair', max_running => 1, share => 'round_robin');
SELECT results_eq(
    $$SELECT limit_group FROM jobq_capped_groups()$$,
    $$VALUES ('fair'::text), ('pair'::text), ('serial'::text)$$,
    'a cap set on a sharing group makes it capped at once'
);

SELECT is(
    (SELECT pg_catalog.count(*)::int FROM jobq_limits),
    4,
    'reading the capped groups changes nothing'
);

SELECT * FROM finish();
ROLLBACK;
