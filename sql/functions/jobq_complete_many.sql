-- jobq_complete_many: jobq_complete for many jobs in one statement (the Worker's batched
-- acknowledgements), each optionally fenced by its own attempt.
--
-- The WHERE clause finds the jobs by their primary key and tests no status: see the note on
-- jobq_jobs_claim_check in migrations/0001_jobq_core.sql.
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_complete_many(
    job_ids uuid[],
    worker_id text,
    attempts integer[] DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_done integer;
    v_error text;
BEGIN
    v_error := jobq__worker_id_error(jobq_complete_many.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_complete_many: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_complete_many.attempts IS NOT NULL
       AND pg_catalog.cardinality(jobq_complete_many.attempts)
           IS DISTINCT FROM pg_catalog.cardinality(jobq_complete_many.job_ids) THEN
        RAISE EXCEPTION 'jobq_complete_many: attempts has % elements, job_ids has %',
            pg_catalog.cardinality(jobq_complete_many.attempts),
            coalesce(pg_catalog.cardinality(jobq_complete_many.job_ids), 0)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one attempt per job id, in the same order, or NULL.';
    END IF;

    UPDATE jobq_jobs AS j
    SET
        status = 'succeeded',
        finished_at = pg_catalog.now(),
        locked_at = NULL,
        locked_by = NULL,
        updated_at = pg_catalog.now()
    -- ROWS FROM (unnest, unnest) is what a two-array unnest() in FROM means; it is written out
    -- because that shorthand exists only for the unqualified name.
    FROM ROWS FROM (
        pg_catalog.unnest(jobq_complete_many.job_ids),
        pg_catalog.unnest(coalesce(
            jobq_complete_many.attempts,
            pg_catalog.array_fill(
                NULL::integer,
                ARRAY[coalesce(pg_catalog.cardinality(jobq_complete_many.job_ids), 0)]
            )
        ))
    ) AS d (job_id, attempt)
    -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
    -- test would let the planner scan jobq_jobs_locked_idx instead of the primary key.
    WHERE j.id = d.job_id
      AND j.locked_by = jobq_complete_many.worker_id
      AND (d.attempt IS NULL OR j.attempts = d.attempt);
    GET DIAGNOSTICS v_done = ROW_COUNT;
    RETURN v_done;
END;
$$;

COMMENT ON FUNCTION jobq_complete_many(uuid[], text, integer[]) IS
'Marks succeeded, in one statement, each of the jobs that the worker still holds.
Arguments: job_ids (the jobs), worker_id (the worker that claimed them: non-blank, at most 200
characters), attempts (optional, an extension of the contract: one claim attempt per job id,
same order; a job counts only while its claim is of that attempt; NULL = any).
Result: how many jobs were completed; the others (not held, another attempt) are left alone.
Errors: 22023 when attempts and job_ids differ in length, worker_id NULL, blank or longer
than 200 characters.
Concurrency: as jobq_complete, job by job. It waits for the rows it changes: do not send two
calls over the same jobs at once.';

REVOKE EXECUTE ON FUNCTION jobq_complete_many(uuid[], text, integer[]) FROM PUBLIC;
