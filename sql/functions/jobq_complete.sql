-- jobq_complete: marks one job succeeded while the worker still holds its claim (fenced by
-- worker_id, and by the claim's attempt when given).
--
-- The WHERE clause finds the job by its primary key and tests no status: see the note on
-- jobq_jobs_claim_check in migrations/0001_jobq_core.sql (locked_by is set exactly while a
-- job is processing, and a status test would let the planner scan every claimed job).
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_complete(
    job_id uuid,
    worker_id text,
    attempt integer DEFAULT NULL
) RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_error text;
BEGIN
    v_error := jobq__worker_id_error(jobq_complete.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_complete: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;

    UPDATE jobq_jobs AS j
    SET
        status = 'succeeded',
        finished_at = pg_catalog.now(),
        locked_at = NULL,
        locked_by = NULL,
        updated_at = pg_catalog.now()
    -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
    -- test would let the planner scan jobq_jobs_locked_idx instead of the primary key.
    WHERE j.id = jobq_complete.job_id
      AND j.locked_by = jobq_complete.worker_id
      AND (jobq_complete.attempt IS NULL OR j.attempts = jobq_complete.attempt);
    RETURN FOUND;
END;
$$;

COMMENT ON FUNCTION jobq_complete(uuid, text, integer) IS
'Marks the job succeeded while the worker still holds its claim.
Arguments: job_id (the job), worker_id (the worker that claimed it: non-blank, at most 200
characters), attempt (NULL = any; else only the claim of that attempt counts, so that a claim
that expired and was taken again, even by the same worker_id, is fenced off).
Result: true if it completed the job; false otherwise (unknown job, not processing, claim
taken over or of another attempt), and nothing changes then.
Errors: 22023 worker_id NULL, blank or longer than 200 characters.
Concurrency: the row lock orders it against a concurrent takeover; whichever commits first
wins, and a taken-over claim can no longer complete.';

REVOKE EXECUTE ON FUNCTION jobq_complete(uuid, text, integer) FROM PUBLIC;
