-- jobq_throughput: what finished and what failed over the last `since`, per `bucket` of time,
-- from what the tables record, so that a chart of the last hour shows the hour even when
-- nobody watched it (the dashboard's overview, `jobq throughput`).
--
-- Finished jobs are counted by finished_at in jobq_jobs_history, read through
-- jobq_jobs_history_finished_idx from the start of the window: the jobs kept from before it,
-- however many, are never read. Failed attempts are the entries of the jobs' error histories
-- (each entry's `at`) without a kind (a takeover of an expired lock has kind lock_expired and
-- is not a failure the handler reported); they come from the same finished jobs and from the
-- live jobs that may hold an entry of the window: the pending ones updated within it (a
-- failure sets updated_at) and the processing ones. Each job is one row, live or finished, so
-- each entry is counted once. A job keeps its 50 latest entries: one that failed more often
-- within the window is counted for those 50.
--
-- SET enable_seqscan = off and jit = off as in jobq_queue_summary, for the same reason: every
-- read has the predicate of a partial index or the range of the finished_at index, and
-- statistics gathered while most rows were of another kind must not make the planner read
-- the tables whole.
--
-- Buckets are aligned to multiples of `bucket` since the Unix epoch, so that two calls a few
-- seconds apart draw the same buckets; the first is the one that holds now() - since, the last
-- the one that holds now(). Every bucket has its row, zeros included, so a chart needs no gap
-- filling.
--! levels: monitor, admin

CREATE OR REPLACE FUNCTION jobq_throughput(
    since interval DEFAULT '1 hour',
    bucket interval DEFAULT '1 minute'
) RETURNS TABLE (
    bucket_start timestamptz,
    succeeded bigint,
    failed bigint,
    dead_letter bigint,
    cancelled bigint,
    failed_attempts bigint
)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_now timestamptz := pg_catalog.now();
    v_step double precision;
    v_first timestamptz;
    v_last integer;
BEGIN
    IF since IS NULL OR since <= interval '0' OR since > interval '7 days' THEN
        RAISE EXCEPTION 'jobq_throughput: since must be more than 0 and at most 7 days, got %',
            coalesce(since::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF bucket IS NULL OR bucket < interval '1 second' OR bucket > interval '1 day' THEN
        RAISE EXCEPTION 'jobq_throughput: bucket must be between 1 second and 1 day, got %',
            coalesce(bucket::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_step := pg_catalog.date_part('epoch', bucket);
    IF pg_catalog.date_part('epoch', since) / v_step > 10080 THEN
        RAISE EXCEPTION 'jobq_throughput: since / bucket must be at most 10080 buckets, got % / %',
            since, bucket
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use a longer bucket for a longer window.';
    END IF;
    v_first := pg_catalog.to_timestamp(
        pg_catalog.floor(pg_catalog.date_part('epoch', v_now - since) / v_step) * v_step
    );
    v_last := pg_catalog.floor(pg_catalog.date_part('epoch', v_now - v_first) / v_step)::integer;

    RETURN QUERY
    WITH finished AS (
        SELECT h.status, h.finished_at, h.errors
        FROM jobq_jobs_history AS h
        WHERE h.finished_at >= v_first
    ),

    live AS (
        -- One branch per partial index of live jobs, each matching its predicate exactly.
        SELECT j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
          AND j.updated_at >= v_first
        UNION ALL
        SELECT j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
          AND j.updated_at >= v_first
        UNION ALL
        SELECT j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND j.scheduled AND j.updated_at >= v_first
        UNION ALL
        SELECT j.errors FROM jobq_jobs AS j
        WHERE j.status = 'processing'
    ),

    events AS (
        SELECT f.status AS kind, f.finished_at AS at FROM finished AS f
        UNION ALL
        SELECT 'attempt', (e.entry ->> 'at')::timestamptz
        FROM (SELECT f.errors FROM finished AS f UNION ALL SELECT l.errors FROM live AS l) AS x,
            pg_catalog.jsonb_array_elements(
                CASE WHEN pg_catalog.jsonb_typeof(x.errors) = 'array' THEN x.errors
                     ELSE '[]'::jsonb END
            ) AS e (entry)
        WHERE pg_catalog.jsonb_typeof(e.entry -> 'at') = 'string'
          AND NOT e.entry OPERATOR(pg_catalog.?) 'kind'
    ),

    counted AS (
        SELECT
            pg_catalog.floor(
                pg_catalog.date_part('epoch', ev.at - v_first) / v_step
            )::integer AS b,
            pg_catalog.count(*) FILTER (WHERE ev.kind = 'succeeded') AS succeeded,
            pg_catalog.count(*) FILTER (WHERE ev.kind = 'failed') AS failed,
            pg_catalog.count(*) FILTER (WHERE ev.kind = 'dead_letter') AS dead_letter,
            pg_catalog.count(*) FILTER (WHERE ev.kind = 'cancelled') AS cancelled,
            pg_catalog.count(*) FILTER (WHERE ev.kind = 'attempt') AS attempts
        FROM events AS ev
        WHERE ev.at >= v_first AND ev.at <= v_now
        GROUP BY 1
    )

    SELECT v_first + bucket * s.b, coalesce(c.succeeded, 0), coalesce(c.failed, 0),
           coalesce(c.dead_letter, 0), coalesce(c.cancelled, 0), coalesce(c.attempts, 0)
    FROM pg_catalog.generate_series(0, v_last) AS s (b)
    LEFT JOIN counted AS c ON c.b = s.b
    ORDER BY s.b;
END;
$$;

COMMENT ON FUNCTION jobq_throughput(interval, interval) IS
'Admin and monitor. What finished and what failed within the last `since`, per `bucket`: the
jobs that finished succeeded, failed, dead_letter and cancelled (by finished_at, from the
history of finished jobs) and the failed attempts (the entries of the jobs'' error histories,
by their time, of finished jobs and of live jobs that are retrying or running again; a takeover
of an expired lock is not counted; a job that failed more than 50 times within the window is
counted for its latest 50). Reads the finished jobs of the window through the finished_at
index (never the older ones) and the partial indexes of pending and processing jobs.
Arguments: since (more than 0, at most 7 days; default 1 hour), bucket (1 second to 1 day,
default 1 minute; at most 10080 buckets).
Result: one row per bucket, oldest first, zeros included: (bucket_start, succeeded, failed,
dead_letter, cancelled, failed_attempts). Buckets are aligned to multiples of bucket since the
Unix epoch; the first holds now() - since, the last holds now().
Errors: 22023 since or bucket out of range, or too many buckets.
Concurrency: a snapshot; it takes no lock.';

REVOKE EXECUTE ON FUNCTION jobq_throughput(interval, interval) FROM PUBLIC;
