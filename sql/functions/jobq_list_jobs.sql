-- jobq_list_jobs (admin): lists jobs, most recently changed first. It shows payloads, so it
-- is granted to admins only.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_list_jobs(
    statuses text[] DEFAULT NULL,
    job_type text DEFAULT NULL,
    queue text DEFAULT NULL,
    max_rows integer DEFAULT 100
) RETURNS SETOF jobq_jobs
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_bad text;
    v_live boolean;
    v_finished boolean;
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RAISE EXCEPTION 'jobq_list_jobs: max_rows must be at least 1, got %',
            coalesce(max_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.cardinality(jobq_list_jobs.statuses) > 100 THEN
        RAISE EXCEPTION 'jobq_list_jobs: statuses has % elements, at most 100 are allowed',
            pg_catalog.cardinality(jobq_list_jobs.statuses)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_list_jobs.job_type) > 200 THEN
        RAISE EXCEPTION 'jobq_list_jobs: job_type is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_list_jobs.job_type)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_list_jobs.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_list_jobs: queue is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_list_jobs.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT s INTO v_bad FROM pg_catalog.unnest(statuses) AS s
    WHERE s IS NULL OR s <> ALL (jobq__statuses(NULL::boolean))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'jobq_list_jobs: statuses contains %, which is not a status',
            coalesce(pg_catalog.quote_literal(v_bad), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Statuses: ' || pg_catalog.array_to_string(jobq__statuses(NULL::boolean), ', ') || '.';
    END IF;

    -- Live jobs are in jobq_jobs, finished ones in jobq_jobs_history (the same columns, in
    -- the same order): each table is read only when a status it can hold is asked for, so a
    -- listing of finished jobs never reads the backlog, nor one of live jobs the history.
    v_live := statuses IS NULL OR statuses OPERATOR(pg_catalog.&&) jobq__statuses(finished => FALSE);
    v_finished := statuses IS NULL OR statuses OPERATOR(pg_catalog.&&) jobq__statuses(finished => TRUE);
    RETURN QUERY
    SELECT j.*
    FROM jobq_jobs AS j
    WHERE v_live
      AND (jobq_list_jobs.statuses IS NULL OR j.status = ANY (jobq_list_jobs.statuses))
      AND (jobq_list_jobs.job_type IS NULL OR j.job_type = jobq_list_jobs.job_type)
      AND (jobq_list_jobs.queue IS NULL OR j.queue = jobq_list_jobs.queue)
    UNION ALL
    SELECT h.*
    FROM jobq_jobs_history AS h
    WHERE v_finished
      AND (jobq_list_jobs.statuses IS NULL OR h.status = ANY (jobq_list_jobs.statuses))
      AND (jobq_list_jobs.job_type IS NULL OR h.job_type = jobq_list_jobs.job_type)
      AND (jobq_list_jobs.queue IS NULL OR h.queue = jobq_list_jobs.queue)
    ORDER BY updated_at DESC, id
    LIMIT jobq_list_jobs.max_rows;
END;
$$;

COMMENT ON FUNCTION jobq_list_jobs(text[], text, text, integer) IS
'Admin. Lists jobs, most recently changed first. Shows payloads, so it is granted to
admins only.
Arguments: statuses (NULL = all; at most 100 status names), job_type (NULL = any; at most 200
characters), queue (NULL = any; at most 200 characters), max_rows (at most this many rows,
default 100).
Result: rows of jobq_jobs.
Errors: 22023 an unknown status, more than 100 statuses, a job_type or queue longer than 200
characters, max_rows < 1.';

REVOKE EXECUTE ON FUNCTION jobq_list_jobs(text[], text, text, integer) FROM PUBLIC;
