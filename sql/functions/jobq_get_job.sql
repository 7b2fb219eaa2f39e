-- jobq_get_job (admin): one job by id, every column (payload and errors history included), for
-- `jobq jobs show`. One look-up in the primary key, whatever the size of the table.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_get_job(job_id uuid) RETURNS SETOF jobq_jobs
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF job_id IS NULL THEN
        RAISE EXCEPTION 'jobq_get_job: job_id must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT j.* FROM jobq_all_jobs AS j WHERE j.id = jobq_get_job.job_id;
END;
$$;

COMMENT ON FUNCTION jobq_get_job(uuid) IS
'Admin. Shows one job, every column (payload, errors history, timestamps), found by its
primary key. Shows the payload, so it is granted to admins only.
Arguments: job_id (the job).
Result: the row of jobq_jobs with this id; no row for an unknown id.
Errors: 22023 a NULL job_id.';

REVOKE EXECUTE ON FUNCTION jobq_get_job(uuid) FROM PUBLIC;
