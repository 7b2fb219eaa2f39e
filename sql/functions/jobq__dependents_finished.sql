-- jobq__dependents_finished (private): what the end of jobs with dependents does to those
-- dependents, in the transaction that ends them. jobq_complete and jobq_complete_many call it
-- for the succeeded jobs whose row says has_dependents; jobq__retire (the trigger that moves
-- every other finished row) for the failed, dead_letter and cancelled ones.
--
-- Two steps, each one statement over the edges of the finished jobs (jobq_job_dependencies,
-- by depends_on):
--   * cancel: the waiting dependents whose rule is cancel, of every job that did not succeed,
--     and theirs in turn (a recursive walk down the edges), end cancelled with a reason that
--     names the dependency. Their rows finish in one UPDATE, so the retire trigger moves them
--     and calls this function for each of them: their dependents with rule cancel are already
--     cancelled by then, and the second step below handles the others;
--   * release: each waiting dependent's waiting_on drops by the number of its edges that stop
--     holding it back (from a succeeded job, or with rule run from any finished one); the
--     one that reaches 0 becomes pending, available at its run_at or now. The row lock of the
--     dependent orders concurrent parents: whichever decrements last releases it, once.
-- The status 'pruned' (jobq_prune) stands for a dependency that no longer exists: it can never
-- succeed, so its waiting dependents under rule wait are cancelled too; those under rule run
-- were freed when it finished.
-- Rows are locked in id order, as jobq_cancel locks its rows, so that two transactions
-- ending parents of the same dependents never deadlock on them. Rule wait: nothing changes
-- (the job keeps waiting for a requeue of the dependency and its success).
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
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
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

    -- The dependents are found by their ids (an index condition) and joined to their counts by
    -- a hash, in one pass, with nested loops off for this statement only (the cancel walk
    -- above probes the edges per ended job and needs them): planned on no statistics (a graph
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
        WHERE j.id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT freed.job_id FROM freed))
          AND j.waiting_on OPERATOR(pg_catalog.>) 0
        ORDER BY j.id
        FOR UPDATE
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
        RETURNING j.status, j.queue, j.available_at
    )

    SELECT
        (pg_catalog.count(*) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'pending'))::integer,
        pg_catalog.array_agg(DISTINCT r.queue) FILTER (
            WHERE r.status OPERATOR(pg_catalog.=) 'pending'
              AND r.available_at OPERATOR(pg_catalog.<=) v_now
        )
    INTO v_released, v_queues
    FROM released AS r;
    PERFORM pg_catalog.set_config('enable_nestloop', v_nestloop, TRUE);
    IF v_queues IS NOT NULL THEN
        PERFORM jobq__notify(v_queues);
    END IF;
    RETURN v_released OPERATOR(pg_catalog.+) coalesce(pg_catalog.cardinality(v_cancelled), 0);
END;
$$;

COMMENT ON FUNCTION jobq__dependents_finished(uuid[], text[]) IS
'Private. Applies the end of job_ids (each with its final status in statuses) to their
waiting dependents: cancels those with rule cancel of a job that did not succeed (and with rule
wait of a job that is gone, status pruned), transitively;
decrements waiting_on of the others that the end frees and makes pending those left with none.
Returns how many dependents were released or cancelled.';

REVOKE EXECUTE ON FUNCTION jobq__dependents_finished(uuid[], text[]) FROM PUBLIC;
