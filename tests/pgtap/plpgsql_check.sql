-- plpgsql_check over every PL/pgSQL function of jobq (STYLE: sqlfluff cannot see inside
-- function bodies). plpgsql_check is installed in schema tap by scripts/pgtap.sh.
-- The LANGUAGE sql functions (jobq__job_error, jobq__retry_at, jobq_stats) are checked by
-- PostgreSQL itself when they are created, and are exercised by the other files. A trigger
-- function is checked against the table of its trigger (relid).
BEGIN;
SELECT plan(3);

SELECT cmp_ok(
    (SELECT count(*)::int FROM pg_proc
     WHERE pronamespace = 'public'::regnamespace AND prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')),
    '>=', 12,
    'the PL/pgSQL functions of jobq are found (the check below is not vacuous)'
);

SELECT is_empty(
    $$SELECT p.oid::regprocedure, c.lineno, c.level, c.sqlstate, c.message, c.detail
      FROM pg_proc AS p
      CROSS JOIN LATERAL plpgsql_check_function_tb(
          p.oid, relid => coalesce((SELECT t.tgrelid FROM pg_trigger AS t WHERE t.tgfoid = p.oid LIMIT 1), 0),
          extra_warnings => true, performance_warnings => true) AS c
      WHERE p.pronamespace = 'public'::regnamespace
        AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')$$,
    'plpgsql_check (errors, extra and performance warnings): nothing to report'
);

SELECT is_empty(
    $$SELECT p.oid::regprocedure, c.lineno, c.level, c.sqlstate, c.message, c.detail
      FROM pg_proc AS p
      CROSS JOIN LATERAL plpgsql_check_function_tb(
          p.oid, relid => coalesce((SELECT t.tgrelid FROM pg_trigger AS t WHERE t.tgfoid = p.oid LIMIT 1), 0),
          security_warnings => true) AS c
      WHERE p.pronamespace = 'public'::regnamespace
        AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')$$,
    'plpgsql_check security warnings (SQL injection in dynamic SQL): nothing to report'
);

SELECT * FROM finish();
ROLLBACK;
