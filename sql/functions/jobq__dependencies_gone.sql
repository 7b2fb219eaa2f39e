-- jobq__dependencies_gone (private): a waiting job under rule wait whose dependency no longer
-- exists (deleted by jobq_prune or jobq_act_on_jobs, or dropped with a history partition by the
-- retention) can never be released: it is cancelled, naming that dependency, and its own
-- dependents follow their rules (jobq__dependents_finished, status pruned). Only waiting jobs
-- with edges under rule wait are looked at. The deleting functions call it after their DELETE,
-- in their transaction.
--
-- Not SECURITY DEFINER and no SET clause: it runs inside its callers, with their search_path,
-- and is granted to nobody.

CREATE OR REPLACE FUNCTION jobq__dependencies_gone() RETURNS integer
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_gone uuid[];
BEGIN
    SELECT pg_catalog.array_agg(DISTINCT e.depends_on) INTO v_gone
    FROM jobq_jobs AS c
    JOIN jobq_job_dependencies AS e ON e.job_id OPERATOR(pg_catalog.=) c.id
    WHERE c.status OPERATOR(pg_catalog.=) 'waiting'
      AND e.on_failure OPERATOR(pg_catalog.=) 'wait'
      AND NOT EXISTS (
          SELECT FROM jobq_all_jobs AS a WHERE a.id OPERATOR(pg_catalog.=) e.depends_on
      );
    IF v_gone IS NULL THEN
        RETURN 0;
    END IF;
    RETURN jobq__dependents_finished(
        v_gone, pg_catalog.array_fill('pruned'::text, ARRAY[pg_catalog.cardinality(v_gone)])
    );
END;
$$;

COMMENT ON FUNCTION jobq__dependencies_gone() IS
'Private. Cancels the waiting jobs under rule wait whose dependency no longer exists (and their
dependents by their rules), as jobq_prune and jobq_act_on_jobs call it after deleting jobs.
Returns how many dependents were cancelled or released.';

REVOKE EXECUTE ON FUNCTION jobq__dependencies_gone() FROM PUBLIC;
