-- jobq_health (admin, monitor): the health findings behind `jobq doctor`, one row per check (and
-- per queue for oldest_pending_age, per queue and job type for unserved_job_types).
-- docs/operations.md says what to do about each warning.
--
-- Its reads of jobq_jobs go through partial indexes: processing jobs (jobq_jobs_locked_until_idx),
-- available ones (jobq__available), dead letters (their partitions of jobq_jobs_history), so
-- that its cost follows the unfinished and failed jobs, never the succeeded ones kept: it is
-- meant to be polled. SET enable_seqscan = off: with statistics gathered while most rows were dead
-- letters (or processing), the planner would read the whole table instead, on every call.
-- SET jit = off: under that setting the one small table still read whole, jobq_workers (by
-- jobq_unserved_job_types, whose plans are then made under these settings), is costed past
-- jit_above_cost, and compiling that read costs more than the call. The settings apply while
-- this function runs (function SET clauses), not to the caller (figures:
-- docs/decisions/0003-planner-settings-of-hot-functions.md).
--! levels: monitor, admin

CREATE OR REPLACE FUNCTION jobq_health(
    stuck_after interval DEFAULT '1 hour',
    max_pending_age interval DEFAULT '15 minutes',
    max_transaction_age interval DEFAULT '5 minutes'
) RETURNS TABLE (
    check_name text,
    queue text,
    severity text,
    value double precision,
    detail text
)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    -- oid, not regclass: oid = oid is an operator of pg_catalog, while oid = regclass would be
    -- resolved through a cast, and a look-alike =(oid, regclass) would be chosen instead.
    v_table oid := 'jobq_jobs'::regclass::oid;
    v_owner oid;
    v_schema oid;
    v_schema_name text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF stuck_after IS NULL OR stuck_after <= interval '0' THEN
        RAISE EXCEPTION 'jobq_health: stuck_after must be a positive interval, got %',
            coalesce(stuck_after::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_pending_age IS NULL OR max_pending_age <= interval '0' THEN
        RAISE EXCEPTION 'jobq_health: max_pending_age must be a positive interval, got %',
            coalesce(max_pending_age::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_transaction_age IS NULL OR max_transaction_age <= interval '0' THEN
        RAISE EXCEPTION 'jobq_health: max_transaction_age must be a positive interval, got %',
            coalesce(max_transaction_age::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT c.relowner, c.relnamespace, n.nspname::text INTO v_owner, v_schema, v_schema_name
    FROM pg_catalog.pg_class AS c
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.oid = v_table;
    -- Beyond 1000 years an interval means never (and cannot overflow now() - interval).
    stuck_after := least(stuck_after, interval '1000 years');
    max_pending_age := least(max_pending_age, interval '1000 years');
    max_transaction_age := least(max_transaction_age, interval '1000 years');

    -- Jobs whose claim has not been renewed for stuck_after: their worker is dead or hung
    -- and no worker with a shorter lock_timeout has taken them back.
    RETURN QUERY
    SELECT
        'stuck_processing'::text, NULL::text,
        CASE WHEN pg_catalog.count(*) > 0 THEN 'warning' ELSE 'ok' END,
        pg_catalog.count(*)::double precision,
        pg_catalog.format('%s job(s) processing with a lock older than %s',
                          pg_catalog.count(*), stuck_after)
    FROM jobq_jobs AS j
    WHERE j.status = 'processing' AND j.locked_at < v_now - stuck_after;

    -- Jobs still running stuck_after after jobq_cancel asked them to stop: their handler does
    -- not look at the request (job.cancel_requested() in Python), or cannot stop.
    RETURN QUERY
    SELECT
        'unheeded_cancels'::text, NULL::text,
        CASE WHEN pg_catalog.count(*) > 0 THEN 'warning' ELSE 'ok' END,
        pg_catalog.count(*)::double precision,
        pg_catalog.format('%s job(s) still processing more than %s after a cancel request',
                          pg_catalog.count(*), stuck_after)
    FROM jobq_jobs AS j
    WHERE j.status = 'processing' AND j.cancel_requested_at < v_now - stuck_after;

    -- Per queue: how long the oldest job available now has waited (read from the partial
    -- indexes of pending jobs: jobq__available).
    RETURN QUERY
    SELECT
        'oldest_pending_age'::text, a.queue,
        CASE
            WHEN v_now - pg_catalog.min(a.oldest_available_at) > max_pending_age
                THEN 'warning'
            ELSE 'ok'
        END,
        extract(epoch FROM v_now - pg_catalog.min(a.oldest_available_at))::double precision,
        pg_catalog.format(
            '%s job(s) available, the oldest waiting for %s',
            pg_catalog.sum(a.jobs),
            pg_catalog.date_trunc('second', v_now - pg_catalog.min(a.oldest_available_at))
        )
    FROM jobq__available(NULL::boolean) AS a
    GROUP BY a.queue;

    -- Per queue and job type: available jobs that no worker asked for within max_pending_age
    -- (a misspelt job type, a queue nobody serves), named at once rather than after they aged.
    RETURN QUERY
    SELECT
        'unserved_job_types'::text, u.queue, 'warning'::text, u.jobs::double precision,
        pg_catalog.format(
            '%s job(s) of type %s available, the oldest waiting for %s: no worker claimed '
            'this job type in this queue within %s',
            u.jobs, pg_catalog.quote_literal(u.job_type),
            pg_catalog.date_trunc('second', v_now - u.oldest_available_at),
            max_pending_age
        )
    FROM jobq_unserved_job_types(max_pending_age) AS u;
    IF NOT FOUND THEN
        RETURN QUERY
        SELECT
            'unserved_job_types'::text, NULL::text, 'ok'::text, 0::double precision,
            pg_catalog.format(
                'every available job''s type and queue was claimed by a worker within %s',
                max_pending_age
            );
    END IF;

    RETURN QUERY
    SELECT
        'dead_letters'::text, NULL::text,
        CASE WHEN pg_catalog.count(*) > 0 THEN 'warning' ELSE 'ok' END,
        pg_catalog.count(*)::double precision,
        pg_catalog.format('%s job(s) in dead_letter: see jobq dead-letter list',
                          pg_catalog.count(*))
    FROM jobq_jobs_history AS j
    WHERE j.status = 'dead_letter';

    -- Dead tuples of the jobs table: a queue table that VACUUM cannot keep clean slows down.
    RETURN QUERY
    SELECT
        'dead_tuples'::text, NULL::text,
        CASE
            WHEN s.n_dead_tup > 100000 AND s.n_dead_tup > 2 * s.n_live_tup THEN 'warning'
            ELSE 'ok'
        END,
        s.n_dead_tup::double precision,
        pg_catalog.format('%s dead / %s live rows; last autovacuum %s, last vacuum %s',
               s.n_dead_tup, s.n_live_tup,
               coalesce(s.last_autovacuum::text, 'never'), coalesce(s.last_vacuum::text, 'never'))
    FROM pg_catalog.pg_stat_user_tables AS s
    WHERE s.relid = v_table;

    -- Sessions idle in a transaction, and the oldest transaction holding back VACUUM.
    RETURN QUERY
    SELECT
        'idle_in_transaction'::text, NULL::text,
        CASE WHEN pg_catalog.count(*) > 0 THEN 'warning' ELSE 'ok' END,
        pg_catalog.count(*)::double precision,
        pg_catalog.format('%s session(s) idle in transaction for more than %s', pg_catalog.count(*),
               max_transaction_age)
    FROM pg_catalog.pg_stat_activity AS a
    WHERE a.state LIKE 'idle in transaction%'
      AND a.state_change < v_now - max_transaction_age;

    RETURN QUERY
    SELECT
        'oldest_transaction'::text, NULL::text,
        CASE
            WHEN coalesce(pg_catalog.max(v_now - a.xact_start), interval '0')
                > max_transaction_age
                THEN 'warning'
            ELSE 'ok'
        END,
        coalesce(
            extract(epoch FROM pg_catalog.max(v_now - a.xact_start)), 0
        )::double precision,
        pg_catalog.format(
            'the oldest transaction holding back VACUUM is %s old (pid %s)',
            coalesce(
                pg_catalog.date_trunc(
                    'second', pg_catalog.max(v_now - a.xact_start)
                )::text,
                '0'
            ),
            coalesce((pg_catalog.array_agg(a.pid ORDER BY a.xact_start))[1]::text, '-')
        )
    FROM pg_catalog.pg_stat_activity AS a
    WHERE a.backend_xmin IS NOT NULL
      AND a.pid <> pg_catalog.pg_backend_pid()
      AND a.xact_start IS NOT NULL;

    -- Who else controls the schema. The functions run as the owner of jobq (the role that
    -- migrated, owner of jobq_jobs); a role that owns the schema can drop or replace jobq's
    -- objects, and a role that may CREATE in it can plant objects there. Superusers can do
    -- anything anyway; pg_database_owner stands for the owner of the database.
    RETURN QUERY
    SELECT
        'schema_owner'::text, NULL::text,
        CASE WHEN o.controlled THEN 'warning' ELSE 'ok' END,
        CASE WHEN o.controlled THEN 1 ELSE 0 END::double precision,
        pg_catalog.format(
            'schema %s belongs to %s%s; jobq''s objects to %s',
            pg_catalog.quote_ident(o.nspname), pg_catalog.quote_ident(o.owner_name),
            CASE WHEN o.owner_name = 'pg_database_owner'
                THEN pg_catalog.format(' (the owner of the database: %s)',
                                       pg_catalog.quote_ident(o.effective_name))
                ELSE '' END,
            pg_catalog.quote_ident(o.jobq_owner_name)
        )
    FROM (
        SELECT
            n.nspname::text AS nspname,
            pg_catalog.pg_get_userbyid(n.nspowner)::text AS owner_name,
            pg_catalog.pg_get_userbyid(e.effective)::text AS effective_name,
            pg_catalog.pg_get_userbyid(v_owner)::text AS jobq_owner_name,
            e.effective <> v_owner
                AND NOT coalesce(
                    (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r
                     WHERE r.oid = e.effective),
                    false
                ) AS controlled
        FROM pg_catalog.pg_namespace AS n
        CROSS JOIN LATERAL (
            SELECT CASE
                WHEN n.nspowner = pg_catalog.to_regrole('pg_database_owner')::oid
                    THEN (SELECT d.datdba FROM pg_catalog.pg_database AS d
                          WHERE d.datname = pg_catalog.current_database())
                ELSE n.nspowner
            END AS effective
        ) AS e
        WHERE n.oid = v_schema
    ) AS o;

    RETURN QUERY
    SELECT
        'schema_create'::text, NULL::text,
        CASE WHEN pg_catalog.count(*) > 0 THEN 'warning' ELSE 'ok' END,
        pg_catalog.count(*)::double precision,
        CASE
            WHEN pg_catalog.bool_or(c.everyone) THEN pg_catalog.format(
                'every role (PUBLIC) may CREATE in schema %s: any of them can plant objects '
                'there', pg_catalog.quote_ident(v_schema_name))
            WHEN pg_catalog.count(*) > 0 THEN pg_catalog.format(
                'roles other than jobq''s owner may CREATE in schema %s: %s',
                pg_catalog.quote_ident(v_schema_name),
                pg_catalog.string_agg(pg_catalog.quote_ident(c.rolname), ', '
                                      ORDER BY c.rolname))
            ELSE pg_catalog.format('only jobq''s owner (and superusers) may CREATE in schema %s',
                                   pg_catalog.quote_ident(v_schema_name))
        END
    FROM (
        SELECT r.rolname::text AS rolname, false AS everyone
        FROM pg_catalog.pg_roles AS r
        WHERE NOT r.rolsuper
          AND r.oid <> v_owner
          AND r.rolname <> 'pg_database_owner'
          AND pg_catalog.has_schema_privilege(r.oid, v_schema, 'CREATE')
          AND NOT EXISTS (
              SELECT FROM pg_catalog.pg_namespace AS n
              CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) AS a
              WHERE n.oid = v_schema
                AND a.grantee = 0::oid AND a.privilege_type = 'CREATE'
          )
        UNION ALL
        SELECT 'PUBLIC', true
        FROM pg_catalog.pg_namespace AS n
        CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) AS a
        WHERE n.oid = v_schema
          AND a.grantee = 0::oid AND a.privilege_type = 'CREATE'
    ) AS c;
END;
$$;

COMMENT ON FUNCTION jobq_health(interval, interval, interval) IS
'Admin and monitor. Health findings of this queue, one row per check (and per queue for
oldest_pending_age, per queue and job type for unserved_job_types). Checks: stuck_processing
(locks older than stuck_after), unheeded_cancels (processing jobs whose cancel request is older
than stuck_after), oldest_pending_age (per queue, against max_pending_age),
unserved_job_types (available jobs of a queue and job type that no worker claimed within
max_pending_age: see jobq_unserved_job_types), dead_letters, dead_tuples of jobq_jobs with
its last (auto)vacuum, idle_in_transaction and oldest_transaction (against
max_transaction_age: such sessions stop VACUUM from cleaning the queue), schema_owner (the
schema belongs to another role than jobq''s owner, not a superuser) and schema_create (other
roles, or PUBLIC, may CREATE in the schema: they could plant objects there). See
docs/operations.md for what to do about each. Reads jobq_jobs through its partial indexes of
processing, pending and dead-letter jobs only, never a succeeded job, with enable_seqscan =
off and jit = off (for this function only; the caller keeps its own settings): meant to be
polled.
Arguments: stuck_after (a claim older than this is stuck; so is a cancel request older than
this that its job has not heeded), max_pending_age (the oldest pending job may wait this long;
also how recently a worker must have asked for a job type), max_transaction_age (the longest
transaction or idle session tolerated).
Result: rows (check_name, queue, severity ok or warning, value a number, detail a sentence).
Errors: 22023 a NULL or non-positive interval.';

REVOKE EXECUTE ON FUNCTION jobq_health(interval, interval, interval) FROM PUBLIC;
