-- Roles and privileges.
--
--  1. Nothing is granted to PUBLIC on the jobq tables and functions; the private helpers are
--     granted to nobody; a fresh role with no grant can do nothing.
--  2. The three roles of `jobq grant`, applied here by hand as docs/security.md defines them:
--     producer (tp), worker (tw), admin (ta). Each may do exactly its part; anything else
--     fails with 42501 and changes nothing. A role with USAGE only (tn) cannot enqueue.
--  3. A caller's search_path or own objects (a schema placed first, a temp table named like
--     a jobq table) never redirect a jobq function.
--  4. The monitor level (tm) sees no payload, result or error text through any function it may
--     call, and jobq_job_status is denied to it; jobq_jobs_page's last_error follows the role
--     the session acts as (SET ROLE), not its login role.
--
-- The roles are created inside this transaction and vanish with its ROLLBACK. pgTAP runs as
-- the current role, so each test role gets USAGE on schema tap and the use of pgTAP's
-- temporary tables of this session.
BEGIN;
SELECT plan(109);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

------------------------------------------------------------------------------------------
-- 1. Nothing for PUBLIC, helpers for nobody
------------------------------------------------------------------------------------------

SELECT is_empty(
    $$SELECT c.relname FROM pg_class AS c CROSS JOIN LATERAL aclexplode(c.relacl) AS a
      WHERE c.relnamespace = 'public'::regnamespace AND c.relname LIKE 'jobq%' AND a.grantee = 0$$,
    'no privilege on any jobq table is granted to PUBLIC'
);
SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace
        AND (p.proacl IS NULL   -- a NULL ACL means the default: EXECUTE for PUBLIC
             OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) AS a WHERE a.grantee = 0))$$,
    'EXECUTE on every jobq function is revoked from PUBLIC (explicit ACL, no PUBLIC entry)'
);
SELECT is_empty(
    $$SELECT routine_name FROM information_schema.routine_privileges
      WHERE routine_schema = 'public' AND grantee = 'PUBLIC'$$,
    'information_schema agrees: no routine privilege for PUBLIC'
);
SELECT is_empty(
    $$SELECT p.proname, a.grantee::regrole FROM pg_proc AS p CROSS JOIN LATERAL aclexplode(p.proacl) AS a
      WHERE p.pronamespace = 'public'::regnamespace AND a.grantee <> p.proowner$$,
    'after migrating, no function is granted to anyone but its owner'
);

CREATE ROLE t_nobody;
SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace
        AND has_function_privilege('t_nobody', p.oid, 'EXECUTE')$$,
    'a fresh role without grants can execute no jobq function'
);
SELECT is_empty(
    $$SELECT c.relname FROM pg_class AS c
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
        AND has_table_privilege('t_nobody', c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')$$,
    'a fresh role without grants has no privilege on any jobq table'
);

------------------------------------------------------------------------------------------
-- 2. producer, worker, admin: the grants of each level
------------------------------------------------------------------------------------------

CREATE ROLE tp;   -- producer
CREATE ROLE tw;   -- worker
CREATE ROLE ta;   -- admin
CREATE ROLE tn;   -- schema USAGE only

GRANT USAGE ON SCHEMA public TO tp, tw, ta, tn;

GRANT EXECUTE ON FUNCTION
    jobq_enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, text, uuid[], text),
    jobq_enqueue_many(jsonb),
    jobq_enqueue_arrays(
        text[], jsonb[], text[], integer[], timestamptz[], integer[], text[], text[], text[]
    ),
    jobq_cancel(uuid[], text),
    jobq_job_status(uuid[]),
    jobq_await(uuid[], interval)
TO tp, tw;

GRANT EXECUTE ON FUNCTION
    jobq_dequeue(text, text[], integer, interval, text[]),
    jobq_complete(uuid, text, integer, jsonb),
    jobq_complete_many(uuid[], text, integer[], jsonb[]),
    jobq_fail(uuid, text, text, boolean, interval, integer),
    jobq_fail_many(uuid[], text, text[], boolean[], interval[], integer[]),
    jobq_heartbeat(text, uuid[]),
    jobq_release(uuid[], text),
    jobq_release_orphans(text, uuid[]),
    jobq_cancel_requested(uuid[])
TO tw;

GRANT EXECUTE ON FUNCTION
    jobq_enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, text, uuid[], text),
    jobq_enqueue_many(jsonb),
    jobq_enqueue_arrays(
        text[], jsonb[], text[], integer[], timestamptz[], integer[], text[], text[], text[]
    ),
    jobq_dequeue(text, text[], integer, interval, text[]),
    jobq_complete(uuid, text, integer, jsonb),
    jobq_complete_many(uuid[], text, integer[], jsonb[]),
    jobq_fail(uuid, text, text, boolean, interval, integer),
    jobq_fail_many(uuid[], text, text[], boolean[], interval[], integer[]),
    jobq_heartbeat(text, uuid[]),
    jobq_release(uuid[], text),
    jobq_cancel(uuid[], text),
    jobq_cancel_requested(uuid[]),
    jobq_job_status(uuid[]),
    jobq_await(uuid[], interval),
    jobq_release_orphans(text, uuid[]),
    jobq_requeue_dead_letter(uuid),
    jobq_requeue_dead_letters(text, text, boolean, text),
    jobq_stats(),
    jobq_prune(interval, text[], integer),
    jobq_configure(integer, boolean, integer),
    jobq_metrics(),
    jobq_metrics_recount(),
    jobq_list_jobs(text[], text, text, integer),
    jobq_health(interval, interval, interval),
    jobq_set_limit(text, integer, integer, interval, text),
    jobq_limits(),
    jobq_limit_usage()
TO ta;
GRANT SELECT ON TABLE jobq_jobs, jobq_jobs_history, jobq_all_jobs, jobq_settings, jobq_migrations TO ta;

-- what pgTAP itself needs, as each role
GRANT USAGE ON SCHEMA tap TO tp, tw, ta, tn;
GRANT ALL ON TABLE __tcache__ TO tp, tw, ta, tn;
GRANT ALL ON SEQUENCE __tcache___id_seq, __tresults___numb_seq TO tp, tw, ta, tn;

SELECT jobq_enqueue('seed', '{"secret": "payload"}') AS seed \gset
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;
GRANT SELECT ON snap TO tp, tw, ta, tn;

-- producer ------------------------------------------------------------------------------
SET ROLE tp;
SELECT ok(jobq_enqueue('p') IS NOT NULL, 'producer: can enqueue');
SELECT is((SELECT count(*)::int FROM jobq_enqueue_many('[{"job_type": "p"}, {"job_type": "p"}]')), 2,
          'producer: can enqueue_many');
SELECT is((SELECT count(*)::int FROM jobq_enqueue_arrays(ARRAY['p', 'p'])), 2,
          'producer: can enqueue_arrays');
SELECT throws_ok($$SELECT * FROM jobq_dequeue('tp')$$, '42501',
    'permission denied for function jobq_dequeue', 'producer: cannot dequeue');
SELECT throws_ok($$SELECT * FROM jobq_jobs$$, '42501',
    'permission denied for table jobq_jobs', 'producer: cannot read jobs (nor their payloads)');
SELECT throws_ok($$SELECT jobq_configure(max_payload_bytes => 100000000)$$, '42501',
    'permission denied for function jobq_configure', 'producer: cannot configure (cannot raise its own limit)');
SELECT throws_ok($$UPDATE jobq_settings SET max_payload_bytes = 100000000$$, '42501',
    'permission denied for table jobq_settings', 'producer: cannot change the settings table');
SELECT throws_ok($$SELECT * FROM jobq_stats()$$, '42501', NULL, 'producer: cannot read stats');
SELECT throws_ok($$SELECT * FROM jobq_list_jobs()$$, '42501', NULL, 'producer: cannot list jobs');
SELECT throws_ok(format($$SELECT jobq_complete(%L, 'x')$$, :'seed'), '42501', NULL, 'producer: cannot complete');
SELECT throws_ok(format($$SELECT jobq_fail(%L, 'x', 'e')$$, :'seed'), '42501', NULL, 'producer: cannot fail');
SELECT throws_ok(format($$SELECT * FROM jobq_fail_many(ARRAY[%L]::uuid[], 'x', '{e}')$$, :'seed'), '42501', NULL,
    'producer: cannot fail_many');
SELECT throws_ok($$SELECT jobq_prune()$$, '42501', NULL, 'producer: cannot prune');
SELECT throws_ok($$SELECT jobq_release_orphans('x', '{}')$$, '42501', NULL,
    'producer: cannot release a worker''s claims');
SELECT throws_ok($$SELECT jobq__retry_at(now(), 1, '1 second')$$, '42501',
    'permission denied for function jobq__retry_at', 'producer: cannot call a private helper');
SELECT throws_ok(
    $$SELECT * FROM jobq__insert_jobs(ARRAY['p'], NULL::jsonb[], NULL::text[], NULL::integer[],
                                      NULL::timestamptz[], NULL::integer[], NULL::text[],
                                      NULL::text[], NULL::text[])$$,
    '42501', 'permission denied for function jobq__insert_jobs',
    'producer: cannot call the insert core of the batch enqueues (it skips their checks)');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type) VALUES ('direct')$$, '42501', NULL,
    'producer: cannot insert into jobq_jobs directly');
SELECT throws_ok($$SELECT jobq_set_limit('g', max_running => 100)$$, '42501',
    'permission denied for function jobq_set_limit', 'producer: cannot set a limit (nor lift one for itself)');
SELECT throws_ok($$SELECT * FROM jobq_limits()$$, '42501', NULL, 'producer: cannot read the limits');
RESET ROLE;
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE job_type = 'p'), 5, 'the producer''s 5 jobs are there');
SELECT results_eq(format('SELECT * FROM jobq_all_jobs WHERE id = %L', :'seed'), 'SELECT * FROM snap',
                  'the producer''s denied calls changed nothing');

-- a producer follows and cancels jobs (jobq_job_status, jobq_await,
-- jobq_cancel), but cannot ask which running jobs must stop (a worker's question)
SET ROLE tp;
SELECT results_eq(format($$SELECT status, result, cancel_requested FROM jobq_job_status(ARRAY[%L]::uuid[])$$, :'seed'),
    $$VALUES ('pending'::text, NULL::jsonb, false)$$,
    'producer: can read a job''s status (no payload)');
SELECT is((SELECT count(*)::int FROM jobq_await(ARRAY[:'seed']::uuid[], '0')), 1, 'producer: can await');
SELECT jobq_enqueue('p') AS to_cancel \gset
SELECT is((SELECT status FROM jobq_cancel(ARRAY[:'to_cancel']::uuid[])), 'cancelled', 'producer: can cancel');
SELECT throws_ok(format($$SELECT jobq_cancel_requested(ARRAY[%L]::uuid[])$$, :'seed'), '42501',
    'permission denied for function jobq_cancel_requested', 'producer: cannot call jobq_cancel_requested');
RESET ROLE;
DELETE FROM jobq_awaits WHERE job_id = :'seed';

-- worker --------------------------------------------------------------------------------
DELETE FROM jobq_jobs WHERE job_type = 'p';
DELETE FROM jobq_jobs_history WHERE job_type = 'p';
SET ROLE tw;
SELECT ok(jobq_enqueue('w', run_at => now() + interval '1 hour') IS NOT NULL, 'worker: can enqueue');
SELECT is((SELECT id FROM jobq_dequeue('tw')), :'seed'::uuid, 'worker: can dequeue (and sees the payload of its job)');
SELECT is(jobq_heartbeat('tw', ARRAY[:'seed']::uuid[]), 1, 'worker: can heartbeat');
SELECT is(jobq_release(ARRAY[:'seed']::uuid[], 'tw'), 1, 'worker: can release');
SELECT is(jobq_release_orphans('tw', '{}'), 0, 'worker: can release its orphaned claims');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('tw')), 1, 'worker: claims again');
SELECT is(jobq_fail(:'seed', 'tw', 'e', backoff => '0'), 'pending', 'worker: can fail');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('tw')), 1, 'worker: claims again');
SELECT is((SELECT count(*)::int FROM jobq_cancel_requested(ARRAY[:'seed']::uuid[])), 0,
          'worker: can ask for cancel requests');
SELECT is((SELECT status FROM jobq_job_status(ARRAY[:'seed']::uuid[])), 'processing', 'worker: can read a status');
SELECT is((SELECT status FROM jobq_fail_many(ARRAY[:'seed']::uuid[], 'tw', '{e}', backoffs => '{0}')),
          'pending', 'worker: can fail_many');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('tw')), 1, 'worker: claims again');
SELECT is(jobq_complete(:'seed', 'tw'), true, 'worker: can complete');
SELECT is(jobq_complete_many(ARRAY[:'seed']::uuid[], 'tw'), 0, 'worker: can call complete_many');
SELECT throws_ok($$SELECT jobq_configure()$$, '42501',
    'permission denied for function jobq_configure', 'worker: cannot configure');
SELECT throws_ok($$SELECT jobq_prune()$$, '42501',
    'permission denied for function jobq_prune', 'worker: cannot prune');
SELECT throws_ok(format($$SELECT jobq_requeue_dead_letter(%L)$$, :'seed'), '42501',
    'permission denied for function jobq_requeue_dead_letter', 'worker: cannot requeue one job');
SELECT throws_ok($$SELECT jobq_requeue_dead_letters()$$, '42501',
    'permission denied for function jobq_requeue_dead_letters', 'worker: cannot requeue in bulk');
SELECT throws_ok($$SELECT * FROM jobq_list_jobs()$$, '42501', NULL, 'worker: cannot list jobs');
SELECT throws_ok($$SELECT * FROM jobq_health()$$, '42501', NULL, 'worker: cannot run the health check');
SELECT throws_ok($$SELECT * FROM jobq_jobs$$, '42501', NULL, 'worker: cannot read the table');
SELECT throws_ok($$SELECT jobq_set_limit('g')$$, '42501',
    'permission denied for function jobq_set_limit', 'worker: cannot set or remove a limit');
SELECT throws_ok($$SELECT * FROM jobq_limits()$$, '42501',
    'permission denied for function jobq_limits', 'worker: cannot read the limits');
SELECT throws_ok($$SELECT * FROM jobq_limit_usage()$$, '42501',
    'permission denied for function jobq_limit_usage', 'worker: cannot read the usage of the limits');
SELECT throws_ok($$SELECT * FROM jobq_limit_keys$$, '42501', NULL, 'worker: cannot read the limits'' bookkeeping');
SELECT throws_ok($$UPDATE jobq_jobs SET status = 'pending'$$, '42501', NULL, 'worker: cannot update the table');
RESET ROLE;
SELECT is((SELECT status FROM jobq_all_jobs WHERE id = :'seed'), 'succeeded', 'the worker''s calls took effect');

-- admin ---------------------------------------------------------------------------------
UPDATE jobq_jobs_history SET status = 'dead_letter' WHERE id = :'seed';
SET ROLE ta;
SELECT is(jobq_requeue_dead_letter(:'seed'), true, 'admin: can requeue one job');
SELECT is(jobq_requeue_dead_letters(), 0, 'admin: can requeue in bulk');
SELECT ok(jobq_configure() ? 'max_payload_bytes', 'admin: can configure');
SELECT is(jobq_prune(), 0::bigint, 'admin: can prune');
SELECT ok((SELECT count(*) FROM jobq_stats()) > 0, 'admin: can read stats');
SELECT ok((SELECT count(*) FROM jobq_list_jobs()) > 0, 'admin: can list jobs');
SELECT lives_ok($$SELECT * FROM jobq_health()$$, 'admin: can run the health check');
SELECT lives_ok($$SELECT jobq_set_limit('g', max_running => 3)$$, 'admin: can set a limit');
SELECT results_eq($$SELECT limit_group, max_running FROM jobq_limits()$$, $$VALUES ('g'::text, 3)$$,
                  'admin: can read the limits');
SELECT lives_ok($$SELECT * FROM jobq_limit_usage()$$, 'admin: can read the usage of the limits');
SELECT lives_ok($$SELECT jobq_set_limit('g')$$, 'admin: can remove a limit');
SELECT ok(jobq_enqueue('a') IS NOT NULL, 'admin: can enqueue');
SELECT lives_ok($$SELECT * FROM jobq_enqueue_many('[]')$$, 'admin: can enqueue_many');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('ta', batch_size => 10)), 2, 'admin: can dequeue');
SELECT is(jobq_heartbeat('ta', ARRAY[:'seed']::uuid[]), 1, 'admin: can heartbeat');
SELECT is(jobq_fail(:'seed', 'ta', 'e', retry => false), 'failed', 'admin: can fail');
SELECT is(jobq_complete_many((SELECT array_agg(id) FROM jobq_all_jobs WHERE locked_by = 'ta'), 'ta'), 1,
          'admin: can complete_many');
SELECT is(jobq_complete(:'seed', 'ta'), false, 'admin: can call complete');
SELECT is(jobq_release(ARRAY[:'seed']::uuid[], 'ta'), 0, 'admin: can call release');
SELECT is(jobq_release_orphans('ta', '{}'), 0, 'admin: can call release_orphans');
SELECT is((SELECT status FROM jobq_cancel(ARRAY[:'seed']::uuid[])), 'failed', 'admin: can cancel (a finished job is left alone)');
SELECT is((SELECT count(*)::int FROM jobq_cancel_requested(ARRAY[:'seed']::uuid[])), 0, 'admin: can ask for cancel requests');
SELECT is((SELECT status FROM jobq_await(ARRAY[:'seed']::uuid[], '1 second')), 'failed', 'admin: can await');
SELECT ok((SELECT count(*) FROM jobq_all_jobs) > 0, 'admin: can read jobq_jobs');
SELECT ok((SELECT count(*) FROM jobq_settings) = 1, 'admin: can read jobq_settings');
SELECT ok((SELECT count(*) FROM jobq_migrations) > 0, 'admin: can read jobq_migrations');
SELECT throws_ok($$UPDATE jobq_jobs SET priority = 1$$, '42501', NULL, 'admin: reads the tables but cannot write them');
SELECT throws_ok($$SELECT jobq__job_argument_problem('a', 'b', NULL, 1, 1)$$, '42501', NULL,
    'admin: private helpers are granted to nobody, admins included');
RESET ROLE;

-- no grant --------------------------------------------------------------------------------
DROP TABLE snap;
CREATE TEMP TABLE snap AS SELECT * FROM jobq_all_jobs;
GRANT SELECT ON snap TO tn;
SET ROLE tn;
SELECT throws_ok($$SELECT jobq_enqueue('n')$$, '42501',
    'permission denied for function jobq_enqueue', 'a role with no grant cannot enqueue');
SELECT throws_ok($$SELECT * FROM jobq_enqueue_many('[{"job_type": "n"}]')$$, '42501', NULL,
    'a role with no grant cannot enqueue_many');
RESET ROLE;
SELECT results_eq('SELECT * FROM jobq_all_jobs ORDER BY id', 'SELECT * FROM snap ORDER BY id',
                  'denied calls changed nothing');

------------------------------------------------------------------------------------------
-- 3. A caller's search_path and own objects never redirect a jobq function
------------------------------------------------------------------------------------------

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
SELECT jobq_configure(max_payload_bytes => 100) AS configured \gset

-- a schema of look-alikes, placed first, before pg_catalog, in the caller's search_path
CREATE SCHEMA evil;
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT timestamptz '2000-01-01 00:00+00' $$;
CREATE FUNCTION evil.btrim(text) RETURNS text LANGUAGE sql AS $$ SELECT 'not blank'::text $$;
CREATE FUNCTION evil.pg_column_size(jsonb) RETURNS integer LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION evil.octet_length(text) RETURNS integer LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION evil.jobq__retry_at(timestamptz, integer, interval) RETURNS timestamptz LANGUAGE sql AS $$ SELECT $1 $$;
CREATE TABLE evil.jobq_jobs (LIKE public.jobq_jobs INCLUDING ALL);
CREATE TABLE evil.jobq_settings (singleton boolean PRIMARY KEY, max_payload_bytes integer);
INSERT INTO evil.jobq_settings VALUES (true, 1000000000);
GRANT USAGE ON SCHEMA evil TO tp, tw;
GRANT ALL ON ALL TABLES IN SCHEMA evil TO tp, tw;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA evil TO tp, tw;

SET ROLE tw;
SET LOCAL search_path = evil, pg_catalog, public, tap;
SELECT is(now(), '2000-01-01 00:00+00'::timestamptz, 'in the caller''s search_path, now() is the look-alike');
SELECT jobq_enqueue('shadow') AS shadow \gset
SELECT throws_ok($$SELECT jobq_enqueue('')$$, '22023', NULL,
    'a look-alike btrim() does not let a blank job_type through');
SELECT throws_ok($$SELECT jobq_enqueue('big', jsonb_build_object('s', repeat('x', 200)))$$, '54000', NULL,
    'neither a look-alike jobq_settings nor pg_column_size() nor octet_length() raises the payload limit');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('tw')), 1, 'the job is claimed from the real table');
SELECT is(jobq_fail(:'shadow', 'tw', 'e', backoff => '10 seconds'), 'pending', 'and failed');
RESET search_path;
RESET ROLE;
SELECT results_eq(
    format($$SELECT available_at, locked_at, updated_at, (errors -> 0 ->> 'at')::timestamptz
             FROM public.jobq_jobs WHERE id = %L$$, :'shadow'),
    $$VALUES (pg_catalog.now() + interval '10 seconds', NULL::timestamptz, pg_catalog.now(), pg_catalog.now())$$,
    'the job lives in public.jobq_jobs with real times: not evil.now(), not evil.jobq__retry_at()'
);
SELECT is((SELECT count(*)::int FROM evil.jobq_jobs), 0, 'the look-alike table got nothing');

-- a temporary table named jobq_jobs (pg_temp comes first for the caller's own queries)
SET ROLE tp;
CREATE TEMP TABLE jobq_jobs (LIKE evil.jobq_jobs INCLUDING ALL);  -- the same shape as the real one
CREATE TEMP TABLE jobq_settings (singleton boolean PRIMARY KEY, max_payload_bytes integer);
INSERT INTO jobq_settings VALUES (true, 1000000000);
SELECT jobq_enqueue('temp_shadow') AS temp_shadow \gset
SELECT is((SELECT count(*)::int FROM jobq_jobs), 0,
          'the caller''s temp table jobq_jobs (which its own queries see) got nothing');
SELECT throws_ok($$SELECT jobq_enqueue('big', jsonb_build_object('s', repeat('x', 200)))$$, '54000', NULL,
    'a temp table jobq_settings does not raise the payload limit');
DROP TABLE pg_temp.jobq_jobs, pg_temp.jobq_settings;
RESET ROLE;
SELECT is((SELECT job_type FROM public.jobq_jobs WHERE id = :'temp_shadow'), 'temp_shadow',
          'the job went to public.jobq_jobs');

------------------------------------------------------------------------------------------
-- 4. monitor: counts, statuses, timings and metadata, never a payload, a result or an error
------------------------------------------------------------------------------------------

CREATE ROLE tm;   -- monitor
CREATE ROLE tf;   -- an admin that reads whole jobs (jobq_get_job) and lists them
GRANT USAGE ON SCHEMA public, tap TO tm, tf;
GRANT ALL ON TABLE __tcache__ TO tm, tf;
GRANT ALL ON SEQUENCE __tcache___id_seq, __tresults___numb_seq TO tm, tf;
GRANT EXECUTE ON FUNCTION
    jobq_stats(), jobq_health(interval, interval, interval), jobq_metrics(),
    jobq_queue_summary(interval),
    jobq_jobs_page(text, text, text, timestamptz, uuid, integer, integer)
TO tm, tf;
GRANT EXECUTE ON FUNCTION jobq_get_job(uuid) TO tf;

-- a job of each kind that carries a secret: payload, result, error text
SELECT jobq_enqueue('mon', '{"k": "secret-payload"}', max_attempts => 1) AS mon_dead \gset
SELECT jobq_enqueue('mon', '{"k": "secret-payload"}') AS mon_done \gset
SELECT is((SELECT count(*)::int FROM jobq_dequeue('wm', job_types => '{mon}', batch_size => 2)), 2,
          'monitor fixtures claimed');
SELECT is(jobq_fail(:'mon_dead', 'wm', 'secret-error-text'), 'dead_letter', 'one dead letter');
SELECT ok(jobq_complete(:'mon_done', 'wm', result => '{"r": "secret-result"}'), 'one with a result');
SELECT jobq_enqueue('mon', '{"k": "secret-payload"}') AS mon_pending \gset

SET ROLE tm;
SELECT throws_ok(format('SELECT * FROM jobq_job_status(ARRAY[%L]::uuid[])', :'mon_dead'), '42501',
    NULL, 'monitor: jobq_job_status (results, errors) is denied');
SELECT throws_ok(format('SELECT * FROM jobq_get_job(%L)', :'mon_dead'), '42501', NULL,
    'monitor: jobq_get_job is denied');
SELECT is_empty($$
    SELECT t FROM (
        SELECT s::text AS t FROM jobq_stats() AS s
        UNION ALL SELECT h::text FROM jobq_health() AS h
        UNION ALL SELECT m::text FROM jobq_metrics() AS m
        UNION ALL SELECT q::text FROM jobq_queue_summary() AS q
        UNION ALL SELECT p::text FROM unnest(ARRAY['pending', 'processing', 'succeeded', 'failed',
                                                   'dead_letter', 'cancelled']) AS st (status)
                  CROSS JOIN LATERAL jobq_jobs_page(st.status) AS p
    ) AS every_row WHERE t LIKE '%secret%'$$,
    'monitor: no row of any function it may call holds a payload, a result or an error text');
SELECT results_eq(
    format($$SELECT id, status, attempts, last_error FROM jobq_jobs_page('dead_letter')
             WHERE id = %L$$, :'mon_dead'),
    format($$VALUES (%L::uuid, 'dead_letter'::text, 1, NULL::text)$$, :'mon_dead'),
    'monitor: the dead letter is listed with its metadata, last_error NULL'
);
RESET ROLE;

-- Inside SECURITY DEFINER current_user is the owner: the level is the session's role, the one
-- SET ROLE chose (above: tm, in a superuser's session) or else the login role.
SELECT is((SELECT last_error FROM jobq_jobs_page('dead_letter') WHERE id = :'mon_dead'),
          'secret-error-text', 'the superuser session itself (no SET ROLE) sees the error text');
SET ROLE tf;
SELECT is((SELECT last_error FROM jobq_jobs_page('dead_letter') WHERE id = :'mon_dead'),
          'secret-error-text', 'a role that may call jobq_get_job sees the error text');
RESET ROLE;
SET ROLE tf;
SET ROLE tm;
SELECT is((SELECT last_error FROM jobq_jobs_page('dead_letter') WHERE id = :'mon_dead'),
          NULL, 'a SET ROLE from that admin to a monitor sees none');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
