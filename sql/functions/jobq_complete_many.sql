-- jobq_complete_many: jobq_complete for many jobs in one statement (the Worker's batched
-- acknowledgements), each optionally fenced by its own attempt and with its own result.
--
-- The completion itself (the checks, and the one statement that moves each job to the
-- history) is jobq__complete_rows, which jobq_complete_and_claim shares; this function then
-- releases the dependents of the jobs it completed and ends the awaits of those awaited. Only
-- awaited jobs are notified.
--
-- SET enable_seqscan = off (and jit = off, as everywhere sequential scans are off: a plan made
-- under it may be costed past jit_above_cost): finished jobs leave jobq_jobs, so statistics
-- gathered on a drained queue say the table is empty, and a generic plan made on them (kept for
-- the session) scanned the whole table for the worker's rows on every call once a backlog arrived,
-- beside a held snapshot hundreds of MB per acknowledgement (docs/decisions/0003-planner-settings-
-- of-hot-functions.md). Without sequential scans, and with the ids as an index condition (j.id =
-- ANY (job_ids)), the primary key is read for the given ids only, whatever the statistics say; the
-- statement's join is hashed (jobq__complete_rows).
--
-- SET plan_cache_mode = force_generic_plan: its statements take arrays, and on a backlog's
-- statistics a custom plan for the few ids of a call looks cheaper than the generic plan
-- (estimated for ten), so under the default every call would plan the completion again,
-- which costs more than running it for one job (a chain's step completes one job per
-- transaction). The generic plan reads the same way (the primary key for the ids, the
-- elements hashed) whatever the statistics, as the settings above make it.
--! levels: worker, admin
--! replaces: jobq_complete_many(uuid[], text, integer[])

CREATE OR REPLACE FUNCTION jobq_complete_many(
    job_ids uuid[],
    worker_id text,
    attempts integer[] DEFAULT NULL,
    results jsonb[] DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_done uuid[];
    v_awaited text[];
    v_ids uuid[];
    v_parents uuid[];
    v_completed record;
BEGIN
    -- Called as an expression, not from a query: no plan, portal or tuple store for its
    -- one row.
    v_completed := jobq__complete_rows(
        'jobq_complete_many', jobq_complete_many.job_ids, jobq_complete_many.worker_id,
        jobq_complete_many.attempts, jobq_complete_many.results
    );
    v_done := v_completed.done;
    v_ids := v_completed.awaited;
    v_parents := v_completed.parents;
    IF v_parents IS NOT NULL THEN
        PERFORM jobq__dependents_finished(
            v_parents,
            pg_catalog.array_fill('succeeded'::text, ARRAY[pg_catalog.cardinality(v_parents)])
        );
    END IF;
    IF v_ids IS NOT NULL THEN
        v_awaited := jobq__awaits_end(v_ids);
    END IF;
    IF v_awaited IS NOT NULL THEN
        PERFORM jobq__notify_events('done'::text, v_awaited);
    END IF;
    RETURN coalesce(pg_catalog.cardinality(v_done), 0);
END;
$$;

COMMENT ON FUNCTION jobq_complete_many(uuid[], text, integer[], jsonb[]) IS
'Marks succeeded, in one statement, each of the jobs that the worker still holds, each with
its result.
Arguments: job_ids (the jobs), worker_id (the worker that claimed them: non-blank, at most 200
characters), attempts (optional, an extension of the contract: one claim attempt per job id,
same order; a job counts only while its claim is of that attempt; NULL = any), results
(optional: one result per job id, same order, any JSON value or NULL for none, at most
max_payload_bytes each; a job not completed stores nothing).
Result: how many jobs were completed; the others (not held, another attempt) are left alone.
Errors: 22023 when attempts or results and job_ids differ in length, worker_id NULL, blank or
longer than 200 characters; 54000 when a result is larger than max_payload_bytes (the message
names its position; nothing changes).
A job''s dependents that this completion frees are released in the same transaction
(jobq__dependents_finished).
Concurrency: as jobq_complete, job by job. It waits for the rows it changes: do not send two
calls over the same jobs at once; send them in id order, as jobq_cancel locks them. A NOTIFY on
the installation''s done channel (an empty payload, one per transaction) when it completed a
job a client awaits.
Runs with enable_seqscan = off, plan_cache_mode = force_generic_plan and jit = off (for this
function only; the caller keeps its own settings): each job is found by its primary key
whatever the statistics say, with plans made once per session.';

REVOKE EXECUTE ON FUNCTION jobq_complete_many(uuid[], text, integer[], jsonb[]) FROM PUBLIC;
