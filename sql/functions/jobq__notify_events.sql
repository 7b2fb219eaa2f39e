-- jobq__notify_events (private): tells the listeners of one kind of event
-- (jobq__event_channel) that such events happened, with one notification whose payload is
-- empty, whatever the number of events. The payload carries no job id nor worker id: anyone
-- may LISTEN on a channel, so a payload is readable by roles that may not read the jobs. A
-- listener re-checks what it waits for with the functions its level is granted (a waiter:
-- jobq_job_status of its jobs; a worker: jobq_cancel_requested of the jobs it holds).
-- PostgreSQL folds identical notifications of one transaction into one, so a transaction
-- sends at most one per kind. payloads only says whether there was any event (its non-NULL
-- elements). Returns how many notifications it sent (0 or 1).
--! requires: jobq__event_channel

-- SET search_path: it names the channel helper, also where Citus runs the calling statement
-- on the schema's node in a session of its own (docs/decisions/0002-sql-that-citus-can-run.md).
CREATE OR REPLACE FUNCTION jobq__notify_events(kind text, payloads text[]) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.unnest(payloads) AS p (payload) WHERE p.payload IS NOT NULL)
    THEN
        RETURN 0;
    END IF;
    PERFORM pg_catalog.pg_notify(jobq__event_channel(kind), '');
    RETURN 1;
END;
$$;

COMMENT ON FUNCTION jobq__notify_events(text, text[]) IS
'Private. NOTIFY on this installation''s channel for events of kind (jobq__event_channel): one
notification with an empty payload when payloads has a non-NULL element (no id is sent:
listeners re-check with the functions they are granted). Result: how many notifications were
sent (0 or 1).';

REVOKE EXECUTE ON FUNCTION jobq__notify_events(text, text[]) FROM PUBLIC;
