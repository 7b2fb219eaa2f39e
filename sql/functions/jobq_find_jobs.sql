-- jobq_find_jobs: an operator looks for jobs, live and finished alike, by what they know of
-- them: an id, an idempotency key, a job type, a queue, statuses, when they were created or
-- finished, and (admin) what their payload contains. Three ways in, each through an index:
--   job_id           the primary key of jobq_jobs and jobq_jobs_history_id_idx;
--   idempotency_key  jobq_jobs_idempotency_key_key and jobq_jobs_history_idempotency_key_idx,
--                    both by (job_type, idempotency_key): without a job_type, the job types
--                    that have keys are read first from the same indexes, one probe per type
--                    (a loose index scan), then each (type, key) is looked up;
--   anything else    both id indexes backwards from the cursor (jobq's ids begin with their
--                    creation time, so newest first), every filter applied to the rows they
--                    yield; like jobq_jobs_page, a search examines at most scan_limit jobs and,
--                    stopped there, ends with a marker row (matches = false) whose id is where
--                    the next call searches on. No index by queue, job type, time or payload:
--                    each would cost every enqueue or completion one more entry.
-- Who may read what is jobq_jobs_page's rule: last_error and the payload search only for a
-- session whose role may call jobq_get_job (admin); a monitor's payload search is refused.
--! levels: monitor, admin

CREATE OR REPLACE FUNCTION jobq_find_jobs(
    job_id uuid DEFAULT NULL,
    idempotency_key text DEFAULT NULL,
    job_type text DEFAULT NULL,
    queue text DEFAULT NULL,
    statuses text[] DEFAULT NULL,
    created_after timestamptz DEFAULT NULL,
    created_before timestamptz DEFAULT NULL,
    finished_after timestamptz DEFAULT NULL,
    finished_before timestamptz DEFAULT NULL,
    payload_contains jsonb DEFAULT NULL,
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
    v_full CONSTANT boolean := pg_catalog.has_function_privilege(
        CASE
            WHEN pg_catalog.current_setting('role') = 'none' THEN SESSION_USER
            ELSE pg_catalog.current_setting('role')::name
        END,
        'jobq_get_job(uuid)'::pg_catalog.regprocedure::pg_catalog.oid,
        'EXECUTE'
    );
    v_live CONSTANT boolean := statuses IS NULL
        OR statuses OPERATOR(pg_catalog.&&) jobq__statuses(finished => FALSE);
    v_finished CONSTANT boolean := statuses IS NULL
        OR statuses OPERATOR(pg_catalog.&&) jobq__statuses(finished => TRUE);
    v_after uuid := coalesce(after_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
    v_bad text;
    v_lookup uuid[];
    v_type text;
    v_jobs refcursor;
    v_job jobq_jobs;
    v_read integer;
    v_done boolean := false;
    v_row jobq_job_summary;
    v_examined integer := 0;
    v_found integer := 0;
BEGIN
    IF pg_catalog.length(jobq_find_jobs.idempotency_key) > 1000 THEN
        RAISE EXCEPTION 'jobq_find_jobs: idempotency_key is % characters long, at most 1000 are allowed',
            pg_catalog.length(jobq_find_jobs.idempotency_key)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_find_jobs.job_type) > 200 THEN
        RAISE EXCEPTION 'jobq_find_jobs: job_type is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_find_jobs.job_type)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_find_jobs.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_find_jobs: queue is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_find_jobs.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT s INTO v_bad FROM pg_catalog.unnest(jobq_find_jobs.statuses) AS s
    WHERE s IS NULL OR s <> ALL (jobq__statuses(NULL::boolean))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'jobq_find_jobs: statuses contains %, which is not a status',
            coalesce(pg_catalog.quote_literal(v_bad), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Statuses: ' || pg_catalog.array_to_string(jobq__statuses(NULL::boolean), ', ') || '.';
    END IF;
    IF created_after >= created_before THEN
        RAISE EXCEPTION 'jobq_find_jobs: created_after (%) must be before created_before (%)',
            created_after, created_before
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF finished_after >= finished_before THEN
        RAISE EXCEPTION 'jobq_find_jobs: finished_after (%) must be before finished_before (%)',
            finished_after, finished_before
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF payload_contains IS NOT NULL AND NOT v_full THEN
        RAISE EXCEPTION 'jobq_find_jobs: payload_contains is for roles that may read payloads '
            '(EXECUTE on jobq_get_job)'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF max_rows IS NULL OR max_rows < 1 OR max_rows > 1000 THEN
        RAISE EXCEPTION 'jobq_find_jobs: max_rows must be between 1 and 1000, got %',
            coalesce(max_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF scan_limit IS NULL OR scan_limit < 1 OR scan_limit > 1000000 THEN
        RAISE EXCEPTION 'jobq_find_jobs: scan_limit must be between 1 and 1000000, got %',
            coalesce(scan_limit::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF job_id IS NOT NULL THEN
        v_lookup := ARRAY[job_id];
    ELSIF idempotency_key IS NOT NULL THEN
        -- Each (job_type, key) once in each index: the job types with keys come from the same
        -- indexes, one probe per type (a loose index scan), unless job_type is given.
        v_lookup := '{}';
        FOR v_type IN
            WITH RECURSIVE live_types (t) AS (
                (SELECT j.job_type FROM jobq_jobs AS j
                 WHERE j.idempotency_key IS NOT NULL AND jobq_find_jobs.job_type IS NULL
                 ORDER BY j.job_type LIMIT 1)
                UNION ALL
                SELECT (SELECT j.job_type FROM jobq_jobs AS j
                        WHERE j.idempotency_key IS NOT NULL AND j.job_type > lt.t
                        ORDER BY j.job_type LIMIT 1)
                FROM live_types AS lt WHERE lt.t IS NOT NULL
            ),

            finished_types (t) AS (
                (SELECT h.job_type FROM jobq_jobs_history AS h
                 WHERE h.idempotency_key IS NOT NULL AND jobq_find_jobs.job_type IS NULL
                 ORDER BY h.job_type LIMIT 1)
                UNION ALL
                SELECT (SELECT h.job_type FROM jobq_jobs_history AS h
                        WHERE h.idempotency_key IS NOT NULL AND h.job_type > ft.t
                        ORDER BY h.job_type LIMIT 1)
                FROM finished_types AS ft WHERE ft.t IS NOT NULL
            )

            SELECT jobq_find_jobs.job_type WHERE jobq_find_jobs.job_type IS NOT NULL
            UNION
            SELECT lt.t FROM live_types AS lt WHERE lt.t IS NOT NULL
            UNION
            SELECT ft.t FROM finished_types AS ft WHERE ft.t IS NOT NULL
        LOOP
            v_lookup := v_lookup || ARRAY(
                SELECT j.id FROM jobq_jobs AS j
                WHERE j.job_type = v_type AND j.idempotency_key = jobq_find_jobs.idempotency_key
                UNION ALL
                SELECT h.id FROM jobq_jobs_history AS h
                WHERE h.job_type = v_type AND h.idempotency_key = jobq_find_jobs.idempotency_key
            );
        END LOOP;
    END IF;

    -- A look-up reads its few rows at once; a search reads the jobs newest first, 500 at a
    -- time from the last one read, the newest 500 of each table merged: each table's LIMIT
    -- (a small constant) has it read in the order of its id index, where the union of both
    -- under one LIMIT, or a LIMIT of scan_limit, is planned as a sort of every job.
    <<chunks>>
    LOOP
        IF v_lookup IS NOT NULL THEN
            OPEN v_jobs FOR
            SELECT a.* FROM (
                SELECT j.* FROM jobq_jobs AS j WHERE j.id = ANY (v_lookup)
                UNION ALL
                SELECT h.* FROM jobq_jobs_history AS h WHERE h.id = ANY (v_lookup)
            ) AS a
            WHERE a.id < v_after
            ORDER BY a.id DESC;
        ELSE
            OPEN v_jobs FOR
            SELECT a.* FROM (
                (SELECT j.* FROM jobq_jobs AS j WHERE v_live AND j.id < v_after
                 ORDER BY j.id DESC LIMIT 500)
                UNION ALL
                (SELECT h.* FROM jobq_jobs_history AS h WHERE v_finished AND h.id < v_after
                 ORDER BY h.id DESC LIMIT 500)
            ) AS a
            ORDER BY a.id DESC
            LIMIT 500;
        END IF;
        v_read := 0;
        LOOP
            FETCH v_jobs INTO v_job;
            EXIT WHEN NOT FOUND;
            v_read := v_read + 1;
            v_examined := v_examined + 1;
            v_after := v_job.id;
            v_row := ROW(
                v_job.id, v_job.queue, v_job.job_type, v_job.status, v_job.priority,
                v_job.attempts, v_job.max_attempts, v_job.available_at, v_job.created_at,
                v_job.updated_at, v_job.locked_at, v_job.locked_by, v_job.finished_at,
                CASE WHEN v_full THEN v_job.last_error END,
                v_job.cancel_requested_at IS NOT NULL, v_job.created_at, true
            );
            IF (jobq_find_jobs.job_id IS NULL OR v_job.id = jobq_find_jobs.job_id)
               AND (jobq_find_jobs.idempotency_key IS NULL
                    OR v_job.idempotency_key = jobq_find_jobs.idempotency_key)
               AND (jobq_find_jobs.job_type IS NULL OR v_job.job_type = jobq_find_jobs.job_type)
               AND (jobq_find_jobs.queue IS NULL OR v_job.queue = jobq_find_jobs.queue)
               AND (jobq_find_jobs.statuses IS NULL
                    OR v_job.status = ANY (jobq_find_jobs.statuses))
               AND (created_after IS NULL OR v_job.created_at >= created_after)
               AND (created_before IS NULL OR v_job.created_at < created_before)
               AND (finished_after IS NULL OR v_job.finished_at >= finished_after)
               AND (finished_before IS NULL OR v_job.finished_at < finished_before)
               AND (payload_contains IS NULL
                    OR v_job.payload OPERATOR(pg_catalog.@>) payload_contains)
            THEN
                RETURN NEXT v_row;
                v_found := v_found + 1;
                v_done := v_found >= max_rows;
            END IF;
            IF NOT v_done AND v_examined >= scan_limit THEN
                v_row.matches := false;
                RETURN NEXT v_row;
                v_done := true;
            END IF;
            EXIT WHEN v_done;
        END LOOP;
        CLOSE v_jobs;
        EXIT chunks WHEN v_done OR v_lookup IS NOT NULL OR v_read < 500;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION jobq_find_jobs(
    uuid, text, text, text, text[], timestamptz, timestamptz, timestamptz, timestamptz, jsonb,
    uuid, integer, integer
) IS
'Admin and monitor. Finds jobs, live and finished, that match every filter given (NULL: any),
newest first (by id: jobq''s ids begin with their creation time), with keyset paging: pass the
id of the last row as after_id for the next page. job_id and idempotency_key are looked up
through their indexes (an idempotency_key without a job_type in every job type that has keys);
otherwise the jobs are examined newest first, at most scan_limit of them: stopped there short
of max_rows matches, the last row has matches = false and is only the last job examined, whose
id is the cursor to search on.
Arguments: job_id, idempotency_key (at most 1000 characters), job_type and queue (at most 200
characters each), statuses (any of them), created_after and created_before (created_at in
[after, before)), finished_after and finished_before (finished_at in [after, before): finished
jobs only), payload_contains (payload @> this; only for a role that may call jobq_get_job),
after_id (the cursor), max_rows (1 to 1000, default 50), scan_limit (1 to 1000000, default
10000).
Result: rows of jobq_job_summary (sort_at = created_at; last_error NULL for a role that may not
call jobq_get_job).
Errors: 22023 a text too long, an unknown or NULL status, an empty time range, max_rows or
scan_limit out of range; 42501 payload_contains from a role that may not read payloads.
Concurrency: a snapshot; it takes no lock. A job that finishes between two pages may be listed
twice or not at all.';

REVOKE EXECUTE ON FUNCTION jobq_find_jobs(
    uuid, text, text, text, text[], timestamptz, timestamptz, timestamptz, timestamptz, jsonb,
    uuid, integer, integer
) FROM PUBLIC;
