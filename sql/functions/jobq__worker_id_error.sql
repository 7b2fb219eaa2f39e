-- jobq__worker_id_error (private): what is wrong with a worker_id, as a message that names it,
-- or NULL. Every function that takes a worker_id refuses the same values with the same words:
-- NULL or blank (jobq__blank), or longer than 200 characters. The id is stored in locked_by
-- and in every entry of errors; unbounded, one claim with an id of many megabytes would make
-- every later claim of that job type fail once its lock expired (the takeover could not build
-- the entry that records it).
--
-- A single-expression LANGUAGE sql function, inlined into its callers (see
-- jobq__job_argument_problem for why it is STABLE and has no SET clause).
--! requires: jobq__blank

CREATE OR REPLACE FUNCTION jobq__worker_id_error(worker_id text) RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN jobq__blank(worker_id)
            THEN 'worker_id must be a non-blank string'
        WHEN pg_catalog.length(worker_id) > 200
            THEN pg_catalog.format('worker_id is %s characters long, at most 200 are allowed',
                                   pg_catalog.length(worker_id))
    END
$$;

COMMENT ON FUNCTION jobq__worker_id_error(text) IS
'Private. Returns what is wrong with worker_id (NULL, blank, more than 200 characters) as a
message naming it, or NULL.';

REVOKE EXECUTE ON FUNCTION jobq__worker_id_error(text) FROM PUBLIC;
