-- jobq_act_on_jobs: an operator acts on jobs picked by hand (the dashboard's selected rows,
-- `jobq jobs cancel|requeue|delete|run-now ID...`), and the act is recorded: one row of
-- jobq_audit per call, written here in the same transaction, so that psql users are recorded
-- as the CLI and the dashboard are. Each action is the one jobq already has for one job:
--   cancel   jobq_cancel (waiting and pending jobs at once, running ones when their handler
--            sees it);
--   requeue  jobq_requeue_dead_letter, per job (failed, dead_letter and cancelled jobs);
--   delete   a finished job removed from jobq_jobs_history, as jobq_prune removes old ones
--            (live jobs are left alone: cancel them first);
--   run_now  a pending job that waits for its run_at or its retry's backoff becomes available
--            now, and the workers of its queue are woken.
-- The audit row names who (session_user and the role the session acts as, as jobq_jobs_page
-- tells them: current_user is jobq's owner here), the action, the ids asked for, those changed,
-- and the reason.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_act_on_jobs(
    action text,
    job_ids uuid[],
    reason text DEFAULT NULL
) RETURNS TABLE (job_id uuid, outcome text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_ids uuid[];
    v_outcomes text[];
    v_changed uuid[];
    v_queues text[];
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF action IS NULL OR action NOT IN ('cancel', 'requeue', 'delete', 'run_now') THEN
        RAISE EXCEPTION 'jobq_act_on_jobs: action must be one of cancel, requeue, delete, run_now, got %',
            coalesce(pg_catalog.quote_literal(action), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'jobq_act_on_jobs: job_ids must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.cardinality(job_ids) NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'jobq_act_on_jobs: job_ids must hold 1 to 1000 ids, got %',
            pg_catalog.cardinality(job_ids)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Act on more jobs in several calls.';
    END IF;
    IF pg_catalog.array_position(job_ids, NULL::uuid) IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_act_on_jobs: job_ids must not contain NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_act_on_jobs.reason) > 1000 THEN
        RAISE EXCEPTION 'jobq_act_on_jobs: reason is % characters long, at most 1000 are allowed',
            pg_catalog.length(jobq_act_on_jobs.reason)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Each id once, in the order given.
    v_ids := ARRAY(
        SELECT u.id FROM pg_catalog.unnest(job_ids) WITH ORDINALITY AS u (id, n)
        GROUP BY u.id ORDER BY pg_catalog.min(u.n)
    );

    IF action = 'cancel' THEN
        -- The jobs a cancel can change (jobq_cancel answers the status of the others, a
        -- cancelled one included, as it answers for those it changed).
        v_changed := ARRAY(
            SELECT j.id FROM jobq_jobs AS j
            WHERE j.id = ANY (v_ids) AND j.status IN ('waiting', 'pending', 'processing')
              AND j.cancel_requested_at IS NULL
              AND NOT EXISTS (SELECT FROM jobq_cancel_requests AS r WHERE r.job_id = j.id)
        );
        SELECT pg_catalog.array_agg(c.status ORDER BY u.n) INTO v_outcomes
        FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS u (id, n)
        LEFT JOIN jobq_cancel(v_ids, jobq_act_on_jobs.reason) AS c ON c.job_id = u.id;
        v_outcomes := ARRAY(
            SELECT CASE
                WHEN x.o IS NULL THEN 'unknown'
                WHEN x.id = ANY (v_changed) AND x.o IN ('cancelled', 'cancel_requested') THEN x.o
                ELSE 'left alone: ' || x.o
            END
            FROM ROWS FROM (pg_catalog.unnest(v_ids), pg_catalog.unnest(v_outcomes))
                WITH ORDINALITY AS x (id, o, n)
            ORDER BY x.n
        );
    ELSIF action = 'requeue' THEN
        v_outcomes := ARRAY(
            SELECT CASE
                WHEN jobq_requeue_dead_letter(u.id) THEN 'requeued'
                ELSE coalesce(
                    'left alone: ' || (SELECT a.status FROM jobq_all_jobs AS a WHERE a.id = u.id),
                    'unknown'
                )
            END
            FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS u (id, n)
            ORDER BY u.n
        );
    ELSIF action = 'delete' THEN
        WITH gone AS (
            DELETE FROM jobq_jobs_history AS h
            WHERE h.id = ANY (v_ids)
            RETURNING h.id, h.queue, h.job_type, h.status
        ),

        counted AS MATERIALIZED (
            SELECT jobq__metrics_count(
                'pruned'::text, pg_catalog.array_agg(g.queue), pg_catalog.array_agg(g.job_type),
                pg_catalog.array_agg(g.status), NULL::double precision[]
            ) AS n
            FROM gone AS g
            HAVING pg_catalog.count(*) > 0
        )

        SELECT pg_catalog.array_agg(g.id) INTO v_changed
        FROM gone AS g LEFT JOIN counted ON TRUE;
        DELETE FROM jobq_awaits AS w WHERE w.job_id = ANY (v_changed);
        -- As jobq_prune: a deleted job's own edges go with it, and its waiting dependents under
        -- rule wait, which it can no longer release, are cancelled (their dependents follow).
        DELETE FROM jobq_job_dependencies AS e WHERE e.job_id = ANY (v_changed);
        PERFORM jobq__dependencies_gone();
        v_outcomes := ARRAY(
            SELECT CASE
                WHEN u.id = ANY (v_changed) THEN 'deleted'
                ELSE coalesce(
                    'left alone: ' || (SELECT j.status FROM jobq_jobs AS j WHERE j.id = u.id),
                    'unknown'
                )
            END
            FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS u (id, n)
            ORDER BY u.n
        );
    ELSE
        WITH due AS (
            UPDATE jobq_jobs AS j
            SET available_at = v_now, scheduled = false, updated_at = v_now
            WHERE j.id = ANY (v_ids)
              AND j.status = 'pending'
              AND (j.scheduled OR j.available_at > v_now)
            RETURNING j.id, j.queue
        )

        SELECT pg_catalog.array_agg(d.id), pg_catalog.array_agg(DISTINCT d.queue)
        INTO v_changed, v_queues
        FROM due AS d;
        PERFORM jobq__notify(v_queues);
        v_outcomes := ARRAY(
            SELECT CASE
                WHEN u.id = ANY (v_changed) THEN 'available now'
                WHEN a.status = 'pending' THEN 'left alone: available already'
                ELSE coalesce('left alone: ' || a.status, 'unknown')
            END
            FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS u (id, n)
            LEFT JOIN jobq_all_jobs AS a ON a.id = u.id
            ORDER BY u.n
        );
    END IF;

    v_changed := ARRAY(
        SELECT u.id
        FROM ROWS FROM (pg_catalog.unnest(v_ids), pg_catalog.unnest(v_outcomes)) WITH ORDINALITY AS u (id, o, n)
        WHERE u.o NOT LIKE 'left alone%' AND u.o <> 'unknown'
        ORDER BY u.n
    );
    PERFORM jobq__audit(jobq_act_on_jobs.action, v_ids, v_changed, jobq_act_on_jobs.reason);
    RETURN QUERY
    SELECT u.id, u.o
    FROM ROWS FROM (pg_catalog.unnest(v_ids), pg_catalog.unnest(v_outcomes)) WITH ORDINALITY AS u (id, o, n)
    ORDER BY u.n;
END;
$$;

COMMENT ON FUNCTION jobq_act_on_jobs(text, uuid[], text) IS
'Admin only. Acts on the given jobs and records the act in jobq_audit (who: session_user and
the role set by SET ROLE; when; the action; the ids asked for and those changed; the reason),
in the same transaction. Actions: cancel (as jobq_cancel: waiting and pending jobs at once,
running ones when their handler sees the request), requeue (as jobq_requeue_dead_letter: failed,
dead_letter and cancelled jobs), delete (finished jobs only, removed as jobq_prune removes
them), run_now (a pending job waiting for its run_at or a retry''s backoff becomes available
now; its queue''s workers are woken).
Arguments: action, job_ids (1 to 1000 ids, no NULL; each acted on once), reason (at most 1000
characters; kept with a cancelled job as jobq_cancel keeps it, and in the audit).
Result: one row per distinct id, in the order given: job_id and outcome (cancelled,
cancel_requested, requeued, deleted, available now, unknown, or ''left alone: '' and the
reason, such as the status, when the action does not apply).
Errors: 22023 an unknown action, job_ids NULL, empty or longer than 1000, a NULL id, a reason
longer than 1000 characters. Nothing changes and nothing is
recorded then.
Concurrency: takes the locks of the function it applies (cancel and run_now wait for a claim
in progress on the same job); a requeue or delete of a job that another session changes meanwhile
leaves it alone.';

REVOKE EXECUTE ON FUNCTION jobq_act_on_jobs(text, uuid[], text) FROM PUBLIC;
