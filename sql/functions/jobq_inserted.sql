-- jobq_inserted: which of the ids an enqueue returned are jobs that the caller's transaction
-- created, so that a loader can say how many of its jobs it added and how many were there
-- already (an idempotency key of the same job type with a job), through the results of
-- jobq_enqueue, jobq_enqueue_many and jobq_enqueue_arrays as they are. A job created by this
-- transaction has its created_at at the transaction's start, now(), as jobq_enqueue_many's
-- edges also tell it; an element that repeats an earlier one's id is not counted twice.
--
-- VOLATILE, so that it sees jobs inserted earlier in the same statement (a STABLE function
-- reads with the snapshot of the statement that calls it): the client counts a batch in one
-- statement, the enqueue's ids passed straight in. One index probe per id; a batch without
-- idempotency keys needs no call (every job is new).
--! levels: producer, worker, admin
--! granted-as: jobq_enqueue_many

CREATE OR REPLACE FUNCTION jobq_inserted(job_ids uuid[]) RETURNS TABLE (
    ord integer,
    id uuid,
    inserted boolean
)
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT
        u.ord::integer,
        u.id,
        -- Never NULL: a NULL id is false before the rest is asked. now() only in a plain
        -- comparison, as jobq_enqueue_many's edges read it (docs/decisions/0002).
        u.id IS NOT NULL
        AND pg_catalog.row_number() OVER (PARTITION BY u.id ORDER BY u.ord) = 1
        AND EXISTS (
            SELECT FROM jobq_all_jobs AS j
            WHERE j.id = u.id AND j.created_at = pg_catalog.now()
        )
    FROM pg_catalog.unnest(jobq_inserted.job_ids) WITH ORDINALITY AS u (id, ord)
    ORDER BY u.ord
$$;

COMMENT ON FUNCTION jobq_inserted(uuid[]) IS
'Which of the given jobs the current transaction created: for a loader to tell the jobs an
enqueue added from those whose idempotency key had a job already. Pass the ids that
jobq_enqueue, jobq_enqueue_many or jobq_enqueue_arrays returned, in the same transaction (in
the same statement too: it sees what that statement inserted).
Arguments: job_ids (in any order; NULL = none).
Result: one row per element, (ord, id, inserted), ord counting from 1 in array order;
inserted is true for the first element of each job that this transaction created, false for a
repeated id, a job created before this transaction began, an unknown id or NULL.
Errors: none.';

REVOKE EXECUTE ON FUNCTION jobq_inserted(uuid[]) FROM PUBLIC;
