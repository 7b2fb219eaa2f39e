-- jobq_cancel_requested: which of the given jobs have a cancel request, for workers in any
-- language. The Python Worker sends it in the same statement as its heartbeat
-- (SELECT jobq_heartbeat(...), ARRAY(SELECT jobq_cancel_requested(...))), so that learning of
-- a cancel costs no round trip of its own and is never later than one heartbeat interval,
-- whether or not the worker heard the NOTIFY on the cancel channel.
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_cancel_requested(job_ids uuid[]) RETURNS SETOF uuid
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT j.id
    FROM jobq_jobs AS j
    WHERE j.id = ANY (jobq_cancel_requested.job_ids)
      AND j.cancel_requested_at IS NOT NULL
    ORDER BY j.id
$$;

COMMENT ON FUNCTION jobq_cancel_requested(uuid[]) IS
'Returns those of job_ids that have a cancel request (cancel_requested_at set by jobq_cancel on
a processing job), in id order; unknown ids and jobs without a request are left out. A worker
calls it with the ids of the jobs it holds, beside its heartbeat, and tells their handlers to
stop. Reads only; no errors (a NULL job_ids returns nothing).';

REVOKE EXECUTE ON FUNCTION jobq_cancel_requested(uuid[]) FROM PUBLIC;
