CREATE SCHEMA public;

COMMENT ON SCHEMA public IS 'standard public schema';

CREATE TYPE public.jobq_job_summary AS (
	id uuid,
	queue text,
	job_type text,
	status text,
	priority integer,
	attempts integer,
	max_attempts integer,
	available_at timestamp with time zone,
	created_at timestamp with time zone,
	updated_at timestamp with time zone,
	locked_at timestamp with time zone,
	locked_by text,
	finished_at timestamp with time zone,
	last_error text,
	cancel_requested boolean,
	sort_at timestamp with time zone,
	matches boolean
);

COMMENT ON TYPE public.jobq_job_summary IS 'jobq: one job as jobq_jobs_page() lists it: the columns of jobq_jobs of the same names
(no payload, no result, no errors history; cancel_requested is cancel_requested_at IS NOT NULL)
and sort_at, the time the listing of its status is ordered by (available_at for pending jobs,
locked_at for processing ones, finished_at for finished ones), which with id is the cursor of
the next page; matches, false only on the row that marks where a filtered search of finished
jobs stopped (the last job it examined: not one of the jobs listed, the cursor to search on).';

CREATE FUNCTION public.jobq__add_edges(children uuid[], parents uuid[], rules text[], argument text, graft boolean DEFAULT false) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_parents uuid[];
    v_known uuid[];
    v_statuses text[];
    v_unknown uuid;
    v_children uuid[];
    v_added integer;
    v_cycle boolean;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_parents := ARRAY(SELECT DISTINCT p.id FROM pg_catalog.unnest(parents) AS p (id));
    IF pg_catalog.cardinality(v_parents) OPERATOR(pg_catalog.=) 0 THEN
        RETURN 0;
    END IF;

    -- Lock and mark the live parents, then find every parent's status: live ones hold the
    -- child back whatever their status ('live').
    WITH locked AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.id = ANY (v_parents)
        ORDER BY j.id
        FOR NO KEY UPDATE
    ),

    marked AS (
        UPDATE jobq_jobs AS j
        SET has_dependents = TRUE
        FROM locked
        WHERE j.id OPERATOR(pg_catalog.=) locked.id AND NOT j.has_dependents
    )

    SELECT pg_catalog.array_agg(l.id), pg_catalog.array_agg('live'::text)
    INTO v_known, v_statuses
    FROM locked AS l;
    v_known := coalesce(v_known, '{}');
    v_statuses := coalesce(v_statuses, '{}');
    IF pg_catalog.cardinality(v_known) OPERATOR(pg_catalog.<) pg_catalog.cardinality(v_parents)
    THEN
        -- The finished ones, with the fresh snapshot of this statement.
        SELECT
            v_known OPERATOR(pg_catalog.||) coalesce(pg_catalog.array_agg(h.id), '{}'),
            v_statuses OPERATOR(pg_catalog.||) coalesce(pg_catalog.array_agg(h.status), '{}')
        INTO v_known, v_statuses
        FROM jobq_jobs_history AS h
        WHERE h.id = ANY (v_parents) AND NOT h.id = ANY (v_known);
    END IF;

    SELECT p.id INTO v_unknown
    FROM pg_catalog.unnest(v_parents) AS p (id)
    WHERE NOT p.id = ANY (v_known)
    LIMIT 1;
    IF v_unknown IS NOT NULL THEN
        RAISE EXCEPTION '%: no job has the id %', argument, v_unknown
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A job depends only on jobs that exist (or that the same call enqueues).';
    END IF;

    IF graft THEN
        -- The waiting children, locked after their parents; the others get nothing.
        v_children := ARRAY(
            SELECT j.id
            FROM jobq_jobs AS j
            WHERE j.id = ANY (children) AND j.status OPERATOR(pg_catalog.=) 'waiting'
            ORDER BY j.id
            FOR UPDATE
        );
        -- A child that is one of its new parents' ancestors (or one of them) closes a cycle.
        WITH RECURSIVE up (id) AS (
            SELECT p.id FROM pg_catalog.unnest(v_parents) AS p (id)
            UNION
            SELECT e.depends_on
            FROM up
            JOIN jobq_job_dependencies AS e ON e.job_id OPERATOR(pg_catalog.=) up.id
        )

        SELECT EXISTS (SELECT FROM up WHERE up.id = ANY (children)) INTO v_cycle;
        IF v_cycle THEN
            RAISE EXCEPTION '%: the dependency would close a cycle', argument
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'A job cannot wait for a job that waits for it.';
        END IF;
    ELSE
        v_children := children;
    END IF;

    -- The new edges, and what they do to each child.
    WITH added AS (
        INSERT INTO jobq_job_dependencies AS e (job_id, depends_on, on_failure)
        SELECT DISTINCT ON (x.child, x.parent) x.child, x.parent, coalesce(x.rule, 'cancel')
        FROM ROWS FROM (
            pg_catalog.unnest(jobq__add_edges.children),
            pg_catalog.unnest(jobq__add_edges.parents),
            pg_catalog.unnest(jobq__add_edges.rules)
        ) AS x (child, parent, rule)
        WHERE x.child = ANY (v_children)
        ORDER BY x.child, x.parent
        ON CONFLICT (job_id, depends_on) DO NOTHING
        RETURNING e.job_id, e.depends_on, e.on_failure
    ),

    effect AS (
        SELECT
            a.job_id,
            pg_catalog.count(*) FILTER (
                WHERE p.status OPERATOR(pg_catalog.=) 'live'
                   OR (p.status OPERATOR(pg_catalog.<>) 'succeeded'
                       AND a.on_failure OPERATOR(pg_catalog.=) 'wait')
            )::integer AS holding,
            pg_catalog.min(pg_catalog.format('dependency %s ended %s', a.depends_on, p.status))
                FILTER (
                    WHERE p.status IN ('failed', 'dead_letter', 'cancelled')
                      AND a.on_failure OPERATOR(pg_catalog.=) 'cancel'
                ) AS cancel_reason,
            pg_catalog.count(*)::integer AS n
        FROM added AS a
        JOIN ROWS FROM (pg_catalog.unnest(v_known), pg_catalog.unnest(v_statuses)) AS p (id, status)
            ON p.id OPERATOR(pg_catalog.=) a.depends_on
        GROUP BY a.job_id
    ),

    changed AS (
        UPDATE jobq_jobs AS j
        SET
            status = CASE
                WHEN f.cancel_reason IS NOT NULL THEN 'cancelled'
                WHEN j.waiting_on OPERATOR(pg_catalog.+) f.holding OPERATOR(pg_catalog.>) 0
                    THEN 'waiting'
                ELSE j.status
            END,
            waiting_on = CASE
                WHEN f.cancel_reason IS NOT NULL THEN 0
                ELSE j.waiting_on OPERATOR(pg_catalog.+) f.holding
            END,
            finished_at = CASE WHEN f.cancel_reason IS NOT NULL THEN v_now END,
            last_error = coalesce(f.cancel_reason, j.last_error),
            updated_at = v_now
        FROM effect AS f
        WHERE j.id OPERATOR(pg_catalog.=) f.job_id
          AND (f.cancel_reason IS NOT NULL OR f.holding OPERATOR(pg_catalog.>) 0)
    )

    SELECT coalesce(pg_catalog.sum(f.n), 0)::integer INTO v_added FROM effect AS f;
    RETURN v_added;
END;
$$;

COMMENT ON FUNCTION public.jobq__add_edges(children uuid[], parents uuid[], rules text[], argument text, graft boolean) IS 'Private. Records that children[i] depends on parents[i] under rules[i] and sets each child''s
status and waiting_on from its parents'' (a cancel rule and a parent that ended failed,
dead_letter or cancelled: the child is cancelled). graft: the children exist; only the waiting
ones get edges, and a cycle is refused. Returns how many edges were added. 22023 naming
argument for an unknown parent or a cycle.';

CREATE FUNCTION public.jobq__append_error(errors jsonb, entry jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
    SELECT CASE
        WHEN pg_catalog.jsonb_array_length(errors) < 50 THEN errors || entry
        ELSE pg_catalog.jsonb_path_query_array(errors, '$[last - 48 to last]') || entry
    END
$_$;

COMMENT ON FUNCTION public.jobq__append_error(errors jsonb, entry jsonb) IS 'Private. errors (a JSON array) with entry appended, keeping the 50 most recent entries.';

CREATE FUNCTION public.jobq__audit(action text, job_ids uuid[], changed uuid[], reason text, filters jsonb DEFAULT NULL::jsonb) RETURNS void
    LANGUAGE sql
    AS $$
    INSERT INTO jobq_audit (login_role, acting_role, action, job_ids, changed, reason, filters)
    VALUES (
        SESSION_USER,
        CASE
            WHEN pg_catalog.current_setting('role') = 'none' THEN SESSION_USER
            ELSE pg_catalog.current_setting('role')
        END,
        jobq__audit.action, jobq__audit.job_ids, jobq__audit.changed, jobq__audit.reason,
        jobq__audit.filters
    )
$$;

COMMENT ON FUNCTION public.jobq__audit(action text, job_ids uuid[], changed uuid[], reason text, filters jsonb) IS 'Private. Inserts one row of jobq_audit: the session''s user, the role it acts as, action,
the jobs asked for (job_ids), those changed, reason and filters (a bulk action''s, else
NULL). Used by jobq_act_on_jobs and jobq_requeue_dead_letters.';

CREATE FUNCTION public.jobq__available(limited boolean DEFAULT NULL::boolean) RETURNS TABLE(queue text, job_type text, jobs bigint, oldest_available_at timestamp with time zone)
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
    SELECT a.queue, a.job_type, pg_catalog.count(*), pg_catalog.min(a.available_at)
    FROM (
        SELECT j.queue, j.job_type, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending'
          AND NOT j.scheduled
          AND j.limit_group IS NULL
          AND j.available_at <= pg_catalog.now()
          AND (jobq__available.limited IS NULL OR NOT jobq__available.limited)

        UNION ALL

        SELECT j.queue, j.job_type, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending'
          AND NOT j.scheduled
          AND j.limit_group IS NOT NULL
          AND j.available_at <= pg_catalog.now()
          AND (jobq__available.limited IS NULL OR jobq__available.limited)

        UNION ALL

        SELECT j.queue, j.job_type, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending'
          AND j.scheduled
          AND j.available_at <= pg_catalog.now()
          AND (
              jobq__available.limited IS NULL
              OR jobq__available.limited = (j.limit_group IS NOT NULL)
          )
    ) AS a
    GROUP BY a.queue, a.job_type
$$;

COMMENT ON FUNCTION public.jobq__available(limited boolean) IS 'Private. The pending jobs available now (available_at come), per (queue, job_type): how many
and the oldest available_at, read from the partial indexes of pending jobs only (never a
finished job). limited: NULL every such job, true those with a limit_group, false the others.';

CREATE FUNCTION public.jobq__awaits_end(job_ids uuid[]) RETURNS text[]
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_awaited text[];
BEGIN
    IF job_ids IS NULL THEN
        RETURN NULL;
    END IF;
    WITH gone AS (
        DELETE FROM jobq_awaits AS a
        WHERE a.job_id = ANY (jobq__awaits_end.job_ids)
        RETURNING a.job_id
    )

    SELECT pg_catalog.array_agg(DISTINCT g.job_id::text) INTO v_awaited
    FROM gone AS g;
    RETURN v_awaited;
END;
$$;

COMMENT ON FUNCTION public.jobq__awaits_end(job_ids uuid[]) IS 'Private. Of the given jobs (which the calling statement ended), returns those a client awaits
(jobq_awaits), as text, and deletes their rows; NULL when none is awaited.';

CREATE FUNCTION public.jobq__blank(value text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT value IS NULL OR value !~ (
        '[^\u0009-\u000d\u0020\u0085\u00a0\u00ad\u115f\u1160\u1680\u180e\u2000-\u200f'
        '\u2028-\u202f\u205f-\u2064\u3000\u3164\ufeff\uffa0]'
    )
$$;

COMMENT ON FUNCTION public.jobq__blank(value text) IS 'Private. True when value is NULL or made only of Unicode white space and invisible characters
(zero-width spaces and joiners, direction marks, U+FEFF, Hangul fillers).';

CREATE FUNCTION public.jobq__cancel_apply() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_status text;
    v_queue text;
    v_job_type text;
    v_worker text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    UPDATE jobq_jobs AS j
    SET
        status = CASE WHEN j.status IN ('pending', 'waiting') THEN 'cancelled' ELSE j.status END,
        finished_at = CASE WHEN j.status IN ('pending', 'waiting') THEN v_now END,
        waiting_on = 0,
        last_error = CASE
            WHEN j.status IN ('pending', 'waiting') THEN coalesce(new.reason, 'cancelled')
            ELSE j.last_error
        END,
        cancel_requested_at = CASE WHEN j.status = 'processing' THEN new.requested_at END,
        cancel_reason = CASE WHEN j.status = 'processing' THEN new.reason END,
        updated_at = v_now
    WHERE j.id = new.job_id
      AND (
          j.status IN ('pending', 'waiting')
          OR (j.status = 'processing' AND j.cancel_requested_at IS NULL)
      )
    RETURNING j.status, j.queue, j.job_type, j.locked_by
    INTO v_status, v_queue, v_job_type, v_worker;

    -- Every row of the table is this transaction's own until it commits, and none outlives it.
    DELETE FROM jobq_cancel_requests AS r WHERE r.job_id = new.job_id;

    IF v_status = 'cancelled' THEN
        PERFORM jobq__metrics_count(
            'cancelled'::text, ARRAY[v_queue], ARRAY[v_job_type], NULL::text[],
            NULL::double precision[]
        );
        -- announced on the done channel when a client awaits it (jobq_awaits)
        PERFORM jobq__notify_events('done'::text, jobq__awaits_end(ARRAY[new.job_id]));
    ELSIF v_status = 'processing' THEN
        PERFORM jobq__notify_events('cancel'::text, ARRAY[v_worker]);
    END IF;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION public.jobq__cancel_apply() IS 'Private. Trigger of jobq_cancel_requests (deferred, at the commit of a jobq_cancel() call''s
transaction): sets the cancel request on the job if it is still processing, cancels it if it
is pending again, leaves a finished one alone, and deletes the staged row.';

CREATE FUNCTION public.jobq__channel() RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN pg_catalog.current_schema()::text = 'public' THEN 'jobq'
        WHEN pg_catalog.octet_length(pg_catalog.current_schema()::text) <= 58
            THEN 'jobq.' || pg_catalog.current_schema()::text
        ELSE 'jobq#' || pg_catalog.encode(
            pg_catalog.sha224(pg_catalog.convert_to(pg_catalog.current_schema()::text, 'UTF8')),
            'hex'
        )
    END
$$;

COMMENT ON FUNCTION public.jobq__channel() IS 'Private. The NOTIFY channel of this installation: jobq for schema public, jobq.<schema> for a
schema of at most 58 bytes, else jobq#<hex SHA-224 of the schema name>.';

CREATE TABLE public.jobq_jobs (
    id uuid DEFAULT (encode(set_bit(set_bit("overlay"(uuid_send(gen_random_uuid()), substr(int8send((floor((date_part('epoch'::text, clock_timestamp()) * (1000)::double precision)))::bigint), 3), 1, 6), (52)::bigint, 1), (53)::bigint, 1), 'hex'::text))::uuid NOT NULL,
    queue text DEFAULT 'default'::text NOT NULL,
    job_type text NOT NULL,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    idempotency_key text,
    status text DEFAULT 'pending'::text NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    last_error text,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    scheduled boolean DEFAULT false NOT NULL,
    result jsonb,
    cancel_requested_at timestamp with time zone,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamp with time zone,
    locked_until timestamp with time zone,
    waiting_on integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL,
    CONSTRAINT jobq_jobs_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT jobq_jobs_cancel_check CHECK (((status <> 'pending'::text) OR ((cancel_requested_at IS NULL) AND (cancel_reason IS NULL)))),
    CONSTRAINT jobq_jobs_claim_check CHECK (((status = 'processing'::text) = ((locked_at IS NOT NULL) AND (locked_by IS NOT NULL)))),
    CONSTRAINT jobq_jobs_limit_key_needs_group CHECK (((limit_key IS NULL) OR (limit_group IS NOT NULL))),
    CONSTRAINT jobq_jobs_max_attempts_check CHECK ((max_attempts >= 1)),
    CONSTRAINT jobq_jobs_waiting_check CHECK (((status <> 'waiting'::text) OR (waiting_on > 0)))
)
WITH (fillfactor='70', autovacuum_vacuum_scale_factor='0.0', autovacuum_vacuum_threshold='5000', autovacuum_vacuum_insert_scale_factor='0.0', autovacuum_vacuum_insert_threshold='20000', autovacuum_analyze_scale_factor='0.0', autovacuum_analyze_threshold='10000', autovacuum_vacuum_cost_delay='0');

COMMENT ON TABLE public.jobq_jobs IS 'jobq jobs, one row per job. Change it only through the jobq_* functions.

Its storage settings (\d+ shows them as Options) suit a table whose rows are updated several
times (claim, completion) and die fast.

fillfactor=70: no such update can be HOT (each changes status, which the partial indexes
filter on), but 30 % free space on each page lets the new version of a row go to the same
page, where the dead versions are pruned in place instead of spreading over the table.

autovacuum_vacuum_scale_factor=0, autovacuum_vacuum_threshold=5000: vacuum after 5,000 dead
rows whatever the size of the table (by default it waits until 20 % of the table has turned
over). Claims step over the dead index entries of claimed and finished jobs until VACUUM
removes them, so their number is kept small, and independent of how many jobs are kept.

autovacuum_vacuum_insert_scale_factor=0, autovacuum_vacuum_insert_threshold=20000: a queue
that mostly receives jobs is vacuumed every 20,000 inserts too (visibility map, freezing).

autovacuum_analyze_scale_factor=0, autovacuum_analyze_threshold=10000: statistics follow the
queue every 10,000 changes; the planner''s choices depend on how many jobs are pending.

autovacuum_vacuum_cost_delay=0: VACUUM of this table is never throttled, so that it ends
before new dead entries pile up.';

COMMENT ON COLUMN public.jobq_jobs.id IS 'The job''s id, made by jobq: a UUID version 7 (time-ordered: 48 bits of Unix time in
milliseconds, then random bits). Callers rely on no order of ids.';

COMMENT ON COLUMN public.jobq_jobs.queue IS 'The queue the job belongs to (default ''default''; 1-200 characters): a worker may serve
some queues only (jobq_dequeue queues).';

COMMENT ON COLUMN public.jobq_jobs.job_type IS 'Which handler runs the job (1-200 characters): a worker claims only the job types it has
handlers for (jobq_dequeue job_types).';

COMMENT ON COLUMN public.jobq_jobs.payload IS 'The job''s arguments, a JSON object handed to the handler; at most
jobq_settings.max_payload_bytes of jsonb.';

COMMENT ON COLUMN public.jobq_jobs.idempotency_key IS 'Dedupe of one logical task of one job type: enqueuing a key that exists with the same
job_type, in any status, adds nothing and returns that job''s id
(jobq_jobs_idempotency_key_key). The same key under another job_type is another job. NULL: no
dedupe; NULLs never collide.';

COMMENT ON COLUMN public.jobq_jobs.status IS 'pending: waits (also between retries); processing: claimed; succeeded: done; failed: a
permanent failure the worker asked for (no retry); dead_letter: used all its attempts;
cancelled: cancelled by jobq_cancel. succeeded, failed, dead_letter and cancelled are finished.
The names are those of jobq__statuses().';

COMMENT ON COLUMN public.jobq_jobs.priority IS 'Higher runs first: claims take jobs by priority (high first), then available_at, then id.
-1000000 to 1000000, default 0.';

COMMENT ON COLUMN public.jobq_jobs.attempts IS 'Claims so far, the current one included: a claim adds 1, jobq_release gives it back, a
requeue starts again at 0. A worker passes it back as attempt to fence its claim.';

COMMENT ON COLUMN public.jobq_jobs.max_attempts IS 'Claims allowed (1-1000, default 5). A failure of the last attempt, or a stale claim of it
taken over, moves the job to dead_letter.';

COMMENT ON COLUMN public.jobq_jobs.available_at IS 'Not claimed before this time: run_at (or now) at enqueue, now + attempts × backoff after a
failure, now after a release or a requeue. A pending job whose available_at is in the future
when it is written is marked scheduled until a claim after that time promotes it.';

COMMENT ON COLUMN public.jobq_jobs.locked_at IS 'When the current claim was made or last renewed (jobq_heartbeat); NULL unless processing. A
claim older than the claiming worker''s lock_timeout is taken over by the next jobq_dequeue.';

COMMENT ON COLUMN public.jobq_jobs.locked_by IS 'The worker_id holding the current claim; NULL unless processing. jobq_complete, jobq_fail,
jobq_heartbeat and jobq_release act on a job only while it matches their worker_id.';

COMMENT ON COLUMN public.jobq_jobs.last_error IS 'The error of the latest failed attempt or expired lock; kept when the job is requeued.';

COMMENT ON COLUMN public.jobq_jobs.errors IS 'Every failure of the job, oldest first: a JSON array with one object per failed attempt,
{"attempt": n, "at": time, "worker": worker_id, "error": text}, and "kind": "lock_expired"
in the object jobq_dequeue adds when it takes over a stale claim. Kept when the job is
requeued.';

COMMENT ON COLUMN public.jobq_jobs.created_at IS 'When the job was enqueued.';

COMMENT ON COLUMN public.jobq_jobs.updated_at IS 'When a jobq function last changed the job (a heartbeat renews locked_at only).';

COMMENT ON COLUMN public.jobq_jobs.finished_at IS 'When the job reached a finished status (succeeded, failed, dead_letter, cancelled); NULL
otherwise (jobq_jobs_finished_check). jobq_prune deletes jobs by its age.';

COMMENT ON COLUMN public.jobq_jobs.scheduled IS 'Internal to the claim: true while a pending job waits for an available_at that was in the
future when it was enqueued or retried. Such jobs are left out of jobq_jobs_claim_idx; every
claim first clears the flag of the jobs that have come due (jobq_jobs_scheduled_idx). Meaningful
only while the job is pending.';

COMMENT ON COLUMN public.jobq_jobs.result IS 'What the handler returned (any JSON value), stored by jobq_complete(result => ...) or
jobq_complete_many(results => ...) when the job succeeded; NULL otherwise. At most
max_payload_bytes (jobq_settings).';

COMMENT ON COLUMN public.jobq_jobs.cancel_requested_at IS 'When jobq_cancel() asked a processing job to stop (its transaction''s time), set on the row
when that transaction commits (jobq_cancel_requests); NULL without a request. The job keeps
running: one that then fails, is released or is taken over ends cancelled, one that completes
ends succeeded. Workers learn of it through jobq_cancel_requested() (with their heartbeat) and a
notification.';

COMMENT ON COLUMN public.jobq_jobs.cancel_reason IS 'The reason given to jobq_cancel() for a processing job (cut to 10,000 characters), if any. A
job cancelled while pending has its reason in last_error instead.';

COMMENT ON COLUMN public.jobq_jobs.limit_group IS 'The limit group the job counts against (jobq_set_limit sets the group''s limits); NULL: no
limit. A group with no limit set is unlimited.';

COMMENT ON COLUMN public.jobq_jobs.limit_key IS 'Within limit_group, the key whose limits the job counts against (each key of a group has the
group''s limits for itself, such as one customer); NULL: the whole group shares one.';

COMMENT ON COLUMN public.jobq_jobs.claimed_at IS 'When the latest claim was made (jobq_dequeue); heartbeats do not move it, unlike locked_at.
jobq_run_seconds measures from here to the end of the attempt. NULL for a job never claimed.';

COMMENT ON COLUMN public.jobq_jobs.locked_until IS 'When the current claim''s lock expires: the claim sets it to locked_at + its own lock_timeout
(jobq_dequeue), each jobq_heartbeat moves it by the same length from the renewal. Any claim
takes over a processing job whose locked_until has passed, whatever its own lock_timeout. NULL
unless processing.';

COMMENT ON COLUMN public.jobq_jobs.waiting_on IS 'How many of the job''s dependencies still hold it back: those that have not succeeded (for
on_dependency_failure run: not finished). The finishing transaction of a dependency
decrements it under the job''s row lock; the one that brings it to 0 makes the job pending,
so concurrent dependencies release it exactly once. 0 for a job without dependencies.';

COMMENT ON COLUMN public.jobq_jobs.has_dependents IS 'Whether another job depends on this one (set under this row''s lock when a dependent is
enqueued or grafted). The statements that finish a job read it with the row they finish: a
job without dependents costs no look-up of jobq_job_dependencies.';

COMMENT ON CONSTRAINT jobq_jobs_attempts_check ON public.jobq_jobs IS 'attempts is never negative (jobq_release gives an attempt back down to 0 at most).';

COMMENT ON CONSTRAINT jobq_jobs_cancel_check ON public.jobq_jobs IS 'A pending job has no cancel request, so a job is never claimed again after its cancel took
effect.';

COMMENT ON CONSTRAINT jobq_jobs_claim_check ON public.jobq_jobs IS 'A claim (locked_at and locked_by) exists exactly while the job is processing. The fenced
functions rely on it: they find a claim by id and locked_by = worker_id alone, which implies
processing. Testing the status as well would match the predicate of jobq_jobs_locked_until_idx,
and with a generic plan and statistics gathered while few jobs are processing the planner may
choose that index over the primary key, scanning every claimed job on each call.';

COMMENT ON CONSTRAINT jobq_jobs_limit_key_needs_group ON public.jobq_jobs IS 'A limit_key means something only within a limit_group.';

COMMENT ON CONSTRAINT jobq_jobs_max_attempts_check ON public.jobq_jobs IS 'A job may be claimed at least once (jobq_enqueue also refuses more than 1000).';

COMMENT ON CONSTRAINT jobq_jobs_waiting_check ON public.jobq_jobs IS 'A waiting job has a dependency that holds it back; a job with none left is pending.';

CREATE FUNCTION public.jobq__claim_limited(worker_id text, job_types text[], queues text[], batch_size integer, range_type_hashes bigint[], range_queue_hashes bigint[], lock_until timestamp with time zone, paused_queues text[]) RETURNS SETOF public.jobq_jobs
    LANGUAGE plpgsql
    AS $$
DECLARE
    -- Candidates, read without locks: id, claim order, and index of their key (0: no limit).
    c_ids uuid[] := '{}'::uuid[];
    c_prio integer[] := '{}'::integer[];
    c_avail timestamptz[] := '{}'::timestamptz[];
    c_key integer[] := '{}'::integer[];
    -- Keys met: the limit of their group (limited false: none set) and what this claim may
    -- start (room), has started (n), and for a rate limit the window's clock and totals.
    k_group text[] := '{}'::text[];
    k_key text[] := '{}'::text[];
    k_limited boolean[] := '{}'::boolean[];
    k_room integer[] := '{}'::integer[];
    k_n integer[] := '{}'::integer[];
    k_rate boolean[] := '{}'::boolean[];
    k_at timestamptz[] := '{}'::timestamptz[];
    k_latest bigint[] := '{}'::bigint[];
    k_drop_below bigint[] := '{}'::bigint[];
    -- The ranges of jobq_jobs_limited_idx with pending jobs, each with its first job.
    l_types text[];
    l_queues text[];
    l_groups text[];
    l_keys text[];
    l_prio integer[];
    l_avail timestamptz[];
    l_ids uuid[];
    -- The limits of the groups met, and for those that share, this turn's clock and length.
    g_names text[];
    g_running integer[];
    g_starts integer[];
    g_per interval[];
    g_share text[];
    g_clock double precision[];
    g_span double precision[];
    -- Fair share: each range's key's pass and weight (NULL when its group does not share).
    l_vp double precision[];
    l_w double precision[];
    v_sharing boolean;
    l_key integer[];  -- each range's key (index in the k_ arrays)
    l_direct boolean[] := '{}'::boolean[];  -- each range's candidate is its first job
    v_direct boolean;  -- so are all of the chunk's (or their keys are full)
    k_id text[] := '{}'::text[];  -- each key as one text (length of the group, group, key)
    k_gi integer[] := '{}'::integer[];  -- each key's group (index in the g_ arrays)
    -- A sharing key's weight, its pass before this claim and at the start of this turn, and
    -- what it may still start this turn (batch_size for a key whose group does not share).
    k_share boolean[] := '{}'::boolean[];
    k_w double precision[] := '{}'::double precision[];
    k_vp0 double precision[] := '{}'::double precision[];
    k_vp double precision[] := '{}'::double precision[];
    k_quota integer[] := '{}'::integer[];
    -- The candidates' places in the claim order: their own, except in a sharing group, whose
    -- candidates of one priority take its places in the order of their virtual start times.
    c_sa timestamptz[] := '{}'::timestamptz[];
    c_sid uuid[] := '{}'::uuid[];
    v_locked boolean[];
    v_counts integer[];
    v_ranges integer;
    v_pos integer;
    v_end integer;
    v_need integer;
    v_first_new integer;
    t record;
    v_gi integer;
    v_ki integer;
    v_ahead bigint;
    v_room integer;
    v_at timestamptz;
    v_latest bigint;
    v_before bigint;
    v_drop_below bigint;
    v_ids uuid[] := '{}'::uuid[];  -- locked so far, to claim
    v_tids tid[] := '{}'::tid[];  -- and where their rows are (a locked row does not move)
    v_round_tids tid[];
    v_round uuid[];  -- locked by this round
    v_round_keys integer[];  -- and the key of each (0: no limit)
    v_passed uuid[];  -- candidates of this round it could not lock
    v_exclude uuid[] := '{}'::uuid[];  -- left out of later rounds' reads
    v_want integer;  -- still to lock
    v_w_sums double precision[];  -- per group, the weights of the keys in a later turn
    v_by_pass integer[];  -- the sharing ranges by group, priority and pass
    v_by_place integer[];  -- the same by group, priority and place in the claim order
    v_place_avail timestamptz[];  -- the ranges' own places, before the sharing ones move
    v_place_ids uuid[];
    -- Round robin without caps (docs/decisions/0012-round-robin-by-cursor.md): the groups
    -- claimed by their cursor, with their cursors; those met here (f_), with their cursors as
    -- this claim moves them; and each round's candidates of theirs, in turn order, with the
    -- places they take in the claim order.
    v_turn_groups text[];
    v_turn_keys text[];
    f_groups text[];
    f_cursor text[];
    f_moved boolean[];
    f_ids uuid[];
    f_prio integer[];
    f_avail timestamptz[];
    f_gi integer[];
    f_lk text[];
    f_tid tid[];  -- where each candidate's row was read (see step 4)
    f_pa timestamptz[];
    f_pid uuid[];
    f_base integer;
    v_skip uuid[];
    v_cur text;
    v_p integer;
    v_ceil integer;
    v_lo text;
    v_hi text;
    v_got integer;
    v_turn_start integer;
    v_t_ids uuid[];
    v_t_lks text[];
    v_t_avail timestamptz[];
    v_t_tids tid[];
    v_lim integer;
    v_read bigint;
    v_more boolean;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    -- The groups that share round_robin without caps need no lock, count or pass per key: a
    -- claim takes their keys in turn from the group's cursor (step 2b), and the skip scan
    -- below passes over their keys rather than visit each.
    SELECT pg_catalog.array_agg(l.limit_group), pg_catalog.array_agg(l.turn_key)
    INTO v_turn_groups, v_turn_keys
    FROM jobq_limits AS l
    WHERE l.share = 'round_robin' AND l.max_running IS NULL AND l.max_starts IS NULL;
    v_turn_groups := coalesce(v_turn_groups, '{}'::text[]);

    -- 2. Limited jobs: the ranges of jobq_jobs_limited_idx, one per (job_type, queue,
    --    limit_group, limit_key) with pending jobs, found by a skip scan whose every probe
    --    also returns the range's first job (each range is in claim order in the index).
    IF jobq__claim_limited.job_types IS NULL THEN
        WITH RECURSIVE ranges (
            job_type, queue, limit_group, lk, priority, available_at, id, turn
        ) AS (
            (
                SELECT
                    j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                    j.priority, j.available_at, j.id, j.limit_group = ANY (v_turn_groups)
                FROM jobq_jobs AS j
                WHERE j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.limit_group IS NOT NULL
                ORDER BY
                    j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                    j.priority DESC, j.available_at, j.id
                LIMIT 1
            )

            UNION ALL

            SELECT n.*, n.limit_group = ANY (v_turn_groups)
            FROM ranges AS r
            CROSS JOIN LATERAL (
                -- the next key; past a group claimed by its cursor, the next group
                (
                    SELECT
                        j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, '') AS lk,
                        j.priority, j.available_at, j.id
                    FROM jobq_jobs AS j
                    WHERE NOT r.turn
                      AND (j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''))
                          > (r.job_type, r.queue, r.limit_group, r.lk)
                      AND j.status = 'pending'
                      AND NOT j.scheduled
                      AND j.limit_group IS NOT NULL
                    ORDER BY
                        j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                        j.priority DESC, j.available_at, j.id
                    LIMIT 1
                )

                UNION ALL

                (
                    SELECT
                        j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, '') AS lk,
                        j.priority, j.available_at, j.id
                    FROM jobq_jobs AS j
                    WHERE r.turn
                      AND (j.job_type, j.queue, j.limit_group)
                          > (r.job_type, r.queue, r.limit_group)
                      AND j.status = 'pending'
                      AND NOT j.scheduled
                      AND j.limit_group IS NOT NULL
                    ORDER BY
                        j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                        j.priority DESC, j.available_at, j.id
                    LIMIT 1
                )
            ) AS n
        )

        SELECT
            pg_catalog.array_agg(r.job_type ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.queue ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.limit_group ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.lk ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.priority ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.available_at ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.id ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(DISTINCT r.limit_group) FILTER (WHERE r.turn)
        INTO l_types, l_queues, l_groups, l_keys, l_prio, l_avail, l_ids, f_groups
        FROM ranges AS r
        WHERE (jobq__claim_limited.queues IS NULL OR r.queue = ANY (jobq__claim_limited.queues))
          AND (jobq__claim_limited.paused_queues IS NULL
               OR r.queue <> ALL (jobq__claim_limited.paused_queues));
    ELSE
        WITH RECURSIVE ranges (
            job_type, queue, limit_group, lk, priority, available_at, id, turn
        ) AS (
            SELECT ty.job_type, f.*, f.limit_group = ANY (v_turn_groups)
            FROM (
                SELECT DISTINCT u.job_type
                FROM pg_catalog.unnest(jobq__claim_limited.job_types) AS u (job_type)
                WHERE u.job_type IS NOT NULL
            ) AS ty
            CROSS JOIN LATERAL (
                SELECT
                    j.queue, j.limit_group, coalesce(j.limit_key, '') AS lk,
                    j.priority, j.available_at, j.id
                FROM jobq_jobs AS j
                WHERE j.job_type = ty.job_type
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.limit_group IS NOT NULL
                ORDER BY
                    j.queue, j.limit_group, coalesce(j.limit_key, ''),
                    j.priority DESC, j.available_at, j.id
                LIMIT 1
            ) AS f

            UNION ALL

            SELECT r.job_type, n.*, n.limit_group = ANY (v_turn_groups)
            FROM ranges AS r
            CROSS JOIN LATERAL (
                -- the next key; past a group claimed by its cursor, the next group
                (
                    SELECT
                        j.queue, j.limit_group, coalesce(j.limit_key, '') AS lk,
                        j.priority, j.available_at, j.id
                    FROM jobq_jobs AS j
                    WHERE NOT r.turn
                      AND j.job_type = r.job_type
                      AND (j.queue, j.limit_group, coalesce(j.limit_key, ''))
                          > (r.queue, r.limit_group, r.lk)
                      AND j.status = 'pending'
                      AND NOT j.scheduled
                      AND j.limit_group IS NOT NULL
                    ORDER BY
                        j.queue, j.limit_group, coalesce(j.limit_key, ''),
                        j.priority DESC, j.available_at, j.id
                    LIMIT 1
                )

                UNION ALL

                (
                    SELECT
                        j.queue, j.limit_group, coalesce(j.limit_key, '') AS lk,
                        j.priority, j.available_at, j.id
                    FROM jobq_jobs AS j
                    WHERE r.turn
                      AND j.job_type = r.job_type
                      AND (j.queue, j.limit_group) > (r.queue, r.limit_group)
                      AND j.status = 'pending'
                      AND NOT j.scheduled
                      AND j.limit_group IS NOT NULL
                    ORDER BY
                        j.queue, j.limit_group, coalesce(j.limit_key, ''),
                        j.priority DESC, j.available_at, j.id
                    LIMIT 1
                )
            ) AS n
        )

        SELECT
            pg_catalog.array_agg(r.job_type ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.queue ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.limit_group ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.lk ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.priority ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.available_at ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(r.id ORDER BY r.priority DESC, r.available_at, r.id)
                FILTER (WHERE NOT r.turn),
            pg_catalog.array_agg(DISTINCT r.limit_group) FILTER (WHERE r.turn)
        INTO l_types, l_queues, l_groups, l_keys, l_prio, l_avail, l_ids, f_groups
        FROM ranges AS r
        WHERE (jobq__claim_limited.queues IS NULL OR r.queue = ANY (jobq__claim_limited.queues))
          AND (jobq__claim_limited.paused_queues IS NULL
               OR r.queue <> ALL (jobq__claim_limited.paused_queues));
    END IF;

    -- The groups claimed by their cursor met here, each from its cursor.
    f_groups := coalesce(f_groups, '{}'::text[]);
    f_cursor := '{}'::text[];
    FOR i IN 1 .. pg_catalog.cardinality(f_groups) LOOP
        f_cursor[i] := v_turn_keys[pg_catalog.array_position(v_turn_groups, f_groups[i])];
    END LOOP;
    f_moved := pg_catalog.array_fill(false, ARRAY[pg_catalog.cardinality(f_groups)]);

    -- The limits of the groups met, read once (none but those claimed by their cursor: none).
    IF l_groups IS NOT NULL THEN
        SELECT
            pg_catalog.array_agg(l.limit_group), pg_catalog.array_agg(l.max_running),
            pg_catalog.array_agg(l.max_starts), pg_catalog.array_agg(l.per),
            pg_catalog.array_agg(l.share)
        INTO g_names, g_running, g_starts, g_per, g_share
        FROM jobq_limits AS l
        WHERE l.limit_group = ANY (l_groups);
    END IF;
    v_sharing := coalesce('round_robin' = ANY (g_share) OR 'weighted' = ANY (g_share), false);

    IF v_sharing THEN
        -- Fair share (docs/decisions/0011-fair-share-by-pass.md). Each range of a sharing
        -- group gets its key's weight (1 under round_robin) and pass: the stored one, but at
        -- least one start (1 / weight) before the lowest stored pass among the group's keys
        -- with work here, so that a key back from idle gets a start within one turn and no
        -- credit for the time it had none. Read without the keys' locks: it orders the claim;
        -- the key's row is written under its lock with the starts (step 5).
        SELECT pg_catalog.array_agg(x.w ORDER BY x.i), pg_catalog.array_agg(x.vp ORDER BY x.i)
        INTO l_w, l_vp
        FROM (
            SELECT
                r.i, r.w,
                CASE WHEN r.share THEN greatest(
                    r.pass,
                    coalesce(pg_catalog.min(r.pass) OVER (PARTITION BY r.g), 0) - 1 / r.w
                ) END AS vp
            FROM (
                SELECT
                    u.i, u.g, coalesce(g_share[pg_catalog.array_position(g_names, u.g)], 'fifo')
                    <> 'fifo' AS share,
                    CASE WHEN g_share[pg_catalog.array_position(g_names, u.g)] = 'weighted'
                        THEN coalesce(k.weight, 1) ELSE 1 END::double precision AS w,
                    k.pass
                FROM ROWS FROM (pg_catalog.unnest(l_groups), pg_catalog.unnest(l_keys))
                    WITH ORDINALITY AS u (g, lk, i)
                LEFT JOIN jobq_limit_keys AS k
                    ON coalesce(g_share[pg_catalog.array_position(g_names, u.g)], 'fifo')
                       <> 'fifo'
                       AND k.limit_group = u.g AND k.limit_key = u.lk
            ) AS r
        ) AS x;

        -- Each sharing range takes the place in the claim order that the ranges of its group
        -- and priority have, in the order of their passes: the lowest pass is visited first.
        -- Both orders sort by group and priority first, so the k-th range by pass takes the
        -- k-th place (array subscripts: a join of the two would be planned for few rows).
        SELECT
            pg_catalog.array_agg(a.i::integer ORDER BY a.g, a.prio, a.vp, a.avail, a.id),
            pg_catalog.array_agg(a.i::integer ORDER BY a.g, a.prio, a.avail, a.id)
        INTO v_by_pass, v_by_place
        FROM ROWS FROM (
            pg_catalog.unnest(l_groups), pg_catalog.unnest(l_prio),
            pg_catalog.unnest(l_avail), pg_catalog.unnest(l_ids), pg_catalog.unnest(l_vp)
        ) WITH ORDINALITY AS a (g, prio, avail, id, vp, i)
        WHERE a.vp IS NOT NULL;
        v_place_avail := l_avail;
        v_place_ids := l_ids;
        FOR x IN 1 .. coalesce(pg_catalog.cardinality(v_by_pass), 0) LOOP
            l_avail[v_by_pass[x]] := v_place_avail[v_by_place[x]];
            l_ids[v_by_pass[x]] := v_place_ids[v_by_place[x]];
        END LOOP;

        -- The first turn of each sharing group: it starts at the lowest pass of the keys whose
        -- first job has the group's top priority (a higher priority goes first, whatever the
        -- passes) and lasts long enough for the heaviest of them to start once, or for the
        -- batch to be shared out over their weights, whichever is longer (few keys with much
        -- work: few turns).
        SELECT
            pg_catalog.array_agg(tu.clock ORDER BY gi.gi),
            pg_catalog.array_agg(tu.span ORDER BY gi.gi)
        INTO g_clock, g_span
        FROM pg_catalog.generate_subscripts(g_names, 1) AS gi (gi)
        LEFT JOIN LATERAL (
            SELECT
                pg_catalog.min(d.vp) AS clock,
                greatest(
                    1 / pg_catalog.max(d.w),
                    jobq__claim_limited.batch_size / pg_catalog.sum(d.w)
                ) AS span
            FROM (
                SELECT DISTINCT ON (a.lk) a.lk, a.vp, a.w
                FROM (
                    SELECT b.*, pg_catalog.max(b.prio) OVER () AS top
                    FROM ROWS FROM (
                        pg_catalog.unnest(l_groups), pg_catalog.unnest(l_keys),
                        pg_catalog.unnest(l_vp), pg_catalog.unnest(l_w), pg_catalog.unnest(l_prio)
                    ) AS b (g, lk, vp, w, prio)
                    WHERE b.g = g_names[gi.gi] AND b.vp IS NOT NULL
                ) AS a
                WHERE a.prio = a.top
                ORDER BY a.lk
            ) AS d
        ) AS tu ON TRUE;
    END IF;

    -- The ranges in the claim order of their first job (the skip scan returns them so; a
    -- sharing group's ranges have taken other places since), each with the index of its key
    -- in the k_ arrays (a key may have ranges in several job types and queues).
    IF v_sharing THEN
        SELECT
            pg_catalog.array_agg(r.job_type ORDER BY r.priority DESC, r.available_at, r.id),
            pg_catalog.array_agg(r.queue ORDER BY r.priority DESC, r.available_at, r.id),
            pg_catalog.array_agg(r.limit_group ORDER BY r.priority DESC, r.available_at, r.id),
            pg_catalog.array_agg(r.lk ORDER BY r.priority DESC, r.available_at, r.id),
            pg_catalog.array_agg(r.priority ORDER BY r.priority DESC, r.available_at, r.id),
            pg_catalog.array_agg(r.available_at ORDER BY r.priority DESC, r.available_at, r.id),
            pg_catalog.array_agg(r.id ORDER BY r.priority DESC, r.available_at, r.id),
            pg_catalog.array_agg(r.vp ORDER BY r.priority DESC, r.available_at, r.id),
            pg_catalog.array_agg(r.w ORDER BY r.priority DESC, r.available_at, r.id)
        INTO l_types, l_queues, l_groups, l_keys, l_prio, l_avail, l_ids, l_vp, l_w
        FROM ROWS FROM (
            pg_catalog.unnest(l_types), pg_catalog.unnest(l_queues), pg_catalog.unnest(l_groups),
            pg_catalog.unnest(l_keys), pg_catalog.unnest(l_prio), pg_catalog.unnest(l_avail),
            pg_catalog.unnest(l_ids), pg_catalog.unnest(l_vp), pg_catalog.unnest(l_w)
        ) AS r (job_type, queue, limit_group, lk, priority, available_at, id, vp, w);
    END IF;
    v_ranges := coalesce(pg_catalog.cardinality(l_ids), 0);
    l_key := pg_catalog.array_fill(0, ARRAY[v_ranges]);

    -- Rounds: each reads the candidates (1 and 3) and locks them (4); another round runs only
    -- when some were passed over (held by other transactions), reading past them, so that a
    -- claim never comes back short while jobs it could claim are waiting unlocked.
    v_want := jobq__claim_limited.batch_size;
    LOOP
        c_ids := '{}'::uuid[];
        c_prio := '{}'::integer[];
        c_avail := '{}'::timestamptz[];
        c_key := '{}'::integer[];
        -- 1. Jobs without a limit: the first 2 x v_want of the ranges of jobq_jobs_claim_idx
        --    that jobq_dequeue found (by the hashes of their names, whose rows' names are
        --    compared with the filters), merged in claim order (extra ones stand in for rows
        --    that concurrent claims hold), leaving out the rows of v_exclude.
        IF range_type_hashes IS NOT NULL THEN
            SELECT
                pg_catalog.array_agg(u.id ORDER BY u.priority DESC, u.available_at, u.id),
                pg_catalog.array_agg(u.priority ORDER BY u.priority DESC, u.available_at, u.id),
                pg_catalog.array_agg(u.available_at ORDER BY u.priority DESC, u.available_at, u.id),
                pg_catalog.array_agg(0)
            INTO c_ids, c_prio, c_avail, c_key
            FROM (
                SELECT r.id, r.priority, r.available_at
                FROM ROWS FROM (pg_catalog.unnest(range_type_hashes),
                                pg_catalog.unnest(range_queue_hashes)) AS p (ht, hq)
                CROSS JOIN LATERAL (
                    SELECT j.id, j.priority, j.available_at
                    FROM jobq_jobs AS j
                    WHERE pg_catalog.hashtextextended(j.job_type, 0) = p.ht
                      AND pg_catalog.hashtextextended(j.queue, 0) = p.hq
                      AND (jobq__claim_limited.job_types IS NULL
                           OR j.job_type = ANY (jobq__claim_limited.job_types))
                      AND (jobq__claim_limited.queues IS NULL
                           OR j.queue = ANY (jobq__claim_limited.queues))
                      AND j.status = 'pending'
                      AND NOT j.scheduled
                      AND j.limit_group IS NULL
                      AND j.available_at <= v_now
                      AND j.id <> ALL (v_exclude)
                    ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
                    LIMIT 2 * v_want
                ) AS r
                ORDER BY r.priority DESC, r.available_at ASC, r.id ASC
                LIMIT 2 * v_want
            ) AS u;
            c_ids := coalesce(c_ids, '{}'::uuid[]);
            c_prio := coalesce(c_prio, '{}'::integer[]);
            c_avail := coalesce(c_avail, '{}'::timestamptz[]);
            c_key := coalesce(c_key, '{}'::integer[]);
        END IF;
        c_sa := c_avail;
        c_sid := c_ids;

        -- 2b. Round robin without caps: each such group gives up to v_want candidates, its
        --     keys in turn from its cursor, highest priority first. A turn takes each side of
        --     the cursor in turn: the keys below it (a NULL cursor: the lowest key), then
        --     (wrapping round) those above, each with its first job the claim may take; the
        --     next turn begins below the last key of this one. A side is first read in the
        --     order of jobq_jobs_limited_turn_idx, as many entries as candidates are missing
        --     (one descent of the index: keys with one job each, the common case, cost an
        --     entry each); when that read met a key twice (a key with a backlog) and stopped
        --     at its LIMIT, the keys below the last one it met are found by one probe per key,
        --     which steps over backlogs. No key is locked or counted: without a cap, a
        --     concurrent claim of the same key can do no harm.
        f_ids := '{}'::uuid[];
        f_tid := '{}'::tid[];
        f_prio := '{}'::integer[];
        f_avail := '{}'::timestamptz[];
        f_gi := '{}'::integer[];
        f_lk := '{}'::text[];
        FOR gi IN 1 .. pg_catalog.cardinality(f_groups) LOOP
            v_cur := f_cursor[gi];
            v_p := NULL;
            v_ceil := 2147483647;
            v_got := 0;
            WHILE v_got < v_want LOOP
                IF v_p IS NULL THEN
                    -- the group's highest priority at or below v_ceil among the jobs the
                    -- claim may take
                    SELECT j.priority INTO v_p
                    FROM jobq_jobs AS j
                    WHERE j.limit_group = f_groups[gi]
                      AND j.priority <= v_ceil
                      AND j.status = 'pending'
                      AND NOT j.scheduled
                      AND j.limit_group IS NOT NULL
                      AND j.available_at <= v_now
                      AND (jobq__claim_limited.job_types IS NULL
                           OR j.job_type = ANY (jobq__claim_limited.job_types))
                      AND (jobq__claim_limited.queues IS NULL
                           OR j.queue = ANY (jobq__claim_limited.queues))
                      AND (jobq__claim_limited.paused_queues IS NULL
                           OR j.queue <> ALL (jobq__claim_limited.paused_queues))
                      AND j.id <> ALL (v_exclude)
                      AND j.id <> ALL (f_ids)
                    ORDER BY j.priority DESC
                    LIMIT 1;
                    EXIT WHEN v_p IS NULL;
                END IF;
                v_turn_start := v_got;
                -- The turn's keys below the cursor, in descending key order (a NULL cursor,
                -- on a group's first claim: its lowest key), then, wrapping round, those from
                -- the last key down to the cursor's. Downwards: the dead index entries of the
                -- jobs started lie above the cursor, out of the way of the probes that read
                -- the group upwards from its lowest key (the top priority above, the skip
                -- scan, jobq_dequeue's look for limited jobs). A backward scan of
                -- jobq_jobs_limited_turn_idx meets each key's first job first.
                FOR part IN 1 .. 2 LOOP
                    IF part = 1 THEN
                        v_hi := v_cur;
                        v_lo := NULL;
                    ELSE
                        EXIT WHEN v_got >= v_want;
                        v_hi := NULL;
                        v_lo := v_cur;
                    END IF;
                    v_skip := pg_catalog.array_cat(v_exclude, f_ids);
                    v_more := false;
                    IF part = 1 AND v_cur IS NULL THEN
                        -- The lowest key with a job the claim may take (one probe upwards:
                        -- nothing has been served yet, so no trail lies there), so that the
                        -- keys start in key order from the first, and its first job (a
                        -- backward probe, as below).
                        SELECT
                            ARRAY[coalesce(j.limit_key, '')], ARRAY[j.id], ARRAY[j.available_at],
                            ARRAY[j.ctid]
                        INTO v_t_lks, v_t_ids, v_t_avail, v_t_tids
                        FROM jobq_jobs AS j
                        WHERE j.limit_group = f_groups[gi]
                          AND j.priority = v_p
                          AND coalesce(j.limit_key, '') = (
                              SELECT coalesce(k.limit_key, '')
                              FROM jobq_jobs AS k
                              WHERE k.limit_group = f_groups[gi]
                                AND k.priority = v_p
                                AND k.status = 'pending'
                                AND NOT k.scheduled
                                AND k.limit_group IS NOT NULL
                                AND k.available_at <= v_now
                                AND (jobq__claim_limited.job_types IS NULL
                                     OR k.job_type = ANY (jobq__claim_limited.job_types))
                                AND (jobq__claim_limited.queues IS NULL
                                     OR k.queue = ANY (jobq__claim_limited.queues))
                                AND (jobq__claim_limited.paused_queues IS NULL
                                     OR k.queue <> ALL (jobq__claim_limited.paused_queues))
                                AND k.id <> ALL (v_skip)
                              ORDER BY coalesce(k.limit_key, '')
                              LIMIT 1
                          )
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NOT NULL
                          AND j.available_at <= v_now
                          AND (jobq__claim_limited.job_types IS NULL
                               OR j.job_type = ANY (jobq__claim_limited.job_types))
                          AND (jobq__claim_limited.queues IS NULL
                               OR j.queue = ANY (jobq__claim_limited.queues))
                          AND (jobq__claim_limited.paused_queues IS NULL
                               OR j.queue <> ALL (jobq__claim_limited.paused_queues))
                          AND j.id <> ALL (v_skip)
                        ORDER BY coalesce(j.limit_key, '') DESC, j.available_at, j.id
                        LIMIT 1;
                    ELSE
                        -- The side read in index order (backwards: each key's first job
                        -- first), v_lim entries at most: below v_hi, or from the last key
                        -- down to v_lo (two branches, each bound an index condition); the
                        -- first job of each key met.
                        v_lim := v_want - v_got;
                        SELECT
                            pg_catalog.array_agg(d.id ORDER BY d.lk DESC) FILTER (WHERE d.first),
                            pg_catalog.array_agg(d.lk ORDER BY d.lk DESC) FILTER (WHERE d.first),
                            pg_catalog.array_agg(d.available_at ORDER BY d.lk DESC)
                                FILTER (WHERE d.first),
                            pg_catalog.array_agg(d.tid ORDER BY d.lk DESC) FILTER (WHERE d.first),
                            pg_catalog.count(*)
                        INTO v_t_ids, v_t_lks, v_t_avail, v_t_tids, v_read
                        FROM (
                            SELECT
                                s.lk, s.id, s.available_at, s.tid,
                                s.lk IS DISTINCT FROM pg_catalog.lag(s.lk) OVER (
                                    ORDER BY s.lk DESC, s.available_at, s.id
                                ) AS first
                            FROM (
                                (
                                    SELECT
                                        coalesce(j.limit_key, '') AS lk, j.id, j.available_at,
                                        j.ctid AS tid
                                    FROM jobq_jobs AS j
                                    WHERE v_hi IS NOT NULL
                                      AND j.limit_group = f_groups[gi]
                                      AND j.priority = v_p
                                      AND coalesce(j.limit_key, '') < v_hi
                                      AND j.status = 'pending'
                                      AND NOT j.scheduled
                                      AND j.limit_group IS NOT NULL
                                      AND j.available_at <= v_now
                                      AND (jobq__claim_limited.job_types IS NULL
                                           OR j.job_type = ANY (jobq__claim_limited.job_types))
                                      AND (jobq__claim_limited.queues IS NULL
                                           OR j.queue = ANY (jobq__claim_limited.queues))
                                      AND (jobq__claim_limited.paused_queues IS NULL
                                           OR j.queue <> ALL (jobq__claim_limited.paused_queues))
                                      AND j.id <> ALL (v_skip)
                                    ORDER BY coalesce(j.limit_key, '') DESC, j.available_at, j.id
                                    LIMIT v_lim
                                )

                                UNION ALL

                                (
                                    SELECT
                                        coalesce(j.limit_key, '') AS lk, j.id, j.available_at,
                                        j.ctid AS tid
                                    FROM jobq_jobs AS j
                                    WHERE v_hi IS NULL
                                      AND j.limit_group = f_groups[gi]
                                      AND j.priority = v_p
                                      AND coalesce(j.limit_key, '') >= coalesce(v_lo, '')
                                      AND j.status = 'pending'
                                      AND NOT j.scheduled
                                      AND j.limit_group IS NOT NULL
                                      AND j.available_at <= v_now
                                      AND (jobq__claim_limited.job_types IS NULL
                                           OR j.job_type = ANY (jobq__claim_limited.job_types))
                                      AND (jobq__claim_limited.queues IS NULL
                                           OR j.queue = ANY (jobq__claim_limited.queues))
                                      AND (jobq__claim_limited.paused_queues IS NULL
                                           OR j.queue <> ALL (jobq__claim_limited.paused_queues))
                                      AND j.id <> ALL (v_skip)
                                    ORDER BY coalesce(j.limit_key, '') DESC, j.available_at, j.id
                                    LIMIT v_lim
                                )
                            ) AS s
                        ) AS d;
                        -- It stopped at its LIMIT having met a key twice: keys may lie below
                        -- the last one it met, behind backlogs (probed below, stage 2).
                        v_more := v_read = v_lim AND pg_catalog.cardinality(v_t_ids) < v_read;
                    END IF;
                    CONTINUE WHEN v_t_ids IS NULL;
                    FOR stage IN 1 .. 2 LOOP
                        IF stage = 2 THEN
                            EXIT WHEN NOT v_more;
                            v_hi := v_cur;
                            v_skip := pg_catalog.array_cat(v_exclude, f_ids);
                            WITH RECURSIVE turn (lk, id, available_at, tid, n) AS (
                                SELECT f.lk, f.id, f.available_at, f.tid, 1
                                FROM (
                                    -- the first key below v_hi
                                    SELECT
                                        coalesce(j.limit_key, '') AS lk, j.id, j.available_at,
                                        j.ctid AS tid
                                    FROM jobq_jobs AS j
                                    WHERE j.limit_group = f_groups[gi]
                                      AND j.priority = v_p
                                      AND coalesce(j.limit_key, '') < v_hi
                                      AND j.status = 'pending'
                                      AND NOT j.scheduled
                                      AND j.limit_group IS NOT NULL
                                      AND j.available_at <= v_now
                                      AND (jobq__claim_limited.job_types IS NULL
                                           OR j.job_type = ANY (jobq__claim_limited.job_types))
                                      AND (jobq__claim_limited.queues IS NULL
                                           OR j.queue = ANY (jobq__claim_limited.queues))
                                      AND (jobq__claim_limited.paused_queues IS NULL
                                           OR j.queue <> ALL (jobq__claim_limited.paused_queues))
                                      AND j.id <> ALL (v_skip)
                                    ORDER BY coalesce(j.limit_key, '') DESC, j.available_at, j.id
                                    LIMIT 1
                                ) AS f
                                WHERE v_lo IS NULL OR f.lk >= v_lo

                                UNION ALL

                                SELECT x.*
                                FROM turn AS r
                                CROSS JOIN LATERAL (
                                    SELECT
                                        coalesce(j.limit_key, '') AS lk, j.id, j.available_at,
                                        j.ctid AS tid, r.n + 1
                                    FROM jobq_jobs AS j
                                    WHERE j.limit_group = f_groups[gi]
                                      AND j.priority = v_p
                                      AND coalesce(j.limit_key, '') < r.lk
                                      AND j.status = 'pending'
                                      AND NOT j.scheduled
                                      AND j.limit_group IS NOT NULL
                                      AND j.available_at <= v_now
                                      AND (jobq__claim_limited.job_types IS NULL
                                           OR j.job_type = ANY (jobq__claim_limited.job_types))
                                      AND (jobq__claim_limited.queues IS NULL
                                           OR j.queue = ANY (jobq__claim_limited.queues))
                                      AND (jobq__claim_limited.paused_queues IS NULL
                                           OR j.queue <> ALL (jobq__claim_limited.paused_queues))
                                      AND j.id <> ALL (v_skip)
                                    ORDER BY coalesce(j.limit_key, '') DESC, j.available_at, j.id
                                    LIMIT 1
                                ) AS x
                                WHERE r.n < v_want - v_got AND (v_lo IS NULL OR x.lk >= v_lo)
                            )

                            SELECT
                                pg_catalog.array_agg(tu.id ORDER BY tu.n),
                                pg_catalog.array_agg(tu.lk ORDER BY tu.n),
                                pg_catalog.array_agg(tu.available_at ORDER BY tu.n),
                                pg_catalog.array_agg(tu.tid ORDER BY tu.n)
                            INTO v_t_ids, v_t_lks, v_t_avail, v_t_tids
                            FROM turn AS tu;
                            EXIT WHEN v_t_ids IS NULL;
                        END IF;
                        f_ids := pg_catalog.array_cat(f_ids, v_t_ids);
                        f_lk := pg_catalog.array_cat(f_lk, v_t_lks);
                        f_tid := pg_catalog.array_cat(f_tid, v_t_tids);
                        f_avail := pg_catalog.array_cat(f_avail, v_t_avail);
                        f_prio := pg_catalog.array_cat(
                            f_prio,
                            pg_catalog.array_fill(v_p, ARRAY[pg_catalog.cardinality(v_t_ids)])
                        );
                        f_gi := pg_catalog.array_cat(
                            f_gi, pg_catalog.array_fill(gi, ARRAY[pg_catalog.cardinality(v_t_ids)])
                        );
                        v_got := v_got + pg_catalog.cardinality(v_t_ids);
                        v_cur := v_t_lks[pg_catalog.cardinality(v_t_lks)];
                    END LOOP;
                END LOOP;
                IF v_got = v_turn_start THEN
                    -- no job of this priority left to take: the next priority down
                    EXIT WHEN v_p = -2147483648;
                    v_ceil := v_p - 1;
                    v_p := NULL;
                END IF;
            END LOOP;
        END LOOP;
        f_base := pg_catalog.cardinality(c_ids);
        IF pg_catalog.cardinality(f_ids) > 0 THEN
            -- Their places in the claim order: those of their own jobs, of each group and
            -- priority, taken in turn order (so a batch cut short keeps the turn's first keys).
            SELECT
                pg_catalog.array_agg(
                    f.available_at ORDER BY f.gi, f.prio DESC, f.available_at, f.id
                ),
                pg_catalog.array_agg(f.id ORDER BY f.gi, f.prio DESC, f.available_at, f.id)
            INTO f_pa, f_pid
            FROM ROWS FROM (
                pg_catalog.unnest(f_ids), pg_catalog.unnest(f_prio), pg_catalog.unnest(f_avail),
                pg_catalog.unnest(f_gi)
            ) AS f (id, prio, available_at, gi);
            c_ids := pg_catalog.array_cat(c_ids, f_ids);
            c_prio := pg_catalog.array_cat(c_prio, f_prio);
            c_avail := pg_catalog.array_cat(c_avail, f_avail);
            c_key := pg_catalog.array_cat(
                c_key, pg_catalog.array_fill(0, ARRAY[pg_catalog.cardinality(f_ids)])
            );
            c_sa := pg_catalog.array_cat(c_sa, f_pa);
            c_sid := pg_catalog.array_cat(c_sid, f_pid);
        END IF;

        -- 3. The ranges are visited in that order, a chunk at a time: as many ranges as candidates
        --    are still missing (each key with room gives at least one). For the new keys of a
        --    chunk: their locks (one statement), their processing jobs (one statement, after the
        --    locks: its snapshot sees every claim of those keys that committed before), their rate
        --    windows; then the chunk's candidates (one statement): each range's first jobs, as
        --    many as its key may start. The visit stops when v_want candidates that the claim can
        --    take (a key's first ones, up to its room) come before the next range's first job, so
        --    that keys this claim could not use are not locked.
        v_pos := 1;
        v_need := v_want;
        WHILE v_pos <= v_ranges LOOP
            IF pg_catalog.cardinality(c_ids) >= v_want THEN
                -- Only candidates the claim can take count: a key's beyond its room do not.
                SELECT pg_catalog.count(*) INTO v_ahead
                FROM (
                    SELECT
                        a.*,
                        pg_catalog.count(*) OVER (
                            PARTITION BY a.k ORDER BY a.priority DESC, a.available_at, a.id
                        ) AS nth
                    FROM ROWS FROM (pg_catalog.unnest(c_prio), pg_catalog.unnest(c_avail),
                                    pg_catalog.unnest(c_ids), pg_catalog.unnest(c_key),
                                    pg_catalog.unnest(c_sa), pg_catalog.unnest(c_sid))
                        AS a (priority, available_at, id, k, sa, sid)
                ) AS a
                WHERE (a.k = 0 OR a.nth <= least(k_room[a.k], k_quota[a.k]))
                  AND (a.priority > l_prio[v_pos]
                       OR (a.priority = l_prio[v_pos]
                           AND (a.sa, a.sid) < (l_avail[v_pos], l_ids[v_pos])));
                EXIT WHEN v_ahead >= v_want;
                v_need := v_want - v_ahead::integer;
            END IF;
            v_end := least(v_ranges, v_pos + v_need - 1);

            -- the chunk's keys: known ones by their index, new ones appended (room unknown)
            v_first_new := pg_catalog.cardinality(k_group) + 1;
            FOR i IN v_pos .. v_end LOOP
                v_ki := pg_catalog.array_position(
                    k_id, pg_catalog.length(l_groups[i])::text || ':' || l_groups[i] || l_keys[i]
                );
                IF v_ki IS NULL THEN
                    v_gi := pg_catalog.array_position(g_names, l_groups[i]);
                    k_id := pg_catalog.array_append(
                        k_id,
                        pg_catalog.length(l_groups[i])::text || ':' || l_groups[i] || l_keys[i]
                    );
                    k_group := pg_catalog.array_append(k_group, l_groups[i]);
                    k_key := pg_catalog.array_append(k_key, l_keys[i]);
                    k_limited := pg_catalog.array_append(k_limited, v_gi IS NOT NULL);
                    k_room := pg_catalog.array_append(k_room, jobq__claim_limited.batch_size);
                    k_n := pg_catalog.array_append(k_n, 0);
                    k_rate := pg_catalog.array_append(k_rate, g_starts[v_gi] IS NOT NULL);
                    k_at := pg_catalog.array_append(k_at, NULL::timestamptz);
                    k_latest := pg_catalog.array_append(k_latest, 0::bigint);
                    k_drop_below := pg_catalog.array_append(k_drop_below, NULL::bigint);
                    k_gi := pg_catalog.array_append(k_gi, v_gi);
                    k_share := pg_catalog.array_append(k_share, l_vp[i] IS NOT NULL);
                    k_w := pg_catalog.array_append(k_w, coalesce(l_w[i], 1));
                    k_vp0 := pg_catalog.array_append(k_vp0, l_vp[i]);
                    k_vp := pg_catalog.array_append(k_vp, l_vp[i]);
                    -- A sharing key's starts this turn: those whose virtual start time
                    -- (pass, then 1 / weight apart) falls within the turn.
                    k_quota := pg_catalog.array_append(k_quota, CASE
                        WHEN l_vp[i] IS NULL THEN jobq__claim_limited.batch_size
                        ELSE least(jobq__claim_limited.batch_size, greatest(0, pg_catalog.ceil(
                            (g_clock[v_gi] + g_span[v_gi] - l_vp[i]) * l_w[i] - 1e-9
                        )))::integer
                    END);
                    v_ki := pg_catalog.cardinality(k_group);
                END IF;
                l_key[i] := v_ki;
            END LOOP;

            IF v_first_new <= pg_catalog.cardinality(k_group) THEN
                -- Locks of the new limited keys: never waited for; one held by another
                -- transaction (a claim of that key not yet committed) leaves the key no room.
                SELECT pg_catalog.array_agg(
                    NOT k_limited[u.k] OR pg_catalog.pg_try_advisory_xact_lock(
                        pg_catalog.hashtextextended(
                            pg_catalog.format('jobq limit %L %L %L', pg_catalog.current_schema(),
                                              k_group[u.k], k_key[u.k]),
                            (SELECT s.lock_seed FROM jobq_settings AS s WHERE s.singleton)
                        )
                    ) ORDER BY u.k
                )
                INTO v_locked
                FROM pg_catalog.generate_series(v_first_new, pg_catalog.cardinality(k_group))
                    AS u (k);

                -- Their processing jobs, counted after the locks were taken.
                SELECT pg_catalog.array_agg(c.n ORDER BY u.k)
                INTO v_counts
                FROM pg_catalog.generate_series(v_first_new, pg_catalog.cardinality(k_group))
                    AS u (k)
                CROSS JOIN LATERAL (
                    SELECT pg_catalog.count(*)::integer AS n
                    FROM jobq_jobs AS j
                    WHERE k_limited[u.k]
                      AND g_running[k_gi[u.k]] IS NOT NULL
                      AND j.limit_group = k_group[u.k]
                      AND coalesce(j.limit_key, '') = k_key[u.k]
                      AND j.status = 'processing'
                ) AS c;

                FOR i IN v_first_new .. pg_catalog.cardinality(k_group) LOOP
                    CONTINUE WHEN NOT k_limited[i];
                    IF NOT v_locked[i - v_first_new + 1] THEN
                        k_room[i] := 0;  -- another transaction is claiming this key
                        CONTINUE;
                    END IF;
                    v_gi := k_gi[i];
                    v_room := jobq__claim_limited.batch_size;
                    IF g_running[v_gi] IS NOT NULL THEN
                        v_room := least(v_room, g_running[v_gi] - v_counts[i - v_first_new + 1]);
                    END IF;
                    IF g_starts[v_gi] IS NOT NULL THEN
                        v_at := NULL;
                        v_latest := NULL;
                        v_drop_below := NULL;
                        SELECT k.last_start_at INTO v_at
                        FROM jobq_limit_keys AS k
                        WHERE k.limit_group = k_group[i] AND k.limit_key = k_key[i];
                        v_at := greatest(pg_catalog.clock_timestamp(), v_at);
                        SELECT s.total INTO v_latest
                        FROM jobq_limit_starts AS s
                        WHERE s.limit_group = k_group[i] AND s.limit_key = k_key[i]
                        ORDER BY s.total DESC
                        LIMIT 1;
                        IF v_latest IS NOT NULL THEN
                            -- The last row at or before the window's start: starts since are in it.
                            SELECT s.total INTO v_before
                            FROM jobq_limit_starts AS s
                            WHERE s.limit_group = k_group[i]
                              AND s.limit_key = k_key[i]
                              AND s.started_at <= v_at - g_per[v_gi]
                            ORDER BY s.started_at DESC, s.total DESC
                            LIMIT 1;
                            v_drop_below := v_before;
                            IF v_before IS NULL THEN
                                -- Every recorded start is in the window.
                                SELECT s.total - s.started INTO v_before
                                FROM jobq_limit_starts AS s
                                WHERE s.limit_group = k_group[i] AND s.limit_key = k_key[i]
                                ORDER BY s.total
                                LIMIT 1;
                            END IF;
                            v_room := least(
                                v_room, g_starts[v_gi] - (v_latest - v_before)::integer
                            );
                        ELSE
                            v_room := least(v_room, g_starts[v_gi]);  -- no start recorded yet
                        END IF;
                        k_at[i] := v_at;
                        k_latest[i] := coalesce(v_latest, 0);
                        k_drop_below[i] := v_drop_below;
                    END IF;
                    k_room[i] := greatest(v_room, 0);
                END LOOP;
            END IF;

            -- The chunk's candidates: each range's first jobs, as many as its key may start.
            -- A key that may start one has it already (l_direct): the first job the skip scan
            -- read, in the first round (whose reads pass over no row), when it is due and keeps
            -- its own place; the lock below checks that it is still pending, and one claimed
            -- since is passed over (another round reads past it). When every range of the
            -- chunk is so, or full, no query is needed.
            v_direct := true;
            FOR i IN v_pos .. v_end LOOP
                v_room := least(k_room[l_key[i]], k_quota[l_key[i]], v_want);
                l_direct[i] := v_room = 1
                    AND pg_catalog.cardinality(v_exclude) = 0
                    AND l_vp[i] IS NULL
                    AND l_avail[i] <= v_now;
                v_direct := v_direct AND (l_direct[i] OR v_room <= 0);
            END LOOP;
            IF v_direct THEN
                FOR i IN v_pos .. v_end LOOP
                    CONTINUE WHEN NOT l_direct[i];
                    c_ids := pg_catalog.array_append(c_ids, l_ids[i]);
                    c_prio := pg_catalog.array_append(c_prio, l_prio[i]);
                    c_avail := pg_catalog.array_append(c_avail, l_avail[i]);
                    c_key := pg_catalog.array_append(c_key, l_key[i]);
                END LOOP;
            ELSE
                SELECT
                    pg_catalog.array_cat(c_ids, pg_catalog.array_agg(f.id)),
                    pg_catalog.array_cat(c_prio, pg_catalog.array_agg(f.priority)),
                    pg_catalog.array_cat(c_avail, pg_catalog.array_agg(f.available_at)),
                    pg_catalog.array_cat(c_key, pg_catalog.array_agg(f.k))
                INTO c_ids, c_prio, c_avail, c_key
                FROM pg_catalog.generate_series(v_pos, v_end) AS r (i)
                CROSS JOIN LATERAL (
                    SELECT
                        l_ids[r.i] AS id, l_prio[r.i] AS priority,
                        l_avail[r.i] AS available_at, l_key[r.i] AS k
                    WHERE l_direct[r.i]

                    UNION ALL

                    (
                        SELECT j.id, j.priority, j.available_at, l_key[r.i] AS k
                        FROM jobq_jobs AS j
                        WHERE least(k_room[l_key[r.i]], k_quota[l_key[r.i]]) > 0
                          AND NOT l_direct[r.i]
                          AND j.job_type = l_types[r.i]
                          AND j.queue = l_queues[r.i]
                          AND j.limit_group = l_groups[r.i]
                          AND coalesce(j.limit_key, '') = l_keys[r.i]
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NOT NULL
                          AND j.available_at <= v_now
                          AND j.id <> ALL (v_exclude)
                        ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
                        LIMIT greatest(
                            0, least(k_room[l_key[r.i]], k_quota[l_key[r.i]], v_want)
                        )
                    )
                ) AS f;
            END IF;
            c_ids := coalesce(c_ids, '{}'::uuid[]);
            c_prio := coalesce(c_prio, '{}'::integer[]);
            c_avail := coalesce(c_avail, '{}'::timestamptz[]);
            c_key := coalesce(c_key, '{}'::integer[]);
            IF v_sharing THEN
                -- A sharing group's candidates of one priority take the group's places in the
                -- claim order by their virtual start times: a key's n-th candidate starts at
                -- its pass + (n - 1) / weight.
                SELECT
                    pg_catalog.array_agg(b.i::integer ORDER BY b.g, b.prio, b.vt, b.avail, b.id),
                    pg_catalog.array_agg(b.i::integer ORDER BY b.g, b.prio, b.avail, b.id)
                INTO v_by_pass, v_by_place
                FROM (
                    SELECT
                        c.i, k_gi[c.k] AS g, c.prio, c.avail, c.id,
                        k_vp[c.k] + (pg_catalog.count(*) OVER (
                            PARTITION BY c.k ORDER BY c.prio DESC, c.avail, c.id
                        ) - 1) / k_w[c.k] AS vt
                    FROM ROWS FROM (
                        pg_catalog.unnest(c_ids), pg_catalog.unnest(c_prio),
                        pg_catalog.unnest(c_avail), pg_catalog.unnest(c_key)
                    ) WITH ORDINALITY AS c (id, prio, avail, k, i)
                    WHERE c.k > 0 AND k_share[c.k]
                ) AS b;
                c_sa := c_avail;
                c_sid := c_ids;
                FOR x IN 1 .. coalesce(pg_catalog.cardinality(v_by_pass), 0) LOOP
                    c_sa[v_by_pass[x]] := c_avail[v_by_place[x]];
                    c_sid[v_by_pass[x]] := c_ids[v_by_place[x]];
                END LOOP;
            ELSE
                c_sa := c_avail;
                c_sid := c_ids;
            END IF;
            -- the candidates of the groups claimed by their cursor keep their places (2b)
            FOR x IN 1 .. pg_catalog.cardinality(f_ids) LOOP
                c_sa[f_base + x] := f_pa[x];
                c_sid[f_base + x] := f_pid[x];
            END LOOP;

            v_pos := v_end + 1;
        END LOOP;

        -- 4. Lock the candidates in claim order, SKIP LOCKED, until v_want are. A key's
        --    candidates beyond its room (it may have several ranges) are left out first, so that
        --    whichever rows concurrent claims hold, no key gets more than its room.
        v_round := '{}'::uuid[];
        v_round_keys := '{}'::integer[];
        v_round_tids := '{}'::tid[];
        IF pg_catalog.cardinality(c_ids) = pg_catalog.cardinality(f_ids) THEN
            -- Candidates of groups claimed by their cursor alone (c_ids is f_ids, no key has a
            -- room to keep): each row is reached where 2b read it, by a TID scan, rather than
            -- by a probe of the primary key.
            SELECT
                coalesce(pg_catalog.array_agg(l.id), '{}'::uuid[]),
                coalesce(pg_catalog.array_agg(0), '{}'::integer[]),
                coalesce(pg_catalog.array_agg(l.tid), '{}'::tid[])
            INTO v_round, v_round_keys, v_round_tids
            FROM (
                SELECT j.id, j.ctid AS tid
                FROM ROWS FROM (pg_catalog.unnest(f_tid), pg_catalog.unnest(f_ids),
                                pg_catalog.unnest(c_sa), pg_catalog.unnest(c_sid))
                    AS a (tid, id, sa, sid)
                INNER JOIN jobq_jobs AS j ON j.ctid = a.tid
                WHERE j.id = a.id
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.available_at <= v_now
                ORDER BY j.priority DESC, a.sa ASC, a.sid ASC
                LIMIT v_want
                FOR UPDATE OF j SKIP LOCKED
            ) AS l;
        END IF;
        -- Every other claim's candidates; and those of a claim by cursor alone that the TID scan
        -- did not all lock, by their ids: a job updated since 2b read it (still pending) has
        -- moved to another place, where its id finds it.
        IF pg_catalog.cardinality(v_round)
           < least(v_want, pg_catalog.cardinality(c_ids)) THEN
            SELECT
                pg_catalog.array_cat(v_round, pg_catalog.array_agg(l.id)),
                pg_catalog.array_cat(v_round_keys, pg_catalog.array_agg(l.k)),
                pg_catalog.array_cat(v_round_tids, pg_catalog.array_agg(l.tid))
            INTO v_round, v_round_keys, v_round_tids
            FROM (
                SELECT j.id, a.k, j.ctid AS tid
                FROM (
                    SELECT
                        a.id, a.k, a.sa, a.sid,
                        -- the place of each in its key's claim order (ids are unique: no peers)
                        pg_catalog.count(*) OVER (
                            PARTITION BY a.k ORDER BY a.priority DESC, a.available_at, a.id
                        ) AS nth
                    FROM ROWS FROM (pg_catalog.unnest(c_ids), pg_catalog.unnest(c_prio),
                                    pg_catalog.unnest(c_avail), pg_catalog.unnest(c_key),
                                    pg_catalog.unnest(c_sa), pg_catalog.unnest(c_sid))
                        AS a (id, priority, available_at, k, sa, sid)
                ) AS a
                INNER JOIN jobq_jobs AS j ON j.id = a.id
                WHERE (a.k = 0 OR a.nth <= least(k_room[a.k], k_quota[a.k]))
                  AND a.id <> ALL (v_round)
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.available_at <= v_now
                ORDER BY j.priority DESC, a.sa ASC, a.sid ASC
                LIMIT v_want - pg_catalog.cardinality(v_round)
                FOR UPDATE OF j SKIP LOCKED
            ) AS l;
        END IF;
        v_ids := pg_catalog.array_cat(v_ids, v_round);
        v_tids := pg_catalog.array_cat(v_tids, v_round_tids);
        v_want := v_want - pg_catalog.cardinality(v_round);

        -- Short: every candidate the claim could take was tried (the LIMIT was not reached), so
        -- those not locked are held by other transactions (SKIP LOCKED) or were claimed since
        -- they were read. Another round reads past them, and past the rows this claim has
        -- locked; the claim is over when no candidate was passed over.
        v_passed := '{}'::uuid[];
        -- (every candidate locked: none was passed over)
        IF v_want > 0 AND pg_catalog.cardinality(v_round) < pg_catalog.cardinality(c_ids) THEN
            v_passed := ARRAY(
                SELECT a.id
                FROM (
                    SELECT
                        a.id, a.k,
                        pg_catalog.count(*) OVER (
                            PARTITION BY a.k ORDER BY a.priority DESC, a.available_at, a.id
                        ) AS nth
                    FROM ROWS FROM (pg_catalog.unnest(c_ids), pg_catalog.unnest(c_prio),
                                    pg_catalog.unnest(c_avail), pg_catalog.unnest(c_key))
                        AS a (id, priority, available_at, k)
                ) AS a
                WHERE (a.k = 0 OR a.nth <= least(k_room[a.k], k_quota[a.k]))
                  AND a.id <> ALL (v_round)
            );
        END IF;

        -- A group claimed by its cursor moves it to the key of its last candidate locked, in
        -- turn order: the next round, and the group's next claim, begin after it.
        IF f_ids OPERATOR(pg_catalog.<@) v_round THEN  -- all of them (no row held elsewhere)
            FOR x IN 1 .. pg_catalog.cardinality(f_ids) LOOP
                f_cursor[f_gi[x]] := f_lk[x];
                f_moved[f_gi[x]] := true;
            END LOOP;
        ELSE
            FOR t IN
                SELECT DISTINCT ON (f.gi) f.gi, f.lk
                FROM ROWS FROM (pg_catalog.unnest(f_ids), pg_catalog.unnest(f_gi),
                                pg_catalog.unnest(f_lk)) WITH ORDINALITY AS f (id, gi, lk, n)
                WHERE f.id = ANY (v_round)
                ORDER BY f.gi, f.n DESC
            LOOP
                f_cursor[t.gi] := t.lk;
                f_moved[t.gi] := true;
            END LOOP;
        END IF;

        -- What each key has taken: its room shrinks for the next round, its starts are recorded.
        FOREACH v_ki IN ARRAY v_round_keys LOOP
            CONTINUE WHEN v_ki = 0;
            k_n[v_ki] := k_n[v_ki] + 1;
            k_room[v_ki] := k_room[v_ki] - 1;
            k_quota[v_ki] := k_quota[v_ki] - 1;
        END LOOP;
        EXIT WHEN v_want = 0;
        IF pg_catalog.cardinality(v_passed) = 0 THEN
            -- Nothing passed over, yet short: every range was visited. When a sharing key
            -- used its turn up (or had no start in it) and may start more, the next turn
            -- begins: the keys that did so, from their passes now; the others are out of work
            -- or of room, and out of the claim (quota -1).
            EXIT WHEN NOT v_sharing;  -- a simple expression: no query when no group shares
            EXIT WHEN NOT EXISTS (
                SELECT
                FROM pg_catalog.generate_subscripts(k_share, 1) AS u (k)
                WHERE k_share[u.k] AND k_quota[u.k] = 0 AND k_room[u.k] > 0
            );
            g_clock := pg_catalog.array_fill(
                NULL::double precision, ARRAY[pg_catalog.cardinality(g_names)]
            );
            g_span := g_clock;
            v_w_sums := g_clock;
            FOR i IN 1 .. pg_catalog.cardinality(k_share) LOOP
                CONTINUE WHEN NOT k_share[i];
                k_vp[i] := k_vp0[i] + k_n[i] / k_w[i];
                IF k_quota[i] = 0 AND k_room[i] > 0 THEN
                    v_gi := k_gi[i];
                    g_clock[v_gi] := least(g_clock[v_gi], k_vp[i]);
                    g_span[v_gi] := greatest(g_span[v_gi], k_w[i]);  -- the heaviest weight
                    v_w_sums[v_gi] := coalesce(v_w_sums[v_gi], 0) + k_w[i];
                ELSE
                    k_quota[i] := -1;
                END IF;
            END LOOP;
            FOR i IN 1 .. pg_catalog.cardinality(k_share) LOOP
                CONTINUE WHEN NOT k_share[i];
                v_gi := k_gi[i];
                k_quota[i] := CASE
                    WHEN k_quota[i] < 0 THEN -1
                    ELSE least(v_want, greatest(0, pg_catalog.ceil(
                        (g_clock[v_gi] + greatest(1 / g_span[v_gi], v_want / v_w_sums[v_gi])
                         - k_vp[i]) * k_w[i] - 1e-9
                    )))::integer
                END;
            END LOOP;
        END IF;
        v_exclude := pg_catalog.array_cat(pg_catalog.array_cat(v_exclude, v_passed), v_round);
    END LOOP;

    IF pg_catalog.cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH claimed AS (
        UPDATE jobq_jobs AS j
        SET
            status = 'processing',
            attempts = j.attempts + 1,
            locked_at = v_now,
            locked_by = jobq__claim_limited.worker_id,
            locked_until = jobq__claim_limited.lock_until,
            claimed_at = v_now,
            updated_at = v_now
        -- The rows locked above, reached where they are (a TID scan) rather than by a probe
        -- of the primary key each: the lock returned the place of the version it locked, and
        -- a row this transaction has locked stays there (no other can update or delete it,
        -- and VACUUM moves no row).
        WHERE j.ctid = ANY (v_tids)
        RETURNING j.*
    ),

    -- Counted for jobq_metrics() as jobq_dequeue counts its own claims: started, the wait.
    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'started'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            NULL::text[],
            pg_catalog.array_agg(extract(epoch FROM c.claimed_at - c.available_at)::double precision)
        ) AS n
        FROM claimed AS c
        HAVING pg_catalog.count(*) > 0
           AND (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
    )

    SELECT cl.*
    FROM claimed AS cl
    LEFT JOIN counted ON TRUE
    ORDER BY cl.priority DESC, cl.available_at ASC, cl.id ASC;

    -- 5. Record the starts of each limited key: its row (the write that fences REPEATABLE
    --    READ claims) and, for a rate limit, the window (and the rows that left it).
    --    A sharing key's pass moves on by its starts over its weight (never back, should a
    --    claim that committed after this one read it have moved it further).
    IF pg_catalog.cardinality(k_group) > 0 THEN
        INSERT INTO jobq_limit_keys AS k (limit_group, limit_key, started, last_start_at, pass)
        SELECT
            x.g, x.lk, x.n, coalesce(x.at, pg_catalog.clock_timestamp()),
            CASE WHEN x.share THEN x.vp0 + x.n / x.w END
        FROM ROWS FROM (pg_catalog.unnest(k_group), pg_catalog.unnest(k_key),
                        pg_catalog.unnest(k_n), pg_catalog.unnest(k_at),
                        pg_catalog.unnest(k_limited), pg_catalog.unnest(k_share),
                        pg_catalog.unnest(k_vp0), pg_catalog.unnest(k_w))
            AS x (g, lk, n, at, limited, share, vp0, w)
        WHERE x.limited AND x.n > 0
        ORDER BY x.g, x.lk
        ON CONFLICT ON CONSTRAINT jobq_limit_keys_pkey DO UPDATE
        SET started = k.started + excluded.started,
            last_start_at = greatest(k.last_start_at, excluded.last_start_at),
            pass = greatest(k.pass, excluded.pass);
    END IF;

    -- The cursors moved, unless a concurrent claim of the group holds the group's row (its
    -- own cursor is then written, and each claim's keys lose at most one turn: claims never
    -- wait).
    IF true = ANY (f_moved) THEN
        UPDATE jobq_limits AS l
        SET turn_key = x.lk
        FROM ROWS FROM (pg_catalog.unnest(f_groups), pg_catalog.unnest(f_cursor),
                        pg_catalog.unnest(f_moved)) AS x (g, lk, moved)
        WHERE x.moved
          AND l.limit_group = x.g
          AND l.limit_group IN (
              SELECT s.limit_group
              FROM jobq_limits AS s
              WHERE s.limit_group = ANY (f_groups)
              FOR NO KEY UPDATE SKIP LOCKED
          );
    END IF;

    IF true = ANY (k_rate) THEN
        INSERT INTO jobq_limit_starts (limit_group, limit_key, total, started, started_at)
        SELECT x.g, x.lk, x.latest + x.n, x.n, x.at
        FROM ROWS FROM (pg_catalog.unnest(k_group), pg_catalog.unnest(k_key),
                        pg_catalog.unnest(k_n), pg_catalog.unnest(k_at),
                        pg_catalog.unnest(k_latest), pg_catalog.unnest(k_rate))
            AS x (g, lk, n, at, latest, rate)
        WHERE x.rate AND x.n > 0;

        DELETE FROM jobq_limit_starts AS s
        USING ROWS FROM (pg_catalog.unnest(k_group), pg_catalog.unnest(k_key),
                         pg_catalog.unnest(k_n), pg_catalog.unnest(k_drop_below))
            AS x (g, lk, n, drop_below)
        WHERE x.n > 0
          AND x.drop_below IS NOT NULL
          AND s.limit_group = x.g
          AND s.limit_key = x.lk
          AND s.total < x.drop_below;
    END IF;
END;
$$;

COMMENT ON FUNCTION public.jobq__claim_limited(worker_id text, job_types text[], queues text[], batch_size integer, range_type_hashes bigint[], range_queue_hashes bigint[], lock_until timestamp with time zone, paused_queues text[]) IS 'Private. The claim of jobq_dequeue when limited jobs wait within its filters: claims up to
batch_size jobs in claim order, never more than each (limit_group, limit_key) may start
(max_running, max_starts per per), skipping keys that a concurrent claim holds, and records
the starts; the locks of its claims expire at lock_until; the limited jobs of paused_queues
are left pending.';

CREATE FUNCTION public.jobq__complete_rows(caller text, job_ids uuid[], worker_id text, attempts integer[], results jsonb[], OUT done uuid[], OUT awaited uuid[], OUT parents uuid[]) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_error text;
    v_limit integer;
    v_big record;
    v_nestloop text;
    v_id uuid;
    v_awaited boolean;
    v_has_dependents boolean;
    v_count integer := coalesce(pg_catalog.cardinality(jobq__complete_rows.job_ids), 0);
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__worker_id_error(jobq__complete_rows.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION '%: %', jobq__complete_rows.caller, v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq__complete_rows.attempts IS NOT NULL
       AND pg_catalog.cardinality(jobq__complete_rows.attempts) IS DISTINCT FROM v_count THEN
        RAISE EXCEPTION '%: attempts has % elements, job_ids has %', jobq__complete_rows.caller,
            pg_catalog.cardinality(jobq__complete_rows.attempts), v_count
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one attempt per job id, in the same order, or NULL.';
    END IF;
    IF jobq__complete_rows.results IS NOT NULL THEN
        IF pg_catalog.cardinality(jobq__complete_rows.results) IS DISTINCT FROM v_count THEN
            RAISE EXCEPTION '%: results has % elements, job_ids has %', jobq__complete_rows.caller,
                pg_catalog.cardinality(jobq__complete_rows.results), v_count
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Pass one result (or NULL) per job id, in the same order, or NULL.';
        END IF;
        -- Sizes as jobq_complete (and jobq_enqueue) measure them: the text form.
        SELECT s.max_payload_bytes INTO v_limit FROM jobq_settings AS s;
        SELECT r.ord, r.size INTO v_big
        FROM (
            SELECT
                e.ord,
                pg_catalog.octet_length(e.result::text) AS size
            FROM pg_catalog.unnest(jobq__complete_rows.results) WITH ORDINALITY AS e (result, ord)
        ) AS r
        WHERE r.size > v_limit
        ORDER BY r.ord
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION '%: results[%] is % bytes, the limit is % bytes',
                jobq__complete_rows.caller, v_big.ord, v_big.size, v_limit
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'Store large results elsewhere and return a reference; an admin '
                             'can change the limit with jobq_configure(max_payload_bytes => ...).';
        END IF;
    END IF;

    -- Each job leaves jobq_jobs for the history in one statement (as in jobq_complete).
    -- One job (a chain's step, an acknowledgement of one) is found by its key alone: no join
    -- of the elements to the rows, so no hash table to build and no planner setting to
    -- change and restore, which cost more than the job's move. Both statements are the same
    -- move otherwise (the same columns, the same history row, the same RETURNING): keep them
    -- in step.
    IF v_count = 1 THEN
        WITH moved AS (
            DELETE FROM jobq_jobs AS j
            -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
            -- test would let the planner scan jobq_jobs_locked_until_idx instead of the primary key.
            WHERE j.id = jobq__complete_rows.job_ids[1]
              AND j.locked_by = jobq__complete_rows.worker_id
              AND (jobq__complete_rows.attempts[1] IS NULL
                   OR j.attempts = jobq__complete_rows.attempts[1])
            RETURNING
                j.id, j.queue, j.job_type, j.payload, j.idempotency_key, j.priority, j.attempts,
                j.max_attempts, j.available_at, j.last_error, j.errors, j.created_at, j.scheduled,
                j.cancel_requested_at, j.cancel_reason, j.limit_group, j.limit_key, j.claimed_at,
                j.has_dependents, jobq__complete_rows.results[1] AS result
        ),

        done AS (
            INSERT INTO jobq_jobs_history AS h (
                id, queue, job_type, payload, idempotency_key, status, priority, attempts,
                max_attempts, available_at, locked_at, locked_by, last_error, errors, created_at,
                updated_at, finished_at, scheduled, result, cancel_requested_at, cancel_reason,
                limit_group, limit_key, claimed_at
            )
            SELECT
                m.id, m.queue, m.job_type, m.payload, m.idempotency_key, 'succeeded', m.priority,
                m.attempts, m.max_attempts, m.available_at, NULL, NULL, m.last_error, m.errors,
                m.created_at, v_now, v_now, m.scheduled, m.result,
                m.cancel_requested_at, m.cancel_reason, m.limit_group, m.limit_key, m.claimed_at
            FROM moved AS m
            RETURNING h.id, h.queue, h.job_type, h.claimed_at
        ),

        -- At most one row: no aggregate (the arrays are made below). Counted only while
        -- jobq_configure(metrics) is on: the call alone costs more than the test of the setting.
        counted AS MATERIALIZED (
            SELECT jobq__metrics_count(
                'succeeded'::text, ARRAY[c.queue], ARRAY[c.job_type], NULL::text[],
                ARRAY[extract(epoch FROM pg_catalog.now() - c.claimed_at)::double precision]
            ) AS n
            FROM done AS c
            WHERE (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
        )

        SELECT
            done.id,
            EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = done.id),
            -- whether it has dependents (read with its row: nothing more for the others)
            (SELECT m.has_dependents FROM moved AS m)
        INTO v_id, v_awaited, v_has_dependents
        FROM done
        LEFT JOIN counted ON TRUE;
        IF v_id IS NOT NULL THEN
            jobq__complete_rows.done := ARRAY[v_id];
            IF v_awaited THEN
                jobq__complete_rows.awaited := ARRAY[v_id];
            END IF;
            IF v_has_dependents THEN
                jobq__complete_rows.parents := ARRAY[v_id];
            END IF;
        END IF;
        RETURN;
    END IF;
    -- Planned without nested loops (this statement only: the setting is restored after it):
    -- on a drained queue's statistics the jobs' rows look like one, and a nested loop over
    -- them rescans the elements for each row, K x K comparisons (15 s for 5,000 jobs); hashed,
    -- the elements are joined to the rows the primary key returns in one pass (34 ms).
    v_nestloop := pg_catalog.current_setting('enable_nestloop');
    PERFORM pg_catalog.set_config('enable_nestloop', 'off', TRUE);
    WITH moved AS (
        DELETE FROM jobq_jobs AS j
        -- ROWS FROM (unnest, unnest, unnest) is what a three-array unnest() in FROM means; it
        -- is written out because that shorthand exists only for the unqualified name. It pads
        -- a shorter function with NULLs: a NULL attempts or results (no row) means NULL for
        -- every job, at no cost (their lengths were checked above).
        USING ROWS FROM (
            pg_catalog.unnest(jobq__complete_rows.job_ids),
            pg_catalog.unnest(jobq__complete_rows.attempts),
            pg_catalog.unnest(jobq__complete_rows.results)
        ) AS d (job_id, attempt, result)
        -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
        -- test would let the planner scan jobq_jobs_locked_until_idx instead of the primary key.
        WHERE j.id = ANY (jobq__complete_rows.job_ids)
          AND j.id = d.job_id
          AND j.locked_by = jobq__complete_rows.worker_id
          AND (d.attempt IS NULL OR j.attempts = d.attempt)
        RETURNING
            j.id, j.queue, j.job_type, j.payload, j.idempotency_key, j.priority, j.attempts,
            j.max_attempts, j.available_at, j.last_error, j.errors, j.created_at, j.scheduled,
            j.cancel_requested_at, j.cancel_reason, j.limit_group, j.limit_key, j.claimed_at,
            j.has_dependents, d.result
    ),

    done AS (
        INSERT INTO jobq_jobs_history AS h (
            id, queue, job_type, payload, idempotency_key, status, priority, attempts,
            max_attempts, available_at, locked_at, locked_by, last_error, errors, created_at,
            updated_at, finished_at, scheduled, result, cancel_requested_at, cancel_reason,
            limit_group, limit_key, claimed_at
        )
        SELECT
            m.id, m.queue, m.job_type, m.payload, m.idempotency_key, 'succeeded', m.priority,
            m.attempts, m.max_attempts, m.available_at, NULL, NULL, m.last_error, m.errors,
            m.created_at, v_now, v_now, m.scheduled, m.result,
            m.cancel_requested_at, m.cancel_reason, m.limit_group, m.limit_key, m.claimed_at
        FROM moved AS m
        RETURNING h.id, h.queue, h.job_type, h.claimed_at
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'succeeded'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            NULL::text[],
            pg_catalog.array_agg(extract(epoch FROM pg_catalog.now() - c.claimed_at)::double precision)
        ) AS n
        FROM done AS c
        HAVING pg_catalog.count(*) > 0
           AND (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
    )

    SELECT
        pg_catalog.array_agg(done.id),
        pg_catalog.array_agg(done.id) FILTER (
            WHERE EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = done.id)
        ),
        -- jobs with dependents (read with their rows: nothing more for the others)
        (SELECT pg_catalog.array_agg(m.id) FROM moved AS m WHERE m.has_dependents)
    INTO jobq__complete_rows.done, jobq__complete_rows.awaited, jobq__complete_rows.parents
    FROM done
    LEFT JOIN counted ON TRUE;
    PERFORM pg_catalog.set_config('enable_nestloop', v_nestloop, TRUE);
END;
$$;

COMMENT ON FUNCTION public.jobq__complete_rows(caller text, job_ids uuid[], worker_id text, attempts integer[], results jsonb[], OUT done uuid[], OUT awaited uuid[], OUT parents uuid[]) IS 'Private. Checks job_ids, worker_id, attempts and results as jobq_complete_many does (errors
name caller), then marks succeeded, in one statement, each job the worker still holds (of that
attempt, when given), with its result, moving it to the history. Returns done (the ids
completed), awaited (those a client awaits) and parents (those with dependents); NULL for none.';

CREATE FUNCTION public.jobq__cron_fires(masks bigint[], timezone text, first timestamp with time zone, until timestamp with time zone, max_fires integer) RETURNS timestamp with time zone[]
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_window interval;
    v_start timestamptz;
    v_fire timestamptz;
    v_fires timestamptz[];
    v_count integer;
BEGIN
    FOREACH v_window IN ARRAY ARRAY[
        interval '1 hour', interval '1 day', interval '7 days', interval '32 days',
        interval '366 days', interval '10 years'
    ] LOOP
        v_start := GREATEST(first, until - v_window);
        v_fires := '{}';
        v_fire := CASE
            WHEN v_start = first THEN first
            ELSE jobq__cron_next(
                masks, jobq__cron_fires.timezone, v_start - interval '1 microsecond'
            )
        END;
        WHILE v_fire IS NOT NULL AND v_fire <= until LOOP
            v_fires := pg_catalog.array_append(v_fires, v_fire);
            v_fire := jobq__cron_next(masks, jobq__cron_fires.timezone, v_fire);
        END LOOP;
        v_count := pg_catalog.cardinality(v_fires);
        IF v_count >= max_fires OR v_start = first THEN
            RETURN v_fires[GREATEST(v_count - max_fires + 1, 1):v_count];
        END IF;
    END LOOP;
    RETURN v_fires;
END;
$$;

COMMENT ON FUNCTION public.jobq__cron_fires(masks bigint[], timezone text, first timestamp with time zone, until timestamp with time zone, max_fires integer) IS 'Private. The last max_fires fire times between first (a fire time) and until, both
included, oldest first; the cost grows with max_fires, not with the number of fires.';

CREATE FUNCTION public.jobq__cron_next(masks bigint[], timezone text, after timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_local timestamp;
    v_limit timestamp;
    v_hour integer;
    v_minute integer;
    v_dom_ok boolean;
    v_dow_ok boolean;
    v_next integer;
    v_at timestamptz;
    v_earlier timestamptz;
    v_lo bigint;
    v_hi bigint;
    v_mid bigint;
BEGIN
    v_local := pg_catalog.date_trunc('minute', after AT TIME ZONE jobq__cron_next.timezone)
        + interval '1 minute';
    v_limit := v_local + interval '10 years';
    LOOP
        IF v_local > v_limit THEN
            RETURN NULL;
        END IF;
        IF masks[4] & (1::bigint << EXTRACT(MONTH FROM v_local)::integer) = 0 THEN
            v_local := pg_catalog.date_trunc('month', v_local) + interval '1 month';
            CONTINUE;
        END IF;
        v_dom_ok := masks[3] & (1::bigint << EXTRACT(DAY FROM v_local)::integer) <> 0;
        v_dow_ok := masks[5] & (1::bigint << EXTRACT(DOW FROM v_local)::integer) <> 0;
        -- Vixie cron: a day field starting with * makes both required, else either suffices.
        v_dom_ok := CASE WHEN masks[6] = 1 OR masks[7] = 1 THEN v_dom_ok AND v_dow_ok
                         ELSE v_dom_ok OR v_dow_ok END;
        IF NOT v_dom_ok THEN
            v_local := pg_catalog.date_trunc('day', v_local) + interval '1 day';
            CONTINUE;
        END IF;
        v_hour := EXTRACT(HOUR FROM v_local)::integer;
        v_next := NULL;
        FOR v_h IN v_hour..23 LOOP
            IF masks[2] & (1::bigint << v_h) <> 0 THEN
                v_next := v_h;
                EXIT;
            END IF;
        END LOOP;
        IF v_next IS NULL THEN
            v_local := pg_catalog.date_trunc('day', v_local) + interval '1 day';
            CONTINUE;
        END IF;
        IF v_next > v_hour THEN
            v_local := pg_catalog.date_trunc('day', v_local)
                + interval '1 hour' * v_next::double precision;
        END IF;
        v_minute := EXTRACT(MINUTE FROM v_local)::integer;
        v_next := NULL;
        FOR v_m IN v_minute..59 LOOP
            IF masks[1] & (1::bigint << v_m) <> 0 THEN
                v_next := v_m;
                EXIT;
            END IF;
        END LOOP;
        IF v_next IS NULL THEN
            v_local := pg_catalog.date_trunc('hour', v_local) + interval '1 hour';
            CONTINUE;
        END IF;
        v_local := pg_catalog.date_trunc('hour', v_local)
            + interval '1 minute' * v_next::double precision;

        -- v_local matches: the instant at which that wall-clock time first comes.
        v_at := v_local AT TIME ZONE jobq__cron_next.timezone;
        IF (v_at AT TIME ZONE jobq__cron_next.timezone) = v_local THEN
            -- A repeated time: the same wall-clock time under the offset of a day earlier.
            v_earlier := (v_local - ((v_at - interval '1 day') AT TIME ZONE jobq__cron_next.timezone
                                     - (v_at - interval '1 day') AT TIME ZONE 'UTC'))
                         AT TIME ZONE 'UTC';
            IF v_earlier < v_at
               AND (v_earlier AT TIME ZONE jobq__cron_next.timezone) = v_local THEN
                v_at := v_earlier;
            END IF;
        ELSE
            -- A skipped time: the first instant whose wall-clock time is past it, found by
            -- halving (to the second) a day-long interval around the gap.
            v_lo := EXTRACT(EPOCH FROM v_at - interval '1 day')::bigint;
            v_hi := EXTRACT(EPOCH FROM v_at + interval '1 day')::bigint;
            WHILE v_hi - v_lo > 1 LOOP
                v_mid := (v_lo + v_hi) / 2;
                IF (pg_catalog.to_timestamp(v_mid::double precision)
                    AT TIME ZONE jobq__cron_next.timezone) > v_local THEN
                    v_hi := v_mid;
                ELSE
                    v_lo := v_mid;
                END IF;
            END LOOP;
            v_at := pg_catalog.to_timestamp(v_hi::double precision);
        END IF;
        IF v_at > after THEN
            RETURN v_at;
        END IF;
        v_local := v_local + interval '1 minute';
    END LOOP;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION public.jobq__cron_next(masks bigint[], timezone text, after timestamp with time zone) IS 'Private. The first fire time strictly after `after` of the cron masks (jobq__cron_parse) in
wall-clock time of `timezone`; a time skipped by daylight saving fires at the end of the gap, a
repeated one once (its first occurrence). NULL when nothing fires within ten years.';

CREATE FUNCTION public.jobq__cron_parse(cron text) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_temp'
    AS $_$
DECLARE
    v_names constant text[] := ARRAY['minute', 'hour', 'day-of-month', 'month', 'day-of-week'];
    v_min constant integer[] := ARRAY[0, 0, 1, 1, 0];
    v_max constant integer[] := ARRAY[59, 23, 31, 12, 7];
    v_expr text;
    v_fields text[];
    v_result bigint[] := ARRAY[0, 0, 0, 0, 0, 0, 0]::bigint[];
    v_item text;
    v_base text;
    v_step integer;
    v_lo integer;
    v_hi integer;
    v_bounds text[];
    v_value integer;
BEGIN
    IF cron IS NULL OR jobq__blank(cron) THEN
        RAISE EXCEPTION 'jobq_schedule: cron must be a non-blank cron expression'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Five fields (minute hour day-of-month month day-of-week) or @hourly, '
                         '@daily, @weekly, @monthly, @yearly.';
    END IF;
    v_expr := pg_catalog.lower(pg_catalog.btrim(cron, E' \t\r\n'));
    v_expr := CASE v_expr
        WHEN '@hourly' THEN '0 * * * *'
        WHEN '@daily' THEN '0 0 * * *'
        WHEN '@midnight' THEN '0 0 * * *'
        WHEN '@weekly' THEN '0 0 * * 0'
        WHEN '@monthly' THEN '0 0 1 * *'
        WHEN '@yearly' THEN '0 0 1 1 *'
        WHEN '@annually' THEN '0 0 1 1 *'
        ELSE v_expr
    END;
    IF pg_catalog.left(v_expr, 1) = '@' THEN
        RAISE EXCEPTION 'jobq_schedule: cron shortcut % is not supported',
            pg_catalog.quote_literal(v_expr)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Shortcuts: @hourly, @daily, @weekly, @monthly, @yearly.';
    END IF;
    v_fields := pg_catalog.regexp_split_to_array(v_expr, E'[ \t\r\n]+');
    IF pg_catalog.cardinality(v_fields) <> 5 THEN
        RAISE EXCEPTION 'jobq_schedule: cron must have 5 fields, got % in %',
            pg_catalog.cardinality(v_fields), pg_catalog.quote_literal(cron)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'minute hour day-of-month month day-of-week, e.g. ''30 2 * * *''.';
    END IF;

    FOR v_i IN 1..5 LOOP
        FOREACH v_item IN ARRAY pg_catalog.string_to_array(v_fields[v_i], ',') LOOP
            -- item = base [ / step ]
            v_step := 1;
            v_base := v_item;
            IF pg_catalog.strpos(v_item, '/') > 0 THEN
                v_base := pg_catalog.split_part(v_item, '/', 1);
                IF pg_catalog.split_part(v_item, '/', 2) !~ '^[0-9]{1,3}$'
                   OR pg_catalog.split_part(v_item, '/', 3) <> '' THEN
                    RAISE EXCEPTION 'jobq_schedule: cron % field has a bad step in %',
                        v_names[v_i], pg_catalog.quote_literal(v_item)
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                v_step := pg_catalog.split_part(v_item, '/', 2)::integer;
                IF v_step < 1 THEN
                    RAISE EXCEPTION 'jobq_schedule: cron % field has a step of 0 in %',
                        v_names[v_i], pg_catalog.quote_literal(v_item)
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            END IF;

            IF v_base = '*' THEN
                v_lo := v_min[v_i];
                v_hi := CASE WHEN v_i = 5 THEN 6 ELSE v_max[v_i] END;
            ELSE
                v_bounds := pg_catalog.string_to_array(v_base, '-');
                IF pg_catalog.cardinality(v_bounds) NOT IN (1, 2) THEN
                    RAISE EXCEPTION 'jobq_schedule: cron % field has a bad range %',
                        v_names[v_i], pg_catalog.quote_literal(v_item)
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                FOR v_value IN 1..pg_catalog.cardinality(v_bounds) LOOP
                    -- a number, or a month / weekday name in its own field
                    IF v_bounds[v_value] ~ '^[0-9]{1,2}$' THEN
                        v_bounds[v_value] := v_bounds[v_value]::integer::text;
                    ELSIF v_i = 4 AND pg_catalog.array_position(
                        ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun',
                              'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], v_bounds[v_value]
                    ) IS NOT NULL THEN
                        v_bounds[v_value] := pg_catalog.array_position(
                            ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun',
                                  'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], v_bounds[v_value]
                        )::text;
                    ELSIF v_i = 5 AND pg_catalog.array_position(
                        ARRAY['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'], v_bounds[v_value]
                    ) IS NOT NULL THEN
                        v_bounds[v_value] := (pg_catalog.array_position(
                            ARRAY['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'],
                            v_bounds[v_value]
                        ) - 1)::text;
                    ELSE
                        RAISE EXCEPTION 'jobq_schedule: cron % field has % where a % is expected',
                            v_names[v_i], pg_catalog.quote_literal(v_item),
                            CASE v_i WHEN 4 THEN 'month (1-12 or jan-dec)'
                                     WHEN 5 THEN 'weekday (0-7 or sun-sat)'
                                     ELSE 'number' END
                            USING ERRCODE = 'invalid_parameter_value';
                    END IF;
                END LOOP;
                v_lo := v_bounds[1]::integer;
                v_hi := CASE
                    WHEN pg_catalog.cardinality(v_bounds) = 2 THEN v_bounds[2]::integer
                    WHEN v_step > 1 OR pg_catalog.strpos(v_item, '/') > 0 THEN v_max[v_i]
                    ELSE v_lo
                END;
                IF v_lo < v_min[v_i] OR v_hi > v_max[v_i] THEN
                    RAISE EXCEPTION 'jobq_schedule: cron % field % is out of range %-%',
                        v_names[v_i], pg_catalog.quote_literal(v_item), v_min[v_i], v_max[v_i]
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                IF v_lo > v_hi THEN
                    RAISE EXCEPTION 'jobq_schedule: cron % field range % goes backwards',
                        v_names[v_i], pg_catalog.quote_literal(v_item)
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            END IF;

            v_value := v_lo;
            WHILE v_value <= v_hi LOOP
                -- day-of-week 7 is Sunday, bit 0
                v_result[v_i] := v_result[v_i]
                    | (1::bigint << (CASE WHEN v_i = 5 AND v_value = 7 THEN 0 ELSE v_value END));
                v_value := v_value + v_step;
            END LOOP;
        END LOOP;
    END LOOP;

    v_result[6] := CASE WHEN pg_catalog.left(v_fields[3], 1) = '*' THEN 1 ELSE 0 END::bigint;
    v_result[7] := CASE WHEN pg_catalog.left(v_fields[5], 1) = '*' THEN 1 ELSE 0 END::bigint;
    RETURN v_result;
END;
$_$;

COMMENT ON FUNCTION public.jobq__cron_parse(cron text) IS 'Private. Parses a five-field cron expression or @ shortcut into bit masks: bigint[7] of
minutes, hours, days of month, months, days of week (Sunday 0), then 1/0 for a day-of-month
and a day-of-week field starting with *. Errors: 22023 naming the field that is wrong.';

CREATE FUNCTION public.jobq__dependencies_gone() RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_gone uuid[];
BEGIN
    SELECT pg_catalog.array_agg(DISTINCT e.depends_on) INTO v_gone
    FROM jobq_jobs AS c
    JOIN jobq_job_dependencies AS e ON e.job_id OPERATOR(pg_catalog.=) c.id
    WHERE c.status OPERATOR(pg_catalog.=) 'waiting'
      AND e.on_failure OPERATOR(pg_catalog.=) 'wait'
      AND NOT EXISTS (
          SELECT FROM jobq_all_jobs AS a WHERE a.id OPERATOR(pg_catalog.=) e.depends_on
      );
    IF v_gone IS NULL THEN
        RETURN 0;
    END IF;
    RETURN jobq__dependents_finished(
        v_gone, pg_catalog.array_fill('pruned'::text, ARRAY[pg_catalog.cardinality(v_gone)])
    );
END;
$$;

COMMENT ON FUNCTION public.jobq__dependencies_gone() IS 'Private. Cancels the waiting jobs under rule wait whose dependency no longer exists (and their
dependents by their rules), as jobq_prune and jobq_act_on_jobs call it after deleting jobs.
Returns how many dependents were cancelled or released.';

CREATE FUNCTION public.jobq__dependency_argument_problem(depends_on uuid[], on_dependency_failure text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN on_dependency_failure IS NULL
            OR on_dependency_failure NOT IN ('cancel', 'run', 'wait')
            THEN pg_catalog.format(
                'on_dependency_failure must be cancel, run or wait, got %s',
                coalesce(pg_catalog.quote_literal(on_dependency_failure), 'NULL')
            )
        WHEN depends_on IS NULL
            THEN 'depends_on must be an array of job ids'
        WHEN pg_catalog.cardinality(depends_on) > 10000
            THEN pg_catalog.format(
                'depends_on has %s elements, at most 10000 are allowed',
                pg_catalog.cardinality(depends_on)
            )
        WHEN pg_catalog.array_position(depends_on, NULL) IS NOT NULL
            THEN 'depends_on must not contain NULL'
    END
$$;

COMMENT ON FUNCTION public.jobq__dependency_argument_problem(depends_on uuid[], on_dependency_failure text) IS 'Private. Returns the first problem with a job''s depends_on and on_dependency_failure (a
message naming the argument), or NULL.';

CREATE FUNCTION public.jobq__dependents_finished(job_ids uuid[], statuses text[]) RETURNS integer
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET jit TO 'off'
    AS $$
DECLARE
    v_cancelled uuid[];
    v_released integer;
    v_queues text[];
    v_nestloop text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    -- Only ends other than success cancel anything: a completion skips this statement.
    IF pg_catalog.array_remove(jobq__dependents_finished.statuses, 'succeeded'::text)
        OPERATOR(pg_catalog.<>) '{}'::text[]
    THEN
        WITH RECURSIVE ended (id, status) AS (
            SELECT f.id, f.status
            FROM ROWS FROM (
                pg_catalog.unnest(jobq__dependents_finished.job_ids),
                pg_catalog.unnest(jobq__dependents_finished.statuses)
            ) AS f (id, status)
            WHERE f.status OPERATOR(pg_catalog.<>) 'succeeded'
            UNION
            SELECT e.job_id, 'cancelled'::text
            FROM ended AS d
            JOIN jobq_job_dependencies AS e ON e.depends_on OPERATOR(pg_catalog.=) d.id
            JOIN jobq_jobs AS c ON c.id OPERATOR(pg_catalog.=) e.job_id
            WHERE c.waiting_on OPERATOR(pg_catalog.>) 0
              AND (
                  e.on_failure OPERATOR(pg_catalog.=) 'cancel'
                  OR (e.on_failure OPERATOR(pg_catalog.=) 'wait'
                      AND d.status OPERATOR(pg_catalog.=) 'pruned')
              )
        ),

        locked AS MATERIALIZED (
            SELECT j.id
            FROM jobq_jobs AS j
            WHERE j.id = ANY (ARRAY(SELECT d.id FROM ended AS d))
              AND j.waiting_on OPERATOR(pg_catalog.>) 0
            ORDER BY j.id
            FOR UPDATE
        ),

        changed AS (
            UPDATE jobq_jobs AS j
            SET
                status = 'cancelled',
                finished_at = v_now,
                waiting_on = 0,
                last_error = (
                    SELECT pg_catalog.format(
                        'dependency %s ended %s', e.depends_on,
                        coalesce(p.status, 'cancelled')
                    )
                    FROM jobq_job_dependencies AS e
                    LEFT JOIN ROWS FROM (
                        pg_catalog.unnest(jobq__dependents_finished.job_ids),
                        pg_catalog.unnest(jobq__dependents_finished.statuses)
                    ) AS p (id, status)
                        ON p.id OPERATOR(pg_catalog.=) e.depends_on
                    WHERE e.job_id OPERATOR(pg_catalog.=) j.id
                      AND e.depends_on = ANY (ARRAY(SELECT d.id FROM ended AS d))
                    ORDER BY p.status NULLS LAST, e.depends_on
                    LIMIT 1
                ),
                updated_at = v_now
            FROM locked
            WHERE j.id OPERATOR(pg_catalog.=) locked.id
              AND j.waiting_on OPERATOR(pg_catalog.>) 0
            RETURNING j.id, j.queue, j.job_type
        ),

        counted AS MATERIALIZED (
            SELECT jobq__metrics_count(
                'cancelled'::text, pg_catalog.array_agg(k.queue), pg_catalog.array_agg(k.job_type),
                NULL::text[], NULL::double precision[]
            ) AS n
            FROM changed AS k
            HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0
        )

        SELECT pg_catalog.array_agg(c.id)
        INTO v_cancelled
        FROM changed AS c
        LEFT JOIN counted ON TRUE;
        IF v_cancelled IS NOT NULL THEN
            PERFORM jobq__notify_events('done'::text, jobq__awaits_end(v_cancelled));
        END IF;
    END IF;

    -- The dependents are found by their ids (an index condition) and joined to their counts by
    -- a hash, in one pass, with nested loops off for this statement only (the cancel walk
    -- above probes the edges per ended job and needs them): planned on no statistics (a graph
    -- enqueued and run before any ANALYZE), a nested loop compared each dependent with every
    -- count, K x K for a fan-out of K.
    v_nestloop := pg_catalog.current_setting('enable_nestloop');
    PERFORM pg_catalog.set_config('enable_nestloop', 'off', TRUE);
    WITH freed AS MATERIALIZED (
        SELECT e.job_id, pg_catalog.count(*)::integer AS n
        FROM jobq_job_dependencies AS e
        JOIN ROWS FROM (
            pg_catalog.unnest(jobq__dependents_finished.job_ids),
            pg_catalog.unnest(jobq__dependents_finished.statuses)
        ) AS f (id, status) ON f.id OPERATOR(pg_catalog.=) e.depends_on
        WHERE e.depends_on OPERATOR(pg_catalog.=) ANY (jobq__dependents_finished.job_ids)
          AND (f.status OPERATOR(pg_catalog.=) 'succeeded'
               OR (e.on_failure OPERATOR(pg_catalog.=) 'run'
                   AND f.status OPERATOR(pg_catalog.<>) 'pruned'))
        GROUP BY e.job_id
    ),

    locked AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT freed.job_id FROM freed))
          AND j.waiting_on OPERATOR(pg_catalog.>) 0
        ORDER BY j.id
        FOR UPDATE
    ),

    released AS (
        UPDATE jobq_jobs AS j
        SET
            waiting_on = j.waiting_on OPERATOR(pg_catalog.-) freed.n,
            status = CASE
                WHEN j.waiting_on OPERATOR(pg_catalog.<=) freed.n THEN 'pending'
                ELSE 'waiting'
            END,
            available_at = CASE
                WHEN j.waiting_on OPERATOR(pg_catalog.<=) freed.n AND NOT j.scheduled
                    THEN v_now
                ELSE j.available_at
            END,
            updated_at = v_now
        FROM locked
        JOIN freed ON freed.job_id OPERATOR(pg_catalog.=) locked.id
        WHERE j.id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT locked.id FROM locked))
          AND j.id OPERATOR(pg_catalog.=) locked.id
          AND j.waiting_on OPERATOR(pg_catalog.>) 0
        RETURNING j.status, j.queue, j.available_at
    )

    SELECT
        (pg_catalog.count(*) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'pending'))::integer,
        pg_catalog.array_agg(DISTINCT r.queue) FILTER (
            WHERE r.status OPERATOR(pg_catalog.=) 'pending'
              AND r.available_at OPERATOR(pg_catalog.<=) v_now
        )
    INTO v_released, v_queues
    FROM released AS r;
    PERFORM pg_catalog.set_config('enable_nestloop', v_nestloop, TRUE);
    IF v_queues IS NOT NULL THEN
        PERFORM jobq__notify(v_queues);
    END IF;
    RETURN v_released OPERATOR(pg_catalog.+) coalesce(pg_catalog.cardinality(v_cancelled), 0);
END;
$$;

COMMENT ON FUNCTION public.jobq__dependents_finished(job_ids uuid[], statuses text[]) IS 'Private. Applies the end of job_ids (each with its final status in statuses) to their
waiting dependents: cancels those with rule cancel of a job that did not succeed (and with rule
wait of a job that is gone, status pruned), transitively;
decrements waiting_on of the others that the end frees and makes pending those left with none.
Returns how many dependents were released or cancelled.';

CREATE FUNCTION public.jobq__error_entry(attempt integer, at jsonb, worker text, error text, kind text DEFAULT NULL::text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT pg_catalog.jsonb_set(
        pg_catalog.jsonb_set(
            CASE
                WHEN kind IS NULL
                    THEN pg_catalog.jsonb_object(ARRAY['worker', worker, 'error', error])
                ELSE pg_catalog.jsonb_object(ARRAY['worker', worker, 'error', error, 'kind', kind])
            END,
            '{attempt}', attempt::text::jsonb
        ),
        '{at}', at
    )
$$;

COMMENT ON FUNCTION public.jobq__error_entry(attempt integer, at jsonb, worker text, error text, kind text) IS 'Private. One entry of jobq_jobs.errors: {"attempt": attempt, "at": at, "worker": worker,
"error": error} and "kind" when kind is not NULL. IMMUTABLE: at comes rendered as jsonb.';

CREATE FUNCTION public.jobq__error_line(error text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN s.lines[1] IS NULL THEN ''
        WHEN pg_catalog.regexp_replace(s.lines[1], '^worker error: ', '') LIKE 'Traceback%'
             AND pg_catalog.cardinality(s.lines) > 1
            THEN pg_catalog.substr(s.lines[1], 1, pg_catalog.strpos(s.lines[1], 'Traceback') - 1)
                 || s.lines[pg_catalog.cardinality(s.lines)]
        ELSE s.lines[1]
    END
    FROM (
        SELECT ARRAY(
            SELECT pg_catalog.btrim(l.line, E' \t\r\f\v')
            FROM pg_catalog.regexp_split_to_table(error, E'\n') WITH ORDINALITY AS l (line, n)
            WHERE pg_catalog.btrim(l.line, E' \t\r\f\v') <> ''
            ORDER BY l.n
        ) AS lines
    ) AS s
$$;

COMMENT ON FUNCTION public.jobq__error_line(error text) IS 'Private. The exception line of a job''s error: its first non-blank line, or the last one when
the first opens a Python traceback; '''' for NULL or a blank error.';

CREATE FUNCTION public.jobq__event_channel(kind text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN pg_catalog.octet_length('jobq-' || kind || ':' || pg_catalog.current_schema()::text)
            <= 63
            THEN 'jobq-' || kind || ':' || pg_catalog.current_schema()::text
        ELSE 'jobq-' || kind || '#' || pg_catalog.left(
            pg_catalog.encode(
                pg_catalog.sha224(pg_catalog.convert_to(pg_catalog.current_schema()::text, 'UTF8')),
                'hex'
            ),
            63 - pg_catalog.octet_length('jobq-' || kind || '#')
        )
    END
$$;

COMMENT ON FUNCTION public.jobq__event_channel(kind text) IS 'Private. The NOTIFY channel of this installation for events of the given kind (done: an
awaited job finished; cancel: a processing job got a cancel request): jobq-<kind>:<schema>, or
jobq-<kind>#<hex SHA-224 of the schema name, cut to fit 63 bytes> for a long schema name.';

CREATE FUNCTION public.jobq__history_filled(partition_name text) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    v_filled boolean;
BEGIN
    EXECUTE pg_catalog.format('SELECT EXISTS (SELECT FROM %I)', partition_name) INTO v_filled;
    RETURN v_filled;
END;
$$;

COMMENT ON FUNCTION public.jobq__history_filled(partition_name text) IS 'Private. Whether the partition of jobq_jobs_history named partition_name holds a row.
Arguments: partition_name. Result: true when it holds one. Errors: none of its own.';

CREATE FUNCTION public.jobq__history_partitions(status text) RETURNS TABLE(name text, lower_at timestamp with time zone, upper_at timestamp with time zone)
    LANGUAGE sql STABLE
    AS $_$
    SELECT
        c.relname::text,
        b.m[1]::timestamptz,
        b.m[2]::timestamptz
    FROM pg_catalog.pg_inherits AS i
    JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid
    CROSS JOIN LATERAL (
        SELECT pg_catalog.regexp_match(
            pg_catalog.pg_get_expr(c.relpartbound, c.oid),
            '^FOR VALUES FROM \(''([^'']+)''\) TO \(''([^'']+)''\)$'
        ) AS m
    ) AS b
    WHERE i.inhparent OPERATOR(pg_catalog.=) pg_catalog.to_regclass(
        'jobq__history_' OPERATOR(pg_catalog.||) jobq__history_partitions.status
    )::oid
      AND b.m IS NOT NULL
    ORDER BY 2
$_$;

COMMENT ON FUNCTION public.jobq__history_partitions(status text) IS 'Private. The range partitions of jobq_jobs_history for one finished status: name, lower_at
(inclusive) and upper_at (exclusive) bounds of finished_at, oldest first; the DEFAULT
partition is not listed. None for a status whose history is one table (Citus).';

CREATE FUNCTION public.jobq__history_truncate(partition_name text, count_rows boolean) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_rows bigint;
BEGIN
    IF (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton) THEN
        EXECUTE pg_catalog.format('LOCK TABLE %I IN SHARE MODE', partition_name);
        EXECUTE pg_catalog.format(
            'SELECT pg_catalog.count(*), jobq__metrics_count(''pruned''::text, '
            'pg_catalog.array_agg(h.queue), pg_catalog.array_agg(h.job_type), '
            'pg_catalog.array_agg(h.status), NULL::double precision[]) '
            'FROM %I AS h HAVING pg_catalog.count(*) > 0', partition_name
        ) INTO v_rows;
        v_rows := coalesce(v_rows, 0::bigint);
    ELSIF count_rows THEN
        EXECUTE pg_catalog.format('LOCK TABLE %I IN SHARE MODE', partition_name);
        EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM %I', partition_name)
        INTO v_rows;
    END IF;
    EXECUTE pg_catalog.format('TRUNCATE TABLE %I', partition_name);
    RETURN v_rows;
END;
$$;

COMMENT ON FUNCTION public.jobq__history_truncate(partition_name text, count_rows boolean) IS 'Private. Empties one partition of jobq_jobs_history by TRUNCATE (constant time; locks that
partition only). Arguments: partition_name, count_rows (count the rows first). Rows are read
once, under SHARE, when count_rows is true or metrics are on (the jobq_jobs gauge counts them
as pruned). Result: the rows emptied, or NULL when not counted. Errors: lock_not_available
(55P03) when the caller''s lock_timeout passes.';

CREATE FUNCTION public.jobq__insert_jobs(job_types text[], payloads jsonb[], idempotency_keys text[], max_attempts integer[], run_ats timestamp with time zone[], priorities integer[], queues text[], limit_groups text[], limit_keys text[]) RETURNS TABLE(ord integer, id uuid)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_n integer := coalesce(pg_catalog.cardinality(job_types), 0);
    v_ids uuid[];
    v_types text[];
    v_keys text[];
    v_missing integer;
    v_stale boolean;
    v_metrics boolean;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF v_n = 0 THEN
        RETURN;
    END IF;
    v_ids := jobq__uuid_v7_many(v_n);

    IF idempotency_keys IS NULL
        OR pg_catalog.cardinality(pg_catalog.array_remove(idempotency_keys, NULL)) = 0
    THEN
        INSERT INTO jobq_jobs AS j (
            id, queue, job_type, payload, max_attempts, available_at, priority, scheduled,
            limit_group, limit_key
        )
        SELECT
            u.id,
            coalesce(u.queue, 'default'),
            u.job_type,
            coalesce(u.payload, '{}'::jsonb),
            coalesce(u.max_attempts, 5),
            coalesce(u.run_at, v_now),
            coalesce(u.priority, 0),
            coalesce(u.run_at > v_now, FALSE),
            u.limit_group,
            u.limit_key
        FROM ROWS FROM (
            pg_catalog.unnest(v_ids), pg_catalog.unnest(job_types),
            pg_catalog.unnest(payloads),
            pg_catalog.unnest(jobq__insert_jobs.max_attempts),
            pg_catalog.unnest(run_ats), pg_catalog.unnest(priorities),
            pg_catalog.unnest(queues), pg_catalog.unnest(limit_groups),
            pg_catalog.unnest(limit_keys)
        ) AS u (
            id, job_type, payload, max_attempts, run_at, priority, queue, limit_group, limit_key
        );

        IF queues IS NULL AND run_ats IS NULL THEN
            PERFORM jobq__notify(ARRAY['default'::text]);
        ELSE
            -- job_types gives every job its row when queues or run_ats is NULL.
            PERFORM jobq__notify(ARRAY(
                SELECT DISTINCT coalesce(w.queue, 'default')
                FROM ROWS FROM (
                    pg_catalog.unnest(job_types), pg_catalog.unnest(queues),
                    pg_catalog.unnest(run_ats)
                ) AS w (job_type, queue, run_at)
                WHERE coalesce(w.run_at <= v_now, TRUE)
            ));
        END IF;

        -- jobq__metrics_count reads the setting too; not calling it when counting is off
        -- (the default) spares building its arrays.
        SELECT s.metrics INTO v_metrics FROM jobq_settings AS s;
        IF v_metrics THEN
            PERFORM jobq__metrics_count(
                'enqueued'::text,
                CASE
                    WHEN queues IS NULL THEN pg_catalog.array_fill('default'::text, ARRAY[v_n])
                    WHEN pg_catalog.array_position(queues, NULL::text) IS NULL THEN queues
                    ELSE ARRAY(
                        SELECT coalesce(q.v, 'default')
                        FROM pg_catalog.unnest(queues) WITH ORDINALITY AS q (v, n)
                        ORDER BY q.n
                    )
                END,
                job_types, NULL::text[], NULL::double precision[]
            );
        END IF;

        RETURN QUERY
        SELECT u.ord::integer, u.id
        FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS u (id, ord);
        RETURN;
    END IF;

    WITH input AS MATERIALIZED (
        SELECT
            u.ord::integer AS ord,
            u.id AS new_id,
            u.job_type,
            coalesce(u.payload, '{}'::jsonb) AS payload,
            u.idempotency_key,
            coalesce(u.max_attempts, 5) AS max_attempts,
            coalesce(u.run_at, v_now) AS available_at,
            coalesce(u.priority, 0) AS priority,
            coalesce(u.queue, 'default') AS queue,
            u.limit_group,
            u.limit_key,
            CASE
                WHEN u.idempotency_key IS NULL THEN u.id
                ELSE pg_catalog.first_value(u.id) OVER (
                    PARTITION BY u.job_type, u.idempotency_key ORDER BY u.ord
                )
            END AS first_id
        FROM ROWS FROM (
            pg_catalog.unnest(v_ids), pg_catalog.unnest(job_types),
            pg_catalog.unnest(payloads), pg_catalog.unnest(idempotency_keys),
            pg_catalog.unnest(jobq__insert_jobs.max_attempts),
            pg_catalog.unnest(run_ats), pg_catalog.unnest(priorities),
            pg_catalog.unnest(queues), pg_catalog.unnest(limit_groups),
            pg_catalog.unnest(limit_keys)
        ) WITH ORDINALITY AS u (
            id, job_type, payload, idempotency_key, max_attempts, run_at, priority, queue,
            limit_group, limit_key, ord
        )
    ),

    -- The jobs to insert: the first of each key, whose key no finished job holds. Read in a
    -- step of its own, not in the INSERT's SELECT: Citus sends an INSERT whose SELECT reads a
    -- table to the shard as one statement, and its text for a table without a distribution
    -- column ends in `AND ( IS NOT NULL)` (docs/decisions/0002-sql-that-citus-can-run.md).
    fresh AS MATERIALIZED (
        SELECT i.*
        FROM input AS i
        WHERE i.new_id = i.first_id
          AND NOT EXISTS (
              SELECT FROM jobq_jobs_history AS h
              WHERE h.job_type = i.job_type AND h.idempotency_key = i.idempotency_key
          )
    ),

    inserted AS (
        INSERT INTO jobq_jobs AS j (
            id, queue, job_type, payload, idempotency_key, max_attempts, available_at,
            priority, scheduled, limit_group, limit_key
        )
        SELECT
            i.new_id, i.queue, i.job_type, i.payload, i.idempotency_key, i.max_attempts,
            i.available_at, i.priority, i.available_at > v_now, i.limit_group, i.limit_key
        FROM fresh AS i
        ORDER BY i.ord
        ON CONFLICT (job_type, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING j.id, j.queue, j.job_type, j.available_at
    ),

    woken AS (
        SELECT jobq__notify(pg_catalog.array_agg(DISTINCT w.queue)) AS n
        FROM inserted AS w
        WHERE w.available_at <= v_now
    ),

    -- One row whatever was inserted (the statement below joins it); the call only while
    -- jobq_configure(metrics) is on, as the path without keys above.
    counted AS MATERIALIZED (
        SELECT CASE WHEN (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton) THEN
            jobq__metrics_count(
                'enqueued'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
                NULL::text[], NULL::double precision[]
            )
        END AS n
        FROM inserted AS c
    )

    SELECT
        pg_catalog.array_agg(ins.id ORDER BY i.ord),
        pg_catalog.array_agg(i.job_type ORDER BY i.ord),
        pg_catalog.array_agg(i.idempotency_key ORDER BY i.ord)
    INTO v_ids, v_types, v_keys
    FROM input AS i
    LEFT JOIN inserted AS ins ON ins.id = i.first_id
    CROSS JOIN woken
    CROSS JOIN counted;

    -- Keys whose job moved to jobq_jobs_history while the insert ran (as in jobq_enqueue):
    -- that job's id, and our row goes; under REPEATABLE READ, 40001 when the snapshot still
    -- sees such a job in jobq_jobs.
    WITH r AS MATERIALIZED (
        SELECT
            x.ord, x.id,
            CASE WHEN x.id IS NOT NULL AND x.key IS NOT NULL THEN (
                SELECT h.id FROM jobq_jobs_history AS h
                WHERE h.job_type = x.job_type AND h.idempotency_key = x.key
                LIMIT 1
            ) END AS moved_id,
            x.id IS NOT NULL AND x.key IS NOT NULL AND EXISTS (
                SELECT FROM jobq_jobs AS j
                WHERE j.job_type = x.job_type AND j.idempotency_key = x.key AND j.id <> x.id
            ) AS stale
        FROM ROWS FROM (
            pg_catalog.unnest(v_ids), pg_catalog.unnest(v_types), pg_catalog.unnest(v_keys)
        ) WITH ORDINALITY AS x (id, job_type, key, ord)
    ),

    gone AS (
        DELETE FROM jobq_jobs AS j
        WHERE j.id = ANY (ARRAY(SELECT r.id FROM r WHERE r.moved_id IS NOT NULL))
        RETURNING j.id
    )

    SELECT
        pg_catalog.array_agg(coalesce(r.moved_id, r.id) ORDER BY r.ord),
        pg_catalog.bool_or(r.stale)
    INTO v_ids, v_stale
    FROM r
    LEFT JOIN (SELECT pg_catalog.count(*) AS n FROM gone) AS g ON TRUE;
    IF v_stale THEN
        RAISE EXCEPTION 'jobq_enqueue_many: the job of an idempotency key finished while this '
                        'transaction enqueued it again'
            USING ERRCODE = 'serialization_failure',
                  HINT = 'Retry the transaction: it then returns that job''s id.';
    END IF;

    -- Jobs whose key existed already: the existing ids, read with the fresh snapshot of this
    -- statement (it sees the rows that concurrent enqueuers committed meanwhile), live or
    -- finished.
    LOOP
        SELECT
            pg_catalog.array_agg(coalesce(r.id, j.id) ORDER BY r.ord),
            (pg_catalog.count(*) FILTER (WHERE coalesce(r.id, j.id) IS NULL))::integer
        INTO v_ids, v_missing
        FROM ROWS FROM (
            pg_catalog.unnest(v_ids), pg_catalog.unnest(v_types), pg_catalog.unnest(v_keys)
        ) WITH ORDINALITY AS r (id, job_type, key, ord)
        LEFT JOIN jobq_all_jobs AS j
            ON r.id IS NULL AND j.job_type = r.job_type AND j.idempotency_key = r.key;
        EXIT WHEN v_missing = 0;

        -- The row of a key vanished between the insert and the read (pruned): those jobs go
        -- again, one by one, through jobq_enqueue's own loop.
        SELECT pg_catalog.array_agg(
            CASE WHEN r.id IS NOT NULL THEN r.id ELSE jobq_enqueue(
                job_type => job_types[r.ord],
                payload => coalesce(payloads[r.ord], '{}'::jsonb),
                idempotency_key => idempotency_keys[r.ord],
                max_attempts => coalesce(jobq__insert_jobs.max_attempts[r.ord], 5),
                run_at => run_ats[r.ord],
                priority => coalesce(priorities[r.ord], 0),
                queue => coalesce(queues[r.ord], 'default'::text),
                limit_group => limit_groups[r.ord],
                limit_key => limit_keys[r.ord],
                depends_on => NULL::uuid[],
                on_dependency_failure => 'cancel'::text
            ) END ORDER BY r.ord)
        INTO v_ids
        FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS r (id, ord);
    END LOOP;

    RETURN QUERY
    SELECT r.ord::integer, r.id
    FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS r (id, ord);
END;
$$;

COMMENT ON FUNCTION public.jobq__insert_jobs(job_types text[], payloads jsonb[], idempotency_keys text[], max_attempts integer[], run_ats timestamp with time zone[], priorities integer[], queues text[], limit_groups text[], limit_keys text[]) IS 'Private. Inserts jobs that the caller has checked, one array per column (NULL: the default),
with jobq_enqueue''s dedupe of idempotency keys; wakes workers and counts the jobs. Returns
(ord, id) per job in input order. Shared by jobq_enqueue_many and jobq_enqueue_arrays.';

CREATE FUNCTION public.jobq__job_argument_problem(job_type text, queue text, idempotency_key text, max_attempts integer, priority integer) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN jobq__blank(job_type)
            THEN 'job_type must be a non-blank string'
        WHEN pg_catalog.length(job_type) > 200
            THEN pg_catalog.format('job_type is %s characters long, at most 200 are allowed',
                                   pg_catalog.length(job_type))
        WHEN jobq__blank(queue)
            THEN 'queue must be a non-blank string'
        WHEN pg_catalog.length(queue) > 200
            THEN pg_catalog.format('queue is %s characters long, at most 200 are allowed',
                                   pg_catalog.length(queue))
        WHEN idempotency_key IS NOT NULL AND jobq__blank(idempotency_key)
            THEN 'idempotency_key must be NULL or a non-blank string'
        WHEN pg_catalog.length(idempotency_key) > 1000
            THEN pg_catalog.format(
                'idempotency_key is %s characters long, at most 1000 are allowed',
                pg_catalog.length(idempotency_key)
            )
        WHEN pg_catalog.octet_length(idempotency_key) > 1800
            THEN pg_catalog.format(
                'idempotency_key is %s bytes long, at most 1800 are allowed',
                pg_catalog.octet_length(idempotency_key)
            )
        WHEN max_attempts IS NULL OR max_attempts < 1 OR max_attempts > 1000
            THEN pg_catalog.format('max_attempts must be between 1 and 1000, got %s',
                                   coalesce(max_attempts::text, 'NULL'))
        WHEN priority IS NULL OR priority < -1000000 OR priority > 1000000
            THEN pg_catalog.format('priority must be between -1000000 and 1000000, got %s',
                                   coalesce(priority::text, 'NULL'))
    END
$$;

COMMENT ON FUNCTION public.jobq__job_argument_problem(job_type text, queue text, idempotency_key text, max_attempts integer, priority integer) IS 'Private. Returns the first problem with one job''s arguments (a message naming the
argument), or NULL.';

CREATE FUNCTION public.jobq__limit_argument_problem(limit_group text, limit_key text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN limit_group IS NOT NULL AND jobq__blank(limit_group)
            THEN 'limit_group must be NULL or a non-blank string'
        WHEN pg_catalog.length(limit_group) > 200
            THEN pg_catalog.format('limit_group is %s characters long, at most 200 are allowed',
                                   pg_catalog.length(limit_group))
        WHEN limit_key IS NOT NULL AND limit_group IS NULL
            THEN 'limit_key needs a limit_group'
        WHEN limit_key IS NOT NULL AND jobq__blank(limit_key)
            THEN 'limit_key must be NULL or a non-blank string'
        WHEN pg_catalog.length(limit_key) > 200
            THEN pg_catalog.format('limit_key is %s characters long, at most 200 are allowed',
                                   pg_catalog.length(limit_key))
    END
$$;

COMMENT ON FUNCTION public.jobq__limit_argument_problem(limit_group text, limit_key text) IS 'Private. Returns the first problem with a job''s limit_group and limit_key (a message naming
the argument), or NULL.';

CREATE FUNCTION public.jobq__metric_add(a bigint[], b bigint[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
DECLARE
    v_sum bigint[] := a;
BEGIN
    IF coalesce(pg_catalog.cardinality(b), 0) = 0 THEN
        RETURN a;
    END IF;
    IF coalesce(pg_catalog.cardinality(a), 0) = 0 THEN
        RETURN b;
    END IF;
    FOR i IN 1 .. greatest(pg_catalog.cardinality(a), pg_catalog.cardinality(b)) LOOP
        v_sum[i] := coalesce(a[i], 0) + coalesce(b[i], 0);
    END LOOP;
    RETURN v_sum;
END;
$$;

COMMENT ON FUNCTION public.jobq__metric_add(a bigint[], b bigint[]) IS 'Private. Element-wise sum of two arrays of bucket counts (an empty array counts as zeros).';

CREATE FUNCTION public.jobq__metric_bounds() RETURNS double precision[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT '{0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,30,60,120,300,600,1800,3600,7200,21600,86400}'::double precision[]
$$;

COMMENT ON FUNCTION public.jobq__metric_bounds() IS 'Private. The bucket bounds (seconds) of jobq_wait_seconds and jobq_run_seconds, in order.';

CREATE FUNCTION public.jobq__metric_bucket(seconds double precision) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT 22 - pg_catalog.width_bucket(
        -greatest(coalesce(seconds, 0), 0),
        '{-86400,-21600,-7200,-3600,-1800,-600,-300,-120,-60,-30,-10,-5,-2.5,-1,-0.5,-0.25,-0.1,-0.05,-0.025,-0.01,-0.005}'::double precision[]
    )
$$;

COMMENT ON FUNCTION public.jobq__metric_bucket(seconds double precision) IS 'Private. The 1-based bucket of jobq__metric_bounds() for a duration in seconds (22: +Inf).';

CREATE FUNCTION public.jobq__metric_histogram(buckets integer[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
DECLARE
    v_counts bigint[];
    v_i integer;
BEGIN
    IF coalesce(pg_catalog.cardinality(buckets), 0) = 0 THEN
        RETURN '{}'::bigint[];
    END IF;
    v_counts := pg_catalog.array_fill(0::bigint, ARRAY[22]);
    FOREACH v_i IN ARRAY buckets LOOP
        v_counts[v_i] := v_counts[v_i] + 1;
    END LOOP;
    RETURN v_counts;
END;
$$;

COMMENT ON FUNCTION public.jobq__metric_histogram(buckets integer[]) IS 'Private. Per-bucket counts (22 elements) of a list of bucket positions; ''{}'' for none.';

CREATE FUNCTION public.jobq__metric_labels(queues text[], job_types text[]) RETURNS TABLE(queue text, job_type text, label_queue text, label_job_type text)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_pairs text[];
    v_types text[];
    v_known boolean[];
    v_room bigint;
BEGIN
    SELECT
        pg_catalog.array_agg(p.queue ORDER BY p.queue, p.job_type),
        pg_catalog.array_agg(p.job_type ORDER BY p.queue, p.job_type),
        pg_catalog.array_agg(
            (p.queue = '' AND p.job_type = '') OR EXISTS (
                SELECT FROM jobq_metric_labels AS l
                WHERE l.queue = p.queue AND l.job_type = p.job_type
            )
            ORDER BY p.queue, p.job_type
        )
    INTO v_pairs, v_types, v_known
    FROM (
        SELECT DISTINCT r.queue, r.job_type
        FROM ROWS FROM (
            pg_catalog.unnest(jobq__metric_labels.queues),
            pg_catalog.unnest(jobq__metric_labels.job_types)
        ) AS r (queue, job_type)
    ) AS p;

    IF v_pairs IS NULL THEN
        RETURN;
    END IF;

    IF FALSE = ANY (v_known) THEN
        SELECT greatest(
            s.metrics_label_sets - (
                SELECT pg_catalog.count(*)
                FROM (SELECT DISTINCT l.queue, l.job_type FROM jobq_metric_labels AS l) AS d
            ),
            0
        )
        INTO v_room
        FROM jobq_settings AS s
        WHERE s.singleton;

        WITH admitted AS (
            INSERT INTO jobq_metric_labels AS l (queue, job_type)
            SELECT n.queue, n.job_type
            FROM ROWS FROM (
                pg_catalog.unnest(v_pairs), pg_catalog.unnest(v_types), pg_catalog.unnest(v_known)
            ) WITH ORDINALITY AS n (queue, job_type, known, ord)
            WHERE NOT n.known
            ORDER BY n.ord
            LIMIT v_room
            RETURNING l.queue, l.job_type
        )

        SELECT pg_catalog.array_agg(
            k.known OR EXISTS (
                SELECT FROM admitted AS a WHERE a.queue = k.queue AND a.job_type = k.job_type
            )
            ORDER BY k.ord
        )
        INTO v_known
        FROM ROWS FROM (
            pg_catalog.unnest(v_pairs), pg_catalog.unnest(v_types), pg_catalog.unnest(v_known)
        ) WITH ORDINALITY AS k (queue, job_type, known, ord);
    END IF;

    RETURN QUERY
    SELECT
        k.queue, k.job_type,
        CASE WHEN k.known THEN k.queue ELSE '' END,
        CASE WHEN k.known THEN k.job_type ELSE '' END
    FROM ROWS FROM (
        pg_catalog.unnest(v_pairs), pg_catalog.unnest(v_types), pg_catalog.unnest(v_known)
    ) AS k (queue, job_type, known);
END;
$$;

COMMENT ON FUNCTION public.jobq__metric_labels(queues text[], job_types text[]) IS 'Private. For each distinct (queues[i], job_types[i]): the label set jobq_metrics() counts it
under, its own when admitted to jobq_metric_labels (admitting it while fewer than
jobq_settings.metrics_label_sets pairs are), else the overflow label set ('''', '''').';

CREATE FUNCTION public.jobq__metrics_count(kind text, queues text[], job_types text[], statuses text[] DEFAULT NULL::text[], seconds double precision[] DEFAULT NULL::double precision[]) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_row jobq_metric_counters;
    v_rows jobq_metric_counters[];
    v_to text;
    v_from text;
    v_seconds double precision;
    v_buckets bigint[] := '{}'::bigint[];
    v_n bigint := 1::bigint;
    v_uniform boolean := FALSE;
    v_sum double precision;
    v_list integer[];
    v_fast boolean := TRUE;
    v_written integer;  -- counter rows written by the fast path
    v_pid integer;  -- this backend's shard, read only where a statement needs it
    v_unknown boolean;  -- a pair of the call is not admitted
    v_pair text;  -- the one pair of a call of one job, as jobq.metrics_pair holds it
BEGIN
    -- Counting off (a new installation's default): one read of the setting, nothing else.
    -- Read on its own, never in the WHERE of an upsert below: a SELECT that reads a table
    -- makes Citus push such an INSERT down to the shard, and its deparse of that statement
    -- for a table without a distribution column is not valid SQL. Read through the key
    -- (WHERE s.singleton): this statement's plan is kept for the session, made by whichever
    -- caller ran it first, and without a qual its only plan is a sequential scan; made under
    -- the enable_seqscan = off of jobq_fail_many or jobq_release_orphans, that plan is costed
    -- past jit_above_cost, and every later enqueue, completion or failure of the session
    -- would compile it.
    IF NOT (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton) THEN
        RETURN 0;
    END IF;

    -- The hot case: one job of a hot kind, the first counted statement of a transaction, of a
    -- pair this backend counts already (see the header): its row is updated, nothing else.
    IF pg_catalog.cardinality(queues) = 1
       AND kind IN ('enqueued', 'started', 'succeeded')
       AND pg_catalog.current_setting('jobq.metrics_counted', TRUE) IS DISTINCT FROM 'on' THEN
        v_pid := pg_catalog.pg_backend_pid();
        IF kind = 'enqueued' THEN
            UPDATE jobq_metric_counters AS c
            SET enqueued = c.enqueued + 1, jobs_pending = c.jobs_pending + 1
            WHERE c.queue = queues[1] AND c.job_type = job_types[1] AND c.shard = v_pid;
        ELSE
            v_seconds := CASE WHEN seconds[1] IS NOT NULL THEN greatest(seconds[1], 0) END;
            IF v_seconds IS NOT NULL THEN
                v_buckets := pg_catalog.array_fill(0::bigint, ARRAY[22]);
                v_buckets[jobq__metric_bucket(v_seconds)] := 1;
            END IF;
            IF kind = 'started' THEN
                UPDATE jobq_metric_counters AS c
                SET
                    started = c.started + 1,
                    jobs_pending = c.jobs_pending - 1,
                    jobs_processing = c.jobs_processing + 1,
                    wait_buckets = jobq__metric_add(c.wait_buckets, v_buckets),
                    wait_sum = c.wait_sum + coalesce(v_seconds, 0)
                WHERE c.queue = queues[1] AND c.job_type = job_types[1] AND c.shard = v_pid;
            ELSE
                UPDATE jobq_metric_counters AS c
                SET
                    succeeded = c.succeeded + 1,
                    jobs_processing = c.jobs_processing - 1,
                    jobs_succeeded = c.jobs_succeeded + 1,
                    run_buckets = jobq__metric_add(c.run_buckets, v_buckets),
                    run_sum = c.run_sum + coalesce(v_seconds, 0)
                WHERE c.queue = queues[1] AND c.job_type = job_types[1] AND c.shard = v_pid;
            END IF;
            v_buckets := '{}'::bigint[];
            v_seconds := NULL;
        END IF;
        IF FOUND THEN
            PERFORM pg_catalog.set_config('jobq.metrics_counted', 'on', TRUE);
            RETURN 1;
        END IF;
    END IF;

    -- Any other call: a pair not admitted (one index probe per distinct pair) sends its jobs
    -- to the label set jobq__metric_labels gives it.
    -- One job: the pair last found admitted in this transaction (jobq.metrics_pair, reset at
    -- its end; no jobq_metrics_forget can run while it writes jobs) needs no probe, so a
    -- transaction that counts one pair statement after statement probes once.
    IF pg_catalog.cardinality(queues) = 1 THEN
        v_pair := pg_catalog.length(queues[1])::text || ':' || queues[1] || job_types[1];
        IF pg_catalog.current_setting('jobq.metrics_pair', TRUE) IS NOT DISTINCT FROM v_pair THEN
            v_unknown := FALSE;
        ELSE
            v_unknown := NOT (queues[1] = '' AND job_types[1] = '') AND NOT EXISTS (
                SELECT FROM jobq_metric_labels AS l
                WHERE l.queue = queues[1] AND l.job_type = job_types[1]
            );
            IF NOT v_unknown THEN
                PERFORM pg_catalog.set_config('jobq.metrics_pair', v_pair, TRUE);
            END IF;
        END IF;
    ELSE
        v_unknown := EXISTS (
            SELECT
            FROM (
                SELECT DISTINCT r.queue, r.job_type
                FROM ROWS FROM (pg_catalog.unnest(queues), pg_catalog.unnest(job_types))
                    AS r (queue, job_type)
            ) AS p
            WHERE NOT (p.queue = '' AND p.job_type = '')
              AND NOT EXISTS (
                  SELECT FROM jobq_metric_labels AS l
                  WHERE l.queue = p.queue AND l.job_type = p.job_type
              )
        );
    END IF;
    IF v_unknown THEN
        SELECT
            pg_catalog.array_agg(m.label_queue ORDER BY r.ord),
            pg_catalog.array_agg(m.label_job_type ORDER BY r.ord),
            pg_catalog.array_agg(r.status ORDER BY r.ord),
            pg_catalog.array_agg(r.seconds ORDER BY r.ord)
        INTO queues, job_types, statuses, seconds
        FROM ROWS FROM (
            pg_catalog.unnest(queues), pg_catalog.unnest(job_types),
            pg_catalog.unnest(statuses), pg_catalog.unnest(seconds)
        ) WITH ORDINALITY AS r (queue, job_type, status, seconds, ord)
        INNER JOIN jobq__metric_labels(queues, job_types) AS m
            ON m.queue = r.queue AND m.job_type = r.job_type;
    END IF;

    -- The hot kinds, counted by the first counted statement of a transaction (every claim and
    -- completion of a worker, every jobq_enqueue in autocommit): one statement that names
    -- only the columns the kind changes. PL/pgSQL builds again, in every transaction, the
    -- state of each expression and statement it runs, so this cost follows the size of the
    -- code run, and the general path below (a grouping, a row of every column, then the
    -- upsert) is several times the code of this one.
    IF pg_catalog.current_setting('jobq.metrics_counted', TRUE) IS DISTINCT FROM 'on' THEN
        IF kind = 'enqueued' THEN
            INSERT INTO jobq_metric_counters AS c (shard, queue, job_type, enqueued, jobs_pending)
            SELECT pg_catalog.pg_backend_pid(), r.queue, r.job_type, pg_catalog.count(*),
                   pg_catalog.count(*)
            FROM ROWS FROM (pg_catalog.unnest(queues), pg_catalog.unnest(job_types))
                AS r (queue, job_type)
            GROUP BY r.queue, r.job_type
            ORDER BY r.queue, r.job_type
            ON CONFLICT (queue, job_type, shard) DO UPDATE SET
                enqueued = c.enqueued + excluded.enqueued,
                jobs_pending = c.jobs_pending + excluded.jobs_pending;
        ELSIF kind = 'started' THEN
            INSERT INTO jobq_metric_counters AS c (
                shard, queue, job_type, started, jobs_pending, jobs_processing, wait_buckets,
                wait_sum
            )
            SELECT pg_catalog.pg_backend_pid(), r.queue, r.job_type, pg_catalog.count(*),
                   -pg_catalog.count(*), pg_catalog.count(*),
                   jobq__metric_histogram(
                       pg_catalog.array_agg(jobq__metric_bucket(r.seconds))
                       FILTER (WHERE r.seconds IS NOT NULL)
                   ),
                   coalesce(pg_catalog.sum(greatest(r.seconds, 0)), 0)
            FROM ROWS FROM (
                pg_catalog.unnest(queues), pg_catalog.unnest(job_types),
                pg_catalog.unnest(seconds)
            ) AS r (queue, job_type, seconds)
            GROUP BY r.queue, r.job_type
            ORDER BY r.queue, r.job_type
            ON CONFLICT (queue, job_type, shard) DO UPDATE SET
                started = c.started + excluded.started,
                jobs_pending = c.jobs_pending + excluded.jobs_pending,
                jobs_processing = c.jobs_processing + excluded.jobs_processing,
                wait_buckets = jobq__metric_add(c.wait_buckets, excluded.wait_buckets),
                wait_sum = c.wait_sum + excluded.wait_sum;
        ELSIF kind = 'succeeded' THEN
            INSERT INTO jobq_metric_counters AS c (
                shard, queue, job_type, succeeded, jobs_processing, jobs_succeeded, run_buckets,
                run_sum
            )
            SELECT pg_catalog.pg_backend_pid(), r.queue, r.job_type, pg_catalog.count(*),
                   -pg_catalog.count(*), pg_catalog.count(*),
                   jobq__metric_histogram(
                       pg_catalog.array_agg(jobq__metric_bucket(r.seconds))
                       FILTER (WHERE r.seconds IS NOT NULL)
                   ),
                   coalesce(pg_catalog.sum(greatest(r.seconds, 0)), 0)
            FROM ROWS FROM (
                pg_catalog.unnest(queues), pg_catalog.unnest(job_types),
                pg_catalog.unnest(seconds)
            ) AS r (queue, job_type, seconds)
            GROUP BY r.queue, r.job_type
            ORDER BY r.queue, r.job_type
            ON CONFLICT (queue, job_type, shard) DO UPDATE SET
                succeeded = c.succeeded + excluded.succeeded,
                jobs_processing = c.jobs_processing + excluded.jobs_processing,
                jobs_succeeded = c.jobs_succeeded + excluded.jobs_succeeded,
                run_buckets = jobq__metric_add(c.run_buckets, excluded.run_buckets),
                run_sum = c.run_sum + excluded.run_sum;
        ELSE
            v_fast := FALSE;
        END IF;
        IF v_fast THEN
            GET DIAGNOSTICS v_written = ROW_COUNT;
            IF v_written > 0 THEN
                PERFORM pg_catalog.set_config('jobq.metrics_counted', 'on', TRUE);
            END IF;
            RETURN v_written;
        END IF;
    END IF;

    IF pg_catalog.cardinality(queues) > 1 AND kind IN ('enqueued', 'started', 'succeeded') THEN
        -- A batch whose jobs all made the same change: uniform when they share the first one's
        -- queue and job type, as the claims and completions of a worker usually do. Then the
        -- row is worked out as for one job, without the grouping below.
        SELECT
            pg_catalog.count(*),
            pg_catalog.bool_and(r.queue = queues[1] AND r.job_type = job_types[1]),
            pg_catalog.sum(greatest(r.seconds, 0)),
            pg_catalog.array_agg(jobq__metric_bucket(r.seconds)) FILTER (WHERE r.seconds IS NOT NULL)
        INTO v_n, v_uniform, v_sum, v_list
        FROM ROWS FROM (
            pg_catalog.unnest(queues), pg_catalog.unnest(job_types), pg_catalog.unnest(seconds)
        ) AS r (queue, job_type, seconds);
    END IF;

    IF pg_catalog.cardinality(queues) = 1 OR v_uniform THEN
        -- One job (jobq_enqueue, jobq_complete, jobq_fail, a claim of one), or v_n jobs that
        -- made the same change: worked out here.
        v_to := CASE kind
            WHEN 'enqueued' THEN 'pending'
            WHEN 'started' THEN 'processing'
            WHEN 'succeeded' THEN 'succeeded'
            WHEN 'cancelled' THEN 'cancelled'
            WHEN 'requeued' THEN 'pending'
            WHEN 'pruned' THEN NULL
            ELSE statuses[1]
        END;
        v_from := CASE kind
            WHEN 'enqueued' THEN NULL
            WHEN 'started' THEN 'pending'
            WHEN 'cancelled' THEN 'pending'
            WHEN 'requeued' THEN statuses[1]
            WHEN 'pruned' THEN statuses[1]
            ELSE 'processing'
        END;
        IF v_uniform THEN
            v_seconds := coalesce(v_sum, 0::double precision);
            IF kind IN ('started', 'succeeded') THEN
                v_buckets := jobq__metric_histogram(v_list);
            END IF;
        ELSE
            -- NULL: not observed (a run of a claim made before claimed_at existed).
            v_seconds := CASE WHEN seconds[1] IS NOT NULL THEN greatest(seconds[1], 0) END;
            IF kind IN ('started', 'succeeded', 'failed') AND v_seconds IS NOT NULL THEN
                v_buckets := pg_catalog.array_fill(0::bigint, ARRAY[22]);
                v_buckets[jobq__metric_bucket(v_seconds)] := 1;
            END IF;
        END IF;
        v_row := ROW(
            pg_catalog.pg_backend_pid(), queues[1], job_types[1],
            (kind = 'enqueued')::integer * v_n, (kind = 'started')::integer * v_n,
            (kind = 'succeeded')::integer * v_n, (kind = 'failed')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'dead_letter')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'cancelled')::integer * v_n,
            (kind = 'lock_expired')::integer * v_n, (kind = 'released')::integer * v_n,
            (kind = 'requeued')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'pending')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'pending')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'processing')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'processing')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'succeeded')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'succeeded')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'failed')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'failed')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'dead_letter')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'dead_letter')::integer * v_n,
            (v_to IS NOT DISTINCT FROM 'cancelled')::integer * v_n
            - (v_from IS NOT DISTINCT FROM 'cancelled')::integer * v_n,
            CASE WHEN kind = 'started' THEN v_buckets ELSE '{}'::bigint[] END,
            CASE
                WHEN kind = 'started' THEN coalesce(v_seconds, 0::double precision)
                ELSE 0::double precision
            END,
            CASE WHEN kind <> 'started' THEN v_buckets ELSE '{}'::bigint[] END,
            CASE
                WHEN kind IN ('succeeded', 'failed') THEN coalesce(v_seconds, 0::double precision)
                ELSE 0::double precision
            END
        );
        v_rows := ARRAY[v_row];
    ELSE
        SELECT pg_catalog.array_agg(ROW(
            pg_catalog.pg_backend_pid(), a.queue, a.job_type, a.enqueued, a.started,
            a.succeeded, a.failed, a.dead_lettered, a.cancelled, a.lock_expired, a.released,
            a.requeued, a.jobs_pending, a.jobs_processing, a.jobs_succeeded, a.jobs_failed,
            a.jobs_dead_letter, a.jobs_cancelled, a.wait_buckets, a.wait_sum, a.run_buckets,
            a.run_sum
        )::jobq_metric_counters ORDER BY a.queue, a.job_type)
        INTO v_rows
        FROM (
            SELECT
                e.queue, e.job_type,
                pg_catalog.count(*) FILTER (WHERE kind = 'enqueued') AS enqueued,
                pg_catalog.count(*) FILTER (WHERE kind = 'started') AS started,
                pg_catalog.count(*) FILTER (WHERE kind = 'succeeded') AS succeeded,
                pg_catalog.count(*) FILTER (WHERE kind = 'failed') AS failed,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'dead_letter') AS dead_lettered,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'cancelled') AS cancelled,
                pg_catalog.count(*) FILTER (WHERE kind = 'lock_expired') AS lock_expired,
                pg_catalog.count(*) FILTER (WHERE kind = 'released') AS released,
                pg_catalog.count(*) FILTER (WHERE kind = 'requeued') AS requeued,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'pending')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'pending') AS jobs_pending,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'processing')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'processing')
                    AS jobs_processing,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'succeeded')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'succeeded')
                    AS jobs_succeeded,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'failed')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'failed') AS jobs_failed,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'dead_letter')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'dead_letter')
                    AS jobs_dead_letter,
                pg_catalog.count(*) FILTER (WHERE e.to_status = 'cancelled')
                - pg_catalog.count(*) FILTER (WHERE e.from_status = 'cancelled')
                    AS jobs_cancelled,
                CASE
                    WHEN kind = 'started'
                        THEN jobq__metric_histogram(
                            pg_catalog.array_agg(e.bucket) FILTER (WHERE e.seconds IS NOT NULL)
                        )
                    ELSE '{}'::bigint[]
                END AS wait_buckets,
                CASE
                    WHEN kind = 'started' THEN coalesce(pg_catalog.sum(e.seconds), 0)
                    ELSE 0
                END AS wait_sum,
                CASE
                    WHEN kind IN ('succeeded', 'failed')
                        THEN jobq__metric_histogram(
                            pg_catalog.array_agg(e.bucket) FILTER (WHERE e.seconds IS NOT NULL)
                        )
                    ELSE '{}'::bigint[]
                END AS run_buckets,
                CASE
                    WHEN kind IN ('succeeded', 'failed') THEN coalesce(pg_catalog.sum(e.seconds), 0)
                    ELSE 0
                END AS run_sum
            FROM (
                SELECT
                    r.queue, r.job_type,
                    CASE kind
                        WHEN 'enqueued' THEN 'pending'
                        WHEN 'started' THEN 'processing'
                        WHEN 'succeeded' THEN 'succeeded'
                        WHEN 'cancelled' THEN 'cancelled'
                        WHEN 'requeued' THEN 'pending'
                        WHEN 'pruned' THEN NULL
                        ELSE r.status
                    END AS to_status,
                    CASE kind
                        WHEN 'enqueued' THEN NULL
                        WHEN 'started' THEN 'pending'
                        WHEN 'cancelled' THEN 'pending'
                        WHEN 'requeued' THEN r.status
                        WHEN 'pruned' THEN r.status
                        ELSE 'processing'
                    END AS from_status,
                    CASE WHEN r.seconds IS NOT NULL THEN greatest(r.seconds, 0) END AS seconds,
                    jobq__metric_bucket(r.seconds) AS bucket
                FROM ROWS FROM (
                    pg_catalog.unnest(queues), pg_catalog.unnest(job_types),
                    pg_catalog.unnest(statuses), pg_catalog.unnest(seconds)
                ) AS r (queue, job_type, status, seconds)
            ) AS e
            GROUP BY e.queue, e.job_type
        ) AS a;
        IF v_rows IS NULL THEN
            RETURN 0;
        END IF;
    END IF;

    IF pg_catalog.current_setting('jobq.metrics_counted', TRUE) = 'on' THEN
        INSERT INTO jobq_metric_deltas
        SELECT r.* FROM pg_catalog.unnest(v_rows) AS r;
        RETURN 0;
    END IF;
    -- In (queue, job_type) order: the rows are this backend's own, but a fold by
    -- jobq_metrics() may hold some of them for a moment, and always in this order.
    INSERT INTO jobq_metric_counters AS c
    SELECT r.* FROM pg_catalog.unnest(v_rows) AS r
    ON CONFLICT (queue, job_type, shard) DO UPDATE SET
        enqueued = c.enqueued + excluded.enqueued,
        started = c.started + excluded.started,
        succeeded = c.succeeded + excluded.succeeded,
        failed = c.failed + excluded.failed,
        dead_lettered = c.dead_lettered + excluded.dead_lettered,
        cancelled = c.cancelled + excluded.cancelled,
        lock_expired = c.lock_expired + excluded.lock_expired,
        released = c.released + excluded.released,
        requeued = c.requeued + excluded.requeued,
        jobs_pending = c.jobs_pending + excluded.jobs_pending,
        jobs_processing = c.jobs_processing + excluded.jobs_processing,
        jobs_succeeded = c.jobs_succeeded + excluded.jobs_succeeded,
        jobs_failed = c.jobs_failed + excluded.jobs_failed,
        jobs_dead_letter = c.jobs_dead_letter + excluded.jobs_dead_letter,
        jobs_cancelled = c.jobs_cancelled + excluded.jobs_cancelled,
        wait_buckets = CASE
            WHEN pg_catalog.cardinality(excluded.wait_buckets) = 0 THEN c.wait_buckets
            ELSE jobq__metric_add(c.wait_buckets, excluded.wait_buckets)
        END,
        wait_sum = c.wait_sum + excluded.wait_sum,
        run_buckets = CASE
            WHEN pg_catalog.cardinality(excluded.run_buckets) = 0 THEN c.run_buckets
            ELSE jobq__metric_add(c.run_buckets, excluded.run_buckets)
        END,
        run_sum = c.run_sum + excluded.run_sum;
    PERFORM pg_catalog.set_config('jobq.metrics_counted', 'on', TRUE);
    RETURN pg_catalog.cardinality(v_rows);
END;
$$;

COMMENT ON FUNCTION public.jobq__metrics_count(kind text, queues text[], job_types text[], statuses text[], seconds double precision[]) IS 'Private. Counts what one statement did to the jobs (queues[i], job_types[i]): kind enqueued,
started, succeeded, failed, lock_expired, released, cancelled, requeued or pruned; statuses[i]
the status entered (failed, lock_expired, released) or left (requeued, pruned); seconds[i] the
wait (started) or run time (succeeded, failed). The first call of a transaction upserts this
backend''s rows of jobq_metric_counters, later ones append to jobq_metric_deltas; nothing when
metrics are off. Returns the number of counter rows written.';

CREATE FUNCTION public.jobq__metrics_fold() RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_folded bigint;
BEGIN
    WITH moved AS (
        DELETE FROM jobq_metric_deltas AS d
        WHERE d.ctid = ANY (ARRAY(
            SELECT x.ctid FROM jobq_metric_deltas AS x FOR UPDATE SKIP LOCKED
        ))
        RETURNING d.*
    ),

    gone AS (
        DELETE FROM jobq_metric_counters AS c
        WHERE (c.queue, c.job_type, c.shard) IN (
            SELECT x.queue, x.job_type, x.shard
            FROM jobq_metric_counters AS x
            WHERE x.shard <> 0
              AND NOT EXISTS (
                  SELECT FROM pg_catalog.pg_stat_activity AS a WHERE a.pid = x.shard
              )
            FOR UPDATE SKIP LOCKED
        )
        RETURNING c.*
    ),

    m AS MATERIALIZED (
        SELECT * FROM moved
        UNION ALL
        SELECT * FROM gone
    ),

    wait_b AS (
        SELECT m.queue, m.job_type, u.i, pg_catalog.sum(u.n) AS n
        FROM m
        CROSS JOIN LATERAL pg_catalog.unnest(m.wait_buckets) WITH ORDINALITY AS u (n, i)
        GROUP BY m.queue, m.job_type, u.i
    ),

    run_b AS (
        SELECT m.queue, m.job_type, u.i, pg_catalog.sum(u.n) AS n
        FROM m
        CROSS JOIN LATERAL pg_catalog.unnest(m.run_buckets) WITH ORDINALITY AS u (n, i)
        GROUP BY m.queue, m.job_type, u.i
    ),

    sums AS (
        SELECT
            m.queue, m.job_type, pg_catalog.count(*) AS n_rows,
            pg_catalog.sum(m.enqueued)::bigint AS enqueued,
            pg_catalog.sum(m.started)::bigint AS started,
            pg_catalog.sum(m.succeeded)::bigint AS succeeded,
            pg_catalog.sum(m.failed)::bigint AS failed,
            pg_catalog.sum(m.dead_lettered)::bigint AS dead_lettered,
            pg_catalog.sum(m.cancelled)::bigint AS cancelled,
            pg_catalog.sum(m.lock_expired)::bigint AS lock_expired,
            pg_catalog.sum(m.released)::bigint AS released,
            pg_catalog.sum(m.requeued)::bigint AS requeued,
            pg_catalog.sum(m.jobs_pending)::bigint AS jobs_pending,
            pg_catalog.sum(m.jobs_processing)::bigint AS jobs_processing,
            pg_catalog.sum(m.jobs_succeeded)::bigint AS jobs_succeeded,
            pg_catalog.sum(m.jobs_failed)::bigint AS jobs_failed,
            pg_catalog.sum(m.jobs_dead_letter)::bigint AS jobs_dead_letter,
            pg_catalog.sum(m.jobs_cancelled)::bigint AS jobs_cancelled,
            pg_catalog.sum(m.wait_sum) AS wait_sum,
            pg_catalog.sum(m.run_sum) AS run_sum
        FROM m
        GROUP BY m.queue, m.job_type
    ),

    written AS (
        INSERT INTO jobq_metric_counters AS c
        SELECT
            0, s.queue, s.job_type, s.enqueued, s.started, s.succeeded, s.failed,
            s.dead_lettered, s.cancelled, s.lock_expired, s.released, s.requeued,
            s.jobs_pending, s.jobs_processing, s.jobs_succeeded, s.jobs_failed,
            s.jobs_dead_letter, s.jobs_cancelled,
            coalesce(ARRAY(
                SELECT w.n::bigint FROM wait_b AS w
                WHERE w.queue = s.queue AND w.job_type = s.job_type
                ORDER BY w.i
            ), '{}'),
            s.wait_sum,
            coalesce(ARRAY(
                SELECT r.n::bigint FROM run_b AS r
                WHERE r.queue = s.queue AND r.job_type = s.job_type
                ORDER BY r.i
            ), '{}'),
            s.run_sum
        FROM sums AS s
        ORDER BY s.queue, s.job_type
        ON CONFLICT (queue, job_type, shard) DO UPDATE SET
            enqueued = c.enqueued + excluded.enqueued,
            started = c.started + excluded.started,
            succeeded = c.succeeded + excluded.succeeded,
            failed = c.failed + excluded.failed,
            dead_lettered = c.dead_lettered + excluded.dead_lettered,
            cancelled = c.cancelled + excluded.cancelled,
            lock_expired = c.lock_expired + excluded.lock_expired,
            released = c.released + excluded.released,
            requeued = c.requeued + excluded.requeued,
            jobs_pending = c.jobs_pending + excluded.jobs_pending,
            jobs_processing = c.jobs_processing + excluded.jobs_processing,
            jobs_succeeded = c.jobs_succeeded + excluded.jobs_succeeded,
            jobs_failed = c.jobs_failed + excluded.jobs_failed,
            jobs_dead_letter = c.jobs_dead_letter + excluded.jobs_dead_letter,
            jobs_cancelled = c.jobs_cancelled + excluded.jobs_cancelled,
            wait_buckets = jobq__metric_add(c.wait_buckets, excluded.wait_buckets),
            wait_sum = c.wait_sum + excluded.wait_sum,
            run_buckets = jobq__metric_add(c.run_buckets, excluded.run_buckets),
            run_sum = c.run_sum + excluded.run_sum
        RETURNING 1
    )

    -- written runs whether or not it is read (a data-modifying WITH always does).
    SELECT coalesce(pg_catalog.sum(s.n_rows), 0)::bigint INTO v_folded FROM sums AS s;
    RETURN v_folded;
END;
$$;

COMMENT ON FUNCTION public.jobq__metrics_fold() IS 'Private. Folds the rows of jobq_metric_deltas, and those of jobq_metric_counters whose
backend has exited, into shard 0 (summed by queue and job_type; rows held by another session
are skipped). Result: how many rows it folded.';

CREATE FUNCTION public.jobq__notify(queues text[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_channel text := jobq__channel();
    v_count integer := coalesce(pg_catalog.cardinality(queues), 0);
BEGIN
    IF v_count = 0 THEN
        RETURN 0;
    END IF;
    IF v_count > 100 THEN
        PERFORM pg_catalog.pg_notify(v_channel, '');
        RETURN 1;
    END IF;
    PERFORM pg_catalog.pg_notify(v_channel, q.queue)
    FROM pg_catalog.unnest(queues) AS q (queue);
    RETURN v_count;
END;
$$;

COMMENT ON FUNCTION public.jobq__notify(queues text[]) IS 'Private. NOTIFY on this installation''s channel: one notification per queue (the queue name as
payload), or, for more than 100 queues, one with an empty payload that wakes every worker.
Result: how many notifications were sent.';

CREATE FUNCTION public.jobq__notify_events(kind text, payloads text[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.unnest(payloads) AS p (payload) WHERE p.payload IS NOT NULL)
    THEN
        RETURN 0;
    END IF;
    PERFORM pg_catalog.pg_notify(jobq__event_channel(kind), '');
    RETURN 1;
END;
$$;

COMMENT ON FUNCTION public.jobq__notify_events(kind text, payloads text[]) IS 'Private. NOTIFY on this installation''s channel for events of kind (jobq__event_channel): one
notification with an empty payload when payloads has a non-NULL element (no id is sent:
listeners re-check with the functions they are granted). Result: how many notifications were
sent (0 or 1).';

CREATE FUNCTION public.jobq__requeue(job_ids uuid[]) RETURNS TABLE(queue text, job_type text, old_status text)
    LANGUAGE plpgsql
    AS $$
DECLARE
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_ids uuid[];
    v_queues text[];
    v_job_types text[];
    v_statuses text[];
    v_edges record;
BEGIN
    WITH moved AS (
        DELETE FROM jobq_jobs_history AS h
        WHERE h.id = ANY (jobq__requeue.job_ids)
          AND h.status IN ('dead_letter', 'failed', 'cancelled')
        RETURNING
            h.id, h.queue, h.job_type, h.payload, h.idempotency_key, h.status, h.priority,
            h.max_attempts, h.last_error, h.errors, h.created_at, h.result, h.limit_group,
            h.limit_key, h.claimed_at
    ),

    back AS (
        INSERT INTO jobq_jobs AS j (
            id, queue, job_type, payload, idempotency_key, status, priority, attempts,
            max_attempts, available_at, last_error, errors, created_at, updated_at, scheduled,
            result, limit_group, limit_key, claimed_at
        )
        SELECT
            m.id, m.queue, m.job_type, m.payload, m.idempotency_key, 'pending', m.priority, 0,
            m.max_attempts, v_now, m.last_error, m.errors, m.created_at, v_now, FALSE,
            m.result, m.limit_group, m.limit_key, m.claimed_at
        FROM moved AS m
        RETURNING j.id
    )

    SELECT
        pg_catalog.array_agg(m.id), pg_catalog.array_agg(m.queue),
        pg_catalog.array_agg(m.job_type), pg_catalog.array_agg(m.status)
    INTO v_ids, v_queues, v_job_types, v_statuses
    FROM moved AS m
    JOIN back AS b ON b.id = m.id;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;

    -- As dependencies: unfinished again, for their waiting dependents of rule run.
    IF EXISTS (SELECT FROM jobq_job_dependencies AS e WHERE e.depends_on = ANY (v_ids)) THEN
        UPDATE jobq_jobs AS j SET has_dependents = TRUE
        WHERE j.id = ANY (v_ids)
          AND EXISTS (SELECT FROM jobq_job_dependencies AS e WHERE e.depends_on = j.id);
        WITH held AS (
            SELECT e.job_id, pg_catalog.count(*)::integer AS n
            FROM jobq_job_dependencies AS e
            WHERE e.depends_on = ANY (v_ids) AND e.on_failure = 'run'
            GROUP BY e.job_id
        ),

        locked AS MATERIALIZED (
            SELECT j.id, held.n
            FROM jobq_jobs AS j
            JOIN held ON held.job_id = j.id
            WHERE j.status = 'waiting'
            ORDER BY j.id
            FOR UPDATE OF j
        )

        UPDATE jobq_jobs AS j
        SET waiting_on = j.waiting_on + locked.n, updated_at = v_now
        FROM locked
        WHERE j.id = locked.id AND j.status = 'waiting';
    END IF;

    -- As dependents: their dependencies that still exist apply again, as at an enqueue.
    WITH gone AS (
        DELETE FROM jobq_job_dependencies AS e
        WHERE e.job_id = ANY (v_ids)
        RETURNING e.job_id, e.depends_on, e.on_failure
    )

    SELECT
        pg_catalog.array_agg(g.job_id) AS children,
        pg_catalog.array_agg(g.depends_on) AS parents,
        pg_catalog.array_agg(g.on_failure) AS rules
    INTO v_edges
    FROM gone AS g
    WHERE EXISTS (SELECT FROM jobq_all_jobs AS a WHERE a.id = g.depends_on);
    IF v_edges.children IS NOT NULL THEN
        PERFORM jobq__add_edges(
            v_edges.children, v_edges.parents, v_edges.rules, 'job_ids'::text, FALSE
        );
    END IF;

    RETURN QUERY
    SELECT r.queue, r.job_type, r.status
    FROM ROWS FROM (
        pg_catalog.unnest(v_queues),
        pg_catalog.unnest(v_job_types),
        pg_catalog.unnest(v_statuses)
    ) AS r (queue, job_type, status);
END;
$$;

COMMENT ON FUNCTION public.jobq__requeue(job_ids uuid[]) IS 'Private. Moves the dead_letter, failed and cancelled jobs among job_ids from
jobq_jobs_history back to jobq_jobs, pending and available now (attempts 0, claim and cancel
request cleared, error history kept); returns the queue, job type and former status of each.
Their dependencies apply again (waiting or cancelled again), and their waiting dependents of
rule run wait for them again.';

CREATE FUNCTION public.jobq__retire(job_ids uuid[]) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_moved integer;
    v_parents uuid[];
    v_statuses text[];
BEGIN
    IF job_ids IS NULL OR pg_catalog.cardinality(job_ids) = 0 THEN
        RETURN 0;
    END IF;
    WITH moved AS (
        DELETE FROM jobq_jobs AS j
        WHERE j.id = ANY (jobq__retire.job_ids) AND j.finished_at IS NOT NULL
        RETURNING
            j.id, j.queue, j.job_type, j.payload, j.idempotency_key, j.status, j.priority,
            j.attempts, j.max_attempts, j.available_at, j.locked_at, j.locked_by,
            j.last_error, j.errors, j.created_at, j.updated_at, j.finished_at, j.scheduled,
            j.result, j.cancel_requested_at, j.cancel_reason, j.limit_group, j.limit_key,
            j.claimed_at, j.has_dependents
    ),

    kept AS (
        INSERT INTO jobq_jobs_history (
            id, queue, job_type, payload, idempotency_key, status, priority, attempts,
            max_attempts, available_at, locked_at, locked_by, last_error, errors, created_at,
            updated_at, finished_at, scheduled, result, cancel_requested_at, cancel_reason,
            limit_group, limit_key, claimed_at
        )
        SELECT
            m.id, m.queue, m.job_type, m.payload, m.idempotency_key, m.status, m.priority,
            m.attempts, m.max_attempts, m.available_at, m.locked_at, m.locked_by, m.last_error,
            m.errors, m.created_at, m.updated_at, m.finished_at, m.scheduled, m.result,
            m.cancel_requested_at, m.cancel_reason, m.limit_group, m.limit_key, m.claimed_at
        FROM moved AS m
        RETURNING 1
    )

    SELECT
        (SELECT pg_catalog.count(*) FROM kept)::integer,
        pg_catalog.array_agg(m.id) FILTER (WHERE m.has_dependents),
        pg_catalog.array_agg(m.status) FILTER (WHERE m.has_dependents)
    INTO v_moved, v_parents, v_statuses
    FROM moved AS m;
    IF v_parents IS NOT NULL THEN
        PERFORM jobq__dependents_finished(v_parents, v_statuses);
    END IF;
    RETURN v_moved;
END;
$$;

COMMENT ON FUNCTION public.jobq__retire(job_ids uuid[]) IS 'Private. Moves the finished jobs among job_ids from jobq_jobs to jobq_jobs_history (one
DELETE ... RETURNING feeding one INSERT); returns how many moved. Called by the trigger
jobq_jobs_retire at the end of the statement that finished them. Passes the end of those
with dependents on to them (jobq__dependents_finished).';

CREATE FUNCTION public.jobq__retire_row() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM jobq__retire(ARRAY[new.id]);
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION public.jobq__retire_row() IS 'Private. Trigger of jobq_jobs (jobq_jobs_retire, AFTER INSERT OR UPDATE of a row that is
finished): moves the row to jobq_jobs_history at the end of the statement.';

CREATE FUNCTION public.jobq__retry_at(failed_at timestamp with time zone, attempts integer, backoff interval) RETURNS timestamp with time zone
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT pg_catalog.to_timestamp(
        (
            extract(epoch FROM failed_at - timestamptz 'epoch')::numeric
            + least(
                greatest(attempts, 1)::numeric * extract(epoch FROM backoff)::numeric,
                31536000
            )
        )::double precision
    )
$$;

COMMENT ON FUNCTION public.jobq__retry_at(failed_at timestamp with time zone, attempts integer, backoff interval) IS 'Private. failed_at + attempts × backoff (a number of seconds; a month is 30 days), capped at
365 days: when a failed attempt may run again. Never overflows.';

CREATE FUNCTION public.jobq__schedule_fire(name text, job_type text, payload jsonb, queue text, priority integer, max_attempts integer, fire_at timestamp with time zone) RETURNS uuid
    LANGUAGE plpgsql
    AS $$
BEGIN
    RETURN jobq_enqueue(
        job_type => jobq__schedule_fire.job_type,
        payload => jobq__schedule_fire.payload,
        idempotency_key => pg_catalog.concat(
            'jobq:schedule:', jobq__schedule_fire.name, ':',
            pg_catalog.to_char(
                jobq__schedule_fire.fire_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'
            )
        ),
        max_attempts => jobq__schedule_fire.max_attempts,
        run_at => jobq__schedule_fire.fire_at,
        priority => jobq__schedule_fire.priority,
        queue => jobq__schedule_fire.queue,
        limit_group => NULL::text,
        limit_key => NULL::text,
        depends_on => NULL::uuid[],
        on_dependency_failure => 'cancel'::text
    );
END;
$$;

COMMENT ON FUNCTION public.jobq__schedule_fire(name text, job_type text, payload jsonb, queue text, priority integer, max_attempts integer, fire_at timestamp with time zone) IS 'Private. Enqueues one fire of the schedule name (its job type, payload, queue, priority and
max_attempts), available at fire_at, with the idempotency key
jobq:schedule:<name>:<fire_at in UTC to the second, ISO 8601>; returns the job''s id (the
existing job''s when that fire was already enqueued). Used by jobq__tick and
jobq_schedule_run_now.';

CREATE FUNCTION public.jobq__statuses(finished boolean DEFAULT NULL::boolean) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
DECLARE
    -- waiting has a dependency that has not succeeded (never claimed); pending waits (also
    -- between retries); processing is claimed.
    v_unfinished CONSTANT text[] := ARRAY['waiting', 'pending', 'processing'];
    -- succeeded is done; failed is a permanent failure the worker asked for; dead_letter has
    -- used all its attempts; cancelled was cancelled (jobq_cancel).
    v_finished CONSTANT text[] := ARRAY['succeeded', 'failed', 'dead_letter', 'cancelled'];
BEGIN
    RETURN CASE jobq__statuses.finished
        WHEN TRUE THEN v_finished
        WHEN FALSE THEN v_unfinished
        ELSE pg_catalog.array_cat(v_unfinished, v_finished)
    END;
END;
$$;

COMMENT ON FUNCTION public.jobq__statuses(finished boolean) IS 'Private. The job statuses: every one (finished NULL, in the order of a job''s life), the
finished ones (finished true) or the others (finished false). Used by the CHECK constraints of
jobq_jobs and by the functions that take status names.';

CREATE FUNCTION public.jobq__tick(at timestamp with time zone) RETURNS TABLE(schedule text, fire_at timestamp with time zone, job_id uuid)
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_row record;
    v_masks bigint[];
    v_fires timestamptz[];
    v_fire timestamptz;
    v_ids uuid[];
    v_id uuid;
BEGIN
    IF at IS NULL OR NOT pg_catalog.isfinite(at) THEN
        RAISE EXCEPTION 'jobq_tick: at must be a finite time, got %', coalesce(at::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR v_row IN
        SELECT s.name, s.cron, s.timezone, s.job_type, s.payload, s.queue, s.priority,
               s.max_attempts, s.catch_up, s.next_run_at
        FROM jobq_schedules AS s
        WHERE NOT s.paused AND s.next_run_at <= jobq__tick.at
        ORDER BY s.next_run_at
        FOR UPDATE SKIP LOCKED
    LOOP
        BEGIN
            v_masks := jobq__cron_parse(v_row.cron);
            v_fires := jobq__cron_fires(
                v_masks, v_row.timezone, v_row.next_run_at, jobq__tick.at,
                CASE WHEN v_row.catch_up = 'all' THEN 1000 ELSE 1 END
            );
            IF v_row.catch_up = 'skip'
               AND v_fires[1] < jobq__tick.at - interval '1 minute' THEN
                v_fires := '{}';
            END IF;
            v_ids := '{}';
            FOREACH v_fire IN ARRAY v_fires LOOP
                v_id := jobq__schedule_fire(
                    v_row.name, v_row.job_type, v_row.payload, v_row.queue, v_row.priority,
                    v_row.max_attempts, v_fire
                );
                v_ids := pg_catalog.array_append(v_ids, v_id);
            END LOOP;
            -- The latest fire (fires come oldest first) and its job, for the schedules'
            -- listings; a tick that fires nothing keeps the previous ones.
            UPDATE jobq_schedules AS s
            SET next_run_at = jobq__cron_next(v_masks, v_row.timezone, jobq__tick.at),
                last_fired_at = coalesce(v_fires[pg_catalog.cardinality(v_fires)], s.last_fired_at),
                last_job_id = coalesce(v_ids[pg_catalog.cardinality(v_ids)], s.last_job_id)
            WHERE s.name = v_row.name;
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'jobq_tick: schedule % not fired: % (SQLSTATE %)',
                pg_catalog.quote_literal(v_row.name), SQLERRM, SQLSTATE;
            CONTINUE;
        END;
        FOR v_i IN 1..pg_catalog.cardinality(v_fires) LOOP
            schedule := v_row.name;
            fire_at := v_fires[v_i];
            job_id := v_ids[v_i];
            RETURN NEXT;
        END LOOP;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION public.jobq__tick(at timestamp with time zone) IS 'Private. jobq_tick as of the time `at` (tests move the clock with it).';

CREATE FUNCTION public.jobq__uuid_v7() RETURNS uuid
    LANGUAGE sql PARALLEL SAFE
    AS $$
    SELECT pg_catalog.encode(
        pg_catalog.set_bit(
            pg_catalog.set_bit(
                pg_catalog.overlay(
                    pg_catalog.uuid_send(pg_catalog.gen_random_uuid()),
                    pg_catalog.substr(
                        pg_catalog.int8send(
                            pg_catalog.floor(
                                pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
                                * 1000::double precision
                            )::bigint
                        ),
                        3
                    ),
                    1,
                    6
                ),
                52,
                1
            ),
            53,
            1
        ),
        'hex'
    )::uuid
$$;

COMMENT ON FUNCTION public.jobq__uuid_v7() IS 'Private. A new UUID version 7: Unix time in milliseconds (48 bits), version 7, random bits.';

CREATE FUNCTION public.jobq__uuid_v7_many(count integer) RETURNS uuid[]
    LANGUAGE plpgsql PARALLEL SAFE
    AS $$
DECLARE
    v_bytes CONSTANT bytea := pg_catalog.uuid_send(pg_catalog.gen_random_uuid());
    v_hi text;
    v_lo bigint;
BEGIN
    IF count IS NULL OR count < 1 THEN
        RETURN NULL;
    END IF;
    -- 48 bits of Unix milliseconds, the version (7), 12 random bits: 16 hexadecimal digits.
    v_hi := pg_catalog.lpad(
        pg_catalog.to_hex(
            pg_catalog.floor(
                pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
                * 1000::double precision
            )::bigint
        ),
        12, '0'
    ) || '7' || pg_catalog.substr(pg_catalog.encode(v_bytes, 'hex'), 1, 3);
    -- 1 and 0 (the variant), five zero bits (room to count), 56 random bits: negative as a
    -- bigint, which to_hex writes as its 16 hexadecimal digits. (Operators other than
    -- arithmetic ones share one precedence: each shift is in parentheses.)
    v_lo := (-9223372036854775807 - 1)
        | (pg_catalog.get_byte(v_bytes, 9)::bigint << 48)
        | (pg_catalog.get_byte(v_bytes, 10)::bigint << 40)
        | (pg_catalog.get_byte(v_bytes, 11)::bigint << 32)
        | (pg_catalog.get_byte(v_bytes, 12)::bigint << 24)
        | (pg_catalog.get_byte(v_bytes, 13)::bigint << 16)
        | (pg_catalog.get_byte(v_bytes, 14)::bigint << 8)
        | pg_catalog.get_byte(v_bytes, 15)::bigint;
    RETURN ARRAY(
        SELECT (v_hi || pg_catalog.to_hex(v_lo + g.n))::uuid
        FROM pg_catalog.generate_series(1, count) AS g (n)
        ORDER BY g.n
    );
END;
$$;

COMMENT ON FUNCTION public.jobq__uuid_v7_many(count integer) IS 'Private. count new UUID version 7 values for one batch, increasing in array order: one
timestamp and random start for the batch, then consecutive values. NULL for count < 1.';

CREATE FUNCTION public.jobq__worker_id_error(worker_id text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN jobq__blank(worker_id)
            THEN 'worker_id must be a non-blank string'
        WHEN pg_catalog.length(worker_id) > 200
            THEN pg_catalog.format('worker_id is %s characters long, at most 200 are allowed',
                                   pg_catalog.length(worker_id))
    END
$$;

COMMENT ON FUNCTION public.jobq__worker_id_error(worker_id text) IS 'Private. Returns what is wrong with worker_id (NULL, blank, more than 200 characters) as a
message naming it, or NULL.';

CREATE FUNCTION public.jobq__worker_seen(worker_id text, job_types text[], queues text[]) RETURNS void
    LANGUAGE plpgsql
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

COMMENT ON FUNCTION public.jobq__worker_seen(worker_id text, job_types text[], queues text[]) IS 'Private. Records in jobq_workers that worker_id claims with these job_types and queues
filters (NULL: all); writes only when its row is older than 5 seconds or the filters changed.
Called by jobq_dequeue.';

CREATE FUNCTION public.jobq_act_on_jobs(action text, job_ids uuid[], reason text DEFAULT NULL::text) RETURNS TABLE(job_id uuid, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
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

COMMENT ON FUNCTION public.jobq_act_on_jobs(action text, job_ids uuid[], reason text) IS 'Admin only. Acts on the given jobs and records the act in jobq_audit (who: session_user and
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

CREATE FUNCTION public.jobq_add_dependencies(job_id uuid, depends_on uuid[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_error text;
BEGIN
    IF jobq_add_dependencies.job_id IS NULL THEN
        RAISE EXCEPTION 'jobq_add_dependencies: job_id must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_error := jobq__dependency_argument_problem(
        jobq_add_dependencies.depends_on, 'cancel'::text
    );
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_add_dependencies: %', v_error
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_add_dependencies.job_id = ANY (jobq_add_dependencies.depends_on) THEN
        RAISE EXCEPTION 'jobq_add_dependencies: depends_on would close a cycle: a job cannot '
                        'wait for itself'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The new edges take the rule the job already waits under (each job has one).
    RETURN jobq__add_edges(
        pg_catalog.array_fill(
            jobq_add_dependencies.job_id,
            ARRAY[pg_catalog.cardinality(jobq_add_dependencies.depends_on)]
        ),
        jobq_add_dependencies.depends_on,
        pg_catalog.array_fill(
            coalesce((
                SELECT e.on_failure FROM jobq_job_dependencies AS e
                WHERE e.job_id = jobq_add_dependencies.job_id
                LIMIT 1
            ), 'cancel'),
            ARRAY[pg_catalog.cardinality(jobq_add_dependencies.depends_on)]
        ),
        'jobq_add_dependencies: depends_on'::text,
        TRUE
    );
END;
$$;

COMMENT ON FUNCTION public.jobq_add_dependencies(job_id uuid, depends_on uuid[]) IS 'Adds dependencies to a job that is still waiting: it then also waits for these (with the
on_dependency_failure it was enqueued with). A dependency that has already succeeded adds an
edge but holds nothing back.
Arguments: job_id (the waiting job), depends_on (up to 10,000 ids of existing jobs, no NULL).
Result: how many dependencies were added (ones already there count 0); 0 when the job is not
waiting (unknown, pending, running or finished: nothing changes).
Errors: 22023 NULL job_id, NULL or too many ids, an unknown id, or a dependency that would
close a cycle (the job itself, or a job that waits for it); nothing changes.
Concurrency: locks the dependencies still running (until commit: their completion waits for
it), then the job; a dependency that finishes concurrently is seen finished or sees the edge.';

CREATE TABLE public.jobq_audit (
    id bigint NOT NULL,
    acted_at timestamp with time zone DEFAULT now() NOT NULL,
    login_role text NOT NULL,
    acting_role text NOT NULL,
    action text NOT NULL,
    job_ids uuid[] NOT NULL,
    changed uuid[] NOT NULL,
    reason text,
    filters jsonb,
    CONSTRAINT jobq_audit_action_check CHECK ((action = ANY (ARRAY['cancel'::text, 'requeue'::text, 'delete'::text, 'run_now'::text, 'requeue_dead_letters'::text])))
);

COMMENT ON TABLE public.jobq_audit IS 'jobq: what operators did to jobs, one row per call of jobq_act_on_jobs or
jobq_requeue_dead_letters, written in the transaction of the change (a rolled-back action
leaves no row). Read through jobq_audit_log() (admin); kept until an administrator deletes
rows.';

COMMENT ON COLUMN public.jobq_audit.id IS 'The order of the actions: the newest has the highest id.';

COMMENT ON COLUMN public.jobq_audit.acted_at IS 'When: the start of the acting transaction (now()).';

COMMENT ON COLUMN public.jobq_audit.login_role IS 'Who logged in: session_user.';

COMMENT ON COLUMN public.jobq_audit.acting_role IS 'The role the session acted as: the one set by SET ROLE, else the login role.';

COMMENT ON COLUMN public.jobq_audit.action IS 'cancel, requeue, delete or run_now (jobq_act_on_jobs), requeue_dead_letters (the bulk
requeue).';

COMMENT ON COLUMN public.jobq_audit.job_ids IS 'The jobs asked for, as given (duplicates removed); for requeue_dead_letters, the jobs its
filters matched.';

COMMENT ON COLUMN public.jobq_audit.changed IS 'The jobs the action changed (a subset of job_ids: the others were unknown or in a status the
action leaves alone).';

COMMENT ON COLUMN public.jobq_audit.reason IS 'Why, as given (NULL: none).';

COMMENT ON COLUMN public.jobq_audit.filters IS 'requeue_dead_letters: the filters it was called with (job_type, queue, include_cancelled;
a NULL filter matches every value). NULL for the actions on jobs picked by id.';

COMMENT ON CONSTRAINT jobq_audit_action_check ON public.jobq_audit IS 'The actions jobq_act_on_jobs and jobq_requeue_dead_letters take.';

CREATE FUNCTION public.jobq_audit_log(before_id bigint DEFAULT NULL::bigint, max_rows integer DEFAULT 100) RETURNS SETOF public.jobq_audit
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF max_rows IS NULL OR max_rows < 1 OR max_rows > 1000 THEN
        RAISE EXCEPTION 'jobq_audit_log: max_rows must be between 1 and 1000, got %',
            coalesce(max_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT a.*
    FROM jobq_audit AS a
    WHERE a.id < coalesce(before_id, 9223372036854775807)
    ORDER BY a.id DESC
    LIMIT max_rows;
END;
$$;

COMMENT ON FUNCTION public.jobq_audit_log(before_id bigint, max_rows integer) IS 'Admin only. The actions recorded by jobq_act_on_jobs and jobq_requeue_dead_letters, newest
first.
Arguments: before_id (the id of the last row of the previous page; NULL: from the newest),
max_rows (1 to 1000, default 100).
Result: rows of jobq_audit (id, acted_at, login_role, acting_role, action, job_ids, changed,
reason, filters).
Errors: 22023 max_rows out of range.
Concurrency: a snapshot; it takes no lock.';

CREATE FUNCTION public.jobq_await(job_ids uuid[], timeout interval DEFAULT '00:00:30'::interval) RETURNS TABLE(id uuid, status text, attempts integer, result jsonb, last_error text, finished_at timestamp with time zone, cancel_requested boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_deadline timestamptz;
    v_pause double precision := 0.01::double precision;
BEGIN
    IF jobq_await.timeout IS NULL OR jobq_await.timeout < interval '0'
       OR jobq_await.timeout > interval '5 minutes' THEN
        RAISE EXCEPTION 'jobq_await: timeout must be between 0 and 5 minutes, got %',
            coalesce(jobq_await.timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Wait longer by calling it again, or LISTEN on the done channel.';
    END IF;
    IF pg_catalog.cardinality(jobq_await.job_ids) > 10000 THEN
        RAISE EXCEPTION 'jobq_await: job_ids has % elements, at most 10000 are allowed',
            pg_catalog.cardinality(jobq_await.job_ids)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;

    IF jobq_await.timeout = interval '0' THEN
        -- Only unfinished jobs not registered yet are written: a repeated call writes nothing.
        -- They are read in a step of their own, not in the INSERT's SELECT: Citus sends an
        -- INSERT whose SELECT reads a table to the shard as one statement, and its text for a
        -- table without a distribution column ends in `AND ( IS NOT NULL)`
        -- (docs/decisions/0002-sql-that-citus-can-run.md).
        WITH waited AS MATERIALIZED (
            SELECT j.id
            FROM jobq_jobs AS j
            WHERE j.id = ANY (jobq_await.job_ids)
              AND j.finished_at IS NULL
              AND NOT EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = j.id)
        )

        INSERT INTO jobq_awaits (job_id)
        SELECT w.id FROM waited AS w;
    ELSIF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'jobq_await: cannot wait in a % transaction: it would see no commit made '
                        'while it waits',
            pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
            USING ERRCODE = 'invalid_transaction_state',
                  HINT = 'Call it in a READ COMMITTED transaction (the default), or with '
                         'timeout => ''0'' to read the statuses once.';
    END IF;

    -- The deadline is on the wall clock: now() is the start of the transaction.
    v_deadline := pg_catalog.clock_timestamp() + jobq_await.timeout;
    LOOP
        EXIT WHEN NOT EXISTS (
            SELECT FROM jobq_jobs AS j
            WHERE j.id = ANY (jobq_await.job_ids) AND j.finished_at IS NULL
        );
        EXIT WHEN pg_catalog.clock_timestamp() >= v_deadline;
        PERFORM pg_catalog.pg_sleep(least(
            v_pause,
            extract(EPOCH FROM v_deadline - pg_catalog.clock_timestamp())::double precision
        ));
        v_pause := least(v_pause + v_pause, 0.5::double precision);
    END LOOP;

    RETURN QUERY
    SELECT
        j.id, j.status, j.attempts, j.result, j.last_error, j.finished_at,
        j.cancel_requested_at IS NOT NULL
    FROM jobq_all_jobs AS j
    WHERE j.id = ANY (jobq_await.job_ids)
    ORDER BY j.id;
END;
$$;

COMMENT ON FUNCTION public.jobq_await(job_ids uuid[], timeout interval) IS 'Waits until every given job has finished (succeeded, failed, dead_letter, cancelled), or
until the timeout has passed, and returns their statuses at that moment. It sees commits made
while it waits (under READ COMMITTED it polls, each check a new statement with a new snapshot:
every 10 ms at first, every 500 ms at most). With timeout 0 it returns at once and registers
interest in the unfinished jobs (jobq_awaits): their end is then announced by a NOTIFY on the
done channel (jobq-done:<schema>, with an empty payload) to a client that LISTENs there, as
Queue.wait does, which also re-reads the statuses now and then; call it so in a transaction of
its own. Registering locks no job and waits for no lock. Cost: while it waits, its statement
holds a snapshot, so VACUUM cannot remove rows that died after the wait began; prefer LISTEN
for long waits. A job whose row the caller''s transaction has locked or enqueued cannot finish
before that transaction ends: the wait then lasts until the timeout.
Arguments: job_ids (the jobs; at most 10,000; unknown ids are left out and not waited for),
timeout (0 to 5 minutes, default 30 seconds).
Result: the rows of jobq_job_status (id, status, attempts, result, last_error, finished_at,
cancel_requested), one per known id, in id order.
Errors: 22023 timeout NULL, negative or over 5 minutes; 54000 more than 10,000 job_ids; 25000
a timeout above 0 in a REPEATABLE READ or SERIALIZABLE transaction.';

CREATE FUNCTION public.jobq_cancel(job_ids uuid[], reason text DEFAULT NULL::text) RETURNS TABLE(job_id uuid, status text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_reason text := pg_catalog.substr(jobq_cancel.reason, 1, 10000);
    v_ended text[];
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF pg_catalog.cardinality(jobq_cancel.job_ids) > 100000 THEN
        RAISE EXCEPTION 'jobq_cancel: job_ids has % elements, at most 100000 are allowed',
            pg_catalog.cardinality(jobq_cancel.job_ids)
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Cancel in several calls.';
    END IF;

    WITH locked AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.id = ANY (jobq_cancel.job_ids)
          AND j.status IN ('pending', 'waiting')
        ORDER BY j.id
        FOR UPDATE
    ),

    changed AS (
        UPDATE jobq_jobs AS j
        SET
            status = 'cancelled',
            finished_at = v_now,
            waiting_on = 0,
            last_error = coalesce(v_reason, 'cancelled'),
            updated_at = v_now
        FROM locked
        WHERE j.id = locked.id
          -- Locked rows were re-read: a job claimed while we waited for its lock is processing.
          AND j.status IN ('pending', 'waiting')
        RETURNING j.id, j.queue, j.job_type
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'cancelled'::text, pg_catalog.array_agg(k.queue), pg_catalog.array_agg(k.job_type),
            NULL::text[], NULL::double precision[]
        ) AS n
        FROM changed AS k
        HAVING pg_catalog.count(*) > 0
    )

    SELECT pg_catalog.array_agg(c.id::text)
    INTO v_ended
    FROM changed AS c
    LEFT JOIN counted ON TRUE;
    -- The cancelled jobs that a client awaits (jobq_awaits) are announced on the done channel.
    IF v_ended IS NOT NULL THEN
        PERFORM jobq__notify_events('done'::text, jobq__awaits_end(v_ended::uuid[]));
    END IF;

    SET CONSTRAINTS jobq_cancel_requests_apply DEFERRED;
    INSERT INTO jobq_cancel_requests (job_id, reason, requested_at)
    SELECT j.id, v_reason, v_now
    FROM jobq_jobs AS j
    WHERE j.id = ANY (jobq_cancel.job_ids)
      AND (j.status = 'pending' OR (j.status = 'processing' AND j.cancel_requested_at IS NULL))
      AND NOT EXISTS (SELECT FROM jobq_cancel_requests AS r WHERE r.job_id = j.id)
    ORDER BY j.id;

    RETURN QUERY
    SELECT
        j.id,
        CASE
            WHEN j.status = 'processing' AND j.cancel_requested_at IS NOT NULL
                THEN 'cancel_requested'
            WHEN j.status IN ('pending', 'processing')
                 AND EXISTS (SELECT FROM jobq_cancel_requests AS r WHERE r.job_id = j.id)
                THEN 'cancel_requested'
            ELSE j.status
        END
    FROM jobq_all_jobs AS j  -- finished jobs are reported too, with their status
    WHERE j.id = ANY (jobq_cancel.job_ids)
    ORDER BY j.id;
END;
$$;

COMMENT ON FUNCTION public.jobq_cancel(job_ids uuid[], reason text) IS 'Cancels jobs. A pending or waiting job becomes cancelled at once (finished_at set, the
reason as last_error), and its dependents follow their on_dependency_failure rules. A processing job keeps running and gets a cancel request: cancel_requested_at
(and the reason in cancel_reason), set on its row when the caller''s transaction commits; its
worker is then told by a NOTIFY on the cancel channel and by jobq_cancel_requested(); if that
attempt then fails, is released or is taken over, the job ends cancelled and never runs again;
if it completes, it ends succeeded. A finished job, or a processing one already asked, is left
alone.
Arguments: job_ids (the jobs; at most 100,000), reason (why; cut to its first 10,000
characters; NULL: last_error says cancelled).
Result: one row per known id (unknown ids are left out), in id order: job_id and its status
after the call: cancelled, cancel_requested (processing with a request, or a request that this
transaction applies at its commit), or the finished status it already had.
Errors: 54000 job_ids with more than 100,000 elements.
Concurrency: it locks the pending rows it cancels, in id order, waiting for concurrent claims;
it takes no lock on a processing job''s row, so a transaction left open after it never holds
up that job''s worker. At commit, a deferred trigger locks each processing job asked, waits for
a worker statement in flight on it, and then sets the request, or cancels the job if its
attempt has ended with it pending again, or leaves it alone if it finished. A NOTIFY on the
done channel for each job it cancelled that a client awaits.';

CREATE FUNCTION public.jobq_cancel_requested(job_ids uuid[]) RETURNS SETOF uuid
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT j.id
    FROM jobq_jobs AS j
    WHERE j.id = ANY (jobq_cancel_requested.job_ids)
      AND j.cancel_requested_at IS NOT NULL
    ORDER BY j.id
$$;

COMMENT ON FUNCTION public.jobq_cancel_requested(job_ids uuid[]) IS 'Which of the given jobs have a cancel request (cancel_requested_at, set by jobq_cancel on a
processing job). A worker asks it for the jobs it holds, in the statement of its heartbeat, and
tells their handlers to stop.
Arguments: job_ids (the jobs; NULL = none).
Result: the ids of those with a request, in id order; unknown ids and jobs without a request
are left out.
Errors: none.';

CREATE FUNCTION public.jobq_capped_groups() RETURNS TABLE(limit_group text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT l.limit_group
    FROM jobq_limits AS l
    WHERE l.max_running IS NOT NULL
    ORDER BY l.limit_group
$$;

COMMENT ON FUNCTION public.jobq_capped_groups() IS 'Worker and admin. The limit groups that have a max_running cap (jobq_set_limit), by name: a
completion of one of their jobs frees a slot that a claim can take, so a worker completes such a
job in the transaction of its next claim. Any other group (unlimited, a rate limit alone, a
share alone) frees nothing on completion. Workers keep the answer for a few seconds; caps are
enforced by the claim whatever they do with it.
Arguments: none.
Result: limit_group, one row per capped group, by name.
Errors: none.
Concurrency: a plain read; it takes no lock.';

CREATE FUNCTION public.jobq_complete(job_id uuid, worker_id text, attempt integer DEFAULT NULL::integer, result jsonb DEFAULT NULL::jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    v_error text;
    v_size integer;
    v_limit integer;
    v_awaited boolean;
    v_queue text;
    v_job_type text;
    v_claimed_at timestamptz;
    v_has_dependents boolean;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__worker_id_error(jobq_complete.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_complete: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_complete.result IS NOT NULL THEN
        v_size := pg_catalog.octet_length(jobq_complete.result::text);  -- as jobq_enqueue
        SELECT s.max_payload_bytes INTO v_limit FROM jobq_settings AS s;
        IF v_size > v_limit THEN
            RAISE EXCEPTION 'jobq_complete: result is % bytes, the limit is % bytes',
                v_size, v_limit
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'Store large results elsewhere and return a reference; an admin '
                             'can change the limit with jobq_configure(max_payload_bytes => ...).';
        END IF;
    END IF;

    -- The job leaves jobq_jobs for the history in this one statement: the row the DELETE takes
    -- is inserted there succeeded, so a completion writes no new version into jobq_jobs.
    WITH moved AS (
        DELETE FROM jobq_jobs AS j
        -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
        -- test would let the planner scan jobq_jobs_locked_until_idx instead of the primary key.
        WHERE j.id = jobq_complete.job_id
          AND j.locked_by = jobq_complete.worker_id
          AND (jobq_complete.attempt IS NULL OR j.attempts = jobq_complete.attempt)
        RETURNING
            j.id, j.queue, j.job_type, j.payload, j.idempotency_key, j.priority, j.attempts,
            j.max_attempts, j.available_at, j.last_error, j.errors, j.created_at, j.scheduled,
            j.cancel_requested_at, j.cancel_reason, j.limit_group, j.limit_key, j.claimed_at,
            j.has_dependents
    ),

    kept AS (
        INSERT INTO jobq_jobs_history AS h (
            id, queue, job_type, payload, idempotency_key, status, priority, attempts,
            max_attempts, available_at, locked_at, locked_by, last_error, errors, created_at,
            updated_at, finished_at, scheduled, result, cancel_requested_at, cancel_reason,
            limit_group, limit_key, claimed_at
        )
        SELECT
            m.id, m.queue, m.job_type, m.payload, m.idempotency_key, 'succeeded', m.priority,
            m.attempts, m.max_attempts, m.available_at, NULL, NULL, m.last_error, m.errors,
            m.created_at, v_now, v_now, m.scheduled, jobq_complete.result,
            m.cancel_requested_at, m.cancel_reason, m.limit_group, m.limit_key, m.claimed_at
        FROM moved AS m
        RETURNING h.id, h.queue, h.job_type, h.claimed_at
    )

    -- Whether a client awaits the job is read in the same statement: a probe of an index that
    -- is empty unless someone waits, with no statement of its own.
    SELECT
        EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = k.id),
        k.queue, k.job_type, k.claimed_at, m.has_dependents
    INTO v_awaited, v_queue, v_job_type, v_claimed_at, v_has_dependents
    FROM kept AS k
    JOIN moved AS m ON m.id = k.id;
    -- Its dependents, only when the row says it has some: no statement for the others.
    IF v_has_dependents THEN
        PERFORM jobq__dependents_finished(ARRAY[jobq_complete.job_id], ARRAY['succeeded'::text]);
    END IF;
    IF v_awaited IS NOT NULL THEN
        PERFORM jobq__metrics_count(
            'succeeded'::text, ARRAY[v_queue], ARRAY[v_job_type], NULL::text[],
            ARRAY[extract(epoch FROM v_now - v_claimed_at)::double precision]
        );
    END IF;
    IF v_awaited AND jobq__awaits_end(ARRAY[jobq_complete.job_id]) IS NOT NULL THEN
        PERFORM pg_catalog.pg_notify(jobq__event_channel('done'::text), '');  -- no id: see jobq__notify_events
    END IF;
    RETURN v_awaited IS NOT NULL;
END;
$$;

COMMENT ON FUNCTION public.jobq_complete(job_id uuid, worker_id text, attempt integer, result jsonb) IS 'Marks the job succeeded while the worker still holds its claim, and stores the handler''s
result. A job with a cancel request that completes ends succeeded.
Arguments: job_id (the job), worker_id (the worker that claimed it: non-blank, at most 200
characters), attempt (NULL = any; else only the claim of that attempt counts, so that a claim
that expired and was taken again, even by the same worker_id, is fenced off), result (any JSON
value, at most max_payload_bytes; NULL stores none).
Result: true if it completed the job; false otherwise (unknown job, not processing, claim
taken over or of another attempt), and nothing changes then: no result is stored.
Errors: 22023 worker_id NULL, blank or longer than 200 characters; 54000 result larger than
max_payload_bytes (nothing changes).
A dependent whose last dependency this was becomes pending in the same transaction.
Concurrency: the row lock orders it against a concurrent takeover or cancel; whichever commits
first wins, and a taken-over claim can no longer complete. A NOTIFY on the installation''s done
channel (an empty payload: listeners re-check) when a client awaits the job (jobq_await).
Runs with enable_seqscan = off and jit = off (for this function only; the caller keeps its own
settings):
each job is found by its primary key whatever the statistics say.';

CREATE FUNCTION public.jobq_complete_and_claim(job_ids uuid[], worker_id text, attempts integer[] DEFAULT NULL::integer[], results jsonb[] DEFAULT NULL::jsonb[], job_types text[] DEFAULT NULL::text[], batch_size integer DEFAULT 1, lock_timeout interval DEFAULT '00:05:00'::interval, queues text[] DEFAULT NULL::text[]) RETURNS SETOF public.jobq_jobs
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_bitmapscan TO 'off'
    SET enable_seqscan TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET jit TO 'off'
    AS $$
DECLARE
    v_done uuid[];
    v_awaited text[];
    v_ids uuid[];
    v_parents uuid[];
    v_completed record;
    v_longest integer;
    v_nestloop text;
    v_hand integer := 0;
    v_handed uuid[];
    v_queues text[];
    v_paused text[];
    v_row jobq_jobs;
    v_next jobq_jobs;
    v_id uuid;
    v_freed uuid[];
    v_counts integer[];
    v_seen boolean;
    v_metrics boolean;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_lock_until timestamptz;
BEGIN
    -- Every argument is checked before anything changes, with jobq_complete_many's and
    -- jobq_dequeue's messages and bounds.
    IF jobq_complete_and_claim.batch_size IS NULL OR jobq_complete_and_claim.batch_size < 1
       OR jobq_complete_and_claim.batch_size > 10000 THEN
        RAISE EXCEPTION 'jobq_complete_and_claim: batch_size must be between 1 and 10000, got %',
            coalesce(jobq_complete_and_claim.batch_size::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_complete_and_claim.lock_timeout IS NULL
       OR jobq_complete_and_claim.lock_timeout <= interval '0' THEN
        RAISE EXCEPTION 'jobq_complete_and_claim: lock_timeout must be a positive interval, got %',
            coalesce(jobq_complete_and_claim.lock_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lock_until := v_now + least(jobq_complete_and_claim.lock_timeout, interval '1000 years');
    IF pg_catalog.cardinality(jobq_complete_and_claim.job_types) > 1000 THEN
        RAISE EXCEPTION 'jobq_complete_and_claim: job_types has % names, at most 1000 are allowed',
            pg_catalog.cardinality(jobq_complete_and_claim.job_types)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.cardinality(jobq_complete_and_claim.queues) > 1000 THEN
        RAISE EXCEPTION 'jobq_complete_and_claim: queues has % names, at most 1000 are allowed',
            pg_catalog.cardinality(jobq_complete_and_claim.queues)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(pg_catalog.array_to_string(jobq_complete_and_claim.job_types, '')) > 200
    THEN
        SELECT pg_catalog.max(pg_catalog.length(t.name)) INTO v_longest
        FROM pg_catalog.unnest(jobq_complete_and_claim.job_types) AS t (name);
        IF v_longest > 200 THEN
            RAISE EXCEPTION 'jobq_complete_and_claim: job_types has a name of % characters, at '
                'most 200 are allowed', v_longest
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    IF pg_catalog.length(pg_catalog.array_to_string(jobq_complete_and_claim.queues, '')) > 200 THEN
        SELECT pg_catalog.max(pg_catalog.length(q.name)) INTO v_longest
        FROM pg_catalog.unnest(jobq_complete_and_claim.queues) AS q (name);
        IF v_longest > 200 THEN
            RAISE EXCEPTION 'jobq_complete_and_claim: queues has a name of % characters, at most '
                '200 are allowed', v_longest
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    -- The completion, as jobq_complete_many's (with its checks of job_ids, worker_id,
    -- attempts and results, raised before anything changes).
    -- Called as an expression, not from a query: no plan, portal or tuple store for its
    -- one row.
    v_completed := jobq__complete_rows(
        'jobq_complete_and_claim', jobq_complete_and_claim.job_ids,
        jobq_complete_and_claim.worker_id, jobq_complete_and_claim.attempts,
        jobq_complete_and_claim.results
    );
    v_done := v_completed.done;
    v_ids := v_completed.awaited;
    v_parents := v_completed.parents;

    -- The dependents of the completed jobs, each with the number of its dependencies that this
    -- completion ends (two arrays that one aggregate fills in the same order), are read after the
    -- completion's statement: a dependent enqueued while the completion waited for its
    -- parent's row is committed by then, and seen. With them, when a hand-off may happen,
    -- the same statement asks whether it may: only when the claim would find nothing to take
    -- before them (see the header), by index probes, each LIMIT 1 in its index's order, so
    -- that no plan reads a table. It also reads the paused queues (never handed off), whether
    -- metrics are counted, and whether the worker's record is fresh, which spares the call
    -- of jobq__worker_seen below (its test, as it makes it).
    IF v_parents IS NOT NULL
       AND NOT (
           jobq_complete_and_claim.queues IS NULL
           OR (jobq_complete_and_claim.job_types IS NOT NULL
               AND pg_catalog.cardinality(jobq_complete_and_claim.job_types)
                   * pg_catalog.cardinality(jobq_complete_and_claim.queues) <= 64)
       ) THEN
        -- Nothing is handed off (see the header): the dependents alone.
        SELECT
            pg_catalog.array_agg(f.job_id),
            pg_catalog.array_agg(f.n)
        INTO v_freed, v_counts
        FROM (
            SELECT e.job_id, pg_catalog.count(*)::integer AS n
            FROM jobq_job_dependencies AS e
            WHERE e.depends_on = ANY (v_parents)
            GROUP BY e.job_id
        ) AS f;
    ELSIF v_parents IS NOT NULL THEN
        -- One statement per shape of the filters, so that each plan holds only the
        -- probes it runs (a plan's set-up costs as much as its probes).
        IF jobq_complete_and_claim.job_types IS NULL THEN
            SELECT fr.ids, fr.ns, CASE WHEN
                -- pending jobs without a limit in the worker's ranges
                (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
                    ORDER BY
                        pg_catalog.hashtextextended(j.job_type, 0),
                        pg_catalog.hashtextextended(j.queue, 0)
                    LIMIT 1
                )
                -- pending limited jobs of any job type
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'pending' AND NOT j.scheduled
                      AND j.limit_group IS NOT NULL
                    ORDER BY
                        j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                        j.priority DESC, j.available_at, j.id
                    LIMIT 1
                )
                -- a scheduled job come due, which the claim would promote
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'pending' AND j.scheduled AND j.available_at <= v_now
                    ORDER BY j.available_at
                    LIMIT 1
                )
                -- an expired claim, which the claim would take back or end
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'processing' AND j.locked_until < v_now
                    ORDER BY j.locked_until
                    LIMIT 1
                )
            THEN 0 ELSE jobq_complete_and_claim.batch_size END,
            (SELECT pg_catalog.array_agg(p.queue) FROM jobq_paused_queues AS p),
            (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton),
            EXISTS (
                SELECT
                FROM jobq_workers AS w
                WHERE w.worker_id = jobq_complete_and_claim.worker_id
                  AND w.last_claim_at > v_now - interval '5 seconds'
                  AND (w.job_types OPERATOR(pg_catalog.=) jobq_complete_and_claim.job_types
                       OR (w.job_types IS NULL AND jobq_complete_and_claim.job_types IS NULL))
                  AND (w.queues OPERATOR(pg_catalog.=) jobq_complete_and_claim.queues
                       OR (w.queues IS NULL AND jobq_complete_and_claim.queues IS NULL))
            )
            FROM (
                SELECT
                    pg_catalog.array_agg(f.job_id) AS ids,
                    pg_catalog.array_agg(f.n) AS ns
                FROM (
                    SELECT e.job_id, pg_catalog.count(*)::integer AS n
                    FROM jobq_job_dependencies AS e
                    WHERE e.depends_on = ANY (v_parents)
                    GROUP BY e.job_id
                ) AS f
            ) AS fr
            INTO v_freed, v_counts, v_hand, v_paused, v_metrics, v_seen;
        ELSIF jobq_complete_and_claim.queues IS NULL THEN
            SELECT fr.ids, fr.ns, CASE WHEN
                -- pending jobs without a limit in the worker's ranges
                EXISTS (
                    SELECT
                    FROM pg_catalog.unnest(jobq_complete_and_claim.job_types) AS t (job_type)
                    CROSS JOIN LATERAL (
                        SELECT j.id
                        FROM jobq_jobs AS j
                        WHERE pg_catalog.hashtextextended(j.job_type, 0)
                              = pg_catalog.hashtextextended(t.job_type, 0)
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NULL
                        ORDER BY pg_catalog.hashtextextended(j.queue, 0)
                        LIMIT 1
                    ) AS f
                )
                -- pending limited jobs of its job types
                OR EXISTS (
                    SELECT
                    FROM pg_catalog.unnest(jobq_complete_and_claim.job_types) AS t (job_type)
                    CROSS JOIN LATERAL (
                        SELECT j.id
                        FROM jobq_jobs AS j
                        WHERE j.job_type = t.job_type
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NOT NULL
                        ORDER BY
                            j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                            j.priority DESC, j.available_at, j.id
                        LIMIT 1
                    ) AS f
                )
                -- a scheduled job come due, which the claim would promote
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'pending' AND j.scheduled AND j.available_at <= v_now
                    ORDER BY j.available_at
                    LIMIT 1
                )
                -- an expired claim, which the claim would take back or end
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'processing' AND j.locked_until < v_now
                    ORDER BY j.locked_until
                    LIMIT 1
                )
            THEN 0 ELSE jobq_complete_and_claim.batch_size END,
            (SELECT pg_catalog.array_agg(p.queue) FROM jobq_paused_queues AS p),
            (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton),
            EXISTS (
                SELECT
                FROM jobq_workers AS w
                WHERE w.worker_id = jobq_complete_and_claim.worker_id
                  AND w.last_claim_at > v_now - interval '5 seconds'
                  AND (w.job_types OPERATOR(pg_catalog.=) jobq_complete_and_claim.job_types
                       OR (w.job_types IS NULL AND jobq_complete_and_claim.job_types IS NULL))
                  AND (w.queues OPERATOR(pg_catalog.=) jobq_complete_and_claim.queues
                       OR (w.queues IS NULL AND jobq_complete_and_claim.queues IS NULL))
            )
            FROM (
                SELECT
                    pg_catalog.array_agg(f.job_id) AS ids,
                    pg_catalog.array_agg(f.n) AS ns
                FROM (
                    SELECT e.job_id, pg_catalog.count(*)::integer AS n
                    FROM jobq_job_dependencies AS e
                    WHERE e.depends_on = ANY (v_parents)
                    GROUP BY e.job_id
                ) AS f
            ) AS fr
            INTO v_freed, v_counts, v_hand, v_paused, v_metrics, v_seen;
        ELSE
            SELECT fr.ids, fr.ns, CASE WHEN
                -- pending jobs without a limit in the worker's ranges
                EXISTS (
                    SELECT
                    FROM pg_catalog.unnest(jobq_complete_and_claim.job_types) AS t (job_type)
                    CROSS JOIN pg_catalog.unnest(jobq_complete_and_claim.queues) AS q (queue)
                    CROSS JOIN LATERAL (
                        SELECT j.id
                        FROM jobq_jobs AS j
                        WHERE pg_catalog.hashtextextended(j.job_type, 0)
                              = pg_catalog.hashtextextended(t.job_type, 0)
                          AND pg_catalog.hashtextextended(j.queue, 0)
                              = pg_catalog.hashtextextended(q.queue, 0)
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NULL
                        ORDER BY j.priority DESC, j.available_at, j.id
                        LIMIT 1
                    ) AS f
                )
                -- pending limited jobs of its job types
                OR EXISTS (
                    SELECT
                    FROM pg_catalog.unnest(jobq_complete_and_claim.job_types) AS t (job_type)
                    CROSS JOIN LATERAL (
                        SELECT j.id
                        FROM jobq_jobs AS j
                        WHERE j.job_type = t.job_type
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NOT NULL
                        ORDER BY
                            j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                            j.priority DESC, j.available_at, j.id
                        LIMIT 1
                    ) AS f
                )
                -- a scheduled job come due, which the claim would promote
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'pending' AND j.scheduled AND j.available_at <= v_now
                    ORDER BY j.available_at
                    LIMIT 1
                )
                -- an expired claim, which the claim would take back or end
                OR (
                    SELECT TRUE
                    FROM jobq_jobs AS j
                    WHERE j.status = 'processing' AND j.locked_until < v_now
                    ORDER BY j.locked_until
                    LIMIT 1
                )
            THEN 0 ELSE jobq_complete_and_claim.batch_size END,
            (SELECT pg_catalog.array_agg(p.queue) FROM jobq_paused_queues AS p),
            (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton),
            EXISTS (
                SELECT
                FROM jobq_workers AS w
                WHERE w.worker_id = jobq_complete_and_claim.worker_id
                  AND w.last_claim_at > v_now - interval '5 seconds'
                  AND (w.job_types OPERATOR(pg_catalog.=) jobq_complete_and_claim.job_types
                       OR (w.job_types IS NULL AND jobq_complete_and_claim.job_types IS NULL))
                  AND (w.queues OPERATOR(pg_catalog.=) jobq_complete_and_claim.queues
                       OR (w.queues IS NULL AND jobq_complete_and_claim.queues IS NULL))
            )
            FROM (
                SELECT
                    pg_catalog.array_agg(f.job_id) AS ids,
                    pg_catalog.array_agg(f.n) AS ns
                FROM (
                    SELECT e.job_id, pg_catalog.count(*)::integer AS n
                    FROM jobq_job_dependencies AS e
                    WHERE e.depends_on = ANY (v_parents)
                    GROUP BY e.job_id
                ) AS f
            ) AS fr
            INTO v_freed, v_counts, v_hand, v_paused, v_metrics, v_seen;
        END IF;
        v_hand := coalesce(v_hand, jobq_complete_and_claim.batch_size);
    END IF;

    IF pg_catalog.cardinality(v_freed) = 1 THEN
        -- One dependent (a chain's step, a pipeline's): the release, as below, of one row by
        -- its key, in one UPDATE without a join (no hash table to build, no planner setting to
        -- change). The row is locked by the UPDATE itself, which computes its new values from
        -- the row as locked (the latest version): the count is tested there, and so are the
        -- columns a hand-off depends on.
        UPDATE jobq_jobs AS j
        SET (
            waiting_on, status, available_at, attempts, locked_at, locked_by, locked_until,
            claimed_at, updated_at
        ) = (
            SELECT
                j.waiting_on - v_counts[1],
                CASE WHEN s.hand THEN 'processing' WHEN s.free THEN 'pending' ELSE 'waiting' END,
                CASE WHEN s.free AND NOT j.scheduled THEN v_now ELSE j.available_at END,
                CASE WHEN s.hand THEN j.attempts + 1 ELSE j.attempts END,
                CASE WHEN s.hand THEN v_now ELSE j.locked_at END,
                CASE WHEN s.hand THEN jobq_complete_and_claim.worker_id ELSE j.locked_by END,
                CASE WHEN s.hand THEN v_lock_until ELSE j.locked_until END,
                CASE WHEN s.hand THEN v_now ELSE j.claimed_at END,
                v_now
            FROM (
                SELECT
                    j.waiting_on <= v_counts[1] AS free,
                    j.waiting_on <= v_counts[1]
                    AND v_hand > 0
                    AND NOT j.scheduled
                    AND j.limit_group IS NULL
                    AND j.cancel_requested_at IS NULL
                    AND (jobq_complete_and_claim.job_types IS NULL
                         OR j.job_type = ANY (jobq_complete_and_claim.job_types))
                    AND (jobq_complete_and_claim.queues IS NULL
                         OR j.queue = ANY (jobq_complete_and_claim.queues))
                    AND (v_paused IS NULL OR j.queue <> ALL (v_paused)) AS hand
            ) AS s
        )
        WHERE j.id = v_freed[1]
          AND j.waiting_on > 0
        RETURNING j.*
        INTO v_next;
        IF v_next.status = 'processing' THEN
            v_handed := ARRAY[v_next.id];
            -- Counted as started when jobq_configure(metrics) is on (the setting is read
            -- with the probes, which a hand-off follows), as jobq__metrics_count counts it.
            IF v_metrics THEN
                PERFORM jobq__metrics_count(
                    'started'::text, ARRAY[v_next.queue], ARRAY[v_next.job_type], NULL::text[],
                    ARRAY[0::double precision]
                );
            END IF;
        ELSIF v_next.status = 'pending' AND v_next.available_at <= v_now THEN
            -- Released pending: announced, as jobq__dependents_finished announces it.
            PERFORM jobq__notify(ARRAY[v_next.queue]);
        END IF;
    ELSIF v_freed IS NOT NULL THEN
        v_nestloop := pg_catalog.current_setting('enable_nestloop');
        PERFORM pg_catalog.set_config('enable_nestloop', 'off', TRUE);
        -- The release, as jobq__dependents_finished's for succeeded jobs (see its comments:
        -- the same locks in id order, the same counts), in which up to v_hand of the jobs it
        -- makes available now, that the worker may take, are claimed for it instead
        -- (priority DESC, then id: all become available at v_now). The columns a hand-off
        -- tests are read from the rows as locked (FOR UPDATE returns the latest version),
        -- and the UPDATE tests the count again, so that a hand-off never makes a job
        -- processing that still waits.
        WITH freed AS MATERIALIZED (
            SELECT f.job_id, f.n
            FROM ROWS FROM (
                pg_catalog.unnest(v_freed), pg_catalog.unnest(v_counts)
            ) AS f (job_id, n)
        ),

        locked AS MATERIALIZED (
            SELECT
                j.id, j.waiting_on, j.scheduled, j.limit_group, j.cancel_requested_at,
                j.job_type, j.queue, j.priority
            FROM jobq_jobs AS j
            WHERE j.id = ANY (ARRAY(SELECT freed.job_id FROM freed))
              AND j.waiting_on > 0
            ORDER BY j.id
            FOR UPDATE
        ),

        handed AS MATERIALIZED (
            SELECT l.id
            FROM locked AS l
            JOIN freed AS f ON f.job_id = l.id
            WHERE v_hand > 0
              AND l.waiting_on <= f.n
              AND NOT l.scheduled
              AND l.limit_group IS NULL
              AND l.cancel_requested_at IS NULL
              AND (jobq_complete_and_claim.job_types IS NULL
                   OR l.job_type = ANY (jobq_complete_and_claim.job_types))
              AND (jobq_complete_and_claim.queues IS NULL
                   OR l.queue = ANY (jobq_complete_and_claim.queues))
              AND (v_paused IS NULL OR l.queue <> ALL (v_paused))
            ORDER BY l.priority DESC, l.id
            LIMIT v_hand
        ),

        released AS (
            UPDATE jobq_jobs AS j
            SET
                waiting_on = j.waiting_on - freed.n,
                status = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL THEN 'processing'
                    WHEN j.waiting_on <= freed.n THEN 'pending'
                    ELSE 'waiting'
                END,
                available_at = CASE
                    WHEN j.waiting_on <= freed.n AND NOT j.scheduled THEN v_now
                    ELSE j.available_at
                END,
                attempts = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL THEN j.attempts + 1
                    ELSE j.attempts
                END,
                locked_at = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL THEN v_now
                    ELSE j.locked_at
                END,
                locked_by = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL
                        THEN jobq_complete_and_claim.worker_id
                    ELSE j.locked_by
                END,
                locked_until = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL THEN v_lock_until
                    ELSE j.locked_until
                END,
                claimed_at = CASE
                    WHEN j.waiting_on <= freed.n AND handed.id IS NOT NULL THEN v_now
                    ELSE j.claimed_at
                END,
                updated_at = v_now
            FROM locked
            JOIN freed ON freed.job_id = locked.id
            LEFT JOIN handed ON handed.id = locked.id
            WHERE j.id = ANY (ARRAY(SELECT locked.id FROM locked))
              AND j.id = locked.id
              AND j.waiting_on > 0
            RETURNING j.id, j.status, j.queue, j.job_type, j.available_at
        ),

        counted AS MATERIALIZED (
            SELECT jobq__metrics_count(
                'started'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
                NULL::text[], pg_catalog.array_agg(0::double precision)
            ) AS n
            FROM released AS c
            WHERE c.status = 'processing'
            HAVING pg_catalog.count(*) > 0
               AND (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
        )

        SELECT
            pg_catalog.array_agg(r.id) FILTER (WHERE r.status = 'processing'),
            pg_catalog.array_agg(DISTINCT r.queue) FILTER (
                WHERE r.status = 'pending' AND r.available_at <= v_now
            )
        INTO v_handed, v_queues
        FROM released AS r
        LEFT JOIN counted ON TRUE;
        -- Only the jobs released pending are announced: a handed-off job has its worker.
        PERFORM pg_catalog.set_config('enable_nestloop', v_nestloop, TRUE);
        IF v_queues IS NOT NULL THEN
            PERFORM jobq__notify(v_queues);
        END IF;
    END IF;
    IF v_ids IS NOT NULL THEN
        v_awaited := jobq__awaits_end(v_ids);
    END IF;
    IF v_awaited IS NOT NULL THEN
        PERFORM jobq__notify_events('done'::text, v_awaited);
    END IF;

    -- The completed jobs: a row each with its id and status succeeded (every other column
    -- NULL), so that the caller learns which completions counted. Made in PL/pgSQL, without
    -- a statement: a query building the rows cost 20 µs a call.
    IF v_done IS NOT NULL THEN
        v_row.status := 'succeeded';
        FOREACH v_id IN ARRAY v_done LOOP
            v_row.id := v_id;
            RETURN NEXT v_row;
        END LOOP;
    END IF;

    IF v_next.status = 'processing' THEN
        RETURN NEXT v_next;
    ELSIF v_handed IS NOT NULL THEN
        RETURN QUERY
        SELECT j.*
        FROM jobq_jobs AS j
        WHERE j.id = ANY (v_handed)
        ORDER BY j.priority DESC, j.available_at ASC, j.id ASC;
    END IF;
    IF coalesce(pg_catalog.cardinality(v_handed), 0) < jobq_complete_and_claim.batch_size THEN
        RETURN QUERY
        SELECT * FROM jobq_dequeue(
            jobq_complete_and_claim.worker_id, jobq_complete_and_claim.job_types,
            jobq_complete_and_claim.batch_size - coalesce(pg_catalog.cardinality(v_handed), 0),
            jobq_complete_and_claim.lock_timeout, jobq_complete_and_claim.queues
        );
    ELSIF v_seen IS NOT TRUE THEN
        -- jobq_dequeue records the worker when it runs; a full hand-off does so here, unless
        -- the probes found its record fresh (then jobq__worker_seen would not write).
        PERFORM jobq__worker_seen(
            jobq_complete_and_claim.worker_id, jobq_complete_and_claim.job_types,
            jobq_complete_and_claim.queues
        );
    END IF;
END;
$$;

COMMENT ON FUNCTION public.jobq_complete_and_claim(job_ids uuid[], worker_id text, attempts integer[], results jsonb[], job_types text[], batch_size integer, lock_timeout interval, queues text[]) IS 'jobq_complete_many(job_ids, worker_id, attempts, results) then a claim of up to batch_size
jobs for the same worker (as jobq_dequeue(worker_id, job_types, batch_size, lock_timeout,
queues)), in one call, in which the dependents that the completion releases are claimed for
the worker directly (from waiting to processing, never pending, no NOTIFY) when the worker may
take them and the claim would find nothing to take before them: no pending job in its job
types and queues, no scheduled job come due, no expired claim. A dependent with a limit_group,
in a paused queue, outside the filters, scheduled for later or with a cancel request is
released pending as jobq_complete_many releases it, and the claim takes what it can in claim
order. Nothing is handed off with a queues filter and no job_types filter (or more than 64
pairs of them).
Arguments: job_ids, worker_id (non-blank, at most 200 characters), attempts and results (as
jobq_complete_many''s: optional, one per job id); job_types, batch_size (1-10000),
lock_timeout (> 0) and queues (as jobq_dequeue''s: the claim''s filters, size and lock).
Result: first one row per job completed, with only id and status (succeeded) set; then the
jobs claimed (status processing): those handed off (highest priority first, then id), then
those jobq_dequeue claimed to fill the batch.
Errors: those of jobq_complete_many and jobq_dequeue (22023 naming the argument, 54000 for a
result over max_payload_bytes), raised before anything changes.
Concurrency: as jobq_complete_many (the dependents'' rows are locked in id order, a release is
exactly once), then as jobq_dequeue.';

CREATE FUNCTION public.jobq_complete_many(job_ids uuid[], worker_id text, attempts integer[] DEFAULT NULL::integer[], results jsonb[] DEFAULT NULL::jsonb[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET jit TO 'off'
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

COMMENT ON FUNCTION public.jobq_complete_many(job_ids uuid[], worker_id text, attempts integer[], results jsonb[]) IS 'Marks succeeded, in one statement, each of the jobs that the worker still holds, each with
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

CREATE FUNCTION public.jobq_configure(max_payload_bytes integer DEFAULT NULL::integer, metrics boolean DEFAULT NULL::boolean, metrics_label_sets integer DEFAULT NULL::integer) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_max_payload_bytes integer;
    v_metrics boolean;
    v_metrics_label_sets integer;
    v_settings jsonb;
    v_was boolean;
BEGIN
    IF jobq_configure.max_payload_bytes IS NOT NULL AND jobq_configure.max_payload_bytes < 1 THEN
        RAISE EXCEPTION 'jobq_configure: max_payload_bytes must be at least 1, got %',
            jobq_configure.max_payload_bytes
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_configure.metrics_label_sets NOT BETWEEN 0 AND 1000000 THEN
        RAISE EXCEPTION 'jobq_configure: metrics_label_sets must be between 0 and 1000000, got %',
            jobq_configure.metrics_label_sets
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT s.metrics INTO v_was FROM jobq_settings AS s FOR UPDATE;
    UPDATE jobq_settings AS s
    SET
        max_payload_bytes = coalesce(jobq_configure.max_payload_bytes, s.max_payload_bytes),
        metrics = coalesce(jobq_configure.metrics, s.metrics),
        metrics_label_sets = coalesce(jobq_configure.metrics_label_sets, s.metrics_label_sets)
    -- The settings are returned as columns and made into jsonb here: Citus refuses a STABLE
    -- function (jsonb_build_object) in RETURNING.
    RETURNING s.max_payload_bytes, s.metrics, s.metrics_label_sets
    INTO v_max_payload_bytes, v_metrics, v_metrics_label_sets;
    v_settings := pg_catalog.jsonb_build_object(
        'max_payload_bytes', v_max_payload_bytes,
        'metrics', v_metrics,
        'metrics_label_sets', v_metrics_label_sets
    );
    IF jobq_configure.metrics AND NOT v_was THEN
        PERFORM jobq_metrics_recount();
    END IF;
    RETURN v_settings;
END;
$$;

COMMENT ON FUNCTION public.jobq_configure(max_payload_bytes integer, metrics boolean, metrics_label_sets integer) IS 'Admin only. Changes the settings of this installation and returns them all. Settings
live in this schema''s jobq_settings, so each tenant schema has its own.
Arguments: max_payload_bytes (the largest payload that jobq_enqueue, jobq_enqueue_many,
jobq_enqueue_arrays and jobq_schedule accept, and result that jobq_complete(_many) stores, in
bytes of its text form (octet_length(value::text), however compressed it is stored);
default 1048576; NULL leaves it as it is), metrics (whether the jobq
functions count what they do for jobq_metrics(); off on a new installation, since counting
costs a write in every counted call; false stops the counters, and true after false counts
the jobs again as jobq_metrics_recount() does; NULL leaves it), metrics_label_sets (how many
(queue, job_type) label sets jobq_metrics() counts under their own names, 0 to 1000000,
default 1000; the others are counted under the overflow label set, queue '''' and job_type
''''; lowering it keeps the label sets already admitted until jobq_metrics_forget() removes
them; NULL leaves it).
Result: every setting, as a JSON object ({"max_payload_bytes": n, "metrics": false,
"metrics_label_sets": 1000}).
Errors: 22023 max_payload_bytes < 1, metrics_label_sets outside 0..1000000.
Concurrency: turning metrics on again waits for the writers of jobq_jobs of the moment, and
blocks new ones while it counts (see jobq_metrics_recount).';

CREATE FUNCTION public.jobq_dependencies(job_id uuid) RETURNS TABLE(id uuid, job_type text, status text, result jsonb)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT a.id, a.job_type, a.status, a.result
    FROM jobq_job_dependencies AS e
    JOIN jobq_all_jobs AS a ON a.id = e.depends_on
    WHERE e.job_id = jobq_dependencies.job_id
    ORDER BY a.id
$$;

COMMENT ON FUNCTION public.jobq_dependencies(job_id uuid) IS 'The jobs that a job depends on (its direct dependencies), each with its job_type, status
and result (NULL until it succeeds with one).
Arguments: job_id (any job; NULL or unknown: no rows).
Result: one row per dependency that still exists, by id.
Errors: none.
Concurrency: a plain read; takes no lock.';

CREATE FUNCTION public.jobq_dequeue(worker_id text, job_types text[] DEFAULT NULL::text[], batch_size integer DEFAULT 1, lock_timeout interval DEFAULT '00:05:00'::interval, queues text[] DEFAULT NULL::text[]) RETURNS SETOF public.jobq_jobs
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_bitmapscan TO 'off'
    SET enable_seqscan TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET jit TO 'off'
    AS $$
DECLARE
    -- The ranges of jobq_jobs_claim_idx to claim from, by the hashes of their names:
    -- (hashtextextended(job_type, 0), hashtextextended(queue, 0)) = (v_hts[i], v_hqs[i]).
    v_hts bigint[];
    v_hqs bigint[];
    v_want integer;
    v_k bigint;
    v_ids uuid[];
    v_got integer;  -- jobs claimed by a round of 3b
    v_ended text[];
    v_error text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_lock_until timestamptz;  -- when this claim's locks expire (beyond 1000 years: never)
    v_paused text[];  -- the paused queues (NULL: none), and the hashes of their names
    v_paused_hqs bigint[];
    v_limited boolean;
    v_longest integer;
    -- The session's marks (see "Under a held horizon" above): per range of v_hts/v_hqs, the
    -- claim-order key (priority, available_at, id) from which the range is read.
    v_state text;
    v_fkey bigint;
    v_marked boolean := FALSE;  -- this claim reads the ranges from the marks
    v_until timestamptz;  -- the next full scan
    v_mprio integer[];
    v_mavail timestamptz[];
    v_mids uuid[];
    o_hts bigint[];  -- the ranges of the marks last kept (for a full scan that finds none)
    o_hqs bigint[];
    v_started timestamptz;
    v_read bigint;  -- entries of jobq_jobs_claim_idx returned to the full scan
    v_claimed integer := 0;
    c_i integer[];
    c_prio integer[];
    c_avail timestamptz[];
    v_seen integer[];
    v_round integer;
    -- keys that steps 0 and 1 make claimable (they lower the marks)
    p_ht bigint[];
    p_hq bigint[];
    p_prio integer[];
    p_avail timestamptz[];
    p_ids uuid[];
BEGIN
    v_error := jobq__worker_id_error(jobq_dequeue.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_dequeue: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- At most 10,000: a claim locks and updates its whole batch in one statement, and a worker
    -- cannot run more at once than it can hold; a larger batch only holds row locks longer.
    IF batch_size IS NULL OR batch_size < 1 OR batch_size > 10000 THEN
        RAISE EXCEPTION 'jobq_dequeue: batch_size must be between 1 and 10000, got %',
            coalesce(batch_size::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF lock_timeout IS NULL OR lock_timeout <= interval '0' THEN
        RAISE EXCEPTION 'jobq_dequeue: lock_timeout must be a positive interval, got %',
            coalesce(lock_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lock_until := v_now + least(jobq_dequeue.lock_timeout, interval '1000 years');
    -- The filters are stored in jobq_workers and read by every jobq_health: at most 1,000
    -- names each, of at most 200 characters (no job_type or queue is longer). The names are
    -- looked at one by one only when their total length could hide a longer one.
    IF pg_catalog.cardinality(jobq_dequeue.job_types) > 1000 THEN
        RAISE EXCEPTION 'jobq_dequeue: job_types has % names, at most 1000 are allowed',
            pg_catalog.cardinality(jobq_dequeue.job_types)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.cardinality(jobq_dequeue.queues) > 1000 THEN
        RAISE EXCEPTION 'jobq_dequeue: queues has % names, at most 1000 are allowed',
            pg_catalog.cardinality(jobq_dequeue.queues)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(pg_catalog.array_to_string(jobq_dequeue.job_types, '')) > 200 THEN
        SELECT pg_catalog.max(pg_catalog.length(t.name)) INTO v_longest
        FROM pg_catalog.unnest(jobq_dequeue.job_types) AS t (name);
        IF v_longest > 200 THEN
            RAISE EXCEPTION 'jobq_dequeue: job_types has a name of % characters, at most 200 '
                'are allowed', v_longest
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    IF pg_catalog.length(pg_catalog.array_to_string(jobq_dequeue.queues, '')) > 200 THEN
        SELECT pg_catalog.max(pg_catalog.length(q.name)) INTO v_longest
        FROM pg_catalog.unnest(jobq_dequeue.queues) AS q (name);
        IF v_longest > 200 THEN
            RAISE EXCEPTION 'jobq_dequeue: queues has a name of % characters, at most 200 '
                'are allowed', v_longest
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    -- What this worker asks for, for jobq_unserved_job_types (one look-up; a write at most
    -- every 5 seconds per worker).
    PERFORM jobq__worker_seen(jobq_dequeue.worker_id, jobq_dequeue.job_types, jobq_dequeue.queues);

    -- The marks of an earlier claim of this session with the same filters, in this schema.
    -- A value this function did not write, or one whose next full scan is more than a minute
    -- away, is ignored: it can only delay this session's own claims, never anyone else's.
    v_state := pg_catalog.current_setting('jobq.claim_marks', TRUE);
    IF v_state IS NOT NULL AND v_state <> '' THEN
        v_fkey := pg_catalog.hashtextextended(pg_catalog.format(
            '%L %L %L', pg_catalog.current_schema(), jobq_dequeue.job_types, jobq_dequeue.queues
        ), 0);
        BEGIN
            SELECT
                pg_catalog.array_agg((r.e ->> 0)::bigint ORDER BY r.n),
                pg_catalog.array_agg((r.e ->> 1)::bigint ORDER BY r.n),
                pg_catalog.array_agg((r.e ->> 2)::integer ORDER BY r.n),
                pg_catalog.array_agg(coalesce(
                    timestamptz '1970-01-01 00:00:00+00'
                    + (r.e ->> 3)::bigint * interval '1 microsecond',
                    timestamptz '-infinity'
                ) ORDER BY r.n),
                pg_catalog.array_agg((r.e ->> 4)::uuid ORDER BY r.n),
                pg_catalog.min(timestamptz '1970-01-01 00:00:00+00'
                               + (m.m ->> 'until')::bigint * interval '1 microsecond')
            INTO v_hts, v_hqs, v_mprio, v_mavail, v_mids, v_until
            FROM (SELECT v_state::jsonb AS m) AS m
            CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(m.m -> 'r')
                WITH ORDINALITY AS r (e, n)
            WHERE (m.m ->> 'k')::bigint = v_fkey;
            v_marked := v_until > pg_catalog.clock_timestamp()
                AND v_until <= pg_catalog.clock_timestamp() + interval '1 minute';
        EXCEPTION WHEN data_exception THEN
            v_hts := NULL;
        END;
        o_hts := v_hts;
        o_hqs := v_hqs;
        v_marked := coalesce(v_marked, FALSE) AND v_hts IS NOT NULL;
    END IF;

    -- 0. Promote the scheduled jobs that have come due (at most 1,000 per claim): they enter
    --    jobq_jobs_claim_idx, and this claim can take them. One probe of
    --    jobq_jobs_scheduled_idx when none has. SKIP LOCKED: a concurrent claim promotes
    --    the others.
    -- The probe first: a statement that can update jobq_jobs opens all its indexes and
    -- prepares its checks before it reads a row, which costs more than the probe when no job
    -- has come due (the common case).
    IF EXISTS (
        SELECT FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND j.scheduled AND j.available_at <= v_now
    ) THEN
        WITH due AS MATERIALIZED (
            SELECT j.id
            FROM jobq_jobs AS j
            WHERE j.status = 'pending'
              AND j.scheduled
              AND j.available_at <= v_now
            ORDER BY j.available_at
            LIMIT 1000
            FOR UPDATE SKIP LOCKED
        )

        , promoted AS (
            UPDATE jobq_jobs AS j
            SET scheduled = FALSE
            WHERE j.id = ANY (ARRAY(SELECT due.id FROM due))
            RETURNING j.id, j.job_type, j.queue, j.priority, j.available_at, j.limit_group
        )

        SELECT
            pg_catalog.array_agg(pg_catalog.hashtextextended(c.job_type, 0)),
            pg_catalog.array_agg(pg_catalog.hashtextextended(c.queue, 0)),
            pg_catalog.array_agg(c.priority), pg_catalog.array_agg(c.available_at),
            pg_catalog.array_agg(c.id)
        INTO p_ht, p_hq, p_prio, p_avail, p_ids
        FROM promoted AS c
        WHERE v_marked AND c.limit_group IS NULL;
    END IF;

    -- 1. Take back stale claims within the caller's filters: their lock expired (locked_until,
    --    set by the claim that made it from its own lock_timeout, whatever this claim's), so
    --    their worker is presumed dead. Each is recorded in errors (which worker lost it, and
    --    the lock length it had). One with a cancel request is not
    --    run again: cancelled; one that has used all its attempts is not run again:
    --    dead_letter. Those end here, whatever their priority, up to 1,000 per claim (the
    --    oldest locks first), and take no place in the batch. One that has attempts left goes
    --    back to pending with its original available_at, so that step 3 ranks it like any
    --    other pending job: the first batch_size of those in claim order (priority DESC,
    --    available_at, id) are taken back, which holds every one that the claim can take
    --    ahead of a pending job. The index jobq_jobs_locked_until_idx makes both a short range scan
    --    that finds nothing in the common case (the stale rows it finds are then sorted); the
    --    jobs that ended and that a client awaits are announced on the done channel.
    --    The texts of the record are made in the SELECT: Citus refuses a STABLE function
    --    (format, jsonb_build_object) over columns in the SET list of an UPDATE.
    -- stale: the stale claims that end here; rerun: those that go back to pending.
    -- Probed first, as step 0 is: one probe of jobq_jobs_locked_until_idx when no claim has
    -- expired, whatever the filters (an expired claim outside them only costs the statement).
    IF EXISTS (
        SELECT FROM jobq_jobs AS j
        WHERE j.status = 'processing' AND j.locked_until < v_now
    ) THEN
        WITH stale AS MATERIALIZED (
            SELECT
                j.id,
                pg_catalog.format(
                    'lock expired: worker %s held attempt %s since %s (lock_timeout %s)',
                    pg_catalog.substr(j.locked_by, 1, 200), j.attempts, j.locked_at,
                    j.locked_until - j.locked_at
                ) AS message,
                pg_catalog.substr(j.locked_by, 1, 200) AS worker,
                j.attempts
            FROM jobq_jobs AS j
            WHERE j.status = 'processing'
              AND j.locked_until < v_now
              AND (jobq_dequeue.job_types IS NULL OR j.job_type = ANY (jobq_dequeue.job_types))
              AND (jobq_dequeue.queues IS NULL OR j.queue = ANY (jobq_dequeue.queues))
              AND (j.cancel_requested_at IS NOT NULL OR j.attempts >= j.max_attempts)
            ORDER BY j.locked_until
            LIMIT 1000
            FOR UPDATE SKIP LOCKED
        ),

        rerun AS MATERIALIZED (
            SELECT
                j.id,
                pg_catalog.format(
                    'lock expired: worker %s held attempt %s since %s (lock_timeout %s)',
                    pg_catalog.substr(j.locked_by, 1, 200), j.attempts, j.locked_at,
                    j.locked_until - j.locked_at
                ) AS message,
                pg_catalog.substr(j.locked_by, 1, 200) AS worker,
                j.attempts
            FROM jobq_jobs AS j
            WHERE j.status = 'processing'
              AND j.locked_until < v_now
              AND (jobq_dequeue.job_types IS NULL OR j.job_type = ANY (jobq_dequeue.job_types))
              AND (jobq_dequeue.queues IS NULL OR j.queue = ANY (jobq_dequeue.queues))
              AND j.cancel_requested_at IS NULL
              AND j.attempts < j.max_attempts
            ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
            LIMIT jobq_dequeue.batch_size
            FOR UPDATE SKIP LOCKED
        ),

        taken_back AS (
            SELECT * FROM stale
            UNION ALL
            SELECT * FROM rerun
        ),

        record AS (
            SELECT
                stale.id,
                stale.message,
                pg_catalog.jsonb_build_object(
                    'attempt', stale.attempts,
                    'at', v_now,
                    'worker', stale.worker,
                    'error', stale.message,
                    'kind', 'lock_expired'
                ) AS entry
            FROM taken_back AS stale
        ),

        taken AS (
            UPDATE jobq_jobs AS j
            SET
                status = CASE
                    WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                    WHEN j.attempts >= j.max_attempts THEN 'dead_letter'
                    ELSE 'pending'
                END,
                -- locked_by is cut to the 200 characters a worker_id may have: a claim recorded
                -- before that bound existed must not make its takeover fail for its size.
                last_error = r.message,
                errors = jobq__append_error(j.errors, r.entry),
                finished_at = CASE
                    WHEN j.cancel_requested_at IS NOT NULL OR j.attempts >= j.max_attempts
                        THEN v_now
                END,
                scheduled = FALSE,
                locked_at = NULL,
                locked_by = NULL,
                locked_until = NULL,
                updated_at = v_now
            FROM record AS r
            -- The rows are found by primary key, as an array, whatever the join's method: joined
            -- by id alone, the generic plan made with statistics that counted many processing
            -- jobs (a burst claimed on a small table, then analyzed) hashed the whole of jobq_jobs
            -- on every claim that took a stale job back.
            WHERE j.id = ANY (ARRAY(SELECT s.id FROM taken_back AS s))
              AND j.id = r.id
            RETURNING j.id, j.status, j.queue, j.job_type
        ),

        counted AS MATERIALIZED (
            SELECT jobq__metrics_count(
                'lock_expired'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
                pg_catalog.array_agg(c.status), NULL::double precision[]
            ) AS n
            FROM taken AS c
            HAVING pg_catalog.count(*) > 0
               AND (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
        )

        SELECT
            pg_catalog.array_agg(t.id::text) FILTER (WHERE t.status <> 'pending'),
            (pg_catalog.count(*) FILTER (WHERE t.status = 'pending'))::integer
        INTO v_ended, v_round
        FROM taken AS t
        LEFT JOIN counted ON TRUE;
        IF v_ended IS NOT NULL THEN
            PERFORM jobq__notify_events('done'::text, jobq__awaits_end(v_ended::uuid[]));
        END IF;
    END IF;
    -- A job taken back keeps its available_at, ahead of the marks: this claim scans in full.
    IF v_round > 0 THEN
        v_marked := FALSE;
    END IF;

    -- Paused queues (jobq_pause): one read of jobq_paused_queues, an empty table unless an
    -- operator paused a queue. While one is, the claim scans in full and leaves out the ranges
    -- of the paused queues (by the hash of their names, the key of jobq_jobs_claim_idx; a queue
    -- whose name has the same 64-bit hash as a paused one waits with it), and jobq__claim_limited
    -- their limited jobs: their jobs stay pending, spend no attempt and keep their order.
    -- Steps 0 and 1 still promote their due jobs and take back their expired claims.
    SELECT
        pg_catalog.array_agg(p.queue),
        pg_catalog.array_agg(pg_catalog.hashtextextended(p.queue, 0))
    INTO v_paused, v_paused_hqs
    FROM jobq_paused_queues AS p;
    IF v_paused IS NOT NULL THEN
        v_marked := FALSE;
    END IF;

    -- With marks, the jobs promoted by step 0 lower the marks of their ranges (or add their
    -- ranges), so that this claim ranks them as a full scan would.
    IF v_marked AND p_ids IS NOT NULL THEN
        SELECT
            pg_catalog.array_agg(m.ht ORDER BY m.ht, m.hq),
            pg_catalog.array_agg(m.hq ORDER BY m.ht, m.hq),
            pg_catalog.array_agg(m.prio ORDER BY m.ht, m.hq),
            pg_catalog.array_agg(m.avail ORDER BY m.ht, m.hq),
            pg_catalog.array_agg(m.id ORDER BY m.ht, m.hq)
        INTO v_hts, v_hqs, v_mprio, v_mavail, v_mids
        FROM (
            SELECT DISTINCT ON (x.ht, x.hq) x.ht, x.hq, x.prio, x.avail, x.id
            FROM (
                SELECT * FROM ROWS FROM (
                    pg_catalog.unnest(v_hts), pg_catalog.unnest(v_hqs),
                    pg_catalog.unnest(v_mprio), pg_catalog.unnest(v_mavail),
                    pg_catalog.unnest(v_mids)
                ) AS a (ht, hq, prio, avail, id)
                UNION ALL
                SELECT * FROM ROWS FROM (
                    pg_catalog.unnest(p_ht), pg_catalog.unnest(p_hq),
                    pg_catalog.unnest(p_prio), pg_catalog.unnest(p_avail),
                    pg_catalog.unnest(p_ids)
                ) AS b (ht, hq, prio, avail, id)
            ) AS x (ht, hq, prio, avail, id)
            ORDER BY x.ht, x.hq, x.prio DESC, x.avail ASC, x.id ASC
        ) AS m;
    END IF;

    -- 2. The ranges of jobq_jobs_claim_idx to read: one per (job_type, queue) pair, keyed by
    --    the hashes of the two names (h(x) is hashtextextended(x, 0), the index's keys). With
    --    both filters they are known; otherwise the ranges that hold pending jobs are found in
    --    the index itself (a skip scan: one probe per range, whatever the number of rows in
    --    it). By job type, the probes stay inside the ranges of those types; by queue alone or
    --    with no filter, every range with pending jobs is visited once. Both filters name their
    --    pairs only while there are few of them: 1,000 types by 1,000 queues would be a million
    --    ranges to read, where the probes by type visit only the ranges that hold jobs, and
    --    the queue filter then keeps those of its queues. Two names whose hashes
    --    collide share a range: step 3 compares each row's names with the filters, so a range
    --    never gives a job the filters leave out.
    IF NOT v_marked THEN
        v_started := pg_catalog.clock_timestamp();
        v_read := pg_catalog.pg_stat_get_xact_tuples_returned('jobq_jobs_claim_idx'::regclass);
        v_hts := NULL;
        v_hqs := NULL;
    END IF;
    IF v_marked THEN
        NULL;  -- the ranges are the marks'
    ELSIF jobq_dequeue.job_types IS NOT NULL AND jobq_dequeue.queues IS NOT NULL
          AND pg_catalog.cardinality(jobq_dequeue.job_types)
              * pg_catalog.cardinality(jobq_dequeue.queues) <= 64 THEN
        SELECT pg_catalog.array_agg(p.ht), pg_catalog.array_agg(p.hq)
        INTO v_hts, v_hqs
        FROM (
            SELECT DISTINCT
                pg_catalog.hashtextextended(t.job_type, 0) AS ht,
                pg_catalog.hashtextextended(q.queue, 0) AS hq
            FROM pg_catalog.unnest(jobq_dequeue.job_types) AS t (job_type)
            CROSS JOIN pg_catalog.unnest(jobq_dequeue.queues) AS q (queue)
            WHERE t.job_type IS NOT NULL AND q.queue IS NOT NULL
        ) AS p;
    ELSIF jobq_dequeue.job_types IS NOT NULL THEN
        WITH RECURSIVE ranges (ht, hq) AS (
            SELECT
                t.ht,
                (
                    SELECT pg_catalog.hashtextextended(j.queue, 0)
                    FROM jobq_jobs AS j
                    WHERE pg_catalog.hashtextextended(j.job_type, 0) = t.ht
                      AND j.status = 'pending'
                      AND NOT j.scheduled
                      AND j.limit_group IS NULL
                    ORDER BY pg_catalog.hashtextextended(j.queue, 0)
                    LIMIT 1
                )
            FROM (
                SELECT DISTINCT pg_catalog.hashtextextended(u.job_type, 0) AS ht
                FROM pg_catalog.unnest(jobq_dequeue.job_types) AS u (job_type)
                WHERE u.job_type IS NOT NULL
            ) AS t

            UNION ALL

            SELECT
                r.ht,
                (
                    SELECT pg_catalog.hashtextextended(j.queue, 0)
                    FROM jobq_jobs AS j
                    WHERE pg_catalog.hashtextextended(j.job_type, 0) = r.ht
                      AND pg_catalog.hashtextextended(j.queue, 0) > r.hq
                      AND j.status = 'pending'
                      AND NOT j.scheduled
                      AND j.limit_group IS NULL
                    ORDER BY pg_catalog.hashtextextended(j.queue, 0)
                    LIMIT 1
                )
            FROM ranges AS r
            WHERE r.hq IS NOT NULL
        )

        SELECT pg_catalog.array_agg(r.ht), pg_catalog.array_agg(r.hq)
        INTO v_hts, v_hqs
        FROM ranges AS r
        WHERE r.hq IS NOT NULL
          AND (jobq_dequeue.queues IS NULL OR r.hq = ANY (ARRAY(
              SELECT pg_catalog.hashtextextended(q.queue, 0)
              FROM pg_catalog.unnest(jobq_dequeue.queues) AS q (queue)
          )));
    ELSE
        WITH RECURSIVE ranges (ht, hq) AS (
            (
                SELECT
                    pg_catalog.hashtextextended(j.job_type, 0),
                    pg_catalog.hashtextextended(j.queue, 0)
                FROM jobq_jobs AS j
                WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
                ORDER BY
                    pg_catalog.hashtextextended(j.job_type, 0),
                    pg_catalog.hashtextextended(j.queue, 0)
                LIMIT 1
            )

            UNION ALL

            SELECT n.ht, n.hq
            FROM ranges AS r
            CROSS JOIN LATERAL (
                SELECT
                    pg_catalog.hashtextextended(j.job_type, 0) AS ht,
                    pg_catalog.hashtextextended(j.queue, 0) AS hq
                FROM jobq_jobs AS j
                WHERE (pg_catalog.hashtextextended(j.job_type, 0),
                       pg_catalog.hashtextextended(j.queue, 0)) > (r.ht, r.hq)
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.limit_group IS NULL
                ORDER BY
                    pg_catalog.hashtextextended(j.job_type, 0),
                    pg_catalog.hashtextextended(j.queue, 0)
                LIMIT 1
            ) AS n
        )

        SELECT pg_catalog.array_agg(r.ht), pg_catalog.array_agg(r.hq)
        INTO v_hts, v_hqs
        FROM ranges AS r
        WHERE jobq_dequeue.queues IS NULL OR r.hq = ANY (ARRAY(
            SELECT pg_catalog.hashtextextended(q.queue, 0)
            FROM pg_catalog.unnest(jobq_dequeue.queues) AS q (queue)
        ));
    END IF;
    IF v_paused IS NOT NULL THEN
        SELECT pg_catalog.array_agg(r.ht ORDER BY r.n), pg_catalog.array_agg(r.hq ORDER BY r.n)
        INTO v_hts, v_hqs
        FROM ROWS FROM (pg_catalog.unnest(v_hts), pg_catalog.unnest(v_hqs))
            WITH ORDINALITY AS r (ht, hq, n)
        WHERE r.hq <> ALL (v_paused_hqs);
    END IF;

    -- 2b. Limited jobs (limit_group set) are in jobq_jobs_limited_idx, not in the ranges
    --     above: when some wait within the filters (one probe per job type, or of the whole
    --     index without a job type filter; an empty index costs one probe), the claim is
    --     jobq__claim_limited's, which merges both kinds under the limits. Otherwise the claim
    --     below runs exactly as it does without limits. Each probe reads the index in its
    --     order (ORDER BY its columns, LIMIT 1), so no plan can read the table instead: as an
    --     EXISTS, a generic plan made while most rows were pending limited jobs (a backlog
    --     enqueued at once, then analyzed) was a sequential scan, which on every later claim
    --     of the session read every finished job before the first pending one.
    IF jobq_dequeue.job_types IS NOT NULL THEN
        v_limited := EXISTS (
            SELECT 1
            FROM pg_catalog.unnest(jobq_dequeue.job_types) AS u (job_type)
            CROSS JOIN LATERAL (
                SELECT j.id
                FROM jobq_jobs AS j
                WHERE j.job_type = u.job_type
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.limit_group IS NOT NULL
                ORDER BY
                    j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                    j.priority DESC, j.available_at, j.id
                LIMIT 1
            ) AS f
        );
    ELSE
        v_limited := (
            SELECT TRUE
            FROM jobq_jobs AS j
            WHERE j.status = 'pending'
              AND NOT j.scheduled
              AND j.limit_group IS NOT NULL
              AND (jobq_dequeue.queues IS NULL OR j.queue = ANY (jobq_dequeue.queues))
            ORDER BY
                j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, ''),
                j.priority DESC, j.available_at, j.id
            LIMIT 1
        ) IS NOT NULL;
    END IF;
    IF v_limited THEN
        RETURN QUERY
        SELECT * FROM jobq__claim_limited(
            jobq_dequeue.worker_id, jobq_dequeue.job_types, jobq_dequeue.queues,
            jobq_dequeue.batch_size, v_hts, v_hqs, v_lock_until, v_paused
        );
        RETURN;
    END IF;

    IF v_hts IS NULL THEN
        NULL;  -- no pending job in the filters

    -- 3a. One range (the common case: a worker of one job type, or one type in one queue):
    --     the claim in one statement. The candidates, in the order of the range, are locked
    --     with SKIP LOCKED in a MATERIALIZED CTE, so the LIMIT is applied once and no plan can
    --     lock or return more than batch_size rows; the UPDATE is joined to them.
    ELSIF pg_catalog.cardinality(v_hts) = 1 AND NOT v_marked THEN
        RETURN QUERY
        WITH candidates AS MATERIALIZED (
            SELECT j.id
            FROM jobq_jobs AS j
            WHERE pg_catalog.hashtextextended(j.job_type, 0) = v_hts[1]
              AND pg_catalog.hashtextextended(j.queue, 0) = v_hqs[1]
              AND (jobq_dequeue.job_types IS NULL OR j.job_type = ANY (jobq_dequeue.job_types))
              AND (jobq_dequeue.queues IS NULL OR j.queue = ANY (jobq_dequeue.queues))
              AND j.status = 'pending'
              AND NOT j.scheduled
              AND j.limit_group IS NULL
              AND j.available_at <= v_now
            ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
            LIMIT jobq_dequeue.batch_size
            FOR UPDATE SKIP LOCKED
        ),

        claimed AS (
            UPDATE jobq_jobs AS j
            SET
                status = 'processing',
                attempts = j.attempts + 1,
                locked_at = v_now,
                locked_by = jobq_dequeue.worker_id,
                locked_until = v_lock_until,
                claimed_at = v_now,
                updated_at = v_now
            WHERE j.id = ANY (ARRAY(SELECT c.id FROM candidates AS c))
            RETURNING j.*
        ),

        -- Counted only while jobq_configure(metrics) is on: the call alone costs more than
        -- the test of the setting.
        counted AS MATERIALIZED (
            SELECT jobq__metrics_count(
                'started'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
                NULL::text[],
                pg_catalog.array_agg(extract(epoch FROM c.claimed_at - c.available_at)::double precision)
            ) AS n
            FROM claimed AS c
            HAVING pg_catalog.count(*) > 0
               AND (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
        )

        SELECT c.*
        FROM claimed AS c
        LEFT JOIN counted ON TRUE
        ORDER BY c.priority DESC, c.available_at ASC, c.id ASC;
        GET DIAGNOSTICS v_claimed = ROW_COUNT;
    ELSE
        -- 3b. Several ranges, or any with marks: the first v_k rows of each range, merged,
        --     first v_k of those (read without locks, so that no row is locked that is not
        --     claimed); then those are locked in claim order with SKIP LOCKED until
        --     batch_size are. When concurrent claims hold some of them and there may be more
        --     beyond the first v_k, again with 4 x v_k: a claim never comes back short while
        --     jobs it could claim are waiting. With marks, each range is read in three index
        --     ranges: the priorities above its mark's, its mark's from the mark on, those
        --     below; the first round moves each range's mark to the first row it read there
        --     at or below the mark's priority (the rows before it were claimed or finished: a
        --     row held by a concurrent claim is read, so a mark never passes a job that claim
        --     may give back; a burst of higher priority leaves the mark where it was).
        v_want := jobq_dequeue.batch_size;
        v_k := jobq_dequeue.batch_size::bigint * 2;
        v_round := 0;
        LOOP
            v_round := v_round + 1;
            IF v_marked THEN
                SELECT
                    pg_catalog.array_agg(c.id ORDER BY c.priority DESC, c.available_at, c.id),
                    pg_catalog.array_agg(c.i ORDER BY c.priority DESC, c.available_at, c.id),
                    pg_catalog.array_agg(
                        c.priority ORDER BY c.priority DESC, c.available_at, c.id
                    ),
                    pg_catalog.array_agg(
                        c.available_at ORDER BY c.priority DESC, c.available_at, c.id
                    )
                INTO v_ids, c_i, c_prio, c_avail
                FROM (
                    SELECT r.i, r.id, r.priority, r.available_at
                    FROM pg_catalog.generate_series(1, pg_catalog.cardinality(v_hts)) AS p (i)
                    CROSS JOIN LATERAL (
                        (
                            SELECT p.i, j.id, j.priority, j.available_at
                            FROM jobq_jobs AS j
                            WHERE pg_catalog.hashtextextended(j.job_type, 0) = v_hts[p.i]
                              AND pg_catalog.hashtextextended(j.queue, 0) = v_hqs[p.i]
                              AND j.priority > v_mprio[p.i]
                              AND (jobq_dequeue.job_types IS NULL
                                   OR j.job_type = ANY (jobq_dequeue.job_types))
                              AND (jobq_dequeue.queues IS NULL
                                   OR j.queue = ANY (jobq_dequeue.queues))
                              AND j.status = 'pending'
                              AND NOT j.scheduled
                              AND j.limit_group IS NULL
                              AND j.available_at <= v_now
                            ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
                            LIMIT v_k
                        )

                        UNION ALL

                        (
                            SELECT p.i, j.id, j.priority, j.available_at
                            FROM jobq_jobs AS j
                            WHERE pg_catalog.hashtextextended(j.job_type, 0) = v_hts[p.i]
                              AND pg_catalog.hashtextextended(j.queue, 0) = v_hqs[p.i]
                              AND j.priority = v_mprio[p.i]
                              AND (j.available_at, j.id) >= (v_mavail[p.i], v_mids[p.i])
                              AND (jobq_dequeue.job_types IS NULL
                                   OR j.job_type = ANY (jobq_dequeue.job_types))
                              AND (jobq_dequeue.queues IS NULL
                                   OR j.queue = ANY (jobq_dequeue.queues))
                              AND j.status = 'pending'
                              AND NOT j.scheduled
                              AND j.limit_group IS NULL
                              AND j.available_at <= v_now
                            ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
                            LIMIT v_k
                        )

                        UNION ALL

                        (
                            SELECT p.i, j.id, j.priority, j.available_at
                            FROM jobq_jobs AS j
                            WHERE pg_catalog.hashtextextended(j.job_type, 0) = v_hts[p.i]
                              AND pg_catalog.hashtextextended(j.queue, 0) = v_hqs[p.i]
                              AND j.priority < v_mprio[p.i]
                              AND (jobq_dequeue.job_types IS NULL
                                   OR j.job_type = ANY (jobq_dequeue.job_types))
                              AND (jobq_dequeue.queues IS NULL
                                   OR j.queue = ANY (jobq_dequeue.queues))
                              AND j.status = 'pending'
                              AND NOT j.scheduled
                              AND j.limit_group IS NULL
                              AND j.available_at <= v_now
                            ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
                            LIMIT v_k
                        )
                    ) AS r
                    ORDER BY r.priority DESC, r.available_at ASC, r.id ASC
                    LIMIT v_k
                ) AS c;
                IF v_round = 1 AND v_ids IS NOT NULL THEN
                    v_seen := '{}';
                    FOR x IN 1 .. pg_catalog.cardinality(v_ids) LOOP
                        CONTINUE WHEN c_i[x] = ANY (v_seen) OR c_prio[x] > v_mprio[c_i[x]];
                        v_seen := pg_catalog.array_append(v_seen, c_i[x]);
                        v_mprio[c_i[x]] := c_prio[x];
                        v_mavail[c_i[x]] := c_avail[x];
                        v_mids[c_i[x]] := v_ids[x];
                    END LOOP;
                END IF;
            ELSE
                SELECT pg_catalog.array_agg(c.id ORDER BY c.priority DESC, c.available_at, c.id)
                INTO v_ids
                FROM (
                    SELECT r.id, r.priority, r.available_at
                    FROM ROWS FROM (pg_catalog.unnest(v_hts), pg_catalog.unnest(v_hqs))
                        AS p (ht, hq)
                    CROSS JOIN LATERAL (
                        SELECT j.id, j.priority, j.available_at
                        FROM jobq_jobs AS j
                        WHERE pg_catalog.hashtextextended(j.job_type, 0) = p.ht
                          AND pg_catalog.hashtextextended(j.queue, 0) = p.hq
                          AND (jobq_dequeue.job_types IS NULL
                               OR j.job_type = ANY (jobq_dequeue.job_types))
                          AND (jobq_dequeue.queues IS NULL
                               OR j.queue = ANY (jobq_dequeue.queues))
                          AND j.status = 'pending'
                          AND NOT j.scheduled
                          AND j.limit_group IS NULL
                          AND j.available_at <= v_now
                        ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
                        LIMIT v_k
                    ) AS r
                    ORDER BY r.priority DESC, r.available_at ASC, r.id ASC
                    LIMIT v_k
                ) AS c;
            END IF;
            EXIT WHEN v_ids IS NULL;

            RETURN QUERY
            WITH locked AS MATERIALIZED (
                SELECT j.id
                FROM jobq_jobs AS j
                WHERE j.id = ANY (v_ids)
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.available_at <= v_now
                ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
                LIMIT v_want
                FOR UPDATE SKIP LOCKED
            ),

            claimed AS (
                UPDATE jobq_jobs AS j
                SET
                    status = 'processing',
                    attempts = j.attempts + 1,
                    locked_at = v_now,
                    locked_by = jobq_dequeue.worker_id,
                    locked_until = v_lock_until,
                    claimed_at = v_now,
                    updated_at = v_now
                WHERE j.id = ANY (ARRAY(SELECT l.id FROM locked AS l))
                RETURNING j.*
            ),

            counted AS MATERIALIZED (
                SELECT jobq__metrics_count(
                    'started'::text, pg_catalog.array_agg(c.queue),
                    pg_catalog.array_agg(c.job_type), NULL::text[],
                    pg_catalog.array_agg(
                        extract(epoch FROM c.claimed_at - c.available_at)::double precision
                    )
                ) AS n
                FROM claimed AS c
                HAVING pg_catalog.count(*) > 0
                   AND (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
            )

            -- Each round's jobs are returned as they are claimed, in claim order (a later
            -- round's after them). No array of jobq_jobs rows is kept: under Citus the
            -- statement runs on a shard, whose row type is not jobq_jobs.
            SELECT c.*
            FROM claimed AS c
            LEFT JOIN counted ON TRUE
            ORDER BY c.priority DESC, c.available_at ASC, c.id ASC;
            GET DIAGNOSTICS v_got = ROW_COUNT;
            v_claimed := v_claimed + v_got;
            v_want := v_want - v_got;
            EXIT WHEN v_want = 0 OR pg_catalog.cardinality(v_ids) < v_k;
            v_k := v_k * 4;
        END LOOP;
    END IF;

    -- 4. The marks. A claim with marks keeps them (moved on by step 3b) until their time is up.
    --    A full scan that passed more than 10,000 (and 10 x batch_size) entries of
    --    jobq_jobs_claim_idx beyond the jobs it claimed (entries of rows claimed or finished
    --    that no scan could mark dead: a held xmin horizon) sets them: per range, the first
    --    job it claimed there, else the mark that range had, else the range's head. They
    --    last until the next full scan: ten times what this full scan took (so that full
    --    scans cost at most a tenth of the claims' time), at least a second, at most a
    --    minute. A full scan that passed few such entries clears them.
    IF v_marked THEN
        NULL;  -- moved on by step 3b, same time
    ELSIF pg_catalog.pg_stat_get_xact_tuples_returned('jobq_jobs_claim_idx'::regclass)
            - v_read - v_claimed
          > greatest(10000, 10 * jobq_dequeue.batch_size) THEN
        v_fkey := pg_catalog.hashtextextended(pg_catalog.format(
            '%L %L %L', pg_catalog.current_schema(), jobq_dequeue.job_types, jobq_dequeue.queues
        ), 0);
        v_until := pg_catalog.clock_timestamp() + least(
            interval '1 minute',
            greatest(interval '1 second', 10 * (pg_catalog.clock_timestamp() - v_started))
        );
        SELECT
            pg_catalog.array_agg(r.ht ORDER BY r.ht, r.hq),
            pg_catalog.array_agg(r.hq ORDER BY r.ht, r.hq),
            pg_catalog.array_agg(coalesce(f.priority, o.prio, 2147483647) ORDER BY r.ht, r.hq),
            pg_catalog.array_agg(
                coalesce(f.available_at, o.avail, timestamptz '-infinity') ORDER BY r.ht, r.hq
            ),
            pg_catalog.array_agg(
                coalesce(f.id, o.id, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY r.ht, r.hq
            )
        INTO v_hts, v_hqs, v_mprio, v_mavail, v_mids
        FROM (
            SELECT a.ht, a.hq
            FROM ROWS FROM (pg_catalog.unnest(v_hts), pg_catalog.unnest(v_hqs)) AS a (ht, hq)
            UNION
            SELECT b.ht, b.hq
            FROM ROWS FROM (pg_catalog.unnest(o_hts), pg_catalog.unnest(o_hqs)) AS b (ht, hq)
        ) AS r
        LEFT JOIN LATERAL (
            SELECT j.priority, j.available_at, j.id
            FROM jobq_jobs AS j
            WHERE j.status = 'processing'
              AND j.locked_at = v_now
              AND j.locked_by = jobq_dequeue.worker_id
              AND j.limit_group IS NULL
              AND pg_catalog.hashtextextended(j.job_type, 0) = r.ht
              AND pg_catalog.hashtextextended(j.queue, 0) = r.hq
            ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
            LIMIT 1
        ) AS f ON TRUE
        LEFT JOIN LATERAL (
            SELECT
                (e.e ->> 2)::integer AS prio,
                timestamptz '1970-01-01 00:00:00+00'
                + (e.e ->> 3)::bigint * interval '1 microsecond' AS avail,
                (e.e ->> 4)::uuid AS id
            FROM pg_catalog.jsonb_array_elements(
                CASE WHEN o_hts IS NOT NULL THEN v_state::jsonb -> 'r' END
            ) AS e (e)
            WHERE (e.e ->> 0)::bigint = r.ht AND (e.e ->> 1)::bigint = r.hq
            LIMIT 1
        ) AS o ON TRUE;
    ELSE
        IF v_state IS NOT NULL AND v_state <> '' THEN
            PERFORM pg_catalog.set_config('jobq.claim_marks', '', FALSE);
        END IF;
        RETURN;
    END IF;
    IF v_hts IS NOT NULL THEN
        PERFORM pg_catalog.set_config('jobq.claim_marks', pg_catalog.jsonb_build_object(
            'k', v_fkey,
            'until', (extract(epoch FROM v_until) * 1000000)::bigint,
            'r', (
                SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(
                    m.ht, m.hq, m.prio,
                    CASE WHEN pg_catalog.isfinite(m.avail)
                        THEN (extract(epoch FROM m.avail) * 1000000)::bigint
                    END,
                    m.id
                ) ORDER BY m.n)
                FROM ROWS FROM (
                    pg_catalog.unnest(v_hts), pg_catalog.unnest(v_hqs),
                    pg_catalog.unnest(v_mprio), pg_catalog.unnest(v_mavail),
                    pg_catalog.unnest(v_mids)
                ) WITH ORDINALITY AS m (ht, hq, prio, avail, id, n)
            )
        )::text, FALSE);
    END IF;
END;
$$;

COMMENT ON FUNCTION public.jobq_dequeue(worker_id text, job_types text[], batch_size integer, lock_timeout interval, queues text[]) IS 'Claims up to batch_size jobs for a worker and returns them: status processing, locked_at
now, locked_until now + lock_timeout, locked_by the worker, attempts + 1. Candidates: pending
jobs whose available_at has come, and processing jobs whose locked_until has passed (their
worker is presumed dead; the claim that locked them set it, whatever this call''s
lock_timeout): such a takeover is recorded in errors (kind lock_expired, the worker that lost it),
and a stale job with a cancel request (jobq_cancel) goes to cancelled, one with no attempts
left to dead_letter, instead of running again. Each call also records the worker''s filters in
jobq_workers (written at most every 5 seconds per worker), for jobq_unserved_job_types.
Cost: each call first promotes up to 1,000 scheduled jobs that have come due (one index probe
when none has), then reads only the (job_type, queue) ranges of jobq_jobs_claim_idx that its
filters select, plus one probe per pair with pending jobs to find them; finished jobs, jobs of
other types or queues and jobs scheduled for later (whatever their priority) are never read.
Under a held xmin horizon (a claim passes more than 10,000 index entries of rows already
claimed), the session keeps a mark per range in the setting jobq.claim_marks and reads each
range from it, with a full scan at least every minute (at least a second apart): until then a
job made pending behind a mark other than by the session''s claims, or in a new (job_type,
queue) pair, waits.
Paused queues (jobq_pause): their jobs are not claimed (they stay pending, attempts unspent);
while none is paused this costs one read of the empty jobq_paused_queues.
Runs with enable_bitmapscan = off, enable_seqscan = off, plan_cache_mode =
force_generic_plan and jit = off (for this function only; the caller keeps its own settings):
index scans in claim order that stop after batch_size rows, whatever the statistics say,
planned once per session, never compiled.
Arguments: worker_id (who claims: non-blank, at most 200 characters), job_types (NULL = all;
at most 1000 names of at most 200 characters), batch_size (1-10000), lock_timeout (> 0; beyond
1000 years it means never), queues (NULL = all; at most 1000 names of at most 200 characters).
Result: the claimed rows of jobq_jobs, highest priority first, then available_at, then id.
Errors: 22023 worker_id NULL, blank or longer than 200 characters, batch_size outside 1-10000,
lock_timeout <= 0, job_types or queues of more than 1000 names or with a name longer than 200
characters.
Concurrency: FOR UPDATE SKIP LOCKED: it never waits, concurrent callers never receive the
same job, one call never locks or claims more than batch_size pending rows, and it never comes
back short while jobs it could claim are waiting unlocked. A takeover that ends a job a client
awaits sends a NOTIFY on the done channel (an empty payload).';

CREATE FUNCTION public.jobq_enqueue(job_type text, payload jsonb DEFAULT '{}'::jsonb, idempotency_key text DEFAULT NULL::text, max_attempts integer DEFAULT 5, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, priority integer DEFAULT 0, queue text DEFAULT 'default'::text, limit_group text DEFAULT NULL::text, limit_key text DEFAULT NULL::text, depends_on uuid[] DEFAULT NULL::uuid[], on_dependency_failure text DEFAULT 'cancel'::text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_error text;
    v_size integer;
    v_limit integer;
    v_metrics boolean;
    v_id uuid;
    v_moved uuid;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__job_argument_problem(
        jobq_enqueue.job_type, jobq_enqueue.queue, jobq_enqueue.idempotency_key,
        jobq_enqueue.max_attempts, jobq_enqueue.priority
    );
    v_error := coalesce(v_error, jobq__limit_argument_problem(
        jobq_enqueue.limit_group, jobq_enqueue.limit_key
    ));
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_enqueue: %', v_error
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_enqueue.depends_on IS NOT NULL
        OR jobq_enqueue.on_dependency_failure IS DISTINCT FROM 'cancel'
    THEN
        v_error := jobq__dependency_argument_problem(
            coalesce(jobq_enqueue.depends_on, '{}'::uuid[]), jobq_enqueue.on_dependency_failure
        );
        IF v_error IS NOT NULL THEN
            RAISE EXCEPTION 'jobq_enqueue: %', v_error
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    IF jobq_enqueue.payload IS NULL THEN
        RAISE EXCEPTION 'jobq_enqueue: payload must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass ''{}'' for a job without arguments.';
    END IF;
    IF pg_catalog.jsonb_typeof(jobq_enqueue.payload) <> 'object' THEN
        RAISE EXCEPTION 'jobq_enqueue: payload must be a JSON object, got a JSON %',
            pg_catalog.jsonb_typeof(jobq_enqueue.payload)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Wrap the value in an object: {"value": ...}.';
    END IF;
    IF NOT pg_catalog.isfinite(jobq_enqueue.run_at) THEN
        RAISE EXCEPTION 'jobq_enqueue: run_at must be a finite time, got %', jobq_enqueue.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The logical size, that of the text form a worker receives: pg_column_size gives the
    -- compressed size of a value passed from a table column (85 MB of repeated text is
    -- stored in less than 1 MiB), and a number of a few stored bytes prints as up to 131,072
    -- digits. Every size limit of jobq (payloads, results, schedule payloads) measures so.
    v_size := pg_catalog.octet_length(jobq_enqueue.payload::text);
    SELECT s.max_payload_bytes, s.metrics INTO v_limit, v_metrics FROM jobq_settings AS s;
    IF v_size > v_limit THEN
        RAISE EXCEPTION 'jobq_enqueue: payload is % bytes, the limit is % bytes', v_size, v_limit
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Store large data elsewhere and pass a reference; an admin can change '
                         'the limit with jobq_configure(max_payload_bytes => ...).';
    END IF;

    IF jobq_enqueue.idempotency_key IS NULL THEN
        INSERT INTO jobq_jobs AS j (
            queue, job_type, payload, max_attempts, available_at, priority, scheduled,
            limit_group, limit_key
        )
        VALUES (
            jobq_enqueue.queue, jobq_enqueue.job_type, jobq_enqueue.payload,
            jobq_enqueue.max_attempts, coalesce(jobq_enqueue.run_at, v_now),
            jobq_enqueue.priority, coalesce(jobq_enqueue.run_at > v_now, FALSE),
            jobq_enqueue.limit_group, jobq_enqueue.limit_key
        )
        RETURNING j.id INTO v_id;
    ELSE
        -- Race-free dedupe across jobq_jobs and jobq_jobs_history. A finished job of the key
        -- is found first (its id, nothing added). Else ON CONFLICT DO NOTHING waits for a
        -- concurrent inserter of the same key, or for the transaction that moves the key's
        -- job to the history: if the row is still there we insert nothing and read its id
        -- with the fresh snapshot of the next statement (in either table). If our row went
        -- in, the key's job may have moved to the history between the look-up and the
        -- insert: read again with a fresh snapshot, and if it is there our row goes and its
        -- id is returned. Under REPEATABLE READ the snapshot is the transaction's: a job of
        -- the key that it still sees in jobq_jobs has been moved since, and the caller must
        -- retry (40001), as ON CONFLICT itself would say. The loop covers a key whose job
        -- was deleted between the two statements.
        LOOP
            SELECT h.id INTO v_id
            FROM jobq_jobs_history AS h
            WHERE
                h.job_type = jobq_enqueue.job_type
                AND h.idempotency_key = jobq_enqueue.idempotency_key
            LIMIT 1;
            IF v_id IS NOT NULL THEN
                RETURN v_id;  -- a duplicate of a finished job: nobody needs waking
            END IF;

            INSERT INTO jobq_jobs AS j (
                queue, job_type, payload, idempotency_key, max_attempts, available_at, priority,
                scheduled, limit_group, limit_key
            )
            VALUES (
                jobq_enqueue.queue, jobq_enqueue.job_type, jobq_enqueue.payload,
                jobq_enqueue.idempotency_key, jobq_enqueue.max_attempts,
                coalesce(jobq_enqueue.run_at, v_now), jobq_enqueue.priority,
                coalesce(jobq_enqueue.run_at > v_now, FALSE),
                jobq_enqueue.limit_group, jobq_enqueue.limit_key
            )
            ON CONFLICT (job_type, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING j.id INTO v_id;

            IF v_id IS NOT NULL THEN
                SELECT h.id INTO v_moved
                FROM jobq_jobs_history AS h
                WHERE
                    h.job_type = jobq_enqueue.job_type
                    AND h.idempotency_key = jobq_enqueue.idempotency_key
                LIMIT 1;
                IF v_moved IS NOT NULL THEN
                    DELETE FROM jobq_jobs AS j WHERE j.id = v_id;
                    RETURN v_moved;
                END IF;
                IF EXISTS (
                    SELECT FROM jobq_jobs AS j
                    WHERE
                        j.job_type = jobq_enqueue.job_type
                        AND j.idempotency_key = jobq_enqueue.idempotency_key
                        AND j.id <> v_id
                ) THEN
                    RAISE EXCEPTION 'jobq_enqueue: the job of idempotency_key % finished while '
                                    'this transaction enqueued it again',
                        pg_catalog.quote_literal(jobq_enqueue.idempotency_key)
                        USING ERRCODE = 'serialization_failure',
                              HINT = 'Retry the transaction: it then returns that job''s id.';
                END IF;
                EXIT;
            END IF;

            SELECT j.id INTO v_id
            FROM jobq_all_jobs AS j
            WHERE
                j.job_type = jobq_enqueue.job_type
                AND j.idempotency_key = jobq_enqueue.idempotency_key;
            IF v_id IS NOT NULL THEN
                -- A duplicate: nothing was added, so nobody needs waking.
                RETURN v_id;
            END IF;
        END LOOP;
    END IF;

    IF pg_catalog.cardinality(jobq_enqueue.depends_on) > 0 THEN
        PERFORM jobq__add_edges(
            pg_catalog.array_fill(v_id, ARRAY[pg_catalog.cardinality(jobq_enqueue.depends_on)]),
            jobq_enqueue.depends_on,
            pg_catalog.array_fill(
                jobq_enqueue.on_dependency_failure,
                ARRAY[pg_catalog.cardinality(jobq_enqueue.depends_on)]
            ),
            'jobq_enqueue: depends_on'::text,
            FALSE
        );
    END IF;

    IF v_metrics THEN  -- read with the limit: no call at all while counting is off
        PERFORM jobq__metrics_count(
            'enqueued'::text, ARRAY[jobq_enqueue.queue], ARRAY[jobq_enqueue.job_type],
            NULL::text[], NULL::double precision[]
        );
    END IF;

    IF jobq_enqueue.run_at IS NULL OR jobq_enqueue.run_at <= v_now THEN
        -- On this installation's channel (jobq__channel), the payload the queue name only:
        -- any role may LISTEN. Identical notifications in one transaction are folded into one
        -- by PostgreSQL.
        PERFORM pg_catalog.pg_notify(jobq__channel(), jobq_enqueue.queue);
    END IF;
    RETURN v_id;
END;
$$;

COMMENT ON FUNCTION public.jobq_enqueue(job_type text, payload jsonb, idempotency_key text, max_attempts integer, run_at timestamp with time zone, priority integer, queue text, limit_group text, limit_key text, depends_on uuid[], on_dependency_failure text) IS 'Adds a pending job.
Arguments: job_type (handler name, 1-200 chars), payload (a JSON object, not NULL, at most
max_payload_bytes bytes in its text form, default 1 MiB), idempotency_key (NULL or 1-1000
chars and at most 1800 bytes; unique per job_type), max_attempts (1-1000), run_at (not claimed before; NULL = now; must be finite),
priority (-1000000..1000000, higher runs first), queue (1-200 chars), limit_group (NULL = no
limit, else 1-200 chars: the limits of jobq_set_limit for that group apply), limit_key (NULL =
the whole group shares one limit, else 1-200 chars: each key of the group has the group''s
limits for itself; needs a limit_group), depends_on (NULL or up to 10,000 ids of jobs this
one waits for: it is enqueued waiting and becomes pending in the transaction in which the last
of them succeeds), on_dependency_failure (what a dependency that ends failed, dead_letter or
cancelled does: cancel, the default, cancels this job and its own dependents by their rules;
run makes it pending once every dependency has finished; wait keeps it waiting until the
dependency is requeued and succeeds).
Result: the new job''s id; if a job with the same job_type and idempotency_key exists, in any
status, nothing is added or changed and that job''s id is returned (the same key under another
job_type is another job).
Errors: 22023 bad job_type/queue/idempotency_key/max_attempts/priority/run_at/limit_group/
limit_key (blank, too long, a limit_key without a limit_group), an unknown id or NULL in
depends_on, a bad on_dependency_failure, or a payload
that is not a JSON object, 22004 NULL payload, 54000 payload too large.
Concurrency: N sessions enqueuing one key (of one job_type) at once make one row and all get its id. Runs in the
caller''s transaction (a rollback removes the job). NOTIFY on the installation''s channel (jobq
in schema public, jobq.<schema> otherwise), payload the queue name, when the job is available
now (delivered at commit). With depends_on, the dependencies still running are locked until
the caller commits (their completion waits that long).';

CREATE FUNCTION public.jobq_enqueue_arrays(job_types text[], payloads jsonb[] DEFAULT NULL::jsonb[], idempotency_keys text[] DEFAULT NULL::text[], max_attempts integer[] DEFAULT NULL::integer[], run_ats timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], priorities integer[] DEFAULT NULL::integer[], queues text[] DEFAULT NULL::text[], limit_groups text[] DEFAULT NULL::text[], limit_keys text[] DEFAULT NULL::text[]) RETURNS TABLE(ord integer, id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_n integer;
    v_bad record;
    v_limit integer;
BEGIN
    IF job_types IS NULL OR pg_catalog.array_ndims(job_types) > 1 THEN
        RAISE EXCEPTION 'jobq_enqueue_arrays: job_types must be a one-dimensional array, got %',
            coalesce(pg_catalog.array_ndims(job_types) || ' dimensions', 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_n := pg_catalog.cardinality(job_types);
    -- The bound of jobq_enqueue_many: larger batches go in several calls.
    IF v_n > 100000 THEN
        RAISE EXCEPTION 'jobq_enqueue_arrays: job_types has % elements, at most 100000 are allowed',
            v_n
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Enqueue in batches of at most 100000 jobs.';
    END IF;
    SELECT a.name, a.n INTO v_bad
    FROM (VALUES
        (1, 'payloads', pg_catalog.cardinality(payloads), pg_catalog.array_ndims(payloads)),
        (2, 'idempotency_keys', pg_catalog.cardinality(idempotency_keys),
         pg_catalog.array_ndims(idempotency_keys)),
        (3, 'max_attempts', pg_catalog.cardinality(max_attempts),
         pg_catalog.array_ndims(max_attempts)),
        (4, 'run_ats', pg_catalog.cardinality(run_ats), pg_catalog.array_ndims(run_ats)),
        (5, 'priorities', pg_catalog.cardinality(priorities), pg_catalog.array_ndims(priorities)),
        (6, 'queues', pg_catalog.cardinality(queues), pg_catalog.array_ndims(queues)),
        (7, 'limit_groups', pg_catalog.cardinality(limit_groups),
         pg_catalog.array_ndims(limit_groups)),
        (8, 'limit_keys', pg_catalog.cardinality(limit_keys), pg_catalog.array_ndims(limit_keys))
    ) AS a (pos, name, n, dims)
    WHERE a.n IS NOT NULL AND (a.n <> v_n OR a.dims > 1)
    ORDER BY a.pos
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'jobq_enqueue_arrays: % has % elements, job_types has %: each array '
            'has one element per job (or is NULL for the default)', v_bad.name, v_bad.n, v_n
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_n = 0 THEN
        RETURN;
    END IF;
    SELECT s.max_payload_bytes INTO v_limit FROM jobq_settings AS s;

    -- Validation as set operations: job types and queues are checked once per distinct value
    -- (a batch usually repeats a few), numbers by their range, payloads, keys and times one by
    -- one. Only when something is wrong does a pass over the jobs look for the first bad one,
    -- to name it. Job types and queues have one rule; a column of one value, the usual case,
    -- is told by removing its first value from the array, one C loop: a tenth of the
    -- DISTINCT's time at 1,000 jobs. (A NULL queues is no value to check.)
    IF NOT coalesce((
        NOT EXISTS (
            SELECT FROM (VALUES (job_types), (queues)) AS c (a)
            CROSS JOIN LATERAL (
                SELECT DISTINCT t.v
                FROM pg_catalog.unnest(CASE
                    WHEN pg_catalog.cardinality(pg_catalog.array_remove(c.a, c.a[1])) = 0
                        THEN ARRAY[c.a[1]]
                    ELSE c.a
                END) AS t (v)
            ) AS d
            WHERE jobq__blank(d.v) OR pg_catalog.length(d.v) > 200
        )
        AND (idempotency_keys IS NULL OR NOT EXISTS (
            SELECT FROM pg_catalog.unnest(idempotency_keys) AS k (v)
            WHERE k.v IS NOT NULL AND (
                jobq__blank(k.v) OR pg_catalog.length(k.v) > 1000
                OR pg_catalog.octet_length(k.v) > 1800
            )
        ))
        AND (jobq_enqueue_arrays.max_attempts IS NULL OR (
            SELECT pg_catalog.count(m.v) = v_n AND pg_catalog.min(m.v) >= 1
                AND pg_catalog.max(m.v) <= 1000
            FROM pg_catalog.unnest(jobq_enqueue_arrays.max_attempts) AS m (v)
        ))
        AND (priorities IS NULL OR (
            SELECT pg_catalog.count(p.v) = v_n AND pg_catalog.min(p.v) >= -1000000
                AND pg_catalog.max(p.v) <= 1000000
            FROM pg_catalog.unnest(priorities) AS p (v)
        ))
        AND (run_ats IS NULL OR NOT EXISTS (
            SELECT FROM pg_catalog.unnest(run_ats) AS r (v) WHERE NOT pg_catalog.isfinite(r.v)
        ))
        AND (payloads IS NULL OR NOT EXISTS (
            SELECT FROM pg_catalog.unnest(payloads) AS p (v)
            WHERE p.v IS NULL OR pg_catalog.jsonb_typeof(p.v) <> 'object'
                -- the logical size, as jobq_enqueue measures it
                OR pg_catalog.octet_length(p.v::text) > v_limit
        ))
        AND (limit_groups IS NULL AND limit_keys IS NULL OR NOT EXISTS (
            SELECT FROM ROWS FROM (
                pg_catalog.unnest(limit_groups), pg_catalog.unnest(limit_keys)
            ) AS l (limit_group, limit_key)
            WHERE jobq__limit_argument_problem(l.limit_group, l.limit_key) IS NOT NULL
        ))
    ), FALSE) THEN
        -- The first bad job, in input order.
        SELECT x.ord, x.problem, x.code INTO v_bad
        FROM (
            SELECT
                e.ord,
                CASE
                    WHEN e.payload IS NULL THEN 'payload must not be NULL'
                    WHEN pg_catalog.jsonb_typeof(e.payload) <> 'object'
                        THEN pg_catalog.format(
                            'payload must be a JSON object, got a JSON %s',
                            pg_catalog.jsonb_typeof(e.payload)
                        )
                    WHEN pg_catalog.octet_length(e.payload::text) > v_limit
                        THEN pg_catalog.format(
                            'payload is %s bytes, the limit is %s bytes',
                            pg_catalog.octet_length(e.payload::text), v_limit
                        )
                    WHEN NOT pg_catalog.isfinite(e.run_at)
                        THEN pg_catalog.format('run_at must be a finite time, got %s', e.run_at)
                    ELSE coalesce(jobq__job_argument_problem(
                        e.job_type, e.queue, e.idempotency_key, e.max_attempts, e.priority
                    ), jobq__limit_argument_problem(e.limit_group, e.limit_key))
                END AS problem,
                CASE
                    WHEN e.payload IS NULL THEN 'null_value_not_allowed'
                    WHEN pg_catalog.jsonb_typeof(e.payload) = 'object'
                        AND pg_catalog.octet_length(e.payload::text) > v_limit
                        THEN 'program_limit_exceeded'
                    ELSE 'invalid_parameter_value'
                END AS code
            FROM (
                SELECT
                    u.ord::integer AS ord,
                    u.job_type,
                    CASE WHEN payloads IS NULL THEN '{}'::jsonb ELSE u.payload END AS payload,
                    u.idempotency_key,
                    CASE WHEN jobq_enqueue_arrays.max_attempts IS NULL THEN 5
                         ELSE u.max_attempts END AS max_attempts,
                    u.run_at,
                    CASE WHEN priorities IS NULL THEN 0 ELSE u.priority END AS priority,
                    CASE WHEN queues IS NULL THEN 'default' ELSE u.queue END AS queue,
                    u.limit_group,
                    u.limit_key
                FROM ROWS FROM (
                    pg_catalog.unnest(job_types), pg_catalog.unnest(payloads),
                    pg_catalog.unnest(idempotency_keys),
                    pg_catalog.unnest(jobq_enqueue_arrays.max_attempts),
                    pg_catalog.unnest(run_ats), pg_catalog.unnest(priorities),
                    pg_catalog.unnest(queues), pg_catalog.unnest(limit_groups),
                    pg_catalog.unnest(limit_keys)
                ) WITH ORDINALITY AS u (
                    job_type, payload, idempotency_key, max_attempts, run_at, priority, queue,
                    limit_group, limit_key, ord
                )
            ) AS e
        ) AS x
        WHERE x.problem IS NOT NULL
        ORDER BY x.ord
        LIMIT 1;
        IF FOUND THEN
            -- The element counts from 1, like ord; the problem names the argument.
            IF v_bad.code = 'null_value_not_allowed' THEN
                RAISE EXCEPTION 'jobq_enqueue_arrays: element % (counting from 1): %',
                    v_bad.ord, v_bad.problem
                    USING ERRCODE = 'null_value_not_allowed',
                          HINT = 'Pass ''{}'' for a job without arguments.';
            ELSIF v_bad.code = 'program_limit_exceeded' THEN
                RAISE EXCEPTION 'jobq_enqueue_arrays: element % (counting from 1): %',
                    v_bad.ord, v_bad.problem
                    USING ERRCODE = 'program_limit_exceeded';
            END IF;
            RAISE EXCEPTION 'jobq_enqueue_arrays: element % (counting from 1): %',
                v_bad.ord, v_bad.problem
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    RETURN QUERY
    SELECT r.ord, r.id
    FROM jobq__insert_jobs(
        job_types, payloads, idempotency_keys, jobq_enqueue_arrays.max_attempts, run_ats,
        priorities, queues, limit_groups, limit_keys
    ) AS r;
END;
$$;

COMMENT ON FUNCTION public.jobq_enqueue_arrays(job_types text[], payloads jsonb[], idempotency_keys text[], max_attempts integer[], run_ats timestamp with time zone[], priorities integer[], queues text[], limit_groups text[], limit_keys text[]) IS 'Adds many jobs in one statement, given one array per column (element i of each array is job
i), each job with jobq_enqueue''s semantics: an existing idempotency key of the same job type
returns the existing id; two jobs with the same job type and key get the same id (the first is
inserted). The same jobs as jobq_enqueue_many, without a JSON document to parse; send the
arrays in binary where the driver can.
Arguments: job_types (one per job, 1-200 chars; its length is the number of jobs);
payloads (JSON objects), idempotency_keys, max_attempts, run_ats, priorities, queues,
limit_groups, limit_keys: each NULL (the default of jobq_enqueue for every job) or with one
element per job, bounded as in jobq_enqueue. A NULL element of idempotency_keys is no key, of
run_ats now, of limit_groups and limit_keys no limit (a limit_key needs its job''s
limit_group).
Result: one row per job, (ord, id), ord counting from 1 in array order.
Errors: 22023 job_types NULL or multidimensional, an array whose length differs from
job_types'', a bad element (the message names the element, counting from 1 like ord, and the
argument); 22004 a NULL payload element; 54000 a payload too large, or more than 100,000
jobs. Nothing is inserted when any job is bad.
Concurrency: as jobq_enqueue; one NOTIFY per queue that got jobs available now, or a single one
with an empty payload (wake every worker) when more than 100 queues did. The jobs it adds are
counted in jobq_metrics() (jobq_enqueued_total), in the caller''s transaction.';

CREATE FUNCTION public.jobq_enqueue_many(jobs jsonb) RETURNS TABLE(ord integer, id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $_$
DECLARE
    v_bad record;
    v_limit integer;
    v_job_types text[];
    v_payloads jsonb[];
    v_keys text[];
    v_max_attempts integer[];
    v_run_ats timestamptz[];
    v_priorities integer[];
    v_queues text[];
    v_limit_groups text[];
    v_limit_keys text[];
    v_graph boolean;
    v_deps boolean;
    v_n integer;
    v_ids uuid[];
    v_edges record;
BEGIN
    IF jobs IS NULL OR pg_catalog.jsonb_typeof(jobs) <> 'array' THEN
        RAISE EXCEPTION 'jobq_enqueue_many: jobs must be a JSON array of job objects, got %',
            coalesce(pg_catalog.jsonb_typeof(jobs), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A bound on one statement's work: every element is validated, inserted and returned in
    -- one transaction; larger batches go in several calls.
    IF pg_catalog.jsonb_array_length(jobs) > 100000 THEN
        RAISE EXCEPTION 'jobq_enqueue_many: jobs has % elements, at most 100000 are allowed',
            pg_catalog.jsonb_array_length(jobs)
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Enqueue in batches of at most 100000 jobs.';
    END IF;
    SELECT s.max_payload_bytes INTO v_limit FROM jobq_settings AS s;
    v_n := pg_catalog.jsonb_array_length(jobs);
    -- Whether any element names a dependency or its rule: one pass in C over the array, so that
    -- the checks of those keys below cost a batch without them nothing per element.
    v_deps := pg_catalog.jsonb_path_exists(
        jobs, '$[*] ? (exists(@.depends_on) || exists(@.after) || exists(@.on_dependency_failure))'
    );

    -- One pass over the elements finds the first bad one: an object, known keys only, each
    -- value of the right JSON type and within the bounds of jobq_enqueue, and the payload
    -- within the size limit. Long literals are split over lines without ||: SQL joins string
    -- constants separated by a newline itself, so there is no operator to resolve.
    SELECT e.ord, e.problem, e.payload_size INTO v_bad
    FROM (
        SELECT
            x.ord::integer AS ord,
            -- the logical size, as jobq_enqueue measures it
            pg_catalog.octet_length((x.elem -> 'payload')::text) AS payload_size,
            CASE
                WHEN pg_catalog.jsonb_typeof(x.elem) <> 'object'
                    THEN pg_catalog.format(
                        'is a JSON %s, not an object', pg_catalog.jsonb_typeof(x.elem)
                    )
                WHEN x.elem - ARRAY[
                    'job_type', 'payload', 'idempotency_key', 'max_attempts', 'run_at',
                    'priority', 'queue', 'limit_group', 'limit_key', 'depends_on', 'after',
                    'on_dependency_failure'
                ] <> '{}'::jsonb
                    THEN pg_catalog.format(
                        'has unknown key(s) %s; allowed: job_type, payload, idempotency_key, '
                        'max_attempts, run_at, priority, queue, limit_group, limit_key, '
                        'depends_on, after, on_dependency_failure',
                        (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(k.key), ', ')
                         FROM pg_catalog.jsonb_object_keys(x.elem) AS k (key)
                         WHERE k.key NOT IN (
                             'job_type', 'payload', 'idempotency_key', 'max_attempts',
                             'run_at', 'priority', 'queue', 'limit_group', 'limit_key',
                             'depends_on', 'after', 'on_dependency_failure'
                         ))
                    )
                WHEN pg_catalog.jsonb_typeof(x.elem -> 'job_type') IS DISTINCT FROM 'string'
                    THEN 'job_type must be a non-blank string'
                WHEN coalesce(pg_catalog.jsonb_typeof(x.elem -> 'payload'), 'object') <> 'object'
                    THEN pg_catalog.format(
                        'payload must be a JSON object, got a JSON %s',
                        pg_catalog.jsonb_typeof(x.elem -> 'payload')
                    )
                WHEN coalesce(pg_catalog.jsonb_typeof(x.elem -> 'idempotency_key'), 'null')
                    NOT IN ('string', 'null')
                    THEN 'idempotency_key must be a string or null'
                WHEN coalesce(pg_catalog.jsonb_typeof(x.elem -> 'queue'), 'string') <> 'string'
                    THEN 'queue must be a non-blank string'
                WHEN coalesce(pg_catalog.jsonb_typeof(x.elem -> 'run_at'), 'null')
                    NOT IN ('string', 'null')
                    OR (x.elem ->> 'run_at') !~ (
                        '^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?'
                        '(Z|z|[+-]\d{2}(:?\d{2})?)$'
                    )
                    THEN pg_catalog.format(
                        'run_at must be an ISO 8601 time with a UTC offset '
                        '(2030-01-31T08:00:00+01:00), or null; got %s',
                        x.elem -> 'run_at'
                    )
                WHEN coalesce(pg_catalog.jsonb_typeof(x.elem -> 'max_attempts'), 'number')
                    <> 'number'
                    OR (x.elem ->> 'max_attempts') !~ '^-?[0-9]{1,9}$'
                    THEN 'max_attempts must be an integer'
                WHEN coalesce(pg_catalog.jsonb_typeof(x.elem -> 'priority'), 'number') <> 'number'
                    OR (x.elem ->> 'priority') !~ '^-?[0-9]{1,9}$'
                    THEN 'priority must be an integer'
                WHEN coalesce(pg_catalog.jsonb_typeof(x.elem -> 'limit_group'), 'null')
                    NOT IN ('string', 'null')
                    THEN 'limit_group must be a string or null'
                WHEN coalesce(pg_catalog.jsonb_typeof(x.elem -> 'limit_key'), 'null')
                    NOT IN ('string', 'null')
                    THEN 'limit_key must be a string or null'
                WHEN v_deps AND (
                    coalesce(pg_catalog.jsonb_typeof(x.elem -> 'depends_on'), 'array') <> 'array'
                    OR EXISTS (
                        SELECT FROM pg_catalog.jsonb_array_elements(x.elem -> 'depends_on') AS d
                        WHERE CASE
                            WHEN pg_catalog.jsonb_typeof(d.value) IS DISTINCT FROM 'string'
                                THEN TRUE
                            ELSE (d.value #>> '{}') !~* (
                                '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?'
                                '[0-9a-f]{12}$'
                            )
                        END
                    ))
                    THEN 'depends_on must be an array of job ids (UUID strings)'
                WHEN v_deps
                    AND pg_catalog.jsonb_array_length(coalesce(x.elem -> 'depends_on', '[]'))
                    + pg_catalog.jsonb_array_length(coalesce(x.elem -> 'after', '[]')) > 10000
                    THEN 'depends_on and after have more than 10000 elements together'
                WHEN v_deps AND (
                    coalesce(pg_catalog.jsonb_typeof(x.elem -> 'after'), 'array') <> 'array'
                    OR EXISTS (
                        SELECT FROM pg_catalog.jsonb_array_elements(x.elem -> 'after') AS a
                        WHERE CASE
                            WHEN pg_catalog.jsonb_typeof(a.value) IS DISTINCT FROM 'number'
                                OR (a.value #>> '{}') !~ '^[0-9]{1,9}$' THEN TRUE
                            ELSE (a.value #>> '{}')::integer NOT BETWEEN 1 AND v_n
                                OR (a.value #>> '{}')::integer = x.ord
                        END
                    ))
                    THEN pg_catalog.format(
                        'after must be an array of the ords (1 to %s) of other elements, got %s',
                        v_n, x.elem -> 'after'
                    )
                WHEN v_deps AND coalesce(x.elem ->> 'on_dependency_failure', 'cancel')
                    NOT IN ('cancel', 'run', 'wait')
                    THEN pg_catalog.format(
                        'on_dependency_failure must be cancel, run or wait, got %s',
                        x.elem -> 'on_dependency_failure'
                    )
                ELSE coalesce(jobq__job_argument_problem(
                    x.elem ->> 'job_type',
                    coalesce(x.elem ->> 'queue', 'default'),
                    x.elem ->> 'idempotency_key',
                    coalesce((x.elem ->> 'max_attempts')::integer, 5),
                    coalesce((x.elem ->> 'priority')::integer, 0)
                ), jobq__limit_argument_problem(
                    x.elem ->> 'limit_group', x.elem ->> 'limit_key'
                ))
            END AS problem
        FROM pg_catalog.jsonb_array_elements(jobs) WITH ORDINALITY AS x (elem, ord)
    ) AS e
    WHERE e.problem IS NOT NULL OR e.payload_size > v_limit
    ORDER BY e.ord
    LIMIT 1;
    IF FOUND AND v_bad.problem IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_enqueue_many: jobs element % (counting from 1) %',
            v_bad.ord, v_bad.problem
            USING ERRCODE = 'invalid_parameter_value';
    ELSIF FOUND THEN
        RAISE EXCEPTION
            'jobq_enqueue_many: jobs element % (counting from 1): payload is % bytes, '
            'the limit is % bytes', v_bad.ord, v_bad.payload_size, v_limit
            USING ERRCODE = 'program_limit_exceeded';
    END IF;

    -- The elements as one array per column, for jobq__insert_jobs (absent keys are NULL: its
    -- defaults). jsonb_to_recordset converts each element in C; the checks above make every
    -- conversion succeed but that of a run_at of the right shape that is no real time.
    BEGIN
        SELECT
            pg_catalog.array_agg(r.job_type ORDER BY r.ord),
            pg_catalog.array_agg(r.payload ORDER BY r.ord),
            pg_catalog.array_agg(r.idempotency_key ORDER BY r.ord),
            pg_catalog.array_agg(r.max_attempts ORDER BY r.ord),
            pg_catalog.array_agg(r.run_at ORDER BY r.ord),
            pg_catalog.array_agg(r.priority ORDER BY r.ord),
            pg_catalog.array_agg(r.queue ORDER BY r.ord),
            pg_catalog.array_agg(r.limit_group ORDER BY r.ord),
            pg_catalog.array_agg(r.limit_key ORDER BY r.ord)
        INTO
            v_job_types, v_payloads, v_keys, v_max_attempts, v_run_ats, v_priorities,
            v_queues, v_limit_groups, v_limit_keys
        FROM ROWS FROM (
            pg_catalog.jsonb_to_recordset(jobs) AS (
                job_type text, payload jsonb, idempotency_key text, max_attempts integer,
                run_at timestamptz, priority integer, queue text, limit_group text,
                limit_key text
            )
        ) WITH ORDINALITY AS r (
            job_type, payload, idempotency_key, max_attempts, run_at, priority, queue,
            limit_group, limit_key, ord
        );
    EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format THEN
        -- A run_at of the right shape but no real time (30 February): name the element.
        FOR v_bad IN
            SELECT x.ord::integer AS ord, x.elem ->> 'run_at' AS run_at
            FROM pg_catalog.jsonb_array_elements(jobs) WITH ORDINALITY AS x (elem, ord)
            WHERE x.elem ->> 'run_at' IS NOT NULL
            ORDER BY x.ord
        LOOP
            BEGIN
                PERFORM v_bad.run_at::timestamptz;
            EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format THEN
                RAISE EXCEPTION
                    'jobq_enqueue_many: jobs element % (counting from 1): run_at % is not a '
                    'real time', v_bad.ord, pg_catalog.quote_literal(v_bad.run_at)
                    USING ERRCODE = 'invalid_parameter_value';
            END;
        END LOOP;
        RAISE;  -- not a run_at after all
    END;

    -- A graph: the jobs first, then their edges. jsonb_path_exists runs in C over the array.
    v_graph := pg_catalog.jsonb_path_exists(jobs, '$[*] ? (exists(@.depends_on) || exists(@.after))');
    IF NOT v_graph THEN
        RETURN QUERY
        SELECT r.ord, r.id
        FROM jobq__insert_jobs(
            v_job_types, v_payloads, v_keys, v_max_attempts, v_run_ats, v_priorities, v_queues,
            v_limit_groups, v_limit_keys
        ) AS r;
        RETURN;
    END IF;

    -- A cycle can only run through after (a job that exists depends on none of these): none
    -- when every element names earlier ones only, else a walk from each element that comes
    -- back to it.
    IF EXISTS (
        WITH RECURSIVE edge (ord, after) AS (
            SELECT x.ord::integer, (a.value #>> '{}')::integer
            FROM pg_catalog.jsonb_array_elements(jobs) WITH ORDINALITY AS x (elem, ord)
            CROSS JOIN pg_catalog.jsonb_array_elements(x.elem -> 'after') AS a
        ),

        walk (start, ord) AS (
            SELECT e.ord, e.after FROM edge AS e
            WHERE EXISTS (SELECT FROM edge AS f WHERE f.after > f.ord)
            UNION
            SELECT w.start, e.after FROM walk AS w JOIN edge AS e ON e.ord = w.ord
        )

        SELECT FROM walk AS w WHERE w.start = w.ord
    ) THEN
        RAISE EXCEPTION 'jobq_enqueue_many: the after references of jobs form a cycle'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A job cannot wait for a job that waits for it.';
    END IF;

    SELECT pg_catalog.array_agg(r.id ORDER BY r.ord) INTO v_ids
    FROM jobq__insert_jobs(
        v_job_types, v_payloads, v_keys, v_max_attempts, v_run_ats, v_priorities, v_queues,
        v_limit_groups, v_limit_keys
    ) AS r;

    -- The edges of the jobs this call inserted (a job whose idempotency key existed already
    -- is left as it was): depends_on ids as given, after ords as the ids returned for them.
    SELECT
        pg_catalog.array_agg(g.child ORDER BY g.child, g.parent) AS children,
        pg_catalog.array_agg(g.parent ORDER BY g.child, g.parent) AS parents,
        pg_catalog.array_agg(g.rule ORDER BY g.child, g.parent) AS rules
    INTO v_edges
    FROM (
        SELECT
            v_ids[x.ord] AS child,
            (d.value #>> '{}')::uuid AS parent,
            coalesce(x.elem ->> 'on_dependency_failure', 'cancel') AS rule
        FROM pg_catalog.jsonb_array_elements(jobs) WITH ORDINALITY AS x (elem, ord)
        CROSS JOIN LATERAL (
            SELECT u.value FROM pg_catalog.jsonb_array_elements(x.elem -> 'depends_on') AS u
            UNION ALL
            SELECT pg_catalog.to_jsonb(v_ids[(a.value #>> '{}')::integer]::text)
            FROM pg_catalog.jsonb_array_elements(x.elem -> 'after') AS a
        ) AS d (value)
        WHERE EXISTS (
            SELECT FROM jobq_jobs AS j
            WHERE j.id = v_ids[x.ord] AND j.created_at = pg_catalog.now()
              AND j.status = 'pending' AND j.waiting_on = 0
        )
    ) AS g;
    IF v_edges.children IS NOT NULL THEN
        PERFORM jobq__add_edges(
            v_edges.children, v_edges.parents, v_edges.rules,
            'jobq_enqueue_many: depends_on'::text, FALSE
        );
    END IF;

    RETURN QUERY
    SELECT u.ord::integer, u.id FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS u (id, ord);
END;
$_$;

COMMENT ON FUNCTION public.jobq_enqueue_many(jobs jsonb) IS 'Adds many jobs in one statement, each with jobq_enqueue''s semantics: an existing
idempotency_key of the same job_type returns the existing id; two elements with the same
job_type and key get the same id (the first is inserted). Built for 10,000+ jobs per call.
Arguments: jobs (a JSON array of objects with the keys of jobq_enqueue: job_type required;
payload, idempotency_key, max_attempts, run_at as ISO 8601 text with an offset, priority,
queue, limit_group, limit_key optional; depends_on, an array of ids of jobs it waits for, and
after, an array of the ords of other elements of this array that it waits for, with
on_dependency_failure as in jobq_enqueue: a whole graph in one call).
Result: one row per element, (ord, id), ord counting from 1 in input order.
Errors: 22023 when jobs is not an array, an element is not an object, has an unknown key or a
bad value (a payload that is not a JSON object included; the message names the element,
counting from 1 like ord, and the key), an after outside the array or naming the element
itself, a cycle of after references, an unknown id in depends_on; 54000 a payload too large, or more than 100,000
elements. Nothing is inserted when any element is bad.
Concurrency: as jobq_enqueue; one NOTIFY per queue that got jobs available now, or a single one
with an empty payload (wake every worker) when more than 100 queues did.';

CREATE FUNCTION public.jobq_error_summary(since interval DEFAULT '01:00:00'::interval, per_type integer DEFAULT 5) RETURNS TABLE(job_type text, error text, failures bigint, jobs bigint, last_seen timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_from timestamptz;
BEGIN
    IF since IS NULL OR since <= interval '0' OR since > interval '31 days' THEN
        RAISE EXCEPTION 'jobq_error_summary: since must be more than 0 and at most 31 days, got %',
            coalesce(since::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF per_type IS NULL OR per_type < 1 OR per_type > 100 THEN
        RAISE EXCEPTION 'jobq_error_summary: per_type must be between 1 and 100, got %',
            coalesce(per_type::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_from := pg_catalog.now() - since;
    RETURN QUERY
    WITH failed AS (
        -- One branch per partial index of live jobs (pending: available, limited, scheduled;
        -- processing), then the failed and dead-letter partitions of the window.
        SELECT j.id, j.job_type, j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
          AND j.attempts > 0 AND j.updated_at >= v_from
        UNION ALL
        SELECT j.id, j.job_type, j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
          AND j.attempts > 0 AND j.updated_at >= v_from
        UNION ALL
        SELECT j.id, j.job_type, j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND j.scheduled
          AND j.attempts > 0 AND j.updated_at >= v_from
        UNION ALL
        SELECT j.id, j.job_type, j.errors FROM jobq_jobs AS j
        WHERE j.status = 'processing' AND j.attempts > 1
        UNION ALL
        SELECT h.id, h.job_type, h.errors FROM jobq_jobs_history AS h
        WHERE h.status IN ('failed', 'dead_letter') AND h.finished_at >= v_from
    ),

    entries AS (
        SELECT f.id, f.job_type, jobq__error_line(e.entry ->> 'error') AS line,
               (e.entry ->> 'at')::timestamptz AS at
        FROM failed AS f,
            pg_catalog.jsonb_array_elements(
                CASE WHEN pg_catalog.jsonb_typeof(f.errors) = 'array' THEN f.errors
                     ELSE '[]'::jsonb END
            ) AS e (entry)
        WHERE pg_catalog.jsonb_typeof(e.entry -> 'at') = 'string'
    ),

    counted AS (
        SELECT x.job_type, x.line, pg_catalog.count(*) AS failures,
               pg_catalog.count(DISTINCT x.id) AS jobs, pg_catalog.max(x.at) AS last_seen
        FROM entries AS x
        WHERE x.at >= v_from
        GROUP BY x.job_type, x.line
    ),

    types AS (
        SELECT DISTINCT c.job_type FROM counted AS c
    )

    SELECT t.job_type, top.line, top.failures, top.jobs, top.last_seen
    FROM types AS t
    CROSS JOIN LATERAL (
        SELECT c.line, c.failures, c.jobs, c.last_seen
        FROM counted AS c
        WHERE c.job_type = t.job_type
        ORDER BY c.failures DESC, c.last_seen DESC, c.line
        LIMIT per_type
    ) AS top
    ORDER BY t.job_type, top.failures DESC, top.last_seen DESC, top.line;
END;
$$;

COMMENT ON FUNCTION public.jobq_error_summary(since interval, per_type integer) IS 'Admin only. The most frequent errors per job type within the last `since`: the failed attempts
recorded in the error histories of live jobs that failed before (waiting to retry or running
again) and of the jobs that ended failed or dead_letter within the window, grouped by job type
and exception line (the first line of the error, or the last line of a Python traceback).
Jobs that failed and then succeeded are not counted. Reads partial indexes only.
Arguments: since (more than 0, at most 31 days; default 1 hour), per_type (the most frequent
errors of each job type, 1 to 100, default 5).
Result: rows (job_type, error: the exception line, failures: failed attempts, jobs: distinct
jobs, last_seen: the latest of those attempts), by job type, most frequent first.
Errors: 22023 since or per_type out of range.
Concurrency: a snapshot; it takes no lock.';

CREATE FUNCTION public.jobq_fail(job_id uuid, worker_id text, error text, retry boolean DEFAULT true, backoff interval DEFAULT '00:00:10'::interval, attempt integer DEFAULT NULL::integer) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
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

COMMENT ON FUNCTION public.jobq_fail(job_id uuid, worker_id text, error text, retry boolean, backoff interval, attempt integer) IS 'Records a failed attempt of a job while the worker holds its claim: last_error, and one
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

CREATE FUNCTION public.jobq_fail_many(job_ids uuid[], worker_id text, errors text[], retries boolean[] DEFAULT NULL::boolean[], backoffs interval[] DEFAULT NULL::interval[], attempts integer[] DEFAULT NULL::integer[]) RETURNS TABLE(ord integer, job_id uuid, status text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    v_count integer := coalesce(pg_catalog.cardinality(jobq_fail_many.job_ids), 0);
    v_bad bigint;
    v_ords bigint[];
    v_statuses text[];
    v_wake text[];
    v_ended text[];
    v_error text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_at CONSTANT jsonb := pg_catalog.to_jsonb(v_now);  -- `at` of an errors entry
BEGIN
    v_error := jobq__worker_id_error(jobq_fail_many.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_fail_many: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_fail_many.errors IS NULL THEN
        RAISE EXCEPTION 'jobq_fail_many: errors must not be NULL'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one error per job id, in the same order.';
    END IF;
    IF pg_catalog.cardinality(jobq_fail_many.errors) <> v_count THEN
        RAISE EXCEPTION 'jobq_fail_many: errors has % elements, job_ids has %',
            pg_catalog.cardinality(jobq_fail_many.errors), v_count
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one error per job id, in the same order.';
    END IF;
    IF jobq_fail_many.retries IS NOT NULL THEN
        IF pg_catalog.cardinality(jobq_fail_many.retries) <> v_count THEN
            RAISE EXCEPTION 'jobq_fail_many: retries has % elements, job_ids has %',
                pg_catalog.cardinality(jobq_fail_many.retries), v_count
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Pass one retry flag per job id, in the same order, or NULL.';
        END IF;
        SELECT r.i INTO v_bad
        FROM pg_catalog.unnest(jobq_fail_many.retries) WITH ORDINALITY AS r (retry, i)
        WHERE r.retry IS NULL
        ORDER BY r.i
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'jobq_fail_many: retries[%] must be true or false, not NULL', v_bad
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    IF jobq_fail_many.backoffs IS NOT NULL THEN
        IF pg_catalog.cardinality(jobq_fail_many.backoffs) <> v_count THEN
            RAISE EXCEPTION 'jobq_fail_many: backoffs has % elements, job_ids has %',
                pg_catalog.cardinality(jobq_fail_many.backoffs), v_count
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Pass one backoff per job id, in the same order, or NULL.';
        END IF;
        SELECT b.i INTO v_bad
        FROM pg_catalog.unnest(jobq_fail_many.backoffs) WITH ORDINALITY AS b (backoff, i)
        WHERE b.backoff IS NULL OR b.backoff < interval '0'
        ORDER BY b.i
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'jobq_fail_many: backoffs[%] must be an interval >= 0, got %',
                v_bad, coalesce(jobq_fail_many.backoffs[v_bad]::text, 'NULL')
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    IF jobq_fail_many.attempts IS NOT NULL
       AND pg_catalog.cardinality(jobq_fail_many.attempts) <> v_count THEN
        RAISE EXCEPTION 'jobq_fail_many: attempts has % elements, job_ids has %',
            pg_catalog.cardinality(jobq_fail_many.attempts), v_count
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one attempt per job id, in the same order, or NULL.';
    END IF;

    -- The elements, each job once (its first element), then one UPDATE joined to them.
    WITH d AS MATERIALIZED (
        SELECT DISTINCT ON (f.job_id)
            f.job_id,
            pg_catalog.substr(coalesce(f.error, ''), 1, 10000) AS error,
            f.retry,
            f.backoff,
            f.attempt,
            f.i
        FROM ROWS FROM (
            pg_catalog.unnest(jobq_fail_many.job_ids),
            pg_catalog.unnest(jobq_fail_many.errors),
            pg_catalog.unnest(
                coalesce(jobq_fail_many.retries, pg_catalog.array_fill(TRUE, ARRAY[v_count]))
            ),
            pg_catalog.unnest(coalesce(
                jobq_fail_many.backoffs,
                pg_catalog.array_fill(interval '10 seconds', ARRAY[v_count])
            )),
            pg_catalog.unnest(coalesce(
                jobq_fail_many.attempts, pg_catalog.array_fill(NULL::integer, ARRAY[v_count])
            ))
        ) WITH ORDINALITY AS f (job_id, error, retry, backoff, attempt, i)
        WHERE f.job_id IS NOT NULL
        ORDER BY f.job_id, f.i
    ),

    failed AS (
        UPDATE jobq_jobs AS j
        SET
            status = CASE
                WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                WHEN NOT d.retry THEN 'failed'
                WHEN j.attempts >= j.max_attempts THEN 'dead_letter'
                ELSE 'pending'
            END,
            available_at = CASE
                WHEN j.cancel_requested_at IS NULL AND d.retry AND j.attempts < j.max_attempts
                    THEN jobq__retry_at(v_now, j.attempts, d.backoff)
                ELSE j.available_at
            END,
            finished_at = CASE
                WHEN j.cancel_requested_at IS NULL AND d.retry AND j.attempts < j.max_attempts
                    THEN NULL
                ELSE v_now
            END,
            -- A retry after a backoff waits outside the claim index (see jobq_dequeue).
            scheduled = j.cancel_requested_at IS NULL AND d.retry
                AND j.attempts < j.max_attempts
                AND d.backoff > interval '0',
            last_error = d.error,
            errors = jobq__append_error(
                j.errors, jobq__error_entry(j.attempts, v_at, j.locked_by, d.error, NULL::text)
            ),
            locked_at = NULL,
            locked_by = NULL,
            locked_until = NULL,
            updated_at = v_now
        FROM d
        WHERE j.id = d.job_id
          AND j.locked_by = jobq_fail_many.worker_id
          AND (d.attempt IS NULL OR j.attempts = d.attempt)
        RETURNING d.i, j.id, j.status, j.queue, j.available_at, j.job_type, j.claimed_at
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'failed'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            pg_catalog.array_agg(c.status),
            pg_catalog.array_agg(extract(epoch FROM pg_catalog.now() - c.claimed_at)::double precision)
        ) AS n
        FROM failed AS c
        HAVING pg_catalog.count(*) > 0
           AND (SELECT s.metrics FROM jobq_settings AS s WHERE s.singleton)
    )

    SELECT
        pg_catalog.array_agg(x.i),
        pg_catalog.array_agg(x.status),
        pg_catalog.array_agg(DISTINCT x.queue) FILTER (
            WHERE x.status = 'pending' AND x.available_at <= v_now
        ),
        pg_catalog.array_agg(x.id::text) FILTER (WHERE x.status <> 'pending')
    INTO v_ords, v_statuses, v_wake, v_ended
    FROM failed AS x
    LEFT JOIN counted ON TRUE;

    -- Retries without backoff are available at once: wake a worker of each such queue.
    PERFORM jobq__notify(v_wake);
    PERFORM jobq__notify_events('done'::text, jobq__awaits_end(v_ended::uuid[]));

    RETURN QUERY
    SELECT e.i::integer, e.job_id, r.status
    FROM pg_catalog.unnest(jobq_fail_many.job_ids) WITH ORDINALITY AS e (job_id, i)
    LEFT JOIN ROWS FROM (pg_catalog.unnest(v_ords), pg_catalog.unnest(v_statuses))
        AS r (i, status) ON r.i = e.i
    ORDER BY e.i;
END;
$$;

COMMENT ON FUNCTION public.jobq_fail_many(job_ids uuid[], worker_id text, errors text[], retries boolean[], backoffs interval[], attempts integer[]) IS 'Records a failed attempt of each of the jobs that the worker still holds, in one
statement, with the same fencing and outcome per job as jobq_fail. A job id given twice counts
once, for its first element. Runs with enable_seqscan = off and jit = off (for this function
only; the caller keeps its own settings): each job is found by its primary key whatever the
statistics say.
Arguments: job_ids (the jobs), worker_id (the worker that claimed them: non-blank, at most
200 characters), errors (one error text per job, same order; a NULL element is stored as an
empty text, each cut to its first 10,000 characters), retries (one flag per
job; NULL = all true), backoffs (one interval >= 0 per job; NULL = all 10 seconds), attempts
(one claim attempt per job; NULL = any, and a NULL element does not fence its job).
Result: one row per element of job_ids, in their order: ord (from 1), job_id, and status, the
new status (pending, dead_letter, failed, or cancelled for a job with a cancel request) or NULL
when the claim is not held (nothing changes for that job).
Errors: 22023 for worker_id NULL, blank or longer than 200 characters, a NULL errors array,
when errors, retries, backoffs or attempts differ in length from job_ids, or for a NULL retry
or a NULL or negative backoff (naming the element); nothing changes then.
Concurrency: as jobq_fail, job by job. It waits for the rows it changes: do not send two calls
over the same jobs at once; send them in id order, as jobq_cancel locks them. One NOTIFY on the
installation''s channel per queue that got a job back available now (one that wakes every
worker beyond 100 queues), and one on the done channel (an empty payload) when a job that a
client awaits ended.';

CREATE FUNCTION public.jobq_find_jobs(job_id uuid DEFAULT NULL::uuid, idempotency_key text DEFAULT NULL::text, job_type text DEFAULT NULL::text, queue text DEFAULT NULL::text, statuses text[] DEFAULT NULL::text[], created_after timestamp with time zone DEFAULT NULL::timestamp with time zone, created_before timestamp with time zone DEFAULT NULL::timestamp with time zone, finished_after timestamp with time zone DEFAULT NULL::timestamp with time zone, finished_before timestamp with time zone DEFAULT NULL::timestamp with time zone, payload_contains jsonb DEFAULT NULL::jsonb, after_id uuid DEFAULT NULL::uuid, max_rows integer DEFAULT 50, scan_limit integer DEFAULT 10000) RETURNS SETOF public.jobq_job_summary
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_full CONSTANT boolean := pg_catalog.has_function_privilege(
        CASE
            WHEN pg_catalog.current_setting('role') = 'none' THEN SESSION_USER
            ELSE pg_catalog.current_setting('role')::name
        END,
        'jobq_get_job(uuid)'::pg_catalog.regprocedure::pg_catalog.oid,
        'EXECUTE'
    );
    v_live CONSTANT boolean := statuses IS NULL
        OR statuses OPERATOR(pg_catalog.&&) jobq__statuses(finished => FALSE);
    v_finished CONSTANT boolean := statuses IS NULL
        OR statuses OPERATOR(pg_catalog.&&) jobq__statuses(finished => TRUE);
    v_after uuid := coalesce(after_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
    v_bad text;
    v_lookup uuid[];
    v_type text;
    v_jobs refcursor;
    v_job jobq_jobs;
    v_read integer;
    v_done boolean := false;
    v_row jobq_job_summary;
    v_examined integer := 0;
    v_found integer := 0;
BEGIN
    IF pg_catalog.length(jobq_find_jobs.idempotency_key) > 1000 THEN
        RAISE EXCEPTION 'jobq_find_jobs: idempotency_key is % characters long, at most 1000 are allowed',
            pg_catalog.length(jobq_find_jobs.idempotency_key)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_find_jobs.job_type) > 200 THEN
        RAISE EXCEPTION 'jobq_find_jobs: job_type is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_find_jobs.job_type)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_find_jobs.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_find_jobs: queue is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_find_jobs.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT s INTO v_bad FROM pg_catalog.unnest(jobq_find_jobs.statuses) AS s
    WHERE s IS NULL OR s <> ALL (jobq__statuses(NULL::boolean))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'jobq_find_jobs: statuses contains %, which is not a status',
            coalesce(pg_catalog.quote_literal(v_bad), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Statuses: ' || pg_catalog.array_to_string(jobq__statuses(NULL::boolean), ', ') || '.';
    END IF;
    IF created_after >= created_before THEN
        RAISE EXCEPTION 'jobq_find_jobs: created_after (%) must be before created_before (%)',
            created_after, created_before
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF finished_after >= finished_before THEN
        RAISE EXCEPTION 'jobq_find_jobs: finished_after (%) must be before finished_before (%)',
            finished_after, finished_before
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF payload_contains IS NOT NULL AND NOT v_full THEN
        RAISE EXCEPTION 'jobq_find_jobs: payload_contains is for roles that may read payloads '
            '(EXECUTE on jobq_get_job)'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF max_rows IS NULL OR max_rows < 1 OR max_rows > 1000 THEN
        RAISE EXCEPTION 'jobq_find_jobs: max_rows must be between 1 and 1000, got %',
            coalesce(max_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF scan_limit IS NULL OR scan_limit < 1 OR scan_limit > 1000000 THEN
        RAISE EXCEPTION 'jobq_find_jobs: scan_limit must be between 1 and 1000000, got %',
            coalesce(scan_limit::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF job_id IS NOT NULL THEN
        v_lookup := ARRAY[job_id];
    ELSIF idempotency_key IS NOT NULL THEN
        -- Each (job_type, key) once in each index: the job types with keys come from the same
        -- indexes, one probe per type (a loose index scan), unless job_type is given.
        v_lookup := '{}';
        FOR v_type IN
            WITH RECURSIVE live_types (t) AS (
                (SELECT j.job_type FROM jobq_jobs AS j
                 WHERE j.idempotency_key IS NOT NULL AND jobq_find_jobs.job_type IS NULL
                 ORDER BY j.job_type LIMIT 1)
                UNION ALL
                SELECT (SELECT j.job_type FROM jobq_jobs AS j
                        WHERE j.idempotency_key IS NOT NULL AND j.job_type > lt.t
                        ORDER BY j.job_type LIMIT 1)
                FROM live_types AS lt WHERE lt.t IS NOT NULL
            ),

            finished_types (t) AS (
                (SELECT h.job_type FROM jobq_jobs_history AS h
                 WHERE h.idempotency_key IS NOT NULL AND jobq_find_jobs.job_type IS NULL
                 ORDER BY h.job_type LIMIT 1)
                UNION ALL
                SELECT (SELECT h.job_type FROM jobq_jobs_history AS h
                        WHERE h.idempotency_key IS NOT NULL AND h.job_type > ft.t
                        ORDER BY h.job_type LIMIT 1)
                FROM finished_types AS ft WHERE ft.t IS NOT NULL
            )

            SELECT jobq_find_jobs.job_type WHERE jobq_find_jobs.job_type IS NOT NULL
            UNION
            SELECT lt.t FROM live_types AS lt WHERE lt.t IS NOT NULL
            UNION
            SELECT ft.t FROM finished_types AS ft WHERE ft.t IS NOT NULL
        LOOP
            v_lookup := v_lookup || ARRAY(
                SELECT j.id FROM jobq_jobs AS j
                WHERE j.job_type = v_type AND j.idempotency_key = jobq_find_jobs.idempotency_key
                UNION ALL
                SELECT h.id FROM jobq_jobs_history AS h
                WHERE h.job_type = v_type AND h.idempotency_key = jobq_find_jobs.idempotency_key
            );
        END LOOP;
    END IF;

    -- A look-up reads its few rows at once; a search reads the jobs newest first, 500 at a
    -- time from the last one read, the newest 500 of each table merged: each table's LIMIT
    -- (a small constant) has it read in the order of its id index, where the union of both
    -- under one LIMIT, or a LIMIT of scan_limit, is planned as a sort of every job.
    <<chunks>>
    LOOP
        IF v_lookup IS NOT NULL THEN
            OPEN v_jobs FOR
            SELECT a.* FROM (
                SELECT j.* FROM jobq_jobs AS j WHERE j.id = ANY (v_lookup)
                UNION ALL
                SELECT h.* FROM jobq_jobs_history AS h WHERE h.id = ANY (v_lookup)
            ) AS a
            WHERE a.id < v_after
            ORDER BY a.id DESC;
        ELSE
            OPEN v_jobs FOR
            SELECT a.* FROM (
                (SELECT j.* FROM jobq_jobs AS j WHERE v_live AND j.id < v_after
                 ORDER BY j.id DESC LIMIT 500)
                UNION ALL
                (SELECT h.* FROM jobq_jobs_history AS h WHERE v_finished AND h.id < v_after
                 ORDER BY h.id DESC LIMIT 500)
            ) AS a
            ORDER BY a.id DESC
            LIMIT 500;
        END IF;
        v_read := 0;
        LOOP
            FETCH v_jobs INTO v_job;
            EXIT WHEN NOT FOUND;
            v_read := v_read + 1;
            v_examined := v_examined + 1;
            v_after := v_job.id;
            v_row := ROW(
                v_job.id, v_job.queue, v_job.job_type, v_job.status, v_job.priority,
                v_job.attempts, v_job.max_attempts, v_job.available_at, v_job.created_at,
                v_job.updated_at, v_job.locked_at, v_job.locked_by, v_job.finished_at,
                CASE WHEN v_full THEN v_job.last_error END,
                v_job.cancel_requested_at IS NOT NULL, v_job.created_at, true
            );
            IF (jobq_find_jobs.job_id IS NULL OR v_job.id = jobq_find_jobs.job_id)
               AND (jobq_find_jobs.idempotency_key IS NULL
                    OR v_job.idempotency_key = jobq_find_jobs.idempotency_key)
               AND (jobq_find_jobs.job_type IS NULL OR v_job.job_type = jobq_find_jobs.job_type)
               AND (jobq_find_jobs.queue IS NULL OR v_job.queue = jobq_find_jobs.queue)
               AND (jobq_find_jobs.statuses IS NULL
                    OR v_job.status = ANY (jobq_find_jobs.statuses))
               AND (created_after IS NULL OR v_job.created_at >= created_after)
               AND (created_before IS NULL OR v_job.created_at < created_before)
               AND (finished_after IS NULL OR v_job.finished_at >= finished_after)
               AND (finished_before IS NULL OR v_job.finished_at < finished_before)
               AND (payload_contains IS NULL
                    OR v_job.payload OPERATOR(pg_catalog.@>) payload_contains)
            THEN
                RETURN NEXT v_row;
                v_found := v_found + 1;
                v_done := v_found >= max_rows;
            END IF;
            IF NOT v_done AND v_examined >= scan_limit THEN
                v_row.matches := false;
                RETURN NEXT v_row;
                v_done := true;
            END IF;
            EXIT WHEN v_done;
        END LOOP;
        CLOSE v_jobs;
        EXIT chunks WHEN v_done OR v_lookup IS NOT NULL OR v_read < 500;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION public.jobq_find_jobs(job_id uuid, idempotency_key text, job_type text, queue text, statuses text[], created_after timestamp with time zone, created_before timestamp with time zone, finished_after timestamp with time zone, finished_before timestamp with time zone, payload_contains jsonb, after_id uuid, max_rows integer, scan_limit integer) IS 'Admin and monitor. Finds jobs, live and finished, that match every filter given (NULL: any),
newest first (by id: jobq''s ids begin with their creation time), with keyset paging: pass the
id of the last row as after_id for the next page. job_id and idempotency_key are looked up
through their indexes (an idempotency_key without a job_type in every job type that has keys);
otherwise the jobs are examined newest first, at most scan_limit of them: stopped there short
of max_rows matches, the last row has matches = false and is only the last job examined, whose
id is the cursor to search on.
Arguments: job_id, idempotency_key (at most 1000 characters), job_type and queue (at most 200
characters each), statuses (any of them), created_after and created_before (created_at in
[after, before)), finished_after and finished_before (finished_at in [after, before): finished
jobs only), payload_contains (payload @> this; only for a role that may call jobq_get_job),
after_id (the cursor), max_rows (1 to 1000, default 50), scan_limit (1 to 1000000, default
10000).
Result: rows of jobq_job_summary (sort_at = created_at; last_error NULL for a role that may not
call jobq_get_job).
Errors: 22023 a text too long, an unknown or NULL status, an empty time range, max_rows or
scan_limit out of range; 42501 payload_contains from a role that may not read payloads.
Concurrency: a snapshot; it takes no lock. A job that finishes between two pages may be listed
twice or not at all.';

CREATE FUNCTION public.jobq_get_job(job_id uuid) RETURNS SETOF public.jobq_jobs
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF job_id IS NULL THEN
        RAISE EXCEPTION 'jobq_get_job: job_id must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT j.* FROM jobq_all_jobs AS j WHERE j.id = jobq_get_job.job_id;
END;
$$;

COMMENT ON FUNCTION public.jobq_get_job(job_id uuid) IS 'Admin. Shows one job, every column (payload, errors history, timestamps), found by its
primary key. Shows the payload, so it is granted to admins only.
Arguments: job_id (the job).
Result: the row of jobq_jobs with this id; no row for an unknown id.
Errors: 22023 a NULL job_id.';

CREATE FUNCTION public.jobq_health(stuck_after interval DEFAULT '01:00:00'::interval, max_pending_age interval DEFAULT '00:15:00'::interval, max_transaction_age interval DEFAULT '00:05:00'::interval) RETURNS TABLE(check_name text, queue text, severity text, value double precision, detail text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    -- oid, not regclass: oid = oid is an operator of pg_catalog, while oid = regclass would be
    -- resolved through a cast, and a look-alike =(oid, regclass) would be chosen instead.
    v_table oid := 'jobq_jobs'::regclass::oid;
    v_owner oid;
    v_schema oid;
    v_schema_name text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF stuck_after IS NULL OR stuck_after <= interval '0' THEN
        RAISE EXCEPTION 'jobq_health: stuck_after must be a positive interval, got %',
            coalesce(stuck_after::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_pending_age IS NULL OR max_pending_age <= interval '0' THEN
        RAISE EXCEPTION 'jobq_health: max_pending_age must be a positive interval, got %',
            coalesce(max_pending_age::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_transaction_age IS NULL OR max_transaction_age <= interval '0' THEN
        RAISE EXCEPTION 'jobq_health: max_transaction_age must be a positive interval, got %',
            coalesce(max_transaction_age::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT c.relowner, c.relnamespace, n.nspname::text INTO v_owner, v_schema, v_schema_name
    FROM pg_catalog.pg_class AS c
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.oid = v_table;
    -- Beyond 1000 years an interval means never (and cannot overflow now() - interval).
    stuck_after := least(stuck_after, interval '1000 years');
    max_pending_age := least(max_pending_age, interval '1000 years');
    max_transaction_age := least(max_transaction_age, interval '1000 years');

    -- Jobs whose claim has not been renewed for stuck_after: their worker is dead or hung
    -- and no worker with a shorter lock_timeout has taken them back.
    RETURN QUERY
    SELECT
        'stuck_processing'::text, NULL::text,
        CASE WHEN pg_catalog.count(*) > 0 THEN 'warning' ELSE 'ok' END,
        pg_catalog.count(*)::double precision,
        pg_catalog.format('%s job(s) processing with a lock older than %s',
                          pg_catalog.count(*), stuck_after)
    FROM jobq_jobs AS j
    WHERE j.status = 'processing' AND j.locked_at < v_now - stuck_after;

    -- Jobs still running stuck_after after jobq_cancel asked them to stop: their handler does
    -- not look at the request (job.cancel_requested() in Python), or cannot stop.
    RETURN QUERY
    SELECT
        'unheeded_cancels'::text, NULL::text,
        CASE WHEN pg_catalog.count(*) > 0 THEN 'warning' ELSE 'ok' END,
        pg_catalog.count(*)::double precision,
        pg_catalog.format('%s job(s) still processing more than %s after a cancel request',
                          pg_catalog.count(*), stuck_after)
    FROM jobq_jobs AS j
    WHERE j.status = 'processing' AND j.cancel_requested_at < v_now - stuck_after;

    -- Per queue: how long the oldest job available now has waited (read from the partial
    -- indexes of pending jobs: jobq__available).
    RETURN QUERY
    SELECT
        'oldest_pending_age'::text, a.queue,
        CASE
            WHEN v_now - pg_catalog.min(a.oldest_available_at) > max_pending_age
                THEN 'warning'
            ELSE 'ok'
        END,
        extract(epoch FROM v_now - pg_catalog.min(a.oldest_available_at))::double precision,
        pg_catalog.format(
            '%s job(s) available, the oldest waiting for %s',
            pg_catalog.sum(a.jobs),
            pg_catalog.date_trunc('second', v_now - pg_catalog.min(a.oldest_available_at))
        )
    FROM jobq__available(NULL::boolean) AS a
    GROUP BY a.queue;

    -- Per queue and job type: available jobs that no worker asked for within max_pending_age
    -- (a misspelt job type, a queue nobody serves), named at once rather than after they aged.
    RETURN QUERY
    SELECT
        'unserved_job_types'::text, u.queue, 'warning'::text, u.jobs::double precision,
        pg_catalog.format(
            '%s job(s) of type %s available, the oldest waiting for %s: no worker claimed '
            'this job type in this queue within %s',
            u.jobs, pg_catalog.quote_literal(u.job_type),
            pg_catalog.date_trunc('second', v_now - u.oldest_available_at),
            max_pending_age
        )
    FROM jobq_unserved_job_types(max_pending_age) AS u;
    IF NOT FOUND THEN
        RETURN QUERY
        SELECT
            'unserved_job_types'::text, NULL::text, 'ok'::text, 0::double precision,
            pg_catalog.format(
                'every available job''s type and queue was claimed by a worker within %s',
                max_pending_age
            );
    END IF;

    RETURN QUERY
    SELECT
        'dead_letters'::text, NULL::text,
        CASE WHEN pg_catalog.count(*) > 0 THEN 'warning' ELSE 'ok' END,
        pg_catalog.count(*)::double precision,
        pg_catalog.format('%s job(s) in dead_letter: see jobq dead-letter list',
                          pg_catalog.count(*))
    FROM jobq_jobs_history AS j
    WHERE j.status = 'dead_letter';

    -- Dead tuples of the jobs table: a queue table that VACUUM cannot keep clean slows down.
    RETURN QUERY
    SELECT
        'dead_tuples'::text, NULL::text,
        CASE
            WHEN s.n_dead_tup > 100000 AND s.n_dead_tup > 2 * s.n_live_tup THEN 'warning'
            ELSE 'ok'
        END,
        s.n_dead_tup::double precision,
        pg_catalog.format('%s dead / %s live rows; last autovacuum %s, last vacuum %s',
               s.n_dead_tup, s.n_live_tup,
               coalesce(s.last_autovacuum::text, 'never'), coalesce(s.last_vacuum::text, 'never'))
    FROM pg_catalog.pg_stat_user_tables AS s
    WHERE s.relid = v_table;

    -- Sessions idle in a transaction, and the oldest transaction holding back VACUUM.
    RETURN QUERY
    SELECT
        'idle_in_transaction'::text, NULL::text,
        CASE WHEN pg_catalog.count(*) > 0 THEN 'warning' ELSE 'ok' END,
        pg_catalog.count(*)::double precision,
        pg_catalog.format('%s session(s) idle in transaction for more than %s', pg_catalog.count(*),
               max_transaction_age)
    FROM pg_catalog.pg_stat_activity AS a
    WHERE a.state LIKE 'idle in transaction%'
      AND a.state_change < v_now - max_transaction_age;

    RETURN QUERY
    SELECT
        'oldest_transaction'::text, NULL::text,
        CASE
            WHEN coalesce(pg_catalog.max(v_now - a.xact_start), interval '0')
                > max_transaction_age
                THEN 'warning'
            ELSE 'ok'
        END,
        coalesce(
            extract(epoch FROM pg_catalog.max(v_now - a.xact_start)), 0
        )::double precision,
        pg_catalog.format(
            'the oldest transaction holding back VACUUM is %s old (pid %s)',
            coalesce(
                pg_catalog.date_trunc(
                    'second', pg_catalog.max(v_now - a.xact_start)
                )::text,
                '0'
            ),
            coalesce((pg_catalog.array_agg(a.pid ORDER BY a.xact_start))[1]::text, '-')
        )
    FROM pg_catalog.pg_stat_activity AS a
    WHERE a.backend_xmin IS NOT NULL
      AND a.pid <> pg_catalog.pg_backend_pid()
      AND a.xact_start IS NOT NULL;

    -- Who else controls the schema. The functions run as the owner of jobq (the role that
    -- migrated, owner of jobq_jobs); a role that owns the schema can drop or replace jobq's
    -- objects, and a role that may CREATE in it can plant objects there. Superusers can do
    -- anything anyway; pg_database_owner stands for the owner of the database.
    RETURN QUERY
    SELECT
        'schema_owner'::text, NULL::text,
        CASE WHEN o.controlled THEN 'warning' ELSE 'ok' END,
        CASE WHEN o.controlled THEN 1 ELSE 0 END::double precision,
        pg_catalog.format(
            'schema %s belongs to %s%s; jobq''s objects to %s',
            pg_catalog.quote_ident(o.nspname), pg_catalog.quote_ident(o.owner_name),
            CASE WHEN o.owner_name = 'pg_database_owner'
                THEN pg_catalog.format(' (the owner of the database: %s)',
                                       pg_catalog.quote_ident(o.effective_name))
                ELSE '' END,
            pg_catalog.quote_ident(o.jobq_owner_name)
        )
    FROM (
        SELECT
            n.nspname::text AS nspname,
            pg_catalog.pg_get_userbyid(n.nspowner)::text AS owner_name,
            pg_catalog.pg_get_userbyid(e.effective)::text AS effective_name,
            pg_catalog.pg_get_userbyid(v_owner)::text AS jobq_owner_name,
            e.effective <> v_owner
                AND NOT coalesce(
                    (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r
                     WHERE r.oid = e.effective),
                    false
                ) AS controlled
        FROM pg_catalog.pg_namespace AS n
        CROSS JOIN LATERAL (
            SELECT CASE
                WHEN n.nspowner = pg_catalog.to_regrole('pg_database_owner')::oid
                    THEN (SELECT d.datdba FROM pg_catalog.pg_database AS d
                          WHERE d.datname = pg_catalog.current_database())
                ELSE n.nspowner
            END AS effective
        ) AS e
        WHERE n.oid = v_schema
    ) AS o;

    RETURN QUERY
    SELECT
        'schema_create'::text, NULL::text,
        CASE WHEN pg_catalog.count(*) > 0 THEN 'warning' ELSE 'ok' END,
        pg_catalog.count(*)::double precision,
        CASE
            WHEN pg_catalog.bool_or(c.everyone) THEN pg_catalog.format(
                'every role (PUBLIC) may CREATE in schema %s: any of them can plant objects '
                'there', pg_catalog.quote_ident(v_schema_name))
            WHEN pg_catalog.count(*) > 0 THEN pg_catalog.format(
                'roles other than jobq''s owner may CREATE in schema %s: %s',
                pg_catalog.quote_ident(v_schema_name),
                pg_catalog.string_agg(pg_catalog.quote_ident(c.rolname), ', '
                                      ORDER BY c.rolname))
            ELSE pg_catalog.format('only jobq''s owner (and superusers) may CREATE in schema %s',
                                   pg_catalog.quote_ident(v_schema_name))
        END
    FROM (
        SELECT r.rolname::text AS rolname, false AS everyone
        FROM pg_catalog.pg_roles AS r
        WHERE NOT r.rolsuper
          AND r.oid <> v_owner
          AND r.rolname <> 'pg_database_owner'
          AND pg_catalog.has_schema_privilege(r.oid, v_schema, 'CREATE')
          AND NOT EXISTS (
              SELECT FROM pg_catalog.pg_namespace AS n
              CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) AS a
              WHERE n.oid = v_schema
                AND a.grantee = 0::oid AND a.privilege_type = 'CREATE'
          )
        UNION ALL
        SELECT 'PUBLIC', true
        FROM pg_catalog.pg_namespace AS n
        CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) AS a
        WHERE n.oid = v_schema
          AND a.grantee = 0::oid AND a.privilege_type = 'CREATE'
    ) AS c;
END;
$$;

COMMENT ON FUNCTION public.jobq_health(stuck_after interval, max_pending_age interval, max_transaction_age interval) IS 'Admin and monitor. Health findings of this queue, one row per check (and per queue for
oldest_pending_age, per queue and job type for unserved_job_types). Checks: stuck_processing
(locks older than stuck_after), unheeded_cancels (processing jobs whose cancel request is older
than stuck_after), oldest_pending_age (per queue, against max_pending_age),
unserved_job_types (available jobs of a queue and job type that no worker claimed within
max_pending_age: see jobq_unserved_job_types), dead_letters, dead_tuples of jobq_jobs with
its last (auto)vacuum, idle_in_transaction and oldest_transaction (against
max_transaction_age: such sessions stop VACUUM from cleaning the queue), schema_owner (the
schema belongs to another role than jobq''s owner, not a superuser) and schema_create (other
roles, or PUBLIC, may CREATE in the schema: they could plant objects there). See
docs/operations.md for what to do about each. Reads jobq_jobs through its partial indexes of
processing, pending and dead-letter jobs only, never a succeeded job, with enable_seqscan =
off and jit = off (for this function only; the caller keeps its own settings): meant to be
polled.
Arguments: stuck_after (a claim older than this is stuck; so is a cancel request older than
this that its job has not heeded), max_pending_age (the oldest pending job may wait this long;
also how recently a worker must have asked for a job type), max_transaction_age (the longest
transaction or idle session tolerated).
Result: rows (check_name, queue, severity ok or warning, value a number, detail a sentence).
Errors: 22023 a NULL or non-positive interval.';

CREATE FUNCTION public.jobq_heartbeat(worker_id text, job_ids uuid[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    v_renewed integer;
    v_error text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__worker_id_error(jobq_heartbeat.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_heartbeat: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The inner SELECT locks the rows that the worker holds and nobody else has locked, and
    -- is evaluated once (an InitPlan); the UPDATE then renews exactly those. Both find the
    -- rows by the primary key (no status test: locked_by implies processing).
    UPDATE jobq_jobs AS j
    SET
        locked_at = v_now,
        -- a claim written without locked_until (by hand) gets jobq_dequeue's default length
        locked_until = v_now + coalesce(j.locked_until - j.locked_at, interval '5 minutes')
    WHERE j.id = ANY (ARRAY(
        SELECT h.id
        FROM jobq_jobs AS h
        WHERE h.id = ANY (jobq_heartbeat.job_ids)
          AND h.locked_by = jobq_heartbeat.worker_id
        FOR UPDATE SKIP LOCKED
    ))
      AND j.locked_by = jobq_heartbeat.worker_id;
    GET DIAGNOSTICS v_renewed = ROW_COUNT;
    RETURN v_renewed;
END;
$$;

COMMENT ON FUNCTION public.jobq_heartbeat(worker_id text, job_ids uuid[]) IS 'Renews the claims of the jobs that the worker still holds (locked_at to now, locked_until to
now + the claim''s own lock length), so that a long job of a
live worker is never taken over. Never waits: a held job whose row another transaction has
locked at that moment (an acknowledgement in flight, a takeover, an open UPDATE) is skipped
this time. A worker learns of cancel requests in the same statement with
jobq_cancel_requested(job_ids).
Arguments: worker_id (the worker that claimed them: non-blank, at most 200 characters),
job_ids (the jobs).
Result: how many claims were renewed; a smaller number than asked means some claims are lost
or were being acknowledged at that moment.
Errors: 22023 worker_id NULL, blank or longer than 200 characters.
Concurrency: it cannot deadlock with the same worker''s jobq_complete_many, jobq_fail_many or
jobq_release on another connection (it skips the rows they hold).
Runs with enable_seqscan = off and jit = off (for this function only; the caller keeps its own
settings):
each job is found by its primary key whatever the statistics say.';

CREATE FUNCTION public.jobq_inserted(job_ids uuid[]) RETURNS TABLE(ord integer, id uuid, inserted boolean)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
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

COMMENT ON FUNCTION public.jobq_inserted(job_ids uuid[]) IS 'Which of the given jobs the current transaction created: for a loader to tell the jobs an
enqueue added from those whose idempotency key had a job already. Pass the ids that
jobq_enqueue, jobq_enqueue_many or jobq_enqueue_arrays returned, in the same transaction (in
the same statement too: it sees what that statement inserted).
Arguments: job_ids (in any order; NULL = none).
Result: one row per element, (ord, id, inserted), ord counting from 1 in array order;
inserted is true for the first element of each job that this transaction created, false for a
repeated id, a job created before this transaction began, an unknown id or NULL.
Errors: none.';

CREATE FUNCTION public.jobq_job_graph(job_id uuid) RETURNS TABLE(id uuid, job_type text, status text, depends_on uuid[])
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    WITH RECURSIVE up (id, depth) AS (
        SELECT jobq_job_graph.job_id, 0
        UNION
        SELECT e.depends_on, u.depth + 1
        FROM up AS u
        JOIN jobq_job_dependencies AS e ON e.job_id = u.id
        WHERE u.depth < 10000
    ),

    down (id, depth) AS (
        SELECT jobq_job_graph.job_id, 0
        UNION
        SELECT e.job_id, d.depth + 1
        FROM down AS d
        JOIN jobq_job_dependencies AS e ON e.depends_on = d.id
        WHERE d.depth < 10000
    ),

    near AS (
        SELECT g.id, pg_catalog.min(g.depth) AS depth
        FROM (SELECT u.id, u.depth FROM up AS u UNION ALL SELECT d.id, d.depth FROM down AS d) AS g
        GROUP BY g.id
        ORDER BY pg_catalog.min(g.depth), g.id
        LIMIT 10000
    )

    SELECT
        a.id, a.job_type, a.status,
        ARRAY(
            SELECT e.depends_on FROM jobq_job_dependencies AS e
            WHERE e.job_id = a.id ORDER BY e.depends_on
        )
    FROM near AS n
    JOIN jobq_all_jobs AS a ON a.id = n.id
    ORDER BY n.depth, a.id
$$;

COMMENT ON FUNCTION public.jobq_job_graph(job_id uuid) IS 'The workflow around a job: the job, the jobs it depends on and the jobs that depend on it,
transitively, each with its job_type, status and depends_on (the ids of its direct
dependencies, which may include jobs outside the result). No payload, result or error.
Arguments: job_id (any job; unknown: no rows).
Result: at most 10,000 rows, the nearest jobs first (by number of edges from job_id), then by
id; a job that no longer exists (pruned) has no row.
Errors: none.
Concurrency: a plain read; takes no lock.';

CREATE FUNCTION public.jobq_job_status(job_ids uuid[]) RETURNS TABLE(id uuid, status text, attempts integer, result jsonb, last_error text, finished_at timestamp with time zone, cancel_requested boolean)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT
        j.id, j.status, j.attempts, j.result, j.last_error, j.finished_at,
        j.cancel_requested_at IS NOT NULL
    FROM jobq_all_jobs AS j
    WHERE j.id = ANY (jobq_job_status.job_ids)
    ORDER BY j.id
$$;

COMMENT ON FUNCTION public.jobq_job_status(job_ids uuid[]) IS 'How the given jobs stand, without their payloads: for producers and workers that want to
know how their jobs ended (not granted to the monitor level: it returns results and errors).
Arguments: job_ids (the jobs; NULL = none).
Result: one row per known id (unknown ids are left out), in id order: id, status, attempts,
result (what the handler returned, for a succeeded job), last_error, finished_at (NULL while
unfinished), cancel_requested (true when jobq_cancel asked the job to stop while it was
processing; false, never NULL, otherwise).
Errors: none.';

CREATE FUNCTION public.jobq_jobs_page(status text, queue text DEFAULT NULL::text, job_type text DEFAULT NULL::text, after_at timestamp with time zone DEFAULT NULL::timestamp with time zone, after_id uuid DEFAULT NULL::uuid, max_rows integer DEFAULT 50, scan_limit integer DEFAULT 10000) RETURNS SETOF public.jobq_job_summary
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    -- The cursor, or for the first page one before every row (infinity sorts after every
    -- time, and the ids at the same time are then all taken), so that each query has one form
    -- whose cursor is an index condition, in a custom plan or a generic one.
    v_at timestamptz;
    v_id uuid;
    v_jobs refcursor;
    v_job jobq_job_summary;
    v_examined integer := 0;
    v_found integer := 0;
    -- Whether the session's role may read error texts (see above).
    v_errors CONSTANT boolean := pg_catalog.has_function_privilege(
        CASE
            WHEN pg_catalog.current_setting('role') = 'none' THEN SESSION_USER
            ELSE pg_catalog.current_setting('role')::name
        END,
        'jobq_get_job(uuid)'::pg_catalog.regprocedure::pg_catalog.oid,
        'EXECUTE'
    );
BEGIN
    IF status IS NULL OR status <> ALL (jobq__statuses(NULL::boolean)) THEN
        RAISE EXCEPTION 'jobq_jobs_page: status must be one of %, got %',
            pg_catalog.array_to_string(jobq__statuses(NULL::boolean), ', '),
            coalesce(pg_catalog.quote_literal(status), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_jobs_page.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_jobs_page: queue is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_jobs_page.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_jobs_page.job_type) > 200 THEN
        RAISE EXCEPTION 'jobq_jobs_page: job_type is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_jobs_page.job_type)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_rows IS NULL OR max_rows < 1 OR max_rows > 1000 THEN
        RAISE EXCEPTION 'jobq_jobs_page: max_rows must be between 1 and 1000, got %',
            coalesce(max_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF scan_limit IS NULL OR scan_limit < 1 OR scan_limit > 1000000 THEN
        RAISE EXCEPTION 'jobq_jobs_page: scan_limit must be between 1 and 1000000, got %',
            coalesce(scan_limit::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (after_at IS NULL) <> (after_id IS NULL) THEN
        RAISE EXCEPTION 'jobq_jobs_page: after_at and after_id go together (the sort_at and id '
            'of the last row of the previous page), got after_at %, after_id %',
            coalesce(after_at::text, 'NULL'), coalesce(after_id::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF status IN ('waiting', 'pending', 'processing') THEN
        v_at := coalesce(after_at, '-infinity');
        v_id := coalesce(after_id, '00000000-0000-0000-0000-000000000000');
    ELSE
        v_at := coalesce(after_at, 'infinity');
        v_id := coalesce(after_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
    END IF;

    IF status = 'pending' THEN
        -- One branch per partial index of pending jobs (jobq_jobs_claim_idx, jobq_jobs_limited_idx,
        -- jobq_jobs_scheduled_idx): a predicate of status alone implies none of them.
        RETURN QUERY
        SELECT p.* FROM (
            SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
                   j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
                   j.finished_at, CASE WHEN v_errors THEN j.last_error END,
                   j.cancel_requested_at IS NOT NULL,
                   j.available_at AS sort_at, true
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
              AND (j.available_at, j.id) > (v_at, v_id)
              AND (jobq_jobs_page.queue IS NULL OR j.queue = jobq_jobs_page.queue)
              AND (jobq_jobs_page.job_type IS NULL OR j.job_type = jobq_jobs_page.job_type)
            UNION ALL
            SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
                   j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
                   j.finished_at, CASE WHEN v_errors THEN j.last_error END,
                   j.cancel_requested_at IS NOT NULL,
                   j.available_at, true
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
              AND (j.available_at, j.id) > (v_at, v_id)
              AND (jobq_jobs_page.queue IS NULL OR j.queue = jobq_jobs_page.queue)
              AND (jobq_jobs_page.job_type IS NULL OR j.job_type = jobq_jobs_page.job_type)
            UNION ALL
            SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
                   j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
                   j.finished_at, CASE WHEN v_errors THEN j.last_error END,
                   j.cancel_requested_at IS NOT NULL,
                   j.available_at, true
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND j.scheduled
              AND (j.available_at, j.id) > (v_at, v_id)
              AND (jobq_jobs_page.queue IS NULL OR j.queue = jobq_jobs_page.queue)
              AND (jobq_jobs_page.job_type IS NULL OR j.job_type = jobq_jobs_page.job_type)
        ) AS p
        ORDER BY p.sort_at, p.id
        LIMIT max_rows;
    ELSIF status = 'waiting' THEN
        RETURN QUERY
        SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
               j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
               j.finished_at, CASE WHEN v_errors THEN j.last_error END,
               j.cancel_requested_at IS NOT NULL, j.created_at,
               true
        FROM jobq_jobs AS j
        WHERE j.status = 'waiting'
          AND (j.created_at, j.id) > (v_at, v_id)
          AND (jobq_jobs_page.queue IS NULL OR j.queue = jobq_jobs_page.queue)
          AND (jobq_jobs_page.job_type IS NULL OR j.job_type = jobq_jobs_page.job_type)
        ORDER BY j.created_at, j.id
        LIMIT max_rows;
    ELSIF status = 'processing' THEN
        RETURN QUERY
        SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
               j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
               j.finished_at, CASE WHEN v_errors THEN j.last_error END,
               j.cancel_requested_at IS NOT NULL, j.locked_until,
               true
        FROM jobq_jobs AS j
        WHERE j.status = 'processing'
          AND (j.locked_until, j.id) > (v_at, v_id)
          AND (jobq_jobs_page.queue IS NULL OR j.queue = jobq_jobs_page.queue)
          AND (jobq_jobs_page.job_type IS NULL OR j.job_type = jobq_jobs_page.job_type)
        ORDER BY j.locked_until, j.id
        LIMIT max_rows;
    ELSE
        -- Finished: newest first, from the partitions of the status in jobq_jobs_history
        -- (jobq_jobs_history_finished_idx of each), examined one by one. The LIMIT says
        -- what the loop reads at most: without it, the plan is costed for every finished job,
        -- and a cost in the millions has PostgreSQL JIT-compile it (half a second, per call,
        -- until the plan is cached) to return 51 rows.
        IF status = 'succeeded' THEN
            OPEN v_jobs FOR
            SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
                   j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
                   j.finished_at, CASE WHEN v_errors THEN j.last_error END,
                   j.cancel_requested_at IS NOT NULL, j.finished_at,
                   true
            FROM jobq_jobs_history AS j
            WHERE j.status = 'succeeded'
              AND (j.finished_at, j.id) < (v_at, v_id)
            ORDER BY j.finished_at DESC, j.id DESC
            LIMIT scan_limit;
        ELSE
            OPEN v_jobs FOR
            SELECT j.id, j.queue, j.job_type, j.status, j.priority, j.attempts, j.max_attempts,
                   j.available_at, j.created_at, j.updated_at, j.locked_at, j.locked_by,
                   j.finished_at, CASE WHEN v_errors THEN j.last_error END,
                   j.cancel_requested_at IS NOT NULL, j.finished_at,
                   true
            FROM jobq_jobs_history AS j
            WHERE j.status IN ('failed', 'dead_letter', 'cancelled')
              AND j.status = jobq_jobs_page.status
              AND (j.finished_at, j.id) < (v_at, v_id)
            ORDER BY j.finished_at DESC, j.id DESC
            LIMIT scan_limit;
        END IF;
        LOOP
            FETCH v_jobs INTO v_job;
            EXIT WHEN NOT FOUND;
            v_examined := v_examined + 1;
            IF (jobq_jobs_page.queue IS NULL OR v_job.queue = jobq_jobs_page.queue)
               AND (jobq_jobs_page.job_type IS NULL OR v_job.job_type = jobq_jobs_page.job_type)
            THEN
                RETURN NEXT v_job;
                v_found := v_found + 1;
                EXIT WHEN v_found >= max_rows;
            END IF;
            IF v_examined >= scan_limit THEN
                v_job.matches := false;
                RETURN NEXT v_job;
                EXIT;
            END IF;
        END LOOP;
        CLOSE v_jobs;
    END IF;
END;
$$;

COMMENT ON FUNCTION public.jobq_jobs_page(status text, queue text, job_type text, after_at timestamp with time zone, after_id uuid, max_rows integer, scan_limit integer) IS 'Admin and monitor. One page of the jobs of one status, without payloads, results or error
texts for a monitor (last_error is NULL unless the session''s role, the role set by SET ROLE or
else the login role, may call jobq_get_job), with keyset paging:
pass the sort_at and id of the last row of a page as after_at and after_id to get the next one.
Pending jobs are listed oldest available first (sort_at = available_at), processing jobs
soonest lock expiry first (sort_at = locked_until: with one
lock_timeout for every worker, oldest claim or heartbeat first), finished ones newest first
(finished_at). Each status is read through
the partial index that holds it, so a page costs the same at any depth and whatever the number
of jobs in other statuses; a queue or job_type filter is applied to the rows of that index.
A page of finished jobs examines at most scan_limit jobs: when it stops there short of max_rows
matches, its last row has matches = false and is only the last job examined, whose sort_at and
id are the cursor to search on (pending and processing jobs, the backlog, are searched whole).
Arguments: status (one status), queue (NULL = any; at most 200 characters), job_type (NULL =
any; at most 200 characters), after_at and
after_id (both NULL for the first page, both given for the next ones), max_rows (1 to 1000,
default 50), scan_limit (how many finished jobs a page examines at most, 1 to 1000000,
default 10000).
Result: rows of jobq_job_summary (the columns of jobq_jobs without payload, result and
errors, last_error NULL for a role that may not call jobq_get_job, cancel_requested, sort_at,
and matches: true on every job listed, false on the marker
of a search stopped by scan_limit).
Errors: 22023 an unknown or NULL status, a queue or job_type longer than 200 characters,
max_rows outside 1..1000, scan_limit outside 1..1000000, only one of after_at and after_id.
Concurrency: a snapshot, as any query; it takes no lock. A job that changes status between two
pages leaves one listing and may appear in another.';

CREATE FUNCTION public.jobq_limit_usage() RETURNS TABLE(limit_group text, limit_key text, running bigint, max_running integer, starts_in_window bigint, max_starts integer, per interval, pending bigint, weight real)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
    -- Three reads, each with the exact predicate of a partial index (a single
    -- status IN ('pending', 'processing') matches none of them, and the planner would read
    -- jobq_jobs itself, finished jobs included): processing jobs, pending jobs available now,
    -- and pending jobs whose run_at is still ahead (jobq_jobs_scheduled_idx).
    WITH counts AS (
        SELECT
            u.limit_group, u.lk,
            pg_catalog.sum(u.running) AS running,
            pg_catalog.sum(u.pending) AS pending
        FROM (
            SELECT j.limit_group, coalesce(j.limit_key, '') AS lk, 1 AS running, 0 AS pending
            FROM jobq_jobs AS j
            WHERE j.status = 'processing' AND j.limit_group IS NOT NULL
            UNION ALL
            SELECT j.limit_group, coalesce(j.limit_key, ''), 0, 1
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
            UNION ALL
            SELECT j.limit_group, coalesce(j.limit_key, ''), 0, 1
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND j.scheduled AND j.limit_group IS NOT NULL
        ) AS u
        INNER JOIN jobq_limits AS l ON l.limit_group = u.limit_group
        GROUP BY u.limit_group, u.lk
    ),

    windows AS (
        SELECT
            s.limit_group, s.limit_key AS lk,
            pg_catalog.sum(s.started) FILTER (
                WHERE s.started_at > pg_catalog.clock_timestamp() - l.per
            ) AS starts
        FROM jobq_limit_starts AS s
        INNER JOIN jobq_limits AS l ON l.limit_group = s.limit_group
        WHERE l.per IS NOT NULL
        GROUP BY s.limit_group, s.limit_key
    )

    SELECT
        l.limit_group,
        CASE WHEN coalesce(c.lk, w.lk) <> '' THEN coalesce(c.lk, w.lk) END AS limit_key,
        coalesce(c.running, 0),
        l.max_running,
        CASE WHEN l.max_starts IS NOT NULL THEN coalesce(w.starts, 0)::bigint END,
        l.max_starts,
        l.per,
        coalesce(c.pending, 0),
        coalesce(k.weight, 1::real)
    FROM counts AS c
    FULL JOIN windows AS w ON w.limit_group = c.limit_group AND w.lk = c.lk
    INNER JOIN jobq_limits AS l ON l.limit_group = coalesce(c.limit_group, w.limit_group)
    LEFT JOIN jobq_limit_keys AS k
        ON k.limit_group = l.limit_group AND k.limit_key = coalesce(c.lk, w.lk)
    WHERE coalesce(c.running, 0) > 0 OR coalesce(c.pending, 0) > 0 OR coalesce(w.starts, 0) > 0
    ORDER BY 1, 2 NULLS FIRST
$$;

COMMENT ON FUNCTION public.jobq_limit_usage() IS 'Monitor and admin. What each (limit_group, limit_key) of a limited group uses of its limits
now: one row per key with jobs processing or pending, or starts within its rate window.
Arguments: none.
Result: limit_group, limit_key (NULL: the group''s jobs without a key), running (jobs
processing), max_running, starts_in_window (jobs started within the window of length per
that ends now; NULL without a rate limit), max_starts, per, pending (jobs waiting, held back
or not), weight (the key''s weight, jobq_set_weight; 1 unless set).
Reads the partial indexes of processing, pending and scheduled jobs, never the finished ones,
with enable_seqscan = off and jit = off (for this function only) whatever the statistics
say.
Errors: none.
Concurrency: reads committed state without taking the keys'' locks: a claim under way is not
counted until it commits.';

CREATE FUNCTION public.jobq_limits() RETURNS TABLE(limit_group text, max_running integer, max_starts integer, per interval, share text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT l.limit_group, l.max_running, l.max_starts, l.per, l.share
    FROM jobq_limits AS l
    ORDER BY l.limit_group
$$;

COMMENT ON FUNCTION public.jobq_limits() IS 'Monitor and admin. The limits set with jobq_set_limit, one row per limited group, by group. A group
without a row is unlimited.
Arguments: none.
Result: limit_group, max_running (NULL: no concurrency limit), max_starts and per (NULL: no
rate limit), share (fifo, round_robin or weighted).
Errors: none.';

CREATE FUNCTION public.jobq_list_jobs(statuses text[] DEFAULT NULL::text[], job_type text DEFAULT NULL::text, queue text DEFAULT NULL::text, max_rows integer DEFAULT 100) RETURNS SETOF public.jobq_jobs
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_bad text;
    v_live boolean;
    v_finished boolean;
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RAISE EXCEPTION 'jobq_list_jobs: max_rows must be at least 1, got %',
            coalesce(max_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.cardinality(jobq_list_jobs.statuses) > 100 THEN
        RAISE EXCEPTION 'jobq_list_jobs: statuses has % elements, at most 100 are allowed',
            pg_catalog.cardinality(jobq_list_jobs.statuses)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_list_jobs.job_type) > 200 THEN
        RAISE EXCEPTION 'jobq_list_jobs: job_type is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_list_jobs.job_type)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_list_jobs.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_list_jobs: queue is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_list_jobs.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT s INTO v_bad FROM pg_catalog.unnest(statuses) AS s
    WHERE s IS NULL OR s <> ALL (jobq__statuses(NULL::boolean))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'jobq_list_jobs: statuses contains %, which is not a status',
            coalesce(pg_catalog.quote_literal(v_bad), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Statuses: ' || pg_catalog.array_to_string(jobq__statuses(NULL::boolean), ', ') || '.';
    END IF;

    -- Live jobs are in jobq_jobs, finished ones in jobq_jobs_history (the same columns, in
    -- the same order): each table is read only when a status it can hold is asked for, so a
    -- listing of finished jobs never reads the backlog, nor one of live jobs the history.
    v_live := statuses IS NULL OR statuses OPERATOR(pg_catalog.&&) jobq__statuses(finished => FALSE);
    v_finished := statuses IS NULL OR statuses OPERATOR(pg_catalog.&&) jobq__statuses(finished => TRUE);
    RETURN QUERY
    SELECT j.*
    FROM jobq_jobs AS j
    WHERE v_live
      AND (jobq_list_jobs.statuses IS NULL OR j.status = ANY (jobq_list_jobs.statuses))
      AND (jobq_list_jobs.job_type IS NULL OR j.job_type = jobq_list_jobs.job_type)
      AND (jobq_list_jobs.queue IS NULL OR j.queue = jobq_list_jobs.queue)
    UNION ALL
    SELECT h.*
    FROM jobq_jobs_history AS h
    WHERE v_finished
      AND (jobq_list_jobs.statuses IS NULL OR h.status = ANY (jobq_list_jobs.statuses))
      AND (jobq_list_jobs.job_type IS NULL OR h.job_type = jobq_list_jobs.job_type)
      AND (jobq_list_jobs.queue IS NULL OR h.queue = jobq_list_jobs.queue)
    ORDER BY updated_at DESC, id
    LIMIT jobq_list_jobs.max_rows;
END;
$$;

COMMENT ON FUNCTION public.jobq_list_jobs(statuses text[], job_type text, queue text, max_rows integer) IS 'Admin. Lists jobs, most recently changed first. Shows payloads, so it is granted to
admins only.
Arguments: statuses (NULL = all; at most 100 status names), job_type (NULL = any; at most 200
characters), queue (NULL = any; at most 200 characters), max_rows (at most this many rows,
default 100).
Result: rows of jobq_jobs.
Errors: 22023 an unknown status, more than 100 statuses, a job_type or queue longer than 200
characters, max_rows < 1.';

CREATE FUNCTION public.jobq_maintain_history(lock_timeout interval DEFAULT '00:00:00.1'::interval) RETURNS TABLE(action text, partition_name text, detail text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET lock_timeout TO '100'
    AS $_$
DECLARE
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_today CONSTANT date := (v_now AT TIME ZONE 'UTC')::date;
    v_status text;
    v_keep interval;
    v_days integer;
    v_parent text;
    v_day date;
    v_lower timestamptz;
    v_upper timestamptz;
    v_before timestamptz;
    v_name text;
    v_grantee text;
    v_rows bigint;
    v_names text[];
    -- The statuses whose history has day partitions, and their keep, for the last two steps
    -- (read from these rather than jobq_retention: Citus cannot join a distributed table with
    -- the catalogue's partitions).
    v_statuses text[] := '{}'::text[];
    v_keeps interval[] := '{}'::interval[];
    -- Empty partitions of a status dropped together (see the last step).
    v_drop_batch CONSTANT integer := 8;
    -- Expired rows deleted per status and call where a status's history is one table.
    v_delete_batch CONSTANT integer := 10000;
BEGIN
    IF jobq_maintain_history.lock_timeout IS NULL
        OR jobq_maintain_history.lock_timeout <= interval '0'
        OR jobq_maintain_history.lock_timeout > interval '1 minute'
    THEN
        RAISE EXCEPTION 'jobq_maintain_history: lock_timeout must be more than 0 and at most '
                        '1 minute, got %', coalesce(jobq_maintain_history.lock_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One session maintains at a time: a concurrent call (another tick) returns at once
    -- rather than make or drop the same partition. The key is made from the installation's
    -- secret lock_seed, as the limit keys' (jobq__claim_limited), so no other role can hold it.
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(
        pg_catalog.format('jobq maintain_history %L', pg_catalog.current_schema()),
        (SELECT s.lock_seed FROM jobq_settings AS s WHERE s.singleton)
    )) THEN
        RETURN;
    END IF;
    -- Local to this call: the SET clause above restores the caller's value on return.
    PERFORM pg_catalog.set_config(
        'lock_timeout',
        pg_catalog.ceil(
            extract(EPOCH FROM jobq_maintain_history.lock_timeout) * 1000
        )::bigint::text || 'ms',
        TRUE
    );

    FOR v_status, v_keep, v_days IN
        SELECT r.status, r.keep, r.partition_days FROM jobq_retention AS r ORDER BY r.status
    LOOP
        v_parent := 'jobq__history_' || v_status;

        -- One table, no partitions (a Citus distributed schema): its expired rows, a batch.
        IF EXISTS (
            SELECT FROM pg_catalog.pg_class AS c
            WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(v_parent)::oid
              AND c.relkind OPERATOR(pg_catalog.=) 'r'::"char"
        ) THEN
            CONTINUE WHEN v_keep IS NULL;
            v_before := v_now - v_keep;
            WITH doomed AS MATERIALIZED (
                SELECT h.id
                FROM jobq_jobs_history AS h
                WHERE h.status = v_status
                  AND h.finished_at < v_before
                ORDER BY h.finished_at, h.id
                LIMIT v_delete_batch
                FOR UPDATE SKIP LOCKED
            ),

            gone AS (
                DELETE FROM jobq_jobs_history AS h
                WHERE h.status = v_status
                  AND h.finished_at < v_before
                  AND h.id = ANY (ARRAY(SELECT d.id FROM doomed AS d))
                RETURNING h.queue, h.job_type, h.status
            ),

            counted AS MATERIALIZED (
                SELECT jobq__metrics_count(
                    'pruned'::text, pg_catalog.array_agg(c.queue),
                    pg_catalog.array_agg(c.job_type), pg_catalog.array_agg(c.status),
                    NULL::double precision[]
                ) AS n
                FROM gone AS c
                HAVING pg_catalog.count(*) > 0
            )

            SELECT pg_catalog.count(*) INTO v_rows
            FROM gone AS g
            LEFT JOIN counted ON TRUE;
            IF v_rows > 0 THEN
                action := 'deleted';
                partition_name := v_parent;
                detail := pg_catalog.format(
                    '%s row(s) finished before %s', v_rows, v_before
                ) || CASE WHEN v_rows >= v_delete_batch
                    THEN ': more are left to the next call' ELSE '' END;
                RETURN NEXT;
            END IF;
            CONTINUE;
        END IF;
        v_statuses := v_statuses || v_status;
        v_keeps := v_keeps || v_keep;

        -- Ahead: a partition covering each of today and the next two days (UTC). A new one
        -- starts at its period (partition_days since 1970-01-01) and is cut short where a
        -- partition made with another partition_days already covers the time.
        v_day := v_today;
        <<ahead>>
        WHILE v_day <= v_today + 2 LOOP
            IF NOT EXISTS (
                SELECT FROM jobq__history_partitions(v_status) AS p
                WHERE p.lower_at <= v_day::timestamp AT TIME ZONE 'UTC'
                  AND p.upper_at > v_day::timestamp AT TIME ZONE 'UTC'
            ) THEN
                v_lower := (DATE '1970-01-01' + ((v_day - DATE '1970-01-01') / v_days) * v_days)
                    ::timestamp AT TIME ZONE 'UTC';
                v_upper := v_lower + pg_catalog.make_interval(days => v_days);
                SELECT
                    greatest(v_lower, pg_catalog.max(p.upper_at) FILTER (
                        WHERE p.upper_at <= v_day::timestamp AT TIME ZONE 'UTC'
                    )),
                    least(v_upper, pg_catalog.min(p.lower_at) FILTER (
                        WHERE p.lower_at > v_day::timestamp AT TIME ZONE 'UTC'
                    ))
                INTO v_lower, v_upper
                FROM jobq__history_partitions(v_status) AS p;
                v_name := v_parent || '_'
                    || pg_catalog.to_char(v_lower AT TIME ZONE 'UTC', 'YYYYMMDD');
                BEGIN
                    EXECUTE pg_catalog.format(
                        'CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS)', v_name, v_parent
                    );
                    EXECUTE pg_catalog.format(
                        'WITH m AS (DELETE FROM %I AS d WHERE d.finished_at >= $1 '
                        'AND d.finished_at < $2 RETURNING d.*) INSERT INTO %I SELECT * FROM m',
                        v_parent || '_default', v_name
                    ) USING v_lower, v_upper;
                    EXECUTE pg_catalog.format(
                        'ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                        v_parent, v_name, v_lower, v_upper
                    );
                    -- Exactly the privileges of a migrated table (none: the parent's apply),
                    -- whatever default privileges jobq's owner has.
                    EXECUTE pg_catalog.format('REVOKE ALL ON TABLE %I FROM PUBLIC', v_name);
                    FOR v_grantee IN
                        SELECT DISTINCT pg_catalog.pg_get_userbyid(a.grantee)::text
                        FROM pg_catalog.pg_class AS c
                        CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS a
                        WHERE c.oid OPERATOR(pg_catalog.=) v_name::regclass::oid
                          AND a.grantee OPERATOR(pg_catalog.<>) c.relowner
                          AND a.grantee OPERATOR(pg_catalog.<>) 0::oid
                    LOOP
                        EXECUTE pg_catalog.format(
                            'REVOKE ALL ON TABLE %I FROM %I', v_name, v_grantee
                        );
                    END LOOP;
                    action := 'created';
                    partition_name := v_name;
                    detail := pg_catalog.format('finished_at from %s to %s', v_lower, v_upper);
                    RETURN NEXT;
                EXCEPTION WHEN lock_not_available THEN
                    action := 'skipped';
                    partition_name := v_name;
                    detail := 'lock not granted within lock_timeout: retried by the next call';
                    RETURN NEXT;
                    EXIT ahead;
                END;
            END IF;
            v_day := v_day + 1;
        END LOOP;

        CONTINUE WHEN v_keep IS NULL;

        -- The DEFAULT partition: emptied whole when its newest row has expired, else its
        -- expired rows deleted (row by row: the one O(rows) step, only for jobs that finished
        -- while no partition covered their day). Its oldest row is read first, through its
        -- index and without a lock; EXCLUSIVE then keeps writers out, not readers.
        v_name := v_parent || '_default';
        v_rows := NULL;
        BEGIN
            EXECUTE pg_catalog.format('SELECT pg_catalog.min(d.finished_at) FROM %I AS d', v_name)
            INTO v_upper;
            IF v_upper < v_now - v_keep THEN
                EXECUTE pg_catalog.format('LOCK TABLE %I IN EXCLUSIVE MODE', v_name);
                EXECUTE pg_catalog.format(
                    'SELECT pg_catalog.max(d.finished_at) FROM %I AS d', v_name
                ) INTO v_upper;
                IF v_upper < v_now - v_keep THEN
                    v_rows := jobq__history_truncate(v_name, TRUE);
                    action := 'truncated';
                ELSE
                    EXECUTE pg_catalog.format(
                        'DELETE FROM %I AS d WHERE d.finished_at < $1', v_name
                    ) USING v_now - v_keep;
                    GET DIAGNOSTICS v_rows = ROW_COUNT;
                    action := 'deleted';
                END IF;
            END IF;
            IF v_rows > 0 THEN
                partition_name := v_name;
                detail := pg_catalog.format('%s row(s) finished before %s', v_rows, v_now - v_keep);
                RETURN NEXT;
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            action := 'skipped';
            partition_name := v_name;
            detail := 'lock not granted within lock_timeout: retried by the next call';
            RETURN NEXT;
        END;
    END LOOP;

    -- Then the expired partitions (every row finished more than keep ago), each emptied whole
    -- (TRUNCATE locks that partition alone, which no completion or claim writes; it waits at
    -- most lock_timeout). Emptied, not dropped: a DROP must lock the status's partitioned
    -- table, which every completion of that status writes through, until the commit. With
    -- metrics on, the rows are counted as they are emptied (jobq__history_truncate).
    FOR v_status, v_name, v_upper IN
        SELECT r.status, p.name, p.upper_at
        FROM ROWS FROM (
            pg_catalog.unnest(v_statuses), pg_catalog.unnest(v_keeps)
        ) AS r (status, keep)
        CROSS JOIN LATERAL jobq__history_partitions(r.status) AS p
        WHERE p.upper_at <= v_now - r.keep
        ORDER BY r.status = 'succeeded', r.status, p.lower_at
    LOOP
        CONTINUE WHEN NOT jobq__history_filled(v_name);
        partition_name := v_name;
        detail := pg_catalog.format('finished_at before %s', v_upper);
        BEGIN
            v_rows := jobq__history_truncate(v_name, FALSE);
            action := 'truncated';
            IF v_rows IS NOT NULL THEN
                detail := detail || pg_catalog.format(': %s row(s)', v_rows);
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            action := 'skipped';
            detail := 'lock not granted within lock_timeout: retried by the next call';
        END;
        RETURN NEXT;
    END LOOP;

    -- Last, the empty partitions of the past (expired and emptied above, or emptied by
    -- jobq_prune) are dropped, all of a status's at once, and only once there are
    -- v_drop_batch of them: each DROP makes completions of that status wait from the moment it
    -- holds the status's partitioned table (and its DEFAULT partition, whose bounds it
    -- changes) until the commit, however few tables it drops, so the drops come in batches,
    -- a few a month at one partition a day. The locks are asked with NOWAIT: at once or not
    -- at all, and no completion ever queues behind a waiting DROP. Once one is held, nothing
    -- here waits any more; succeeded, whose completions are the hot path, comes last.
    -- The window ends when the commit is flushed: the files are removed after the locks go.
    -- A DETACH PARTITION of the batch, its tables dropped by a later call, would hold the
    -- status's table as long (eight statements instead of one, and a commit that flushes the
    -- WAL as well), so the batch is dropped here, in one statement.
    FOR v_status, v_names IN
        SELECT r.status, pg_catalog.array_agg(p.name ORDER BY p.lower_at)
        FROM ROWS FROM (
            pg_catalog.unnest(v_statuses), pg_catalog.unnest(v_keeps)
        ) AS r (status, keep)
        CROSS JOIN LATERAL jobq__history_partitions(r.status) AS p
        WHERE p.upper_at <= v_now - coalesce(r.keep, interval '0')
          AND NOT jobq__history_filled(p.name)
        GROUP BY r.status
        HAVING pg_catalog.count(*) >= v_drop_batch
        ORDER BY r.status = 'succeeded', r.status
    LOOP
        BEGIN
            EXECUTE pg_catalog.format(
                'LOCK TABLE ONLY %I, %I, %s IN ACCESS EXCLUSIVE MODE NOWAIT',
                'jobq__history_' || v_status, 'jobq__history_' || v_status || '_default',
                (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n), ', ')
                 FROM pg_catalog.unnest(v_names) AS n)
            );
            EXECUTE pg_catalog.format(
                'DROP TABLE %s',
                (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n), ', ')
                 FROM pg_catalog.unnest(v_names) AS n)
            );
            action := 'dropped';
        EXCEPTION WHEN lock_not_available THEN
            action := 'skipped';
        END;
        FOREACH v_name IN ARRAY v_names LOOP
            partition_name := v_name;
            detail := CASE action
                WHEN 'dropped' THEN pg_catalog.format(
                    'empty, one of %s dropped together', pg_catalog.cardinality(v_names)
                )
                ELSE 'empty; its DROP''s locks were not free at once: retried by the next call'
            END;
            RETURN NEXT;
        END LOOP;
    END LOOP;
END;
$_$;

COMMENT ON FUNCTION public.jobq_maintain_history(lock_timeout interval) IS 'Admin (and run by every jobq_tick). Keeps jobq_jobs_history: makes the partitions of today and
the next two days (UTC) for each finished status, empties each partition whose jobs all
finished more than the status''s keep ago (jobq_retention, jobq_set_retention), and drops the
empty partitions of the past once a status has eight or more of them, all together: constant
time whatever the rows (TRUNCATE, DROP TABLE). Jobs in a status''s DEFAULT
partition (finished when no partition covered their time) move to the partition made for their
days; the DEFAULT partition is emptied once its newest job is older than keep, and its older
jobs deleted until then. Nothing live is ever dropped: the history holds finished jobs only.
Arguments: lock_timeout (how long each step may wait for its lock: more than 0, at most 1
minute; default 100 ms).
Result: one row per step: action (created, dropped, truncated, deleted, or skipped when its lock
was not granted: the next call retries it), partition_name, detail.
On a Citus distributed schema, where each status''s history is one table with no partitions,
it deletes instead the jobs of each status that finished more than keep ago, at most 10,000 per
status and call, the oldest first (action deleted, partition_name the status''s table; detail
says when more are left to the next call).
Errors: 22023 lock_timeout NULL, not positive or above 1 minute.
Concurrency: one call at a time per installation (a concurrent call returns no row at once).
Claims and completions never queue behind it: the partitions it creates, attaches and empties
are not the ones they write, and each of those steps waits at most lock_timeout (look-ups by id
or key may wait that long behind it); a DROP takes its locks at once or is left to a later call.
The locks taken are held until the caller''s transaction ends (commit at once: completions of a
status whose partitions were dropped wait for that commit, which is why drops come in batches).';

CREATE FUNCTION public.jobq_maintain_indexes(lock_timeout interval DEFAULT '00:00:00.05'::interval, bloat_ratio real DEFAULT 4) RETURNS TABLE(action text, index_name text, detail text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET lock_timeout TO '50'
    AS $$
DECLARE
    v_table CONSTANT regclass := 'jobq_jobs'::regclass;
    v_heap bigint;
    v_live double precision;
    v_index oid;
    v_schema text;
    v_name text;
    v_bytes bigint;
    v_need bigint;
    v_after bigint;
    v_start timestamptz;
    -- The indexes rebuilt in the last 2 minutes, read before the look-up of the catalogue:
    -- Citus cannot join its distributed jobq_index_rebuilds with catalogue tables.
    v_recent text[];
BEGIN
    IF jobq_maintain_indexes.lock_timeout IS NULL
        OR jobq_maintain_indexes.lock_timeout <= interval '0'
        OR jobq_maintain_indexes.lock_timeout > interval '1 minute'
    THEN
        RAISE EXCEPTION 'jobq_maintain_indexes: lock_timeout must be more than 0 and at most '
                        '1 minute, got %', coalesce(jobq_maintain_indexes.lock_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_maintain_indexes.bloat_ratio IS NULL
        OR NOT jobq_maintain_indexes.bloat_ratio BETWEEN 2 AND 1000
    THEN
        RAISE EXCEPTION 'jobq_maintain_indexes: bloat_ratio must be from 2 to 1000, got %',
                        coalesce(jobq_maintain_indexes.bloat_ratio::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One session maintains at a time: a concurrent call (another Worker's tick) returns at
    -- once. The key is made from the installation's secret lock_seed, as the other advisory
    -- keys, so no other role can hold it.
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(
        pg_catalog.format('jobq maintain_indexes %L', pg_catalog.current_schema()),
        (SELECT s.lock_seed FROM jobq_settings AS s WHERE s.singleton)
    )) THEN
        RETURN;
    END IF;

    v_heap := pg_catalog.pg_relation_size(v_table);
    v_live := greatest(pg_catalog.pg_stat_get_live_tuples(v_table)::double precision, 0);

    v_recent := ARRAY(
        SELECT r.index_name FROM jobq_index_rebuilds AS r
        WHERE r.rebuilt_at > pg_catalog.now() - interval '2 minutes'
    );
    -- The most bloated index not rebuilt in the last 2 minutes.
    SELECT c.oid, n.nspname::text, c.relname::text, pg_catalog.pg_relation_size(c.oid), w.need
    INTO v_index, v_schema, v_name, v_bytes, v_need
    FROM pg_catalog.pg_index AS i
    JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid
    JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    CROSS JOIN LATERAL (
        SELECT 8192 * (2 + pg_catalog.ceil(
            c.reltuples::double precision
            * (4 + 8 * pg_catalog.ceil((8 + pg_catalog.sum(
                CASE WHEN a.attlen > 0 THEN a.attlen ELSE 32 END
            )) / 8.0)) / (8192 * 0.9)
        ))::bigint AS need
        FROM pg_catalog.pg_attribute AS a
        WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attnum > 0
    ) AS w
    WHERE i.indrelid OPERATOR(pg_catalog.=) v_table::oid
      AND i.indisvalid AND i.indisready AND c.reltuples >= 0
      AND pg_catalog.pg_relation_size(c.oid) >= 1048576
      AND pg_catalog.pg_relation_size(c.oid) > jobq_maintain_indexes.bloat_ratio * w.need
      AND c.relname::text <> ALL (v_recent)
    ORDER BY pg_catalog.pg_relation_size(c.oid)::double precision / w.need DESC, c.relname
    LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    index_name := v_name;

    IF v_heap > 268435456 OR v_live > 100000 THEN
        action := 'deferred';
        detail := pg_catalog.format(
            '%s bytes, %s needed; the table (%s bytes, %s live rows) is too large to rebuild '
            'within a short lock: retried by a later call', v_bytes, v_need, v_heap, v_live
        );
        RETURN NEXT;
        RETURN;
    END IF;

    -- Local to this call: the SET clause above restores the caller's value on return.
    PERFORM pg_catalog.set_config(
        'lock_timeout',
        pg_catalog.ceil(
            extract(EPOCH FROM jobq_maintain_indexes.lock_timeout) * 1000
        )::bigint::text || 'ms',
        TRUE
    );
    BEGIN
        v_start := pg_catalog.clock_timestamp();
        -- Named with its schema: no other relation of that name on the search_path is rebuilt.
        EXECUTE pg_catalog.format('REINDEX INDEX %I.%I', v_schema, v_name);
    EXCEPTION WHEN lock_not_available THEN
        action := 'skipped';
        detail := 'lock not granted within lock_timeout: retried by the next call';
        RETURN NEXT;
        RETURN;
    END;
    v_after := pg_catalog.pg_relation_size(v_index);
    INSERT INTO jobq_index_rebuilds AS r (index_name, rebuilt_at, bytes_before, bytes_after, took)
    VALUES (v_name, v_start, v_bytes, v_after, pg_catalog.clock_timestamp() - v_start)
    ON CONFLICT ON CONSTRAINT jobq_index_rebuilds_pkey DO UPDATE
    SET rebuilt_at = excluded.rebuilt_at, bytes_before = excluded.bytes_before,
        bytes_after = excluded.bytes_after, took = excluded.took;
    action := 'rebuilt';
    detail := pg_catalog.format(
        '%s -> %s bytes (%s needed) in %s ms', v_bytes, v_after, v_need,
        pg_catalog.round((extract(EPOCH FROM pg_catalog.clock_timestamp() - v_start) * 1000)::numeric, 1)
    );
    RETURN NEXT;
END;
$$;

COMMENT ON FUNCTION public.jobq_maintain_indexes(lock_timeout interval, bloat_ratio real) IS 'Admin (and run by every jobq_tick). Rebuilds (REINDEX) the most bloated index of jobq_jobs, if
any: one at least 1 MB and more than bloat_ratio times what its live entries need, not rebuilt
in the last 2 minutes (jobq_index_rebuilds). It brings the indexes back to their size after a
held snapshot made them grow (VACUUM makes their pages reusable, never returns them). A rebuild
runs only while jobq_jobs is small (heap at most 256 MB, at most 100,000 live jobs), so that it
holds the writers of jobq_jobs for a short scan.
Arguments: lock_timeout (how long the rebuild may wait for its locks: more than 0, at most 1
minute; default 50 ms), bloat_ratio (from 2 to 1000; default 4).
Result: at most one row: action (rebuilt; skipped when its locks were not granted in time;
deferred when the table is too large now: a later call retries either), index_name, detail
(sizes in bytes, and the rebuild''s milliseconds).
Errors: 22023 lock_timeout NULL, not positive or above 1 minute; 22023 bloat_ratio NULL or
outside 2..1000.
Concurrency: one call at a time per installation (a concurrent call returns no row at once).
Claims, enqueues and completions queue behind its lock request for at most lock_timeout, then
wait for the rebuild (a scan of the small table) and the caller''s commit: commit at once.
Readers of jobq_jobs that use the index being rebuilt wait for it too. No row is changed or
lost.';

CREATE FUNCTION public.jobq_metrics() RETURNS TABLE(metric text, labels jsonb, value double precision)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
    v_limited_queues text[];
    v_limited_oldest timestamptz[];
BEGIN
    IF pg_catalog.current_setting('transaction_read_only') = 'off'
       AND pg_catalog.current_setting('transaction_isolation') = 'read committed' THEN
        PERFORM jobq__metrics_fold();
    END IF;

    -- Limited jobs (jobq_jobs_limited_idx, outside the claim index): the oldest of each queue,
    -- read from that index (its entries are the pending limited jobs only, never a finished
    -- one) by jobq__available, whose enable_seqscan = off keeps it there: statistics gathered
    -- while most rows were pending limited jobs made the planner read the whole table here.
    -- In a statement of its own: under Citus the statement below runs on the schema's node,
    -- where the helper's read of jobq_jobs would be a distributed query nested in it.
    SELECT
        pg_catalog.array_agg(a.queue), pg_catalog.array_agg(a.available_at)
    INTO v_limited_queues, v_limited_oldest
    FROM (
        SELECT l.queue, pg_catalog.min(l.oldest_available_at) AS available_at
        FROM jobq__available(limited => TRUE) AS l
        GROUP BY l.queue
    ) AS a;

    RETURN QUERY
    WITH totals AS MATERIALIZED (
        SELECT
            c.queue, c.job_type,
            pg_catalog.sum(c.enqueued) AS enqueued,
            pg_catalog.sum(c.started) AS started,
            pg_catalog.sum(c.succeeded) AS succeeded,
            pg_catalog.sum(c.failed) AS failed,
            pg_catalog.sum(c.dead_lettered) AS dead_lettered,
            pg_catalog.sum(c.cancelled) AS cancelled,
            pg_catalog.sum(c.lock_expired) AS lock_expired,
            pg_catalog.sum(c.released) AS released,
            pg_catalog.sum(c.requeued) AS requeued,
            pg_catalog.sum(c.jobs_pending) AS jobs_pending,
            pg_catalog.sum(c.jobs_processing) AS jobs_processing,
            pg_catalog.sum(c.jobs_succeeded) AS jobs_succeeded,
            pg_catalog.sum(c.jobs_failed) AS jobs_failed,
            pg_catalog.sum(c.jobs_dead_letter) AS jobs_dead_letter,
            pg_catalog.sum(c.jobs_cancelled) AS jobs_cancelled,
            pg_catalog.sum(c.wait_sum) AS wait_sum,
            pg_catalog.sum(c.run_sum) AS run_sum
        FROM (
            SELECT * FROM jobq_metric_counters
            UNION ALL
            SELECT * FROM jobq_metric_deltas
        ) AS c
        GROUP BY c.queue, c.job_type
    ),

    -- Per (queue, job_type, histogram, bucket): the count in that bucket, summed over shards.
    buckets AS MATERIALIZED (
        SELECT c.queue, c.job_type, h.name, h.i, pg_catalog.sum(h.n) AS n
        FROM (
            SELECT * FROM jobq_metric_counters
            UNION ALL
            SELECT * FROM jobq_metric_deltas
        ) AS c
        CROSS JOIN LATERAL (
            SELECT 'jobq_wait_seconds'::text, w.n, w.i
            FROM pg_catalog.unnest(c.wait_buckets) WITH ORDINALITY AS w (n, i)
            UNION ALL
            SELECT 'jobq_run_seconds'::text, r.n, r.i
            FROM pg_catalog.unnest(c.run_buckets) WITH ORDINALITY AS r (n, i)
        ) AS h (name, n, i)
        GROUP BY c.queue, c.job_type, h.name, h.i
    ),

    -- Every (queue, job_type) with both histograms, all buckets, cumulative ("le").
    histograms AS (
        SELECT
            t.queue, t.job_type, n.name, p.i,
            coalesce(pg_catalog.sum(b.n) OVER (
                PARTITION BY t.queue, t.job_type, n.name ORDER BY p.i
            ), 0) AS cumulative
        FROM totals AS t
        CROSS JOIN (VALUES ('jobq_wait_seconds'::text), ('jobq_run_seconds')) AS n (name)
        CROSS JOIN pg_catalog.generate_series(1, 22) AS p (i)
        LEFT JOIN buckets AS b
            ON b.queue = t.queue AND b.job_type = t.job_type AND b.name = n.name AND b.i = p.i
    ),

    queues AS (
        SELECT DISTINCT t.queue FROM totals AS t
    ),

    -- The ranges of the claim index with jobs: one per (job_type, queue) pair, keyed by the
    -- hashes of the names; one probe each (a skip scan), as jobq_dequeue finds them.
    ranges AS (
        WITH RECURSIVE r (ht, hq) AS (
            (
                SELECT
                    pg_catalog.hashtextextended(j.job_type, 0),
                    pg_catalog.hashtextextended(j.queue, 0)
                FROM jobq_jobs AS j
                WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
                ORDER BY
                    pg_catalog.hashtextextended(j.job_type, 0),
                    pg_catalog.hashtextextended(j.queue, 0)
                LIMIT 1
            )

            UNION ALL

            SELECT n.ht, n.hq
            FROM r
            CROSS JOIN LATERAL (
                SELECT
                    pg_catalog.hashtextextended(j.job_type, 0) AS ht,
                    pg_catalog.hashtextextended(j.queue, 0) AS hq
                FROM jobq_jobs AS j
                WHERE (pg_catalog.hashtextextended(j.job_type, 0),
                       pg_catalog.hashtextextended(j.queue, 0)) > (r.ht, r.hq)
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.limit_group IS NULL
                ORDER BY
                    pg_catalog.hashtextextended(j.job_type, 0),
                    pg_catalog.hashtextextended(j.queue, 0)
                LIMIT 1
            ) AS n
        )

        SELECT r.ht, r.hq FROM r
    ),

    -- In each range, the oldest available_at of each priority present: the first entry of
    -- each priority's run of the index (one probe per priority), with its job's queue. (Two
    -- pairs whose hashes collide share a range, of which this reads the first job of each
    -- priority: the other pair's oldest could be missed, in that case only.)
    oldest_by_priority AS (
        WITH RECURSIVE o (ht, hq, queue, priority, available_at) AS (
            SELECT r.ht, r.hq, f.queue, f.priority, f.available_at
            FROM ranges AS r
            CROSS JOIN LATERAL (
                SELECT j.queue, j.priority, j.available_at
                FROM jobq_jobs AS j
                WHERE pg_catalog.hashtextextended(j.job_type, 0) = r.ht
                  AND pg_catalog.hashtextextended(j.queue, 0) = r.hq
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.limit_group IS NULL
                ORDER BY j.priority DESC, j.available_at ASC
                LIMIT 1
            ) AS f

            UNION ALL

            SELECT o.ht, o.hq, f.queue, f.priority, f.available_at
            FROM o
            CROSS JOIN LATERAL (
                SELECT j.queue, j.priority, j.available_at
                FROM jobq_jobs AS j
                WHERE pg_catalog.hashtextextended(j.job_type, 0) = o.ht
                  AND pg_catalog.hashtextextended(j.queue, 0) = o.hq
                  AND j.status = 'pending'
                  AND NOT j.scheduled
                  AND j.limit_group IS NULL
                  AND j.priority < o.priority
                ORDER BY j.priority DESC, j.available_at ASC
                LIMIT 1
            ) AS f
        )

        SELECT o.queue, o.available_at FROM o
    ),

    -- Limited jobs: the oldest of each queue, read above.
    limited AS (
        SELECT l.queue, l.available_at
        FROM ROWS FROM (pg_catalog.unnest(v_limited_queues), pg_catalog.unnest(v_limited_oldest))
            AS l (queue, available_at)
    ),

    -- Scheduled jobs that have come due but that no claim has promoted yet (no worker claims
    -- at all): the 1,000 oldest, from jobq_jobs_scheduled_idx.
    due AS (
        SELECT j.queue, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending'
          AND j.scheduled
          AND j.available_at <= v_now
        ORDER BY j.available_at
        LIMIT 1000
    ),

    -- Per queue of an admitted label set; the queues of the others under the overflow
    -- label set's queue '' (the label sets of a scrape are bounded, jobq__metric_labels).
    oldest AS (
        SELECT
            CASE
                WHEN EXISTS (SELECT FROM jobq_metric_labels AS m WHERE m.queue = a.queue)
                    THEN a.queue
                ELSE ''
            END AS queue,
            pg_catalog.min(a.available_at) AS available_at
        FROM (
            SELECT b.queue, b.available_at FROM oldest_by_priority AS b
            UNION ALL
            SELECT d.queue, d.available_at FROM due AS d
            UNION ALL
            SELECT l.queue, l.available_at FROM limited AS l
        ) AS a
        GROUP BY 1
    )

    SELECT s.metric, s.labels, s.value
    FROM (
        SELECT
            k.metric,
            pg_catalog.jsonb_build_object('queue', t.queue, 'job_type', t.job_type) AS labels,
            k.value::double precision AS value,
            0 AS i
        FROM totals AS t
        CROSS JOIN LATERAL (
            VALUES
                ('jobq_enqueued_total'::text, t.enqueued),
                ('jobq_started_total', t.started),
                ('jobq_succeeded_total', t.succeeded),
                ('jobq_failed_total', t.failed),
                ('jobq_dead_lettered_total', t.dead_lettered),
                ('jobq_cancelled_total', t.cancelled),
                ('jobq_lock_expired_total', t.lock_expired),
                ('jobq_released_total', t.released),
                ('jobq_requeued_total', t.requeued),
                ('jobq_wait_seconds_sum', t.wait_sum::numeric),
                ('jobq_run_seconds_sum', t.run_sum::numeric)
        ) AS k (metric, value)

        UNION ALL

        SELECT
            'jobq_jobs',
            pg_catalog.jsonb_build_object('queue', g.queue, 'status', g.status),
            pg_catalog.sum(g.n)::double precision,
            0
        FROM totals AS t
        CROSS JOIN LATERAL (
            VALUES
                (t.queue, 'pending'::text, t.jobs_pending),
                (t.queue, 'processing', t.jobs_processing),
                (t.queue, 'succeeded', t.jobs_succeeded),
                (t.queue, 'failed', t.jobs_failed),
                (t.queue, 'dead_letter', t.jobs_dead_letter),
                (t.queue, 'cancelled', t.jobs_cancelled)
        ) AS g (queue, status, n)
        GROUP BY g.queue, g.status

        UNION ALL

        SELECT
            'jobq_oldest_available_age_seconds',
            pg_catalog.jsonb_build_object('queue', q.queue),
            coalesce(
                greatest(extract(epoch FROM v_now - o.available_at), 0),
                0
            )::double precision,
            0
        FROM (SELECT u.queue FROM queues AS u UNION SELECT o2.queue FROM oldest AS o2) AS q
        LEFT JOIN oldest AS o ON o.queue = q.queue

        UNION ALL

        -- 1 while the functions count (jobq_configure(metrics => true)); 0 while the
        -- counters, the histograms and jobq_jobs stand still.
        SELECT
            'jobq_metrics_counting', '{}'::jsonb,
            (CASE WHEN st.metrics THEN 1 ELSE 0 END)::double precision, 0
        FROM jobq_settings AS st

        UNION ALL

        SELECT
            h.name || '_bucket',
            pg_catalog.jsonb_build_object(
                'queue', h.queue, 'job_type', h.job_type,
                'le', coalesce((jobq__metric_bounds())[h.i]::text, '+Inf')
            ),
            h.cumulative::double precision,
            h.i
        FROM histograms AS h

        UNION ALL

        SELECT
            h.name || '_count',
            pg_catalog.jsonb_build_object('queue', h.queue, 'job_type', h.job_type),
            h.cumulative::double precision,
            0
        FROM histograms AS h
        WHERE h.i = 22
    ) AS s
    -- Buckets in the order of their bounds, +Inf last, as Prometheus lists them.
    ORDER BY s.metric, s.labels OPERATOR(pg_catalog.-) 'le'::text, s.i;
END;
$$;

COMMENT ON FUNCTION public.jobq_metrics() IS 'The Prometheus metrics of this installation, one row per sample. Counters per queue and
job_type, exact and transactional (a rolled-back change counts nothing), never lowered by
jobq_prune: jobq_enqueued_total, jobq_started_total (claims of pending jobs),
jobq_succeeded_total, jobq_failed_total (failed attempts: jobq_fail, jobq_fail_many),
jobq_dead_lettered_total, jobq_cancelled_total, jobq_lock_expired_total (claims taken over),
jobq_released_total (claims given back unstarted), jobq_requeued_total. Gauges: jobq_jobs (per
queue and status), jobq_oldest_available_age_seconds (per queue; 0 when no job is
available) and jobq_metrics_counting (1 while the functions count, 0 while counting is off,
as on a new installation: jobq_configure(metrics => true)). Histograms per queue and job_type, as _bucket (label le, cumulative, +Inf last),
_sum and _count rows: jobq_wait_seconds (available_at to claim) and jobq_run_seconds (claim to
completion or failure).
Label sets: at most jobq_settings.metrics_label_sets (queue, job_type) pairs (default 1000,
jobq_configure(metrics_label_sets => ...)) are counted under their own names, first come
first served; the others are counted under the overflow label set, queue "" and job_type ""
(for the per-queue gauges, queue ""), so a scrape holds at most that many label sets plus
one; jobq_metrics_forget() removes those without jobs.
Cost: the rows of jobq_metric_counters (about one per live backend per queue and job type)
and a few index probes per (job_type, queue, priority) with jobs available; finished jobs are
never read. Each call first folds the rows of transactions that counted several statements
and of backends that have exited into one per queue and job_type (READ COMMITTED, writable
transactions only).
Arguments: none.
Result: rows (metric, labels, value): the metric name as Prometheus shows it, the labels as a
JSON object of strings, the value.
Errors: none.
Concurrency: reads without waiting; the fold skips rows another session holds.';

CREATE FUNCTION public.jobq_metrics_forget() RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_forgotten bigint;
BEGIN
    LOCK TABLE jobq_jobs, jobq_jobs_history IN SHARE MODE;
    LOCK TABLE jobq_metric_counters, jobq_metric_deltas, jobq_metric_labels
    IN SHARE ROW EXCLUSIVE MODE;

    WITH present AS MATERIALIZED (
        SELECT DISTINCT j.queue, j.job_type FROM jobq_all_jobs AS j
    ),

    labels AS MATERIALIZED (
        SELECT DISTINCT c.queue, c.job_type
        FROM (
            SELECT l.queue, l.job_type FROM jobq_metric_labels AS l
            UNION ALL
            SELECT x.queue, x.job_type FROM jobq_metric_counters AS x
            UNION ALL
            SELECT d.queue, d.job_type FROM jobq_metric_deltas AS d
        ) AS c
    ),

    gone AS MATERIALIZED (
        SELECT l.queue, l.job_type
        FROM labels AS l
        WHERE NOT (l.queue = '' AND l.job_type = '')
          AND NOT EXISTS (
              SELECT FROM present AS p WHERE p.queue = l.queue AND p.job_type = l.job_type
          )
        UNION ALL
        SELECT o.queue, o.job_type
        FROM labels AS o
        WHERE o.queue = '' AND o.job_type = ''
          AND NOT EXISTS (
              SELECT FROM present AS p
              WHERE NOT EXISTS (
                  SELECT FROM jobq_metric_labels AS m
                  WHERE m.queue = p.queue AND m.job_type = p.job_type
              )
          )
    ),

    forgot_labels AS (
        DELETE FROM jobq_metric_labels AS m
        USING gone AS g
        WHERE m.queue = g.queue AND m.job_type = g.job_type
        RETURNING 1
    ),

    forgot_counters AS (
        DELETE FROM jobq_metric_counters AS c
        USING gone AS g
        WHERE c.queue = g.queue AND c.job_type = g.job_type
        RETURNING 1
    ),

    forgot_deltas AS (
        DELETE FROM jobq_metric_deltas AS d
        USING gone AS g
        WHERE d.queue = g.queue AND d.job_type = g.job_type
        RETURNING 1
    )

    SELECT pg_catalog.count(*) INTO v_forgotten FROM gone;
    RETURN v_forgotten;
END;
$$;

COMMENT ON FUNCTION public.jobq_metrics_forget() IS 'Admin only. Removes from jobq_metrics() every (queue, job_type) label set that has no job
left, in any status: its counters, histograms and gauge rows, and its admission under the
bound jobq_settings.metrics_label_sets, so that new label sets are counted under their own
names again; the overflow label set (queue '''', job_type '''') goes too when no job left is
counted under it. The removed series end, as a restarted target''s do.
Arguments: none.
Result: how many label sets were removed.
Errors: none.
Concurrency: LOCK TABLE jobq_jobs, jobq_jobs_history IN SHARE MODE (waits for the
transactions writing jobs at that moment, blocks writers until the caller''s transaction ends) and the metric tables in
SHARE ROW EXCLUSIVE MODE; reads jobq_all_jobs whole, once. Run it when the queue is quiet, in a
transaction of its own.';

CREATE FUNCTION public.jobq_metrics_recount() RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_jobs bigint;
BEGIN
    LOCK TABLE jobq_jobs, jobq_jobs_history IN SHARE MODE;
    UPDATE jobq_metric_counters AS c
    SET
        jobs_pending = 0, jobs_processing = 0, jobs_succeeded = 0, jobs_failed = 0,
        jobs_dead_letter = 0, jobs_cancelled = 0
    WHERE c.jobs_pending <> 0 OR c.jobs_processing <> 0 OR c.jobs_succeeded <> 0
       OR c.jobs_failed <> 0 OR c.jobs_dead_letter <> 0 OR c.jobs_cancelled <> 0;
    UPDATE jobq_metric_deltas AS c
    SET
        jobs_pending = 0, jobs_processing = 0, jobs_succeeded = 0, jobs_failed = 0,
        jobs_dead_letter = 0, jobs_cancelled = 0
    WHERE c.jobs_pending <> 0 OR c.jobs_processing <> 0 OR c.jobs_succeeded <> 0
       OR c.jobs_failed <> 0 OR c.jobs_dead_letter <> 0 OR c.jobs_cancelled <> 0;

    WITH raw AS MATERIALIZED (
        SELECT
            j.queue, j.job_type,
            pg_catalog.count(*) FILTER (WHERE j.status = 'pending') AS pending,
            pg_catalog.count(*) FILTER (WHERE j.status = 'processing') AS processing,
            pg_catalog.count(*) FILTER (WHERE j.status = 'succeeded') AS succeeded,
            pg_catalog.count(*) FILTER (WHERE j.status = 'failed') AS failed,
            pg_catalog.count(*) FILTER (WHERE j.status = 'dead_letter') AS dead_letter,
            pg_catalog.count(*) FILTER (WHERE j.status = 'cancelled') AS cancelled
        FROM jobq_all_jobs AS j
        GROUP BY j.queue, j.job_type
    ),

    labels AS MATERIALIZED (
        SELECT m.queue, m.job_type, m.label_queue, m.label_job_type
        FROM jobq__metric_labels(
            ARRAY(SELECT r.queue FROM raw AS r ORDER BY r.queue, r.job_type),
            ARRAY(SELECT r.job_type FROM raw AS r ORDER BY r.queue, r.job_type)
        ) AS m
    ),

    counts AS (
        SELECT
            l.label_queue AS queue, l.label_job_type AS job_type,
            pg_catalog.sum(r.pending)::bigint AS pending,
            pg_catalog.sum(r.processing)::bigint AS processing,
            pg_catalog.sum(r.succeeded)::bigint AS succeeded,
            pg_catalog.sum(r.failed)::bigint AS failed,
            pg_catalog.sum(r.dead_letter)::bigint AS dead_letter,
            pg_catalog.sum(r.cancelled)::bigint AS cancelled
        FROM raw AS r
        INNER JOIN labels AS l ON l.queue = r.queue AND l.job_type = r.job_type
        GROUP BY l.label_queue, l.label_job_type
    ),

    written AS (
        INSERT INTO jobq_metric_counters AS c (
            shard, queue, job_type, jobs_pending, jobs_processing, jobs_succeeded, jobs_failed,
            jobs_dead_letter, jobs_cancelled
        )
        SELECT
            0, n.queue, n.job_type, n.pending, n.processing, n.succeeded, n.failed,
            n.dead_letter, n.cancelled
        FROM counts AS n
        ORDER BY n.queue, n.job_type
        ON CONFLICT (queue, job_type, shard) DO UPDATE SET
            jobs_pending = excluded.jobs_pending,
            jobs_processing = excluded.jobs_processing,
            jobs_succeeded = excluded.jobs_succeeded,
            jobs_failed = excluded.jobs_failed,
            jobs_dead_letter = excluded.jobs_dead_letter,
            jobs_cancelled = excluded.jobs_cancelled
        RETURNING c.jobs_pending + c.jobs_processing + c.jobs_succeeded + c.jobs_failed
            + c.jobs_dead_letter + c.jobs_cancelled AS jobs
    )

    SELECT coalesce(pg_catalog.sum(w.jobs), 0)::bigint INTO v_jobs FROM written AS w;
    RETURN v_jobs;
END;
$$;

COMMENT ON FUNCTION public.jobq_metrics_recount() IS 'Admin only. Sets the gauge jobq_jobs of jobq_metrics() to the jobs present, counted once by
queue, job_type and status, for changes the jobq functions did not count (writes to jobq_jobs
by hand, changes made while metrics were off or by an older jobq during an upgrade).
Counters and histograms are left as they are. Reads the whole table.
Arguments: none.
Result: how many jobs were counted.
Errors: none.
Concurrency: LOCK TABLE jobq_jobs, jobq_jobs_history IN SHARE MODE: waits for the
transactions writing jobs at that moment, and blocks writers until the caller''s transaction ends; run it when the queue is
quiet, in a transaction of its own.';

CREATE FUNCTION public.jobq_names() RETURNS TABLE(kind text, name text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
    WITH RECURSIVE available AS (
        (
            SELECT
                pg_catalog.hashtextextended(j.job_type, 0) AS type_hash,
                pg_catalog.hashtextextended(j.queue, 0) AS queue_hash,
                j.job_type,
                j.queue
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
            ORDER BY 1, 2
            LIMIT 1
        )
        UNION ALL
        SELECT n.type_hash, n.queue_hash, n.job_type, n.queue
        FROM available AS a
        CROSS JOIN LATERAL (
            SELECT
                pg_catalog.hashtextextended(j.job_type, 0) AS type_hash,
                pg_catalog.hashtextextended(j.queue, 0) AS queue_hash,
                j.job_type,
                j.queue
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
              AND (pg_catalog.hashtextextended(j.job_type, 0),
                   pg_catalog.hashtextextended(j.queue, 0))
                  > (a.type_hash, a.queue_hash)
            ORDER BY 1, 2
            LIMIT 1
        ) AS n
    ),

    limited AS (
        (
            SELECT j.job_type, j.queue
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
            ORDER BY j.job_type, j.queue
            LIMIT 1
        )
        UNION ALL
        SELECT n.job_type, n.queue
        FROM limited AS l
        CROSS JOIN LATERAL (
            SELECT j.job_type, j.queue
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
              AND (j.job_type, j.queue) > (l.job_type, l.queue)
            ORDER BY j.job_type, j.queue
            LIMIT 1
        ) AS n
    ),

    later AS (
        (
            SELECT j.job_type, j.queue
            FROM jobq_jobs AS j
            WHERE j.status = 'waiting' OR (j.status = 'pending' AND j.scheduled)
            ORDER BY j.job_type, j.queue
            LIMIT 1
        )
        UNION ALL
        SELECT n.job_type, n.queue
        FROM later AS l
        CROSS JOIN LATERAL (
            SELECT j.job_type, j.queue
            FROM jobq_jobs AS j
            WHERE (j.status = 'waiting' OR (j.status = 'pending' AND j.scheduled))
              AND (j.job_type, j.queue) > (l.job_type, l.queue)
            ORDER BY j.job_type, j.queue
            LIMIT 1
        ) AS n
    ),

    finished AS (
        (
            SELECT h.job_type, h.queue
            FROM jobq_jobs_history AS h
            ORDER BY h.job_type, h.queue
            LIMIT 1
        )
        UNION ALL
        SELECT n.job_type, n.queue
        FROM finished AS f
        CROSS JOIN LATERAL (
            SELECT h.job_type, h.queue
            FROM jobq_jobs_history AS h
            WHERE (h.job_type, h.queue) > (f.job_type, f.queue)
            ORDER BY h.job_type, h.queue
            LIMIT 1
        ) AS n
    ),

    pairs AS (
        SELECT a.queue, a.job_type FROM available AS a
        UNION ALL
        SELECT l.queue, l.job_type FROM limited AS l
        UNION ALL
        SELECT j.queue, j.job_type FROM jobq_jobs AS j WHERE j.status = 'processing'
        UNION ALL
        SELECT l.queue, l.job_type FROM later AS l
        UNION ALL
        SELECT f.queue, f.job_type FROM finished AS f
        UNION ALL
        SELECT m.queue, m.job_type FROM jobq_metric_labels AS m
        UNION ALL
        SELECT s.queue, s.job_type FROM jobq_schedules AS s
        UNION ALL
        SELECT p.queue, NULL FROM jobq_paused_queues AS p
        UNION ALL
        SELECT q.queue, NULL FROM jobq_workers AS w, pg_catalog.unnest(w.queues) AS q (queue)
        UNION ALL
        SELECT NULL, t.job_type FROM jobq_workers AS w, pg_catalog.unnest(w.job_types) AS t (job_type)
    )

    SELECT DISTINCT x.kind, x.name
    FROM pairs AS p
    CROSS JOIN LATERAL (VALUES ('queue', p.queue), ('job_type', p.job_type)) AS x (kind, name)
    WHERE x.name IS NOT NULL
    ORDER BY x.kind DESC, x.name
$$;

COMMENT ON FUNCTION public.jobq_names() IS 'Admin and monitor. The queue names and job types that exist, for a search form''s choices:
those of every job, live or finished (available, waiting for its run_at, a retry or its
dependencies, running, succeeded, failed, dead_letter, cancelled), and the names in the label
sets metrics counts (when metrics are on), the schedules, the workers'' filters and the paused
queues. Each index of jobs is read one distinct name at a time (a skip scan), so the cost
follows the number of names (and of history partitions), not of jobs.
Arguments: none.
Result: rows (kind: queue or job_type, name), the queues first, each by name.
Errors: none.
Concurrency: a snapshot; it takes no lock.';

CREATE FUNCTION public.jobq_pause(queue text, reason text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_added integer;
BEGIN
    IF jobq__blank(jobq_pause.queue) THEN
        RAISE EXCEPTION 'jobq_pause: queue must be a non-blank string'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_pause.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_pause: queue is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_pause.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_pause.reason) > 1000 THEN
        RAISE EXCEPTION 'jobq_pause: reason is % characters long, at most 1000 are allowed',
            pg_catalog.length(jobq_pause.reason)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO jobq_paused_queues AS p (queue, paused_at, reason)
    VALUES (jobq_pause.queue, pg_catalog.now(), jobq_pause.reason)
    ON CONFLICT ON CONSTRAINT jobq_paused_queues_pkey DO NOTHING;
    GET DIAGNOSTICS v_added = ROW_COUNT;
    RETURN v_added > 0;
END;
$$;

COMMENT ON FUNCTION public.jobq_pause(queue text, reason text) IS 'Admin only. Pauses a queue: from the commit on, no jobq_dequeue claims its jobs (they stay
pending, spend no attempt and keep their order); jobs already running finish normally and
enqueues still succeed. Durable and shared by every worker, until jobq_resume.
Arguments: queue (non-blank, at most 200 characters; it need not have jobs yet), reason (why,
shown by jobq_queues; at most 1000 characters; NULL: none).
Result: true if it paused the queue, false if it was paused already (its pause, reason
included, is left as it was).
Errors: 22023 queue NULL, blank or longer than 200 characters, reason longer than 1000
characters; nothing changes then.
Concurrency: one row of jobq_paused_queues; a claim that started before the commit may still
take the queue''s jobs.';

CREATE FUNCTION public.jobq_prune(older_than interval DEFAULT '7 days'::interval, statuses text[] DEFAULT '{succeeded}'::text[], batch_size integer DEFAULT NULL::integer) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_bad text;
    v_hint text;
    v_before timestamptz;
    v_deleted bigint := 0::bigint;
    v_name text;
    v_lock_timeout text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF older_than IS NULL OR older_than < interval '0' THEN
        RAISE EXCEPTION 'jobq_prune: older_than must be an interval >= 0, got %',
            coalesce(older_than::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_hint := 'Finished statuses: '
        || pg_catalog.array_to_string(jobq__statuses(finished => TRUE), ', ') || '.';
    IF statuses IS NULL OR pg_catalog.cardinality(statuses) = 0 THEN
        RAISE EXCEPTION 'jobq_prune: statuses must name at least one finished status'
            USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
    END IF;
    IF pg_catalog.cardinality(statuses) > 100 THEN
        RAISE EXCEPTION 'jobq_prune: statuses has % elements, at most 100 are allowed',
            pg_catalog.cardinality(statuses)
            USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
    END IF;
    SELECT s INTO v_bad FROM pg_catalog.unnest(statuses) AS s
    WHERE s IS NULL OR s <> ALL (jobq__statuses(finished => TRUE))
    LIMIT 1;
    IF FOUND THEN
        IF v_bad = ANY (jobq__statuses(finished => FALSE)) THEN
            RAISE EXCEPTION 'jobq_prune: statuses may not include %: only finished jobs are pruned',
                pg_catalog.quote_literal(v_bad)
                USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
        END IF;
        RAISE EXCEPTION 'jobq_prune: statuses contains %, which is not a status',
            coalesce(pg_catalog.quote_literal(v_bad), 'NULL')
            USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
    END IF;

    IF batch_size IS NOT NULL AND batch_size < 1 THEN
        RAISE EXCEPTION 'jobq_prune: batch_size must be at least 1 or NULL (all at once), got %',
            batch_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    v_before := v_now - least(older_than, interval '1000 years');
    -- Whole partitions first, under a lock_timeout of their own: the caller's applies again to
    -- the rows (set back transaction-locally, to the value it had).
    v_lock_timeout := pg_catalog.current_setting('lock_timeout');
    PERFORM pg_catalog.set_config('lock_timeout', '100ms', TRUE);
    FOR v_name IN
        SELECT p.name
        FROM pg_catalog.unnest(jobq_prune.statuses) AS s (status)
        CROSS JOIN LATERAL jobq__history_partitions(s.status) AS p
        WHERE p.upper_at <= v_before
        ORDER BY p.lower_at
    LOOP
        CONTINUE WHEN NOT jobq__history_filled(v_name);
        BEGIN
            v_deleted := v_deleted + jobq__history_truncate(v_name, TRUE);
        EXCEPTION WHEN lock_not_available THEN
            NULL;  -- left to the DELETE below
        END;
    END LOOP;
    PERFORM pg_catalog.set_config('lock_timeout', v_lock_timeout, TRUE);
    -- The oldest first (by finished_at, whatever the status), batch_size of them or all; rows
    -- another transaction holds are skipped. The status and finished_at tests of the DELETE
    -- leave out the partitions that cannot hold such a job, and the ids are found in the
    -- others through jobq_jobs_history_id_idx.
    WITH doomed AS MATERIALIZED (
        SELECT h.id
        FROM jobq_jobs_history AS h
        WHERE h.status = ANY (jobq_prune.statuses)
          AND h.finished_at < v_before
        ORDER BY h.finished_at, h.id
        LIMIT jobq_prune.batch_size
        FOR UPDATE SKIP LOCKED
    ),

    pruned AS (
        DELETE FROM jobq_jobs_history AS h
        WHERE h.status = ANY (jobq_prune.statuses)
          AND h.finished_at < v_before
          AND h.id = ANY (ARRAY(SELECT d.id FROM doomed AS d))
        RETURNING h.id, h.queue, h.job_type, h.status
    ),

    -- The dependencies of the jobs deleted go with them (those of jobs in partitions emptied
    -- whole stay, and are read as gone: jobq_dependencies and jobq_job_graph join the jobs).
    unlinked AS (
        DELETE FROM jobq_job_dependencies AS e
        WHERE e.job_id = ANY (ARRAY(SELECT p.id FROM pruned AS p))
    ),

    counted AS MATERIALIZED (
        SELECT jobq__metrics_count(
            'pruned'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
            pg_catalog.array_agg(c.status), NULL::double precision[]
        ) AS n
        FROM pruned AS c
        HAVING pg_catalog.count(*) > 0
    )

    SELECT v_deleted + pg_catalog.count(*) INTO v_deleted
    FROM pruned AS p
    LEFT JOIN counted ON TRUE;
    -- Registrations of jobq_await whose job has ended or is gone: the ending statement deletes
    -- a job's rows, but not those registered after it read them. Rows another transaction
    -- holds are left for a later call.
    DELETE FROM jobq_awaits AS a
    WHERE a.ctid = ANY (ARRAY(
        SELECT w.ctid
        FROM jobq_awaits AS w
        WHERE NOT EXISTS (
            SELECT FROM jobq_jobs AS j WHERE j.id = w.job_id AND j.finished_at IS NULL
        )
        FOR UPDATE SKIP LOCKED
    ));
    -- A waiting job under rule wait whose dependency is gone (pruned here, or dropped with a
    -- partition by the retention) can never be released.
    PERFORM jobq__dependencies_gone();
    -- Regular maintenance: keeps jobq_metric_deltas short where nothing scrapes jobq_metrics().
    IF pg_catalog.current_setting('transaction_isolation') = 'read committed' THEN
        PERFORM jobq__metrics_fold();
    END IF;
    RETURN v_deleted;
END;
$$;

COMMENT ON FUNCTION public.jobq_prune(older_than interval, statuses text[], batch_size integer) IS 'Deletes finished jobs that finished long enough ago, the oldest first, all at once or in
batches (each call then a short transaction: loop until a call deletes fewer than batch_size).
A partition of the history that lies wholly in the range is emptied whole (TRUNCATE, constant
time; its jobs count in the result, whatever batch_size), unless its lock is not granted within
100 ms (then its jobs are deleted row by row).
Arguments: older_than (>= 0: jobs whose finished_at is older than this), statuses (finished
statuses only: succeeded, failed, dead_letter, cancelled; at most 100 names; default
succeeded), batch_size (at most that
many per call; NULL, the default: all of them in one statement).
Result: how many jobs were deleted.
Errors: 22023 for pending or processing in statuses (refused), an unknown status, an empty
list or one of more than 100 names, a NULL or negative older_than, a batch_size below 1.
Concurrency: rows locked by another transaction at that moment are skipped (SKIP LOCKED), not
waited for; a later call prunes them.';

CREATE FUNCTION public.jobq_queue_summary(recent interval DEFAULT '00:05:00'::interval) RETURNS TABLE(queue text, available bigint, scheduled bigint, processing bigint, failed bigint, dead_letter bigint, cancelled bigint, oldest_available_at timestamp with time zone, succeeded_recent bigint, paused boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.now();
BEGIN
    IF recent IS NULL OR recent < interval '0' OR recent > interval '1 day' THEN
        RAISE EXCEPTION 'jobq_queue_summary: recent must be between 0 and 1 day, got %',
            coalesce(recent::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    RETURN QUERY
    SELECT
        p.queue,
        pg_catalog.count(*) FILTER (WHERE p.status = 'pending' AND p.available_at <= v_now),
        pg_catalog.count(*) FILTER (WHERE p.status = 'pending' AND p.available_at > v_now),
        pg_catalog.count(*) FILTER (WHERE p.status = 'processing'),
        pg_catalog.count(*) FILTER (WHERE p.status = 'failed'),
        pg_catalog.count(*) FILTER (WHERE p.status = 'dead_letter'),
        pg_catalog.count(*) FILTER (WHERE p.status = 'cancelled'),
        pg_catalog.min(p.available_at) FILTER (WHERE p.status = 'pending'
                                               AND p.available_at <= v_now),
        pg_catalog.count(*) FILTER (WHERE p.status = 'succeeded'),
        EXISTS (SELECT FROM jobq_paused_queues AS pq
                WHERE pq.queue OPERATOR(pg_catalog.=) p.queue)
    FROM (
        -- One branch per partial index, each matching its predicate exactly.
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
        UNION ALL
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
        UNION ALL
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs AS j WHERE j.status = 'pending' AND j.scheduled
        UNION ALL
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs AS j WHERE j.status = 'processing'
        UNION ALL
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs_history AS j WHERE j.status IN ('failed', 'dead_letter', 'cancelled')
        UNION ALL
        SELECT j.queue, j.status, j.available_at
        FROM jobq_jobs_history AS j WHERE j.status = 'succeeded' AND j.finished_at >= v_now - recent
        UNION ALL
        -- Every paused queue has its row, jobs or not, so that the pause shows (and can be
        -- lifted) wherever the summary is shown; it counts as no job (status NULL).
        SELECT pq.queue, NULL, NULL
        FROM jobq_paused_queues AS pq
    ) AS p
    GROUP BY p.queue
    ORDER BY p.queue;
END;
$$;

COMMENT ON FUNCTION public.jobq_queue_summary(recent interval) IS 'Admin and monitor. Per queue: jobs available now, scheduled for later, processing, failed,
dead_letter and cancelled, the oldest available_at among the available ones, and the jobs that
succeeded within recent, and whether the queue is paused (jobq_pause). Reads only the partial indexes of those jobs (never the succeeded
jobs older than recent), so it stays cheap however many finished jobs are kept; it runs with
enable_seqscan = off and jit = off (for this function only) so that no statistics make it
read the table instead. A queue with none of these jobs and no pause has no row.
Arguments: recent (how far back succeeded jobs are counted, 0 to 1 day, default 5 minutes).
Result: rows (queue, available, scheduled, processing, failed, dead_letter, cancelled,
oldest_available_at, succeeded_recent, paused), by queue; every paused queue has a row, with
or without jobs.
Errors: 22023 a NULL or negative recent, or one over 1 day.
Concurrency: a snapshot, as any query; it takes no lock.';

CREATE FUNCTION public.jobq_queues() RETURNS TABLE(queue text, paused boolean, paused_at timestamp with time zone, reason text, pending bigint, processing bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
    SELECT
        coalesce(c.queue, p.queue),
        p.queue IS NOT NULL,
        p.paused_at,
        p.reason,
        coalesce(c.pending, 0),
        coalesce(c.processing, 0)
    FROM (
        SELECT
            j.queue,
            pg_catalog.count(*) FILTER (WHERE j.status = 'pending') AS pending,
            pg_catalog.count(*) FILTER (WHERE j.status = 'processing') AS processing
        FROM (
            SELECT j.queue, j.status
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
            UNION ALL
            SELECT j.queue, j.status
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
            UNION ALL
            SELECT j.queue, j.status
            FROM jobq_jobs AS j
            WHERE j.status = 'pending' AND j.scheduled
            UNION ALL
            SELECT j.queue, j.status
            FROM jobq_jobs AS j
            WHERE j.status = 'processing'
        ) AS j
        GROUP BY j.queue
    ) AS c
    FULL JOIN jobq_paused_queues AS p ON p.queue = c.queue
    ORDER BY 1
$$;

COMMENT ON FUNCTION public.jobq_queues() IS 'Admin only. Every queue that has pending or processing jobs or is paused (jobq_pause), one row
each, by name.
Arguments: none.
Result: queue, paused (true while jobq_pause holds it), paused_at and reason (NULL unless
paused), pending and processing (its jobs in those statuses; pending includes jobs scheduled
for later).
Errors: none.
Concurrency: reads only; counts every live job once.';

CREATE FUNCTION public.jobq_release(job_ids uuid[], worker_id text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
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

COMMENT ON FUNCTION public.jobq_release(job_ids uuid[], worker_id text) IS 'Gives back jobs that the worker claimed but never started (a worker shutting down with
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

CREATE FUNCTION public.jobq_release_orphans(worker_id text, job_ids uuid[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    v_released integer;
    v_queues text[];
    v_ended text[];
    v_error text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    v_error := jobq__worker_id_error(jobq_release_orphans.worker_id);
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_release_orphans: %', v_error
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'jobq_release_orphans: job_ids must be an array of the jobs the worker '
                        'holds, not NULL'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass ''{}'' when the worker holds no job.';
    END IF;

    WITH orphans AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.status = 'processing'
          AND j.locked_by = jobq_release_orphans.worker_id
          AND j.id <> ALL (jobq_release_orphans.job_ids)
        FOR UPDATE SKIP LOCKED
    ),

    released AS (
        UPDATE jobq_jobs AS j
        SET
            -- A job with a cancel request is not given back but cancelled (as jobq_release).
            status = CASE WHEN j.cancel_requested_at IS NULL THEN 'pending' ELSE 'cancelled' END,
            available_at = v_now,
            attempts = greatest(j.attempts - 1, 0),
            finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN v_now END,
            scheduled = FALSE,
            locked_at = NULL,
            locked_by = NULL,
            locked_until = NULL,
            updated_at = v_now
        WHERE j.id = ANY (ARRAY(SELECT o.id FROM orphans AS o))
        RETURNING j.id, j.queue, j.status, j.job_type
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
        pg_catalog.array_agg(DISTINCT r.queue) FILTER (WHERE r.status = 'pending'),
        pg_catalog.array_agg(r.id::text) FILTER (WHERE r.status = 'cancelled')
    INTO v_released, v_queues, v_ended
    FROM released AS r
    LEFT JOIN counted ON TRUE;
    PERFORM jobq__notify(v_queues);
    PERFORM jobq__notify_events('done'::text, jobq__awaits_end(v_ended::uuid[]));
    RETURN v_released;
END;
$$;

COMMENT ON FUNCTION public.jobq_release_orphans(worker_id text, job_ids uuid[]) IS 'Releases every job locked by worker_id except job_ids, the jobs the worker knows it holds:
for a worker that reconnects after a claim whose reply was lost (the claim committed, the
worker never saw its jobs), so that those jobs run again at once instead of after
lock_timeout. Released as jobq_release does: pending, available now, attempts - 1, claim
cleared, no error recorded; other workers are woken (NOTIFY on the installation''s channel).
A job with a cancel request (jobq_cancel) becomes cancelled instead and is never run again.
Arguments: worker_id (non-blank; must be unique per worker process), job_ids (every job the
worker still holds: claimed, running or not yet acknowledged; ''{}'' for none).
Result: how many jobs were released (cancelled ones included).
Runs with enable_seqscan = off and jit = off (for this function only; the caller keeps its own
settings): the processing jobs are read through jobq_jobs_locked_until_idx whatever the statistics
say.
Errors: 22023 worker_id NULL, blank or longer than 200 characters; NULL job_ids.
Concurrency: skips rows locked by another transaction (never waits). Call it only while no
claim of this worker is in flight: the jobs of a claim not yet returned would be released.';

CREATE FUNCTION public.jobq_requeue_dead_letter(job_id uuid) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_queue text;
    v_old_status text;
    v_job_type text;
BEGIN
    -- Back from jobq_jobs_history to jobq_jobs (jobq__requeue), with the status it leaves,
    -- for jobq_metrics' gauge.
    SELECT r.queue, r.job_type, r.old_status INTO v_queue, v_job_type, v_old_status
    FROM jobq__requeue(ARRAY[jobq_requeue_dead_letter.job_id]) AS r;
    IF v_queue IS NULL THEN
        RETURN false;
    END IF;
    PERFORM jobq__metrics_count(
        'requeued'::text, ARRAY[v_queue], ARRAY[v_job_type], ARRAY[v_old_status],
        NULL::double precision[]
    );
    PERFORM pg_catalog.pg_notify(jobq__channel(), v_queue);
    RETURN true;
END;
$$;

COMMENT ON FUNCTION public.jobq_requeue_dead_letter(job_id uuid) IS 'Makes a dead_letter, failed or cancelled job pending again: available now, attempts 0,
claim and cancel request cleared, error history (last_error, errors) kept; wakes a worker (a
NOTIFY on the installation''s channel).
Arguments: job_id (the job).
Result: true if it did; false for any other status or an unknown id (nothing changes then).
Errors: none.';

CREATE FUNCTION public.jobq_requeue_dead_letters(job_type text DEFAULT NULL::text, queue text DEFAULT NULL::text, include_cancelled boolean DEFAULT false, reason text DEFAULT NULL::text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
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

COMMENT ON FUNCTION public.jobq_requeue_dead_letters(job_type text, queue text, include_cancelled boolean, reason text) IS 'Admin only. Makes every dead_letter or failed job (and cancelled one, with
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

CREATE FUNCTION public.jobq_resume(queue text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_removed integer;
BEGIN
    IF jobq__blank(jobq_resume.queue) THEN
        RAISE EXCEPTION 'jobq_resume: queue must be a non-blank string'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_resume.queue) > 200 THEN
        RAISE EXCEPTION 'jobq_resume: queue is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_resume.queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM jobq_paused_queues AS p
    WHERE p.queue = jobq_resume.queue;
    GET DIAGNOSTICS v_removed = ROW_COUNT;
    IF v_removed = 0 THEN
        RETURN FALSE;
    END IF;
    PERFORM pg_catalog.pg_notify(jobq__channel(), jobq_resume.queue);
    RETURN TRUE;
END;
$$;

COMMENT ON FUNCTION public.jobq_resume(queue text) IS 'Admin only. Resumes a queue paused by jobq_pause: claims take its jobs again, and idle workers
are woken at once (a NOTIFY on the installation''s channel with the queue''s name, as an
enqueue sends, delivered at commit).
Arguments: queue (non-blank, at most 200 characters).
Result: true if the queue was paused, false if it was not (nothing changes then).
Errors: 22023 queue NULL, blank or longer than 200 characters.
Concurrency: deletes one row of jobq_paused_queues.';

CREATE FUNCTION public.jobq_schedule(name text, cron text, job_type text, payload jsonb DEFAULT '{}'::jsonb, timezone text DEFAULT 'UTC'::text, queue text DEFAULT 'default'::text, priority integer DEFAULT 0, max_attempts integer DEFAULT 5, catch_up text DEFAULT 'latest'::text, paused boolean DEFAULT false) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_error text;
    v_masks bigint[];
    v_next timestamptz;
    v_size integer;
    v_limit integer;
    v_zone_known boolean := FALSE;
    v_session_zone CONSTANT text := pg_catalog.current_setting('timezone');
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF jobq__blank(jobq_schedule.name) THEN
        RAISE EXCEPTION 'jobq_schedule: name must be a non-blank string'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_schedule.name) > 200 THEN
        RAISE EXCEPTION 'jobq_schedule: name is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_schedule.name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- cron is parsed again on every tick, and timezone looked up: both are short.
    IF pg_catalog.length(jobq_schedule.cron) > 1000 THEN
        RAISE EXCEPTION 'jobq_schedule: cron is % characters long, at most 1000 are allowed',
            pg_catalog.length(jobq_schedule.cron)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_schedule.timezone) > 100 THEN
        RAISE EXCEPTION 'jobq_schedule: timezone is % characters long, at most 100 are allowed',
            pg_catalog.length(jobq_schedule.timezone)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_schedule.catch_up) > 100 THEN
        RAISE EXCEPTION 'jobq_schedule: catch_up must be skip, latest or all, got a string of % '
            'characters', pg_catalog.length(jobq_schedule.catch_up)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_error := jobq__job_argument_problem(
        jobq_schedule.job_type, jobq_schedule.queue, NULL::text,
        jobq_schedule.max_attempts, jobq_schedule.priority
    );
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_schedule: %', v_error
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_schedule.payload IS NULL THEN
        RAISE EXCEPTION 'jobq_schedule: payload must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass ''{}'' for a job without arguments.';
    END IF;
    IF pg_catalog.jsonb_typeof(jobq_schedule.payload) <> 'object' THEN
        RAISE EXCEPTION 'jobq_schedule: payload must be a JSON object, got a JSON %',
            pg_catalog.jsonb_typeof(jobq_schedule.payload)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_size := pg_catalog.octet_length(jobq_schedule.payload::text);  -- as jobq_enqueue
    SELECT s.max_payload_bytes INTO v_limit FROM jobq_settings AS s;
    IF v_size > v_limit THEN
        RAISE EXCEPTION 'jobq_schedule: payload is % bytes, the limit is % bytes', v_size, v_limit
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    IF jobq_schedule.catch_up IS NULL
       OR jobq_schedule.catch_up NOT IN ('skip', 'latest', 'all') THEN
        RAISE EXCEPTION 'jobq_schedule: catch_up must be skip, latest or all, got %',
            coalesce(pg_catalog.quote_literal(jobq_schedule.catch_up), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_schedule.paused IS NULL THEN
        RAISE EXCEPTION 'jobq_schedule: paused must be true or false, got NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_schedule.timezone IS NOT NULL THEN
        BEGIN
            PERFORM pg_catalog.set_config('timezone', jobq_schedule.timezone, TRUE);
            v_zone_known := pg_catalog.current_setting('timezone')
                OPERATOR(pg_catalog.=) jobq_schedule.timezone;
        EXCEPTION WHEN invalid_parameter_value THEN
            v_zone_known := FALSE;
        END;
        -- A local setting would outlast the call: the function's SET clause undoes only its
        -- own (search_path) when it returns.
        PERFORM pg_catalog.set_config('timezone', v_session_zone, TRUE);
    END IF;
    IF v_zone_known AND jobq_schedule.timezone OPERATOR(pg_catalog.~) '[0-9]' THEN
        v_zone_known := EXISTS (
            SELECT FROM pg_catalog.pg_timezone_names AS z
            WHERE z.name OPERATOR(pg_catalog.=) jobq_schedule.timezone
        );
    END IF;
    IF NOT v_zone_known THEN
        RAISE EXCEPTION 'jobq_schedule: timezone % is not a known IANA time zone',
            coalesce(pg_catalog.quote_literal(jobq_schedule.timezone), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A name such as ''UTC'', ''Europe/London'' or ''America/New_York''.';
    END IF;
    v_masks := jobq__cron_parse(jobq_schedule.cron);
    v_next := jobq__cron_next(v_masks, jobq_schedule.timezone, v_now);
    IF v_next IS NULL THEN
        RAISE EXCEPTION 'jobq_schedule: cron % never fires (no match within ten years)',
            pg_catalog.quote_literal(jobq_schedule.cron)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    INSERT INTO jobq_schedules AS s (
        name, cron, timezone, job_type, payload, queue, priority, max_attempts, catch_up,
        paused, next_run_at
    )
    VALUES (
        jobq_schedule.name, jobq_schedule.cron, jobq_schedule.timezone, jobq_schedule.job_type,
        jobq_schedule.payload, jobq_schedule.queue, jobq_schedule.priority,
        jobq_schedule.max_attempts, jobq_schedule.catch_up, jobq_schedule.paused, v_next
    )
    ON CONFLICT (name) DO UPDATE SET
        cron = excluded.cron,
        timezone = excluded.timezone,
        job_type = excluded.job_type,
        payload = excluded.payload,
        queue = excluded.queue,
        priority = excluded.priority,
        max_attempts = excluded.max_attempts,
        catch_up = excluded.catch_up,
        paused = excluded.paused,
        next_run_at = CASE
            WHEN s.cron = excluded.cron AND s.timezone = excluded.timezone
                 AND NOT s.paused AND NOT excluded.paused
                THEN s.next_run_at
            ELSE excluded.next_run_at
        END,
        updated_at = v_now
    RETURNING s.next_run_at INTO v_next;
    RETURN v_next;
END;
$$;

COMMENT ON FUNCTION public.jobq_schedule(name text, cron text, job_type text, payload jsonb, timezone text, queue text, priority integer, max_attempts integer, catch_up text, paused boolean) IS 'Creates or replaces the schedule `name` and returns its next fire time.
Arguments: name (1-200 chars), cron (at most 1000 chars; five fields: minute hour
day-of-month month day-of-week, with *, lists, ranges, steps, month and weekday names; or
@hourly, @daily, @weekly, @monthly, @yearly), job_type, payload, queue, priority, max_attempts
(those of each job a fire enqueues, checked as jobq_enqueue does: job_type and queue 1-200
chars, payload at most max_payload_bytes bytes in its text form), timezone (IANA name, at most
100 chars; the cron fields are wall-clock times there: a time skipped by daylight saving fires
at the end of the gap, a repeated one once), catch_up
(skip, latest or all: what a tick does with fires nobody ticked in time), paused (fires nothing
while true).
Result: next_run_at. Replacing keeps it when cron and timezone are unchanged and the schedule
stays active; otherwise (and on resume) it is the next fire after now.
Errors: 22023 bad name/cron (naming the field)/timezone/catch_up/paused/job_type/queue/
priority/max_attempts, or a cron that never fires; 22004 NULL payload; 54000 payload too large.
Concurrency: waits for a tick that holds the schedule; a tick running meanwhile passes it over.';

CREATE FUNCTION public.jobq_schedule_run_now(name text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_row record;
    v_fire CONSTANT timestamptz := pg_catalog.date_trunc('second', pg_catalog.now());
    v_id uuid;
BEGIN
    IF jobq_schedule_run_now.name IS NULL THEN
        RAISE EXCEPTION 'jobq_schedule_run_now: name must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_schedule_run_now.name) > 200 THEN
        RAISE EXCEPTION 'jobq_schedule_run_now: name is % characters long, at most 200 are '
            'allowed', pg_catalog.length(jobq_schedule_run_now.name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The row lock orders this fire with a tick's (which skips the row meanwhile) and keeps
    -- last_fired_at from going back in time under two concurrent runs.
    SELECT s.job_type, s.payload, s.queue, s.priority, s.max_attempts, s.last_fired_at
    INTO v_row
    FROM jobq_schedules AS s
    WHERE s.name = jobq_schedule_run_now.name
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v_id := jobq__schedule_fire(
        jobq_schedule_run_now.name, v_row.job_type, v_row.payload, v_row.queue, v_row.priority,
        v_row.max_attempts, v_fire
    );
    UPDATE jobq_schedules AS s
    SET last_fired_at = v_fire, last_job_id = v_id
    WHERE s.name = jobq_schedule_run_now.name
      AND (s.last_fired_at IS NULL OR s.last_fired_at <= v_fire);
    RETURN v_id;
END;
$$;

COMMENT ON FUNCTION public.jobq_schedule_run_now(name text) IS 'Admin only. Fires a schedule now, as jobq_tick fires it: enqueues its job (job type,
payload, queue, priority, max_attempts of the schedule) available now, with the idempotency
key jobq:schedule:<name>:<now in UTC to the second, ISO 8601>, and records the fire as the
schedule''s last_fired_at and last_job_id. next_run_at is unchanged; a paused schedule runs
too.
Arguments: name (the schedule''s name, at most 200 characters).
Result: the job''s id (an existing job''s when a fire of this second was already enqueued);
NULL when there is no such schedule (nothing changes then).
Errors: 22023 NULL name, or one longer than 200 characters; those of jobq_enqueue (54000 a
payload over max_payload_bytes).
Concurrency: locks the schedule''s row (a tick skips it meanwhile); two runs within one second
enqueue one job.';

CREATE FUNCTION public.jobq_schedules() RETURNS TABLE(name text, cron text, timezone text, job_type text, payload jsonb, queue text, priority integer, max_attempts integer, catch_up text, paused boolean, next_run_at timestamp with time zone, next_run_local timestamp without time zone, created_at timestamp with time zone, updated_at timestamp with time zone, last_fired_at timestamp with time zone, last_job_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT s.name, s.cron, s.timezone, s.job_type, s.payload, s.queue, s.priority,
           s.max_attempts, s.catch_up, s.paused, s.next_run_at,
           s.next_run_at AT TIME ZONE s.timezone, s.created_at, s.updated_at,
           s.last_fired_at, s.last_job_id
    FROM jobq_schedules AS s
    ORDER BY s.name
$$;

COMMENT ON FUNCTION public.jobq_schedules() IS 'Lists every schedule. A paused schedule fires nothing: its next_run_at is recomputed when it
is resumed.
Arguments: none.
Result: one row per schedule, by name: its definition (name, cron, timezone, job_type,
payload, queue, priority, max_attempts, catch_up), paused, next_run_at (the next fire, an
instant), next_run_local (the same as wall-clock time in the schedule''s timezone),
created_at, updated_at, last_fired_at and last_job_id (the latest fire a tick enqueued and
the id of its job; NULL before the first fire).
Errors: none.
Concurrency: a snapshot, as any query; it takes no lock.';

CREATE FUNCTION public.jobq_set_limit(limit_group text, max_running integer DEFAULT NULL::integer, max_starts integer DEFAULT NULL::integer, per interval DEFAULT NULL::interval, share text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_error text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF jobq_set_limit.limit_group IS NULL THEN
        v_error := 'limit_group must be a non-blank string';
    ELSE
        v_error := jobq__limit_argument_problem(jobq_set_limit.limit_group, NULL::text);
    END IF;
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_set_limit: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_set_limit.share IS NOT NULL
       AND jobq_set_limit.share NOT IN ('fifo', 'round_robin', 'weighted') THEN
        RAISE EXCEPTION 'jobq_set_limit: share must be fifo, round_robin or weighted (or NULL: '
            'fifo), got %', jobq_set_limit.share
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_set_limit.max_running < 1 THEN
        RAISE EXCEPTION 'jobq_set_limit: max_running must be at least 1 (or NULL: no limit), got %',
            jobq_set_limit.max_running
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_set_limit.max_starts < 1 THEN
        RAISE EXCEPTION 'jobq_set_limit: max_starts must be at least 1 (or NULL: no limit), got %',
            jobq_set_limit.max_starts
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (jobq_set_limit.max_starts IS NULL) <> (jobq_set_limit.per IS NULL) THEN
        RAISE EXCEPTION 'jobq_set_limit: max_starts and per go together, got max_starts % and per %',
            coalesce(jobq_set_limit.max_starts::text, 'NULL'),
            coalesce(jobq_set_limit.per::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A rate limit is max_starts jobs per interval, such as 100 per ''1 minute''.';
    END IF;
    -- An interval of months or days has no fixed length (a month is 28 to 31 days, a day 23 to
    -- 25 hours across a daylight-saving change): the window must be exact.
    IF jobq_set_limit.per <= interval '0'
       OR pg_catalog.date_part('month', jobq_set_limit.per) <> 0::double precision
       OR pg_catalog.date_part('year', jobq_set_limit.per) <> 0::double precision
       OR pg_catalog.date_part('day', jobq_set_limit.per) <> 0::double precision
       OR jobq_set_limit.per > interval '10000 hours' THEN
        RAISE EXCEPTION 'jobq_set_limit: per must be a positive interval of hours, minutes and '
            'seconds, at most 10000 hours, got %', jobq_set_limit.per
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Write a day as ''24 hours''.';
    END IF;

    IF jobq_set_limit.max_running IS NULL AND jobq_set_limit.max_starts IS NULL
       AND coalesce(jobq_set_limit.share, 'fifo') = 'fifo' THEN
        DELETE FROM jobq_limits AS l WHERE l.limit_group = jobq_set_limit.limit_group;
        DELETE FROM jobq_limit_keys AS k WHERE k.limit_group = jobq_set_limit.limit_group;
        DELETE FROM jobq_limit_starts AS s WHERE s.limit_group = jobq_set_limit.limit_group;
    ELSE
        INSERT INTO jobq_limits AS l (
            limit_group, max_running, max_starts, per, share, updated_at
        )
        VALUES (
            jobq_set_limit.limit_group, jobq_set_limit.max_running, jobq_set_limit.max_starts,
            jobq_set_limit.per, coalesce(jobq_set_limit.share, 'fifo'), v_now
        )
        ON CONFLICT ON CONSTRAINT jobq_limits_pkey DO UPDATE
        SET max_running = excluded.max_running,
            max_starts = excluded.max_starts,
            per = excluded.per,
            share = excluded.share,
            updated_at = excluded.updated_at;
    END IF;
    PERFORM pg_catalog.pg_notify(jobq__channel(), '');
END;
$$;

COMMENT ON FUNCTION public.jobq_set_limit(limit_group text, max_running integer, max_starts integer, per interval, share text) IS 'Admin only. Sets the limits of a limit group; each (limit_group, limit_key) pair of its jobs
has them for itself. Claims never make more than max_running jobs of one pair processing at
once, and never start more than max_starts jobs of one pair within any window of length per
(a sliding window). Held-back jobs stay pending and spend no attempt. share orders the keys of
the group at equal priority: fifo (claim order), round_robin (keys in turn, one start each) or
weighted (starts in proportion to the keys'' weights, jobq_set_weight). Caps NULL and share
NULL or fifo removes the group (its bookkeeping and weights too): its jobs are claimed as
unlimited from the next claim on.
Arguments: limit_group (1-200 chars, not blank), max_running (NULL = no concurrency limit, else
at least 1), max_starts (NULL = no rate limit, else at least 1), per (the window of
max_starts: NULL exactly when max_starts is; hours, minutes and seconds, positive, at most
10000 hours), share (fifo, round_robin or weighted; NULL = fifo).
Result: none.
Errors: 22023 limit_group NULL, blank or longer than 200 characters, max_running or
max_starts < 1, max_starts without per or per without max_starts, per not positive, with
days, months or years, or over 10000 hours, share not one of fifo, round_robin, weighted.
Concurrency: the change applies to claims that start after it commits; a claim running
meanwhile uses the limits it read. Wakes idle workers (NOTIFY with an empty payload on the
installation''s channel, at commit).';

CREATE TABLE public.jobq_retention (
    status text NOT NULL,
    keep interval,
    partition_days integer NOT NULL,
    CONSTRAINT jobq_retention_keep_check CHECK ((keep > '00:00:00'::interval)),
    CONSTRAINT jobq_retention_partition_days_check CHECK (((partition_days >= 1) AND (partition_days <= 31))),
    CONSTRAINT jobq_retention_status_check CHECK ((status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'dead_letter'::text, 'cancelled'::text])))
);

COMMENT ON TABLE public.jobq_retention IS 'How long finished jobs are kept, per status: jobq_maintain_history (run by jobq_tick) drops
each partition of jobq_jobs_history whose every row finished more than keep ago. Changed only
through jobq_set_retention() (admin).';

COMMENT ON COLUMN public.jobq_retention.status IS 'A finished status.';

COMMENT ON COLUMN public.jobq_retention.keep IS 'How long jobs of this status are kept after finished_at; NULL: until jobq_prune deletes them
or they are requeued. A partition is dropped once its upper bound is older than keep, so a job
stays up to partition_days longer than keep.';

COMMENT ON COLUMN public.jobq_retention.partition_days IS 'The days of finished_at one partition of this status spans (1-31): the granularity of
retention. New partitions take it; existing ones keep their bounds.';

COMMENT ON CONSTRAINT jobq_retention_keep_check ON public.jobq_retention IS 'A retention is positive (NULL: kept until pruned).';

COMMENT ON CONSTRAINT jobq_retention_partition_days_check ON public.jobq_retention IS 'A partition spans 1 to 31 days.';

COMMENT ON CONSTRAINT jobq_retention_status_check ON public.jobq_retention IS 'Only finished statuses have a retention: live jobs are never in the history.';

CREATE FUNCTION public.jobq_set_retention(status text, keep interval DEFAULT NULL::interval, partition_days integer DEFAULT NULL::integer) RETURNS SETOF public.jobq_retention
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF jobq_set_retention.status IS NULL
        OR jobq_set_retention.status <> ALL (jobq__statuses(finished => TRUE))
    THEN
        RAISE EXCEPTION 'jobq_set_retention: status must be a finished status, got %',
            coalesce(pg_catalog.quote_literal(jobq_set_retention.status), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Finished statuses: '
                      || pg_catalog.array_to_string(jobq__statuses(finished => TRUE), ', ')
                      || '.';
    END IF;
    IF jobq_set_retention.keep <= interval '0' THEN
        RAISE EXCEPTION 'jobq_set_retention: keep must be a positive interval or NULL, got %',
            jobq_set_retention.keep
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_set_retention.partition_days NOT BETWEEN 1 AND 31 THEN
        RAISE EXCEPTION 'jobq_set_retention: partition_days must be 1 to 31, got %',
            jobq_set_retention.partition_days
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE jobq_retention AS r
    SET
        keep = jobq_set_retention.keep,
        partition_days = coalesce(jobq_set_retention.partition_days, r.partition_days)
    WHERE r.status = jobq_set_retention.status;
    RETURN QUERY
    SELECT r.* FROM jobq_retention AS r ORDER BY r.status;
END;
$$;

COMMENT ON FUNCTION public.jobq_set_retention(status text, keep interval, partition_days integer) IS 'Admin only. Sets how long finished jobs of one status are kept: jobq_maintain_history (run
by every jobq_tick) then drops each partition of that status whose jobs all finished more than
keep ago, so a job stays between keep and keep + partition_days.
Arguments: status (succeeded, failed, dead_letter or cancelled), keep (a positive interval;
NULL: kept until jobq_prune deletes them or they are requeued), partition_days (1-31: the days
a new partition of this status spans; NULL leaves it; existing partitions keep their bounds).
Result: the rows of jobq_retention (status, keep, partition_days), after the change.
Errors: 22023 for a status that is not a finished one, a keep that is not positive, a
partition_days outside 1-31; nothing changes then.
On a Citus distributed schema (each status''s history one table) jobq_maintain_history deletes
the jobs older than keep in batches instead, and partition_days is recorded but unused.
Concurrency: a row update of jobq_retention; takes no lock on jobs.';

CREATE FUNCTION public.jobq_set_weight(limit_group text, limit_key text, weight real DEFAULT 1) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_error text;
BEGIN
    IF jobq_set_weight.limit_group IS NULL THEN
        v_error := 'limit_group must be a non-blank string';
    ELSE
        v_error := jobq__limit_argument_problem(jobq_set_weight.limit_group,
                                                jobq_set_weight.limit_key);
    END IF;
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_set_weight: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- PostgreSQL sorts NaN above Infinity: the upper bound rejects both.
    IF jobq_set_weight.weight IS NULL
       OR NOT (jobq_set_weight.weight > 0::real AND jobq_set_weight.weight < 'Infinity'::real) THEN
        RAISE EXCEPTION 'jobq_set_weight: weight must be a positive finite number, got %',
            coalesce(jobq_set_weight.weight::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    INSERT INTO jobq_limit_keys AS k (limit_group, limit_key, weight)
    VALUES (
        jobq_set_weight.limit_group, coalesce(jobq_set_weight.limit_key, ''),
        jobq_set_weight.weight
    )
    ON CONFLICT ON CONSTRAINT jobq_limit_keys_pkey DO UPDATE
    SET weight = excluded.weight;
END;
$$;

COMMENT ON FUNCTION public.jobq_set_weight(limit_group text, limit_key text, weight real) IS 'Admin only. Sets the weight of one key of a limit group: under share weighted, the keys with
work get starts in proportion to their weights (a key without one weighs 1). Applies to claims
that start after it commits; removing the group''s limit (jobq_set_limit) removes its weights.
Arguments: limit_group (1-200 chars, not blank), limit_key (NULL: the group''s jobs without a
key; else 1-200 chars, not blank), weight (positive and finite; default 1).
Result: none.
Errors: 22023 limit_group NULL, blank or longer than 200 characters, limit_key blank or longer
than 200 characters, weight NULL, not positive, infinite or NaN.
Concurrency: writes the key''s row, which a claim of the key also writes: it waits for a claim
of the key under way to commit.';

CREATE FUNCTION public.jobq_stats() RETURNS TABLE(queue text, job_type text, status text, jobs bigint, oldest_available_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT
        j.queue, j.job_type, j.status, pg_catalog.count(*) AS jobs,
        pg_catalog.min(j.available_at)
    FROM jobq_all_jobs AS j
    GROUP BY j.queue, j.job_type, j.status
    ORDER BY j.queue, j.job_type, j.status
$$;

COMMENT ON FUNCTION public.jobq_stats() IS 'Counts jobs per (queue, job_type, status) present. Reads the whole table: for dashboards
and operators, not for a hot loop.
Arguments: none.
Result: rows (queue, job_type, status, jobs, oldest_available_at): how many jobs, and the
oldest available_at among them (for pending jobs: how long the oldest has been waiting).
Errors: none.';

CREATE FUNCTION public.jobq_throughput(since interval DEFAULT '01:00:00'::interval, bucket interval DEFAULT '00:01:00'::interval) RETURNS TABLE(bucket_start timestamp with time zone, succeeded bigint, failed bigint, dead_letter bigint, cancelled bigint, failed_attempts bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.now();
    v_step double precision;
    v_first timestamptz;
    v_last integer;
BEGIN
    IF since IS NULL OR since <= interval '0' OR since > interval '7 days' THEN
        RAISE EXCEPTION 'jobq_throughput: since must be more than 0 and at most 7 days, got %',
            coalesce(since::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF bucket IS NULL OR bucket < interval '1 second' OR bucket > interval '1 day' THEN
        RAISE EXCEPTION 'jobq_throughput: bucket must be between 1 second and 1 day, got %',
            coalesce(bucket::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_step := pg_catalog.date_part('epoch', bucket);
    IF pg_catalog.date_part('epoch', since) / v_step > 10080 THEN
        RAISE EXCEPTION 'jobq_throughput: since / bucket must be at most 10080 buckets, got % / %',
            since, bucket
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use a longer bucket for a longer window.';
    END IF;
    v_first := pg_catalog.to_timestamp(
        pg_catalog.floor(pg_catalog.date_part('epoch', v_now - since) / v_step) * v_step
    );
    v_last := pg_catalog.floor(pg_catalog.date_part('epoch', v_now - v_first) / v_step)::integer;

    RETURN QUERY
    WITH finished AS (
        SELECT h.status, h.finished_at, h.errors
        FROM jobq_jobs_history AS h
        WHERE h.finished_at >= v_first
    ),

    live AS (
        -- One branch per partial index of live jobs, each matching its predicate exactly.
        SELECT j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL
          AND j.updated_at >= v_first
        UNION ALL
        SELECT j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NOT NULL
          AND j.updated_at >= v_first
        UNION ALL
        SELECT j.errors FROM jobq_jobs AS j
        WHERE j.status = 'pending' AND j.scheduled AND j.updated_at >= v_first
        UNION ALL
        SELECT j.errors FROM jobq_jobs AS j
        WHERE j.status = 'processing'
    ),

    events AS (
        SELECT f.status AS kind, f.finished_at AS at FROM finished AS f
        UNION ALL
        SELECT 'attempt', (e.entry ->> 'at')::timestamptz
        FROM (SELECT f.errors FROM finished AS f UNION ALL SELECT l.errors FROM live AS l) AS x,
            pg_catalog.jsonb_array_elements(
                CASE WHEN pg_catalog.jsonb_typeof(x.errors) = 'array' THEN x.errors
                     ELSE '[]'::jsonb END
            ) AS e (entry)
        WHERE pg_catalog.jsonb_typeof(e.entry -> 'at') = 'string'
          AND NOT e.entry OPERATOR(pg_catalog.?) 'kind'
    ),

    counted AS (
        SELECT
            pg_catalog.floor(
                pg_catalog.date_part('epoch', ev.at - v_first) / v_step
            )::integer AS b,
            pg_catalog.count(*) FILTER (WHERE ev.kind = 'succeeded') AS succeeded,
            pg_catalog.count(*) FILTER (WHERE ev.kind = 'failed') AS failed,
            pg_catalog.count(*) FILTER (WHERE ev.kind = 'dead_letter') AS dead_letter,
            pg_catalog.count(*) FILTER (WHERE ev.kind = 'cancelled') AS cancelled,
            pg_catalog.count(*) FILTER (WHERE ev.kind = 'attempt') AS attempts
        FROM events AS ev
        WHERE ev.at >= v_first AND ev.at <= v_now
        GROUP BY 1
    )

    SELECT v_first + bucket * s.b, coalesce(c.succeeded, 0), coalesce(c.failed, 0),
           coalesce(c.dead_letter, 0), coalesce(c.cancelled, 0), coalesce(c.attempts, 0)
    FROM pg_catalog.generate_series(0, v_last) AS s (b)
    LEFT JOIN counted AS c ON c.b = s.b
    ORDER BY s.b;
END;
$$;

COMMENT ON FUNCTION public.jobq_throughput(since interval, bucket interval) IS 'Admin and monitor. What finished and what failed within the last `since`, per `bucket`: the
jobs that finished succeeded, failed, dead_letter and cancelled (by finished_at, from the
history of finished jobs) and the failed attempts (the entries of the jobs'' error histories,
by their time, of finished jobs and of live jobs that are retrying or running again; a takeover
of an expired lock is not counted; a job that failed more than 50 times within the window is
counted for its latest 50). Reads the finished jobs of the window through the finished_at
index (never the older ones) and the partial indexes of pending and processing jobs.
Arguments: since (more than 0, at most 7 days; default 1 hour), bucket (1 second to 1 day,
default 1 minute; at most 10080 buckets).
Result: one row per bucket, oldest first, zeros included: (bucket_start, succeeded, failed,
dead_letter, cancelled, failed_attempts). Buckets are aligned to multiples of bucket since the
Unix epoch; the first holds now() - since, the last holds now().
Errors: 22023 since or bucket out of range, or too many buckets.
Concurrency: a snapshot; it takes no lock.';

CREATE FUNCTION public.jobq_tick() RETURNS TABLE(schedule text, fire_at timestamp with time zone, job_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    RETURN QUERY
    SELECT t.schedule, t.fire_at, t.job_id FROM jobq__tick(pg_catalog.now()) AS t;
    -- Then the history's partitions: last, so that the locks its DDL may take are held for
    -- the shortest time (until the commit that follows); its report is left to a direct call.
    -- Then, unless a partition was dropped (its locks held until the commit, which a rebuild
    -- would make the completions wait longer for), at most one index rebuilt.
    IF NOT EXISTS (
        SELECT FROM jobq_maintain_history('100 milliseconds'::interval) AS m
        WHERE m.action = 'dropped'
    ) THEN
        PERFORM jobq_maintain_indexes('50 milliseconds'::interval, 4::real);
    END IF;
END;
$$;

COMMENT ON FUNCTION public.jobq_tick() IS 'Enqueues one job for each fire of each active schedule that is due by the database''s clock,
and advances its next_run_at, in the caller''s transaction. Each job has run_at = its fire
time and the idempotency key jobq:schedule:<name>:<fire time in UTC, ISO 8601, e.g.
2026-03-08T07:00:00Z>. Fires nobody ticked in time follow the schedule''s catch_up: skip
(none; a fire more than a minute old is missed), latest (the most recent), all (each, the
1,000 most recent at most). Then runs jobq_maintain_history() (partitions of the finished
jobs made ahead and dropped per jobq_retention, each step waiting at most 100 ms for its lock)
and, unless it dropped a partition, jobq_maintain_indexes() (the most bloated index of jobq_jobs
rebuilt, its lock waited for at most 50 ms).
Arguments: none.
Result: one row per fire enqueued: schedule, fire_at, job_id (the existing job when another
tick enqueued that fire already).
Errors: none of its own; a schedule whose enqueue fails is left due (its jobs and its advance
rolled back together) with a WARNING naming it, and the others still fire.
Concurrency: any number of sessions may tick at once; due schedules are locked FOR UPDATE SKIP
LOCKED and each fire is enqueued exactly once.';

CREATE FUNCTION public.jobq_unschedule(name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF jobq_unschedule.name IS NULL THEN
        RAISE EXCEPTION 'jobq_unschedule: name must not be NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(jobq_unschedule.name) > 200 THEN
        RAISE EXCEPTION 'jobq_unschedule: name is % characters long, at most 200 are allowed',
            pg_catalog.length(jobq_unschedule.name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM jobq_schedules AS s WHERE s.name = jobq_unschedule.name;
    RETURN FOUND;
END;
$$;

COMMENT ON FUNCTION public.jobq_unschedule(name text) IS 'Deletes a schedule. Jobs already enqueued by its fires are kept (they are jobs like any
other).
Arguments: name (the schedule''s name, at most 200 characters).
Result: whether it existed (false: nothing changed).
Errors: 22023 NULL name, or one longer than 200 characters.
Concurrency: waits for a tick that holds the schedule.';

CREATE FUNCTION public.jobq_unserved_job_types(idle interval DEFAULT '00:15:00'::interval) RETURNS TABLE(queue text, job_type text, jobs bigint, oldest_available_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
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

COMMENT ON FUNCTION public.jobq_unserved_job_types(idle interval) IS 'Admin. Names the pending jobs available now that no worker asked for recently, per (queue,
job_type). A worker asks through its claims: jobq_dequeue records its worker_id''s job_types
and queues filters in jobq_workers. Reads every available pending job (from the partial
indexes of pending jobs, never a finished one): for operators and worker start-up, not for a
hot loop.
Arguments: idle (how recently a worker must have claimed with filters that cover the job;
default 15 minutes; > 0).
Result: rows (queue, job_type, jobs, oldest_available_at): how many such jobs, and the oldest
available_at among them.
Errors: 22023 a NULL or non-positive idle.';

CREATE FUNCTION public.jobq_workers_summary() RETURNS TABLE(worker_id text, job_types text[], queues text[], first_claim_at timestamp with time zone, last_claim_at timestamp with time zone, jobs_held bigint, stale_jobs bigint, last_heartbeat_at timestamp with time zone, lock_expires_at timestamp with time zone, held_job_ids uuid[])
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
    WITH held AS (
        SELECT
            j.locked_by,
            pg_catalog.count(*) AS jobs_held,
            pg_catalog.count(*) FILTER (
                WHERE j.locked_until OPERATOR(pg_catalog.<) pg_catalog.now()
            ) AS stale_jobs,
            pg_catalog.max(j.locked_at) AS last_heartbeat_at,
            pg_catalog.min(j.locked_until) AS lock_expires_at,
            -- the 100 held longest since their last renewal: enough to act on, bounded in size
            (pg_catalog.array_agg(j.id ORDER BY j.locked_at, j.id))[1:100] AS held_job_ids
        FROM jobq_jobs AS j
        WHERE j.status = 'processing'
        GROUP BY j.locked_by
    )

    SELECT
        coalesce(w.worker_id, h.locked_by),
        w.job_types,
        w.queues,
        w.first_claim_at,
        w.last_claim_at,
        coalesce(h.jobs_held, 0),
        coalesce(h.stale_jobs, 0),
        h.last_heartbeat_at,
        h.lock_expires_at,
        coalesce(h.held_job_ids, '{}')
    FROM jobq_workers AS w
    FULL JOIN held AS h ON h.locked_by OPERATOR(pg_catalog.=) w.worker_id
    ORDER BY 1
$$;

COMMENT ON FUNCTION public.jobq_workers_summary() IS 'Admin and monitor. One row per worker: each worker_id that claimed within the last day or
holds a processing job now.
Arguments: none.
Result: worker_id, job_types and queues (the filters of its last claim; NULL: all, or unknown
for a worker that holds jobs but has no record), first_claim_at and last_claim_at (its claims,
recorded at most every 5 seconds; NULL without a record), jobs_held (processing jobs it holds),
stale_jobs (of those, the ones whose locked_until has passed: the next claim within their
filters takes them over), last_heartbeat_at (the latest claim or heartbeat of its jobs),
lock_expires_at (the earliest locked_until of its jobs), held_job_ids (up to 100 of its jobs,
least recently renewed first), by worker_id. No payload, result or error text.
Errors: none.
Concurrency: a snapshot, as any query; it takes no lock.';

CREATE TABLE public.jobq_jobs_history (
    id uuid NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text,
    status text NOT NULL,
    priority integer NOT NULL,
    attempts integer NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    scheduled boolean NOT NULL,
    result jsonb,
    cancel_requested_at timestamp with time zone,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamp with time zone,
    locked_until timestamp with time zone,
    waiting_on integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL
)
PARTITION BY LIST (status);

COMMENT ON TABLE public.jobq_jobs_history IS 'jobq finished jobs (succeeded, failed, dead_letter, cancelled), moved here from jobq_jobs by
the statement that finished them; the columns of jobq_jobs. Partitioned by status, then by
finished_at (partitions jobq__history_<status>_<YYYYMMDD>, made ahead and dropped by
jobq_maintain_history per jobq_retention). Change it only through the jobq_* functions.';

COMMENT ON COLUMN public.jobq_jobs_history.id IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.queue IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.job_type IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.payload IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.idempotency_key IS 'As in jobq_jobs: a key stays taken while its job is here (jobq_enqueue looks here too).';

COMMENT ON COLUMN public.jobq_jobs_history.status IS 'A finished status: the key of the first level of partitions.';

COMMENT ON COLUMN public.jobq_jobs_history.priority IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.attempts IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.max_attempts IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.available_at IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.locked_at IS 'As in jobq_jobs (NULL: finished jobs hold no claim).';

COMMENT ON COLUMN public.jobq_jobs_history.locked_by IS 'As in jobq_jobs (NULL: finished jobs hold no claim).';

COMMENT ON COLUMN public.jobq_jobs_history.last_error IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.errors IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.created_at IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.updated_at IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.finished_at IS 'When the job finished: the key of the second level of partitions, which retention drops.';

COMMENT ON COLUMN public.jobq_jobs_history.scheduled IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.result IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.cancel_requested_at IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.cancel_reason IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.limit_group IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.limit_key IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.claimed_at IS 'As in jobq_jobs.';

COMMENT ON COLUMN public.jobq_jobs_history.locked_until IS 'As in jobq_jobs (NULL: finished jobs hold no claim).';

COMMENT ON COLUMN public.jobq_jobs_history.waiting_on IS 'As in jobq_jobs (0: a finished job waits for nothing).';

COMMENT ON COLUMN public.jobq_jobs_history.has_dependents IS 'As in jobq_jobs (FALSE here: jobq__requeue marks a requeued job that has dependents again).';

CREATE TABLE public.jobq__history_cancelled (
    id uuid NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text,
    status text NOT NULL,
    priority integer NOT NULL,
    attempts integer NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    scheduled boolean NOT NULL,
    result jsonb,
    cancel_requested_at timestamp with time zone,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamp with time zone,
    locked_until timestamp with time zone,
    waiting_on integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL
)
PARTITION BY RANGE (finished_at);

CREATE TABLE public.jobq__history_cancelled_default (
    id uuid NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text,
    status text NOT NULL,
    priority integer NOT NULL,
    attempts integer NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    scheduled boolean NOT NULL,
    result jsonb,
    cancel_requested_at timestamp with time zone,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamp with time zone,
    locked_until timestamp with time zone,
    waiting_on integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL
);

CREATE TABLE public.jobq__history_dead_letter (
    id uuid NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text,
    status text NOT NULL,
    priority integer NOT NULL,
    attempts integer NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    scheduled boolean NOT NULL,
    result jsonb,
    cancel_requested_at timestamp with time zone,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamp with time zone,
    locked_until timestamp with time zone,
    waiting_on integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL
)
PARTITION BY RANGE (finished_at);

CREATE TABLE public.jobq__history_dead_letter_default (
    id uuid NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text,
    status text NOT NULL,
    priority integer NOT NULL,
    attempts integer NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    scheduled boolean NOT NULL,
    result jsonb,
    cancel_requested_at timestamp with time zone,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamp with time zone,
    locked_until timestamp with time zone,
    waiting_on integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL
);

CREATE TABLE public.jobq__history_failed (
    id uuid NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text,
    status text NOT NULL,
    priority integer NOT NULL,
    attempts integer NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    scheduled boolean NOT NULL,
    result jsonb,
    cancel_requested_at timestamp with time zone,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamp with time zone,
    locked_until timestamp with time zone,
    waiting_on integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL
)
PARTITION BY RANGE (finished_at);

CREATE TABLE public.jobq__history_failed_default (
    id uuid NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text,
    status text NOT NULL,
    priority integer NOT NULL,
    attempts integer NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    scheduled boolean NOT NULL,
    result jsonb,
    cancel_requested_at timestamp with time zone,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamp with time zone,
    locked_until timestamp with time zone,
    waiting_on integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL
);

CREATE TABLE public.jobq__history_succeeded (
    id uuid NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text,
    status text NOT NULL,
    priority integer NOT NULL,
    attempts integer NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    scheduled boolean NOT NULL,
    result jsonb,
    cancel_requested_at timestamp with time zone,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamp with time zone,
    locked_until timestamp with time zone,
    waiting_on integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL
)
PARTITION BY RANGE (finished_at);

CREATE TABLE public.jobq__history_succeeded_default (
    id uuid NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text,
    status text NOT NULL,
    priority integer NOT NULL,
    attempts integer NOT NULL,
    max_attempts integer NOT NULL,
    available_at timestamp with time zone NOT NULL,
    locked_at timestamp with time zone,
    locked_by text,
    last_error text,
    errors jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    scheduled boolean NOT NULL,
    result jsonb,
    cancel_requested_at timestamp with time zone,
    cancel_reason text,
    limit_group text,
    limit_key text,
    claimed_at timestamp with time zone,
    locked_until timestamp with time zone,
    waiting_on integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL
);

CREATE TABLE public.jobq__migrate_lock (
    singleton boolean DEFAULT true NOT NULL,
    key bigint NOT NULL,
    CONSTRAINT jobq__migrate_lock_singleton CHECK (singleton)
);

COMMENT ON TABLE public.jobq__migrate_lock IS 'Private. The key of the advisory lock that jobq migrate holds while it runs: random, readable only by jobq''s owner, so that no other role can take the lock and hold deploys up.';

COMMENT ON COLUMN public.jobq__migrate_lock.singleton IS 'Always true: the table has one row.';

COMMENT ON COLUMN public.jobq__migrate_lock.key IS 'The advisory lock''s key, drawn at random when the table was made.';

COMMENT ON CONSTRAINT jobq__migrate_lock_singleton ON public.jobq__migrate_lock IS 'One row.';

CREATE VIEW public.jobq_all_jobs AS
 SELECT j.id,
    j.queue,
    j.job_type,
    j.payload,
    j.idempotency_key,
    j.status,
    j.priority,
    j.attempts,
    j.max_attempts,
    j.available_at,
    j.locked_at,
    j.locked_by,
    j.last_error,
    j.errors,
    j.created_at,
    j.updated_at,
    j.finished_at,
    j.scheduled,
    j.result,
    j.cancel_requested_at,
    j.cancel_reason,
    j.limit_group,
    j.limit_key,
    j.claimed_at,
    j.locked_until,
    j.waiting_on,
    j.has_dependents
   FROM public.jobq_jobs j
UNION ALL
 SELECT h.id,
    h.queue,
    h.job_type,
    h.payload,
    h.idempotency_key,
    h.status,
    h.priority,
    h.attempts,
    h.max_attempts,
    h.available_at,
    h.locked_at,
    h.locked_by,
    h.last_error,
    h.errors,
    h.created_at,
    h.updated_at,
    h.finished_at,
    h.scheduled,
    h.result,
    h.cancel_requested_at,
    h.cancel_reason,
    h.limit_group,
    h.limit_key,
    h.claimed_at,
    h.locked_until,
    h.waiting_on,
    h.has_dependents
   FROM public.jobq_jobs_history h;

COMMENT ON VIEW public.jobq_all_jobs IS 'Every job, live (jobq_jobs) or finished (jobq_jobs_history), with the columns of jobq_jobs.
A job is in exactly one of the two at any snapshot: a row moves by a DELETE and an INSERT in
one transaction. A filter on status reaches only the table (and partitions) that can hold it.';

ALTER TABLE public.jobq_audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.jobq_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.jobq_awaits (
    job_id uuid NOT NULL,
    awaited_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE public.jobq_awaits IS 'Jobs whose end a client waits to be told of (jobq_await with timeout 0, as Queue.wait calls
it): the statement that ends such a job (completion, failure, cancel, release, takeover)
deletes its rows and sends a NOTIFY on the done channel. Registering takes no lock on the
job: no unique index, no foreign key. Empty unless someone waits; jobq_prune removes the rows
of jobs that ended or are gone.';

COMMENT ON COLUMN public.jobq_awaits.job_id IS 'The awaited job (not a foreign key: its check would lock the job''s row). Two clients waiting
for one job may give it two rows.';

COMMENT ON COLUMN public.jobq_awaits.awaited_at IS 'When jobq_await registered the interest.';

CREATE TABLE public.jobq_cancel_requests (
    job_id uuid NOT NULL,
    reason text,
    requested_at timestamp with time zone NOT NULL
);

COMMENT ON TABLE public.jobq_cancel_requests IS 'Cancel requests for processing jobs, staged by jobq_cancel() in the caller''s transaction and
applied to jobq_jobs (cancel_requested_at, cancel_reason) by the deferred trigger
jobq_cancel_requests_apply while that transaction commits, which deletes them: the table is
empty outside an open jobq_cancel() transaction. No key: two transactions that cancel the same
job never wait for each other here.';

COMMENT ON COLUMN public.jobq_cancel_requests.job_id IS 'The processing job to ask to stop.';

COMMENT ON COLUMN public.jobq_cancel_requests.reason IS 'The reason given to jobq_cancel(), cut to 10,000 characters; NULL: none.';

COMMENT ON COLUMN public.jobq_cancel_requests.requested_at IS 'When jobq_cancel() was called (the transaction''s time): becomes the job''s cancel_requested_at.';

CREATE TABLE public.jobq_index_rebuilds (
    index_name text NOT NULL,
    rebuilt_at timestamp with time zone NOT NULL,
    bytes_before bigint NOT NULL,
    bytes_after bigint NOT NULL,
    took interval NOT NULL
);

COMMENT ON TABLE public.jobq_index_rebuilds IS 'jobq: the latest rebuild of each index of jobq_jobs by jobq_maintain_indexes (one row per
index, replaced by its next rebuild). Read by jobq_maintain_indexes, which rebuilds an index at
most once per 2 minutes; kept for operators.';

COMMENT ON COLUMN public.jobq_index_rebuilds.index_name IS 'The index of jobq_jobs, by name.';

COMMENT ON COLUMN public.jobq_index_rebuilds.rebuilt_at IS 'When its latest rebuild began.';

COMMENT ON COLUMN public.jobq_index_rebuilds.bytes_before IS 'Its size before that rebuild, in bytes.';

COMMENT ON COLUMN public.jobq_index_rebuilds.bytes_after IS 'Its size after that rebuild, in bytes.';

COMMENT ON COLUMN public.jobq_index_rebuilds.took IS 'How long that rebuild held the writers of jobq_jobs (the REINDEX alone, not the wait for its
lock).';

CREATE TABLE public.jobq_job_dependencies (
    job_id uuid NOT NULL,
    depends_on uuid NOT NULL,
    on_failure text DEFAULT 'cancel'::text NOT NULL,
    CONSTRAINT jobq_job_dependencies_on_failure_check CHECK ((on_failure = ANY (ARRAY['cancel'::text, 'run'::text, 'wait'::text]))),
    CONSTRAINT jobq_job_dependencies_self_check CHECK ((job_id <> depends_on))
);

COMMENT ON TABLE public.jobq_job_dependencies IS 'The dependencies between jobs, one row per edge: job_id runs only after depends_on (its
parent). Written by jobq_enqueue, jobq_enqueue_many and jobq_add_dependencies; read when a
parent finishes (through jobq_job_dependencies_depends_on_idx), by jobq_dependencies and by
jobq_job_graph. No foreign keys: a job moves between jobq_jobs and its history.';

COMMENT ON COLUMN public.jobq_job_dependencies.job_id IS 'The dependent job.';

COMMENT ON COLUMN public.jobq_job_dependencies.depends_on IS 'The job it waits for.';

COMMENT ON COLUMN public.jobq_job_dependencies.on_failure IS 'The dependent''s on_dependency_failure: cancel (it is cancelled when this parent ends failed,
dead_letter or cancelled), run (it runs once every parent has finished, whatever the outcome)
or wait (it keeps waiting until this parent, requeued, succeeds).';

COMMENT ON CONSTRAINT jobq_job_dependencies_on_failure_check ON public.jobq_job_dependencies IS 'The three rules of on_dependency_failure.';

COMMENT ON CONSTRAINT jobq_job_dependencies_self_check ON public.jobq_job_dependencies IS 'A job never waits for itself (the functions refuse any cycle before it is written).';

CREATE TABLE public.jobq_limit_keys (
    limit_group text NOT NULL,
    limit_key text NOT NULL,
    started bigint DEFAULT 0 NOT NULL,
    last_start_at timestamp with time zone,
    weight real DEFAULT 1 NOT NULL,
    pass double precision,
    CONSTRAINT jobq_limit_keys_weight_positive CHECK (((weight > (0)::double precision) AND (weight < 'Infinity'::real)))
);

COMMENT ON TABLE public.jobq_limit_keys IS 'jobq: one row per (limit_group, limit_key) of a limited group that has started a job or has a
weight, written by the claim under the key''s lock with every start (and by jobq_set_weight).
The write is what makes a claim in a REPEATABLE READ or SERIALIZABLE transaction fail (40001)
rather than miss a start that a concurrent claim committed after its snapshot. jobq_set_limit
deletes a group''s rows when it removes the limit.';

COMMENT ON COLUMN public.jobq_limit_keys.limit_group IS 'The group.';

COMMENT ON COLUMN public.jobq_limit_keys.limit_key IS 'The key within the group; the empty string stands for a NULL limit_key (an empty one cannot
be enqueued).';

COMMENT ON COLUMN public.jobq_limit_keys.started IS 'Jobs of this key started while the group was limited.';

COMMENT ON COLUMN public.jobq_limit_keys.last_start_at IS 'When the key last started jobs (the clock of the claim that held the key''s lock; never
earlier than the start before it).';

COMMENT ON COLUMN public.jobq_limit_keys.weight IS 'The key''s weight in a weighted group (jobq_set_weight; 1 by default): its share of the starts
is its weight over the weights of the keys with work.';

COMMENT ON COLUMN public.jobq_limit_keys.pass IS 'In a group that shares: the virtual time of the key''s next start. Each start adds 1 / weight
(1 under round_robin); a claim takes the keys of lowest pass first, and a key that comes back
from idle starts one turn before the lowest pass of the keys with work. NULL: no start counted
yet.';

COMMENT ON CONSTRAINT jobq_limit_keys_weight_positive ON public.jobq_limit_keys IS 'A weight is positive and finite.';

CREATE TABLE public.jobq_limit_starts (
    limit_group text NOT NULL,
    limit_key text NOT NULL,
    total bigint NOT NULL,
    started integer NOT NULL,
    started_at timestamp with time zone NOT NULL
);

COMMENT ON TABLE public.jobq_limit_starts IS 'jobq: the sliding window of each rate-limited key: one row per claim that started jobs of the
key, with the running total of the key''s recorded starts. The starts within the window ending
now are the latest total minus the total of the last row older than the window, found with
one probe of jobq_limit_starts_at_idx; rows older than that one are deleted by the claims.';

COMMENT ON COLUMN public.jobq_limit_starts.limit_group IS 'The group.';

COMMENT ON COLUMN public.jobq_limit_starts.limit_key IS 'The key within the group (the empty string for a NULL limit_key).';

COMMENT ON COLUMN public.jobq_limit_starts.total IS 'Starts recorded for the key, this claim''s included.';

COMMENT ON COLUMN public.jobq_limit_starts.started IS 'Jobs of the key this claim started.';

COMMENT ON COLUMN public.jobq_limit_starts.started_at IS 'When (the clock under the key''s lock, never earlier than the row before).';

CREATE TABLE public.jobq_limits (
    limit_group text NOT NULL,
    max_running integer,
    max_starts integer,
    per interval,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    share text DEFAULT 'fifo'::text NOT NULL,
    turn_key text,
    CONSTRAINT jobq_limits_max_running_positive CHECK ((max_running >= 1)),
    CONSTRAINT jobq_limits_rate_complete CHECK ((((max_starts IS NULL) AND (per IS NULL)) OR ((max_starts IS NOT NULL) AND (per IS NOT NULL) AND (max_starts >= 1) AND (per > '00:00:00'::interval)))),
    CONSTRAINT jobq_limits_share_known CHECK ((share = ANY (ARRAY['fifo'::text, 'round_robin'::text, 'weighted'::text]))),
    CONSTRAINT jobq_limits_some_limit CHECK (((max_running IS NOT NULL) OR (max_starts IS NOT NULL) OR (share <> 'fifo'::text)))
);

COMMENT ON TABLE public.jobq_limits IS 'jobq: the limit of each limited group, one row per limit_group, written by jobq_set_limit. A
group without a row is unlimited. Each (limit_group, limit_key) pair has these limits for
itself.';

COMMENT ON COLUMN public.jobq_limits.limit_group IS 'The group, as jobs name it in limit_group.';

COMMENT ON COLUMN public.jobq_limits.max_running IS 'At most this many jobs of one key processing at once; NULL: no such limit.';

COMMENT ON COLUMN public.jobq_limits.max_starts IS 'At most this many jobs of one key started (claimed) within any window of length per; NULL:
no rate limit.';

COMMENT ON COLUMN public.jobq_limits.per IS 'The window of max_starts; NULL exactly when max_starts is.';

COMMENT ON COLUMN public.jobq_limits.updated_at IS 'When jobq_set_limit last set this limit.';

COMMENT ON COLUMN public.jobq_limits.share IS 'How claims share the group among its keys at equal priority: fifo (claim order), round_robin
(one start per key in turn) or weighted (starts in proportion to the keys'' weights).';

COMMENT ON COLUMN public.jobq_limits.turn_key IS 'In a round_robin group without caps: the key that the last claim of the group started last
(the empty string for a NULL limit_key). The next claim starts with the key below it, in
descending key order, and wraps round to the last key. NULL (the group''s first claim): from
the lowest key, then from the last key down.';

COMMENT ON CONSTRAINT jobq_limits_max_running_positive ON public.jobq_limits IS 'max_running is at least 1 (a group that must not run is paused another way).';

COMMENT ON CONSTRAINT jobq_limits_rate_complete ON public.jobq_limits IS 'A rate limit has both max_starts (at least 1) and per (positive), or neither.';

COMMENT ON CONSTRAINT jobq_limits_share_known ON public.jobq_limits IS 'share is fifo, round_robin or weighted.';

COMMENT ON CONSTRAINT jobq_limits_some_limit ON public.jobq_limits IS 'A row sets a cap or a share other than fifo: removing them all removes the row.';

CREATE TABLE public.jobq_metric_counters (
    shard integer NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    enqueued bigint DEFAULT 0 NOT NULL,
    started bigint DEFAULT 0 NOT NULL,
    succeeded bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    dead_lettered bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    lock_expired bigint DEFAULT 0 NOT NULL,
    released bigint DEFAULT 0 NOT NULL,
    requeued bigint DEFAULT 0 NOT NULL,
    jobs_pending bigint DEFAULT 0 NOT NULL,
    jobs_processing bigint DEFAULT 0 NOT NULL,
    jobs_succeeded bigint DEFAULT 0 NOT NULL,
    jobs_failed bigint DEFAULT 0 NOT NULL,
    jobs_dead_letter bigint DEFAULT 0 NOT NULL,
    jobs_cancelled bigint DEFAULT 0 NOT NULL,
    wait_buckets bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    wait_sum double precision DEFAULT 0 NOT NULL,
    run_buckets bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    run_sum double precision DEFAULT 0 NOT NULL
)
WITH (fillfactor='50');

COMMENT ON TABLE public.jobq_metric_counters IS 'jobq: the numbers behind jobq_metrics(), per (queue, job_type), one row per backend that
wrote them (shard: its pid; 0: folded rows of backends that have exited). Written by the jobq
functions in the transaction of the change they count (jobq__metrics_count), so a rollback
counts nothing; jobq_prune lowers the gauge, never a counter. Sum over shards (and the rows of
jobq_metric_deltas) to read. fillfactor 50:
room on the page for the updates of a busy row to stay HOT.';

COMMENT ON COLUMN public.jobq_metric_counters.shard IS 'The pid of the backend that writes this row (so no two sessions ever wait for one another
here); 0 for the sums that jobq_metrics() folded in from backends that have exited.';

COMMENT ON COLUMN public.jobq_metric_counters.queue IS 'The jobs'' queue.';

COMMENT ON COLUMN public.jobq_metric_counters.job_type IS 'The jobs'' job_type.';

COMMENT ON COLUMN public.jobq_metric_counters.enqueued IS 'Jobs added (jobq_enqueue, jobq_enqueue_many, schedules); an existing idempotency key adds none.';

COMMENT ON COLUMN public.jobq_metric_counters.started IS 'Claims of pending jobs (jobq_dequeue).';

COMMENT ON COLUMN public.jobq_metric_counters.succeeded IS 'Completions (jobq_complete, jobq_complete_many).';

COMMENT ON COLUMN public.jobq_metric_counters.failed IS 'Failed attempts reported by jobq_fail or jobq_fail_many, whatever the job''s next status.';

COMMENT ON COLUMN public.jobq_metric_counters.dead_lettered IS 'Jobs that went to dead_letter (a last failed attempt, or a takeover with no attempts left).';

COMMENT ON COLUMN public.jobq_metric_counters.cancelled IS 'Jobs that went to cancelled (jobq_cancel of a pending job; a failure, release or takeover of
a job with a cancel request).';

COMMENT ON COLUMN public.jobq_metric_counters.lock_expired IS 'Claims taken back by jobq_dequeue because their lock was older than lock_timeout.';

COMMENT ON COLUMN public.jobq_metric_counters.released IS 'Claims given back unstarted (jobq_release, jobq_release_orphans).';

COMMENT ON COLUMN public.jobq_metric_counters.requeued IS 'Finished jobs made pending again (jobq_requeue_dead_letter, jobq_requeue_dead_letters).';

COMMENT ON COLUMN public.jobq_metric_counters.jobs_pending IS 'Change in the number of pending jobs (the gauge jobq_jobs is the sum over shards).';

COMMENT ON COLUMN public.jobq_metric_counters.jobs_processing IS 'Change in the number of processing jobs (summed over shards).';

COMMENT ON COLUMN public.jobq_metric_counters.jobs_succeeded IS 'Change in the number of succeeded jobs (summed over shards; jobq_prune subtracts).';

COMMENT ON COLUMN public.jobq_metric_counters.jobs_failed IS 'Change in the number of failed jobs (summed over shards).';

COMMENT ON COLUMN public.jobq_metric_counters.jobs_dead_letter IS 'Change in the number of dead_letter jobs (summed over shards).';

COMMENT ON COLUMN public.jobq_metric_counters.jobs_cancelled IS 'Change in the number of cancelled jobs (summed over shards).';

COMMENT ON COLUMN public.jobq_metric_counters.wait_buckets IS 'jobq_wait_seconds: claims per bucket of jobq__metric_bounds() (not cumulative; the last
element is above the highest bound); empty until the first observation.';

COMMENT ON COLUMN public.jobq_metric_counters.wait_sum IS 'jobq_wait_seconds: the sum of the observed waits (available_at to claim), in seconds.';

COMMENT ON COLUMN public.jobq_metric_counters.run_buckets IS 'jobq_run_seconds: finished attempts per bucket of jobq__metric_bounds() (not cumulative).';

COMMENT ON COLUMN public.jobq_metric_counters.run_sum IS 'jobq_run_seconds: the sum of the observed run times (claim to completion or failure).';

CREATE TABLE public.jobq_metric_deltas (
    shard integer NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    enqueued bigint DEFAULT 0 NOT NULL,
    started bigint DEFAULT 0 NOT NULL,
    succeeded bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    dead_lettered bigint DEFAULT 0 NOT NULL,
    cancelled bigint DEFAULT 0 NOT NULL,
    lock_expired bigint DEFAULT 0 NOT NULL,
    released bigint DEFAULT 0 NOT NULL,
    requeued bigint DEFAULT 0 NOT NULL,
    jobs_pending bigint DEFAULT 0 NOT NULL,
    jobs_processing bigint DEFAULT 0 NOT NULL,
    jobs_succeeded bigint DEFAULT 0 NOT NULL,
    jobs_failed bigint DEFAULT 0 NOT NULL,
    jobs_dead_letter bigint DEFAULT 0 NOT NULL,
    jobs_cancelled bigint DEFAULT 0 NOT NULL,
    wait_buckets bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    wait_sum double precision DEFAULT 0 NOT NULL,
    run_buckets bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    run_sum double precision DEFAULT 0 NOT NULL
);

COMMENT ON TABLE public.jobq_metric_deltas IS 'jobq: counts of jobq_metric_counters written by the second and later counted statements of a
transaction (one row per statement and (queue, job_type), appended: no index, no update), so
that a transaction that enqueues jobs one by one costs the same per job whatever its length.
jobq_metrics() and jobq_prune() fold the rows into jobq_metric_counters (shard 0).';

COMMENT ON COLUMN public.jobq_metric_deltas.shard IS 'The pid of the backend that wrote the row.';

COMMENT ON COLUMN public.jobq_metric_deltas.queue IS 'The jobs'' queue.';

COMMENT ON COLUMN public.jobq_metric_deltas.job_type IS 'The jobs'' job_type.';

COMMENT ON COLUMN public.jobq_metric_deltas.enqueued IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.started IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.succeeded IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.failed IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.dead_lettered IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.cancelled IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.lock_expired IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.released IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.requeued IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.jobs_pending IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.jobs_processing IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.jobs_succeeded IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.jobs_failed IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.jobs_dead_letter IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.jobs_cancelled IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.wait_buckets IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.wait_sum IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.run_buckets IS 'As in jobq_metric_counters.';

COMMENT ON COLUMN public.jobq_metric_deltas.run_sum IS 'As in jobq_metric_counters.';

CREATE TABLE public.jobq_metric_labels (
    queue text NOT NULL,
    job_type text NOT NULL
);

COMMENT ON TABLE public.jobq_metric_labels IS 'jobq: the (queue, job_type) label sets that jobq_metrics() counts under their own names, at
most jobq_settings.metrics_label_sets distinct pairs (a pair admitted by two sessions at once
may have two rows). Written by jobq__metrics_count when it meets a new pair while there is
room, emptied of pairs without jobs by jobq_metrics_forget().';

COMMENT ON COLUMN public.jobq_metric_labels.queue IS 'The label set''s queue.';

COMMENT ON COLUMN public.jobq_metric_labels.job_type IS 'The label set''s job_type.';

CREATE TABLE public.jobq_migrations (
    version text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    breaking boolean DEFAULT false NOT NULL
);

COMMENT ON TABLE public.jobq_migrations IS 'jobq migrations (NNNN_name) and function files (functions/jobq_name) applied to this schema, with the SHA-256 of each file (written by jobq migrate).';

COMMENT ON COLUMN public.jobq_migrations.version IS 'What was applied: a migration (NNNN_name, its file name without .sql) or a function file
(functions/jobq_name).';

COMMENT ON COLUMN public.jobq_migrations.checksum IS 'SHA-256 of the file as applied. An applied migration whose file has changed is refused; a
function file whose content differs is applied again, by a jobq that knows this checksum.';

COMMENT ON COLUMN public.jobq_migrations.applied_at IS 'When the file was applied (a function file: when it was last applied).';

COMMENT ON COLUMN public.jobq_migrations.breaking IS 'True for a migration marked --! breaking-change: a client of an older jobq, which does not
have that migration, refuses this schema.';

CREATE TABLE public.jobq_paused_queues (
    queue text NOT NULL,
    paused_at timestamp with time zone NOT NULL,
    reason text
);

COMMENT ON TABLE public.jobq_paused_queues IS 'The paused queues: no jobq_dequeue claims their jobs while their row is here. Changed only
through jobq_pause() and jobq_resume() (admin); read by jobq_queues().';

COMMENT ON COLUMN public.jobq_paused_queues.queue IS 'The paused queue.';

COMMENT ON COLUMN public.jobq_paused_queues.paused_at IS 'When jobq_pause paused it.';

COMMENT ON COLUMN public.jobq_paused_queues.reason IS 'Why, as given to jobq_pause (NULL: none).';

CREATE TABLE public.jobq_schedules (
    name text NOT NULL,
    cron text NOT NULL,
    timezone text DEFAULT 'UTC'::text NOT NULL,
    job_type text NOT NULL,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    queue text DEFAULT 'default'::text NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    catch_up text DEFAULT 'latest'::text NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    next_run_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    last_fired_at timestamp with time zone,
    last_job_id uuid,
    CONSTRAINT jobq_schedules_catch_up_check CHECK ((catch_up = ANY (ARRAY['skip'::text, 'latest'::text, 'all'::text]))),
    CONSTRAINT jobq_schedules_max_attempts_check CHECK ((max_attempts >= 1))
);

COMMENT ON TABLE public.jobq_schedules IS 'jobq periodic jobs (cron schedules), one row per name. Change it only through jobq_schedule()
and jobq_unschedule(); jobq_tick() fires the due ones.';

COMMENT ON COLUMN public.jobq_schedules.name IS 'The schedule''s name (1-200 characters), unique; part of each fire''s idempotency key.';

COMMENT ON COLUMN public.jobq_schedules.cron IS 'Five-field cron expression (minute hour day-of-month month day-of-week) or an @ shortcut
(@hourly, @daily, @weekly, @monthly, @yearly), as given.';

COMMENT ON COLUMN public.jobq_schedules.timezone IS 'IANA time zone in which the cron fields are wall-clock times.';

COMMENT ON COLUMN public.jobq_schedules.job_type IS 'job_type of each job a fire enqueues.';

COMMENT ON COLUMN public.jobq_schedules.payload IS 'payload of each job a fire enqueues.';

COMMENT ON COLUMN public.jobq_schedules.queue IS 'queue of each job a fire enqueues.';

COMMENT ON COLUMN public.jobq_schedules.priority IS 'priority of each job a fire enqueues.';

COMMENT ON COLUMN public.jobq_schedules.max_attempts IS 'max_attempts of each job a fire enqueues.';

COMMENT ON COLUMN public.jobq_schedules.catch_up IS 'What a tick does with fires that nobody ticked in time: skip (none of them), latest (the most
recent only), all (each of them, the 1,000 most recent at most).';

COMMENT ON COLUMN public.jobq_schedules.paused IS 'A paused schedule fires nothing; resuming it starts from the next fire after the resume.';

COMMENT ON COLUMN public.jobq_schedules.next_run_at IS 'The next fire time (an instant). A tick fires the schedule once this has come.';

COMMENT ON COLUMN public.jobq_schedules.created_at IS 'When the schedule was first created.';

COMMENT ON COLUMN public.jobq_schedules.updated_at IS 'When jobq_schedule() last changed its definition.';

COMMENT ON COLUMN public.jobq_schedules.last_fired_at IS 'The fire time of the latest fire a tick enqueued (its job''s run_at); NULL before the first.
Written by jobq_tick with next_run_at.';

COMMENT ON COLUMN public.jobq_schedules.last_job_id IS 'The id of the job that fire enqueued (or the job an earlier tick enqueued for the same fire,
which the idempotency key returns); NULL before the first fire. The job may since have been
pruned.';

COMMENT ON CONSTRAINT jobq_schedules_catch_up_check ON public.jobq_schedules IS 'The catch-up policies: skip, latest, all.';

COMMENT ON CONSTRAINT jobq_schedules_max_attempts_check ON public.jobq_schedules IS 'Each job a fire enqueues may be claimed at least once (jobq_schedule also refuses more than
1000, as jobq_enqueue does).';

CREATE TABLE public.jobq_settings (
    singleton boolean DEFAULT true NOT NULL,
    max_payload_bytes integer DEFAULT 1048576 NOT NULL,
    metrics boolean DEFAULT false NOT NULL,
    lock_seed bigint DEFAULT 0 NOT NULL,
    metrics_label_sets integer DEFAULT 1000 NOT NULL,
    CONSTRAINT jobq_settings_max_payload_bytes_check CHECK ((max_payload_bytes > 0)),
    CONSTRAINT jobq_settings_metrics_label_sets_check CHECK (((metrics_label_sets >= 0) AND (metrics_label_sets <= 1000000))),
    CONSTRAINT jobq_settings_singleton_check CHECK (singleton)
);

COMMENT ON TABLE public.jobq_settings IS 'Settings of this jobq installation, one row, so that each schema (tenant) has its own.
Changed only through jobq_configure(), admin only: a producer cannot raise its own limits.';

COMMENT ON COLUMN public.jobq_settings.singleton IS 'Always true: the key that keeps this table at one row.';

COMMENT ON COLUMN public.jobq_settings.max_payload_bytes IS 'The largest payload jobq_enqueue and jobq_enqueue_many accept, in bytes of jsonb (default
1048576, 1 MiB); larger ones are refused with 54000.';

COMMENT ON COLUMN public.jobq_settings.metrics IS 'Whether the jobq functions count what they do for jobq_metrics() (jobq_configure(metrics =>
...)); false on a new installation. While false, the counters stand still, and the gauge
jobq_jobs is recounted when it is turned on again.';

COMMENT ON COLUMN public.jobq_settings.lock_seed IS 'A secret of this installation (64 random bits, drawn at install): the seed of the hash
that numbers the advisory lock of each limit key (jobq__claim_limited), so that a role that
knows a group and key cannot compute the lock''s number and hold it. Readable by jobq''s owner
and admins only; never returned by jobq_configure.';

COMMENT ON COLUMN public.jobq_settings.metrics_label_sets IS 'How many (queue, job_type) label sets jobq_metrics() counts under their own names (admitted to
jobq_metric_labels, first come first served); the counts of the others go to the overflow label
set, queue '''' and job_type ''''. Default 1000; jobq_configure(metrics_label_sets => ...).';

COMMENT ON CONSTRAINT jobq_settings_max_payload_bytes_check ON public.jobq_settings IS 'The payload limit is positive.';

COMMENT ON CONSTRAINT jobq_settings_metrics_label_sets_check ON public.jobq_settings IS 'The label-set bound is 0 (everything in the overflow label set) to 1,000,000.';

COMMENT ON CONSTRAINT jobq_settings_singleton_check ON public.jobq_settings IS 'singleton is true, so no second row can be added.';

CREATE TABLE public.jobq_workers (
    worker_id text NOT NULL,
    job_types text[],
    queues text[],
    first_claim_at timestamp with time zone DEFAULT now() NOT NULL,
    last_claim_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE public.jobq_workers IS 'jobq: the filters of each worker''s recent claims, one row per worker_id, written by
jobq_dequeue (through jobq__worker_seen). Read by jobq_unserved_job_types() and jobq_health();
rows of workers that have not claimed for a day are deleted by later claims.';

COMMENT ON COLUMN public.jobq_workers.worker_id IS 'The worker_id its claims gave.';

COMMENT ON COLUMN public.jobq_workers.job_types IS 'The job_types filter of its last claim; NULL: every job type.';

COMMENT ON COLUMN public.jobq_workers.queues IS 'The queues filter of its last claim; NULL: every queue.';

COMMENT ON COLUMN public.jobq_workers.first_claim_at IS 'When this worker_id was first recorded.';

COMMENT ON COLUMN public.jobq_workers.last_claim_at IS 'When a claim last recorded it (at most a few seconds old while the worker claims, since
records are refreshed only when older than that or when the filters change).';

ALTER TABLE ONLY public.jobq_jobs_history ATTACH PARTITION public.jobq__history_cancelled FOR VALUES IN ('cancelled');

ALTER TABLE ONLY public.jobq__history_cancelled ATTACH PARTITION public.jobq__history_cancelled_default DEFAULT;

ALTER TABLE ONLY public.jobq_jobs_history ATTACH PARTITION public.jobq__history_dead_letter FOR VALUES IN ('dead_letter');

ALTER TABLE ONLY public.jobq__history_dead_letter ATTACH PARTITION public.jobq__history_dead_letter_default DEFAULT;

ALTER TABLE ONLY public.jobq_jobs_history ATTACH PARTITION public.jobq__history_failed FOR VALUES IN ('failed');

ALTER TABLE ONLY public.jobq__history_failed ATTACH PARTITION public.jobq__history_failed_default DEFAULT;

ALTER TABLE ONLY public.jobq_jobs_history ATTACH PARTITION public.jobq__history_succeeded FOR VALUES IN ('succeeded');

ALTER TABLE ONLY public.jobq__history_succeeded ATTACH PARTITION public.jobq__history_succeeded_default DEFAULT;

ALTER TABLE ONLY public.jobq__migrate_lock
    ADD CONSTRAINT jobq__migrate_lock_pkey PRIMARY KEY (singleton);

COMMENT ON CONSTRAINT jobq__migrate_lock_pkey ON public.jobq__migrate_lock IS 'One row.';

ALTER TABLE ONLY public.jobq_audit
    ADD CONSTRAINT jobq_audit_pkey PRIMARY KEY (id);

COMMENT ON CONSTRAINT jobq_audit_pkey ON public.jobq_audit IS 'One row per action.';

ALTER TABLE ONLY public.jobq_index_rebuilds
    ADD CONSTRAINT jobq_index_rebuilds_pkey PRIMARY KEY (index_name);

COMMENT ON CONSTRAINT jobq_index_rebuilds_pkey ON public.jobq_index_rebuilds IS 'One row per index.';

ALTER TABLE ONLY public.jobq_job_dependencies
    ADD CONSTRAINT jobq_job_dependencies_pkey PRIMARY KEY (job_id, depends_on);

COMMENT ON CONSTRAINT jobq_job_dependencies_pkey ON public.jobq_job_dependencies IS 'An edge is recorded once; a job''s parents are a range of this index.';

ALTER TABLE public.jobq_jobs
    ADD CONSTRAINT jobq_jobs_finished_check CHECK (((status = ANY (public.jobq__statuses(finished => true))) = (finished_at IS NOT NULL))) NOT VALID;

COMMENT ON CONSTRAINT jobq_jobs_finished_check ON public.jobq_jobs IS 'finished_at is set exactly for the finished statuses, jobq__statuses(finished => true). NOT
VALID, as jobq_jobs_status_check.';

ALTER TABLE ONLY public.jobq_jobs
    ADD CONSTRAINT jobq_jobs_pkey PRIMARY KEY (id);

COMMENT ON CONSTRAINT jobq_jobs_pkey ON public.jobq_jobs IS 'A job is identified by its id.';

ALTER TABLE public.jobq_jobs
    ADD CONSTRAINT jobq_jobs_status_check CHECK ((status = ANY (public.jobq__statuses()))) NOT VALID;

COMMENT ON CONSTRAINT jobq_jobs_status_check ON public.jobq_jobs IS 'status is one of jobq__statuses(). Text with a CHECK rather than an enum, whose values could
never be dropped. NOT VALID: enforced on every write, never read by the planner (which would
call jobq__statuses as the role that queries jobq_all_jobs).';

ALTER TABLE ONLY public.jobq_limit_keys
    ADD CONSTRAINT jobq_limit_keys_pkey PRIMARY KEY (limit_group, limit_key);

COMMENT ON CONSTRAINT jobq_limit_keys_pkey ON public.jobq_limit_keys IS 'One row per key.';

ALTER TABLE ONLY public.jobq_limit_starts
    ADD CONSTRAINT jobq_limit_starts_pkey PRIMARY KEY (limit_group, limit_key, total);

COMMENT ON CONSTRAINT jobq_limit_starts_pkey ON public.jobq_limit_starts IS 'Each total once per key: the rows of a key in start order.';

ALTER TABLE ONLY public.jobq_limits
    ADD CONSTRAINT jobq_limits_pkey PRIMARY KEY (limit_group);

COMMENT ON CONSTRAINT jobq_limits_pkey ON public.jobq_limits IS 'One limit per group.';

ALTER TABLE ONLY public.jobq_metric_counters
    ADD CONSTRAINT jobq_metric_counters_pkey PRIMARY KEY (queue, job_type, shard);

COMMENT ON CONSTRAINT jobq_metric_counters_pkey ON public.jobq_metric_counters IS 'One row per (queue, job_type, shard): the upsert of jobq__metrics_count finds its own row.';

ALTER TABLE ONLY public.jobq_migrations
    ADD CONSTRAINT jobq_migrations_pkey PRIMARY KEY (version);

COMMENT ON CONSTRAINT jobq_migrations_pkey ON public.jobq_migrations IS 'One record per migration or function file.';

ALTER TABLE ONLY public.jobq_paused_queues
    ADD CONSTRAINT jobq_paused_queues_pkey PRIMARY KEY (queue);

COMMENT ON CONSTRAINT jobq_paused_queues_pkey ON public.jobq_paused_queues IS 'A queue is paused once: a second jobq_pause leaves the first pause as it was.';

ALTER TABLE ONLY public.jobq_retention
    ADD CONSTRAINT jobq_retention_pkey PRIMARY KEY (status);

COMMENT ON CONSTRAINT jobq_retention_pkey ON public.jobq_retention IS 'One row per finished status.';

ALTER TABLE ONLY public.jobq_schedules
    ADD CONSTRAINT jobq_schedules_pkey PRIMARY KEY (name);

COMMENT ON CONSTRAINT jobq_schedules_pkey ON public.jobq_schedules IS 'A schedule is identified by its name, which is also part of the idempotency key of each job
it fires (so that a fire is enqueued once, whoever ticks).';

ALTER TABLE ONLY public.jobq_settings
    ADD CONSTRAINT jobq_settings_pkey PRIMARY KEY (singleton);

COMMENT ON CONSTRAINT jobq_settings_pkey ON public.jobq_settings IS 'One row: singleton is its key.';

ALTER TABLE ONLY public.jobq_workers
    ADD CONSTRAINT jobq_workers_pkey PRIMARY KEY (worker_id);

COMMENT ON CONSTRAINT jobq_workers_pkey ON public.jobq_workers IS 'One row per worker_id: a claim refreshes its worker''s row instead of adding one.';

CREATE INDEX jobq_jobs_history_finished_idx ON ONLY public.jobq_jobs_history USING btree (finished_at, id);

COMMENT ON INDEX public.jobq_jobs_history_finished_idx IS 'Finished jobs by finished_at: jobq_prune and the listings of finished jobs (newest first).';

CREATE INDEX jobq__history_cancelled_finished_at_id_idx ON ONLY public.jobq__history_cancelled USING btree (finished_at, id);

CREATE INDEX jobq__history_cancelled_default_finished_at_id_idx ON public.jobq__history_cancelled_default USING btree (finished_at, id);

CREATE INDEX jobq_jobs_history_id_idx ON ONLY public.jobq_jobs_history USING btree (id);

COMMENT ON INDEX public.jobq_jobs_history_id_idx IS 'A finished job by id: jobq_job_status, jobq_await, jobq_get_job and the requeue find it.';

CREATE INDEX jobq__history_cancelled_id_idx ON ONLY public.jobq__history_cancelled USING btree (id);

CREATE INDEX jobq__history_cancelled_default_id_idx ON public.jobq__history_cancelled_default USING btree (id);

CREATE INDEX jobq_jobs_history_idempotency_key_idx ON ONLY public.jobq_jobs_history USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL);

COMMENT ON INDEX public.jobq_jobs_history_idempotency_key_idx IS 'Keys of finished jobs: jobq_enqueue returns such a job''s id. Not unique (a partitioned
index cannot be without finished_at); the enqueue protocol keeps a key on one job. Partial:
jobs without a key cost no entry.';

CREATE INDEX jobq__history_cancelled_job_type_idempotency_key_idx ON ONLY public.jobq__history_cancelled USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE INDEX jobq__history_cancelled_default_job_type_idempotency_key_idx ON public.jobq__history_cancelled_default USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE INDEX jobq_jobs_history_names_idx ON ONLY public.jobq_jobs_history USING btree (job_type, queue);

COMMENT ON INDEX public.jobq_jobs_history_names_idx IS 'The names of the finished jobs: jobq_names reads it one distinct pair at a time in each
partition. Deduplicated: few distinct pairs, so it stays small.';

CREATE INDEX jobq__history_cancelled_job_type_queue_idx ON ONLY public.jobq__history_cancelled USING btree (job_type, queue);

CREATE INDEX jobq__history_cancelled_default_job_type_queue_idx ON public.jobq__history_cancelled_default USING btree (job_type, queue);

CREATE INDEX jobq__history_dead_letter_finished_at_id_idx ON ONLY public.jobq__history_dead_letter USING btree (finished_at, id);

CREATE INDEX jobq__history_dead_letter_default_finished_at_id_idx ON public.jobq__history_dead_letter_default USING btree (finished_at, id);

CREATE INDEX jobq__history_dead_letter_id_idx ON ONLY public.jobq__history_dead_letter USING btree (id);

CREATE INDEX jobq__history_dead_letter_default_id_idx ON public.jobq__history_dead_letter_default USING btree (id);

CREATE INDEX jobq__history_dead_letter_job_type_idempotency_key_idx ON ONLY public.jobq__history_dead_letter USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE INDEX jobq__history_dead_letter_default_job_type_idempotency_key_idx ON public.jobq__history_dead_letter_default USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE INDEX jobq__history_dead_letter_job_type_queue_idx ON ONLY public.jobq__history_dead_letter USING btree (job_type, queue);

CREATE INDEX jobq__history_dead_letter_default_job_type_queue_idx ON public.jobq__history_dead_letter_default USING btree (job_type, queue);

CREATE INDEX jobq__history_failed_finished_at_id_idx ON ONLY public.jobq__history_failed USING btree (finished_at, id);

CREATE INDEX jobq__history_failed_default_finished_at_id_idx ON public.jobq__history_failed_default USING btree (finished_at, id);

CREATE INDEX jobq__history_failed_id_idx ON ONLY public.jobq__history_failed USING btree (id);

CREATE INDEX jobq__history_failed_default_id_idx ON public.jobq__history_failed_default USING btree (id);

CREATE INDEX jobq__history_failed_job_type_idempotency_key_idx ON ONLY public.jobq__history_failed USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE INDEX jobq__history_failed_default_job_type_idempotency_key_idx ON public.jobq__history_failed_default USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE INDEX jobq__history_failed_job_type_queue_idx ON ONLY public.jobq__history_failed USING btree (job_type, queue);

CREATE INDEX jobq__history_failed_default_job_type_queue_idx ON public.jobq__history_failed_default USING btree (job_type, queue);

CREATE INDEX jobq__history_succeeded_finished_at_id_idx ON ONLY public.jobq__history_succeeded USING btree (finished_at, id);

CREATE INDEX jobq__history_succeeded_default_finished_at_id_idx ON public.jobq__history_succeeded_default USING btree (finished_at, id);

CREATE INDEX jobq__history_succeeded_id_idx ON ONLY public.jobq__history_succeeded USING btree (id);

CREATE INDEX jobq__history_succeeded_default_id_idx ON public.jobq__history_succeeded_default USING btree (id);

CREATE INDEX jobq__history_succeeded_job_type_idempotency_key_idx ON ONLY public.jobq__history_succeeded USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE INDEX jobq__history_succeeded_default_job_type_idempotency_key_idx ON public.jobq__history_succeeded_default USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE INDEX jobq__history_succeeded_job_type_queue_idx ON ONLY public.jobq__history_succeeded USING btree (job_type, queue);

CREATE INDEX jobq__history_succeeded_default_job_type_queue_idx ON public.jobq__history_succeeded_default USING btree (job_type, queue);

COMMENT ON INDEX public.jobq__migrate_lock_pkey IS 'One row.';

COMMENT ON INDEX public.jobq_audit_pkey IS 'The actions newest first: jobq_audit_log reads it backwards from its cursor.';

CREATE INDEX jobq_awaits_job_idx ON public.jobq_awaits USING btree (job_id);

COMMENT ON INDEX public.jobq_awaits_job_idx IS 'The rows of a job: one probe per ending statement (an empty index when nobody waits). Not
unique, so that registering never waits for another transaction.';

COMMENT ON INDEX public.jobq_index_rebuilds_pkey IS 'The latest rebuild of an index, by its name.';

CREATE INDEX jobq_job_dependencies_depends_on_idx ON public.jobq_job_dependencies USING btree (depends_on);

COMMENT ON INDEX public.jobq_job_dependencies_depends_on_idx IS 'A job''s dependents: one probe when a job that has dependents finishes or is requeued.';

COMMENT ON INDEX public.jobq_job_dependencies_pkey IS 'The index of jobq_job_dependencies_pkey.';

CREATE INDEX jobq_jobs_claim_idx ON public.jobq_jobs USING btree (hashtextextended(job_type, (0)::bigint), hashtextextended(queue, (0)::bigint), priority DESC, available_at, id) WITH (deduplicate_items=off) WHERE ((status = 'pending'::text) AND (NOT scheduled) AND (limit_group IS NULL));

COMMENT ON INDEX public.jobq_jobs_claim_idx IS 'The claim: pending jobs available now (not scheduled) without a limit, one range per
(job_type, queue) pair, keyed by the 64-bit hashes of the two names
(hashtextextended(name, 0): fixed-width keys, cheaper to insert than the texts), each in claim
order (priority DESC, available_at, id). jobq_dequeue reads the ranges its filters select,
comparing the names of the rows it reads (two pairs whose hashes collide share a range), and
merges them when there are several.';

CREATE UNIQUE INDEX jobq_jobs_idempotency_key_key ON public.jobq_jobs USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL);

COMMENT ON INDEX public.jobq_jobs_idempotency_key_key IS 'One job per (job_type, idempotency_key): the same key under another job type is another job.
Partial (only non-NULL keys): NULLs never collide, and a job without a key, the common case,
costs no entry here, when inserted or on any update.';

CREATE INDEX jobq_jobs_later_names_idx ON public.jobq_jobs USING btree (job_type, queue) WHERE ((status = 'waiting'::text) OR ((status = 'pending'::text) AND scheduled));

COMMENT ON INDEX public.jobq_jobs_later_names_idx IS 'The names of the jobs that wait: for their dependencies (waiting) or their run_at or a
retry''s backoff (scheduled). jobq_names reads it one distinct pair at a time. A job
available now has no entry.';

CREATE INDEX jobq_jobs_limit_running_idx ON public.jobq_jobs USING btree (limit_group, COALESCE(limit_key, ''::text)) WHERE ((status = 'processing'::text) AND (limit_group IS NOT NULL));

COMMENT ON INDEX public.jobq_jobs_limit_running_idx IS 'The processing jobs of each (limit_group, limit_key): the claim counts them under the key''s
lock, jobq_limit_usage() reports them.';

CREATE INDEX jobq_jobs_limited_idx ON public.jobq_jobs USING btree (job_type, queue, limit_group, COALESCE(limit_key, ''::text), priority DESC, available_at, id) WITH (deduplicate_items=off) WHERE ((status = 'pending'::text) AND (NOT scheduled) AND (limit_group IS NOT NULL));

COMMENT ON INDEX public.jobq_jobs_limited_idx IS 'The claim of limited jobs: pending jobs available now (not scheduled) with a limit_group, one
range per (job_type, queue, limit_group, limit_key), each in claim order. jobq_dequeue probes
it once to learn whether its filters hold limited jobs, and then reads the head of each
key''s range (a key that is full is skipped whole, whatever it holds back). An empty
limit_key cannot be enqueued, so the empty string stands for NULL.';

CREATE INDEX jobq_jobs_limited_turn_idx ON public.jobq_jobs USING btree (limit_group, priority DESC, COALESCE(limit_key, ''::text), available_at DESC, id DESC) WITH (deduplicate_items=off) WHERE ((status = 'pending'::text) AND (NOT scheduled) AND (limit_group IS NOT NULL));

COMMENT ON INDEX public.jobq_jobs_limited_turn_idx IS 'The claim of a round_robin group without caps: the group''s pending limited jobs by priority,
each priority''s keys in order, each key''s jobs in reverse claim order. One probe gives the
group''s top priority (its lowest key first), one backward probe per key the next key below
the group''s cursor and its first job.';

CREATE INDEX jobq_jobs_locked_until_idx ON public.jobq_jobs USING btree (locked_until) WHERE (status = 'processing'::text);

COMMENT ON INDEX public.jobq_jobs_locked_until_idx IS 'Processing jobs by the expiry of their lock: jobq_dequeue finds the expired claims with a short
range scan (usually empty), jobq_jobs_page lists processing jobs in this order, jobq_health and
jobq_release_orphans read the processing jobs through it.';

COMMENT ON INDEX public.jobq_jobs_pkey IS 'The primary key: jobq_complete, jobq_fail, jobq_heartbeat and jobq_release find their jobs
by id.';

CREATE INDEX jobq_jobs_scheduled_idx ON public.jobq_jobs USING btree (available_at) WHERE ((status = 'pending'::text) AND scheduled);

COMMENT ON INDEX public.jobq_jobs_scheduled_idx IS 'Scheduled jobs by the time they come due: every claim promotes the due ones (clears
scheduled), so that they enter jobq_jobs_claim_idx.';

CREATE INDEX jobq_jobs_waiting_idx ON public.jobq_jobs USING btree (created_at, id) WHERE (status = 'waiting'::text);

COMMENT ON INDEX public.jobq_jobs_waiting_idx IS 'The waiting jobs, oldest first: jobq_jobs_page(''waiting'') reads them through it.';

COMMENT ON INDEX public.jobq_limit_keys_pkey IS 'The index of jobq_limit_keys_pkey.';

CREATE INDEX jobq_limit_starts_at_idx ON public.jobq_limit_starts USING btree (limit_group, limit_key, started_at, total);

COMMENT ON INDEX public.jobq_limit_starts_at_idx IS 'The last row of a key older than the window: one probe per claim of a rate-limited key.';

COMMENT ON INDEX public.jobq_limit_starts_pkey IS 'The index of jobq_limit_starts_pkey: the first and the latest row of a key.';

COMMENT ON INDEX public.jobq_limits_pkey IS 'The index of jobq_limits_pkey: the claim reads the limit of each group it meets.';

COMMENT ON INDEX public.jobq_metric_counters_pkey IS 'The index of jobq_metric_counters_pkey, for the upserts of jobq__metrics_count.';

CREATE INDEX jobq_metric_labels_idx ON public.jobq_metric_labels USING btree (queue, job_type);

COMMENT ON INDEX public.jobq_metric_labels_idx IS 'Whether a pair is admitted: one probe by jobq__metrics_count for a pair its backend has not
counted yet.';

COMMENT ON INDEX public.jobq_migrations_pkey IS 'The index of jobq_migrations_pkey.';

COMMENT ON INDEX public.jobq_paused_queues_pkey IS 'The index of jobq_paused_queues_pkey.';

COMMENT ON INDEX public.jobq_retention_pkey IS 'The index of jobq_retention_pkey.';

CREATE INDEX jobq_schedules_due_idx ON public.jobq_schedules USING btree (next_run_at) WHERE (NOT paused);

COMMENT ON INDEX public.jobq_schedules_due_idx IS 'Due schedules for jobq_tick: a tick with nothing due reads one entry of this index.';

COMMENT ON INDEX public.jobq_schedules_pkey IS 'The index of jobq_schedules_pkey: jobq_schedule and jobq_unschedule find a schedule by name.';

COMMENT ON INDEX public.jobq_settings_pkey IS 'The index of jobq_settings_pkey (one row).';

COMMENT ON INDEX public.jobq_workers_pkey IS 'The index of jobq_workers_pkey: jobq__worker_seen finds its worker''s row by worker_id.';

ALTER INDEX public.jobq__history_cancelled_finished_at_id_idx ATTACH PARTITION public.jobq__history_cancelled_default_finished_at_id_idx;

ALTER INDEX public.jobq__history_cancelled_id_idx ATTACH PARTITION public.jobq__history_cancelled_default_id_idx;

ALTER INDEX public.jobq__history_cancelled_job_type_idempotency_key_idx ATTACH PARTITION public.jobq__history_cancelled_default_job_type_idempotency_key_idx;

ALTER INDEX public.jobq__history_cancelled_job_type_queue_idx ATTACH PARTITION public.jobq__history_cancelled_default_job_type_queue_idx;

ALTER INDEX public.jobq_jobs_history_finished_idx ATTACH PARTITION public.jobq__history_cancelled_finished_at_id_idx;

ALTER INDEX public.jobq_jobs_history_id_idx ATTACH PARTITION public.jobq__history_cancelled_id_idx;

ALTER INDEX public.jobq_jobs_history_idempotency_key_idx ATTACH PARTITION public.jobq__history_cancelled_job_type_idempotency_key_idx;

ALTER INDEX public.jobq_jobs_history_names_idx ATTACH PARTITION public.jobq__history_cancelled_job_type_queue_idx;

ALTER INDEX public.jobq__history_dead_letter_finished_at_id_idx ATTACH PARTITION public.jobq__history_dead_letter_default_finished_at_id_idx;

ALTER INDEX public.jobq__history_dead_letter_id_idx ATTACH PARTITION public.jobq__history_dead_letter_default_id_idx;

ALTER INDEX public.jobq__history_dead_letter_job_type_idempotency_key_idx ATTACH PARTITION public.jobq__history_dead_letter_default_job_type_idempotency_key_idx;

ALTER INDEX public.jobq__history_dead_letter_job_type_queue_idx ATTACH PARTITION public.jobq__history_dead_letter_default_job_type_queue_idx;

ALTER INDEX public.jobq_jobs_history_finished_idx ATTACH PARTITION public.jobq__history_dead_letter_finished_at_id_idx;

ALTER INDEX public.jobq_jobs_history_id_idx ATTACH PARTITION public.jobq__history_dead_letter_id_idx;

ALTER INDEX public.jobq_jobs_history_idempotency_key_idx ATTACH PARTITION public.jobq__history_dead_letter_job_type_idempotency_key_idx;

ALTER INDEX public.jobq_jobs_history_names_idx ATTACH PARTITION public.jobq__history_dead_letter_job_type_queue_idx;

ALTER INDEX public.jobq__history_failed_finished_at_id_idx ATTACH PARTITION public.jobq__history_failed_default_finished_at_id_idx;

ALTER INDEX public.jobq__history_failed_id_idx ATTACH PARTITION public.jobq__history_failed_default_id_idx;

ALTER INDEX public.jobq__history_failed_job_type_idempotency_key_idx ATTACH PARTITION public.jobq__history_failed_default_job_type_idempotency_key_idx;

ALTER INDEX public.jobq__history_failed_job_type_queue_idx ATTACH PARTITION public.jobq__history_failed_default_job_type_queue_idx;

ALTER INDEX public.jobq_jobs_history_finished_idx ATTACH PARTITION public.jobq__history_failed_finished_at_id_idx;

ALTER INDEX public.jobq_jobs_history_id_idx ATTACH PARTITION public.jobq__history_failed_id_idx;

ALTER INDEX public.jobq_jobs_history_idempotency_key_idx ATTACH PARTITION public.jobq__history_failed_job_type_idempotency_key_idx;

ALTER INDEX public.jobq_jobs_history_names_idx ATTACH PARTITION public.jobq__history_failed_job_type_queue_idx;

ALTER INDEX public.jobq__history_succeeded_finished_at_id_idx ATTACH PARTITION public.jobq__history_succeeded_default_finished_at_id_idx;

ALTER INDEX public.jobq__history_succeeded_id_idx ATTACH PARTITION public.jobq__history_succeeded_default_id_idx;

ALTER INDEX public.jobq__history_succeeded_job_type_idempotency_key_idx ATTACH PARTITION public.jobq__history_succeeded_default_job_type_idempotency_key_idx;

ALTER INDEX public.jobq__history_succeeded_job_type_queue_idx ATTACH PARTITION public.jobq__history_succeeded_default_job_type_queue_idx;

ALTER INDEX public.jobq_jobs_history_finished_idx ATTACH PARTITION public.jobq__history_succeeded_finished_at_id_idx;

ALTER INDEX public.jobq_jobs_history_id_idx ATTACH PARTITION public.jobq__history_succeeded_id_idx;

ALTER INDEX public.jobq_jobs_history_idempotency_key_idx ATTACH PARTITION public.jobq__history_succeeded_job_type_idempotency_key_idx;

ALTER INDEX public.jobq_jobs_history_names_idx ATTACH PARTITION public.jobq__history_succeeded_job_type_queue_idx;

CREATE CONSTRAINT TRIGGER jobq_cancel_requests_apply AFTER INSERT ON public.jobq_cancel_requests DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.jobq__cancel_apply();

COMMENT ON TRIGGER jobq_cancel_requests_apply ON public.jobq_cancel_requests IS 'Applies a staged cancel request to its job while the cancelling transaction commits
(jobq__cancel_apply).';

CREATE TRIGGER jobq_jobs_retire AFTER INSERT OR UPDATE ON public.jobq_jobs FOR EACH ROW WHEN ((new.finished_at IS NOT NULL)) EXECUTE FUNCTION public.jobq__retire_row();

COMMENT ON TRIGGER jobq_jobs_retire ON public.jobq_jobs IS 'Moves a job that a statement finished (failure, cancel, release, takeover, or any other write)
to jobq_jobs_history at the end of that statement (jobq__retire_row): jobq_jobs holds live jobs
only.';

REVOKE ALL ON FUNCTION public.jobq__add_edges(children uuid[], parents uuid[], rules text[], argument text, graft boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__append_error(errors jsonb, entry jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__audit(action text, job_ids uuid[], changed uuid[], reason text, filters jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__available(limited boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__awaits_end(job_ids uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__blank(value text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__cancel_apply() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__channel() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__claim_limited(worker_id text, job_types text[], queues text[], batch_size integer, range_type_hashes bigint[], range_queue_hashes bigint[], lock_until timestamp with time zone, paused_queues text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__complete_rows(caller text, job_ids uuid[], worker_id text, attempts integer[], results jsonb[], OUT done uuid[], OUT awaited uuid[], OUT parents uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__cron_fires(masks bigint[], timezone text, first timestamp with time zone, until timestamp with time zone, max_fires integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__cron_next(masks bigint[], timezone text, after timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__cron_parse(cron text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__dependencies_gone() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__dependency_argument_problem(depends_on uuid[], on_dependency_failure text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__dependents_finished(job_ids uuid[], statuses text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__error_entry(attempt integer, at jsonb, worker text, error text, kind text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__error_line(error text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__event_channel(kind text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__history_filled(partition_name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__history_partitions(status text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__history_truncate(partition_name text, count_rows boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__insert_jobs(job_types text[], payloads jsonb[], idempotency_keys text[], max_attempts integer[], run_ats timestamp with time zone[], priorities integer[], queues text[], limit_groups text[], limit_keys text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__job_argument_problem(job_type text, queue text, idempotency_key text, max_attempts integer, priority integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__limit_argument_problem(limit_group text, limit_key text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__metric_add(a bigint[], b bigint[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__metric_bounds() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__metric_bucket(seconds double precision) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__metric_histogram(buckets integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__metric_labels(queues text[], job_types text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__metrics_count(kind text, queues text[], job_types text[], statuses text[], seconds double precision[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__metrics_fold() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__notify(queues text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__notify_events(kind text, payloads text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__requeue(job_ids uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__retire(job_ids uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__retire_row() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__retry_at(failed_at timestamp with time zone, attempts integer, backoff interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__schedule_fire(name text, job_type text, payload jsonb, queue text, priority integer, max_attempts integer, fire_at timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__statuses(finished boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__tick(at timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__uuid_v7() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__uuid_v7_many(count integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__worker_id_error(worker_id text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__worker_seen(worker_id text, job_types text[], queues text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_act_on_jobs(action text, job_ids uuid[], reason text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_add_dependencies(job_id uuid, depends_on uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_audit_log(before_id bigint, max_rows integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_await(job_ids uuid[], timeout interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_cancel(job_ids uuid[], reason text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_cancel_requested(job_ids uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_capped_groups() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_complete(job_id uuid, worker_id text, attempt integer, result jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_complete_and_claim(job_ids uuid[], worker_id text, attempts integer[], results jsonb[], job_types text[], batch_size integer, lock_timeout interval, queues text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_complete_many(job_ids uuid[], worker_id text, attempts integer[], results jsonb[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_configure(max_payload_bytes integer, metrics boolean, metrics_label_sets integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_dependencies(job_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_dequeue(worker_id text, job_types text[], batch_size integer, lock_timeout interval, queues text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_enqueue(job_type text, payload jsonb, idempotency_key text, max_attempts integer, run_at timestamp with time zone, priority integer, queue text, limit_group text, limit_key text, depends_on uuid[], on_dependency_failure text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_enqueue_arrays(job_types text[], payloads jsonb[], idempotency_keys text[], max_attempts integer[], run_ats timestamp with time zone[], priorities integer[], queues text[], limit_groups text[], limit_keys text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_enqueue_many(jobs jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_error_summary(since interval, per_type integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_fail(job_id uuid, worker_id text, error text, retry boolean, backoff interval, attempt integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_fail_many(job_ids uuid[], worker_id text, errors text[], retries boolean[], backoffs interval[], attempts integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_find_jobs(job_id uuid, idempotency_key text, job_type text, queue text, statuses text[], created_after timestamp with time zone, created_before timestamp with time zone, finished_after timestamp with time zone, finished_before timestamp with time zone, payload_contains jsonb, after_id uuid, max_rows integer, scan_limit integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_get_job(job_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_health(stuck_after interval, max_pending_age interval, max_transaction_age interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_heartbeat(worker_id text, job_ids uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_inserted(job_ids uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_job_graph(job_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_job_status(job_ids uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_jobs_page(status text, queue text, job_type text, after_at timestamp with time zone, after_id uuid, max_rows integer, scan_limit integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_limit_usage() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_limits() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_list_jobs(statuses text[], job_type text, queue text, max_rows integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_maintain_history(lock_timeout interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_maintain_indexes(lock_timeout interval, bloat_ratio real) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_metrics() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_metrics_forget() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_metrics_recount() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_names() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_pause(queue text, reason text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_prune(older_than interval, statuses text[], batch_size integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_queue_summary(recent interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_queues() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_release(job_ids uuid[], worker_id text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_release_orphans(worker_id text, job_ids uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_requeue_dead_letter(job_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_requeue_dead_letters(job_type text, queue text, include_cancelled boolean, reason text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_resume(queue text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_schedule(name text, cron text, job_type text, payload jsonb, timezone text, queue text, priority integer, max_attempts integer, catch_up text, paused boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_schedule_run_now(name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_schedules() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_set_limit(limit_group text, max_running integer, max_starts integer, per interval, share text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_set_retention(status text, keep interval, partition_days integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_set_weight(limit_group text, limit_key text, weight real) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_stats() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_throughput(since interval, bucket interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_tick() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_unschedule(name text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_unserved_job_types(idle interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_workers_summary() FROM PUBLIC;
