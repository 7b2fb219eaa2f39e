-- jobq__statuses (private): the status names, written once. The CHECK constraints of jobq_jobs
-- (jobq_jobs_status_check, jobq_jobs_finished_check), jobq_prune, jobq_list_jobs and the
-- requeue functions all ask this function, so adding a status is an edit of this file (and of
-- pgq_client.models.STATUSES, which a test compares with it).
--
-- finished => NULL: every status, in the order of a job's life; true: the finished ones
-- (finished_at is set, jobq_prune may delete them); false: the others.
--
-- IMMUTABLE, so that PostgreSQL evaluates it once when it prepares a statement that writes
-- jobq_jobs (the constraint then compares with a constant array, as a literal list would).
-- Statuses are only ever added, never removed: rows checked against an older list stay valid
-- under a newer one. PL/pgSQL rather than SQL: a SQL function in a CHECK constraint is parsed
-- again each time a statement is prepared, which makes every single-row INSERT dearer; a
-- PL/pgSQL body is compiled once per session.

CREATE OR REPLACE FUNCTION jobq__statuses(finished boolean DEFAULT NULL) RETURNS text[]
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $$
DECLARE
    -- waiting has a dependency that has not succeeded (never claimed); pending waits (also
    -- between retries); processing is claimed.
    v_unfinished CONSTANT text[] := ARRAY['waiting', 'pending', 'processing'];
    -- succeeded is done; failed is a permanent failure the worker asked for; dead_letter has
    -- used all its attempts; cancelled was cancelled (jobq_cancel).
    v_finished CONSTANT text[] := ARRAY['succeeded', 'failed', 'dead_letter', 'cancelled'];
BEGIN
    RETURN CASE jobq__statuses.finished
        WHEN TRUE THEN v_finished
        WHEN FALSE THEN v_unfinished
        ELSE pg_catalog.array_cat(v_unfinished, v_finished)
    END;
END;
$$;

COMMENT ON FUNCTION jobq__statuses(boolean) IS
'Private. The job statuses: every one (finished NULL, in the order of a job''s life), the
finished ones (finished true) or the others (finished false). Used by the CHECK constraints of
jobq_jobs and by the functions that take status names.';

REVOKE EXECUTE ON FUNCTION jobq__statuses(boolean) FROM PUBLIC;
