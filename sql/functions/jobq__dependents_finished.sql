-- jobq__dependents_finished (private): what the end of jobs with dependents does to those
-- dependents, in the transaction that ends them. jobq_complete and jobq_complete_many call it
-- for the succeeded jobs whose row says has_dependents; jobq__retire (the trigger that moves
-- every other finished row) for the failed, dead_letter and cancelled ones.
--
-- Two steps, each one statement over the edges of the finished jobs (jobq_job_dependencies,
-- by depends_on), the release first (see it below for why):
--   * cancel: the waiting dependents whose rule is cancel, of every job that did not succeed,
--     and theirs in turn (a recursive walk down the edges), end cancelled with a reason that
--     names the dependency. Their rows finish in one UPDATE, so the retire trigger moves them
--     and calls this function for each of them: their dependents with rule cancel are already
--     cancelled by then, and their release step handles the others;
--   * release: the dependents freed by the end (edges from a succeeded job, or with rule run
--     from any finished one) are read with their waiting_on, without a lock. Those whose
--     count this end covers (waiting_on <= n, the n edges it frees: a chain's, a fan-out's,
--     a fan-in's last) are locked, and their count drops by n under the lock; the one that
--     reaches 0 becomes pending, available at its run_at or now. The others (more edges
--     still held: a fan-in's child) go to jobq__dependents_probe, which releases them
--     without waiting for the completions of their other dependencies. waiting_on is an
--     upper bound of the edges that still hold a job back, exact when the ends of its
--     dependencies do not overlap; a job is released once, and never while an edge holds it
--     (docs/decisions/0027-fan-in-completions-without-waiting.md).
-- The status 'pruned' (jobq_prune) stands for a dependency that no longer exists: it can never
-- succeed, so its waiting dependents under rule wait are cancelled too; those under rule run
-- were freed when it finished.
-- Rows are locked in id order, as jobq_cancel locks its rows, so that two transactions
-- ending parents of the same dependents never deadlock on them; the probes never wait.
-- Rule wait: nothing changes (the job keeps waiting for a requeue of the dependency and its
-- success).
--
-- Plans that stay right: the edges are read through jobq_job_dependencies_depends_on_idx
-- (depends_on = ANY (job_ids)) and the dependents through the primary key (id = ANY (...)),
-- never by a scan of a whole table, so a release costs the same whatever the size of the
-- graphs beside it. The edge table is written in bulk by one jobq_enqueue_many and read at
-- once, before autovacuum has analyzed it: a plan made on no statistics would read every edge
-- for each finished job (a sequential scan and a hash join). Hence enable_seqscan off; the
-- plans are generic (plan_cache_mode) so that they are made once per session, as
-- jobq_dequeue's are (docs/decisions/0003-planner-settings-of-hot-functions.md).
-- A waiting job is found by waiting_on > 0 (only a waiting job has one: jobq_jobs_waiting_check,
-- and every writer sets waiting_on to 0 with any other status), not by its status: a status
-- test lets a generic plan made while few jobs waited read the whole of jobq_jobs_waiting_idx
-- for every release instead of the dependents' primary keys.
--
-- Not SECURITY DEFINER, and no search_path in its SET clauses: it runs inside its callers,
-- with their search_path, and is granted to nobody.

CREATE OR REPLACE FUNCTION jobq__dependents_finished(
    job_ids uuid[],
    statuses text[]
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_cancelled uuid[];
    v_released integer;
    v_queues text[];
    v_nestloop text;
    v_rest uuid[];
    v_rest_counts integer[];
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    -- The release comes before the cancel walk: a dependent that jobq__dependents_probe
    -- recounts sees every dependency this transaction has finished as gone, so each of them
    -- must have had its own release by then (the walk's cancels release in a nested call).
    -- The dependents are found by their ids (an index condition) and joined to their counts by
    -- a hash, in one pass, with nested loops off for this statement only (the cancel walk
    -- below probes the edges per ended job and needs them): planned on no statistics (a graph
    -- enqueued and run before any ANALYZE), a nested loop compared each dependent with every
    -- count, K x K for a fan-out of K.
    v_nestloop := pg_catalog.current_setting('enable_nestloop');
    PERFORM pg_catalog.set_config('enable_nestloop', 'off', TRUE);
    WITH freed AS MATERIALIZED (
        SELECT e.job_id, pg_catalog.count(*)::integer AS n
        FROM jobq_job_dependencies AS e
        JOIN ROWS FROM (
            pg_catalog.unnest(jobq__dependents_finished.job_ids),
            pg_catalog.unnest(jobq__dependents_finished.statuses)
        ) AS f (id, status) ON f.id OPERATOR(pg_catalog.=) e.depends_on
        WHERE e.depends_on OPERATOR(pg_catalog.=) ANY (jobq__dependents_finished.job_ids)
          AND (f.status OPERATOR(pg_catalog.=) 'succeeded'
               OR (e.on_failure OPERATOR(pg_catalog.=) 'run'
                   AND f.status OPERATOR(pg_catalog.<>) 'pruned'))
        GROUP BY e.job_id
    ),

    locked AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        JOIN freed ON freed.job_id OPERATOR(pg_catalog.=) j.id
        WHERE j.id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT freed.job_id FROM freed))
          AND j.waiting_on OPERATOR(pg_catalog.>) 0
          AND j.waiting_on OPERATOR(pg_catalog.<=) freed.n
        ORDER BY j.id
        FOR UPDATE OF j
    ),

    released AS (
        UPDATE jobq_jobs AS j
        SET
            waiting_on = j.waiting_on OPERATOR(pg_catalog.-) freed.n,
            status = CASE
                WHEN j.waiting_on OPERATOR(pg_catalog.<=) freed.n THEN 'pending'
                ELSE 'waiting'
            END,
            available_at = CASE
                WHEN j.waiting_on OPERATOR(pg_catalog.<=) freed.n AND NOT j.scheduled
                    THEN v_now
                ELSE j.available_at
            END,
            updated_at = v_now
        FROM locked
        JOIN freed ON freed.job_id OPERATOR(pg_catalog.=) locked.id
        WHERE j.id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT locked.id FROM locked))
          AND j.id OPERATOR(pg_catalog.=) locked.id
          AND j.waiting_on OPERATOR(pg_catalog.>) 0
        RETURNING j.id, j.status, j.queue, j.available_at
    )

    -- The dependents left unlocked (read with others still holding them back, or no longer
    -- waiting) come out with the count, for jobq__dependents_probe below.
    SELECT
        (
            SELECT (pg_catalog.count(*) FILTER (
                WHERE r.status OPERATOR(pg_catalog.=) 'pending'
            ))::integer
            FROM released AS r
        ),
        (
            SELECT pg_catalog.array_agg(DISTINCT r.queue) FILTER (
                WHERE r.status OPERATOR(pg_catalog.=) 'pending'
                  AND r.available_at OPERATOR(pg_catalog.<=) v_now
            )
            FROM released AS r
        ),
        rest.ids,
        rest.ns
    INTO v_released, v_queues, v_rest, v_rest_counts
    FROM (
        SELECT pg_catalog.array_agg(f.job_id) AS ids, pg_catalog.array_agg(f.n) AS ns
        FROM freed AS f
        WHERE NOT EXISTS (
            SELECT FROM released AS d WHERE d.id OPERATOR(pg_catalog.=) f.job_id
        )
    ) AS rest;
    PERFORM pg_catalog.set_config('enable_nestloop', v_nestloop, TRUE);
    IF v_queues IS NOT NULL THEN
        PERFORM jobq__notify(v_queues);
    END IF;
    -- The dependents that others still held back when this statement read them, without
    -- waiting for those others (and the ones no longer waiting, which it skips).
    IF v_rest IS NOT NULL THEN
        v_released := v_released OPERATOR(pg_catalog.+) jobq__dependents_probe(
            v_rest, v_rest_counts, jobq__dependents_finished.job_ids
        );
    END IF;

    -- Only ends other than success cancel anything: a completion skips this statement.
    IF pg_catalog.array_remove(jobq__dependents_finished.statuses, 'succeeded'::text)
        OPERATOR(pg_catalog.<>) '{}'::text[]
    THEN
        WITH RECURSIVE ended (id, status) AS (
            SELECT f.id, f.status
            FROM ROWS FROM (
                pg_catalog.unnest(jobq__dependents_finished.job_ids),
                pg_catalog.unnest(jobq__dependents_finished.statuses)
            ) AS f (id, status)
            WHERE f.status OPERATOR(pg_catalog.<>) 'succeeded'
            UNION
            SELECT e.job_id, 'cancelled'::text
            FROM ended AS d
            JOIN jobq_job_dependencies AS e ON e.depends_on OPERATOR(pg_catalog.=) d.id
            JOIN jobq_jobs AS c ON c.id OPERATOR(pg_catalog.=) e.job_id
            WHERE c.waiting_on OPERATOR(pg_catalog.>) 0
              AND (
                  e.on_failure OPERATOR(pg_catalog.=) 'cancel'
                  OR (e.on_failure OPERATOR(pg_catalog.=) 'wait'
                      AND d.status OPERATOR(pg_catalog.=) 'pruned')
              )
        ),

        locked AS MATERIALIZED (
            SELECT j.id
            FROM jobq_jobs AS j
            WHERE j.id = ANY (ARRAY(SELECT d.id FROM ended AS d))
              AND j.waiting_on OPERATOR(pg_catalog.>) 0
            ORDER BY j.id
            FOR UPDATE
        ),

        changed AS (
            UPDATE jobq_jobs AS j
            SET
                status = 'cancelled',
                finished_at = v_now,
                waiting_on = 0,
                last_error = (
                    SELECT pg_catalog.format(
                        'dependency %s ended %s', e.depends_on,
                        coalesce(p.status, 'cancelled')
                    )
                    FROM jobq_job_dependencies AS e
                    LEFT JOIN ROWS FROM (
                        pg_catalog.unnest(jobq__dependents_finished.job_ids),
                        pg_catalog.unnest(jobq__dependents_finished.statuses)
                    ) AS p (id, status)
                        ON p.id OPERATOR(pg_catalog.=) e.depends_on
                    WHERE e.job_id OPERATOR(pg_catalog.=) j.id
                      AND e.depends_on = ANY (ARRAY(SELECT d.id FROM ended AS d))
                    ORDER BY p.status NULLS LAST, e.depends_on
                    LIMIT 1
                ),
                updated_at = v_now
            FROM locked
            WHERE j.id OPERATOR(pg_catalog.=) locked.id
              AND j.waiting_on OPERATOR(pg_catalog.>) 0
            RETURNING j.id, j.queue, j.job_type
        ),

        counted AS MATERIALIZED (
            SELECT jobq__metrics_count(
                'cancelled'::text, pg_catalog.array_agg(k.queue), pg_catalog.array_agg(k.job_type),
                NULL::text[], NULL::double precision[]
            ) AS n
            FROM changed AS k
            HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0
        )

        SELECT pg_catalog.array_agg(c.id)
        INTO v_cancelled
        FROM changed AS c
        LEFT JOIN counted ON TRUE;
        IF v_cancelled IS NOT NULL THEN
            PERFORM jobq__notify_events('done'::text, jobq__awaits_end(v_cancelled));
        END IF;
    END IF;

    RETURN v_released OPERATOR(pg_catalog.+) coalesce(pg_catalog.cardinality(v_cancelled), 0);
END;
$$;

COMMENT ON FUNCTION jobq__dependents_finished(uuid[], text[]) IS
'Private. Applies the end of job_ids (each with its final status in statuses) to their
waiting dependents: cancels those with rule cancel of a job that did not succeed (and with rule
wait of a job that is gone, status pruned), transitively;
decrements waiting_on of the others that the end frees and makes pending those left with none
(those that other dependencies still hold back through jobq__dependents_probe, without waiting
for them). Returns how many dependents were released or cancelled.';

REVOKE EXECUTE ON FUNCTION jobq__dependents_finished(uuid[], text[]) FROM PUBLIC;
