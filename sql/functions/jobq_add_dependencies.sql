-- jobq_add_dependencies: grafts new work in front of a job that still waits, such as a handler
-- that discovers more to do before a continuation may run: the job then waits for these too.
-- A job that is no longer waiting is left alone (0), so a graft never holds back a job that
-- was already released. The edges are jobq__add_edges': the dependencies are locked and
-- marked first, then the job, and a cycle or an unknown id is refused with nothing changed.
--! levels: producer, worker, admin

CREATE OR REPLACE FUNCTION jobq_add_dependencies(
    job_id uuid,
    depends_on uuid[]
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_error text;
BEGIN
    IF jobq_add_dependencies.job_id IS NULL THEN
        RAISE EXCEPTION 'jobq_add_dependencies: job_id must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_error := jobq__dependency_argument_problem(
        jobq_add_dependencies.depends_on, 'cancel'::text
    );
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_add_dependencies: %', v_error
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_add_dependencies.job_id = ANY (jobq_add_dependencies.depends_on) THEN
        RAISE EXCEPTION 'jobq_add_dependencies: depends_on would close a cycle: a job cannot '
                        'wait for itself'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The new edges take the rule the job already waits under (each job has one).
    RETURN jobq__add_edges(
        pg_catalog.array_fill(
            jobq_add_dependencies.job_id,
            ARRAY[pg_catalog.cardinality(jobq_add_dependencies.depends_on)]
        ),
        jobq_add_dependencies.depends_on,
        pg_catalog.array_fill(
            coalesce((
                SELECT e.on_failure FROM jobq_job_dependencies AS e
                WHERE e.job_id = jobq_add_dependencies.job_id
                LIMIT 1
            ), 'cancel'),
            ARRAY[pg_catalog.cardinality(jobq_add_dependencies.depends_on)]
        ),
        'jobq_add_dependencies: depends_on'::text,
        TRUE
    );
END;
$$;

COMMENT ON FUNCTION jobq_add_dependencies(uuid, uuid[]) IS
'Adds dependencies to a job that is still waiting: it then also waits for these (with the
on_dependency_failure it was enqueued with). A dependency that has already succeeded adds an
edge but holds nothing back.
Arguments: job_id (the waiting job), depends_on (up to 10,000 ids of existing jobs, no NULL).
Result: how many dependencies were added (ones already there count 0); 0 when the job is not
waiting (unknown, pending, running or finished: nothing changes).
Errors: 22023 NULL job_id, NULL or too many ids, an unknown id, or a dependency that would
close a cycle (the job itself, or a job that waits for it); nothing changes.
Concurrency: locks the dependencies still running (until commit: their completion waits for
it), then the job; a dependency that finishes concurrently is seen finished or sees the edge.';

REVOKE EXECUTE ON FUNCTION jobq_add_dependencies(uuid, uuid[]) FROM PUBLIC;
