-- jobq__notify (private): wakes the workers of the given queues, on this installation's
-- channel (jobq__channel), with one notification per queue, the queue name as payload. One
-- statement sends at most 100 of them: beyond that (an enqueue_many over 100,000 distinct
-- queues would send 100,000, each one queued in the server until commit and delivered to
-- every listener) it sends a single notification with an empty payload, which workers take as
-- "jobs are available in several queues" (a queue name is never blank, so it cannot be one).
-- Returns how many notifications it sent. PostgreSQL folds identical notifications of one
-- transaction into one.

-- SET search_path: it names the channel helper, also where Citus runs the calling statement
-- on the schema's node in a session of its own (docs/decisions/0002-sql-that-citus-can-run.md).
CREATE OR REPLACE FUNCTION jobq__notify(queues text[]) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    v_channel text := jobq__channel();
    v_count integer := coalesce(pg_catalog.cardinality(queues), 0);
BEGIN
    IF v_count = 0 THEN
        RETURN 0;
    END IF;
    IF v_count > 100 THEN
        PERFORM pg_catalog.pg_notify(v_channel, '');
        RETURN 1;
    END IF;
    PERFORM pg_catalog.pg_notify(v_channel, q.queue)
    FROM pg_catalog.unnest(queues) AS q (queue);
    RETURN v_count;
END;
$$;

COMMENT ON FUNCTION jobq__notify(text[]) IS
'Private. NOTIFY on this installation''s channel: one notification per queue (the queue name as
payload), or, for more than 100 queues, one with an empty payload that wakes every worker.
Result: how many notifications were sent.';

REVOKE EXECUTE ON FUNCTION jobq__notify(text[]) FROM PUBLIC;
