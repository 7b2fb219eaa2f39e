-- jobq_metrics: the Prometheus metrics of this installation, one row per sample, for
-- `jobq metrics` and any exporter. Counters and histograms come from jobq_metric_counters
-- (written by the jobq functions in the transactions they count: exact, and pruning does not
-- lower them), the gauge jobq_jobs too (the same rows keep the change in each status's
-- count); the age of the oldest available job comes from the claim index. Nothing here reads
-- jobq_jobs row by row: the cost is that of the counter rows (about (live backends + 1) per
-- queue and job type) plus a few index probes per (job_type, queue, priority) that has jobs
-- available, whatever the number of finished jobs.
--
-- Each call first folds jobq_metric_deltas and the rows of backends that have exited into
-- shard 0 (jobq__metrics_fold; in READ COMMITTED and writable transactions only: a scrape on
-- a standby just reads both tables), so that neither grows with every transaction and
-- connection that ever counted something.
--
-- SET jit = off: the per-queue gauges ask jobq_metric_labels whether each queue is admitted,
-- and with the estimates of the recursive reads of the claim index the statement is costed
-- past jit_above_cost: each scrape would compile it, which costs far more than reading the
-- few hundred rows (docs/decisions/0003-planner-settings-of-hot-functions.md).
--! levels: monitor, admin

CREATE OR REPLACE FUNCTION jobq_metrics() RETURNS TABLE (
    metric text,
    labels jsonb,
    value double precision
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_bitmapscan = off
SET jit = off
AS $$
DECLARE
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_limited_queues text[];
    v_limited_oldest timestamptz[];
BEGIN
    IF pg_catalog.current_setting('transaction_read_only') = 'off'
       AND pg_catalog.current_setting('transaction_isolation') = 'read committed' THEN
        PERFORM jobq__metrics_fold();
    END IF;

    -- Limited jobs (jobq_jobs_limited_idx, outside the claim index): the oldest of each queue,
    -- read from that index (its entries are the pending limited jobs only, never a finished
    -- one) by jobq__available, whose enable_seqscan = off keeps it there: statistics gathered
    -- while most rows were pending limited jobs made the planner read the whole table here.
    -- In a statement of its own: under Citus the statement below runs on the schema's node,
    -- where the helper's read of jobq_jobs would be a distributed query nested in it.
    SELECT
        pg_catalog.array_agg(a.queue), pg_catalog.array_agg(a.available_at)
    INTO v_limited_queues, v_limited_oldest
    FROM (
        SELECT l.queue, pg_catalog.min(l.oldest_available_at) AS available_at
        FROM jobq__available(limited => TRUE) AS l
        GROUP BY l.queue
    ) AS a;

    RETURN QUERY
    WITH totals AS MATERIALIZED (
        SELECT
            c.queue, c.job_type,
            pg_catalog.sum(c.enqueued) AS enqueued,
            pg_catalog.sum(c.started) AS started,
            pg_catalog.sum(c.succeeded) AS succeeded,
            pg_catalog.sum(c.failed) AS failed,
            pg_catalog.sum(c.dead_lettered) AS dead_lettered,
            pg_catalog.sum(c.cancelled) AS cancelled,
            pg_catalog.sum(c.lock_expired) AS lock_expired,
            pg_catalog.sum(c.released) AS released,
            pg_catalog.sum(c.requeued) AS requeued,
            pg_catalog.sum(c.jobs_pending) AS jobs_pending,
            pg_catalog.sum(c.jobs_processing) AS jobs_processing,
            pg_catalog.sum(c.jobs_succeeded) AS jobs_succeeded,
            pg_catalog.sum(c.jobs_failed) AS jobs_failed,
            pg_catalog.sum(c.jobs_dead_letter) AS jobs_dead_letter,
            pg_catalog.sum(c.jobs_cancelled) AS jobs_cancelled,
            pg_catalog.sum(c.wait_sum) AS wait_sum,
            pg_catalog.sum(c.run_sum) AS run_sum
        FROM (
            SELECT * FROM jobq_metric_counters
            UNION ALL
            SELECT * FROM jobq_metric_deltas
        ) AS c
        GROUP BY c.queue, c.job_type
    ),

    -- Per (queue, job_type, histogram, bucket): the count in that bucket, summed over shards.
    buckets AS MATERIALIZED (
        SELECT c.queue, c.job_type, h.name, h.i, pg_catalog.sum(h.n) AS n
        FROM (
            SELECT * FROM jobq_metric_counters
            UNION ALL
            SELECT * FROM jobq_metric_deltas
        ) AS c
        CROSS JOIN LATERAL (
            SELECT 'jobq_wait_seconds'::text, w.n, w.i
            FROM pg_catalog.unnest(c.wait_buckets) WITH ORDINALITY AS w (n, i)
            UNION ALL
            SELECT 'jobq_run_seconds'::text, r.n, r.i
            FROM pg_catalog.unnest(c.run_buckets) WITH ORDINALITY AS r (n, i)
        ) AS h (name, n, i)
        GROUP BY c.queue, c.job_type, h.name, h.i
    ),

    -- Every (queue, job_type) with both histograms, all buckets, cumulative ("le").
    histograms AS (
        SELECT
            t.queue, t.job_type, n.name, p.i,
            coalesce(pg_catalog.sum(b.n) OVER (
                PARTITION BY t.queue, t.job_type, n.name ORDER BY p.i
            ), 0) AS cumulative
        FROM totals AS t
        CROSS JOIN (VALUES ('jobq_wait_seconds'::text), ('jobq_run_seconds')) AS n (name)
        CROSS JOIN pg_catalog.generate_series(1, 22) AS p (i)
        LEFT JOIN buckets AS b
            ON b.queue = t.queue AND b.job_type = t.job_type AND b.name = n.name AND b.i = p.i
    ),

    queues AS (
        SELECT DISTINCT t.queue FROM totals AS t
    ),

    -- The ranges of the claim index with jobs: one per (job_type, queue) pair, keyed by the
    -- hashes of the names; one probe each (a skip scan), as jobq_dequeue finds them.
    ranges AS (
        WITH RECURSIVE r (ht, hq) AS (
            (
                SELECT
                    pg_catalog.hashtextextended(j.job_type, 0),
                    pg_catalog.hashtextextended(j.queue, 0)
                FROM jobq_jobs AS j
                WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
                ORDER BY
                    pg_catalog.hashtextextended(j.job_type, 0),
                    pg_catalog.hashtextextended(j.queue, 0)
                LIMIT 1
            )

            UNION ALL

            SELECT n.ht, n.hq
            FROM r
            CROSS JOIN LATERAL (
                SELECT
                    pg_catalog.hashtextextended(j.job_type, 0) AS ht,
                    pg_catalog.hashtextextended(j.queue, 0) AS hq
                FROM jobq_jobs AS j
                WHERE (pg_catalog.hashtextextended(j.job_type, 0),
                       pg_catalog.hashtextextended(j.queue, 0)) > (r.ht, r.hq)
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.limit_group IS NULL
                ORDER BY
                    pg_catalog.hashtextextended(j.job_type, 0),
                    pg_catalog.hashtextextended(j.queue, 0)
                LIMIT 1
            ) AS n
        )

        SELECT r.ht, r.hq FROM r
    ),

    -- In each range, the oldest available_at of each priority present: the first entry of
    -- each priority's run of the index (one probe per priority), with its job's queue. (Two
    -- pairs whose hashes collide share a range, of which this reads the first job of each
    -- priority: the other pair's oldest could be missed, in that case only.)
    oldest_by_priority AS (
        WITH RECURSIVE o (ht, hq, queue, priority, available_at) AS (
            SELECT r.ht, r.hq, f.queue, f.priority, f.available_at
            FROM ranges AS r
            CROSS JOIN LATERAL (
                SELECT j.queue, j.priority, j.available_at
                FROM jobq_jobs AS j
                WHERE pg_catalog.hashtextextended(j.job_type, 0) = r.ht
                  AND pg_catalog.hashtextextended(j.queue, 0) = r.hq
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.limit_group IS NULL
                ORDER BY j.priority DESC, j.available_at ASC
                LIMIT 1
            ) AS f

            UNION ALL

            SELECT o.ht, o.hq, f.queue, f.priority, f.available_at
            FROM o
            CROSS JOIN LATERAL (
                SELECT j.queue, j.priority, j.available_at
                FROM jobq_jobs AS j
                WHERE pg_catalog.hashtextextended(j.job_type, 0) = o.ht
                  AND pg_catalog.hashtextextended(j.queue, 0) = o.hq
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.limit_group IS NULL
                  AND j.priority < o.priority
                ORDER BY j.priority DESC, j.available_at ASC
                LIMIT 1
            ) AS f
        )

        SELECT o.queue, o.available_at FROM o
    ),

    -- Limited jobs: the oldest of each queue, read above.
    limited AS (
        SELECT l.queue, l.available_at
        FROM ROWS FROM (pg_catalog.unnest(v_limited_queues), pg_catalog.unnest(v_limited_oldest))
            AS l (queue, available_at)
    ),

    -- Scheduled jobs that have come due but that no claim has promoted yet (no worker claims
    -- at all): the 1,000 oldest, from jobq_jobs_scheduled_idx.
    due AS (
        SELECT j.queue, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending'
          AND j.scheduled
          AND j.available_at <= v_now
        ORDER BY j.available_at
        LIMIT 1000
    ),

    -- Per queue of an admitted label set; the queues of the others under the overflow
    -- label set's queue '' (the label sets of a scrape are bounded, jobq__metric_labels).
    oldest AS (
        SELECT
            CASE
                WHEN EXISTS (SELECT FROM jobq_metric_labels AS m WHERE m.queue = a.queue)
                    THEN a.queue
                ELSE ''
            END AS queue,
            pg_catalog.min(a.available_at) AS available_at
        FROM (
            SELECT b.queue, b.available_at FROM oldest_by_priority AS b
            UNION ALL
            SELECT d.queue, d.available_at FROM due AS d
            UNION ALL
            SELECT l.queue, l.available_at FROM limited AS l
        ) AS a
        GROUP BY 1
    )

    SELECT s.metric, s.labels, s.value
    FROM (
        SELECT
            k.metric,
            pg_catalog.jsonb_build_object('queue', t.queue, 'job_type', t.job_type) AS labels,
            k.value::double precision AS value,
            0 AS i
        FROM totals AS t
        CROSS JOIN LATERAL (
            VALUES
                ('jobq_enqueued_total'::text, t.enqueued),
                ('jobq_started_total', t.started),
                ('jobq_succeeded_total', t.succeeded),
                ('jobq_failed_total', t.failed),
                ('jobq_dead_lettered_total', t.dead_lettered),
                ('jobq_cancelled_total', t.cancelled),
                ('jobq_lock_expired_total', t.lock_expired),
                ('jobq_released_total', t.released),
                ('jobq_requeued_total', t.requeued),
                ('jobq_wait_seconds_sum', t.wait_sum::numeric),
                ('jobq_run_seconds_sum', t.run_sum::numeric)
        ) AS k (metric, value)

        UNION ALL

        SELECT
            'jobq_jobs',
            pg_catalog.jsonb_build_object('queue', g.queue, 'status', g.status),
            pg_catalog.sum(g.n)::double precision,
            0
        FROM totals AS t
        CROSS JOIN LATERAL (
            VALUES
                (t.queue, 'pending'::text, t.jobs_pending),
                (t.queue, 'processing', t.jobs_processing),
                (t.queue, 'succeeded', t.jobs_succeeded),
                (t.queue, 'failed', t.jobs_failed),
                (t.queue, 'dead_letter', t.jobs_dead_letter),
                (t.queue, 'cancelled', t.jobs_cancelled)
        ) AS g (queue, status, n)
        GROUP BY g.queue, g.status

        UNION ALL

        SELECT
            'jobq_oldest_available_age_seconds',
            pg_catalog.jsonb_build_object('queue', q.queue),
            coalesce(
                greatest(extract(epoch FROM v_now - o.available_at), 0),
                0
            )::double precision,
            0
        FROM (SELECT u.queue FROM queues AS u UNION SELECT o2.queue FROM oldest AS o2) AS q
        LEFT JOIN oldest AS o ON o.queue = q.queue

        UNION ALL

        -- 1 while the functions count (jobq_configure(metrics => true)); 0 while the
        -- counters, the histograms and jobq_jobs stand still.
        SELECT
            'jobq_metrics_counting', '{}'::jsonb,
            (CASE WHEN st.metrics THEN 1 ELSE 0 END)::double precision, 0
        FROM jobq_settings AS st

        UNION ALL

        SELECT
            h.name || '_bucket',
            pg_catalog.jsonb_build_object(
                'queue', h.queue, 'job_type', h.job_type,
                'le', coalesce((jobq__metric_bounds())[h.i]::text, '+Inf')
            ),
            h.cumulative::double precision,
            h.i
        FROM histograms AS h

        UNION ALL

        SELECT
            h.name || '_count',
            pg_catalog.jsonb_build_object('queue', h.queue, 'job_type', h.job_type),
            h.cumulative::double precision,
            0
        FROM histograms AS h
        WHERE h.i = 22
    ) AS s
    -- Buckets in the order of their bounds, +Inf last, as Prometheus lists them.
    ORDER BY s.metric, s.labels OPERATOR(pg_catalog.-) 'le'::text, s.i;
END;
$$;

COMMENT ON FUNCTION jobq_metrics() IS
'The Prometheus metrics of this installation, one row per sample. Counters per queue and
job_type, exact and transactional (a rolled-back change counts nothing), never lowered by
jobq_prune: jobq_enqueued_total, jobq_started_total (claims of pending jobs),
jobq_succeeded_total, jobq_failed_total (failed attempts: jobq_fail, jobq_fail_many),
jobq_dead_lettered_total, jobq_cancelled_total, jobq_lock_expired_total (claims taken over),
jobq_released_total (claims given back unstarted), jobq_requeued_total. Gauges: jobq_jobs (per
queue and status), jobq_oldest_available_age_seconds (per queue; 0 when no job is
available) and jobq_metrics_counting (1 while the functions count, 0 while counting is off,
as on a new installation: jobq_configure(metrics => true)). Histograms per queue and job_type, as _bucket (label le, cumulative, +Inf last),
_sum and _count rows: jobq_wait_seconds (available_at to claim) and jobq_run_seconds (claim to
completion or failure).
Label sets: at most jobq_settings.metrics_label_sets (queue, job_type) pairs (default 1000,
jobq_configure(metrics_label_sets => ...)) are counted under their own names, first come
first served; the others are counted under the overflow label set, queue "" and job_type ""
(for the per-queue gauges, queue ""), so a scrape holds at most that many label sets plus
one; jobq_metrics_forget() removes those without jobs.
Cost: the rows of jobq_metric_counters (about one per live backend per queue and job type)
and a few index probes per (job_type, queue, priority) with jobs available; finished jobs are
never read. Each call first folds the rows of transactions that counted several statements
and of backends that have exited into one per queue and job_type (READ COMMITTED, writable
transactions only).
Arguments: none.
Result: rows (metric, labels, value): the metric name as Prometheus shows it, the labels as a
JSON object of strings, the value.
Errors: none.
Concurrency: reads without waiting; the fold skips rows another session holds.';

REVOKE EXECUTE ON FUNCTION jobq_metrics() FROM PUBLIC;
