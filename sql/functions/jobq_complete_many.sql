-- jobq_complete_many: jobq_complete for many jobs in one statement (the Worker's batched
-- acknowledgements), each optionally fenced by its own attempt and with its own result.
--
-- The WHERE clause finds the jobs by their primary key and tests no status: see the note on
-- jobq_jobs_claim_check in sql/migrations/.
--
-- Without results this is the same one statement as before results existed: the size limit
-- is read from jobq_settings only when there are results to check. Only awaited jobs are
-- notified: whether a client awaits a job comes back from the UPDATE itself (RETURNING), one
-- probe of jobq_awaits_job_idx per completed job, an index that is empty unless someone
-- waits (jobq_await registers there, never on the jobs' rows).
--
-- SET enable_seqscan = off (and jit = off, as everywhere sequential scans are off: a plan made
-- under it may be costed past jit_above_cost): finished jobs leave jobq_jobs, so statistics
-- gathered on a drained queue say the table is empty, and a generic plan made on them (kept for
-- the session) scanned the whole table for the worker's rows on every call once a backlog arrived,
-- beside a held snapshot hundreds of MB per acknowledgement (docs/decisions/0003-planner-settings-
-- of-hot-functions.md). Without sequential scans, and with the ids as an index condition (j.id =
-- ANY (job_ids)), the primary key is read for the given ids only, whatever the statistics say; the
-- statement's join is hashed (below).
--
-- SET plan_cache_mode = force_generic_plan: its statements take arrays, and on a backlog's
-- statistics a custom plan for the few ids of a call looks cheaper than the generic plan
-- (estimated for ten), so under the default every call would plan the completion again,
-- which costs more than running it for one job (a chain's step completes one job per
-- transaction). The generic plan reads the same way (the primary key for the ids, the
-- elements hashed) whatever the statistics, as the settings above make it.
--! levels: worker, admin
--! replaces: jobq_complete_many(uuid[], text, integer[])

CREATE OR REPLACE FUNCTION jobq_complete_many(
    job_ids uuid[],
    worker_id text,
    attempts integer[] DEFAULT NULL,
    results jsonb[] DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_done integer;
    v_awaited text[];
    v_ids uuid[];
    v_parents uuid[];
    v_error text;
    v_limit integer;
    v_big record;
    v_nestloop text;
    v_count integer := coalesce(pg_catalog.cardinality(jobq_complete_many.job_ids), 0);
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__worker_id_error(jobq_complete_many.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_complete_many: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_complete_many.attempts IS NOT NULL
       AND pg_catalog.cardinality(jobq_complete_many.attempts) IS DISTINCT FROM v_count THEN
        RAISE EXCEPTION 'jobq_complete_many: attempts has % elements, job_ids has %',
            pg_catalog.cardinality(jobq_complete_many.attempts), v_count
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one attempt per job id, in the same order, or NULL.';
    END IF;
    IF jobq_complete_many.results IS NOT NULL THEN
        IF pg_catalog.cardinality(jobq_complete_many.results) IS DISTINCT FROM v_count THEN
            RAISE EXCEPTION 'jobq_complete_many: results has % elements, job_ids has %',
                pg_catalog.cardinality(jobq_complete_many.results), v_count
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Pass one result (or NULL) per job id, in the same order, or NULL.';
        END IF;
        -- Sizes as jobq_complete (and jobq_enqueue) measure them: the text form.
        SELECT s.max_payload_bytes INTO v_limit FROM jobq_settings AS s;
        SELECT r.ord, r.size INTO v_big
        FROM (
            SELECT
                e.ord,
                pg_catalog.octet_length(e.result::text) AS size
            FROM pg_catalog.unnest(jobq_complete_many.results) WITH ORDINALITY AS e (result, ord)
        ) AS r
        WHERE r.size > v_limit
        ORDER BY r.ord
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'jobq_complete_many: results[%] is % bytes, the limit is % bytes',
                v_big.ord, v_big.size, v_limit
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'Store large results elsewhere and return a reference; an admin '
                             'can change the limit with jobq_configure(max_payload_bytes => ...).';
        END IF;
    END IF;

    -- Each job leaves jobq_jobs for the history in this one statement (as in jobq_complete).
    -- Planned without nested loops (this statement only: the setting is restored after it):
    -- on a drained queue's statistics the jobs' rows look like one, and a nested loop over
    -- them rescans the elements for each row, K x K comparisons (15 s for 5,000 jobs); hashed,
    -- the elements are joined to the rows the primary key returns in one pass (34 ms).
    v_nestloop := pg_catalog.current_setting('enable_nestloop');
    PERFORM pg_catalog.set_config('enable_nestloop', 'off', TRUE);
    WITH moved AS (
        DELETE FROM jobq_jobs AS j
        -- ROWS FROM (unnest, unnest, unnest) is what a three-array unnest() in FROM means; it
        -- is written out because that shorthand exists only for the unqualified name. It pads
        -- a shorter function with NULLs: a NULL attempts or results (no row) means NULL for
        -- every job, at no cost (their lengths were checked above).
        USING ROWS FROM (
            pg_catalog.unnest(jobq_complete_many.job_ids),
            pg_catalog.unnest(jobq_complete_many.attempts),
            pg_catalog.unnest(jobq_complete_many.results)
        ) AS d (job_id, attempt, result)
        -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
        -- test would let the planner scan jobq_jobs_locked_until_idx instead of the primary key.
        WHERE j.id = ANY (jobq_complete_many.job_ids)
          AND j.id = d.job_id
          AND j.locked_by = jobq_complete_many.worker_id
          AND (d.attempt IS NULL OR j.attempts = d.attempt)
        RETURNING
            j.id, j.queue, j.job_type, j.payload, j.idempotency_key, j.priority, j.attempts,
            j.max_attempts, j.available_at, j.last_error, j.errors, j.created_at, j.scheduled,
            j.cancel_requested_at, j.cancel_reason, j.limit_group, j.limit_key, j.claimed_at,
            j.has_dependents, d.result
    ),

    done AS (
        INSERT INTO jobq_jobs_history AS h (
            id, queue, job_type, payload, idempotency_key, status, priority, attempts,
            max_attempts, available_at, locked_at, locked_by, last_error, errors, created_at,
            updated_at, finished_at, scheduled, result, cancel_requested_at, cancel_reason,
            limit_group, limit_key, claimed_at
        )
        SELECT
            m.id, m.queue, m.job_type, m.payload, m.idempotency_key, 'succeeded', m.priority,
            m.attempts, m.max_attempts, m.available_at, NULL, NULL, m.last_error, m.errors,
            m.created_at, v_now, v_now, m.scheduled, m.result,
            m.cancel_requested_at, m.cancel_reason, m.limit_group, m.limit_key, m.claimed_at
        FROM moved AS m
        RETURNING
            h.id, h.queue, h.job_type, h.claimed_at,
            EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = h.id) AS awaited
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'succeeded'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            NULL::text[],
            pg_catalog.array_agg(extract(epoch FROM pg_catalog.now() - c.claimed_at)::double precision)
        ) AS n
        FROM done AS c
        HAVING pg_catalog.count(*) > 0
    )

    SELECT
        pg_catalog.count(*)::integer,
        pg_catalog.array_agg(done.id) FILTER (WHERE done.awaited),
        -- jobs with dependents (read with their rows: nothing more for the others)
        (SELECT pg_catalog.array_agg(m.id) FROM moved AS m WHERE m.has_dependents)
    INTO v_done, v_ids, v_parents
    FROM done
    LEFT JOIN counted ON TRUE;
    PERFORM pg_catalog.set_config('enable_nestloop', v_nestloop, TRUE);
    IF v_parents IS NOT NULL THEN
        PERFORM jobq__dependents_finished(
            v_parents,
            pg_catalog.array_fill('succeeded'::text, ARRAY[pg_catalog.cardinality(v_parents)])
        );
    END IF;
    IF v_ids IS NOT NULL THEN
        v_awaited := jobq__awaits_end(v_ids);
    END IF;
    IF v_awaited IS NOT NULL THEN
        PERFORM jobq__notify_events('done'::text, v_awaited);
    END IF;
    RETURN v_done;
END;
$$;

COMMENT ON FUNCTION jobq_complete_many(uuid[], text, integer[], jsonb[]) IS
'Marks succeeded, in one statement, each of the jobs that the worker still holds, each with
its result.
Arguments: job_ids (the jobs), worker_id (the worker that claimed them: non-blank, at most 200
characters), attempts (optional, an extension of the contract: one claim attempt per job id,
same order; a job counts only while its claim is of that attempt; NULL = any), results
(optional: one result per job id, same order, any JSON value or NULL for none, at most
max_payload_bytes each; a job not completed stores nothing).
Result: how many jobs were completed; the others (not held, another attempt) are left alone.
Errors: 22023 when attempts or results and job_ids differ in length, worker_id NULL, blank or
longer than 200 characters; 54000 when a result is larger than max_payload_bytes (the message
names its position; nothing changes).
A job''s dependents that this completion frees are released in the same transaction
(jobq__dependents_finished).
Concurrency: as jobq_complete, job by job. It waits for the rows it changes: do not send two
calls over the same jobs at once; send them in id order, as jobq_cancel locks them. A NOTIFY on
the installation''s done channel (an empty payload, one per transaction) when it completed a
job a client awaits.
Runs with enable_seqscan = off, plan_cache_mode = force_generic_plan and jit = off (for this
function only; the caller keeps its own settings): each job is found by its primary key
whatever the statistics say, with plans made once per session.';

REVOKE EXECUTE ON FUNCTION jobq_complete_many(uuid[], text, integer[], jsonb[]) FROM PUBLIC;
