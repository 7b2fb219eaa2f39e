-- jobq__requeue (private): what both requeue functions do to their jobs. The dead_letter,
-- failed and cancelled jobs among job_ids move from jobq_jobs_history back to jobq_jobs,
-- pending, available now, attempts 0, claim and cancel request cleared, error history kept,
-- in one statement (a DELETE whose rows the INSERT takes: a row never moves between
-- partitions by an UPDATE). The DELETE locks each row, so two requeues of one job move it
-- once. Its idempotency key moves with it: while the row is in neither table for others
-- (until this transaction commits), an enqueue of the key waits on this transaction's row in
-- jobq_jobs (jobq_enqueue).
--
-- Dependencies (docs/workflows.md): a requeued job with dependents is unfinished again, so
-- its waiting dependents of rule run count it again (waiting_on + 1), and its row is marked
-- has_dependents for its next end. A requeued job with dependencies has them applied again
-- as at its enqueue (jobq__add_edges: it waits for those not succeeded, or is cancelled again
-- under rule cancel by one that ended failed, dead_letter or cancelled: requeue that one
-- first); dependencies that no longer exist (pruned) are dropped. No SET clause: it runs
-- inside its callers, with their search_path.

CREATE OR REPLACE FUNCTION jobq__requeue(job_ids uuid[])
RETURNS TABLE (queue text, job_type text, old_status text)
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_ids uuid[];
    v_queues text[];
    v_job_types text[];
    v_statuses text[];
    v_edges record;
BEGIN
    WITH moved AS (
        DELETE FROM jobq_jobs_history AS h
        WHERE h.id = ANY (jobq__requeue.job_ids)
          AND h.status IN ('dead_letter', 'failed', 'cancelled')
        RETURNING
            h.id, h.queue, h.job_type, h.payload, h.idempotency_key, h.status, h.priority,
            h.max_attempts, h.last_error, h.errors, h.created_at, h.result, h.limit_group,
            h.limit_key, h.claimed_at
    ),

    back AS (
        INSERT INTO jobq_jobs AS j (
            id, queue, job_type, payload, idempotency_key, status, priority, attempts,
            max_attempts, available_at, last_error, errors, created_at, updated_at, scheduled,
            result, limit_group, limit_key, claimed_at
        )
        SELECT
            m.id, m.queue, m.job_type, m.payload, m.idempotency_key, 'pending', m.priority, 0,
            m.max_attempts, v_now, m.last_error, m.errors, m.created_at, v_now, FALSE,
            m.result, m.limit_group, m.limit_key, m.claimed_at
        FROM moved AS m
        RETURNING j.id
    )

    SELECT
        pg_catalog.array_agg(m.id), pg_catalog.array_agg(m.queue),
        pg_catalog.array_agg(m.job_type), pg_catalog.array_agg(m.status)
    INTO v_ids, v_queues, v_job_types, v_statuses
    FROM moved AS m
    JOIN back AS b ON b.id = m.id;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;

    -- As dependencies: unfinished again, for their waiting dependents of rule run.
    IF EXISTS (SELECT FROM jobq_job_dependencies AS e WHERE e.depends_on = ANY (v_ids)) THEN
        UPDATE jobq_jobs AS j SET has_dependents = TRUE
        WHERE j.id = ANY (v_ids)
          AND EXISTS (SELECT FROM jobq_job_dependencies AS e WHERE e.depends_on = j.id);
        WITH held AS (
            SELECT e.job_id, pg_catalog.count(*)::integer AS n
            FROM jobq_job_dependencies AS e
            WHERE e.depends_on = ANY (v_ids) AND e.on_failure = 'run'
            GROUP BY e.job_id
        ),

        locked AS MATERIALIZED (
            SELECT j.id, held.n
            FROM jobq_jobs AS j
            JOIN held ON held.job_id = j.id
            WHERE j.status = 'waiting'
            ORDER BY j.id
            FOR UPDATE OF j
        )

        UPDATE jobq_jobs AS j
        SET waiting_on = j.waiting_on + locked.n, updated_at = v_now
        FROM locked
        WHERE j.id = locked.id AND j.status = 'waiting';
    END IF;

    -- As dependents: their dependencies that still exist apply again, as at an enqueue.
    WITH gone AS (
        DELETE FROM jobq_job_dependencies AS e
        WHERE e.job_id = ANY (v_ids)
        RETURNING e.job_id, e.depends_on, e.on_failure
    )

    SELECT
        pg_catalog.array_agg(g.job_id) AS children,
        pg_catalog.array_agg(g.depends_on) AS parents,
        pg_catalog.array_agg(g.on_failure) AS rules
    INTO v_edges
    FROM gone AS g
    WHERE EXISTS (SELECT FROM jobq_all_jobs AS a WHERE a.id = g.depends_on);
    IF v_edges.children IS NOT NULL THEN
        PERFORM jobq__add_edges(
            v_edges.children, v_edges.parents, v_edges.rules, 'job_ids'::text, FALSE
        );
    END IF;

    RETURN QUERY
    SELECT r.queue, r.job_type, r.status
    FROM ROWS FROM (
        pg_catalog.unnest(v_queues),
        pg_catalog.unnest(v_job_types),
        pg_catalog.unnest(v_statuses)
    ) AS r (queue, job_type, status);
END;
$$;

COMMENT ON FUNCTION jobq__requeue(uuid[]) IS
'Private. Moves the dead_letter, failed and cancelled jobs among job_ids from
jobq_jobs_history back to jobq_jobs, pending and available now (attempts 0, claim and cancel
request cleared, error history kept); returns the queue, job type and former status of each.
Their dependencies apply again (waiting or cancelled again), and their waiting dependents of
rule run wait for them again.';

REVOKE EXECUTE ON FUNCTION jobq__requeue(uuid[]) FROM PUBLIC;
