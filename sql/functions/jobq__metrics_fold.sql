-- jobq__metrics_fold (private): moves into shard 0 of jobq_metric_counters, summed by (queue,
-- job_type), the rows of jobq_metric_deltas and the rows of jobq_metric_counters whose backend
-- has exited, so that neither table grows with the transactions and connections that ever
-- counted something. Rows another session holds are skipped (SKIP LOCKED): that session is
-- still writing them, and a later fold takes them. One statement; the sums do not change.
-- Called by jobq_metrics() and jobq_prune(), only in a writable READ COMMITTED transaction.
-- Returns how many rows it folded.

CREATE OR REPLACE FUNCTION jobq__metrics_fold() RETURNS bigint
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_folded bigint;
BEGIN
    WITH moved AS (
        DELETE FROM jobq_metric_deltas AS d
        WHERE d.ctid = ANY (ARRAY(
            SELECT x.ctid FROM jobq_metric_deltas AS x FOR UPDATE SKIP LOCKED
        ))
        RETURNING d.*
    ),

    gone AS (
        DELETE FROM jobq_metric_counters AS c
        WHERE (c.queue, c.job_type, c.shard) IN (
            SELECT x.queue, x.job_type, x.shard
            FROM jobq_metric_counters AS x
            WHERE x.shard <> 0
              AND NOT EXISTS (
                  SELECT FROM pg_catalog.pg_stat_activity AS a WHERE a.pid = x.shard
              )
            FOR UPDATE SKIP LOCKED
        )
        RETURNING c.*
    ),

    m AS MATERIALIZED (
        SELECT * FROM moved
        UNION ALL
        SELECT * FROM gone
    ),

    wait_b AS (
        SELECT m.queue, m.job_type, u.i, pg_catalog.sum(u.n) AS n
        FROM m
        CROSS JOIN LATERAL pg_catalog.unnest(m.wait_buckets) WITH ORDINALITY AS u (n, i)
        GROUP BY m.queue, m.job_type, u.i
    ),

    run_b AS (
        SELECT m.queue, m.job_type, u.i, pg_catalog.sum(u.n) AS n
        FROM m
        CROSS JOIN LATERAL pg_catalog.unnest(m.run_buckets) WITH ORDINALITY AS u (n, i)
        GROUP BY m.queue, m.job_type, u.i
    ),

    sums AS (
        SELECT
            m.queue, m.job_type, pg_catalog.count(*) AS n_rows,
            pg_catalog.sum(m.enqueued)::bigint AS enqueued,
            pg_catalog.sum(m.started)::bigint AS started,
            pg_catalog.sum(m.succeeded)::bigint AS succeeded,
            pg_catalog.sum(m.failed)::bigint AS failed,
            pg_catalog.sum(m.dead_lettered)::bigint AS dead_lettered,
            pg_catalog.sum(m.cancelled)::bigint AS cancelled,
            pg_catalog.sum(m.lock_expired)::bigint AS lock_expired,
            pg_catalog.sum(m.released)::bigint AS released,
            pg_catalog.sum(m.requeued)::bigint AS requeued,
            pg_catalog.sum(m.jobs_pending)::bigint AS jobs_pending,
            pg_catalog.sum(m.jobs_processing)::bigint AS jobs_processing,
            pg_catalog.sum(m.jobs_succeeded)::bigint AS jobs_succeeded,
            pg_catalog.sum(m.jobs_failed)::bigint AS jobs_failed,
            pg_catalog.sum(m.jobs_dead_letter)::bigint AS jobs_dead_letter,
            pg_catalog.sum(m.jobs_cancelled)::bigint AS jobs_cancelled,
            pg_catalog.sum(m.wait_sum) AS wait_sum,
            pg_catalog.sum(m.run_sum) AS run_sum
        FROM m
        GROUP BY m.queue, m.job_type
    ),

    written AS (
        INSERT INTO jobq_metric_counters AS c
        SELECT
            0, s.queue, s.job_type, s.enqueued, s.started, s.succeeded, s.failed,
            s.dead_lettered, s.cancelled, s.lock_expired, s.released, s.requeued,
            s.jobs_pending, s.jobs_processing, s.jobs_succeeded, s.jobs_failed,
            s.jobs_dead_letter, s.jobs_cancelled,
            coalesce(ARRAY(
                SELECT w.n::bigint FROM wait_b AS w
                WHERE w.queue = s.queue AND w.job_type = s.job_type
                ORDER BY w.i
            ), '{}'),
            s.wait_sum,
            coalesce(ARRAY(
                SELECT r.n::bigint FROM run_b AS r
                WHERE r.queue = s.queue AND r.job_type = s.job_type
                ORDER BY r.i
            ), '{}'),
            s.run_sum
        FROM sums AS s
        ORDER BY s.queue, s.job_type
        ON CONFLICT (queue, job_type, shard) DO UPDATE SET
            enqueued = c.enqueued + excluded.enqueued,
            started = c.started + excluded.started,
            succeeded = c.succeeded + excluded.succeeded,
            failed = c.failed + excluded.failed,
            dead_lettered = c.dead_lettered + excluded.dead_lettered,
            cancelled = c.cancelled + excluded.cancelled,
            lock_expired = c.lock_expired + excluded.lock_expired,
            released = c.released + excluded.released,
            requeued = c.requeued + excluded.requeued,
            jobs_pending = c.jobs_pending + excluded.jobs_pending,
            jobs_processing = c.jobs_processing + excluded.jobs_processing,
            jobs_succeeded = c.jobs_succeeded + excluded.jobs_succeeded,
            jobs_failed = c.jobs_failed + excluded.jobs_failed,
            jobs_dead_letter = c.jobs_dead_letter + excluded.jobs_dead_letter,
            jobs_cancelled = c.jobs_cancelled + excluded.jobs_cancelled,
            wait_buckets = jobq__metric_add(c.wait_buckets, excluded.wait_buckets),
            wait_sum = c.wait_sum + excluded.wait_sum,
            run_buckets = jobq__metric_add(c.run_buckets, excluded.run_buckets),
            run_sum = c.run_sum + excluded.run_sum
        RETURNING 1
    )

    -- written runs whether or not it is read (a data-modifying WITH always does).
    SELECT coalesce(pg_catalog.sum(s.n_rows), 0)::bigint INTO v_folded FROM sums AS s;
    RETURN v_folded;
END;
$$;

COMMENT ON FUNCTION jobq__metrics_fold() IS
'Private. Folds the rows of jobq_metric_deltas, and those of jobq_metric_counters whose
backend has exited, into shard 0 (summed by queue and job_type; rows held by another session
are skipped). Result: how many rows it folded.';

REVOKE EXECUTE ON FUNCTION jobq__metrics_fold() FROM PUBLIC;
