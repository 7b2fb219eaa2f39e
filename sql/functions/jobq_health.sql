-- jobq_health (admin): the health findings behind `jobq doctor`, one row per check (and per
-- queue for oldest_pending_age). docs/operations.md says what to do about each warning.

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
AS $$
DECLARE
    v_table regclass := 'jobq_jobs'::regclass;
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
    -- Beyond 1000 years an interval means never (and cannot overflow now() - interval).
    stuck_after := least(stuck_after, interval '1000 years');
    max_pending_age := least(max_pending_age, interval '1000 years');
    max_transaction_age := least(max_transaction_age, interval '1000 years');

    -- Jobs whose claim has not been renewed for stuck_after: their worker is dead or hung
    -- and no worker with a shorter lock_timeout has taken them back.
    RETURN QUERY
    SELECT
        'stuck_processing'::text, NULL::text,
        CASE WHEN count(*) > 0 THEN 'warning' ELSE 'ok' END,
        count(*)::double precision,
        format('%s job(s) processing with a lock older than %s', count(*), stuck_after)
    FROM jobq_jobs AS j
    WHERE j.status = 'processing' AND j.locked_at < now() - stuck_after;

    -- Per queue: how long the oldest job available now has waited.
    RETURN QUERY
    SELECT
        'oldest_pending_age'::text, j.queue,
        CASE WHEN now() - min(j.available_at) > max_pending_age THEN 'warning' ELSE 'ok' END,
        extract(epoch FROM now() - min(j.available_at))::double precision,
        format('%s job(s) available, the oldest waiting for %s',
               count(*), date_trunc('second', now() - min(j.available_at)))
    FROM jobq_jobs AS j
    WHERE j.status = 'pending' AND j.available_at <= now()
    GROUP BY j.queue;

    RETURN QUERY
    SELECT
        'dead_letters'::text, NULL::text,
        CASE WHEN count(*) > 0 THEN 'warning' ELSE 'ok' END,
        count(*)::double precision,
        format('%s job(s) in dead_letter: see jobq dead-letter list', count(*))
    FROM jobq_jobs AS j
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
        format('%s dead / %s live rows; last autovacuum %s, last vacuum %s',
               s.n_dead_tup, s.n_live_tup,
               coalesce(s.last_autovacuum::text, 'never'), coalesce(s.last_vacuum::text, 'never'))
    FROM pg_stat_user_tables AS s
    WHERE s.relid = v_table;

    -- Sessions idle in a transaction, and the oldest transaction holding back VACUUM.
    RETURN QUERY
    SELECT
        'idle_in_transaction'::text, NULL::text,
        CASE WHEN count(*) > 0 THEN 'warning' ELSE 'ok' END,
        count(*)::double precision,
        format('%s session(s) idle in transaction for more than %s', count(*),
               max_transaction_age)
    FROM pg_stat_activity AS a
    WHERE a.state LIKE 'idle in transaction%'
      AND a.state_change < now() - max_transaction_age;

    RETURN QUERY
    SELECT
        'oldest_transaction'::text, NULL::text,
        CASE
            WHEN coalesce(max(now() - a.xact_start), interval '0') > max_transaction_age
                THEN 'warning'
            ELSE 'ok'
        END,
        coalesce(extract(epoch FROM max(now() - a.xact_start)), 0)::double precision,
        format('the oldest transaction holding back VACUUM is %s old (pid %s)',
               coalesce(date_trunc('second', max(now() - a.xact_start))::text, '0'),
               coalesce((array_agg(a.pid ORDER BY a.xact_start))[1]::text, '-'))
    FROM pg_stat_activity AS a
    WHERE a.backend_xmin IS NOT NULL
      AND a.pid <> pg_backend_pid()
      AND a.xact_start IS NOT NULL;
END;
$$;

COMMENT ON FUNCTION jobq_health(interval, interval, interval) IS
'Admin. Health findings of this queue, one row per check (and per queue for
oldest_pending_age). Checks: stuck_processing (locks older than stuck_after),
oldest_pending_age (per queue, against max_pending_age), dead_letters, dead_tuples of
jobq_jobs with its last (auto)vacuum, idle_in_transaction and oldest_transaction (against
max_transaction_age: such sessions stop VACUUM from cleaning the queue). See
docs/operations.md for what to do about each.
Arguments: stuck_after (a claim older than this is stuck), max_pending_age (the oldest
pending job may wait this long), max_transaction_age (the longest transaction or idle
session tolerated).
Result: rows (check_name, queue, severity ok or warning, value a number, detail a sentence).
Errors: 22023 a NULL or non-positive interval.';

REVOKE EXECUTE ON FUNCTION jobq_health(interval, interval, interval) FROM PUBLIC;
