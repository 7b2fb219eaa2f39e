-- jobq__complete_rows (private): the completion itself, shared by jobq_complete_many and
-- jobq_complete_and_claim: the checks of job_ids, worker_id, attempts and results (messages
-- that name the caller), then one statement that moves each job the worker still holds (of
-- that attempt, when given) from jobq_jobs to the history as succeeded, with its result, and
-- counts it. It returns the jobs completed, those of them a client awaits, and those with
-- dependents; releasing the dependents and ending the awaits are the caller's, which differ.
--
-- The WHERE clause finds the jobs by their primary key and tests no status: see the note on
-- jobq_jobs_claim_check in sql/migrations/. Whether a client awaits a job is read with the
-- completed rows, one probe of jobq_awaits_job_idx per completed job, an index that is empty
-- unless someone waits (jobq_await registers there, never on the jobs' rows). Not in the
-- INSERT's RETURNING: where Citus sends that INSERT to the node as a statement of its own (a
-- call inside a transaction block on the coordinator), it names jobq_awaits there, not its
-- shard, and the node refuses the nested distributed query.
--
-- Not SECURITY DEFINER, and no SET clause: it runs inside its callers, with their search_path
-- and their enable_seqscan = off, plan_cache_mode = force_generic_plan and jit = off (see
-- jobq_complete_many for why), and is granted to nobody.

CREATE OR REPLACE FUNCTION jobq__complete_rows(
    caller text,
    job_ids uuid[],
    worker_id text,
    attempts integer[],
    results jsonb[],
    OUT done uuid[],
    OUT awaited uuid[],
    OUT parents uuid[]
)
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_error text;
    v_limit integer;
    v_big record;
    v_nestloop text;
    v_id uuid;
    v_awaited boolean;
    v_has_dependents boolean;
    v_count integer := coalesce(pg_catalog.cardinality(jobq__complete_rows.job_ids), 0);
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__worker_id_error(jobq__complete_rows.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION '%: %', jobq__complete_rows.caller, v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq__complete_rows.attempts IS NOT NULL
       AND pg_catalog.cardinality(jobq__complete_rows.attempts) IS DISTINCT FROM v_count THEN
        RAISE EXCEPTION '%: attempts has % elements, job_ids has %', jobq__complete_rows.caller,
            pg_catalog.cardinality(jobq__complete_rows.attempts), v_count
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one attempt per job id, in the same order, or NULL.';
    END IF;
    IF jobq__complete_rows.results IS NOT NULL THEN
        IF pg_catalog.cardinality(jobq__complete_rows.results) IS DISTINCT FROM v_count THEN
            RAISE EXCEPTION '%: results has % elements, job_ids has %', jobq__complete_rows.caller,
                pg_catalog.cardinality(jobq__complete_rows.results), v_count
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
            FROM pg_catalog.unnest(jobq__complete_rows.results) WITH ORDINALITY AS e (result, ord)
        ) AS r
        WHERE r.size > v_limit
        ORDER BY r.ord
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION '%: results[%] is % bytes, the limit is % bytes',
                jobq__complete_rows.caller, v_big.ord, v_big.size, v_limit
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'Store large results elsewhere and return a reference; an admin '
                             'can change the limit with jobq_configure(max_payload_bytes => ...).';
        END IF;
    END IF;

    -- Each job leaves jobq_jobs for the history in one statement (as in jobq_complete).
    -- One job (a chain's step, an acknowledgement of one) is found by its key alone: no join
    -- of the elements to the rows, so no hash table to build and no planner setting to
    -- change and restore, which cost more than the job's move. Both statements are the same
    -- move otherwise (the same columns, the same history row, the same RETURNING): keep them
    -- in step.
    IF v_count = 1 THEN
        WITH moved AS (
            DELETE FROM jobq_jobs AS j
            -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
            -- test would let the planner scan jobq_jobs_locked_until_idx instead of the primary key.
            WHERE j.id = jobq__complete_rows.job_ids[1]
              AND j.locked_by = jobq__complete_rows.worker_id
              AND (jobq__complete_rows.attempts[1] IS NULL
                   OR j.attempts = jobq__complete_rows.attempts[1])
            RETURNING
                j.id, j.queue, j.job_type, j.payload, j.idempotency_key, j.priority, j.attempts,
                j.max_attempts, j.available_at, j.last_error, j.errors, j.created_at, j.scheduled,
                j.cancel_requested_at, j.cancel_reason, j.limit_group, j.limit_key, j.claimed_at,
                j.has_dependents, jobq__complete_rows.results[1] AS result
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
            RETURNING h.id, h.queue, h.job_type, h.claimed_at
        ),

        -- At most one row: no aggregate (the arrays are made below). Counted only while
        -- jobq_configure(metrics) is on: the call alone costs more than the test of the setting.
        counted AS MATERIALIZED (
            SELECT jobq__metrics_count(
                'succeeded'::text, ARRAY[c.queue], ARRAY[c.job_type], NULL::text[],
                ARRAY[extract(epoch FROM pg_catalog.now() - c.claimed_at)::double precision]
            ) AS n
            FROM done AS c
            WHERE (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
        )

        SELECT
            done.id,
            EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = done.id),
            -- whether it has dependents (read with its row: nothing more for the others)
            (SELECT m.has_dependents FROM moved AS m)
        INTO v_id, v_awaited, v_has_dependents
        FROM done
        LEFT JOIN counted ON TRUE;
        IF v_id IS NOT NULL THEN
            jobq__complete_rows.done := ARRAY[v_id];
            IF v_awaited THEN
                jobq__complete_rows.awaited := ARRAY[v_id];
            END IF;
            IF v_has_dependents THEN
                jobq__complete_rows.parents := ARRAY[v_id];
            END IF;
        END IF;
        RETURN;
    END IF;
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
            pg_catalog.unnest(jobq__complete_rows.job_ids),
            pg_catalog.unnest(jobq__complete_rows.attempts),
            pg_catalog.unnest(jobq__complete_rows.results)
        ) AS d (job_id, attempt, result)
        -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
        -- test would let the planner scan jobq_jobs_locked_until_idx instead of the primary key.
        WHERE j.id = ANY (jobq__complete_rows.job_ids)
          AND j.id = d.job_id
          AND j.locked_by = jobq__complete_rows.worker_id
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
        RETURNING h.id, h.queue, h.job_type, h.claimed_at
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'succeeded'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            NULL::text[],
            pg_catalog.array_agg(extract(epoch FROM pg_catalog.now() - c.claimed_at)::double precision)
        ) AS n
        FROM done AS c
        HAVING pg_catalog.count(*) > 0
           AND (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
    )

    SELECT
        pg_catalog.array_agg(done.id),
        pg_catalog.array_agg(done.id) FILTER (
            WHERE EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = done.id)
        ),
        -- jobs with dependents (read with their rows: nothing more for the others)
        (SELECT pg_catalog.array_agg(m.id) FROM moved AS m WHERE m.has_dependents)
    INTO jobq__complete_rows.done, jobq__complete_rows.awaited, jobq__complete_rows.parents
    FROM done
    LEFT JOIN counted ON TRUE;
    PERFORM pg_catalog.set_config('enable_nestloop', v_nestloop, TRUE);
END;
$$;

COMMENT ON FUNCTION jobq__complete_rows(text, uuid[], text, integer[], jsonb[]) IS
'Private. Checks job_ids, worker_id, attempts and results as jobq_complete_many does (errors
name caller), then marks succeeded, in one statement, each job the worker still holds (of that
attempt, when given), with its result, moving it to the history. Returns done (the ids
completed), awaited (those a client awaits) and parents (those with dependents); NULL for none.';

REVOKE EXECUTE ON FUNCTION jobq__complete_rows(text, uuid[], text, integer[], jsonb[]) FROM PUBLIC;
