-- jobq__retire_row (private): the body of the trigger jobq_jobs_retire, which moves a row of
-- jobq_jobs that a statement made finished to jobq_jobs_history (jobq__retire) at the end of
-- that statement. The functions that finish a job by an UPDATE (failure, cancel, release,
-- takeover in the claim) rely on it, and so does any other write: jobq_jobs never keeps a
-- finished job past the statement that finished it. The trigger's WHEN clause
-- (finished_at IS NOT NULL) keeps every other write from queuing an event at all: enqueues,
-- claims and heartbeats only evaluate it. The completion moves its row itself, by a DELETE.
--
-- SECURITY DEFINER with a pinned search_path: a trigger runs as the role whose statement fired
-- it, with that role's search_path.

CREATE OR REPLACE FUNCTION jobq__retire_row() RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    PERFORM jobq__retire(ARRAY[new.id]);
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION jobq__retire_row() IS
'Private. Trigger of jobq_jobs (jobq_jobs_retire, AFTER INSERT OR UPDATE of a row that is
finished): moves the row to jobq_jobs_history at the end of the statement.';

REVOKE EXECUTE ON FUNCTION jobq__retire_row() FROM PUBLIC;
