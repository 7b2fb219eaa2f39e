-- jobq_complete_and_claim: jobq_complete_many, then a claim for the same worker, in one call,
-- in which the dependents that the completion releases go to the worker directly ("hand-off").
--
-- Why: a chain's step (complete a job, claim the next, which that completion releases) made
-- the released job's row three versions (waiting, then pending, then processing), put it in
-- jobq_jobs_claim_idx for the claim to find it again with a search of the ranges, and notified
-- its queue although the transaction that released it was about to claim it. Here a released
-- job that this worker may take goes from waiting to processing in the statement that
-- releases it: one version, no claim-index entry, no NOTIFY, and no jobq_dequeue when the
-- hand-off fills the batch (docs/decisions/0019-hand-off-of-released-jobs.md has the figures).
--
-- What a hand-off keeps of the claim's rules (docs/workflows.md, "Hand-off"):
--   * filters: a handed-off job is of one of job_types and in one of queues (NULL: any);
--   * order: a hand-off happens only when the claim would find nothing else to take first: no
--     pending job without a limit in the worker's ranges of jobq_jobs_claim_idx (one probe per
--     job type, or per (job type, queue) pair, or one of the whole index without filters), no
--     pending limited job of its job types (jobq_jobs_limited_idx), no scheduled job come due
--     (the claim would promote it), no expired claim (the claim would take it back). Else the
--     dependents are released pending, as jobq_complete_many releases them, and jobq_dequeue
--     claims in claim order. These probes are conservative: they look at whole ranges, so a
--     job of a paused queue or of a job type whose name's hash collides stops a hand-off (never
--     a claim). With a queue filter and no job type filter (or more than 64 pairs) nothing is
--     handed off: jobq_jobs_claim_idx is keyed by job type first, and probing every queue's
--     ranges would cost what the claim's search costs;
--   * limits: a job with a limit_group is never handed off (the limit's count and locks are
--     jobq__claim_limited's): it is released pending and the claim takes it under its limit;
--   * paused queues, cancel requests, scheduled dependents (a run_at still to come): never
--     handed off, released as usual;
--   * fencing: a handed-off job is claimed as jobq_dequeue claims it (attempts + 1, locked_by,
--     locked_at, locked_until from lock_timeout, claimed_at), so a completion with another
--     worker_id or attempt does not count;
--   * metrics: counted as started, with a wait of 0 (it was available from the same instant);
--     the worker's record (jobq__worker_seen) is kept as by every claim.
-- The rows of dependents are locked in id order, as jobq__dependents_finished locks them, and
-- their counts decremented under that lock: a release is exactly once whatever the path. One
-- freed dependent (a chain's step) is locked, released and handed off by one UPDATE by key:
-- a step's cost is the number and set-up of its statements more than its rows, so it runs
-- four (docs/decisions/0023-chain-step-in-four-statements.md).
--
-- The SET clauses are jobq_complete_many's and jobq_dequeue's, for the same reasons
-- (docs/decisions/0003-planner-settings-of-hot-functions.md); nested loops are turned off for
-- the statements that join many jobs or dependents only, as those functions do, and are back
-- on for the jobq_dequeue that tops up the batch, whose plans are kept for the session.
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_complete_and_claim(
    job_ids uuid[],
    worker_id text,
    attempts integer[] DEFAULT NULL,
    results jsonb[] DEFAULT NULL,
    job_types text[] DEFAULT NULL,
    batch_size integer DEFAULT 1,
    lock_timeout interval DEFAULT '5 minutes',
    queues text[] DEFAULT NULL
) RETURNS SETOF jobq_jobs
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_bitmapscan = off
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_done uuid[];
    v_awaited text[];
    v_ids uuid[];
    v_parents uuid[];
    v_completed record;
    v_longest integer;
    v_nestloop text;
    v_hand integer := 0;
    v_handed uuid[];
    v_queues text[];
    v_paused text[];
    v_row jobq_jobs;
    v_next jobq_jobs;
    v_id uuid;
    v_freed uuid[];
    v_counts integer[];
    v_seen boolean;
    v_metrics boolean;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_lock_until timestamptz;
BEGIN
    -- Every argument is checked before anything changes, with jobq_complete_many's and
    -- jobq_dequeue's messages and bounds.
    IF jobq_complete_and_claim.batch_size IS NULL OR jobq_complete_and_claim.batch_size < 1
       OR jobq_complete_and_claim.batch_size > 10000 THEN
        RAISE EXCEPTION 'jobq_complete_and_claim: batch_size must be between 1 and 10000, got %',
            coalesce(jobq_complete_and_claim.batch_size::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_complete_and_claim.lock_timeout IS NULL
       OR jobq_complete_and_claim.lock_timeout <= interval '0' THEN
        RAISE EXCEPTION 'jobq_complete_and_claim: lock_timeout must be a positive interval, got %',
            coalesce(jobq_complete_and_claim.lock_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lock_until := v_now + least(jobq_complete_and_claim.lock_timeout, interval '1000 years');
    IF pg_catalog.cardinality(jobq_complete_and_claim.job_types) > 1000 THEN
        RAISE EXCEPTION 'jobq_complete_and_claim: job_types has % names, at most 1000 are allowed',
            pg_catalog.cardinality(jobq_complete_and_claim.job_types)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.cardinality(jobq_complete_and_claim.queues) > 1000 THEN
        RAISE EXCEPTION 'jobq_complete_and_claim: queues has % names, at most 1000 are allowed',
            pg_catalog.cardinality(jobq_complete_and_claim.queues)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(pg_catalog.array_to_string(jobq_complete_and_claim.job_types, '')) > 200
    THEN
        SELECT pg_catalog.max(pg_catalog.length(t.name)) INTO v_longest
        FROM pg_catalog.unnest(jobq_complete_and_claim.job_types) AS t (name);
        IF v_longest > 200 THEN
            RAISE EXCEPTION 'jobq_complete_and_claim: job_types has a name of % characters, at '
                'most 200 are allowed', v_longest
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    IF pg_catalog.length(pg_catalog.array_to_string(jobq_complete_and_claim.queues, '')) > 200 THEN
        SELECT pg_catalog.max(pg_catalog.length(q.name)) INTO v_longest
        FROM pg_catalog.unnest(jobq_complete_and_claim.queues) AS q (name);
        IF v_longest > 200 THEN
            RAISE EXCEPTION 'jobq_complete_and_claim: queues has a name of % characters, at most '
                '200 are allowed', v_longest
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    -- The completion, as jobq_complete_many's (with its checks of job_ids, worker_id,
    -- attempts and results, raised before anything changes).
    -- Called as an expression, not from a query: no plan, portal or tuple store for its
    -- one row.
    v_completed := jobq__complete_rows(
        'jobq_complete_and_claim', jobq_complete_and_claim.job_ids,
        jobq_complete_and_claim.worker_id, jobq_complete_and_claim.attempts,
        jobq_complete_and_claim.results
    );
    v_done := v_completed.done;
    v_ids := v_completed.awaited;
    v_parents := v_completed.parents;

    -- The dependents of the completed jobs, each with the number of its dependencies that this
    -- completion ends (two arrays that one aggregate fills in the same order), are read after the
    -- completion's statement: a dependent enqueued while the completion waited for its
    -- parent's row is committed by then, and seen. With them, when a hand-off may happen,
    -- the same statement asks whether it may: only when the claim would find nothing to take
    -- before them (see the header), by index probes, each LIMIT 1 in its index's order, so
    -- that no plan reads a table. It also reads the paused queues (never handed off), whether
    -- metrics are counted, and whether the worker's record is fresh, which spares the call
    -- of jobq__worker_seen below (its test, as it makes it).
    IF v_parents IS NOT NULL
       AND NOT (
           jobq_complete_and_claim.queues IS NULL
           OR (jobq_complete_and_claim.job_types IS NOT NULL
               AND pg_catalog.cardinality(jobq_complete_and_claim.job_types)
                   * pg_catalog.cardinality(jobq_complete_and_claim.queues) <= 64)
       ) THEN
        -- Nothing is handed off (see the header): the dependents alone.
        SELECT
            pg_catalog.array_agg(f.job_id),
            pg_catalog.array_agg(f.n)
        INTO v_freed, v_counts
        FROM (
            SELECT e.job_id, pg_catalog.count(*)::integer AS n
            FROM jobq_job_dependencies AS e
            WHERE e.depends_on = ANY (v_parents)
            GROUP BY e.job_id
        ) AS f;
    ELSIF v_parents IS NOT NULL THEN
        -- One statement per shape of the filters, so that each plan holds only the
        -- probes it runs (a plan's set-up costs as much as its probes).
        IF jobq_complete_and_claim.job_types IS NULL THEN
            SELECT fr.ids, fr.ns, CASE WHEN
                -- pending jobs without a limit in the worker's ranges
                (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
                    ORDER BY
                        pg_catalog.hashtextextended(j.job_type, 0),
                        pg_catalog.hashtextextended(j.queue, 0)
                    LIMIT 1
                )
                -- pending limited jobs of any job type
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'pending' AND NOT j.scheduled
                      AND j.limit_group IS NOT NULL
                    ORDER BY
                        j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                        j.priority DESC, j.available_at, j.id
                    LIMIT 1
                )
                -- a scheduled job come due, which the claim would promote
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'pending' AND j.scheduled AND j.available_at <= v_now
                    ORDER BY j.available_at
                    LIMIT 1
                )
                -- an expired claim, which the claim would take back or end
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'processing' AND j.locked_until < v_now
                    ORDER BY j.locked_until
                    LIMIT 1
                )
            THEN 0 ELSE jobq_complete_and_claim.batch_size END,
            (SELECT pg_catalog.array_agg(p.queue) FROM jobq_paused_queues AS p),
            (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton),
            EXISTS (
                SELECT
                FROM jobq_workers AS w
                WHERE w.worker_id = jobq_complete_and_claim.worker_id
                  AND w.last_claim_at > v_now - interval '5 seconds'
                  AND (w.job_types OPERATOR(pg_catalog.=) jobq_complete_and_claim.job_types
                       OR (w.job_types IS NULL AND jobq_complete_and_claim.job_types IS NULL))
                  AND (w.queues OPERATOR(pg_catalog.=) jobq_complete_and_claim.queues
                       OR (w.queues IS NULL AND jobq_complete_and_claim.queues IS NULL))
            )
            FROM (
                SELECT
                    pg_catalog.array_agg(f.job_id) AS ids,
                    pg_catalog.array_agg(f.n) AS ns
                FROM (
                    SELECT e.job_id, pg_catalog.count(*)::integer AS n
                    FROM jobq_job_dependencies AS e
                    WHERE e.depends_on = ANY (v_parents)
                    GROUP BY e.job_id
                ) AS f
            ) AS fr
            INTO v_freed, v_counts, v_hand, v_paused, v_metrics, v_seen;
        ELSIF jobq_complete_and_claim.queues IS NULL THEN
            SELECT fr.ids, fr.ns, CASE WHEN
                -- pending jobs without a limit in the worker's ranges
                EXISTS (
                    SELECT
                    FROM pg_catalog.unnest(jobq_complete_and_claim.job_types) AS t (job_type)
                    CROSS JOIN LATERAL (
                        SELECT j.id
                        FROM jobq_jobs AS j
                        WHERE pg_catalog.hashtextextended(j.job_type, 0)
                              = pg_catalog.hashtextextended(t.job_type, 0)
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NULL
                        ORDER BY pg_catalog.hashtextextended(j.queue, 0)
                        LIMIT 1
                    ) AS f
                )
                -- pending limited jobs of its job types
                OR EXISTS (
                    SELECT
                    FROM pg_catalog.unnest(jobq_complete_and_claim.job_types) AS t (job_type)
                    CROSS JOIN LATERAL (
                        SELECT j.id
                        FROM jobq_jobs AS j
                        WHERE j.job_type = t.job_type
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NOT NULL
                        ORDER BY
                            j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                            j.priority DESC, j.available_at, j.id
                        LIMIT 1
                    ) AS f
                )
                -- a scheduled job come due, which the claim would promote
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'pending' AND j.scheduled AND j.available_at <= v_now
                    ORDER BY j.available_at
                    LIMIT 1
                )
                -- an expired claim, which the claim would take back or end
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'processing' AND j.locked_until < v_now
                    ORDER BY j.locked_until
                    LIMIT 1
                )
            THEN 0 ELSE jobq_complete_and_claim.batch_size END,
            (SELECT pg_catalog.array_agg(p.queue) FROM jobq_paused_queues AS p),
            (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton),
            EXISTS (
                SELECT
                FROM jobq_workers AS w
                WHERE w.worker_id = jobq_complete_and_claim.worker_id
                  AND w.last_claim_at > v_now - interval '5 seconds'
                  AND (w.job_types OPERATOR(pg_catalog.=) jobq_complete_and_claim.job_types
                       OR (w.job_types IS NULL AND jobq_complete_and_claim.job_types IS NULL))
                  AND (w.queues OPERATOR(pg_catalog.=) jobq_complete_and_claim.queues
                       OR (w.queues IS NULL AND jobq_complete_and_claim.queues IS NULL))
            )
            FROM (
                SELECT
                    pg_catalog.array_agg(f.job_id) AS ids,
                    pg_catalog.array_agg(f.n) AS ns
                FROM (
                    SELECT e.job_id, pg_catalog.count(*)::integer AS n
                    FROM jobq_job_dependencies AS e
                    WHERE e.depends_on = ANY (v_parents)
                    GROUP BY e.job_id
                ) AS f
            ) AS fr
            INTO v_freed, v_counts, v_hand, v_paused, v_metrics, v_seen;
        ELSE
            SELECT fr.ids, fr.ns, CASE WHEN
                -- pending jobs without a limit in the worker's ranges
                EXISTS (
                    SELECT
                    FROM pg_catalog.unnest(jobq_complete_and_claim.job_types) AS t (job_type)
                    CROSS JOIN pg_catalog.unnest(jobq_complete_and_claim.queues) AS q (queue)
                    CROSS JOIN LATERAL (
                        SELECT j.id
                        FROM jobq_jobs AS j
                        WHERE pg_catalog.hashtextextended(j.job_type, 0)
                              = pg_catalog.hashtextextended(t.job_type, 0)
                          AND pg_catalog.hashtextextended(j.queue, 0)
                              = pg_catalog.hashtextextended(q.queue, 0)
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NULL
                        ORDER BY j.priority DESC, j.available_at, j.id
                        LIMIT 1
                    ) AS f
                )
                -- pending limited jobs of its job types
                OR EXISTS (
                    SELECT
                    FROM pg_catalog.unnest(jobq_complete_and_claim.job_types) AS t (job_type)
                    CROSS JOIN LATERAL (
                        SELECT j.id
                        FROM jobq_jobs AS j
                        WHERE j.job_type = t.job_type
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NOT NULL
                        ORDER BY
                            j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                            j.priority DESC, j.available_at, j.id
                        LIMIT 1
                    ) AS f
                )
                -- a scheduled job come due, which the claim would promote
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'pending' AND j.scheduled AND j.available_at <= v_now
                    ORDER BY j.available_at
                    LIMIT 1
                )
                -- an expired claim, which the claim would take back or end
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'processing' AND j.locked_until < v_now
                    ORDER BY j.locked_until
                    LIMIT 1
                )
            THEN 0 ELSE jobq_complete_and_claim.batch_size END,
            (SELECT pg_catalog.array_agg(p.queue) FROM jobq_paused_queues AS p),
            (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton),
            EXISTS (
                SELECT
                FROM jobq_workers AS w
                WHERE w.worker_id = jobq_complete_and_claim.worker_id
                  AND w.last_claim_at > v_now - interval '5 seconds'
                  AND (w.job_types OPERATOR(pg_catalog.=) jobq_complete_and_claim.job_types
                       OR (w.job_types IS NULL AND jobq_complete_and_claim.job_types IS NULL))
                  AND (w.queues OPERATOR(pg_catalog.=) jobq_complete_and_claim.queues
                       OR (w.queues IS NULL AND jobq_complete_and_claim.queues IS NULL))
            )
            FROM (
                SELECT
                    pg_catalog.array_agg(f.job_id) AS ids,
                    pg_catalog.array_agg(f.n) AS ns
                FROM (
                    SELECT e.job_id, pg_catalog.count(*)::integer AS n
                    FROM jobq_job_dependencies AS e
                    WHERE e.depends_on = ANY (v_parents)
                    GROUP BY e.job_id
                ) AS f
            ) AS fr
            INTO v_freed, v_counts, v_hand, v_paused, v_metrics, v_seen;
        END IF;
        v_hand := coalesce(v_hand, jobq_complete_and_claim.batch_size);
    END IF;

    IF pg_catalog.cardinality(v_freed) = 1 THEN
        -- One dependent (a chain's step, a pipeline's): the release, as below, of one row by
        -- its key, in one UPDATE without a join (no hash table to build, no planner setting to
        -- change). The row is locked by the UPDATE itself, which computes its new values from
        -- the row as locked (the latest version): the count is tested there, and so are the
        -- columns a hand-off depends on.
        UPDATE jobq_jobs AS j
        SET (
            waiting_on, status, available_at, attempts, locked_at, locked_by, locked_until,
            claimed_at, updated_at
        ) = (
            SELECT
                j.waiting_on - v_counts[1],
                CASE WHEN s.hand THEN 'processing' WHEN s.free THEN 'pending' ELSE 'waiting' END,
                CASE WHEN s.free AND NOT j.scheduled THEN v_now ELSE j.available_at END,
                CASE WHEN s.hand THEN j.attempts + 1 ELSE j.attempts END,
                CASE WHEN s.hand THEN v_now ELSE j.locked_at END,
                CASE WHEN s.hand THEN jobq_complete_and_claim.worker_id ELSE j.locked_by END,
                CASE WHEN s.hand THEN v_lock_until ELSE j.locked_until END,
                CASE WHEN s.hand THEN v_now ELSE j.claimed_at END,
                v_now
            FROM (
                SELECT
                    j.waiting_on <= v_counts[1] AS free,
                    j.waiting_on <= v_counts[1]
                    AND v_hand > 0
                    AND NOT j.scheduled
                    AND j.limit_group IS NULL
                    AND j.cancel_requested_at IS NULL
                    AND (jobq_complete_and_claim.job_types IS NULL
                         OR j.job_type = ANY (jobq_complete_and_claim.job_types))
                    AND (jobq_complete_and_claim.queues IS NULL
                         OR j.queue = ANY (jobq_complete_and_claim.queues))
                    AND (v_paused IS NULL OR j.queue <> ALL (v_paused)) AS hand
            ) AS s
        )
        WHERE j.id = v_freed[1]
          AND j.waiting_on > 0
        RETURNING j.*
        INTO v_next;
        IF v_next.status = 'processing' THEN
            v_handed := ARRAY[v_next.id];
            -- Counted as started when jobq_configure(metrics) is on (the setting is read
            -- with the probes, which a hand-off follows), as jobq__metrics_count counts it.
            IF v_metrics THEN
                PERFORM jobq__metrics_count(
                    'started'::text, ARRAY[v_next.queue], ARRAY[v_next.job_type], NULL::text[],
                    ARRAY[0::double precision]
                );
            END IF;
        ELSIF v_next.status = 'pending' AND v_next.available_at <= v_now THEN
            -- Released pending: announced, as jobq__dependents_finished announces it.
            PERFORM jobq__notify(ARRAY[v_next.queue]);
        END IF;
    ELSIF v_freed IS NOT NULL THEN
        v_nestloop := pg_catalog.current_setting('enable_nestloop');
        PERFORM pg_catalog.set_config('enable_nestloop', 'off', TRUE);
        -- The release, as jobq__dependents_finished's for succeeded jobs (see its comments:
        -- the same locks in id order, the same counts), in which up to v_hand of the jobs it
        -- makes available now, that the worker may take, are claimed for it instead
        -- (priority DESC, then id: all become available at v_now). The columns a hand-off
        -- tests are read from the rows as locked (FOR UPDATE returns the latest version),
        -- and the UPDATE tests the count again, so that a hand-off never makes a job
        -- processing that still waits.
        WITH freed AS MATERIALIZED (
            SELECT f.job_id, f.n
            FROM ROWS FROM (
                pg_catalog.unnest(v_freed), pg_catalog.unnest(v_counts)
            ) AS f (job_id, n)
        ),

        locked AS MATERIALIZED (
            SELECT
                j.id, j.waiting_on, j.scheduled, j.limit_group, j.cancel_requested_at,
                j.job_type, j.queue, j.priority
            FROM jobq_jobs AS j
            WHERE j.id = ANY (ARRAY(SELECT freed.job_id FROM freed))
              AND j.waiting_on > 0
            ORDER BY j.id
            FOR UPDATE
        ),

        handed AS MATERIALIZED (
            SELECT l.id
            FROM locked AS l
            JOIN freed AS f ON f.job_id = l.id
            WHERE v_hand > 0
              AND l.waiting_on <= f.n
              AND NOT l.scheduled
              AND l.limit_group IS NULL
              AND l.cancel_requested_at IS NULL
              AND (jobq_complete_and_claim.job_types IS NULL
                   OR l.job_type = ANY (jobq_complete_and_claim.job_types))
              AND (jobq_complete_and_claim.queues IS NULL
                   OR l.queue = ANY (jobq_complete_and_claim.queues))
              AND (v_paused IS NULL OR l.queue <> ALL (v_paused))
            ORDER BY l.priority DESC, l.id
            LIMIT v_hand
        ),

        released AS (
            UPDATE jobq_jobs AS j
            SET
                waiting_on = j.waiting_on - freed.n,
                status = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL THEN 'processing'
                    WHEN j.waiting_on <= freed.n THEN 'pending'
                    ELSE 'waiting'
                END,
                available_at = CASE
                    WHEN j.waiting_on <= freed.n AND NOT j.scheduled THEN v_now
                    ELSE j.available_at
                END,
                attempts = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL THEN j.attempts + 1
                    ELSE j.attempts
                END,
                locked_at = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL THEN v_now
                    ELSE j.locked_at
                END,
                locked_by = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL
                        THEN jobq_complete_and_claim.worker_id
                    ELSE j.locked_by
                END,
                locked_until = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL THEN v_lock_until
                    ELSE j.locked_until
                END,
                claimed_at = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL THEN v_now
                    ELSE j.claimed_at
                END,
                updated_at = v_now
            FROM locked
            JOIN freed ON freed.job_id = locked.id
            LEFT JOIN handed ON handed.id = locked.id
            WHERE j.id = ANY (ARRAY(SELECT locked.id FROM locked))
              AND j.id = locked.id
              AND j.waiting_on > 0
            RETURNING j.id, j.status, j.queue, j.job_type, j.available_at
        ),

        counted AS MATERIALIZED (
            SELECT jobq__metrics_count(
                'started'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
                NULL::text[], pg_catalog.array_agg(0::double precision)
            ) AS n
            FROM released AS c
            WHERE c.status = 'processing'
            HAVING pg_catalog.count(*) > 0
               AND (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
        )

        SELECT
            pg_catalog.array_agg(r.id) FILTER (WHERE r.status = 'processing'),
            pg_catalog.array_agg(DISTINCT r.queue) FILTER (
                WHERE r.status = 'pending' AND r.available_at <= v_now
            )
        INTO v_handed, v_queues
        FROM released AS r
        LEFT JOIN counted ON TRUE;
        -- Only the jobs released pending are announced: a handed-off job has its worker.
        PERFORM pg_catalog.set_config('enable_nestloop', v_nestloop, TRUE);
        IF v_queues IS NOT NULL THEN
            PERFORM jobq__notify(v_queues);
        END IF;
    END IF;
    IF v_ids IS NOT NULL THEN
        v_awaited := jobq__awaits_end(v_ids);
    END IF;
    IF v_awaited IS NOT NULL THEN
        PERFORM jobq__notify_events('done'::text, v_awaited);
    END IF;

    -- The completed jobs: a row each with its id and status succeeded (every other column
    -- NULL), so that the caller learns which completions counted. Made in PL/pgSQL, without
    -- a statement: a query building the rows cost 20 µs a call.
    IF v_done IS NOT NULL THEN
        v_row.status := 'succeeded';
        FOREACH v_id IN ARRAY v_done LOOP
            v_row.id := v_id;
            RETURN NEXT v_row;
        END LOOP;
    END IF;

    IF v_next.status = 'processing' THEN
        RETURN NEXT v_next;
    ELSIF v_handed IS NOT NULL THEN
        RETURN QUERY
        SELECT j.*
        FROM jobq_jobs AS j
        WHERE j.id = ANY (v_handed)
        ORDER BY j.priority DESC, j.available_at ASC, j.id ASC;
    END IF;
    IF coalesce(pg_catalog.cardinality(v_handed), 0) < jobq_complete_and_claim.batch_size THEN
        RETURN QUERY
        SELECT * FROM jobq_dequeue(
            jobq_complete_and_claim.worker_id, jobq_complete_and_claim.job_types,
            jobq_complete_and_claim.batch_size - coalesce(pg_catalog.cardinality(v_handed), 0),
            jobq_complete_and_claim.lock_timeout, jobq_complete_and_claim.queues
        );
    ELSIF v_seen IS NOT TRUE THEN
        -- jobq_dequeue records the worker when it runs; a full hand-off does so here, unless
        -- the probes found its record fresh (then jobq__worker_seen would not write).
        PERFORM jobq__worker_seen(
            jobq_complete_and_claim.worker_id, jobq_complete_and_claim.job_types,
            jobq_complete_and_claim.queues
        );
    END IF;
END;
$$;

COMMENT ON FUNCTION jobq_complete_and_claim(
    uuid[], text, integer[], jsonb[], text[], integer, interval, text[]
) IS
'jobq_complete_many(job_ids, worker_id, attempts, results) then a claim of up to batch_size
jobs for the same worker (as jobq_dequeue(worker_id, job_types, batch_size, lock_timeout,
queues)), in one call, in which the dependents that the completion releases are claimed for
the worker directly (from waiting to processing, never pending, no NOTIFY) when the worker may
take them and the claim would find nothing to take before them: no pending job in its job
types and queues, no scheduled job come due, no expired claim. A dependent with a limit_group,
in a paused queue, outside the filters, scheduled for later or with a cancel request is
released pending as jobq_complete_many releases it, and the claim takes what it can in claim
order. Nothing is handed off with a queues filter and no job_types filter (or more than 64
pairs of them).
Arguments: job_ids, worker_id (non-blank, at most 200 characters), attempts and results (as
jobq_complete_many''s: optional, one per job id); job_types, batch_size (1-10000),
lock_timeout (> 0) and queues (as jobq_dequeue''s: the claim''s filters, size and lock).
Result: first one row per job completed, with only id and status (succeeded) set; then the
jobs claimed (status processing): those handed off (highest priority first, then id), then
those jobq_dequeue claimed to fill the batch.
Errors: those of jobq_complete_many and jobq_dequeue (22023 naming the argument, 54000 for a
result over max_payload_bytes), raised before anything changes.
Concurrency: as jobq_complete_many (the dependents'' rows are locked in id order, a release is
exactly once), then as jobq_dequeue.';

REVOKE EXECUTE ON FUNCTION jobq_complete_and_claim(
    uuid[], text, integer[], jsonb[], text[], integer, interval, text[]
) FROM PUBLIC;
