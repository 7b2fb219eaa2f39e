-- jobq_pause: an operator stops the claims of one queue. A row in jobq_paused_queues, so the
-- pause is durable and every worker sees it at its next claim; running jobs are not touched (they
-- finish, fail or are released as usual), enqueues still succeed, and the queue's pending jobs
-- keep their order and attempts until jobq_resume.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_pause(queue text, reason text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_added integer;
BEGIN
    IF jobq__blank(jobq_pause.queue) THEN
        RAISE EXCEPTION 'jobq_pause: queue must be a non-blank string'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_pause.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_pause: queue is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_pause.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_pause.reason) > 1000 THEN
        RAISE EXCEPTION 'jobq_pause: reason is % characters long, at most 1000 are allowed',
            pg_catalog.length(jobq_pause.reason)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO jobq_paused_queues AS p (queue, paused_at, reason)
    VALUES (jobq_pause.queue, pg_catalog.now(), jobq_pause.reason)
    ON CONFLICT ON CONSTRAINT jobq_paused_queues_pkey DO NOTHING;
    GET DIAGNOSTICS v_added = ROW_COUNT;
    RETURN v_added > 0;
END;
$$;

COMMENT ON FUNCTION jobq_pause(text, text) IS
'Admin only. Pauses a queue: from the commit on, no jobq_dequeue claims its jobs (they stay
pending, spend no attempt and keep their order); jobs already running finish normally and
enqueues still succeed. Durable and shared by every worker, until jobq_resume.
Arguments: queue (non-blank, at most 200 characters; it need not have jobs yet), reason (why,
shown by jobq_queues; at most 1000 characters; NULL: none).
Result: true if it paused the queue, false if it was paused already (its pause, reason
included, is left as it was).
Errors: 22023 queue NULL, blank or longer than 200 characters, reason longer than 1000
characters; nothing changes then.
Concurrency: one row of jobq_paused_queues; a claim that started before the commit may still
take the queue''s jobs.';

REVOKE EXECUTE ON FUNCTION jobq_pause(text, text) FROM PUBLIC;
