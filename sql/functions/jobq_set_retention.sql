-- jobq_set_retention: how long the jobs of one finished status are kept in jobq_jobs_history,
-- and how many days one of its partitions spans (the granularity of that retention). The
-- partitions are dropped by jobq_maintain_history (every jobq_tick), not here: this only
-- records the setting, so it never waits for a lock of the hot path. On a Citus distributed
-- schema, where each status's history is one table, keep applies row by row and
-- partition_days is recorded but unused (docs/scaling.md).
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_set_retention(
    status text,
    keep interval DEFAULT NULL,
    partition_days integer DEFAULT NULL
) RETURNS SETOF jobq_retention
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF jobq_set_retention.status IS NULL
        OR jobq_set_retention.status <> ALL (jobq__statuses(finished => TRUE))
    THEN
        RAISE EXCEPTION 'jobq_set_retention: status must be a finished status, got %',
            coalesce(pg_catalog.quote_literal(jobq_set_retention.status), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Finished statuses: '
                      || pg_catalog.array_to_string(jobq__statuses(finished => TRUE), ', ')
                      || '.';
    END IF;
    IF jobq_set_retention.keep <= interval '0' THEN
        RAISE EXCEPTION 'jobq_set_retention: keep must be a positive interval or NULL, got %',
            jobq_set_retention.keep
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_set_retention.partition_days NOT BETWEEN 1 AND 31 THEN
        RAISE EXCEPTION 'jobq_set_retention: partition_days must be 1 to 31, got %',
            jobq_set_retention.partition_days
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE jobq_retention AS r
    SET
        keep = jobq_set_retention.keep,
        partition_days = coalesce(jobq_set_retention.partition_days, r.partition_days)
    WHERE r.status = jobq_set_retention.status;
    RETURN QUERY
    SELECT r.* FROM jobq_retention AS r ORDER BY r.status;
END;
$$;

COMMENT ON FUNCTION jobq_set_retention(text, interval, integer) IS
'Admin only. Sets how long finished jobs of one status are kept: jobq_maintain_history (run
by every jobq_tick) then drops each partition of that status whose jobs all finished more than
keep ago, so a job stays between keep and keep + partition_days.
Arguments: status (succeeded, failed, dead_letter or cancelled), keep (a positive interval;
NULL: kept until jobq_prune deletes them or they are requeued), partition_days (1-31: the days
a new partition of this status spans; NULL leaves it; existing partitions keep their bounds).
Result: the rows of jobq_retention (status, keep, partition_days), after the change.
Errors: 22023 for a status that is not a finished one, a keep that is not positive, a
partition_days outside 1-31; nothing changes then.
On a Citus distributed schema (each status''s history one table) jobq_maintain_history deletes
the jobs older than keep in batches instead, and partition_days is recorded but unused.
Concurrency: a row update of jobq_retention; takes no lock on jobs.';

REVOKE EXECUTE ON FUNCTION jobq_set_retention(text, interval, integer) FROM PUBLIC;
