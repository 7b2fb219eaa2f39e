-- jobq__dependency_argument_problem (private): the first thing wrong with a job's depends_on
-- and on_dependency_failure, as a message that names the argument, or NULL when all is well.
-- Shared by jobq_enqueue, jobq_enqueue_many (per element) and jobq_add_dependencies. A
-- LANGUAGE sql single expression, STABLE, for the reasons given in jobq__job_argument_problem
-- (it is inlined into its callers). Whether the ids exist is jobq__add_edges' question.

CREATE OR REPLACE FUNCTION jobq__dependency_argument_problem(
    depends_on uuid[],
    on_dependency_failure text
) RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN on_dependency_failure IS NULL
            OR on_dependency_failure NOT IN ('cancel', 'run', 'wait')
            THEN pg_catalog.format(
                'on_dependency_failure must be cancel, run or wait, got %s',
                coalesce(pg_catalog.quote_literal(on_dependency_failure), 'NULL')
            )
        WHEN depends_on IS NULL
            THEN 'depends_on must be an array of job ids'
        WHEN pg_catalog.cardinality(depends_on) > 10000
            THEN pg_catalog.format(
                'depends_on has %s elements, at most 10000 are allowed',
                pg_catalog.cardinality(depends_on)
            )
        WHEN pg_catalog.array_position(depends_on, NULL) IS NOT NULL
            THEN 'depends_on must not contain NULL'
    END
$$;

COMMENT ON FUNCTION jobq__dependency_argument_problem(uuid[], text) IS
'Private. Returns the first problem with a job''s depends_on and on_dependency_failure (a
message naming the argument), or NULL.';

REVOKE EXECUTE ON FUNCTION jobq__dependency_argument_problem(uuid[], text) FROM PUBLIC;
