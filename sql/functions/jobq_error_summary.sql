-- jobq_error_summary: the errors of the last hour (or `since`) per job type, most frequent
-- first, each as its exception line (jobq__error_line), so that an operator sees at a glance
-- what fails and how often. It reads the failed attempts recorded in the jobs' error
-- histories (each entry's time): of the jobs that are waiting to retry or running again (the
-- live jobs that have failed before, read through the partial indexes of pending and
-- processing jobs, never a scan of jobq_jobs) and of those that ended failed or dead_letter
-- within the window (their partitions of jobq_jobs_history, through
-- jobq_jobs_history_finished_idx). A job that failed and then succeeded within the window is
-- not counted: reading the succeeded jobs would read every completion of the hour.
-- Error texts are an admin's to read (a monitor sees none).
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_error_summary(
    since interval DEFAULT '1 hour',
    per_type integer DEFAULT 5
) RETURNS TABLE (
    job_type text,
    error text,
    failures bigint,
    jobs bigint,
    last_seen timestamptz
)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_from timestamptz;
BEGIN
    IF since IS NULL OR since <= interval '0' OR since > interval '31 days' THEN
        RAISE EXCEPTION 'jobq_error_summary: since must be more than 0 and at most 31 days, got %',
            coalesce(since::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF per_type IS NULL OR per_type < 1 OR per_type > 100 THEN
        RAISE EXCEPTION 'jobq_error_summary: per_type must be between 1 and 100, got %',
            coalesce(per_type::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_from := pg_catalog.now() - since;
    RETURN QUERY
    WITH failed AS (
        -- One branch per partial index of live jobs (pending: available, limited, scheduled;
        -- processing), then the failed and dead-letter partitions of the window.
        SELECT j.id, j.job_type, j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
          AND j.attempts > 0 AND j.updated_at >= v_from
        UNION ALL
        SELECT j.id, j.job_type, j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
          AND j.attempts > 0 AND j.updated_at >= v_from
        UNION ALL
        SELECT j.id, j.job_type, j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND j.scheduled
          AND j.attempts > 0 AND j.updated_at >= v_from
        UNION ALL
        SELECT j.id, j.job_type, j.errors FROM jobq_jobs AS j
        WHERE j.status = 'processing' AND j.attempts > 1
        UNION ALL
        SELECT h.id, h.job_type, h.errors FROM jobq_jobs_history AS h
        WHERE h.status IN ('failed', 'dead_letter') AND h.finished_at >= v_from
    ),

    entries AS (
        SELECT f.id, f.job_type, jobq__error_line(e.entry ->> 'error') AS line,
               (e.entry ->> 'at')::timestamptz AS at
        FROM failed AS f,
            pg_catalog.jsonb_array_elements(
                CASE WHEN pg_catalog.jsonb_typeof(f.errors) = 'array' THEN f.errors
                     ELSE '[]'::jsonb END
            ) AS e (entry)
        WHERE pg_catalog.jsonb_typeof(e.entry -> 'at') = 'string'
    ),

    counted AS (
        SELECT x.job_type, x.line, pg_catalog.count(*) AS failures,
               pg_catalog.count(DISTINCT x.id) AS jobs, pg_catalog.max(x.at) AS last_seen
        FROM entries AS x
        WHERE x.at >= v_from
        GROUP BY x.job_type, x.line
    ),

    types AS (
        SELECT DISTINCT c.job_type FROM counted AS c
    )

    SELECT t.job_type, top.line, top.failures, top.jobs, top.last_seen
    FROM types AS t
    CROSS JOIN LATERAL (
        SELECT c.line, c.failures, c.jobs, c.last_seen
        FROM counted AS c
        WHERE c.job_type = t.job_type
        ORDER BY c.failures DESC, c.last_seen DESC, c.line
        LIMIT per_type
    ) AS top
    ORDER BY t.job_type, top.failures DESC, top.last_seen DESC, top.line;
END;
$$;

COMMENT ON FUNCTION jobq_error_summary(interval, integer) IS
'Admin only. The most frequent errors per job type within the last `since`: the failed attempts
recorded in the error histories of live jobs that failed before (waiting to retry or running
again) and of the jobs that ended failed or dead_letter within the window, grouped by job type
and exception line (the first line of the error, or the last line of a Python traceback).
Jobs that failed and then succeeded are not counted. Reads partial indexes only.
Arguments: since (more than 0, at most 31 days; default 1 hour), per_type (the most frequent
errors of each job type, 1 to 100, default 5).
Result: rows (job_type, error: the exception line, failures: failed attempts, jobs: distinct
jobs, last_seen: the latest of those attempts), by job type, most frequent first.
Errors: 22023 since or per_type out of range.
Concurrency: a snapshot; it takes no lock.';

REVOKE EXECUTE ON FUNCTION jobq_error_summary(interval, integer) FROM PUBLIC;
