-- jobq__audit (private): records one operator action in jobq_audit, in the caller's
-- transaction (a rolled-back action leaves no row). The roles are read here, once for every
-- action: login_role is the session's user, acting_role the role it had SET ROLE to (the
-- session's user when none); inside a SECURITY DEFINER caller neither is its owner. No SET
-- clause: it runs inside its callers, with their search_path.

CREATE OR REPLACE FUNCTION jobq__audit(
    action text,
    job_ids uuid[],
    changed uuid[],
    reason text,
    filters jsonb DEFAULT NULL
) RETURNS void
LANGUAGE sql
VOLATILE
AS $$
    INSERT INTO jobq_audit (login_role, acting_role, action, job_ids, changed, reason, filters)
    VALUES (
        SESSION_USER,
        CASE
            WHEN pg_catalog.current_setting('role') = 'none' THEN SESSION_USER
            ELSE pg_catalog.current_setting('role')
        END,
        jobq__audit.action, jobq__audit.job_ids, jobq__audit.changed, jobq__audit.reason,
        jobq__audit.filters
    )
$$;

COMMENT ON FUNCTION jobq__audit(text, uuid[], uuid[], text, jsonb) IS
'Private. Inserts one row of jobq_audit: the session''s user, the role it acts as, action,
the jobs asked for (job_ids), those changed, reason and filters (a bulk action''s, else
NULL). Used by jobq_act_on_jobs and jobq_requeue_dead_letters.';

REVOKE EXECUTE ON FUNCTION jobq__audit(text, uuid[], uuid[], text, jsonb) FROM PUBLIC;
