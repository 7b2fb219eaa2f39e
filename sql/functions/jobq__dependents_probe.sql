-- jobq__dependents_probe (private): the release of the dependents that a finishing statement
-- frees but that still count more dependencies than it ends (their waiting_on, read without a
-- lock, above the n edges it frees): a fan-in's child, a layer's job with two parents.
-- jobq__dependents_finished and jobq_complete_and_claim call it, after their own release has
-- decremented, under the row lock, the dependents that this statement is likely the last to
-- free (waiting_on <= n). docs/decisions/0027-fan-in-completions-without-waiting.md has the
-- proof and the figures.
--
-- waiting_on is an upper bound of the edges that hold a dependent back (an edge holds while
-- its dependency is in jobq_jobs, or, rule wait, while it is not a succeeded job of the
-- history), and above 0 exactly while the job waits. Each dependent here ends one of three
-- ways, none of which waits for the other completions of its dependencies:
--   * probe: a dependency other than the finished ones, still in jobq_jobs, not waiting itself
--     and not locked by a DELETE (nobody is finishing it), is locked FOR KEY SHARE until this
--     transaction ends (SKIP LOCKED, and at most 1 ms of wait, below; highest id first, the
--     dependency claimed last in a fan-in). The DELETE that finishes it (a completion's, or
--     the retire trigger's after a failure or a cancel) then waits for this commit, and its
--     release reads the count after it. KEY SHARE conflicts with nothing else a worker does
--     to that row: its claim (FOR NO KEY UPDATE), failure or release UPDATE goes on. The
--     dependent's row is also locked if it is free (SKIP LOCKED) and its count decremented
--     then, so that the count is exact whenever the completions of a job's dependencies do
--     not overlap; when another transaction holds the row, the count is left as it is (an
--     upper bound);
--   * end game: no such dependency. The dependent's row is locked (id order, waiting), and
--     the next statement, whose snapshot is taken after the lock, recounts the edges that
--     still hold it (the dependencies finished in this transaction are gone for it) and sets
--     waiting_on to that: 0 releases it, pending, available at its run_at or now.
-- A dependency still in jobq_jobs is not probed while it waits itself: the cancel walk of
-- jobq__dependents_finished locks waiting jobs after others, and must not wait for a probe.
-- At most 64 edges are read per dependent (from the highest dependency id down): past them
-- the end game decides, so that a dependent with thousands of finished dependencies does
-- not cost a long scan per completion.
--
-- Plans: the dependents by primary key, their edges through jobq_job_dependencies_pkey
-- (job_id, depends_on) read backwards (a bitmap scan would read all of a job's edges and
-- sort them: bitmap scans off), the dependencies by primary key, one edge at a time;
-- enable_seqscan off and generic plans, as jobq__dependents_finished. Not SECURITY DEFINER,
-- and no search_path in its SET clauses: it runs inside its callers, with their search_path,
-- and is granted to nobody.

CREATE OR REPLACE FUNCTION jobq__dependents_probe(
    children uuid[],
    counts integer[],
    finished uuid[]
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET enable_seqscan = off
SET enable_bitmapscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_found uuid[];
    v_end uuid[];
    v_released integer;
    v_queues text[];
    v_timeout text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    -- The probes: no lock on the dependents. A key-share lock never waits for a row's
    -- holder (SKIP LOCKED), but PostgreSQL also locks the newer versions of a row that an
    -- open transaction has updated, and waits for that transaction there whatever the
    -- SKIP LOCKED (heap_lock_updated_tuple): such a wait, which can close a cycle with that
    -- transaction, is cut to 1 ms and ends the probes of this call (a subtransaction rolled
    -- back: the end game for every dependent, which is always right).
    v_timeout := pg_catalog.current_setting('lock_timeout');
    BEGIN
        PERFORM pg_catalog.set_config('lock_timeout', '1ms', TRUE);
        SELECT
            pg_catalog.array_agg(c.id) FILTER (WHERE q.id IS NOT NULL),
            pg_catalog.array_agg(c.id) FILTER (WHERE q.id IS NULL)
        INTO v_found, v_end
        FROM jobq_jobs AS c
        LEFT JOIN LATERAL (
            SELECT p.id
            FROM (
                SELECT e.depends_on
                FROM jobq_job_dependencies AS e
                -- The job's edges as a range of jobq_job_dependencies_pkey, read backwards
                -- in its order: with job_id = c.id the order would be depends_on's alone,
                -- which jobq_job_dependencies_depends_on_idx also gives, and a plan made on
                -- few statistics reads that one, every job's edges, filtering them.
                WHERE e.job_id OPERATOR(pg_catalog.>=) c.id
                  AND e.job_id OPERATOR(pg_catalog.<=) c.id
                  AND e.depends_on OPERATOR(pg_catalog.<>) ALL (jobq__dependents_probe.finished)
                ORDER BY e.job_id DESC, e.depends_on DESC
                LIMIT 64
            ) AS e
            JOIN jobq_jobs AS p ON p.id OPERATOR(pg_catalog.=) e.depends_on
            WHERE p.waiting_on OPERATOR(pg_catalog.=) 0
            LIMIT 1
            FOR KEY SHARE OF p SKIP LOCKED
        ) AS q ON TRUE
        WHERE c.id OPERATOR(pg_catalog.=) ANY (jobq__dependents_probe.children)
          AND c.waiting_on OPERATOR(pg_catalog.>) 0;
        PERFORM pg_catalog.set_config('lock_timeout', v_timeout, TRUE);
    EXCEPTION WHEN lock_not_available THEN
        v_found := NULL;
        v_end := ARRAY(
            SELECT c.id
            FROM jobq_jobs AS c
            WHERE c.id OPERATOR(pg_catalog.=) ANY (jobq__dependents_probe.children)
              AND c.waiting_on OPERATOR(pg_catalog.>) 0
        );
        IF pg_catalog.cardinality(v_end) OPERATOR(pg_catalog.=) 0 THEN
            v_end := NULL;
        END IF;
    END;

    IF v_found IS NULL AND v_end IS NULL THEN
        RETURN 0;
    END IF;
    -- The end game's rows, in id order, waiting for their holders; then, in a new statement
    -- (a snapshot taken after the locks), the recount, and the decrements of the probed
    -- dependents whose row is free.
    IF v_end IS NOT NULL THEN
        PERFORM
        FROM jobq_jobs AS j
        WHERE j.id OPERATOR(pg_catalog.=) ANY (v_end)
          AND j.waiting_on OPERATOR(pg_catalog.>) 0
        ORDER BY j.id
        FOR UPDATE;
    END IF;

    WITH tried AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.id OPERATOR(pg_catalog.=) ANY (v_found)
          AND j.waiting_on OPERATOR(pg_catalog.>) 0
        ORDER BY j.id
        FOR UPDATE SKIP LOCKED
    ),

    target AS MATERIALIZED (
        SELECT t.id, f.n, NULL::integer AS held
        FROM tried AS t
        JOIN ROWS FROM (
            pg_catalog.unnest(jobq__dependents_probe.children),
            pg_catalog.unnest(jobq__dependents_probe.counts)
        ) AS f (id, n) ON f.id OPERATOR(pg_catalog.=) t.id
        UNION ALL
        SELECT
            g.id, 0,
            (
                SELECT pg_catalog.count(*)::integer
                FROM jobq_job_dependencies AS e
                WHERE e.job_id OPERATOR(pg_catalog.=) g.id
                  AND (
                      -- OFFSET 0: probed per edge by key (as an alternative, the planner
                      -- would hash the whole of jobq_jobs for the EXISTS)
                      EXISTS (
                          SELECT FROM jobq_jobs AS p
                          WHERE p.id OPERATOR(pg_catalog.=) e.depends_on
                          OFFSET 0
                      )
                      -- rule wait: held unless it succeeded (gone from both tables, it is
                      -- left to jobq_prune, which cancels the job)
                      OR (
                          e.on_failure OPERATOR(pg_catalog.=) 'wait'
                          AND NOT EXISTS (
                              SELECT FROM jobq_jobs_history AS h
                              WHERE h.id OPERATOR(pg_catalog.=) e.depends_on
                                AND h.status OPERATOR(pg_catalog.=) 'succeeded'
                              OFFSET 0
                          )
                      )
                  )
            )
        FROM pg_catalog.unnest(v_end) AS g (id)
    ),

    released AS (
        UPDATE jobq_jobs AS j
        SET
            waiting_on = greatest(
                coalesce(t.held, j.waiting_on OPERATOR(pg_catalog.-) t.n), 0
            ),
            status = CASE
                WHEN coalesce(t.held, j.waiting_on OPERATOR(pg_catalog.-) t.n)
                    OPERATOR(pg_catalog.<=) 0 THEN 'pending'
                ELSE 'waiting'
            END,
            available_at = CASE
                WHEN coalesce(t.held, j.waiting_on OPERATOR(pg_catalog.-) t.n)
                    OPERATOR(pg_catalog.<=) 0 AND NOT j.scheduled
                    THEN v_now
                ELSE j.available_at
            END,
            updated_at = v_now
        FROM target AS t
        WHERE j.id OPERATOR(pg_catalog.=) t.id
          AND j.waiting_on OPERATOR(pg_catalog.>) 0
          AND (t.held IS NULL OR t.held OPERATOR(pg_catalog.<>) j.waiting_on)
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
    IF v_queues IS NOT NULL THEN
        PERFORM jobq__notify(v_queues);
    END IF;
    RETURN v_released;
END;
$$;

COMMENT ON FUNCTION jobq__dependents_probe(uuid[], integer[], uuid[]) IS
'Private. Releases, without waiting for the other completions of their dependencies, the
waiting children that a statement which finished the jobs finished frees (counts[i] of the
edges of children[i]) while their waiting_on says others remain: a child with another
dependency still unfinished and not being finished keeps waiting (that dependency locked FOR
KEY SHARE until this transaction ends, the child''s count decremented when its row is free); the
others are locked and their count is recounted, 0 releasing them. Returns how many were
released.';

REVOKE EXECUTE ON FUNCTION jobq__dependents_probe(uuid[], integer[], uuid[]) FROM PUBLIC;
