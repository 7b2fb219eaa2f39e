-- 0003_jobq_status_names.sql — the status names written once, in jobq__statuses().
--
-- 0001 listed the statuses in two CHECK constraints, and the functions listed them again.
-- Now the constraints ask jobq__statuses() (functions/jobq__statuses.sql), as the functions
-- do, so that adding a status is one edit of that file.
--
-- A migration runs before the function files of its release, so the function is created here
-- as this release defines it; functions/jobq__statuses.sql replaces it right after, and is
-- where it is changed from now on. Re-creating the two constraints checks every row once.

CREATE FUNCTION jobq__statuses(finished boolean DEFAULT NULL) RETURNS text[]
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $$
DECLARE
    v_unfinished CONSTANT text[] := ARRAY['pending', 'processing'];
    v_finished CONSTANT text[] := ARRAY['succeeded', 'failed', 'dead_letter'];
BEGIN
    RETURN CASE jobq__statuses.finished
        WHEN TRUE THEN v_finished
        WHEN FALSE THEN v_unfinished
        ELSE pg_catalog.array_cat(v_unfinished, v_finished)
    END;
END;
$$;

REVOKE EXECUTE ON FUNCTION jobq__statuses(boolean) FROM PUBLIC;

-- (sqlfluff reads `ANY(` as a function name, hence the noqa.)
ALTER TABLE jobq_jobs
DROP CONSTRAINT jobq_jobs_status_check,
DROP CONSTRAINT jobq_jobs_finished_check,
ADD CONSTRAINT jobq_jobs_status_check CHECK (status = ANY(jobq__statuses())),  -- noqa: CP03
ADD CONSTRAINT jobq_jobs_finished_check CHECK (
    (status = ANY(jobq__statuses(finished => TRUE))) = (finished_at IS NOT NULL)  -- noqa: CP03
);
