-- jobq__limit_argument_problem (private): the first thing wrong with a job's limit_group and
-- limit_key, as a message that names the argument, or NULL when all is well. Shared by
-- jobq_enqueue, jobq_enqueue_many, jobq_enqueue_arrays and (for the group) jobq_set_limit.
--
-- Both are bounded like job_type (200 characters) so that index entries stay small, and
-- neither may be blank: jobq_jobs_limited_idx and jobq_limit_keys let the empty string stand
-- for a NULL limit_key. A LANGUAGE sql single expression, STABLE, for the reasons given in
-- jobq__job_argument_problem (it is inlined into its callers).
--! requires: jobq__blank

CREATE OR REPLACE FUNCTION jobq__limit_argument_problem(
    limit_group text,
    limit_key text
) RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN limit_group IS NOT NULL AND jobq__blank(limit_group)
            THEN 'limit_group must be NULL or a non-blank string'
        WHEN pg_catalog.length(limit_group) > 200
            THEN pg_catalog.format('limit_group is %s characters long, at most 200 are allowed',
                                   pg_catalog.length(limit_group))
        WHEN limit_key IS NOT NULL AND limit_group IS NULL
            THEN 'limit_key needs a limit_group'
        WHEN limit_key IS NOT NULL AND jobq__blank(limit_key)
            THEN 'limit_key must be NULL or a non-blank string'
        WHEN pg_catalog.length(limit_key) > 200
            THEN pg_catalog.format('limit_key is %s characters long, at most 200 are allowed',
                                   pg_catalog.length(limit_key))
    END
$$;

COMMENT ON FUNCTION jobq__limit_argument_problem(text, text) IS
'Private. Returns the first problem with a job''s limit_group and limit_key (a message naming
the argument), or NULL.';

REVOKE EXECUTE ON FUNCTION jobq__limit_argument_problem(text, text) FROM PUBLIC;
