-- jobq__metrics_count (private): counts, for jobq_metrics(), what one statement of a jobq
-- function did to a set of jobs, in the caller's transaction (a rollback takes the counts back
-- with the change they count), with one statement whatever the number of jobs.
--
-- The first counted statement of a transaction upserts this backend's rows of
-- jobq_metric_counters (shard = its pid): no other session writes those rows, so counting
-- never waits for another session's transaction. Later ones in the same transaction append
-- to jobq_metric_deltas instead: each update of a row that the transaction already updated
-- walks every version it made of it (none can be removed before it ends), so a transaction
-- that enqueues thousands of jobs one by one would spend most of its time there. A
-- transaction-local setting (jobq.metrics_counted, reset at the end of every transaction, and
-- by a rollback to a savepoint) remembers the first upsert.
--
-- kind says what happened to each job (queues[i], job_types[i]), and so the status it left
-- and the one it entered:
--   enqueued      (none) -> pending
--   started       pending -> processing; seconds[i]: the wait, observed in jobq_wait_seconds
--   succeeded     processing -> succeeded; seconds[i]: the run, in jobq_run_seconds
--   failed        processing -> statuses[i]; seconds[i]: the run, in jobq_run_seconds
--   lock_expired  processing -> statuses[i] (a takeover)
--   released      processing -> statuses[i] (pending, or cancelled with a cancel request)
--   cancelled     pending -> cancelled
--   requeued      statuses[i] -> pending
--   pruned        statuses[i] -> (deleted)
-- dead_lettered and cancelled count the jobs that entered those statuses, whatever the kind.
--
-- Label sets are bounded (jobq__metric_labels): a (queue, job_type) is counted under its own
-- names once admitted to jobq_metric_labels, else under the overflow label set ('', ''). A
-- counter row of this backend for a pair proves it admitted (jobq_metrics_forget removes a
-- pair's rows with its admission), so the hot case, one job of a pair this backend has
-- counted before in the first counted statement of a transaction (an enqueue in autocommit,
-- a claim or completion of one job), updates that row and asks nothing else: an UPDATE of an
-- existing row costs no more than the upsert it replaces. Every other call looks its
-- distinct pairs up in jobq_metric_labels (one index probe each) and calls
-- jobq__metric_labels when one is not admitted.
-- Does nothing when jobq_configure(metrics => false) turned metrics off. Returns the number of
-- counter rows written (0 when none): an integer, not void, because the callers call it in a
-- CTE of their statement, and Citus cannot carry a void column between the steps of a plan.
--! replaces: jobq__metrics_count(text, text[], text[], text[], double precision[])

CREATE OR REPLACE FUNCTION jobq__metrics_count(
    kind text,
    queues text[],
    job_types text[],
    statuses text[] DEFAULT NULL,
    seconds double precision[] DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_row jobq_metric_counters;
    v_rows jobq_metric_counters[];
    v_to text;
    v_from text;
    v_seconds double precision;
    v_buckets bigint[] := '{}'::bigint[];
    v_n bigint := 1::bigint;
    v_uniform boolean := FALSE;
    v_sum double precision;
    v_list integer[];
    v_fast boolean := TRUE;
    v_written integer;  -- counter rows written by the fast path
    v_pid integer;  -- this backend's shard, read only where a statement needs it
    v_unknown boolean;  -- a pair of the call is not admitted
    v_pair text;  -- the one pair of a call of one job, as jobq.metrics_pair holds it
BEGIN
    -- Counting off (a new installation's default): one read of the setting, nothing else.
    -- Read on its own, never in the WHERE of an upsert below: a SELECT that reads a table
    -- makes Citus push such an INSERT down to the shard, and its deparse of that statement
    -- for a table without a distribution column is not valid SQL. Read through the key
    -- (WHERE s.singleton): this statement's plan is kept for the session, made by whichever
    -- caller ran it first, and without a qual its only plan is a sequential scan; made under
    -- the enable_seqscan = off of jobq_fail_many or jobq_release_orphans, that plan is costed
    -- past jit_above_cost, and every later enqueue, completion or failure of the session
    -- would compile it.
    IF NOT (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton) THEN
        RETURN 0;
    END IF;

    -- The hot case: one job of a hot kind, the first counted statement of a transaction, of a
    -- pair this backend counts already (see the header): its row is updated, nothing else.
    IF pg_catalog.cardinality(queues) = 1
       AND kind IN ('enqueued', 'started', 'succeeded')
       AND pg_catalog.current_setting('jobq.metrics_counted', TRUE) IS DISTINCT FROM 'on' THEN
        v_pid := pg_catalog.pg_backend_pid();
        IF kind = 'enqueued' THEN
            UPDATE jobq_metric_counters AS c
            SET enqueued = c.enqueued + 1, jobs_pending = c.jobs_pending + 1
            WHERE c.queue = queues[1] AND c.job_type = job_types[1] AND c.shard = v_pid;
        ELSE
            v_seconds := CASE WHEN seconds[1] IS NOT NULL THEN greatest(seconds[1], 0) END;
            IF v_seconds IS NOT NULL THEN
                v_buckets := pg_catalog.array_fill(0::bigint, ARRAY[22]);
                v_buckets[jobq__metric_bucket(v_seconds)] := 1;
            END IF;
            IF kind = 'started' THEN
                UPDATE jobq_metric_counters AS c
                SET
                    started = c.started + 1,
                    jobs_pending = c.jobs_pending - 1,
                    jobs_processing = c.jobs_processing + 1,
                    wait_buckets = jobq__metric_add(c.wait_buckets, v_buckets),
                    wait_sum = c.wait_sum + coalesce(v_seconds, 0)
                WHERE c.queue = queues[1] AND c.job_type = job_types[1] AND c.shard = v_pid;
            ELSE
                UPDATE jobq_metric_counters AS c
                SET
                    succeeded = c.succeeded + 1,
                    jobs_processing = c.jobs_processing - 1,
                    jobs_succeeded = c.jobs_succeeded + 1,
                    run_buckets = jobq__metric_add(c.run_buckets, v_buckets),
                    run_sum = c.run_sum + coalesce(v_seconds, 0)
                WHERE c.queue = queues[1] AND c.job_type = job_types[1] AND c.shard = v_pid;
            END IF;
            v_buckets := '{}'::bigint[];
            v_seconds := NULL;
        END IF;
        IF FOUND THEN
            PERFORM pg_catalog.set_config('jobq.metrics_counted', 'on', TRUE);
            RETURN 1;
        END IF;
    END IF;

    -- Any other call: a pair not admitted (one index probe per distinct pair) sends its jobs
    -- to the label set jobq__metric_labels gives it.
    -- One job: the pair last found admitted in this transaction (jobq.metrics_pair, reset at
    -- its end; no jobq_metrics_forget can run while it writes jobs) needs no probe, so a
    -- transaction that counts one pair statement after statement probes once.
    IF pg_catalog.cardinality(queues) = 1 THEN
        v_pair := pg_catalog.length(queues[1])::text || ':' || queues[1] || job_types[1];
        IF pg_catalog.current_setting('jobq.metrics_pair', TRUE) IS NOT DISTINCT FROM v_pair THEN
            v_unknown := FALSE;
        ELSE
            v_unknown := NOT (queues[1] = '' AND job_types[1] = '') AND NOT EXISTS (
                SELECT FROM jobq_metric_labels AS l
                WHERE l.queue = queues[1] AND l.job_type = job_types[1]
            );
            IF NOT v_unknown THEN
                PERFORM pg_catalog.set_config('jobq.metrics_pair', v_pair, TRUE);
            END IF;
        END IF;
    ELSE
        v_unknown := EXISTS (
            SELECT
            FROM (
                SELECT DISTINCT r.queue, r.job_type
                FROM ROWS FROM (pg_catalog.unnest(queues), pg_catalog.unnest(job_types))
                    AS r (queue, job_type)
            ) AS p
            WHERE NOT (p.queue = '' AND p.job_type = '')
              AND NOT EXISTS (
                  SELECT FROM jobq_metric_labels AS l
                  WHERE l.queue = p.queue AND l.job_type = p.job_type
              )
        );
    END IF;
    IF v_unknown THEN
        SELECT
            pg_catalog.array_agg(m.label_queue ORDER BY r.ord),
            pg_catalog.array_agg(m.label_job_type ORDER BY r.ord),
            pg_catalog.array_agg(r.status ORDER BY r.ord),
            pg_catalog.array_agg(r.seconds ORDER BY r.ord)
        INTO queues, job_types, statuses, seconds
        FROM ROWS FROM (
            pg_catalog.unnest(queues), pg_catalog.unnest(job_types),
            pg_catalog.unnest(statuses), pg_catalog.unnest(seconds)
        ) WITH ORDINALITY AS r (queue, job_type, status, seconds, ord)
        INNER JOIN jobq__metric_labels(queues, job_types) AS m
            ON m.queue = r.queue AND m.job_type = r.job_type;
    END IF;

    -- The hot kinds, counted by the first counted statement of a transaction (every claim and
    -- completion of a worker, every jobq_enqueue in autocommit): one statement that names
    -- only the columns the kind changes. PL/pgSQL builds again, in every transaction, the
    -- state of each expression and statement it runs, so this cost follows the size of the
    -- code run, and the general path below (a grouping, a row of every column, then the
    -- upsert) is several times the code of this one.
    IF pg_catalog.current_setting('jobq.metrics_counted', TRUE) IS DISTINCT FROM 'on' THEN
        IF kind = 'enqueued' THEN
            INSERT INTO jobq_metric_counters AS c (shard, queue, job_type, enqueued, jobs_pending)
            SELECT pg_catalog.pg_backend_pid(), r.queue, r.job_type, pg_catalog.count(*),
                   pg_catalog.count(*)
            FROM ROWS FROM (pg_catalog.unnest(queues), pg_catalog.unnest(job_types))
                AS r (queue, job_type)
            GROUP BY r.queue, r.job_type
            ORDER BY r.queue, r.job_type
            ON CONFLICT (queue, job_type, shard) DO UPDATE SET
                enqueued = c.enqueued + excluded.enqueued,
                jobs_pending = c.jobs_pending + excluded.jobs_pending;
        ELSIF kind = 'started' THEN
            INSERT INTO jobq_metric_counters AS c (
                shard, queue, job_type, started, jobs_pending, jobs_processing, wait_buckets,
                wait_sum
            )
            SELECT pg_catalog.pg_backend_pid(), r.queue, r.job_type, pg_catalog.count(*),
                   -pg_catalog.count(*), pg_catalog.count(*),
                   jobq__metric_histogram(
                       pg_catalog.array_agg(jobq__metric_bucket(r.seconds))
                       FILTER (WHERE r.seconds IS NOT NULL)
                   ),
                   coalesce(pg_catalog.sum(greatest(r.seconds, 0)), 0)
            FROM ROWS FROM (
                pg_catalog.unnest(queues), pg_catalog.unnest(job_types),
                pg_catalog.unnest(seconds)
            ) AS r (queue, job_type, seconds)
            GROUP BY r.queue, r.job_type
            ORDER BY r.queue, r.job_type
            ON CONFLICT (queue, job_type, shard) DO UPDATE SET
                started = c.started + excluded.started,
                jobs_pending = c.jobs_pending + excluded.jobs_pending,
                jobs_processing = c.jobs_processing + excluded.jobs_processing,
                wait_buckets = jobq__metric_add(c.wait_buckets, excluded.wait_buckets),
                wait_sum = c.wait_sum + excluded.wait_sum;
        ELSIF kind = 'succeeded' THEN
            INSERT INTO jobq_metric_counters AS c (
                shard, queue, job_type, succeeded, jobs_processing, jobs_succeeded, run_buckets,
                run_sum
            )
            SELECT pg_catalog.pg_backend_pid(), r.queue, r.job_type, pg_catalog.count(*),
                   -pg_catalog.count(*), pg_catalog.count(*),
                   jobq__metric_histogram(
                       pg_catalog.array_agg(jobq__metric_bucket(r.seconds))
                       FILTER (WHERE r.seconds IS NOT NULL)
                   ),
                   coalesce(pg_catalog.sum(greatest(r.seconds, 0)), 0)
            FROM ROWS FROM (
                pg_catalog.unnest(queues), pg_catalog.unnest(job_types),
                pg_catalog.unnest(seconds)
            ) AS r (queue, job_type, seconds)
            GROUP BY r.queue, r.job_type
            ORDER BY r.queue, r.job_type
            ON CONFLICT (queue, job_type, shard) DO UPDATE SET
                succeeded = c.succeeded + excluded.succeeded,
                jobs_processing = c.jobs_processing + excluded.jobs_processing,
                jobs_succeeded = c.jobs_succeeded + excluded.jobs_succeeded,
                run_buckets = jobq__metric_add(c.run_buckets, excluded.run_buckets),
                run_sum = c.run_sum + excluded.run_sum;
        ELSE
            v_fast := FALSE;
        END IF;
        IF v_fast THEN
            GET DIAGNOSTICS v_written = ROW_COUNT;
            IF v_written > 0 THEN
                PERFORM pg_catalog.set_config('jobq.metrics_counted', 'on', TRUE);
            END IF;
            RETURN v_written;
        END IF;
    END IF;

    IF pg_catalog.cardinality(queues) > 1 AND kind IN ('enqueued', 'started', 'succeeded') THEN
        -- A batch whose jobs all made the same change: uniform when they share the first one's
        -- queue and job type, as the claims and completions of a worker usually do. Then the
        -- row is worked out as for one job, without the grouping below.
        SELECT
            pg_catalog.count(*),
            pg_catalog.bool_and(r.queue = queues[1] AND r.job_type = job_types[1]),
            pg_catalog.sum(greatest(r.seconds, 0)),
            pg_catalog.array_agg(jobq__metric_bucket(r.seconds)) FILTER (WHERE r.seconds IS NOT NULL)
        INTO v_n, v_uniform, v_sum, v_list
        FROM ROWS FROM (
            pg_catalog.unnest(queues), pg_catalog.unnest(job_types), pg_catalog.unnest(seconds)
        ) AS r (queue, job_type, seconds);
    END IF;

    IF pg_catalog.cardinality(queues) = 1 OR v_uniform THEN
        -- One job (jobq_enqueue, jobq_complete, jobq_fail, a claim of one), or v_n jobs that
        -- made the same change: worked out here.
        v_to := CASE kind
            WHEN 'enqueued' THEN 'pending'
            WHEN 'started' THEN 'processing'
            WHEN 'succeeded' THEN 'succeeded'
            WHEN 'cancelled' THEN 'cancelled'
            WHEN 'requeued' THEN 'pending'
            WHEN 'pruned' THEN NULL
            ELSE statuses[1]
        END;
        v_from := CASE kind
            WHEN 'enqueued' THEN NULL
            WHEN 'started' THEN 'pending'
            WHEN 'cancelled' THEN 'pending'
            WHEN 'requeued' THEN statuses[1]
            WHEN 'pruned' THEN statuses[1]
            ELSE 'processing'
        END;
        IF v_uniform THEN
            v_seconds := coalesce(v_sum, 0::double precision);
            IF kind IN ('started', 'succeeded') THEN
                v_buckets := jobq__metric_histogram(v_list);
            END IF;
        ELSE
            -- NULL: not observed (a run of a claim made before claimed_at existed).
            v_seconds := CASE WHEN seconds[1] IS NOT NULL THEN greatest(seconds[1], 0) END;
            IF kind IN ('started', 'succeeded', 'failed') AND v_seconds IS NOT NULL THEN
                v_buckets := pg_catalog.array_fill(0::bigint, ARRAY[22]);
                v_buckets[jobq__metric_bucket(v_seconds)] := 1;
            END IF;
        END IF;
        v_row := ROW(
            pg_catalog.pg_backend_pid(), queues[1], job_types[1],
            (kind = 'enqueued')::integer * v_n, (kind = 'started')::integer * v_n,
            (kind = 'succeeded')::integer * v_n, (kind = 'failed')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'dead_letter')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'cancelled')::integer * v_n,
            (kind = 'lock_expired')::integer * v_n, (kind = 'released')::integer * v_n,
            (kind = 'requeued')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'pending')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'pending')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'processing')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'processing')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'succeeded')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'succeeded')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'failed')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'failed')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'dead_letter')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'dead_letter')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'cancelled')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'cancelled')::integer * v_n,
            CASE WHEN kind = 'started' THEN v_buckets ELSE '{}'::bigint[] END,
            CASE
                WHEN kind = 'started' THEN coalesce(v_seconds, 0::double precision)
                ELSE 0::double precision
            END,
            CASE WHEN kind <> 'started' THEN v_buckets ELSE '{}'::bigint[] END,
            CASE
                WHEN kind IN ('succeeded', 'failed') THEN coalesce(v_seconds, 0::double precision)
                ELSE 0::double precision
            END
        );
        v_rows := ARRAY[v_row];
    ELSE
        SELECT pg_catalog.array_agg(ROW(
            pg_catalog.pg_backend_pid(), a.queue, a.job_type, a.enqueued, a.started,
            a.succeeded, a.failed, a.dead_lettered, a.cancelled, a.lock_expired, a.released,
            a.requeued, a.jobs_pending, a.jobs_processing, a.jobs_succeeded, a.jobs_failed,
            a.jobs_dead_letter, a.jobs_cancelled, a.wait_buckets, a.wait_sum, a.run_buckets,
            a.run_sum
        )::jobq_metric_counters ORDER BY a.queue, a.job_type)
        INTO v_rows
        FROM (
            SELECT
                e.queue, e.job_type,
                pg_catalog.count(*) FILTER (WHERE kind = 'enqueued') AS enqueued,
                pg_catalog.count(*) FILTER (WHERE kind = 'started') AS started,
                pg_catalog.count(*) FILTER (WHERE kind = 'succeeded') AS succeeded,
                pg_catalog.count(*) FILTER (WHERE kind = 'failed') AS failed,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'dead_letter') AS dead_lettered,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'cancelled') AS cancelled,
                pg_catalog.count(*) FILTER (WHERE kind = 'lock_expired') AS lock_expired,
                pg_catalog.count(*) FILTER (WHERE kind = 'released') AS released,
                pg_catalog.count(*) FILTER (WHERE kind = 'requeued') AS requeued,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'pending')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'pending') AS jobs_pending,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'processing')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'processing')
                    AS jobs_processing,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'succeeded')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'succeeded')
                    AS jobs_succeeded,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'failed')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'failed') AS jobs_failed,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'dead_letter')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'dead_letter')
                    AS jobs_dead_letter,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'cancelled')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'cancelled')
                    AS jobs_cancelled,
                CASE
                    WHEN kind = 'started'
                        THEN jobq__metric_histogram(
                            pg_catalog.array_agg(e.bucket) FILTER (WHERE e.seconds IS NOT NULL)
                        )
                    ELSE '{}'::bigint[]
                END AS wait_buckets,
                CASE
                    WHEN kind = 'started' THEN coalesce(pg_catalog.sum(e.seconds), 0)
                    ELSE 0
                END AS wait_sum,
                CASE
                    WHEN kind IN ('succeeded', 'failed')
                        THEN jobq__metric_histogram(
                            pg_catalog.array_agg(e.bucket) FILTER (WHERE e.seconds IS NOT NULL)
                        )
                    ELSE '{}'::bigint[]
                END AS run_buckets,
                CASE
                    WHEN kind IN ('succeeded', 'failed') THEN coalesce(pg_catalog.sum(e.seconds), 0)
                    ELSE 0
                END AS run_sum
            FROM (
                SELECT
                    r.queue, r.job_type,
                    CASE kind
                        WHEN 'enqueued' THEN 'pending'
                        WHEN 'started' THEN 'processing'
                        WHEN 'succeeded' THEN 'succeeded'
                        WHEN 'cancelled' THEN 'cancelled'
                        WHEN 'requeued' THEN 'pending'
                        WHEN 'pruned' THEN NULL
                        ELSE r.status
                    END AS to_status,
                    CASE kind
                        WHEN 'enqueued' THEN NULL
                        WHEN 'started' THEN 'pending'
                        WHEN 'cancelled' THEN 'pending'
                        WHEN 'requeued' THEN r.status
                        WHEN 'pruned' THEN r.status
                        ELSE 'processing'
                    END AS from_status,
                    CASE WHEN r.seconds IS NOT NULL THEN greatest(r.seconds, 0) END AS seconds,
                    jobq__metric_bucket(r.seconds) AS bucket
                FROM ROWS FROM (
                    pg_catalog.unnest(queues), pg_catalog.unnest(job_types),
                    pg_catalog.unnest(statuses), pg_catalog.unnest(seconds)
                ) AS r (queue, job_type, status, seconds)
            ) AS e
            GROUP BY e.queue, e.job_type
        ) AS a;
        IF v_rows IS NULL THEN
            RETURN 0;
        END IF;
    END IF;

    IF pg_catalog.current_setting('jobq.metrics_counted', TRUE) = 'on' THEN
        INSERT INTO jobq_metric_deltas
        SELECT r.* FROM pg_catalog.unnest(v_rows) AS r;
        RETURN 0;
    END IF;
    -- In (queue, job_type) order: the rows are this backend's own, but a fold by
    -- jobq_metrics() may hold some of them for a moment, and always in this order.
    INSERT INTO jobq_metric_counters AS c
    SELECT r.* FROM pg_catalog.unnest(v_rows) AS r
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
        wait_buckets = CASE
            WHEN pg_catalog.cardinality(excluded.wait_buckets) = 0 THEN c.wait_buckets
            ELSE jobq__metric_add(c.wait_buckets, excluded.wait_buckets)
        END,
        wait_sum = c.wait_sum + excluded.wait_sum,
        run_buckets = CASE
            WHEN pg_catalog.cardinality(excluded.run_buckets) = 0 THEN c.run_buckets
            ELSE jobq__metric_add(c.run_buckets, excluded.run_buckets)
        END,
        run_sum = c.run_sum + excluded.run_sum;
    PERFORM pg_catalog.set_config('jobq.metrics_counted', 'on', TRUE);
    RETURN pg_catalog.cardinality(v_rows);
END;
$$;

COMMENT ON FUNCTION jobq__metrics_count(text, text[], text[], text[], double precision[]) IS
'Private. Counts what one statement did to the jobs (queues[i], job_types[i]): kind enqueued,
started, succeeded, failed, lock_expired, released, cancelled, requeued or pruned; statuses[i]
the status entered (failed, lock_expired, released) or left (requeued, pruned); seconds[i] the
wait (started) or run time (succeeded, failed). The first call of a transaction upserts this
backend''s rows of jobq_metric_counters, later ones append to jobq_metric_deltas; nothing when
metrics are off. Returns the number of counter rows written.';

REVOKE EXECUTE ON FUNCTION jobq__metrics_count(text, text[], text[], text[], double precision[])
FROM PUBLIC;
