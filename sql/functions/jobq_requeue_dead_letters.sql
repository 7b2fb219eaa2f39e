-- jobq_requeue_dead_letters: jobq_requeue_dead_letter for every dead_letter, failed or
-- cancelled job of a job type and/or queue, in one statement, with one NOTIFY per queue that
-- got jobs back (at most 100: jobq__notify).
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_requeue_dead_letters(
    job_type text DEFAULT NULL,
    queue text DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_count integer;
    v_queues text[];
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF pg_catalog.length(jobq_requeue_dead_letters.job_type) > 200 THEN
        RAISE EXCEPTION 'jobq_requeue_dead_letters: job_type is % characters long, at most 200 '
            'are allowed', pg_catalog.length(jobq_requeue_dead_letters.job_type)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_requeue_dead_letters.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_requeue_dead_letters: queue is % characters long, at most 200 are '
            'allowed', pg_catalog.length(jobq_requeue_dead_letters.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- old: the status each job leaves, for jobq_metrics' gauge (locked until the UPDATE).
    WITH old AS MATERIALIZED (
        SELECT j.id, j.status
        FROM jobq_jobs AS j
        WHERE j.status IN ('dead_letter', 'failed', 'cancelled')
          AND (jobq_requeue_dead_letters.job_type IS NULL
               OR j.job_type = jobq_requeue_dead_letters.job_type)
          AND (jobq_requeue_dead_letters.queue IS NULL
               OR j.queue = jobq_requeue_dead_letters.queue)
        FOR UPDATE
    ),

    requeued AS (
        UPDATE jobq_jobs AS j
        SET
            status = 'pending',
            available_at = v_now,
            attempts = 0,
            scheduled = FALSE,
            locked_at = NULL,
            locked_by = NULL,
            finished_at = NULL,
            cancel_requested_at = NULL,
            cancel_reason = NULL,
            updated_at = v_now
        FROM old
        WHERE j.id = old.id
        RETURNING j.queue, j.job_type, old.status
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'requeued'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            pg_catalog.array_agg(c.status), NULL::double precision[]
        ) AS n
        FROM requeued AS c
        HAVING pg_catalog.count(*) > 0
    )

    SELECT pg_catalog.count(*)::integer, pg_catalog.array_agg(DISTINCT r.queue)
    INTO v_count, v_queues
    FROM requeued AS r
    LEFT JOIN counted ON TRUE;
    PERFORM jobq__notify(v_queues);
    RETURN v_count;
END;
$$;

COMMENT ON FUNCTION jobq_requeue_dead_letters(text, text) IS
'Makes every dead_letter, failed or cancelled job pending again, as jobq_requeue_dead_letter
does, in one statement, with one NOTIFY on the installation''s channel per queue that got jobs
back (a single one that wakes every worker when more than 100 queues did).
Arguments: job_type (NULL = any; at most 200 characters), queue (NULL = any; at most 200
characters).
Result: how many jobs were requeued.
Errors: 22023 a job_type or queue longer than 200 characters.';

REVOKE EXECUTE ON FUNCTION jobq_requeue_dead_letters(text, text) FROM PUBLIC;
