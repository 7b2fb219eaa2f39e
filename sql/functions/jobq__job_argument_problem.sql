-- jobq__job_argument_problem (private): the first thing wrong with one job's arguments, as a
-- message that names the argument, or NULL when all is well. Shared by jobq_enqueue (one job),
-- jobq_enqueue_many and jobq_enqueue_arrays (the set-based check of every element), so all
-- refuse the same values with the same words.
--! replaces: jobq__job_error(text, text, text, integer, integer)
--
-- A single-expression LANGUAGE sql function, so that the planner inlines it into its callers.
-- It is STABLE, not IMMUTABLE, on purpose: its body calls format(), which is STABLE, and
-- PostgreSQL refuses to inline an IMMUTABLE function whose body is not. A call that is not
-- inlined goes through the SQL-function executor, whose state PL/pgSQL builds anew in each
-- transaction, a large part of a single enqueue's server time. Not SECURITY
-- DEFINER and no SET clause, for the same reason (either would stop the inlining); it reads
-- no table, and is granted to nobody.
--
-- An idempotency key is also bounded in bytes: the unique index on (job_type,
-- idempotency_key) holds at most 2,704 bytes per entry (a btree page's third), and compression
-- cannot be counted on, so 1,000 characters of a script that takes 3 or 4 bytes each could
-- fail the insert with an index error. The entry holds the job type too, at most 200
-- characters of up to 4 bytes: 8 bytes of tuple header, 4 + 800 for the job type, 4 + 1,800
-- for the key make 2,616 bytes, within the limit whatever the job type, and the check happens
-- before any row is touched.
--! requires: jobq__blank

CREATE OR REPLACE FUNCTION jobq__job_argument_problem(
    job_type text,
    queue text,
    idempotency_key text,
    max_attempts integer,
    priority integer
) RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN jobq__blank(job_type)
            THEN 'job_type must be a non-blank string'
        WHEN pg_catalog.length(job_type) > 200
            THEN pg_catalog.format('job_type is %s characters long, at most 200 are allowed',
                                   pg_catalog.length(job_type))
        WHEN jobq__blank(queue)
            THEN 'queue must be a non-blank string'
        WHEN pg_catalog.length(queue) > 200
            THEN pg_catalog.format('queue is %s characters long, at most 200 are allowed',
                                   pg_catalog.length(queue))
        WHEN idempotency_key IS NOT NULL AND jobq__blank(idempotency_key)
            THEN 'idempotency_key must be NULL or a non-blank string'
        WHEN pg_catalog.length(idempotency_key) > 1000
            THEN pg_catalog.format(
                'idempotency_key is %s characters long, at most 1000 are allowed',
                pg_catalog.length(idempotency_key)
            )
        WHEN pg_catalog.octet_length(idempotency_key) > 1800
            THEN pg_catalog.format(
                'idempotency_key is %s bytes long, at most 1800 are allowed',
                pg_catalog.octet_length(idempotency_key)
            )
        WHEN max_attempts IS NULL OR max_attempts < 1 OR max_attempts > 1000
            THEN pg_catalog.format('max_attempts must be between 1 and 1000, got %s',
                                   coalesce(max_attempts::text, 'NULL'))
        WHEN priority IS NULL OR priority < -1000000 OR priority > 1000000
            THEN pg_catalog.format('priority must be between -1000000 and 1000000, got %s',
                                   coalesce(priority::text, 'NULL'))
    END
$$;

COMMENT ON FUNCTION jobq__job_argument_problem(text, text, text, integer, integer) IS
'Private. Returns the first problem with one job''s arguments (a message naming the
argument), or NULL.';

REVOKE EXECUTE ON FUNCTION jobq__job_argument_problem(text, text, text, integer, integer)
FROM PUBLIC;
