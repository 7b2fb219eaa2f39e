-- jobq_release: gives back jobs a worker claimed but never started (a worker shutting down
-- with prefetched jobs), without counting the attempt, and wakes the other workers. A job with
-- a cancel request is not given back but cancelled: it must never run again.
--
-- The WHERE clause finds the jobs by their primary key and tests no status: see the note on
-- jobq_jobs_claim_check in sql/migrations/.
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_release(job_ids uuid[], worker_id text) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_released integer;
    v_ended text[];
    v_error text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__worker_id_error(jobq_release.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_release: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;

    WITH released AS (
        UPDATE jobq_jobs AS j
        SET
            status = CASE WHEN j.cancel_requested_at IS NULL THEN 'pending' ELSE 'cancelled' END,
            available_at = v_now,
            attempts = greatest(j.attempts - 1, 0),
            finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN v_now END,
            scheduled = FALSE,
            locked_at = NULL,
            locked_by = NULL,
            locked_until = NULL,
            updated_at = v_now
        -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
        -- test would let the planner scan jobq_jobs_locked_until_idx instead of the primary key.
        WHERE j.id = ANY (jobq_release.job_ids)
          AND j.locked_by = jobq_release.worker_id
        RETURNING j.id, j.status, j.queue, j.job_type
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'released'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            pg_catalog.array_agg(c.status), NULL::double precision[]
        ) AS n
        FROM released AS c
        HAVING pg_catalog.count(*) > 0
    )

    SELECT
        pg_catalog.count(*)::integer,
        pg_catalog.array_agg(r.id::text) FILTER (WHERE r.status = 'cancelled')
    INTO v_released, v_ended
    FROM released AS r
    LEFT JOIN counted ON TRUE;
    IF v_ended IS NOT NULL THEN
        PERFORM jobq__notify_events('done'::text, jobq__awaits_end(v_ended::uuid[]));
    END IF;
    IF v_released > 0 THEN
        PERFORM jobq__notify(ARRAY(
            SELECT DISTINCT j.queue FROM jobq_jobs AS j WHERE j.id = ANY (jobq_release.job_ids)
        ));
    END IF;
    RETURN v_released;
END;
$$;

COMMENT ON FUNCTION jobq_release(uuid[], text) IS
'Gives back jobs that the worker claimed but never started (a worker shutting down with
prefetched jobs): pending, available now, attempts - 1 (the claim is not counted), claim
cleared, no error recorded; other workers are woken (NOTIFY on the installation''s channel). A
job with a cancel request (jobq_cancel) becomes cancelled instead (attempts - 1 as well) and is
never run again. Jobs it does not hold are left alone.
Arguments: job_ids (the jobs), worker_id (the worker that claimed them: non-blank, at most
200 characters).
Result: how many jobs were released (cancelled ones included).
Errors: 22023 worker_id NULL, blank or longer than 200 characters.
Concurrency: it waits for the rows it changes, as jobq_complete_many. A NOTIFY on the done
channel (an empty payload) when it cancelled a job that a client awaits.';

REVOKE EXECUTE ON FUNCTION jobq_release(uuid[], text) FROM PUBLIC;
