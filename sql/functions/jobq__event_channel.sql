-- jobq__event_channel (private): the NOTIFY channel of this installation for one kind of event
-- other than the workers' wake-ups (jobq__channel), so that neither disturbs the listeners of
-- the other:
--   * done: a job that a client awaits has finished, for waiters;
--   * cancel: a processing job got a cancel request, for workers.
-- Their payloads are empty (jobq__notify_events says why).
-- The rule, which clients follow to LISTEN (pgq_client._sql.event_channel): 'jobq-<kind>:' and
-- the schema name when that fits in the 63 bytes a channel name holds, else 'jobq-<kind>#' and
-- as many hex digits of the SHA-224 of the schema name in UTF-8 as fit. The '-' keeps every such
-- name apart from the wake-up channels (jobq, jobq.<schema>, jobq#<hash>), ':' and '#' keep the
-- two forms apart. The schema is the caller's current_schema(), the schema that the jobq
-- functions pin first in their search_path (see jobq__channel). A single-expression LANGUAGE
-- sql function without SET clauses, inlined into its callers.

CREATE OR REPLACE FUNCTION jobq__event_channel(kind text) RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN pg_catalog.octet_length('jobq-' || kind || ':' || pg_catalog.current_schema()::text)
            <= 63
            THEN 'jobq-' || kind || ':' || pg_catalog.current_schema()::text
        ELSE 'jobq-' || kind || '#' || pg_catalog.left(
            pg_catalog.encode(
                pg_catalog.sha224(pg_catalog.convert_to(pg_catalog.current_schema()::text, 'UTF8')),
                'hex'
            ),
            63 - pg_catalog.octet_length('jobq-' || kind || '#')
        )
    END
$$;

COMMENT ON FUNCTION jobq__event_channel(text) IS
'Private. The NOTIFY channel of this installation for events of the given kind (done: an
awaited job finished; cancel: a processing job got a cancel request): jobq-<kind>:<schema>, or
jobq-<kind>#<hex SHA-224 of the schema name, cut to fit 63 bytes> for a long schema name.';

REVOKE EXECUTE ON FUNCTION jobq__event_channel(text) FROM PUBLIC;
