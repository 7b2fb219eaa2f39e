-- jobq__add_edges (private): records that children[i] depends on parents[i] under rules[i]
-- (cancel, run or wait), for jobq_enqueue, jobq_enqueue_many and jobq_add_dependencies, and
-- sets each child's status from its new parents, in the caller's transaction:
--   * a parent that is not finished holds the child back (waiting_on + 1, status waiting);
--   * a succeeded one does not; one that ended failed, dead_letter or cancelled holds it back
--     under rule wait, frees it under rule run, and cancels it under rule cancel (the reason
--     names that parent).
-- The parents still in jobq_jobs are locked (FOR NO KEY UPDATE, in id order) and marked
-- has_dependents before anything is decided: a parent that finishes concurrently either
-- finished before (it is then read from jobq_jobs_history with the fresh snapshot of the
-- next statement) or waits for this transaction and then sees the new edges. The lock is
-- held until the caller commits, so a dependent enqueued in a long transaction holds up the
-- completion of a running parent that long (docs/workflows.md).
--
-- graft: the children are existing jobs (jobq_add_dependencies): only waiting ones get the
-- edges, each locked after its parents (the order in which a finishing parent locks them),
-- and an edge that would close a cycle is refused. Otherwise the children are jobs the caller
-- has just inserted (pending): nothing can depend on them yet, so no cycle can pass through
-- an existing job.
-- An unknown parent, or a cycle, is 22023 naming argument; nothing is written then.
--
-- Not SECURITY DEFINER and no SET clause: it runs inside its callers, with their search_path,
-- and is granted to nobody.

CREATE OR REPLACE FUNCTION jobq__add_edges(
    children uuid[],
    parents uuid[],
    rules text[],
    argument text,
    graft boolean DEFAULT FALSE
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_parents uuid[];
    v_known uuid[];
    v_statuses text[];
    v_unknown uuid;
    v_children uuid[];
    v_added integer;
    v_cycle boolean;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_parents := ARRAY(SELECT DISTINCT p.id FROM pg_catalog.unnest(parents) AS p (id));
    IF pg_catalog.cardinality(v_parents) OPERATOR(pg_catalog.=) 0 THEN
        RETURN 0;
    END IF;

    -- Lock and mark the live parents, then find every parent's status: live ones hold the
    -- child back whatever their status ('live').
    WITH locked AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.id = ANY (v_parents)
        ORDER BY j.id
        FOR NO KEY UPDATE
    ),

    marked AS (
        UPDATE jobq_jobs AS j
        SET has_dependents = TRUE
        FROM locked
        WHERE j.id OPERATOR(pg_catalog.=) locked.id AND NOT j.has_dependents
    )

    SELECT pg_catalog.array_agg(l.id), pg_catalog.array_agg('live'::text)
    INTO v_known, v_statuses
    FROM locked AS l;
    v_known := coalesce(v_known, '{}');
    v_statuses := coalesce(v_statuses, '{}');
    IF pg_catalog.cardinality(v_known) OPERATOR(pg_catalog.<) pg_catalog.cardinality(v_parents)
    THEN
        -- The finished ones, with the fresh snapshot of this statement.
        SELECT
            v_known OPERATOR(pg_catalog.||) coalesce(pg_catalog.array_agg(h.id), '{}'),
            v_statuses OPERATOR(pg_catalog.||) coalesce(pg_catalog.array_agg(h.status), '{}')
        INTO v_known, v_statuses
        FROM jobq_jobs_history AS h
        WHERE h.id = ANY (v_parents) AND NOT h.id = ANY (v_known);
    END IF;

    SELECT p.id INTO v_unknown
    FROM pg_catalog.unnest(v_parents) AS p (id)
    WHERE NOT p.id = ANY (v_known)
    LIMIT 1;
    IF v_unknown IS NOT NULL THEN
        RAISE EXCEPTION '%: no job has the id %', argument, v_unknown
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A job depends only on jobs that exist (or that the same call enqueues).';
    END IF;

    IF graft THEN
        -- The waiting children, locked after their parents; the others get nothing.
        v_children := ARRAY(
            SELECT j.id
            FROM jobq_jobs AS j
            WHERE j.id = ANY (children) AND j.status OPERATOR(pg_catalog.=) 'waiting'
            ORDER BY j.id
            FOR UPDATE
        );
        -- A child that is one of its new parents' ancestors (or one of them) closes a cycle.
        WITH RECURSIVE up (id) AS (
            SELECT p.id FROM pg_catalog.unnest(v_parents) AS p (id)
            UNION
            SELECT e.depends_on
            FROM up
            JOIN jobq_job_dependencies AS e ON e.job_id OPERATOR(pg_catalog.=) up.id
        )

        SELECT EXISTS (SELECT FROM up WHERE up.id = ANY (children)) INTO v_cycle;
        IF v_cycle THEN
            RAISE EXCEPTION '%: the dependency would close a cycle', argument
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'A job cannot wait for a job that waits for it.';
        END IF;
    ELSE
        v_children := children;
    END IF;

    -- The new edges, and what they do to each child.
    WITH added AS (
        INSERT INTO jobq_job_dependencies AS e (job_id, depends_on, on_failure)
        SELECT DISTINCT ON (x.child, x.parent) x.child, x.parent, coalesce(x.rule, 'cancel')
        FROM ROWS FROM (
            pg_catalog.unnest(jobq__add_edges.children),
            pg_catalog.unnest(jobq__add_edges.parents),
            pg_catalog.unnest(jobq__add_edges.rules)
        ) AS x (child, parent, rule)
        WHERE x.child = ANY (v_children)
        ORDER BY x.child, x.parent
        ON CONFLICT (job_id, depends_on) DO NOTHING
        RETURNING e.job_id, e.depends_on, e.on_failure
    ),

    effect AS (
        SELECT
            a.job_id,
            pg_catalog.count(*) FILTER (
                WHERE p.status OPERATOR(pg_catalog.=) 'live'
                   OR (p.status OPERATOR(pg_catalog.<>) 'succeeded'
                       AND a.on_failure OPERATOR(pg_catalog.=) 'wait')
            )::integer AS holding,
            pg_catalog.min(pg_catalog.format('dependency %s ended %s', a.depends_on, p.status))
                FILTER (
                    WHERE p.status IN ('failed', 'dead_letter', 'cancelled')
                      AND a.on_failure OPERATOR(pg_catalog.=) 'cancel'
                ) AS cancel_reason,
            pg_catalog.count(*)::integer AS n
        FROM added AS a
        JOIN ROWS FROM (pg_catalog.unnest(v_known), pg_catalog.unnest(v_statuses)) AS p (id, status)
            ON p.id OPERATOR(pg_catalog.=) a.depends_on
        GROUP BY a.job_id
    ),

    changed AS (
        UPDATE jobq_jobs AS j
        SET
            status = CASE
                WHEN f.cancel_reason IS NOT NULL THEN 'cancelled'
                WHEN j.waiting_on OPERATOR(pg_catalog.+) f.holding OPERATOR(pg_catalog.>) 0
                    THEN 'waiting'
                ELSE j.status
            END,
            waiting_on = CASE
                WHEN f.cancel_reason IS NOT NULL THEN 0
                ELSE j.waiting_on OPERATOR(pg_catalog.+) f.holding
            END,
            finished_at = CASE WHEN f.cancel_reason IS NOT NULL THEN v_now END,
            last_error = coalesce(f.cancel_reason, j.last_error),
            updated_at = v_now
        FROM effect AS f
        WHERE j.id OPERATOR(pg_catalog.=) f.job_id
          AND (f.cancel_reason IS NOT NULL OR f.holding OPERATOR(pg_catalog.>) 0)
    )

    SELECT coalesce(pg_catalog.sum(f.n), 0)::integer INTO v_added FROM effect AS f;
    RETURN v_added;
END;
$$;

COMMENT ON FUNCTION jobq__add_edges(uuid[], uuid[], text[], text, boolean) IS
'Private. Records that children[i] depends on parents[i] under rules[i] and sets each child''s
status and waiting_on from its parents'' (a cancel rule and a parent that ended failed,
dead_letter or cancelled: the child is cancelled). graft: the children exist; only the waiting
ones get edges, and a cycle is refused. Returns how many edges were added. 22023 naming
argument for an unknown parent or a cycle.';

REVOKE EXECUTE ON FUNCTION jobq__add_edges(uuid[], uuid[], text[], text, boolean) FROM PUBLIC;
