-- jobq_unserved_job_types (admin): the jobs that wait for a worker nobody runs. A job type
-- misspelt by a producer (send_emial), or a queue no worker listens to, leaves its jobs
-- pending for ever while every worker reports that nothing is available. Every claim records
-- its worker's filters in jobq_workers (jobq__worker_seen), so this can name, per queue and job
-- type, the available jobs that no worker asked for within `idle`, whatever language the
-- workers are written in. It reads the pending jobs that are available now, from the partial
-- indexes of pending jobs (jobq__available), never a finished one: for operators, `jobq
-- doctor` (through jobq_health) and a worker's start, not for a hot loop.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_unserved_job_types(
    idle interval DEFAULT '15 minutes'
) RETURNS TABLE (
    queue text,
    job_type text,
    jobs bigint,
    oldest_available_at timestamptz
)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_queues text[];
    v_types text[];
    v_jobs bigint[];
    v_oldest timestamptz[];
BEGIN
    IF idle IS NULL OR idle <= interval '0' THEN
        RAISE EXCEPTION 'jobq_unserved_job_types: idle must be a positive interval, got %',
            coalesce(idle::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The available jobs first, in a statement of their own: under Citus a statement that
    -- also reads jobq_workers runs on the schema's node, where jobq__available's own read of
    -- jobq_jobs would be a distributed query nested in it, which Citus refuses.
    SELECT
        pg_catalog.array_agg(a.queue), pg_catalog.array_agg(a.job_type),
        pg_catalog.array_agg(a.jobs), pg_catalog.array_agg(a.oldest_available_at)
    INTO v_queues, v_types, v_jobs, v_oldest
    FROM jobq__available(NULL::boolean) AS a;

    RETURN QUERY
    SELECT w.queue, w.job_type, w.jobs, w.oldest_available_at
    FROM ROWS FROM (
        pg_catalog.unnest(v_queues), pg_catalog.unnest(v_types), pg_catalog.unnest(v_jobs),
        pg_catalog.unnest(v_oldest)
    ) AS w (queue, job_type, jobs, oldest_available_at)
    WHERE NOT EXISTS (
        SELECT
        FROM jobq_workers AS k
        WHERE k.last_claim_at
              > v_now - least(jobq_unserved_job_types.idle, interval '1000 years')
          AND (k.job_types IS NULL OR w.job_type = ANY (k.job_types))
          AND (k.queues IS NULL OR w.queue = ANY (k.queues))
    )
    ORDER BY w.queue, w.job_type;
END;
$$;

COMMENT ON FUNCTION jobq_unserved_job_types(interval) IS
'Admin. Names the pending jobs available now that no worker asked for recently, per (queue,
job_type). A worker asks through its claims: jobq_dequeue records its worker_id''s job_types
and queues filters in jobq_workers. Reads every available pending job (from the partial
indexes of pending jobs, never a finished one): for operators and worker start-up, not for a
hot loop.
Arguments: idle (how recently a worker must have claimed with filters that cover the job;
default 15 minutes; > 0).
Result: rows (queue, job_type, jobs, oldest_available_at): how many such jobs, and the oldest
available_at among them.
Errors: 22023 a NULL or non-positive idle.';

REVOKE EXECUTE ON FUNCTION jobq_unserved_job_types(interval) FROM PUBLIC;
