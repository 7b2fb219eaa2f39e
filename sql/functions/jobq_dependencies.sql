-- jobq_dependencies: a job's direct dependencies with their status and result, for a handler
-- that combines what they returned (a fan-in). Read from jobq_all_jobs: a dependency that has
-- finished is in the history. A dependency that no longer exists (pruned) has no row.
--! levels: producer, worker, admin

CREATE OR REPLACE FUNCTION jobq_dependencies(job_id uuid)
RETURNS TABLE (id uuid, job_type text, status text, result jsonb)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT a.id, a.job_type, a.status, a.result
    FROM jobq_job_dependencies AS e
    JOIN jobq_all_jobs AS a ON a.id = e.depends_on
    WHERE e.job_id = jobq_dependencies.job_id
    ORDER BY a.id
$$;

COMMENT ON FUNCTION jobq_dependencies(uuid) IS
'The jobs that a job depends on (its direct dependencies), each with its job_type, status
and result (NULL until it succeeds with one).
Arguments: job_id (any job; NULL or unknown: no rows).
Result: one row per dependency that still exists, by id.
Errors: none.
Concurrency: a plain read; takes no lock.';

REVOKE EXECUTE ON FUNCTION jobq_dependencies(uuid) FROM PUBLIC;
