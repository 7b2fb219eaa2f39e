-- jobq__channel (private): the NOTIFY channel of this installation, so that an enqueue in one
-- schema wakes the workers of that schema only (LISTEN/NOTIFY channels belong to the whole
-- database). The rule, which clients follow to LISTEN (pgq_client._sql.channel):
--   * schema public: jobq;
--   * another schema of at most 58 bytes: jobq.<schema> (a channel name holds 63 bytes);
--   * a longer one: jobq#<SHA-224 of the schema name in UTF-8, 56 hex digits> ('#' keeps it
--     apart from every jobq.<schema>).
--
-- The schema is the caller's: current_schema() is the first schema of the search_path that
-- the jobq functions pin, so the channel follows a renamed schema. It is of type name, cast to
-- text before any operator or function sees it: name || text or octet_length(name) would be
-- resolved through a coercion, which a look-alike for the exact types would win. A
-- single-expression LANGUAGE sql function without SET clauses, inlined into its callers
-- (jobq_enqueue sends one notification per call).

CREATE OR REPLACE FUNCTION jobq__channel() RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN pg_catalog.current_schema()::text = 'public' THEN 'jobq'
        WHEN pg_catalog.octet_length(pg_catalog.current_schema()::text) <= 58
            THEN 'jobq.' || pg_catalog.current_schema()::text
        ELSE 'jobq#' || pg_catalog.encode(
            pg_catalog.sha224(pg_catalog.convert_to(pg_catalog.current_schema()::text, 'UTF8')),
            'hex'
        )
    END
$$;

COMMENT ON FUNCTION jobq__channel() IS
'Private. The NOTIFY channel of this installation: jobq for schema public, jobq.<schema> for a
schema of at most 58 bytes, else jobq#<hex SHA-224 of the schema name>.';

REVOKE EXECUTE ON FUNCTION jobq__channel() FROM PUBLIC;
