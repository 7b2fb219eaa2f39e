-- 0003_jobq_fence_by_primary_key.sql — complete, fail, heartbeat and release find the job by
-- its primary key whatever the statistics say.
--
-- In 0001 these functions matched the claim with `j.id = ... AND j.status = 'processing' AND
-- j.locked_by = ...`. The status test matches the predicate of the partial index
-- jobq_jobs_locked_idx (WHERE status = 'processing'), so the planner may use that index
-- instead of the primary key, and does, with a generic plan, when the statistics were
-- gathered while few jobs were processing (ANALYZE on a quiet queue): each call then scans
-- every claimed job. Measured: a worker reporting 4,000 failures in one statement took 2.3 s
-- instead of 0.25 s, and a busy worker's acknowledgements fell behind ever further.
--
-- The status test is redundant: the CHECK constraint jobq_jobs_claim_check makes locked_by
-- non-NULL exactly while a job is processing, so `j.locked_by = worker_id` (worker_id being
-- non-NULL for any row to match) already implies it. Without it, jobq_jobs_locked_idx cannot
-- serve these statements and the primary key is the only index that can. Behaviour, results,
-- signatures, comments and privileges are unchanged (CREATE OR REPLACE keeps the latter two).

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
BEGIN
    UPDATE jobq_jobs AS j
    SET
        status = 'succeeded',
        finished_at = now(),
        locked_at = NULL,
        locked_by = NULL,
        updated_at = now()
    -- No status = 'processing' test here: locked_by is set exactly while a job is
    -- processing (jobq_jobs_claim_check), and with that test the planner may choose
    -- jobq_jobs_locked_idx over the primary key (see 0003_jobq_fence_by_primary_key).
    WHERE j.id = jobq_complete.job_id
      AND j.locked_by = jobq_complete.worker_id
      AND (jobq_complete.attempt IS NULL OR j.attempts = jobq_complete.attempt);
    RETURN FOUND;
END;
$$;

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
BEGIN
    IF jobq_complete_many.attempts IS NOT NULL
       AND cardinality(jobq_complete_many.attempts)
           IS DISTINCT FROM cardinality(jobq_complete_many.job_ids) THEN
        RAISE EXCEPTION 'jobq_complete_many: attempts has % elements, job_ids has %',
            cardinality(jobq_complete_many.attempts),
            coalesce(cardinality(jobq_complete_many.job_ids), 0)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one attempt per job id, in the same order, or NULL.';
    END IF;

    UPDATE jobq_jobs AS j
    SET
        status = 'succeeded',
        finished_at = now(),
        locked_at = NULL,
        locked_by = NULL,
        updated_at = now()
    FROM unnest(
        jobq_complete_many.job_ids,
        coalesce(
            jobq_complete_many.attempts,
            array_fill(NULL::integer, ARRAY[coalesce(cardinality(jobq_complete_many.job_ids), 0)])
        )
    ) AS d (job_id, attempt)
    -- No status = 'processing' test here: locked_by is set exactly while a job is
    -- processing (jobq_jobs_claim_check), and with that test the planner may choose
    -- jobq_jobs_locked_idx over the primary key (see 0003_jobq_fence_by_primary_key).
    WHERE j.id = d.job_id
      AND j.locked_by = jobq_complete_many.worker_id
      AND (d.attempt IS NULL OR j.attempts = d.attempt);
    GET DIAGNOSTICS v_done = ROW_COUNT;
    RETURN v_done;
END;
$$;

CREATE OR REPLACE FUNCTION jobq_fail(
    job_id uuid,
    worker_id text,
    error text,
    retry boolean DEFAULT TRUE,
    backoff interval DEFAULT '10 seconds',
    attempt integer DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_status text;
    v_queue text;
    v_available_at timestamptz;
BEGIN
    IF retry IS NULL THEN
        RAISE EXCEPTION 'jobq_fail: retry must be true or false, not NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF backoff IS NULL OR backoff < interval '0' THEN
        RAISE EXCEPTION 'jobq_fail: backoff must be an interval >= 0, got %',
            coalesce(backoff::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    UPDATE jobq_jobs AS j
    SET
        status = CASE
            WHEN NOT jobq_fail.retry THEN 'failed'
            WHEN j.attempts >= j.max_attempts THEN 'dead_letter'
            ELSE 'pending'
        END,
        available_at = CASE
            WHEN jobq_fail.retry AND j.attempts < j.max_attempts
                THEN now() + jobq__backoff(j.attempts, jobq_fail.backoff)
            ELSE j.available_at
        END,
        finished_at = CASE
            WHEN jobq_fail.retry AND j.attempts < j.max_attempts THEN NULL
            ELSE now()
        END,
        last_error = coalesce(jobq_fail.error, ''),
        errors = j.errors || jsonb_build_object(
            'attempt', j.attempts,
            'at', now(),
            'worker', j.locked_by,
            'error', coalesce(jobq_fail.error, '')
        ),
        locked_at = NULL,
        locked_by = NULL,
        updated_at = now()
    -- No status = 'processing' test here: locked_by is set exactly while a job is
    -- processing (jobq_jobs_claim_check), and with that test the planner may choose
    -- jobq_jobs_locked_idx over the primary key (see 0003_jobq_fence_by_primary_key).
    WHERE j.id = jobq_fail.job_id
      AND j.locked_by = jobq_fail.worker_id
      AND (jobq_fail.attempt IS NULL OR j.attempts = jobq_fail.attempt)
    RETURNING j.status, j.queue, j.available_at INTO v_status, v_queue, v_available_at;
    IF v_status = 'pending' AND v_available_at <= now() THEN
        PERFORM pg_notify('jobq', v_queue);  -- a retry without backoff: wake a worker
    END IF;
    RETURN v_status;
END;
$$;

CREATE OR REPLACE FUNCTION jobq_heartbeat(worker_id text, job_ids uuid[]) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_renewed integer;
BEGIN
    UPDATE jobq_jobs AS j
    SET locked_at = now()
    -- No status = 'processing' test here: locked_by is set exactly while a job is
    -- processing (jobq_jobs_claim_check), and with that test the planner may choose
    -- jobq_jobs_locked_idx over the primary key (see 0003_jobq_fence_by_primary_key).
    WHERE j.id = ANY (jobq_heartbeat.job_ids)
      AND j.locked_by = jobq_heartbeat.worker_id;
    GET DIAGNOSTICS v_renewed = ROW_COUNT;
    RETURN v_renewed;
END;
$$;

CREATE OR REPLACE FUNCTION jobq_release(job_ids uuid[], worker_id text) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_released integer;
BEGIN
    UPDATE jobq_jobs AS j
    SET
        status = 'pending',
        available_at = now(),
        attempts = greatest(j.attempts - 1, 0),
        locked_at = NULL,
        locked_by = NULL,
        updated_at = now()
    -- No status = 'processing' test here: locked_by is set exactly while a job is
    -- processing (jobq_jobs_claim_check), and with that test the planner may choose
    -- jobq_jobs_locked_idx over the primary key (see 0003_jobq_fence_by_primary_key).
    WHERE j.id = ANY (jobq_release.job_ids)
      AND j.locked_by = jobq_release.worker_id;
    GET DIAGNOSTICS v_released = ROW_COUNT;
    IF v_released > 0 THEN
        PERFORM pg_notify('jobq', r.queue)
        FROM (
            SELECT DISTINCT j.queue FROM jobq_jobs AS j WHERE j.id = ANY (jobq_release.job_ids)
        ) AS r;
    END IF;
    RETURN v_released;
END;
$$;
