-- jobq_audit_log: what operators did to jobs (jobq_audit), newest first, a page at a time by
-- the primary key. Admin only: the reasons may say more than a monitor should read.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_audit_log(
    before_id bigint DEFAULT NULL,
    max_rows integer DEFAULT 100
) RETURNS SETOF jobq_audit
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF max_rows IS NULL OR max_rows < 1 OR max_rows > 1000 THEN
        RAISE EXCEPTION 'jobq_audit_log: max_rows must be between 1 and 1000, got %',
            coalesce(max_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT a.*
    FROM jobq_audit AS a
    WHERE a.id < coalesce(before_id, 9223372036854775807)
    ORDER BY a.id DESC
    LIMIT max_rows;
END;
$$;

COMMENT ON FUNCTION jobq_audit_log(bigint, integer) IS
'Admin only. The actions recorded by jobq_act_on_jobs and jobq_requeue_dead_letters, newest
first.
Arguments: before_id (the id of the last row of the previous page; NULL: from the newest),
max_rows (1 to 1000, default 100).
Result: rows of jobq_audit (id, acted_at, login_role, acting_role, action, job_ids, changed,
reason, filters).
Errors: 22023 max_rows out of range.
Concurrency: a snapshot; it takes no lock.';

REVOKE EXECUTE ON FUNCTION jobq_audit_log(bigint, integer) FROM PUBLIC;
