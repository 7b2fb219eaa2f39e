-- jobq_cancel_requested: which of the given jobs have a cancel request, for workers in any
-- language. The Python Worker sends it in the same statement as its heartbeat
-- (SELECT jobq_heartbeat(...), ARRAY(SELECT jobq_cancel_requested(...))), so that learning of
-- a cancel costs no round trip of its own and is never later than one heartbeat interval,
-- whether or not the worker heard the NOTIFY on the cancel channel.
--! levels: worker, admin
--! granted-as: jobq_heartbeat

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
'Which of the given jobs have a cancel request (cancel_requested_at, set by jobq_cancel on a
processing job). A worker asks it for the jobs it holds, in the statement of its heartbeat, and
tells their handlers to stop.
Arguments: job_ids (the jobs; NULL = none).
Result: the ids of those with a request, in id order; unknown ids and jobs without a request
are left out.
Errors: none.';

REVOKE EXECUTE ON FUNCTION jobq_cancel_requested(uuid[]) FROM PUBLIC;
