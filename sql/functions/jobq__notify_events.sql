-- jobq__notify_events (private): sends events of one kind (jobq__event_channel) with the given
-- payloads, one notification per distinct payload. One statement sends at most 100 of them:
-- beyond that (a cancel of 10,000 awaited jobs) it sends a single notification with an empty
-- payload, which listeners take as "check everything you wait for" (a job id or a worker id is
-- never empty). Returns how many notifications it sent. PostgreSQL folds identical
-- notifications of one transaction into one.
--! requires: jobq__event_channel

-- SET search_path: it names the channel helper, and under Citus a statement that calls it and
-- reads jobq_jobs runs whole on the node that holds the schema, in Citus's own session; its
-- channel is then this schema's, there too.
CREATE OR REPLACE FUNCTION jobq__notify_events(kind text, payloads text[]) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    v_channel text;
    v_distinct text[];
BEGIN
    IF coalesce(pg_catalog.cardinality(payloads), 0) = 0 THEN
        RETURN 0;
    END IF;
    v_channel := jobq__event_channel(kind);
    v_distinct := ARRAY(
        SELECT DISTINCT p.payload FROM pg_catalog.unnest(payloads) AS p (payload)
        WHERE p.payload IS NOT NULL
    );
    IF pg_catalog.cardinality(v_distinct) > 100 THEN
        PERFORM pg_catalog.pg_notify(v_channel, '');
        RETURN 1;
    END IF;
    PERFORM pg_catalog.pg_notify(v_channel, p.payload)
    FROM pg_catalog.unnest(v_distinct) AS p (payload);
    RETURN pg_catalog.cardinality(v_distinct);
END;
$$;

COMMENT ON FUNCTION jobq__notify_events(text, text[]) IS
'Private. NOTIFY on this installation''s channel for events of kind (jobq__event_channel): one
notification per distinct non-NULL payload, or, for more than 100, one with an empty payload
that means "check everything". Result: how many notifications were sent.';

REVOKE EXECUTE ON FUNCTION jobq__notify_events(text, text[]) FROM PUBLIC;
