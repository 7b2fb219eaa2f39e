-- jobq_job_graph: the workflow around one job, for the dashboard: the job, every job it waits
-- for (transitively) and every job that waits for it (transitively), each with its own
-- dependencies, so that a client can draw the graph. No payload, result or error text: the
-- monitor level may call it. At most 10,000 jobs (the nearest first), so that a page stays
-- small whatever the workflow.
--! levels: producer, worker, monitor, admin

CREATE OR REPLACE FUNCTION jobq_job_graph(job_id uuid)
RETURNS TABLE (id uuid, job_type text, status text, depends_on uuid[])
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    WITH RECURSIVE up (id, depth) AS (
        SELECT jobq_job_graph.job_id, 0
        UNION
        SELECT e.depends_on, u.depth + 1
        FROM up AS u
        JOIN jobq_job_dependencies AS e ON e.job_id = u.id
        WHERE u.depth < 10000
    ),

    down (id, depth) AS (
        SELECT jobq_job_graph.job_id, 0
        UNION
        SELECT e.job_id, d.depth + 1
        FROM down AS d
        JOIN jobq_job_dependencies AS e ON e.depends_on = d.id
        WHERE d.depth < 10000
    ),

    near AS (
        SELECT g.id, pg_catalog.min(g.depth) AS depth
        FROM (SELECT u.id, u.depth FROM up AS u UNION ALL SELECT d.id, d.depth FROM down AS d) AS g
        GROUP BY g.id
        ORDER BY pg_catalog.min(g.depth), g.id
        LIMIT 10000
    )

    SELECT
        a.id, a.job_type, a.status,
        ARRAY(
            SELECT e.depends_on FROM jobq_job_dependencies AS e
            WHERE e.job_id = a.id ORDER BY e.depends_on
        )
    FROM near AS n
    JOIN jobq_all_jobs AS a ON a.id = n.id
    ORDER BY n.depth, a.id
$$;

COMMENT ON FUNCTION jobq_job_graph(uuid) IS
'The workflow around a job: the job, the jobs it depends on and the jobs that depend on it,
transitively, each with its job_type, status and depends_on (the ids of its direct
dependencies, which may include jobs outside the result). No payload, result or error.
Arguments: job_id (any job; unknown: no rows).
Result: at most 10,000 rows, the nearest jobs first (by number of edges from job_id), then by
id; a job that no longer exists (pruned) has no row.
Errors: none.
Concurrency: a plain read; takes no lock.';

REVOKE EXECUTE ON FUNCTION jobq_job_graph(uuid) FROM PUBLIC;
