-- jobq_limits (monitor, admin): the limits that jobq_set_limit set, one row per limited group,
-- for the CLI and the dashboard's limits page: names and numbers, no job data.
--! levels: monitor, admin
--! replaces: jobq_limits()

CREATE OR REPLACE FUNCTION jobq_limits() RETURNS TABLE (
    limit_group text,
    max_running integer,
    max_starts integer,
    per interval,
    share text
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT l.limit_group, l.max_running, l.max_starts, l.per, l.share
    FROM jobq_limits AS l
    ORDER BY l.limit_group
$$;

COMMENT ON FUNCTION jobq_limits() IS
'Monitor and admin. The limits set with jobq_set_limit, one row per limited group, by group. A group
without a row is unlimited.
Arguments: none.
Result: limit_group, max_running (NULL: no concurrency limit), max_starts and per (NULL: no
rate limit), share (fifo, round_robin or weighted).
Errors: none.';

REVOKE EXECUTE ON FUNCTION jobq_limits() FROM PUBLIC;
