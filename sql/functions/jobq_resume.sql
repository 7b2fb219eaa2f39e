-- jobq_resume: ends a pause (jobq_pause). The queue's jobs waited while workers went on
-- sleeping, so it wakes them at once with the NOTIFY an enqueue sends for that queue, delivered
-- at commit.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_resume(queue text) RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_removed integer;
BEGIN
    IF jobq__blank(jobq_resume.queue) THEN
        RAISE EXCEPTION 'jobq_resume: queue must be a non-blank string'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_resume.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_resume: queue is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_resume.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM jobq_paused_queues AS p
    WHERE p.queue = jobq_resume.queue;
    GET DIAGNOSTICS v_removed = ROW_COUNT;
    IF v_removed = 0 THEN
        RETURN FALSE;
    END IF;
    PERFORM pg_catalog.pg_notify(jobq__channel(), jobq_resume.queue);
    RETURN TRUE;
END;
$$;

COMMENT ON FUNCTION jobq_resume(text) IS
'Admin only. Resumes a queue paused by jobq_pause: claims take its jobs again, and idle workers
are woken at once (a NOTIFY on the installation''s channel with the queue''s name, as an
enqueue sends, delivered at commit).
Arguments: queue (non-blank, at most 200 characters).
Result: true if the queue was paused, false if it was not (nothing changes then).
Errors: 22023 queue NULL, blank or longer than 200 characters.
Concurrency: deletes one row of jobq_paused_queues.';

REVOKE EXECUTE ON FUNCTION jobq_resume(text) FROM PUBLIC;
