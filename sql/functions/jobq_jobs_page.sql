-- jobq_jobs_page: one page of the jobs of one status, for dashboards (`jobq web`), with keyset
-- paging: the next page starts after the last row of this one (its sort_at and id), so a page
-- deep in ten million rows costs what the first one costs. Each status is read through the
-- partial index that holds it, in that index's order, never by a scan of jobq_jobs:
--   waiting     oldest first (created_at, id): jobq_jobs_waiting_idx;
--   pending     oldest available first (available_at, id): jobq_jobs_claim_idx,
--               jobq_jobs_limited_idx and jobq_jobs_scheduled_idx hold the pending jobs;
--   processing  soonest lock expiry first (locked_until, id):
--               jobq_jobs_locked_until_idx, the one index of processing jobs, which
--               jobq_dequeue's takeover step reads; with one lock_timeout for every worker
--               this is the order of the last claim or heartbeat (locked_at), oldest first;
--   succeeded, failed, dead_letter, cancelled  newest first (finished_at DESC, id DESC): the
--               partitions of that status in jobq_jobs_history, through
--               jobq_jobs_history_finished_idx.
-- The queue and job_type filters are applied to the rows the index yields. Pending and
-- processing jobs are the backlog; finished jobs are kept by the million, and a filter that
-- matches few of them would read the whole index to fill a page, so a page of finished jobs
-- examines at most scan_limit of them: stopped short, it ends with a marker row (matches =
-- false, the last job examined) whose sort_at and id are where the next call searches on.
-- (An index by queue and job type would avoid this, at the price of one more entry written by
-- every completion, the most frequent write of a queue.)
-- No payload, result or error history; last_error only for a caller that may read whole jobs
-- (EXECUTE on jobq_get_job: the admin level), NULL for the monitor level, which sees counts,
-- statuses, timings and job metadata, never a payload, a result or an error text.
--
-- Who the caller is: inside a SECURITY DEFINER function current_user is jobq's owner, so the
-- function asks for the role the session acts as: the role set by SET ROLE (the setting
-- `role`, which a SECURITY DEFINER call leaves as it is, and which only a member of a role can
-- set), else session_user (the login role; SET ROLE does not change it, so it alone would let
-- an admin login that did SET ROLE to a monitor see errors). A SECURITY DEFINER function of
-- another role that calls this one in an admin's session is answered as that admin: an admin
-- who runs another role's code trusts it.
--! levels: monitor, admin

CREATE OR REPLACE FUNCTION jobq_jobs_page(
    status text,
    queue text DEFAULT NULL,
    job_type text DEFAULT NULL,
    after_at timestamptz DEFAULT NULL,
    after_id uuid DEFAULT NULL,
    max_rows integer DEFAULT 50,
    scan_limit integer DEFAULT 10000
) RETURNS SETOF jobq_job_summary
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    -- The cursor, or for the first page one before every row (infinity sorts after every
    -- time, and the ids at the same time are then all taken), so that each query has one form
    -- whose cursor is an index condition, in a custom plan or a generic one.
    v_at timestamptz;
    v_id uuid;
    v_jobs refcursor;
    v_job jobq_job_summary;
    v_examined integer := 0;
    v_found integer := 0;
    -- Whether the session's role may read error texts (see above).
    v_errors CONSTANT boolean := pg_catalog.has_function_privilege(
        CASE
            WHEN pg_catalog.current_setting('role') = 'none' THEN SESSION_USER
            ELSE pg_catalog.current_setting('role')::name
        END,
        'jobq_get_job(uuid)'::pg_catalog.regprocedure::pg_catalog.oid,
        'EXECUTE'
    );
BEGIN
    IF status IS NULL OR status <> ALL (jobq__statuses(NULL::boolean)) THEN
        RAISE EXCEPTION 'jobq_jobs_page: status must be one of %, got %',
            pg_catalog.array_to_string(jobq__statuses(NULL::boolean), ', '),
            coalesce(pg_catalog.quote_literal(status), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_jobs_page.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_jobs_page: queue is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_jobs_page.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_jobs_page.job_type) > 200 THEN
        RAISE EXCEPTION 'jobq_jobs_page: job_type is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_jobs_page.job_type)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_rows IS NULL OR max_rows < 1 OR max_rows > 1000 THEN
        RAISE EXCEPTION 'jobq_jobs_page: max_rows must be between 1 and 1000, got %',
            coalesce(max_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF scan_limit IS NULL OR scan_limit < 1 OR scan_limit > 1000000 THEN
        RAISE EXCEPTION 'jobq_jobs_page: scan_limit must be between 1 and 1000000, got %',
            coalesce(scan_limit::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (after_at IS NULL) <> (after_id IS NULL) THEN
        RAISE EXCEPTION 'jobq_jobs_page: after_at and after_id go together (the sort_at and id '
            'of the last row of the previous page), got after_at %, after_id %',
            coalesce(after_at::text, 'NULL'), coalesce(after_id::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF status IN ('waiting', 'pending', 'processing') THEN
        v_at := coalesce(after_at, '-infinity');
        v_id := coalesce(after_id, '00000000-0000-0000-0000-000000000000');
    ELSE
        v_at := coalesce(after_at, 'infinity');
        v_id := coalesce(after_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
    END IF;

    IF status = 'pending' THEN
        -- One branch per partial index of pending jobs (jobq_jobs_claim_idx, jobq_jobs_limited_idx,
        -- jobq_jobs_scheduled_idx): a predicate of status alone implies none of them.
        RETURN QUERY
        SELECT p.* FROM (
            SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
                   j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
                   j.finished_at, CASE WHEN v_errors THEN j.last_error END,
                   j.cancel_requested_at IS NOT NULL,
                   j.available_at AS sort_at, true
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
              AND (j.available_at, j.id) > (v_at, v_id)
              AND (jobq_jobs_page.queue IS NULL OR j.queue = jobq_jobs_page.queue)
              AND (jobq_jobs_page.job_type IS NULL OR j.job_type = jobq_jobs_page.job_type)
            UNION ALL
            SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
                   j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
                   j.finished_at, CASE WHEN v_errors THEN j.last_error END,
                   j.cancel_requested_at IS NOT NULL,
                   j.available_at, true
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
              AND (j.available_at, j.id) > (v_at, v_id)
              AND (jobq_jobs_page.queue IS NULL OR j.queue = jobq_jobs_page.queue)
              AND (jobq_jobs_page.job_type IS NULL OR j.job_type = jobq_jobs_page.job_type)
            UNION ALL
            SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
                   j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
                   j.finished_at, CASE WHEN v_errors THEN j.last_error END,
                   j.cancel_requested_at IS NOT NULL,
                   j.available_at, true
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND j.scheduled
              AND (j.available_at, j.id) > (v_at, v_id)
              AND (jobq_jobs_page.queue IS NULL OR j.queue = jobq_jobs_page.queue)
              AND (jobq_jobs_page.job_type IS NULL OR j.job_type = jobq_jobs_page.job_type)
        ) AS p
        ORDER BY p.sort_at, p.id
        LIMIT max_rows;
    ELSIF status = 'waiting' THEN
        RETURN QUERY
        SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
               j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
               j.finished_at, CASE WHEN v_errors THEN j.last_error END,
               j.cancel_requested_at IS NOT NULL, j.created_at,
               true
        FROM jobq_jobs AS j
        WHERE j.status = 'waiting'
          AND (j.created_at, j.id) > (v_at, v_id)
          AND (jobq_jobs_page.queue IS NULL OR j.queue = jobq_jobs_page.queue)
          AND (jobq_jobs_page.job_type IS NULL OR j.job_type = jobq_jobs_page.job_type)
        ORDER BY j.created_at, j.id
        LIMIT max_rows;
    ELSIF status = 'processing' THEN
        RETURN QUERY
        SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
               j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
               j.finished_at, CASE WHEN v_errors THEN j.last_error END,
               j.cancel_requested_at IS NOT NULL, j.locked_until,
               true
        FROM jobq_jobs AS j
        WHERE j.status = 'processing'
          AND (j.locked_until, j.id) > (v_at, v_id)
          AND (jobq_jobs_page.queue IS NULL OR j.queue = jobq_jobs_page.queue)
          AND (jobq_jobs_page.job_type IS NULL OR j.job_type = jobq_jobs_page.job_type)
        ORDER BY j.locked_until, j.id
        LIMIT max_rows;
    ELSE
        -- Finished: newest first, from the partitions of the status in jobq_jobs_history
        -- (jobq_jobs_history_finished_idx of each), examined one by one. The LIMIT says
        -- what the loop reads at most: without it, the plan is costed for every finished job,
        -- and a cost in the millions has PostgreSQL JIT-compile it (half a second, per call,
        -- until the plan is cached) to return 51 rows.
        IF status = 'succeeded' THEN
            OPEN v_jobs FOR
            SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
                   j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
                   j.finished_at, CASE WHEN v_errors THEN j.last_error END,
                   j.cancel_requested_at IS NOT NULL, j.finished_at,
                   true
            FROM jobq_jobs_history AS j
            WHERE j.status = 'succeeded'
              AND (j.finished_at, j.id) < (v_at, v_id)
            ORDER BY j.finished_at DESC, j.id DESC
            LIMIT scan_limit;
        ELSE
            OPEN v_jobs FOR
            SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
                   j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
                   j.finished_at, CASE WHEN v_errors THEN j.last_error END,
                   j.cancel_requested_at IS NOT NULL, j.finished_at,
                   true
            FROM jobq_jobs_history AS j
            WHERE j.status IN ('failed', 'dead_letter', 'cancelled')
              AND j.status = jobq_jobs_page.status
              AND (j.finished_at, j.id) < (v_at, v_id)
            ORDER BY j.finished_at DESC, j.id DESC
            LIMIT scan_limit;
        END IF;
        LOOP
            FETCH v_jobs INTO v_job;
            EXIT WHEN NOT FOUND;
            v_examined := v_examined + 1;
            IF (jobq_jobs_page.queue IS NULL OR v_job.queue = jobq_jobs_page.queue)
               AND (jobq_jobs_page.job_type IS NULL OR v_job.job_type = jobq_jobs_page.job_type)
            THEN
                RETURN NEXT v_job;
                v_found := v_found + 1;
                EXIT WHEN v_found >= max_rows;
            END IF;
            IF v_examined >= scan_limit THEN
                v_job.matches := false;
                RETURN NEXT v_job;
                EXIT;
            END IF;
        END LOOP;
        CLOSE v_jobs;
    END IF;
END;
$$;

COMMENT ON FUNCTION jobq_jobs_page(text, text, text, timestamptz, uuid, integer, integer) IS
'Admin and monitor. One page of the jobs of one status, without payloads, results or error
texts for a monitor (last_error is NULL unless the session''s role, the role set by SET ROLE or
else the login role, may call jobq_get_job), with keyset paging:
pass the sort_at and id of the last row of a page as after_at and after_id to get the next one.
Pending jobs are listed oldest available first (sort_at = available_at), processing jobs
soonest lock expiry first (sort_at = locked_until: with one
lock_timeout for every worker, oldest claim or heartbeat first), finished ones newest first
(finished_at). Each status is read through
the partial index that holds it, so a page costs the same at any depth and whatever the number
of jobs in other statuses; a queue or job_type filter is applied to the rows of that index.
A page of finished jobs examines at most scan_limit jobs: when it stops there short of max_rows
matches, its last row has matches = false and is only the last job examined, whose sort_at and
id are the cursor to search on (pending and processing jobs, the backlog, are searched whole).
Arguments: status (one status), queue (NULL = any; at most 200 characters), job_type (NULL =
any; at most 200 characters), after_at and
after_id (both NULL for the first page, both given for the next ones), max_rows (1 to 1000,
default 50), scan_limit (how many finished jobs a page examines at most, 1 to 1000000,
default 10000).
Result: rows of jobq_job_summary (the columns of jobq_jobs without payload, result and
errors, last_error NULL for a role that may not call jobq_get_job, cancel_requested, sort_at,
and matches: true on every job listed, false on the marker
of a search stopped by scan_limit).
Errors: 22023 an unknown or NULL status, a queue or job_type longer than 200 characters,
max_rows outside 1..1000, scan_limit outside 1..1000000, only one of after_at and after_id.
Concurrency: a snapshot, as any query; it takes no lock. A job that changes status between two
pages leaves one listing and may appear in another.';

REVOKE EXECUTE ON FUNCTION jobq_jobs_page(text, text, text, timestamptz, uuid, integer, integer)
FROM PUBLIC;
