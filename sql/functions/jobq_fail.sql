-- jobq_fail: records a failed attempt while the worker holds the claim, and decides what
-- follows: cancelled when a cancel was requested (jobq_cancel), else pending again after
-- attempts × backoff (jobq__retry_at), dead_letter when no attempt is left, failed when the
-- worker asked for no retry.
--
-- The WHERE clause finds the job by its primary key and tests no status: see the note on
-- jobq_jobs_claim_check in sql/migrations/.
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_fail(
    job_id uuid,
    worker_id text,
    error text,
    retry boolean DEFAULT TRUE,
    backoff interval DEFAULT '10 seconds',
    attempt integer DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_status text;
    v_awaited boolean;
    v_queue text;
    v_available_at timestamptz;
    v_error text;
    v_error_text text;
    v_job_type text;
    v_claimed_at timestamptz;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_at CONSTANT jsonb := pg_catalog.to_jsonb(v_now);  -- `at` of an errors entry
BEGIN
    v_error := jobq__worker_id_error(jobq_fail.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_fail: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF retry IS NULL THEN
        RAISE EXCEPTION 'jobq_fail: retry must be true or false, not NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF backoff IS NULL OR backoff < interval '0' THEN
        RAISE EXCEPTION 'jobq_fail: backoff must be an interval >= 0, got %',
            coalesce(backoff::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A failure report never fails for its size: the error is stored cut to its first 10,000
    -- characters (and errors keeps the 50 most recent entries, jobq__append_error), so that a
    -- handler's huge exception text cannot grow the row without bound.
    v_error_text := pg_catalog.substr(coalesce(jobq_fail.error, ''), 1, 10000);

    UPDATE jobq_jobs AS j
    SET
        status = CASE
            WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
            WHEN NOT jobq_fail.retry THEN 'failed'
            WHEN j.attempts >= j.max_attempts THEN 'dead_letter'
            ELSE 'pending'
        END,
        available_at = CASE
            WHEN j.cancel_requested_at IS NULL AND jobq_fail.retry AND j.attempts < j.max_attempts
                THEN jobq__retry_at(v_now, j.attempts, jobq_fail.backoff)
            ELSE j.available_at
        END,
        finished_at = CASE
            WHEN j.cancel_requested_at IS NULL AND jobq_fail.retry AND j.attempts < j.max_attempts
                THEN NULL
            ELSE v_now
        END,
        -- A retry after a backoff waits outside the claim index (see jobq_dequeue).
        scheduled = j.cancel_requested_at IS NULL AND jobq_fail.retry
            AND j.attempts < j.max_attempts
            AND jobq_fail.backoff > interval '0',
        last_error = v_error_text,
        errors = jobq__append_error(
            j.errors, jobq__error_entry(j.attempts, v_at, j.locked_by, v_error_text, NULL::text)
        ),
        locked_at = NULL,
        locked_by = NULL,
        locked_until = NULL,
        updated_at = v_now
    -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
    -- test would let the planner scan jobq_jobs_locked_until_idx instead of the primary key.
    WHERE j.id = jobq_fail.job_id
      AND j.locked_by = jobq_fail.worker_id
      AND (jobq_fail.attempt IS NULL OR j.attempts = jobq_fail.attempt)
    -- Whether a client awaits the job is read in the same statement (jobq_awaits).
    RETURNING
        j.status, j.queue, j.available_at,
        EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = j.id),
        j.job_type, j.claimed_at
    INTO v_status, v_queue, v_available_at, v_awaited, v_job_type, v_claimed_at;
    IF v_status IS NOT NULL THEN
        PERFORM jobq__metrics_count(
            'failed'::text, ARRAY[v_queue], ARRAY[v_job_type], ARRAY[v_status],
            ARRAY[extract(epoch FROM v_now - v_claimed_at)::double precision]
        );
    END IF;
    IF v_status = 'pending' AND v_available_at <= v_now THEN
        PERFORM pg_catalog.pg_notify(jobq__channel(), v_queue);  -- a retry without backoff
    ELSIF v_awaited AND v_status <> 'pending'
          AND jobq__awaits_end(ARRAY[jobq_fail.job_id]) IS NOT NULL THEN
        PERFORM pg_catalog.pg_notify(jobq__event_channel('done'::text), '');  -- no id: see jobq__notify_events
    END IF;
    RETURN v_status;
END;
$$;

COMMENT ON FUNCTION jobq_fail(uuid, text, text, boolean, interval, integer) IS
'Records a failed attempt of a job while the worker holds its claim: last_error, and one
object {attempt, at, worker, error} appended to errors (error cut to its first 10,000
characters; errors keeps the 50 most recent entries). A job with a cancel request (jobq_cancel)
ends cancelled, whatever retry and the attempts left say, and is never run again. Otherwise,
with retry and attempts left: pending again, available after attempts × backoff (arithmetic,
capped at 365 days); with no attempts left: dead_letter; with retry => false: failed.
Arguments: job_id (the job), worker_id (the worker that claimed it: non-blank, at most 200
characters), error (the error text; NULL is stored as an empty text), retry (false: a
permanent failure), backoff (>= 0, the delay per attempt), attempt (NULL = any; else only the
claim of that attempt counts).
Result: the new status, or NULL when the claim is not held (nothing changes then).
Errors: 22023 NULL retry, NULL or negative backoff, worker_id NULL, blank or longer than 200
characters.
Concurrency: the row lock orders it against a concurrent takeover or cancel, as jobq_complete.
A NOTIFY on the installation''s channel when the job is available again at once (backoff 0),
and on its done channel (an empty payload) when the job ended and a client awaits it.';

REVOKE EXECUTE ON FUNCTION jobq_fail(uuid, text, text, boolean, interval, integer) FROM PUBLIC;
