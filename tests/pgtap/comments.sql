-- Comments, checked in the catalogue (contract section 1: every function has a COMMENT ON
-- FUNCTION that says what it does, its arguments and its result; STYLE: tables too).
-- "Its arguments" is checked mechanically: the comment names each input argument.
BEGIN;
SELECT plan(5);

SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace
        AND coalesce(btrim(obj_description(p.oid, 'pg_proc')), '') = ''$$,
    'every jobq function (private helpers included) has a non-empty COMMENT'
);

SELECT is_empty(
    $$SELECT format('%s: %s', p.proname, a.name)
      FROM pg_proc AS p
      CROSS JOIN LATERAL unnest(p.proargnames, coalesce(p.proargmodes, array_fill('i'::"char",
                                ARRAY[cardinality(p.proargnames)]))) AS a (name, mode)
      WHERE p.pronamespace = 'public'::regnamespace AND p.proname NOT LIKE 'jobq\_\_%'
        AND a.mode IN ('i', 'b', 'v')   -- input arguments, not the columns of RETURNS TABLE
        AND strpos(obj_description(p.oid, 'pg_proc'), a.name) = 0$$,
    'the comment of every public function names each of its arguments'
);

SELECT is_empty(
    $$SELECT p.proname FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace AND p.proname NOT LIKE 'jobq\_\_%'
        AND length(obj_description(p.oid, 'pg_proc')) < 80$$,
    'no public function has a token comment (under 80 characters)'
);

SELECT is_empty(
    $$SELECT p.proname FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'jobq\_\_%'
        AND obj_description(p.oid, 'pg_proc') NOT LIKE 'Private.%'$$,
    'the comment of each private helper starts with "Private."'
);

SELECT is_empty(
    $$SELECT c.relname FROM pg_class AS c
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
        AND coalesce(btrim(obj_description(c.oid, 'pg_class')), '') = ''$$,
    'every jobq table (jobq_jobs, jobq_settings, jobq_migrations) has a non-empty COMMENT'
);

SELECT * FROM finish();
ROLLBACK;
