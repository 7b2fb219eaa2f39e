-- Nothing another role creates is ever run by a jobq function.
--
-- The functions run as their owner with search_path = <schema>, pg_temp. pg_catalog is
-- searched first, but PostgreSQL chooses, among all the functions of that name on the path,
-- the one whose argument types match best: a function public.pg_column_size(jsonb) beats
-- pg_catalog.pg_column_size("any") for a jsonb argument, and so on for every built-in whose
-- parameters are "any", polymorphic or need a coercion. A call written pg_catalog.name(...)
-- looks in pg_catalog only.
--
--  1. Static: the source of every jobq function calls no pg_catalog function without naming
--     the schema (comments and string literals aside; EXTRACT(field FROM x) is SQL syntax that
--     the parser itself turns into pg_catalog.extract).
--  2. The finding that started it: a role that may CREATE in the jobq schema plants
--     public.pg_column_size(jsonb); jobq_enqueue, called by a producer, never runs it (it ran
--     as the owner of jobq, a superuser here, and returning 0 switched the payload limit off).
--     The same for public.octet_length(text), which measures the payload now.
--
-- tests/python/test_shadowing.py plants an exact-type look-alike of every built-in call the
-- functions make and runs every core operation.
BEGIN;
SELECT plan(7);

DELETE FROM jobq_jobs;

------------------------------------------------------------------------------------------
-- 1. Static check of pg_proc.prosrc
------------------------------------------------------------------------------------------

CREATE TEMP VIEW jobq_builtin_calls AS
WITH src AS (
    SELECT
        p.oid::regprocedure AS fn,
        -- comments, string literals and quoted identifiers become blanks
        regexp_replace(p.prosrc, $re$--[^\n]*|'(?:[^']|'')*'|"(?:[^"]|"")*"$re$, ' ', 'g') AS body
    FROM pg_proc AS p
    WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'jobq%'
),

calls AS (
    -- name( not preceded by a dot (a qualified name) or by part of an identifier
    SELECT s.fn, lower(m[1]) AS name, m[2] IS NOT NULL AS field_from
    FROM src AS s
    CROSS JOIN LATERAL regexp_matches(
        s.body, '(?<![.\w$])([a-z_][a-z0-9_$]*)\s*\((\s*[a-z]+\s+from\M)?', 'gi'
    ) AS m
)

SELECT c.fn, c.name
FROM calls AS c
WHERE NOT (c.name = 'extract' AND c.field_from)
  AND EXISTS (
      SELECT 1 FROM pg_proc AS b
      WHERE b.pronamespace = 'pg_catalog'::regnamespace AND b.proname = c.name
  );

SELECT cmp_ok(
    (SELECT count(*)::int FROM pg_proc
     WHERE pronamespace = 'public'::regnamespace AND proname LIKE 'jobq%'),
    '>=', 17,
    'the jobq functions are found (the check below is not vacuous)'
);
SELECT is_empty(
    'SELECT DISTINCT fn::text, name FROM jobq_builtin_calls ORDER BY 1, 2',
    'no jobq function calls a pg_catalog function without pg_catalog.'
);

-- The check itself finds an unqualified call, and only that.
CREATE FUNCTION public.jobq_zz_probe(payload jsonb) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    -- pg_column_size(payload) in a comment, and 'length(x)' in a string, are not calls
    RAISE NOTICE '%', 'length(x)';
    RETURN pg_catalog.length('x') + extract(epoch FROM pg_catalog.now())::integer
        + pg_column_size(payload);
END;
$$;
SELECT is(
    (SELECT pg_catalog.string_agg(fn::text || ' calls ' || name, ', ')
     FROM jobq_builtin_calls WHERE fn::text LIKE 'jobq_zz_probe%'),
    'jobq_zz_probe(jsonb) calls pg_column_size',
    'the check finds an unqualified call, and nothing in comments, strings or EXTRACT syntax'
);
DROP FUNCTION public.jobq_zz_probe(jsonb);

------------------------------------------------------------------------------------------
-- 2. public.pg_column_size(jsonb), planted by a role that may CREATE in the schema
------------------------------------------------------------------------------------------

CREATE ROLE t_mallory;
CREATE ROLE t_producer;
GRANT CREATE, USAGE ON SCHEMA public TO t_mallory;   -- PostgreSQL 13/14 default, or a db owner
GRANT USAGE ON SCHEMA public TO t_producer;
GRANT EXECUTE ON FUNCTION
    jobq_enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, text, uuid[], text)
TO t_producer;
-- what pgTAP itself needs, as the producer
GRANT USAGE ON SCHEMA tap TO t_producer;
GRANT ALL ON TABLE __tcache__ TO t_producer;
GRANT ALL ON SEQUENCE __tcache___id_seq, __tresults___numb_seq TO t_producer;

SET ROLE t_mallory;
CREATE TABLE public.shadow_calls (fn text, run_as text);
GRANT INSERT ON public.shadow_calls TO PUBLIC;
-- A shadowing function could run ALTER ROLE ... SUPERUSER when its caller is a superuser;
-- this one records who ran it and reports every payload as 0 bytes.
CREATE FUNCTION public.pg_column_size(jsonb) RETURNS integer
LANGUAGE sql AS $$
    INSERT INTO public.shadow_calls VALUES ('pg_column_size(jsonb)', current_user) RETURNING 0
$$;
CREATE FUNCTION public.octet_length(text) RETURNS integer
LANGUAGE sql AS $$
    INSERT INTO public.shadow_calls VALUES ('octet_length(text)', current_user) RETURNING 0
$$;
RESET ROLE;

SELECT jobq_configure(max_payload_bytes => 100) AS configured \gset

SET ROLE t_producer;
SELECT jobq_enqueue('small', '{"a": 1}') AS small \gset
RESET ROLE;
SELECT is_empty(
    'SELECT * FROM public.shadow_calls',
    'jobq_enqueue runs neither public.pg_column_size(jsonb) nor public.octet_length(text)'
);
SELECT ok(:'small' IS NOT NULL, 'and it enqueued the job');

SET ROLE t_producer;
SELECT throws_ok(
    $$SELECT jobq_enqueue('big', pg_catalog.jsonb_build_object('s', pg_catalog.repeat('x', 200)))$$,
    '54000', NULL,
    'the look-alike does not switch the payload limit off'
);
RESET ROLE;
SELECT is(
    (SELECT pg_catalog.count(*)::int FROM jobq_jobs WHERE job_type = 'big'), 0,
    'the oversized job was not added'
);

SELECT * FROM finish();
ROLLBACK;
