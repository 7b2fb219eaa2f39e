-- jobq_maintain_indexes: gives back the space of a bloated index of jobq_jobs, run by every
-- jobq_tick and callable alone (pg_cron, psql).
--
-- Why a rebuild: while a snapshot holds the xmin horizon back, every version of jobq_jobs
-- stays, and its B-tree indexes grow to hold the entries of every job of the hold. VACUUM
-- makes those pages reusable once the snapshot ends; it never gives them back, so the indexes
-- keep the size they grew to. jobq_jobs holds only live jobs (finished ones are in the
-- history), so once the backlog is worked off an index needs a few pages, and rebuilding it is
-- short: one scan of the table's heap and a sort of its live entries.
--
-- Why REINDEX and not REINDEX CONCURRENTLY: CONCURRENTLY cannot run in a transaction block, so
-- no function can run it (every Worker and every client would have to); it waits for every
-- transaction older than itself, a held snapshot included; and a failed run leaves an invalid
-- index behind to be dropped. REINDEX takes SHARE on jobq_jobs (writers wait, readers go on)
-- and ACCESS EXCLUSIVE on the index for the rebuild, so the rebuild is bounded instead:
--   * it waits at most lock_timeout for its locks (the function's own setting; the caller's is
--     restored on return), and gives up ('skipped', retried by the next call): claims and
--     enqueues queue behind its request for at most that long;
--   * it runs only while the heap is at most 256 MB and the live jobs at most 100,000 (by the
--     table's statistics, which err high after a VACUUM: on the side of waiting), so the
--     rebuild itself is a scan of little (tens of milliseconds); a larger table is left for
--     later ('deferred');
--   * one index per call, the most bloated first; an index at most once per 2 minutes
--     (jobq_index_rebuilds), so that the churn of a busy queue, which keeps every index
--     several times what its few live entries need, costs one short rebuild per index per
--     2 minutes at most.
-- An index is bloated when it is at least 1 MB and more than bloat_ratio times what its
-- entries need: its entries as its last VACUUM or build counted them (pg_class.reltuples of
-- the index: a B-tree VACUUM counts them exactly, where the table's live rows are VACUUM's
-- extrapolation and can be many times too high) times their width (the index's key columns,
-- 32 bytes for each of variable width), at 90 % full pages. Entries a held snapshot still
-- keeps are counted, so while one is held nothing looks bloated: a rebuild then would keep
-- every entry the snapshot may still see. An index never counted (reltuples -1) is left.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_maintain_indexes(
    lock_timeout interval DEFAULT '50 milliseconds',
    bloat_ratio real DEFAULT 4
) RETURNS TABLE (action text, index_name text, detail text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET lock_timeout = 50
AS $$
DECLARE
    v_table CONSTANT regclass := 'jobq_jobs'::regclass;
    v_heap bigint;
    v_live double precision;
    v_index oid;
    v_schema text;
    v_name text;
    v_bytes bigint;
    v_need bigint;
    v_after bigint;
    v_start timestamptz;
    -- The indexes rebuilt in the last 2 minutes, read before the look-up of the catalogue:
    -- Citus cannot join its distributed jobq_index_rebuilds with catalogue tables.
    v_recent text[];
BEGIN
    IF jobq_maintain_indexes.lock_timeout IS NULL
        OR jobq_maintain_indexes.lock_timeout <= interval '0'
        OR jobq_maintain_indexes.lock_timeout > interval '1 minute'
    THEN
        RAISE EXCEPTION 'jobq_maintain_indexes: lock_timeout must be more than 0 and at most '
                        '1 minute, got %', coalesce(jobq_maintain_indexes.lock_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_maintain_indexes.bloat_ratio IS NULL
        OR NOT jobq_maintain_indexes.bloat_ratio BETWEEN 2 AND 1000
    THEN
        RAISE EXCEPTION 'jobq_maintain_indexes: bloat_ratio must be from 2 to 1000, got %',
                        coalesce(jobq_maintain_indexes.bloat_ratio::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One session maintains at a time: a concurrent call (another Worker's tick) returns at
    -- once. The key is made from the installation's secret lock_seed, as the other advisory
    -- keys, so no other role can hold it.
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(
        pg_catalog.format('jobq maintain_indexes %L', pg_catalog.current_schema()),
        (SELECT s.lock_seed FROM jobq_settings AS s WHERE s.singleton)
    )) THEN
        RETURN;
    END IF;

    v_heap := pg_catalog.pg_relation_size(v_table);
    v_live := greatest(pg_catalog.pg_stat_get_live_tuples(v_table)::double precision, 0);

    v_recent := ARRAY(
        SELECT r.index_name FROM jobq_index_rebuilds AS r
        WHERE r.rebuilt_at > pg_catalog.now() - interval '2 minutes'
    );
    -- The most bloated index not rebuilt in the last 2 minutes.
    SELECT c.oid, n.nspname::text, c.relname::text, pg_catalog.pg_relation_size(c.oid), w.need
    INTO v_index, v_schema, v_name, v_bytes, v_need
    FROM pg_catalog.pg_index AS i
    JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid
    JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    CROSS JOIN LATERAL (
        SELECT 8192 * (2 + pg_catalog.ceil(
            c.reltuples::double precision
            * (4 + 8 * pg_catalog.ceil((8 + pg_catalog.sum(
                CASE WHEN a.attlen > 0 THEN a.attlen ELSE 32 END
            )) / 8.0)) / (8192 * 0.9)
        ))::bigint AS need
        FROM pg_catalog.pg_attribute AS a
        WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attnum > 0
    ) AS w
    WHERE i.indrelid OPERATOR(pg_catalog.=) v_table::oid
      AND i.indisvalid AND i.indisready AND c.reltuples >= 0
      AND pg_catalog.pg_relation_size(c.oid) >= 1048576
      AND pg_catalog.pg_relation_size(c.oid) > jobq_maintain_indexes.bloat_ratio * w.need
      AND c.relname::text <> ALL (v_recent)
    ORDER BY pg_catalog.pg_relation_size(c.oid)::double precision / w.need DESC, c.relname
    LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    index_name := v_name;

    IF v_heap > 268435456 OR v_live > 100000 THEN
        action := 'deferred';
        detail := pg_catalog.format(
            '%s bytes, %s needed; the table (%s bytes, %s live rows) is too large to rebuild '
            'within a short lock: retried by a later call', v_bytes, v_need, v_heap, v_live
        );
        RETURN NEXT;
        RETURN;
    END IF;

    -- Local to this call: the SET clause above restores the caller's value on return.
    PERFORM pg_catalog.set_config(
        'lock_timeout',
        pg_catalog.ceil(
            extract(EPOCH FROM jobq_maintain_indexes.lock_timeout) * 1000
        )::bigint::text || 'ms',
        TRUE
    );
    BEGIN
        v_start := pg_catalog.clock_timestamp();
        -- Named with its schema: no other relation of that name on the search_path is rebuilt.
        EXECUTE pg_catalog.format('REINDEX INDEX %I.%I', v_schema, v_name);
    EXCEPTION WHEN lock_not_available THEN
        action := 'skipped';
        detail := 'lock not granted within lock_timeout: retried by the next call';
        RETURN NEXT;
        RETURN;
    END;
    v_after := pg_catalog.pg_relation_size(v_index);
    INSERT INTO jobq_index_rebuilds AS r (index_name, rebuilt_at, bytes_before, bytes_after, took)
    VALUES (v_name, v_start, v_bytes, v_after, pg_catalog.clock_timestamp() - v_start)
    ON CONFLICT ON CONSTRAINT jobq_index_rebuilds_pkey DO UPDATE
    SET rebuilt_at = excluded.rebuilt_at, bytes_before = excluded.bytes_before,
        bytes_after = excluded.bytes_after, took = excluded.took;
    action := 'rebuilt';
    detail := pg_catalog.format(
        '%s -> %s bytes (%s needed) in %s ms', v_bytes, v_after, v_need,
        pg_catalog.round((extract(EPOCH FROM pg_catalog.clock_timestamp() - v_start) * 1000)::numeric, 1)
    );
    RETURN NEXT;
END;
$$;

COMMENT ON FUNCTION jobq_maintain_indexes(interval, real) IS
'Admin (and run by every jobq_tick). Rebuilds (REINDEX) the most bloated index of jobq_jobs, if
any: one at least 1 MB and more than bloat_ratio times what its live entries need, not rebuilt
in the last 2 minutes (jobq_index_rebuilds). It brings the indexes back to their size after a
held snapshot made them grow (VACUUM makes their pages reusable, never returns them). A rebuild
runs only while jobq_jobs is small (heap at most 256 MB, at most 100,000 live jobs), so that it
holds the writers of jobq_jobs for a short scan.
Arguments: lock_timeout (how long the rebuild may wait for its locks: more than 0, at most 1
minute; default 50 ms), bloat_ratio (from 2 to 1000; default 4).
Result: at most one row: action (rebuilt; skipped when its locks were not granted in time;
deferred when the table is too large now: a later call retries either), index_name, detail
(sizes in bytes, and the rebuild''s milliseconds).
Errors: 22023 lock_timeout NULL, not positive or above 1 minute; 22023 bloat_ratio NULL or
outside 2..1000.
Concurrency: one call at a time per installation (a concurrent call returns no row at once).
Claims, enqueues and completions queue behind its lock request for at most lock_timeout, then
wait for the rebuild (a scan of the small table) and the caller''s commit: commit at once.
Readers of jobq_jobs that use the index being rebuilt wait for it too. No row is changed or
lost.';

REVOKE EXECUTE ON FUNCTION jobq_maintain_indexes(interval, real) FROM PUBLIC;
