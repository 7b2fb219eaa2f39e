-- jobq__awaits_end (private): of the given jobs, which ended, those that a client awaits
-- (rows of jobq_awaits, which jobq_await registers), as text for jobq__notify_events; their
-- rows are deleted. One index probe per id on an index that is empty unless someone waits,
-- so ending a job nobody awaits costs next to nothing. It never waits: only the statement
-- that ends a job deletes its rows, and the ending statements of one job are serialised by
-- the job's own row lock. No SET clause: it runs inside its callers, with their search_path.

CREATE OR REPLACE FUNCTION jobq__awaits_end(job_ids uuid[]) RETURNS text[]
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_awaited text[];
BEGIN
    IF job_ids IS NULL THEN
        RETURN NULL;
    END IF;
    WITH gone AS (
        DELETE FROM jobq_awaits AS a
        WHERE a.job_id = ANY (jobq__awaits_end.job_ids)
        RETURNING a.job_id
    )

    SELECT pg_catalog.array_agg(DISTINCT g.job_id::text) INTO v_awaited
    FROM gone AS g;
    RETURN v_awaited;
END;
$$;

COMMENT ON FUNCTION jobq__awaits_end(uuid[]) IS
'Private. Of the given jobs (which the calling statement ended), returns those a client awaits
(jobq_awaits), as text, and deletes their rows; NULL when none is awaited.';

REVOKE EXECUTE ON FUNCTION jobq__awaits_end(uuid[]) FROM PUBLIC;
