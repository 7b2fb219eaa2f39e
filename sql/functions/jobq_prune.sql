-- jobq_prune: deletes finished jobs older than a given age. Only finished statuses
-- (jobq__statuses(finished => true)) may be named: deleting a pending or processing job would
-- lose work, so those are refused rather than ignored. The age is capped at 1000 years so that
-- now() - older_than cannot overflow.
--
-- Finished jobs live in jobq_jobs_history, which retention empties by whole partitions
-- (jobq_maintain_history); jobq_prune is for an age or a status that the retention does not
-- cover. A partition of the statuses asked that lies wholly in the range (its every job
-- finished before older_than) is emptied at once (jobq__history_truncate: constant time and
-- WAL, no dead row for VACUUM; its rows are counted, for the result), whatever batch_size;
-- jobq_maintain_history drops it later. Its lock is waited for 100 ms at most (a requeue of one
-- of its jobs holds it): past that, its rows are left to the row-by-row DELETE.
-- The rest is deleted row by row. With batch_size, one call deletes at most that many jobs
-- so, the oldest first across the statuses, and a caller loops (Queue.prune and `jobq prune`
-- do) until a call deletes fewer: each batch is a short transaction with a bounded amount of
-- WAL, and the rows it deletes are locked with SKIP LOCKED (never waiting for an operator's
-- requeue). Without batch_size (NULL), one statement deletes them all.
--
--! replaces: jobq_prune(interval, text[])
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_prune(
    older_than interval DEFAULT '7 days',
    statuses text[] DEFAULT '{succeeded}',
    batch_size integer DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_bad text;
    v_hint text;
    v_before timestamptz;
    v_deleted bigint := 0::bigint;
    v_name text;
    v_lock_timeout text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF older_than IS NULL OR older_than < interval '0' THEN
        RAISE EXCEPTION 'jobq_prune: older_than must be an interval >= 0, got %',
            coalesce(older_than::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_hint := 'Finished statuses: '
        || pg_catalog.array_to_string(jobq__statuses(finished => TRUE), ', ') || '.';
    IF statuses IS NULL OR pg_catalog.cardinality(statuses) = 0 THEN
        RAISE EXCEPTION 'jobq_prune: statuses must name at least one finished status'
            USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
    END IF;
    IF pg_catalog.cardinality(statuses) > 100 THEN
        RAISE EXCEPTION 'jobq_prune: statuses has % elements, at most 100 are allowed',
            pg_catalog.cardinality(statuses)
            USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
    END IF;
    SELECT s INTO v_bad FROM pg_catalog.unnest(statuses) AS s
    WHERE s IS NULL OR s <> ALL (jobq__statuses(finished => TRUE))
    LIMIT 1;
    IF FOUND THEN
        IF v_bad = ANY (jobq__statuses(finished => FALSE)) THEN
            RAISE EXCEPTION 'jobq_prune: statuses may not include %: only finished jobs are pruned',
                pg_catalog.quote_literal(v_bad)
                USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
        END IF;
        RAISE EXCEPTION 'jobq_prune: statuses contains %, which is not a status',
            coalesce(pg_catalog.quote_literal(v_bad), 'NULL')
            USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
    END IF;

    IF batch_size IS NOT NULL AND batch_size < 1 THEN
        RAISE EXCEPTION 'jobq_prune: batch_size must be at least 1 or NULL (all at once), got %',
            batch_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    v_before := v_now - least(older_than, interval '1000 years');
    -- Whole partitions first, under a lock_timeout of their own: the caller's applies again to
    -- the rows (set back transaction-locally, to the value it had).
    v_lock_timeout := pg_catalog.current_setting('lock_timeout');
    PERFORM pg_catalog.set_config('lock_timeout', '100ms', TRUE);
    FOR v_name IN
        SELECT p.name
        FROM pg_catalog.unnest(jobq_prune.statuses) AS s (status)
        CROSS JOIN LATERAL jobq__history_partitions(s.status) AS p
        WHERE p.upper_at <= v_before
        ORDER BY p.lower_at
    LOOP
        CONTINUE WHEN NOT jobq__history_filled(v_name);
        BEGIN
            v_deleted := v_deleted + jobq__history_truncate(v_name, TRUE);
        EXCEPTION WHEN lock_not_available THEN
            NULL;  -- left to the DELETE below
        END;
    END LOOP;
    PERFORM pg_catalog.set_config('lock_timeout', v_lock_timeout, TRUE);
    -- The oldest first (by finished_at, whatever the status), batch_size of them or all; rows
    -- another transaction holds are skipped. The status and finished_at tests of the DELETE
    -- leave out the partitions that cannot hold such a job, and the ids are found in the
    -- others through jobq_jobs_history_id_idx.
    WITH doomed AS MATERIALIZED (
        SELECT h.id
        FROM jobq_jobs_history AS h
        WHERE h.status = ANY (jobq_prune.statuses)
          AND h.finished_at < v_before
        ORDER BY h.finished_at, h.id
        LIMIT jobq_prune.batch_size
        FOR UPDATE SKIP LOCKED
    ),

    pruned AS (
        DELETE FROM jobq_jobs_history AS h
        WHERE h.status = ANY (jobq_prune.statuses)
          AND h.finished_at < v_before
          AND h.id = ANY (ARRAY(SELECT d.id FROM doomed AS d))
        RETURNING h.id, h.queue, h.job_type, h.status
    ),

    -- The dependencies of the jobs deleted go with them (those of jobs in partitions emptied
    -- whole stay, and are read as gone: jobq_dependencies and jobq_job_graph join the jobs).
    unlinked AS (
        DELETE FROM jobq_job_dependencies AS e
        WHERE e.job_id = ANY (ARRAY(SELECT p.id FROM pruned AS p))
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'pruned'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            pg_catalog.array_agg(c.status), NULL::double precision[]
        ) AS n
        FROM pruned AS c
        HAVING pg_catalog.count(*) > 0
    )

    SELECT v_deleted + pg_catalog.count(*) INTO v_deleted
    FROM pruned AS p
    LEFT JOIN counted ON TRUE;
    -- Registrations of jobq_await whose job has ended or is gone: the ending statement deletes
    -- a job's rows, but not those registered after it read them. Rows another transaction
    -- holds are left for a later call.
    DELETE FROM jobq_awaits AS a
    WHERE a.ctid = ANY (ARRAY(
        SELECT w.ctid
        FROM jobq_awaits AS w
        WHERE NOT EXISTS (
            SELECT FROM jobq_jobs AS j WHERE j.id = w.job_id AND j.finished_at IS NULL
        )
        FOR UPDATE SKIP LOCKED
    ));
    -- A waiting job under rule wait whose dependency is gone (pruned here, or dropped with a
    -- partition by the retention) can never be released.
    PERFORM jobq__dependencies_gone();
    -- Regular maintenance: keeps jobq_metric_deltas short where nothing scrapes jobq_metrics().
    IF pg_catalog.current_setting('transaction_isolation') = 'read committed' THEN
        PERFORM jobq__metrics_fold();
    END IF;
    RETURN v_deleted;
END;
$$;

COMMENT ON FUNCTION jobq_prune(interval, text[], integer) IS
'Deletes finished jobs that finished long enough ago, the oldest first, all at once or in
batches (each call then a short transaction: loop until a call deletes fewer than batch_size).
A partition of the history that lies wholly in the range is emptied whole (TRUNCATE, constant
time; its jobs count in the result, whatever batch_size), unless its lock is not granted within
100 ms (then its jobs are deleted row by row).
Arguments: older_than (>= 0: jobs whose finished_at is older than this), statuses (finished
statuses only: succeeded, failed, dead_letter, cancelled; at most 100 names; default
succeeded), batch_size (at most that
many per call; NULL, the default: all of them in one statement).
Result: how many jobs were deleted.
Errors: 22023 for pending or processing in statuses (refused), an unknown status, an empty
list or one of more than 100 names, a NULL or negative older_than, a batch_size below 1.
Concurrency: rows locked by another transaction at that moment are skipped (SKIP LOCKED), not
waited for; a later call prunes them.';

REVOKE EXECUTE ON FUNCTION jobq_prune(interval, text[], integer) FROM PUBLIC;
