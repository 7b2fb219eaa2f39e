-- jobq_prune: deletes finished jobs older than a given age. Only finished statuses
-- (jobq__statuses(finished => true)) may be named: deleting a pending or processing job would
-- lose work, so those are refused rather than ignored. The age is capped at 1000 years so that
-- now() - older_than cannot overflow.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_prune(
    older_than interval DEFAULT '7 days',
    statuses text[] DEFAULT '{succeeded}'
) RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_bad text;
    v_hint text;
    v_deleted bigint;
BEGIN
    IF older_than IS NULL OR older_than < interval '0' THEN
        RAISE EXCEPTION 'jobq_prune: older_than must be an interval >= 0, got %',
            coalesce(older_than::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_hint := 'Finished statuses: '
        || pg_catalog.array_to_string(jobq__statuses(finished => TRUE), ', ') || '.';
    IF statuses IS NULL OR pg_catalog.cardinality(statuses) = 0 THEN
        RAISE EXCEPTION 'jobq_prune: statuses must name at least one finished status'
            USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
    END IF;
    SELECT s INTO v_bad FROM pg_catalog.unnest(statuses) AS s
    WHERE s IS NULL OR s <> ALL (jobq__statuses(finished => TRUE))
    LIMIT 1;
    IF FOUND THEN
        IF v_bad = ANY (jobq__statuses(finished => FALSE)) THEN
            RAISE EXCEPTION 'jobq_prune: statuses may not include %: only finished jobs are pruned',
                pg_catalog.quote_literal(v_bad)
                USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
        END IF;
        RAISE EXCEPTION 'jobq_prune: statuses contains %, which is not a status',
            coalesce(pg_catalog.quote_literal(v_bad), 'NULL')
            USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
    END IF;

    DELETE FROM jobq_jobs AS j
    WHERE j.status = ANY (jobq_prune.statuses)
      AND j.finished_at < pg_catalog.now() - least(jobq_prune.older_than, interval '1000 years');
    GET DIAGNOSTICS v_deleted = ROW_COUNT;
    RETURN v_deleted;
END;
$$;

COMMENT ON FUNCTION jobq_prune(interval, text[]) IS
'Deletes finished jobs that finished long enough ago.
Arguments: older_than (>= 0: jobs whose finished_at is older than this), statuses (finished
statuses only: succeeded, failed, dead_letter, cancelled; default succeeded).
Result: how many jobs were deleted.
Errors: 22023 for pending or processing in statuses (refused), an unknown status, an empty
list, a NULL or negative older_than.';

REVOKE EXECUTE ON FUNCTION jobq_prune(interval, text[]) FROM PUBLIC;
