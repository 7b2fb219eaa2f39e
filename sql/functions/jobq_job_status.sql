-- jobq_job_status: the state of given jobs, without their payloads, for producers that want
-- to know how their jobs ended. One index probe per id. Not for monitors: it returns results
-- and error texts, which the monitor level never sees.
--! levels: producer, worker, admin
--! granted-as: jobq_enqueue

CREATE OR REPLACE FUNCTION jobq_job_status(job_ids uuid[]) RETURNS TABLE (
    id uuid,
    status text,
    attempts integer,
    result jsonb,
    last_error text,
    finished_at timestamptz,
    cancel_requested boolean
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT
        j.id, j.status, j.attempts, j.result, j.last_error, j.finished_at,
        j.cancel_requested_at IS NOT NULL
    FROM jobq_all_jobs AS j
    WHERE j.id = ANY (jobq_job_status.job_ids)
    ORDER BY j.id
$$;

COMMENT ON FUNCTION jobq_job_status(uuid[]) IS
'How the given jobs stand, without their payloads: for producers and workers that want to
know how their jobs ended (not granted to the monitor level: it returns results and errors).
Arguments: job_ids (the jobs; NULL = none).
Result: one row per known id (unknown ids are left out), in id order: id, status, attempts,
result (what the handler returned, for a succeeded job), last_error, finished_at (NULL while
unfinished), cancel_requested (true when jobq_cancel asked the job to stop while it was
processing; false, never NULL, otherwise).
Errors: none.';

REVOKE EXECUTE ON FUNCTION jobq_job_status(uuid[]) FROM PUBLIC;
