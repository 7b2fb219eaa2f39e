-- No function another role creates is chosen by a jobq function's call of another jobq
-- function or helper, nor makes that call fail as ambiguous (docs/security.md).
--
-- The functions call each other unqualified through their pinned search_path (<schema>,
-- pg_temp), and PostgreSQL chooses among every function of that name in the schema the one
-- whose parameter types fit the arguments best. A call therefore resolves exactly only when
-- it gives every argument (a call that leaves one to its DEFAULT also matches a look-alike
-- without that parameter) and each argument has the exact type of its parameter (a bare NULL
-- or an untyped literal prefers a text parameter over text[]; 'done' prefers text over name
-- only by a rule of preference). docs/decisions/0001-typed-internal-calls.md has the reasons.
--
-- A role with CREATE on the schema (not the owner of jobq) plants, for every jobq function,
-- public and private: each parameter's type swapped to text, integer, name, text[] and
-- integer[] (keeping the parameter names, so that named calls are tried too); each prefix
-- that a call relying on DEFAULTs would match, without defaults; and VARIADIC text[],
-- integer[] and anycompatiblearray forms. Each records that it ran in a sequence, which a
-- rollback does not undo. Then the whole SQL lifecycle runs, every statement of it written
-- with exact types itself, and nothing planted may have run or made a call ambiguous.
--
-- What no call form avoids, and so is not planted: a function with the same parameter types
-- plus a trailing parameter with a DEFAULT makes any call ambiguous. jobq doctor and jobq
-- migrate refuse a schema in which another role may CREATE (tests/python/test_privileges.py).
BEGIN;
SELECT plan(48);

DELETE FROM jobq_jobs;

CREATE ROLE t_planter;
GRANT CREATE, USAGE ON SCHEMA public TO t_planter;

SET ROLE t_planter;
CREATE SEQUENCE public.lookalike_runs;
GRANT USAGE ON SEQUENCE public.lookalike_runs TO PUBLIC;
CREATE TABLE public.lookalike_log (fn text);
GRANT INSERT ON public.lookalike_log TO PUBLIC;
RESET ROLE;

------------------------------------------------------------------------------------------
-- The look-alikes
------------------------------------------------------------------------------------------

CREATE TEMP TABLE originals AS
SELECT
    p.proname::text AS name,
    ARRAY(
        SELECT u.t::regtype::text
        FROM pg_catalog.unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u (t, i) ORDER BY u.i
    ) AS types,
    -- the names of the input parameters, as "name " (proargnames lists OUT columns after them)
    ARRAY(
        SELECT coalesce(pg_catalog.quote_ident(nullif(p.proargnames[i], '')) || ' ', '')
        FROM generate_series(1, p.pronargs) AS i ORDER BY i
    ) AS names,
    p.pronargs AS nargs,
    p.pronargdefaults AS ndefaults,
    pg_catalog.pg_get_function_result(p.oid) AS result,
    p.proretset OR p.prorettype = 'void'::regtype
    OR pg_catalog.pg_get_function_result(p.oid) LIKE 'TABLE(%' AS returns_bare
FROM pg_proc AS p
WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'jobq%'
  -- a trigger function is run by its trigger, by oid, never called by name
  AND p.prorettype <> 'trigger'::regtype;

-- (function, parameter list) of every look-alike
CREATE TEMP TABLE lookalikes AS
-- one parameter's type swapped
SELECT o.name, o.result, o.returns_bare, (
    SELECT pg_catalog.string_agg(
        o.names[i] || CASE WHEN i = s.pos THEN t.swap ELSE o.types[i] END, ', ' ORDER BY i
    )
    FROM generate_series(1, o.nargs) AS i
) AS params
FROM originals AS o
CROSS JOIN LATERAL generate_series(1, o.nargs) AS s (pos)
CROSS JOIN (VALUES ('text'), ('integer'), ('name'), ('text[]'), ('integer[]')) AS t (swap)
WHERE o.types[s.pos] <> t.swap
UNION ALL
-- what a call that leaves trailing arguments to their DEFAULTs matches, without defaults
SELECT o.name, o.result, o.returns_bare, coalesce((
    SELECT pg_catalog.string_agg(o.names[i] || o.types[i], ', ' ORDER BY i)
    FROM generate_series(1, k.n) AS i
), '')
FROM originals AS o
CROSS JOIN LATERAL generate_series(o.nargs - o.ndefaults, o.nargs - 1) AS k (n)
UNION ALL
SELECT o.name, o.result, o.returns_bare, v.params
FROM originals AS o
CROSS JOIN (VALUES ('VARIADIC text[]'), ('VARIADIC integer[]'), ('VARIADIC anycompatiblearray'))
    AS v (params);

GRANT SELECT ON lookalikes TO t_planter;
SET ROLE t_planter;
DO $do$
DECLARE
    v_row record;
BEGIN
    FOR v_row IN SELECT * FROM lookalikes LOOP
        BEGIN
            EXECUTE pg_catalog.format(
                $f$CREATE FUNCTION public.%I(%s) RETURNS %s LANGUAGE plpgsql AS $b$
                BEGIN
                    PERFORM pg_catalog.nextval('public.lookalike_runs'::regclass);
                    INSERT INTO public.lookalike_log VALUES (%L);
                    RETURN %s;
                END;
                $b$
                $f$,
                v_row.name, v_row.params, v_row.result,
                v_row.name || '(' || v_row.params || ')',
                CASE WHEN v_row.returns_bare THEN '' ELSE 'NULL' END
            );
        EXCEPTION WHEN duplicate_function THEN
            NULL;  -- the same parameter types as jobq's own function, or as another look-alike
        END;
    END LOOP;
END;
$do$;
RESET ROLE;

SELECT cmp_ok(
    (SELECT pg_catalog.count(*)::integer FROM pg_proc AS p
     WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'jobq%'
       AND p.proowner = 't_planter'::regrole),
    '>', 500,
    'the planter created look-alikes of every jobq function'
);
SELECT is(
    (SELECT pg_catalog.count(*)::integer FROM originals AS o
     WHERE NOT EXISTS (
         SELECT FROM pg_proc AS p
         WHERE p.proname = o.name AND p.proowner = 't_planter'::regrole
     )),
    0,
    'each jobq function, public and private, has look-alikes'
);
-- The look-alikes make a call that relies on a DEFAULT, or that gives a bare NULL, resolve to
-- something else than jobq's function: these calls show that they are in place.
SELECT throws_ok('SELECT jobq__statuses()', '42725', NULL,
                 'a call that leaves an argument to its DEFAULT is now ambiguous');
SELECT jobq__metrics_count('x'::text, '{}'::text[], '{}'::text[], NULL, NULL::float8[]);
SELECT is(
    (SELECT pg_catalog.string_agg(fn, ', ') FROM public.lookalike_log),
    'jobq__metrics_count(kind text, queues text[], job_types text[], statuses text, '
    || 'seconds double precision[])',
    'and one that gives a bare NULL runs a look-alike'
);
DELETE FROM public.lookalike_log;
SELECT pg_catalog.setval('public.lookalike_runs', 1, FALSE) AS reset \gset
SELECT is((SELECT is_called FROM public.lookalike_runs), FALSE, '(the record starts empty)');

------------------------------------------------------------------------------------------
-- Static: every call in every PL/pgSQL body, branches that the lifecycle below does not take
-- included, resolves to jobq's own function (plpgsql_check prepares each statement, as the
-- function's first call would, and lists the functions it resolved to)
------------------------------------------------------------------------------------------

CREATE TEMP TABLE resolved (fn text, dep text, planted boolean, problem text);
DO $do$
DECLARE
    v_fn regprocedure;
BEGIN
    FOR v_fn IN
        SELECT p.oid FROM pg_proc AS p
        WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'jobq%'
          AND p.prolang = (SELECT l.oid FROM pg_language AS l WHERE l.lanname = 'plpgsql')
          AND p.proowner <> 't_planter'::regrole
    LOOP
        INSERT INTO resolved VALUES (v_fn::text, NULL, NULL, NULL);  -- checked
        BEGIN
            INSERT INTO resolved
            SELECT v_fn::text, d.name || d.params, f.proowner = 't_planter'::regrole, NULL
            -- a trigger function is checked against the table of its trigger
            FROM plpgsql_show_dependency_tb(
                v_fn,
                relid => coalesce(
                    (SELECT t.tgrelid FROM pg_trigger AS t WHERE t.tgfoid = v_fn LIMIT 1), 0
                )
            ) AS d
            INNER JOIN pg_proc AS f ON f.oid = d.oid
            WHERE d.type = 'FUNCTION';
        EXCEPTION WHEN OTHERS THEN
            INSERT INTO resolved VALUES (v_fn::text, NULL, NULL, SQLERRM);
        END;
    END LOOP;
END;
$do$;

SELECT cmp_ok((SELECT pg_catalog.count(DISTINCT fn)::integer FROM resolved), '>=', 40,
              'every PL/pgSQL body is checked');
SELECT cmp_ok((SELECT pg_catalog.count(*)::integer FROM resolved WHERE dep LIKE 'jobq%'), '>=', 80,
              'and its calls of jobq functions are found');
SELECT is_empty($$SELECT fn, problem FROM resolved WHERE problem IS NOT NULL$$,
                'no call in a PL/pgSQL body is ambiguous');
SELECT is_empty($$SELECT fn, dep FROM resolved WHERE planted$$,
                'no call in a PL/pgSQL body resolves to a look-alike');

------------------------------------------------------------------------------------------
-- The lifecycle, every call written with exact types
------------------------------------------------------------------------------------------

SELECT lives_ok($$SELECT jobq_configure(NULL::integer, TRUE, NULL::integer)$$, 'configure: metrics on');
SELECT lives_ok(
    $$SELECT jobq_set_limit('lg'::text, 1, NULL::integer, NULL::interval, NULL::text)$$, 'set_limit'
);
SELECT lives_ok($$
    CREATE TEMP TABLE ids AS
    SELECT 'one'::text AS what,
           jobq_enqueue('a'::text, '{"n": 1}'::jsonb, 'k1'::text, 2, NULL::timestamptz, 0,
                        'default'::text, NULL::text, NULL::text, NULL::uuid[], 'cancel'::text) AS id
$$, 'enqueue');
SELECT lives_ok($$
    INSERT INTO ids
    SELECT 'many', e.id FROM jobq_enqueue_many(
        '[{"job_type": "a"}, {"job_type": "a", "payload": {"n": 2}},
          {"job_type": "b", "limit_group": "lg", "limit_key": "x"},
          {"job_type": "b", "limit_group": "lg", "limit_key": "x"}]'::jsonb
    ) AS e
$$, 'enqueue_many');
SELECT lives_ok($$
    INSERT INTO ids
    SELECT 'arrays', e.id FROM jobq_enqueue_arrays(
        ARRAY['a', 'a', 'a']::text[], ARRAY['{}', '{"m": 1}', '{}']::jsonb[],
        ARRAY[NULL, 'k2', NULL]::text[], ARRAY[3, 3, 3]::integer[],
        NULL::timestamptz[], ARRAY[0, 1, 2]::integer[], ARRAY['default', 'q2', 'default']::text[],
        ARRAY[NULL, 'lg', NULL]::text[], ARRAY[NULL, 'y', NULL]::text[]
    ) AS e
$$, 'enqueue_arrays');
SELECT is((SELECT pg_catalog.count(*)::integer FROM jobq_jobs), 8, '8 jobs enqueued');

SELECT lives_ok($$
    CREATE TEMP TABLE claimed AS
    SELECT d.id, d.attempts FROM jobq_dequeue('w1'::text, ARRAY['a']::text[], 4, '5 minutes'::interval,
                                              NULL::text[]) AS d
$$, 'dequeue');
SELECT lives_ok($$
    INSERT INTO claimed
    SELECT d.id, d.attempts FROM jobq_dequeue('w1'::text, ARRAY['b']::text[], 2, '5 minutes'::interval,
                                              NULL::text[]) AS d
$$, 'dequeue of limited jobs');
SELECT is((SELECT pg_catalog.count(*)::integer FROM claimed), 5, '5 claimed (1 limited)');

SELECT lives_ok(
    $$SELECT jobq_heartbeat('w1'::text, ARRAY(SELECT id FROM claimed))$$, 'heartbeat'
);
SELECT lives_ok(
    $$SELECT * FROM jobq_cancel_requested(ARRAY(SELECT id FROM claimed))$$, 'cancel_requested'
);
SELECT lives_ok($$
    SELECT jobq_complete(c.id, 'w1'::text, c.attempts, '{"ok": true}'::jsonb)
    FROM (SELECT * FROM claimed ORDER BY id LIMIT 1) AS c
$$, 'complete');
SELECT lives_ok($$
    SELECT jobq_complete_many(ARRAY(SELECT id FROM claimed ORDER BY id OFFSET 1 LIMIT 1), 'w1'::text,
                              NULL::integer[], ARRAY['{"r": 1}']::jsonb[])
$$, 'complete_many');
SELECT lives_ok($$
    SELECT jobq_fail(c.id, 'w1'::text, 'boom'::text, TRUE, '0'::interval, c.attempts)
    FROM (SELECT * FROM claimed ORDER BY id OFFSET 2 LIMIT 1) AS c
$$, 'fail');
SELECT lives_ok($$
    SELECT * FROM jobq_fail_many(ARRAY(SELECT id FROM claimed ORDER BY id OFFSET 3 LIMIT 1),
                                 'w1'::text, ARRAY['bad']::text[], ARRAY[FALSE]::boolean[],
                                 NULL::interval[], NULL::integer[])
$$, 'fail_many');
SELECT lives_ok($$
    SELECT jobq_release(ARRAY(SELECT id FROM claimed ORDER BY id OFFSET 4), 'w1'::text)
$$, 'release');

-- a stale claim taken over
SELECT lives_ok($$
    SELECT * FROM jobq_dequeue('w2'::text, NULL::text[], 10, '5 minutes'::interval, NULL::text[])
$$, 'dequeue again');
-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600) WHERE locked_by = 'w2';
SELECT lives_ok($$
    SELECT * FROM jobq_dequeue('w3'::text, NULL::text[], 10, '1 minute'::interval, NULL::text[])
$$, 'dequeue: stale takeover');
SELECT cmp_ok((SELECT pg_catalog.count(*)::integer FROM jobq_jobs
               WHERE errors @> '[{"kind": "lock_expired"}]'::jsonb), '>', 0,
              'the takeover happened');
SELECT lives_ok($$SELECT jobq_release_orphans('w3'::text, ARRAY[]::uuid[])$$, 'release_orphans');
SELECT lives_ok(
    $$SELECT * FROM jobq_cancel(ARRAY(SELECT id FROM ids), 'stop'::text)$$, 'cancel'
);
SELECT lives_ok($$SELECT * FROM jobq_await(ARRAY(SELECT id FROM ids), '0'::interval)$$, 'await');
SELECT lives_ok($$SELECT * FROM jobq_job_status(ARRAY(SELECT id FROM ids))$$, 'job_status');
SELECT lives_ok($$
    SELECT jobq_requeue_dead_letter(j.id)
    FROM (SELECT id FROM jobq_jobs WHERE status = 'cancelled' ORDER BY id LIMIT 1) AS j
$$, 'requeue_dead_letter');
SELECT lives_ok($$SELECT jobq_requeue_dead_letters('a'::text, NULL::text, FALSE, NULL::text)$$, 'requeue_dead_letters');

SELECT lives_ok($$
    SELECT jobq_schedule('s1'::text, '* * * * *'::text, 'c'::text, '{}'::jsonb, 'UTC'::text,
                         'default'::text, 0, 5, 'latest'::text, FALSE)
$$, 'schedule');
UPDATE jobq_schedules SET next_run_at = pg_catalog.now() - interval '90 seconds';
SELECT lives_ok($$SELECT * FROM jobq_tick()$$, 'tick');
SELECT is((SELECT pg_catalog.count(*)::integer FROM jobq_jobs WHERE job_type = 'c'), 1,
          'the tick enqueued a job');
SELECT lives_ok($$SELECT * FROM jobq_schedules()$$, 'schedules');
SELECT lives_ok($$SELECT jobq_schedule_run_now('s1'::text)$$, 'schedule_run_now');
SELECT lives_ok($$SELECT jobq_unschedule('s1'::text)$$, 'unschedule');

SELECT lives_ok($$SELECT * FROM jobq_metrics()$$, 'metrics');
SELECT lives_ok($$SELECT jobq_metrics_recount()$$, 'metrics_recount');
SELECT lives_ok($$SELECT * FROM jobq_health('1 hour'::interval, '15 minutes'::interval,
                                            '5 minutes'::interval)$$, 'health');
SELECT lives_ok($$
    SELECT jobq_stats(), (SELECT pg_catalog.count(*) FROM jobq_queue_summary('5 minutes'::interval)),
           (SELECT pg_catalog.count(*) FROM jobq_limit_usage()),
           (SELECT pg_catalog.count(*) FROM jobq_limits()),
           (SELECT pg_catalog.count(*) FROM jobq_unserved_job_types('1 minute'::interval)),
           (SELECT pg_catalog.count(*) FROM jobq_jobs_page('cancelled'::text, NULL::text, NULL::text,
                                                           NULL::timestamptz, NULL::uuid, 50, 10000)),
           (SELECT pg_catalog.count(*) FROM jobq_list_jobs(NULL::text[], NULL::text, NULL::text, 100)),
           (SELECT pg_catalog.count(*) FROM jobq_get_job((SELECT id FROM ids LIMIT 1)))
$$, 'the dashboard''s summaries and reads');
SELECT lives_ok($$SELECT jobq_prune('0'::interval, ARRAY['succeeded', 'failed', 'cancelled',
                                                         'dead_letter']::text[], NULL::integer)$$,
                'prune');
SELECT lives_ok($$SELECT jobq_prune('0'::interval, ARRAY['succeeded']::text[], 10)$$,
                'prune in batches');

------------------------------------------------------------------------------------------
-- Nothing planted ran
------------------------------------------------------------------------------------------

SELECT is(
    (SELECT pg_catalog.string_agg(DISTINCT fn, ', ') FROM public.lookalike_log), NULL,
    'no look-alike ran'
);
SELECT is(
    (SELECT is_called FROM public.lookalike_runs), FALSE,
    'no look-alike ran, not even in a statement that was rolled back'
);

SELECT * FROM finish();
ROLLBACK;
