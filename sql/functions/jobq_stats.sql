-- jobq_stats: counts per (queue, job_type, status), for dashboards and operators. It reads the
-- whole table, so it is not meant for a hot loop.
--! levels: monitor, admin

CREATE OR REPLACE FUNCTION jobq_stats() RETURNS TABLE (
    queue text,
    job_type text,
    status text,
    jobs bigint,
    oldest_available_at timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT
        j.queue, j.job_type, j.status, pg_catalog.count(*) AS jobs,
        pg_catalog.min(j.available_at)
    FROM jobq_all_jobs AS j
    GROUP BY j.queue, j.job_type, j.status
    ORDER BY j.queue, j.job_type, j.status
$$;

COMMENT ON FUNCTION jobq_stats() IS
'Counts jobs per (queue, job_type, status) present. Reads the whole table: for dashboards
and operators, not for a hot loop.
Arguments: none.
Result: rows (queue, job_type, status, jobs, oldest_available_at): how many jobs, and the
oldest available_at among them (for pending jobs: how long the oldest has been waiting).
Errors: none.';

REVOKE EXECUTE ON FUNCTION jobq_stats() FROM PUBLIC;
