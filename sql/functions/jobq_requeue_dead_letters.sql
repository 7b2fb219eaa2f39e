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
    -- Back from jobq_jobs_history to jobq_jobs (jobq__requeue), each with the status it
    -- leaves, for jobq_metrics' gauge.
    WITH requeued AS MATERIALIZED (
        SELECT r.queue, r.job_type, r.old_status AS status
        FROM jobq__requeue(ARRAY(
            SELECT h.id
            FROM jobq_jobs_history AS h
            WHERE h.status IN ('dead_letter', 'failed', 'cancelled')
              AND (jobq_requeue_dead_letters.job_type IS NULL
                   OR h.job_type = jobq_requeue_dead_letters.job_type)
              AND (jobq_requeue_dead_letters.queue IS NULL
                   OR h.queue = jobq_requeue_dead_letters.queue)
        )) AS r
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
