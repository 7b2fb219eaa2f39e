-- jobq_requeue_dead_letters: jobq_requeue_dead_letter for every dead_letter or failed job of a
-- job type and/or queue, in one statement, with one NOTIFY per queue that got jobs back (at
-- most 100: jobq__notify). Cancelled jobs only with include_cancelled: a cancel is someone's
-- decision about that job, which a sweep over the failures must not undo by the way; the
-- single-job form requeues one, because naming the job is that explicit choice.
-- An operator's act, so it is recorded in jobq_audit as jobq_act_on_jobs records one (who, the
-- filters, the jobs matched and those requeued, the reason), in the same transaction, however
-- it is called (the CLI, the dashboard, psql).
--! levels: admin
--! replaces: jobq_requeue_dead_letters(text, text)
--! replaces: jobq_requeue_dead_letters(text, text, boolean)

CREATE OR REPLACE FUNCTION jobq_requeue_dead_letters(
    job_type text DEFAULT NULL,
    queue text DEFAULT NULL,
    include_cancelled boolean DEFAULT FALSE,
    reason text DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_count integer;
    v_queues text[];
    v_ids uuid[];
    v_changed uuid[];
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
    IF jobq_requeue_dead_letters.include_cancelled IS NULL THEN
        RAISE EXCEPTION 'jobq_requeue_dead_letters: include_cancelled must be true or false, '
            'got NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_requeue_dead_letters.reason) > 1000 THEN
        RAISE EXCEPTION 'jobq_requeue_dead_letters: reason is % characters long, at most 1000 '
            'are allowed', pg_catalog.length(jobq_requeue_dead_letters.reason)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_ids := ARRAY(
        SELECT h.id
        FROM jobq_jobs_history AS h
        WHERE (h.status IN ('dead_letter', 'failed')
               OR (jobq_requeue_dead_letters.include_cancelled AND h.status = 'cancelled'))
          AND (jobq_requeue_dead_letters.job_type IS NULL
               OR h.job_type = jobq_requeue_dead_letters.job_type)
          AND (jobq_requeue_dead_letters.queue IS NULL
               OR h.queue = jobq_requeue_dead_letters.queue)
    );
    -- Back from jobq_jobs_history to jobq_jobs (jobq__requeue), each with the status it
    -- leaves, for jobq_metrics' gauge.
    WITH requeued AS MATERIALIZED (
        SELECT r.queue, r.job_type, r.old_status AS status
        FROM jobq__requeue(v_ids) AS r
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
    -- The jobs requeued: all of those matched, unless another session changed some
    -- meanwhile; then those that this transaction moved back (updated_at is its now()).
    v_changed := CASE
        WHEN v_count = pg_catalog.cardinality(v_ids) THEN v_ids
        ELSE ARRAY(
            SELECT j.id FROM jobq_jobs AS j
            WHERE j.id = ANY (v_ids) AND j.updated_at = pg_catalog.now()
        )
    END;
    PERFORM jobq__audit(
        'requeue_dead_letters', v_ids, v_changed, jobq_requeue_dead_letters.reason,
        pg_catalog.jsonb_build_object(
            'job_type', jobq_requeue_dead_letters.job_type,
            'queue', jobq_requeue_dead_letters.queue,
            'include_cancelled', jobq_requeue_dead_letters.include_cancelled
        )
    );
    RETURN v_count;
END;
$$;

COMMENT ON FUNCTION jobq_requeue_dead_letters(text, text, boolean, text) IS
'Admin only. Makes every dead_letter or failed job (and cancelled one, with
include_cancelled) pending again, as jobq_requeue_dead_letter does, in one statement, with
one NOTIFY on the installation''s channel per queue that got jobs back (a single one that
wakes every worker when more than 100 queues did), and records the act in jobq_audit (action
requeue_dead_letters: who, when, the filters, the jobs matched and those requeued, the
reason), in the same transaction.
Arguments: job_type (NULL = any; at most 200 characters), queue (NULL = any; at most 200
characters), include_cancelled (false, the default: cancelled jobs stay cancelled; true:
they are requeued too), reason (why, for the audit; at most 1000 characters; NULL: none).
Result: how many jobs were requeued.
Errors: 22023 a job_type or queue longer than 200 characters, include_cancelled NULL, a
reason longer than 1000 characters. Nothing changes and nothing is recorded then.
Concurrency: each job is locked as it moves; a job that another session requeues or
deletes meanwhile is left to that session (not counted, not in the audit row''s changed).';

REVOKE EXECUTE ON FUNCTION jobq_requeue_dead_letters(text, text, boolean, text) FROM PUBLIC;
