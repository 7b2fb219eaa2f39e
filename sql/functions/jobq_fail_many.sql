-- jobq_fail_many: jobq_fail for many jobs in one statement (the Worker's batched failure
-- reports), each element with its own error, retry, backoff and attempt, and one result row
-- per element in input order.
--
-- Same fencing and the same outcome per element as jobq_fail: the job must be held by
-- worker_id (by the claim of that attempt, when given); the new status is cancelled (a cancel
-- was requested), pending (after attempts × backoff), dead_letter or failed exactly as
-- jobq_fail decides; the error goes to last_error and errors; an ended job that a client
-- awaits is announced on the done channel. One UPDATE for all, found by the primary key (no
-- status test: see the note on jobq_jobs_claim_check in sql/migrations/),
-- instead of one call of jobq_fail per job: one plan, one pass.
--
-- SET enable_seqscan = off: the fence `locked_by = worker_id` is selective only when the
-- statistics know how many jobs are processing. Gathered on a quiet queue (few or none), they
-- make the planner scan the whole table for the worker's rows and join them to the elements,
-- several times slower than one primary-key probe per element
-- (docs/decisions/0003-planner-settings-of-hot-functions.md). Without sequential scans, the
-- primary key is the only way left. The setting applies while this function runs (a function SET
-- clause), not to the caller.
--
-- SET jit = off, beside it: plans made while this function runs (its own, and those of the
-- helpers it calls, which PL/pgSQL keeps for the session whoever called them first) are
-- costed without sequential scans, where a scan that has no other way, even of a one-row
-- table, passes jit_above_cost. Made with jit off, such a plan is never compiled, here or in
-- a later caller of the helper: jobq__metrics_count's read of its setting, made so, was
-- compiled in every later enqueue and completion of the session.
--
-- A job id given twice counts once, with its first element, as if jobq_fail had been called
-- for each in turn (the second finds the claim gone): without that, which element an UPDATE
-- joined to both would apply is not defined.
--
-- Bounds as in jobq_fail: worker_id is checked by jobq__worker_id_error, each error is stored
-- cut to its first 10,000 characters and errors keeps the 50 most recent entries
-- (jobq__append_error).
--
-- granted-as: an upgrade that adds this function gives it to every role that may call
-- jobq_fail, so that a worker role granted before keeps working with the new client.
--! levels: worker, admin
--! granted-as: jobq_fail
--
-- Built-ins are called pg_catalog-qualified, so that no function another role creates in this
-- schema can take their place (multi-array unnest(a, b) exists only unqualified: ROWS FROM).

CREATE OR REPLACE FUNCTION jobq_fail_many(
    job_ids uuid[],
    worker_id text,
    errors text[],
    retries boolean[] DEFAULT NULL,
    backoffs interval[] DEFAULT NULL,
    attempts integer[] DEFAULT NULL
) RETURNS TABLE (ord integer, job_id uuid, status text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_count integer := coalesce(pg_catalog.cardinality(jobq_fail_many.job_ids), 0);
    v_bad bigint;
    v_ords bigint[];
    v_statuses text[];
    v_wake text[];
    v_ended text[];
    v_error text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_at CONSTANT jsonb := pg_catalog.to_jsonb(v_now);  -- `at` of an errors entry
BEGIN
    v_error := jobq__worker_id_error(jobq_fail_many.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_fail_many: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_fail_many.errors IS NULL THEN
        RAISE EXCEPTION 'jobq_fail_many: errors must not be NULL'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one error per job id, in the same order.';
    END IF;
    IF pg_catalog.cardinality(jobq_fail_many.errors) <> v_count THEN
        RAISE EXCEPTION 'jobq_fail_many: errors has % elements, job_ids has %',
            pg_catalog.cardinality(jobq_fail_many.errors), v_count
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one error per job id, in the same order.';
    END IF;
    IF jobq_fail_many.retries IS NOT NULL THEN
        IF pg_catalog.cardinality(jobq_fail_many.retries) <> v_count THEN
            RAISE EXCEPTION 'jobq_fail_many: retries has % elements, job_ids has %',
                pg_catalog.cardinality(jobq_fail_many.retries), v_count
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Pass one retry flag per job id, in the same order, or NULL.';
        END IF;
        SELECT r.i INTO v_bad
        FROM pg_catalog.unnest(jobq_fail_many.retries) WITH ORDINALITY AS r (retry, i)
        WHERE r.retry IS NULL
        ORDER BY r.i
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'jobq_fail_many: retries[%] must be true or false, not NULL', v_bad
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    IF jobq_fail_many.backoffs IS NOT NULL THEN
        IF pg_catalog.cardinality(jobq_fail_many.backoffs) <> v_count THEN
            RAISE EXCEPTION 'jobq_fail_many: backoffs has % elements, job_ids has %',
                pg_catalog.cardinality(jobq_fail_many.backoffs), v_count
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Pass one backoff per job id, in the same order, or NULL.';
        END IF;
        SELECT b.i INTO v_bad
        FROM pg_catalog.unnest(jobq_fail_many.backoffs) WITH ORDINALITY AS b (backoff, i)
        WHERE b.backoff IS NULL OR b.backoff < interval '0'
        ORDER BY b.i
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'jobq_fail_many: backoffs[%] must be an interval >= 0, got %',
                v_bad, coalesce(jobq_fail_many.backoffs[v_bad]::text, 'NULL')
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    IF jobq_fail_many.attempts IS NOT NULL
       AND pg_catalog.cardinality(jobq_fail_many.attempts) <> v_count THEN
        RAISE EXCEPTION 'jobq_fail_many: attempts has % elements, job_ids has %',
            pg_catalog.cardinality(jobq_fail_many.attempts), v_count
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one attempt per job id, in the same order, or NULL.';
    END IF;

    -- The elements, each job once (its first element), then one UPDATE joined to them.
    WITH d AS MATERIALIZED (
        SELECT DISTINCT ON (f.job_id)
            f.job_id,
            pg_catalog.substr(coalesce(f.error, ''), 1, 10000) AS error,
            f.retry,
            f.backoff,
            f.attempt,
            f.i
        FROM ROWS FROM (
            pg_catalog.unnest(jobq_fail_many.job_ids),
            pg_catalog.unnest(jobq_fail_many.errors),
            pg_catalog.unnest(
                coalesce(jobq_fail_many.retries, pg_catalog.array_fill(TRUE, ARRAY[v_count]))
            ),
            pg_catalog.unnest(coalesce(
                jobq_fail_many.backoffs,
                pg_catalog.array_fill(interval '10 seconds', ARRAY[v_count])
            )),
            pg_catalog.unnest(coalesce(
                jobq_fail_many.attempts, pg_catalog.array_fill(NULL::integer, ARRAY[v_count])
            ))
        ) WITH ORDINALITY AS f (job_id, error, retry, backoff, attempt, i)
        WHERE f.job_id IS NOT NULL
        ORDER BY f.job_id, f.i
    ),

    failed AS (
        UPDATE jobq_jobs AS j
        SET
            status = CASE
                WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                WHEN NOT d.retry THEN 'failed'
                WHEN j.attempts >= j.max_attempts THEN 'dead_letter'
                ELSE 'pending'
            END,
            available_at = CASE
                WHEN j.cancel_requested_at IS NULL AND d.retry AND j.attempts < j.max_attempts
                    THEN jobq__retry_at(v_now, j.attempts, d.backoff)
                ELSE j.available_at
            END,
            finished_at = CASE
                WHEN j.cancel_requested_at IS NULL AND d.retry AND j.attempts < j.max_attempts
                    THEN NULL
                ELSE v_now
            END,
            -- A retry after a backoff waits outside the claim index (see jobq_dequeue).
            scheduled = j.cancel_requested_at IS NULL AND d.retry
                AND j.attempts < j.max_attempts
                AND d.backoff > interval '0',
            last_error = d.error,
            errors = jobq__append_error(
                j.errors, jobq__error_entry(j.attempts, v_at, j.locked_by, d.error, NULL::text)
            ),
            locked_at = NULL,
            locked_by = NULL,
            locked_until = NULL,
            updated_at = v_now
        FROM d
        WHERE j.id = d.job_id
          AND j.locked_by = jobq_fail_many.worker_id
          AND (d.attempt IS NULL OR j.attempts = d.attempt)
        RETURNING d.i, j.id, j.status, j.queue, j.available_at, j.job_type, j.claimed_at
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'failed'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            pg_catalog.array_agg(c.status),
            pg_catalog.array_agg(extract(epoch FROM pg_catalog.now() - c.claimed_at)::double precision)
        ) AS n
        FROM failed AS c
        HAVING pg_catalog.count(*) > 0
           AND (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
    )

    SELECT
        pg_catalog.array_agg(x.i),
        pg_catalog.array_agg(x.status),
        pg_catalog.array_agg(DISTINCT x.queue) FILTER (
            WHERE x.status = 'pending' AND x.available_at <= v_now
        ),
        pg_catalog.array_agg(x.id::text) FILTER (WHERE x.status <> 'pending')
    INTO v_ords, v_statuses, v_wake, v_ended
    FROM failed AS x
    LEFT JOIN counted ON TRUE;

    -- Retries without backoff are available at once: wake a worker of each such queue.
    PERFORM jobq__notify(v_wake);
    PERFORM jobq__notify_events('done'::text, jobq__awaits_end(v_ended::uuid[]));

    RETURN QUERY
    SELECT e.i::integer, e.job_id, r.status
    FROM pg_catalog.unnest(jobq_fail_many.job_ids) WITH ORDINALITY AS e (job_id, i)
    LEFT JOIN ROWS FROM (pg_catalog.unnest(v_ords), pg_catalog.unnest(v_statuses))
        AS r (i, status) ON r.i = e.i
    ORDER BY e.i;
END;
$$;

COMMENT ON FUNCTION jobq_fail_many(uuid[], text, text[], boolean[], interval[], integer[]) IS
'Records a failed attempt of each of the jobs that the worker still holds, in one
statement, with the same fencing and outcome per job as jobq_fail. A job id given twice counts
once, for its first element. Runs with enable_seqscan = off and jit = off (for this function
only; the caller keeps its own settings): each job is found by its primary key whatever the
statistics say.
Arguments: job_ids (the jobs), worker_id (the worker that claimed them: non-blank, at most
200 characters), errors (one error text per job, same order; a NULL element is stored as an
empty text, each cut to its first 10,000 characters), retries (one flag per
job; NULL = all true), backoffs (one interval >= 0 per job; NULL = all 10 seconds), attempts
(one claim attempt per job; NULL = any, and a NULL element does not fence its job).
Result: one row per element of job_ids, in their order: ord (from 1), job_id, and status, the
new status (pending, dead_letter, failed, or cancelled for a job with a cancel request) or NULL
when the claim is not held (nothing changes for that job).
Errors: 22023 for worker_id NULL, blank or longer than 200 characters, a NULL errors array,
when errors, retries, backoffs or attempts differ in length from job_ids, or for a NULL retry
or a NULL or negative backoff (naming the element); nothing changes then.
Concurrency: as jobq_fail, job by job. It waits for the rows it changes: do not send two calls
over the same jobs at once; send them in id order, as jobq_cancel locks them. One NOTIFY on the
installation''s channel per queue that got a job back available now (one that wakes every
worker beyond 100 queues), and one on the done channel (an empty payload) when a job that a
client awaits ended.';

REVOKE EXECUTE ON FUNCTION jobq_fail_many(uuid[], text, text[], boolean[], interval[], integer[])
FROM PUBLIC;
