-- jobq_maintain_history: the upkeep of jobq_jobs_history, run by every jobq_tick and callable
-- alone (pg_cron, `jobq tick`). For each finished status (jobq_retention) it makes the
-- partitions of today and of the next two days ahead of need, empties each partition whose
-- every row finished more than the status's keep ago, and drops the empty partitions of the
-- past, eight or more of a status at once: retention in constant time, whatever the rows
-- (TRUNCATE, DROP TABLE; never a DELETE of rows, but for the DEFAULT partition's stragglers
-- below).
--
-- Nothing live is ever dropped: jobq_jobs_history holds finished jobs only (its partitions
-- are by finished status, with no DEFAULT at the top), a partition is emptied only once its
-- upper bound is older than keep, and dropped only once empty. A requeue of one of its jobs
-- that runs meanwhile holds the partition: the TRUNCATE waits for the requeue's commit (the
-- job is then live, in jobq_jobs) or gives up.
--
-- The DDL never queues the hot path behind it. A new partition is made as a table of its own
-- and then attached (ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE on the parent, which
-- completions' inserts do not conflict with); TRUNCATE locks an expired partition alone, which
-- no completion or claim writes. Each of these waits at most lock_timeout for its lock (the
-- function's own setting; the caller's is restored on return), and only readers of every
-- partition (a look-up by id or key) may queue behind it meanwhile: when the lock is not
-- granted in time, the step is skipped, reported ('skipped'), and retried by the next call.
-- The DROP, which locks the status's partitioned table that completions write through, never
-- waits (NOWAIT), and comes seldom: completions of the status wait from the moment it holds
-- that table until the commit. The locks taken are held until the caller's transaction
-- ends: jobq_tick calls this last, and a caller of its own should commit at once.
--
-- Rows whose finished_at no partition covered (the ticks stopped for days) wait in the
-- status's DEFAULT partition: the partition made for their days takes them over first, so
-- that ATTACH finds none left there; the DEFAULT partition is emptied whole once its newest
-- row has expired, and until then its expired rows are deleted (row by row: the only O(rows)
-- step, and only for such rows).
--
-- On a Citus distributed schema each status's history is one plain table (Citus distributes
-- one level of partitioning only: the installer makes this layout before it distributes the
-- schema, docs/scaling.md). The layout of each status is read from the catalogue: for a plain
-- jobq__history_<status> there are no partitions to make, empty or drop, and the expired rows
-- are deleted instead, at most v_delete_batch per status and call (a tick stays short; the
-- next ones go on), the oldest first through the index on finished_at, skipping rows that
-- another transaction holds (a requeue).
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_maintain_history(
    lock_timeout interval DEFAULT '100 milliseconds'
) RETURNS TABLE (action text, partition_name text, detail text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET lock_timeout = 100
AS $$
DECLARE
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_today CONSTANT date := (v_now AT TIME ZONE 'UTC')::date;
    v_status text;
    v_keep interval;
    v_days integer;
    v_parent text;
    v_day date;
    v_lower timestamptz;
    v_upper timestamptz;
    v_before timestamptz;
    v_name text;
    v_grantee text;
    v_rows bigint;
    v_names text[];
    -- The statuses whose history has day partitions, and their keep, for the last two steps
    -- (read from these rather than jobq_retention: Citus cannot join a distributed table with
    -- the catalogue's partitions).
    v_statuses text[] := '{}'::text[];
    v_keeps interval[] := '{}'::interval[];
    -- Empty partitions of a status dropped together (see the last step).
    v_drop_batch CONSTANT integer := 8;
    -- Expired rows deleted per status and call where a status's history is one table.
    v_delete_batch CONSTANT integer := 10000;
BEGIN
    IF jobq_maintain_history.lock_timeout IS NULL
        OR jobq_maintain_history.lock_timeout <= interval '0'
        OR jobq_maintain_history.lock_timeout > interval '1 minute'
    THEN
        RAISE EXCEPTION 'jobq_maintain_history: lock_timeout must be more than 0 and at most '
                        '1 minute, got %', coalesce(jobq_maintain_history.lock_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One session maintains at a time: a concurrent call (another tick) returns at once
    -- rather than make or drop the same partition. The key is made from the installation's
    -- secret lock_seed, as the limit keys' (jobq__claim_limited), so no other role can hold it.
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(
        pg_catalog.format('jobq maintain_history %L', pg_catalog.current_schema()),
        (SELECT s.lock_seed FROM jobq_settings AS s WHERE s.singleton)
    )) THEN
        RETURN;
    END IF;
    -- Local to this call: the SET clause above restores the caller's value on return.
    PERFORM pg_catalog.set_config(
        'lock_timeout',
        pg_catalog.ceil(
            extract(EPOCH FROM jobq_maintain_history.lock_timeout) * 1000
        )::bigint::text || 'ms',
        TRUE
    );

    FOR v_status, v_keep, v_days IN
        SELECT r.status, r.keep, r.partition_days FROM jobq_retention AS r ORDER BY r.status
    LOOP
        v_parent := 'jobq__history_' || v_status;

        -- One table, no partitions (a Citus distributed schema): its expired rows, a batch.
        IF EXISTS (
            SELECT FROM pg_catalog.pg_class AS c
            WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(v_parent)::oid
              AND c.relkind OPERATOR(pg_catalog.=) 'r'::"char"
        ) THEN
            CONTINUE WHEN v_keep IS NULL;
            v_before := v_now - v_keep;
            WITH doomed AS MATERIALIZED (
                SELECT h.id
                FROM jobq_jobs_history AS h
                WHERE h.status = v_status
                  AND h.finished_at < v_before
                ORDER BY h.finished_at, h.id
                LIMIT v_delete_batch
                FOR UPDATE SKIP LOCKED
            ),

            gone AS (
                DELETE FROM jobq_jobs_history AS h
                WHERE h.status = v_status
                  AND h.finished_at < v_before
                  AND h.id = ANY (ARRAY(SELECT d.id FROM doomed AS d))
                RETURNING h.queue, h.job_type, h.status
            ),

            counted AS MATERIALIZED (
                SELECT jobq__metrics_count(
                    'pruned'::text, pg_catalog.array_agg(c.queue),
                    pg_catalog.array_agg(c.job_type), pg_catalog.array_agg(c.status),
                    NULL::double precision[]
                ) AS n
                FROM gone AS c
                HAVING pg_catalog.count(*) > 0
            )

            SELECT pg_catalog.count(*) INTO v_rows
            FROM gone AS g
            LEFT JOIN counted ON TRUE;
            IF v_rows > 0 THEN
                action := 'deleted';
                partition_name := v_parent;
                detail := pg_catalog.format(
                    '%s row(s) finished before %s', v_rows, v_before
                ) || CASE WHEN v_rows >= v_delete_batch
                    THEN ': more are left to the next call' ELSE '' END;
                RETURN NEXT;
            END IF;
            CONTINUE;
        END IF;
        v_statuses := v_statuses || v_status;
        v_keeps := v_keeps || v_keep;

        -- Ahead: a partition covering each of today and the next two days (UTC). A new one
        -- starts at its period (partition_days since 1970-01-01) and is cut short where a
        -- partition made with another partition_days already covers the time.
        v_day := v_today;
        <<ahead>>
        WHILE v_day <= v_today + 2 LOOP
            IF NOT EXISTS (
                SELECT FROM jobq__history_partitions(v_status) AS p
                WHERE p.lower_at <= v_day::timestamp AT TIME ZONE 'UTC'
                  AND p.upper_at > v_day::timestamp AT TIME ZONE 'UTC'
            ) THEN
                v_lower := (DATE '1970-01-01' + ((v_day - DATE '1970-01-01') / v_days) * v_days)
                    ::timestamp AT TIME ZONE 'UTC';
                v_upper := v_lower + pg_catalog.make_interval(days => v_days);
                SELECT
                    greatest(v_lower, pg_catalog.max(p.upper_at) FILTER (
                        WHERE p.upper_at <= v_day::timestamp AT TIME ZONE 'UTC'
                    )),
                    least(v_upper, pg_catalog.min(p.lower_at) FILTER (
                        WHERE p.lower_at > v_day::timestamp AT TIME ZONE 'UTC'
                    ))
                INTO v_lower, v_upper
                FROM jobq__history_partitions(v_status) AS p;
                v_name := v_parent || '_'
                    || pg_catalog.to_char(v_lower AT TIME ZONE 'UTC', 'YYYYMMDD');
                BEGIN
                    EXECUTE pg_catalog.format(
                        'CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS)', v_name, v_parent
                    );
                    EXECUTE pg_catalog.format(
                        'WITH m AS (DELETE FROM %I AS d WHERE d.finished_at >= $1 '
                        'AND d.finished_at < $2 RETURNING d.*) INSERT INTO %I SELECT * FROM m',
                        v_parent || '_default', v_name
                    ) USING v_lower, v_upper;
                    EXECUTE pg_catalog.format(
                        'ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                        v_parent, v_name, v_lower, v_upper
                    );
                    -- Exactly the privileges of a migrated table (none: the parent's apply),
                    -- whatever default privileges jobq's owner has.
                    EXECUTE pg_catalog.format('REVOKE ALL ON TABLE %I FROM PUBLIC', v_name);
                    FOR v_grantee IN
                        SELECT DISTINCT pg_catalog.pg_get_userbyid(a.grantee)::text
                        FROM pg_catalog.pg_class AS c
                        CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS a
                        WHERE c.oid OPERATOR(pg_catalog.=) v_name::regclass::oid
                          AND a.grantee OPERATOR(pg_catalog.<>) c.relowner
                          AND a.grantee OPERATOR(pg_catalog.<>) 0::oid
                    LOOP
                        EXECUTE pg_catalog.format(
                            'REVOKE ALL ON TABLE %I FROM %I', v_name, v_grantee
                        );
                    END LOOP;
                    action := 'created';
                    partition_name := v_name;
                    detail := pg_catalog.format('finished_at from %s to %s', v_lower, v_upper);
                    RETURN NEXT;
                EXCEPTION WHEN lock_not_available THEN
                    action := 'skipped';
                    partition_name := v_name;
                    detail := 'lock not granted within lock_timeout: retried by the next call';
                    RETURN NEXT;
                    EXIT ahead;
                END;
            END IF;
            v_day := v_day + 1;
        END LOOP;

        CONTINUE WHEN v_keep IS NULL;

        -- The DEFAULT partition: emptied whole when its newest row has expired, else its
        -- expired rows deleted (row by row: the one O(rows) step, only for jobs that finished
        -- while no partition covered their day). Its oldest row is read first, through its
        -- index and without a lock; EXCLUSIVE then keeps writers out, not readers.
        v_name := v_parent || '_default';
        v_rows := NULL;
        BEGIN
            EXECUTE pg_catalog.format('SELECT pg_catalog.min(d.finished_at) FROM %I AS d', v_name)
            INTO v_upper;
            IF v_upper < v_now - v_keep THEN
                EXECUTE pg_catalog.format('LOCK TABLE %I IN EXCLUSIVE MODE', v_name);
                EXECUTE pg_catalog.format(
                    'SELECT pg_catalog.max(d.finished_at) FROM %I AS d', v_name
                ) INTO v_upper;
                IF v_upper < v_now - v_keep THEN
                    v_rows := jobq__history_truncate(v_name, TRUE);
                    action := 'truncated';
                ELSE
                    EXECUTE pg_catalog.format(
                        'DELETE FROM %I AS d WHERE d.finished_at < $1', v_name
                    ) USING v_now - v_keep;
                    GET DIAGNOSTICS v_rows = ROW_COUNT;
                    action := 'deleted';
                END IF;
            END IF;
            IF v_rows > 0 THEN
                partition_name := v_name;
                detail := pg_catalog.format('%s row(s) finished before %s', v_rows, v_now - v_keep);
                RETURN NEXT;
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            action := 'skipped';
            partition_name := v_name;
            detail := 'lock not granted within lock_timeout: retried by the next call';
            RETURN NEXT;
        END;
    END LOOP;

    -- Then the expired partitions (every row finished more than keep ago), each emptied whole
    -- (TRUNCATE locks that partition alone, which no completion or claim writes; it waits at
    -- most lock_timeout). Emptied, not dropped: a DROP must lock the status's partitioned
    -- table, which every completion of that status writes through, until the commit. With
    -- metrics on, the rows are counted as they are emptied (jobq__history_truncate).
    FOR v_status, v_name, v_upper IN
        SELECT r.status, p.name, p.upper_at
        FROM ROWS FROM (
            pg_catalog.unnest(v_statuses), pg_catalog.unnest(v_keeps)
        ) AS r (status, keep)
        CROSS JOIN LATERAL jobq__history_partitions(r.status) AS p
        WHERE p.upper_at <= v_now - r.keep
        ORDER BY r.status = 'succeeded', r.status, p.lower_at
    LOOP
        CONTINUE WHEN NOT jobq__history_filled(v_name);
        partition_name := v_name;
        detail := pg_catalog.format('finished_at before %s', v_upper);
        BEGIN
            v_rows := jobq__history_truncate(v_name, FALSE);
            action := 'truncated';
            IF v_rows IS NOT NULL THEN
                detail := detail || pg_catalog.format(': %s row(s)', v_rows);
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            action := 'skipped';
            detail := 'lock not granted within lock_timeout: retried by the next call';
        END;
        RETURN NEXT;
    END LOOP;

    -- Last, the empty partitions of the past (expired and emptied above, or emptied by
    -- jobq_prune) are dropped, all of a status's at once, and only once there are
    -- v_drop_batch of them: each DROP makes completions of that status wait from the moment it
    -- holds the status's partitioned table (and its DEFAULT partition, whose bounds it
    -- changes) until the commit, however few tables it drops, so the drops come in batches,
    -- a few a month at one partition a day. The locks are asked with NOWAIT: at once or not
    -- at all, and no completion ever queues behind a waiting DROP. Once one is held, nothing
    -- here waits any more; succeeded, whose completions are the hot path, comes last.
    -- The window ends when the commit is flushed: the files are removed after the locks go.
    -- A DETACH PARTITION of the batch, its tables dropped by a later call, would hold the
    -- status's table as long (eight statements instead of one, and a commit that flushes the
    -- WAL as well), so the batch is dropped here, in one statement.
    FOR v_status, v_names IN
        SELECT r.status, pg_catalog.array_agg(p.name ORDER BY p.lower_at)
        FROM ROWS FROM (
            pg_catalog.unnest(v_statuses), pg_catalog.unnest(v_keeps)
        ) AS r (status, keep)
        CROSS JOIN LATERAL jobq__history_partitions(r.status) AS p
        WHERE p.upper_at <= v_now - coalesce(r.keep, interval '0')
          AND NOT jobq__history_filled(p.name)
        GROUP BY r.status
        HAVING pg_catalog.count(*) >= v_drop_batch
        ORDER BY r.status = 'succeeded', r.status
    LOOP
        BEGIN
            EXECUTE pg_catalog.format(
                'LOCK TABLE ONLY %I, %I, %s IN ACCESS EXCLUSIVE MODE NOWAIT',
                'jobq__history_' || v_status, 'jobq__history_' || v_status || '_default',
                (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n), ', ')
                 FROM pg_catalog.unnest(v_names) AS n)
            );
            EXECUTE pg_catalog.format(
                'DROP TABLE %s',
                (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n), ', ')
                 FROM pg_catalog.unnest(v_names) AS n)
            );
            action := 'dropped';
        EXCEPTION WHEN lock_not_available THEN
            action := 'skipped';
        END;
        FOREACH v_name IN ARRAY v_names LOOP
            partition_name := v_name;
            detail := CASE action
                WHEN 'dropped' THEN pg_catalog.format(
                    'empty, one of %s dropped together', pg_catalog.cardinality(v_names)
                )
                ELSE 'empty; its DROP''s locks were not free at once: retried by the next call'
            END;
            RETURN NEXT;
        END LOOP;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION jobq_maintain_history(interval) IS
'Admin (and run by every jobq_tick). Keeps jobq_jobs_history: makes the partitions of today and
the next two days (UTC) for each finished status, empties each partition whose jobs all
finished more than the status''s keep ago (jobq_retention, jobq_set_retention), and drops the
empty partitions of the past once a status has eight or more of them, all together: constant
time whatever the rows (TRUNCATE, DROP TABLE). Jobs in a status''s DEFAULT
partition (finished when no partition covered their time) move to the partition made for their
days; the DEFAULT partition is emptied once its newest job is older than keep, and its older
jobs deleted until then. Nothing live is ever dropped: the history holds finished jobs only.
Arguments: lock_timeout (how long each step may wait for its lock: more than 0, at most 1
minute; default 100 ms).
Result: one row per step: action (created, dropped, truncated, deleted, or skipped when its lock
was not granted: the next call retries it), partition_name, detail.
On a Citus distributed schema, where each status''s history is one table with no partitions,
it deletes instead the jobs of each status that finished more than keep ago, at most 10,000 per
status and call, the oldest first (action deleted, partition_name the status''s table; detail
says when more are left to the next call).
Errors: 22023 lock_timeout NULL, not positive or above 1 minute.
Concurrency: one call at a time per installation (a concurrent call returns no row at once).
Claims and completions never queue behind it: the partitions it creates, attaches and empties
are not the ones they write, and each of those steps waits at most lock_timeout (look-ups by id
or key may wait that long behind it); a DROP takes its locks at once or is left to a later call.
The locks taken are held until the caller''s transaction ends (commit at once: completions of a
status whose partitions were dropped wait for that commit, which is why drops come in batches).';

REVOKE EXECUTE ON FUNCTION jobq_maintain_history(interval) FROM PUBLIC;
