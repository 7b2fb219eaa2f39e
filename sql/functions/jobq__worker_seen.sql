-- jobq__worker_seen (private): records that worker_id claims with these filters, for
-- jobq_unserved_job_types. Called by every jobq_dequeue, so it costs one index look-up in the
-- common case: the row is written only when it is older than 5 seconds or its filters changed
-- (a worker that claims thousands of times a second writes it once every 5 seconds). When it
-- writes, it also deletes the rows of workers that have not claimed for a day (a small table:
-- one row per worker). Runs as its caller, jobq_dequeue (SECURITY DEFINER, fixed search_path).
-- jobq_complete_and_claim reads the same test (the row, its age, its filters) with its probes
-- and calls this only when it would write: a change to the test here is one there too.

CREATE OR REPLACE FUNCTION jobq__worker_seen(
    worker_id text,
    job_types text[],
    queues text[]
) RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    PERFORM
    FROM jobq_workers AS w
    WHERE w.worker_id = jobq__worker_seen.worker_id
      AND w.last_claim_at > v_now - interval '5 seconds'
      -- text[] = text[] is pg_catalog's anyarray operator: an exact-type look-alike in the
      -- schema would be preferred to it, so it is named (as IS NOT DISTINCT FROM cannot).
      AND (w.job_types OPERATOR(pg_catalog.=) jobq__worker_seen.job_types
           OR (w.job_types IS NULL AND jobq__worker_seen.job_types IS NULL))
      AND (w.queues OPERATOR(pg_catalog.=) jobq__worker_seen.queues
           OR (w.queues IS NULL AND jobq__worker_seen.queues IS NULL));
    IF FOUND THEN
        RETURN;
    END IF;
    DELETE FROM jobq_workers AS w
    WHERE w.last_claim_at < v_now - interval '1 day';
    INSERT INTO jobq_workers AS w (worker_id, job_types, queues)
    VALUES (jobq__worker_seen.worker_id, jobq__worker_seen.job_types, jobq__worker_seen.queues)
    ON CONFLICT ON CONSTRAINT jobq_workers_pkey DO UPDATE
    SET job_types = excluded.job_types,
        queues = excluded.queues,
        last_claim_at = excluded.last_claim_at;
END;
$$;

COMMENT ON FUNCTION jobq__worker_seen(text, text[], text[]) IS
'Private. Records in jobq_workers that worker_id claims with these job_types and queues
filters (NULL: all); writes only when its row is older than 5 seconds or the filters changed.
Called by jobq_dequeue.';

REVOKE EXECUTE ON FUNCTION jobq__worker_seen(text, text[], text[]) FROM PUBLIC;
