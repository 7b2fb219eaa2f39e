CREATE SCHEMA public;

COMMENT ON SCHEMA public IS 'standard public schema';

CREATE FUNCTION public.jobq__backoff(attempts integer, backoff interval) RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT make_interval(
        secs => least(
            greatest(attempts, 1)::numeric * extract(epoch FROM backoff),
            31536000
        )::double precision
    )
$$;

COMMENT ON FUNCTION public.jobq__backoff(attempts integer, backoff interval) IS 'Private. attempts × backoff, capped at 365 days (never overflows).';

CREATE FUNCTION public.jobq__job_argument_problem(job_type text, queue text, idempotency_key text, max_attempts integer, priority integer) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN job_type IS NULL OR job_type !~ '\S'
            THEN 'job_type must be a non-blank string'
        WHEN length(job_type) > 200
            THEN format('job_type is %s characters long, at most 200 are allowed',
                        length(job_type))
        WHEN queue IS NULL OR queue !~ '\S'
            THEN 'queue must be a non-blank string'
        WHEN length(queue) > 200
            THEN format('queue is %s characters long, at most 200 are allowed', length(queue))
        WHEN idempotency_key IS NOT NULL AND idempotency_key !~ '\S'
            THEN 'idempotency_key must be NULL or a non-blank string'
        WHEN length(idempotency_key) > 1000
            THEN format('idempotency_key is %s characters long, at most 1000 are allowed',
                        length(idempotency_key))
        WHEN max_attempts IS NULL OR max_attempts < 1 OR max_attempts > 1000
            THEN format('max_attempts must be between 1 and 1000, got %s',
                        coalesce(max_attempts::text, 'NULL'))
        WHEN priority IS NULL OR priority < -1000000 OR priority > 1000000
            THEN format('priority must be between -1000000 and 1000000, got %s',
                        coalesce(priority::text, 'NULL'))
    END
$$;

COMMENT ON FUNCTION public.jobq__job_argument_problem(job_type text, queue text, idempotency_key text, max_attempts integer, priority integer) IS 'Private. Returns the first problem with one job''s arguments (a message naming the
argument), or NULL.';

CREATE FUNCTION public.jobq__statuses(finished boolean DEFAULT NULL::boolean) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
DECLARE
    -- pending waits (also between retries); processing is claimed.
    v_unfinished CONSTANT text[] := ARRAY['pending', 'processing'];
    -- succeeded is done; failed is a permanent failure the worker asked for; dead_letter has
    -- used all its attempts.
    v_finished CONSTANT text[] := ARRAY['succeeded', 'failed', 'dead_letter'];
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

CREATE FUNCTION public.jobq_complete(job_id uuid, worker_id text, attempt integer DEFAULT NULL::integer) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    UPDATE jobq_jobs AS j
    SET
        status = 'succeeded',
        finished_at = now(),
        locked_at = NULL,
        locked_by = NULL,
        updated_at = now()
    -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
    -- test would let the planner scan jobq_jobs_locked_idx instead of the primary key.
    WHERE j.id = jobq_complete.job_id
      AND j.locked_by = jobq_complete.worker_id
      AND (jobq_complete.attempt IS NULL OR j.attempts = jobq_complete.attempt);
    RETURN FOUND;
END;
$$;

COMMENT ON FUNCTION public.jobq_complete(job_id uuid, worker_id text, attempt integer) IS 'Marks the job succeeded while the worker still holds its claim.
Arguments: job_id (the job), worker_id (the worker that claimed it), attempt (NULL = any; else
only the claim of that attempt counts, so that a claim that expired and was taken again, even
by the same worker_id, is fenced off).
Result: true if it completed the job; false otherwise (unknown job, not processing, claim
taken over or of another attempt), and nothing changes then.
Errors: none.
Concurrency: the row lock orders it against a concurrent takeover; whichever commits first
wins, and a taken-over claim can no longer complete.';

CREATE FUNCTION public.jobq_complete_many(job_ids uuid[], worker_id text, attempts integer[] DEFAULT NULL::integer[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_done integer;
BEGIN
    IF jobq_complete_many.attempts IS NOT NULL
       AND cardinality(jobq_complete_many.attempts)
           IS DISTINCT FROM cardinality(jobq_complete_many.job_ids) THEN
        RAISE EXCEPTION 'jobq_complete_many: attempts has % elements, job_ids has %',
            cardinality(jobq_complete_many.attempts),
            coalesce(cardinality(jobq_complete_many.job_ids), 0)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one attempt per job id, in the same order, or NULL.';
    END IF;

    UPDATE jobq_jobs AS j
    SET
        status = 'succeeded',
        finished_at = now(),
        locked_at = NULL,
        locked_by = NULL,
        updated_at = now()
    FROM unnest(
        jobq_complete_many.job_ids,
        coalesce(
            jobq_complete_many.attempts,
            array_fill(NULL::integer, ARRAY[coalesce(cardinality(jobq_complete_many.job_ids), 0)])
        )
    ) AS d (job_id, attempt)
    -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
    -- test would let the planner scan jobq_jobs_locked_idx instead of the primary key.
    WHERE j.id = d.job_id
      AND j.locked_by = jobq_complete_many.worker_id
      AND (d.attempt IS NULL OR j.attempts = d.attempt);
    GET DIAGNOSTICS v_done = ROW_COUNT;
    RETURN v_done;
END;
$$;

COMMENT ON FUNCTION public.jobq_complete_many(job_ids uuid[], worker_id text, attempts integer[]) IS 'Marks succeeded, in one statement, each of the jobs that the worker still holds.
Arguments: job_ids (the jobs), worker_id (the worker that claimed them), attempts (optional,
an extension of the contract: one claim attempt per job id, same order; a job counts only
while its claim is of that attempt; NULL = any).
Result: how many jobs were completed; the others (not held, another attempt) are left alone.
Errors: 22023 when attempts and job_ids differ in length.
Concurrency: as jobq_complete, job by job. It waits for the rows it changes: do not send two
calls over the same jobs at once.';

CREATE FUNCTION public.jobq_configure(max_payload_bytes integer DEFAULT NULL::integer) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_settings jsonb;
BEGIN
    IF jobq_configure.max_payload_bytes IS NOT NULL AND jobq_configure.max_payload_bytes < 1 THEN
        RAISE EXCEPTION 'jobq_configure: max_payload_bytes must be at least 1, got %',
            jobq_configure.max_payload_bytes
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE jobq_settings AS s
    SET max_payload_bytes = coalesce(jobq_configure.max_payload_bytes, s.max_payload_bytes)
    RETURNING jsonb_build_object('max_payload_bytes', s.max_payload_bytes) INTO v_settings;
    RETURN v_settings;
END;
$$;

COMMENT ON FUNCTION public.jobq_configure(max_payload_bytes integer) IS 'Admin only. Changes the settings of this installation and returns them all. Settings
live in this schema''s jobq_settings, so each tenant schema has its own.
Arguments: max_payload_bytes (the largest payload jobq_enqueue and jobq_enqueue_many accept,
in bytes of jsonb; default 1048576; NULL leaves it as it is).
Result: every setting, as a JSON object ({"max_payload_bytes": n}).
Errors: 22023 max_payload_bytes < 1.';

CREATE TABLE public.jobq_jobs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
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
    CONSTRAINT jobq_jobs_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT jobq_jobs_claim_check CHECK (((status = 'processing'::text) = ((locked_at IS NOT NULL) AND (locked_by IS NOT NULL)))),
    CONSTRAINT jobq_jobs_finished_check CHECK (((status = ANY (public.jobq__statuses(finished => true))) = (finished_at IS NOT NULL))),
    CONSTRAINT jobq_jobs_max_attempts_check CHECK ((max_attempts >= 1)),
    CONSTRAINT jobq_jobs_status_check CHECK ((status = ANY (public.jobq__statuses())))
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

COMMENT ON COLUMN public.jobq_jobs.id IS 'The job''s id, generated by jobq (gen_random_uuid()) and returned by jobq_enqueue. Callers
rely on no order of ids.';

COMMENT ON COLUMN public.jobq_jobs.queue IS 'The queue the job belongs to (default ''default''; 1-200 characters): a worker may serve
some queues only (jobq_dequeue queues).';

COMMENT ON COLUMN public.jobq_jobs.job_type IS 'Which handler runs the job (1-200 characters): a worker claims only the job types it has
handlers for (jobq_dequeue job_types).';

COMMENT ON COLUMN public.jobq_jobs.payload IS 'The job''s arguments, a JSON object handed to the handler; at most
jobq_settings.max_payload_bytes of jsonb.';

COMMENT ON COLUMN public.jobq_jobs.idempotency_key IS 'Dedupe of one logical task: enqueuing a key that exists, in any status, adds nothing and
returns that job''s id (jobq_jobs_idempotency_key_key). NULL: no dedupe; NULLs never collide.';

COMMENT ON COLUMN public.jobq_jobs.status IS 'pending: waits (also between retries); processing: claimed; succeeded: done; failed: a
permanent failure the worker asked for (no retry); dead_letter: used all its attempts.
succeeded, failed and dead_letter are finished. The names are those of jobq__statuses().';

COMMENT ON COLUMN public.jobq_jobs.priority IS 'Higher runs first: claims take jobs by priority (high first), then available_at, then id.
-1000000 to 1000000, default 0.';

COMMENT ON COLUMN public.jobq_jobs.attempts IS 'Claims so far, the current one included: a claim adds 1, jobq_release gives it back, a
requeue starts again at 0. A worker passes it back as attempt to fence its claim.';

COMMENT ON COLUMN public.jobq_jobs.max_attempts IS 'Claims allowed (1-1000, default 5). A failure of the last attempt, or a stale claim of it
taken over, moves the job to dead_letter.';

COMMENT ON COLUMN public.jobq_jobs.available_at IS 'Not claimed before this time: run_at (or now) at enqueue, now + attempts × backoff after a
failure, now after a release or a requeue.';

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

COMMENT ON COLUMN public.jobq_jobs.finished_at IS 'When the job reached a finished status (succeeded, failed, dead_letter); NULL otherwise
(jobq_jobs_finished_check). jobq_prune deletes jobs by its age.';

COMMENT ON CONSTRAINT jobq_jobs_attempts_check ON public.jobq_jobs IS 'attempts is never negative (jobq_release gives an attempt back down to 0 at most).';

COMMENT ON CONSTRAINT jobq_jobs_claim_check ON public.jobq_jobs IS 'A claim (locked_at and locked_by) exists exactly while the job is processing. The fenced
functions rely on it: they find a claim by id and locked_by = worker_id alone, which implies
processing. Testing the status as well would match the predicate of jobq_jobs_locked_idx, and
with a generic plan and statistics gathered while few jobs were processing the planner chose
that index over the primary key, scanning every claimed job on each call (4,000 failures in
one statement: 2.3 s instead of 0.25 s).';

COMMENT ON CONSTRAINT jobq_jobs_finished_check ON public.jobq_jobs IS 'finished_at is set exactly for the finished statuses, jobq__statuses(finished => true).';

COMMENT ON CONSTRAINT jobq_jobs_max_attempts_check ON public.jobq_jobs IS 'A job may be claimed at least once (jobq_enqueue also refuses more than 1000).';

COMMENT ON CONSTRAINT jobq_jobs_status_check ON public.jobq_jobs IS 'status is one of jobq__statuses(). Text with a CHECK rather than an enum, whose values could
never be dropped.';

CREATE FUNCTION public.jobq_dequeue(worker_id text, job_types text[] DEFAULT NULL::text[], batch_size integer DEFAULT 1, lock_timeout interval DEFAULT '00:05:00'::interval, queues text[] DEFAULT NULL::text[]) RETURNS SETOF public.jobq_jobs
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_bitmapscan TO 'off'
    AS $$
BEGIN
    IF worker_id IS NULL OR worker_id !~ '\S' THEN
        RAISE EXCEPTION 'jobq_dequeue: worker_id must be a non-blank string'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF batch_size IS NULL OR batch_size < 1 THEN
        RAISE EXCEPTION 'jobq_dequeue: batch_size must be at least 1, got %',
            coalesce(batch_size::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF lock_timeout IS NULL OR lock_timeout <= interval '0' THEN
        RAISE EXCEPTION 'jobq_dequeue: lock_timeout must be a positive interval, got %',
            coalesce(lock_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- 1. Take back stale claims within the caller's filters: their worker is presumed dead.
    --    Each is recorded in errors (which worker lost it). One that has attempts left goes
    --    back to pending with its original available_at, so that step 2 ranks it like any
    --    other pending job; one that has used all its attempts is not run again: dead_letter.
    --    The index jobq_jobs_locked_idx makes this a short range scan that finds nothing in
    --    the common case.
    WITH stale AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.status = 'processing'
          AND j.locked_at < now() - least(jobq_dequeue.lock_timeout, interval '1000 years')
          AND (jobq_dequeue.job_types IS NULL OR j.job_type = ANY (jobq_dequeue.job_types))
          AND (jobq_dequeue.queues IS NULL OR j.queue = ANY (jobq_dequeue.queues))
        ORDER BY j.locked_at
        LIMIT jobq_dequeue.batch_size
        FOR UPDATE SKIP LOCKED
    )

    UPDATE jobq_jobs AS j
    SET
        status = CASE WHEN j.attempts >= j.max_attempts THEN 'dead_letter' ELSE 'pending' END,
        last_error = format(
            'lock expired: worker %s held attempt %s since %s (lock_timeout %s)',
            j.locked_by, j.attempts, j.locked_at, jobq_dequeue.lock_timeout
        ),
        errors = j.errors || jsonb_build_object(
            'attempt', j.attempts,
            'at', now(),
            'worker', j.locked_by,
            'error', format(
                'lock expired: worker %s held attempt %s since %s (lock_timeout %s)',
                j.locked_by, j.attempts, j.locked_at, jobq_dequeue.lock_timeout
            ),
            'kind', 'lock_expired'
        ),
        finished_at = CASE WHEN j.attempts >= j.max_attempts THEN now() END,
        locked_at = NULL,
        locked_by = NULL,
        updated_at = now()
    FROM stale
    WHERE j.id = stale.id;

    -- 2. The claim, in one statement: the candidates (in the order the partial index
    --    jobq_jobs_claim_idx gives) are locked with SKIP LOCKED in a MATERIALIZED CTE, so the
    --    LIMIT is applied once and no plan can lock or return more than batch_size rows;
    --    the UPDATE is joined to them.
    RETURN QUERY
    WITH candidates AS MATERIALIZED (
        SELECT j.id
        FROM jobq_jobs AS j
        WHERE j.status = 'pending'
          AND j.available_at <= now()
          AND (jobq_dequeue.job_types IS NULL OR j.job_type = ANY (jobq_dequeue.job_types))
          AND (jobq_dequeue.queues IS NULL OR j.queue = ANY (jobq_dequeue.queues))
        ORDER BY j.priority DESC, j.available_at ASC, j.id ASC
        LIMIT jobq_dequeue.batch_size
        FOR UPDATE SKIP LOCKED
    ),

    claimed AS (
        UPDATE jobq_jobs AS j
        SET
            status = 'processing',
            attempts = j.attempts + 1,
            locked_at = now(),
            locked_by = jobq_dequeue.worker_id,
            updated_at = now()
        FROM candidates AS c
        WHERE j.id = c.id
        RETURNING j.*
    )

    SELECT c.*
    FROM claimed AS c
    ORDER BY c.priority DESC, c.available_at ASC, c.id ASC;
END;
$$;

COMMENT ON FUNCTION public.jobq_dequeue(worker_id text, job_types text[], batch_size integer, lock_timeout interval, queues text[]) IS 'Claims up to batch_size jobs for a worker and returns them: status processing, locked_at
now, locked_by the worker, attempts + 1. Candidates: pending jobs whose available_at has
come, and processing jobs whose lock is older than lock_timeout (their worker is presumed
dead): such a takeover is recorded in errors (kind lock_expired, the worker that lost it),
and a stale job with no attempts left goes to dead_letter instead of running again.
Runs with enable_bitmapscan = off (for this function only; the caller keeps its own setting):
the claim is then an index scan in claim order that stops after batch_size rows and marks the
dead index entries left by earlier claims as it passes them, instead of a bitmap scan and sort
that visits every dead entry on every call until VACUUM removes them.
Arguments: worker_id (non-blank: who claims), job_types (NULL = all), batch_size (>= 1),
lock_timeout (> 0; beyond 1000 years it means never), queues (NULL = all).
Result: the claimed rows of jobq_jobs, highest priority first, then available_at, then id.
Errors: 22023 blank worker_id, batch_size < 1, lock_timeout <= 0.
Concurrency: FOR UPDATE SKIP LOCKED: it never waits, concurrent callers never receive the
same job, and one call never locks or claims more than batch_size pending rows.';

CREATE FUNCTION public.jobq_enqueue(job_type text, payload jsonb DEFAULT '{}'::jsonb, idempotency_key text DEFAULT NULL::text, max_attempts integer DEFAULT 5, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, priority integer DEFAULT 0, queue text DEFAULT 'default'::text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_error text;
    v_size integer;
    v_limit integer;
    v_id uuid;
BEGIN
    v_error := jobq__job_argument_problem(
        jobq_enqueue.job_type, jobq_enqueue.queue, jobq_enqueue.idempotency_key,
        jobq_enqueue.max_attempts, jobq_enqueue.priority
    );
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_enqueue: %', v_error
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_enqueue.payload IS NULL THEN
        RAISE EXCEPTION 'jobq_enqueue: payload must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass ''{}'' for a job without arguments.';
    END IF;
    IF NOT isfinite(jobq_enqueue.run_at) THEN
        RAISE EXCEPTION 'jobq_enqueue: run_at must be a finite time, got %', jobq_enqueue.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    v_size := pg_column_size(jobq_enqueue.payload);
    SELECT s.max_payload_bytes INTO v_limit FROM jobq_settings AS s;
    IF v_size > v_limit THEN
        RAISE EXCEPTION 'jobq_enqueue: payload is % bytes, the limit is % bytes', v_size, v_limit
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Store large data elsewhere and pass a reference; an admin can change '
                      || 'the limit with jobq_configure(max_payload_bytes => ...).';
    END IF;

    IF jobq_enqueue.idempotency_key IS NULL THEN
        INSERT INTO jobq_jobs AS j (queue, job_type, payload, max_attempts, available_at, priority)
        VALUES (
            jobq_enqueue.queue, jobq_enqueue.job_type, jobq_enqueue.payload,
            jobq_enqueue.max_attempts, coalesce(jobq_enqueue.run_at, now()), jobq_enqueue.priority
        )
        RETURNING j.id INTO v_id;
    ELSE
        -- Race-free dedupe: ON CONFLICT DO NOTHING waits for a concurrent inserter of the same
        -- key. If it committed, we insert nothing and read its row with the fresh snapshot of
        -- the next statement; if it rolled back, our insert goes through. The loop covers the
        -- (rare) case of the row being deleted between the two statements.
        LOOP
            INSERT INTO jobq_jobs AS j (
                queue, job_type, payload, idempotency_key, max_attempts, available_at, priority
            )
            VALUES (
                jobq_enqueue.queue, jobq_enqueue.job_type, jobq_enqueue.payload,
                jobq_enqueue.idempotency_key, jobq_enqueue.max_attempts,
                coalesce(jobq_enqueue.run_at, now()), jobq_enqueue.priority
            )
            ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING j.id INTO v_id;
            EXIT WHEN v_id IS NOT NULL;

            SELECT j.id INTO v_id
            FROM jobq_jobs AS j
            WHERE j.idempotency_key = jobq_enqueue.idempotency_key;
            IF v_id IS NOT NULL THEN
                -- A duplicate: nothing was added, so nobody needs waking.
                RETURN v_id;
            END IF;
        END LOOP;
    END IF;

    IF jobq_enqueue.run_at IS NULL OR jobq_enqueue.run_at <= now() THEN
        -- The payload of the notification is the queue name only: any role may LISTEN.
        -- Identical notifications in one transaction are folded into one by PostgreSQL.
        PERFORM pg_notify('jobq', jobq_enqueue.queue);
    END IF;
    RETURN v_id;
END;
$$;

COMMENT ON FUNCTION public.jobq_enqueue(job_type text, payload jsonb, idempotency_key text, max_attempts integer, run_at timestamp with time zone, priority integer, queue text) IS 'Adds a pending job.
Arguments: job_type (handler name, 1-200 chars), payload (jsonb, not NULL, at most
max_payload_bytes, default 1 MiB), idempotency_key (NULL or 1-1000 chars), max_attempts
(1-1000), run_at (not claimed before; NULL = now; must be finite), priority (-1000000..1000000,
higher runs first), queue (1-200 chars).
Result: the new job''s id; if a job with the same idempotency_key exists, in any status, nothing
is added or changed and that job''s id is returned.
Errors: 22023 bad job_type/queue/idempotency_key/max_attempts/priority/run_at, 22004 NULL
payload, 54000 payload too large.
Concurrency: N sessions enqueuing one key at once make one row and all get its id. Runs in the
caller''s transaction (a rollback removes the job). NOTIFY jobq, payload the queue name, when
the job is available now (delivered at commit).';

CREATE FUNCTION public.jobq_enqueue_many(jobs jsonb) RETURNS TABLE(ord integer, id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $_$
DECLARE
    v_bad record;
    v_limit integer;
    v_ords integer[];
    v_ids uuid[];
    v_keys text[];
    v_missing integer;
BEGIN
    IF jobs IS NULL OR jsonb_typeof(jobs) <> 'array' THEN
        RAISE EXCEPTION 'jobq_enqueue_many: jobs must be a JSON array of job objects, got %',
            coalesce(jsonb_typeof(jobs), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT s.max_payload_bytes INTO v_limit FROM jobq_settings AS s;

    -- One pass over the elements finds the first bad one: an object, known keys only, each
    -- value of the right JSON type and within the bounds of jobq_enqueue, and the payload
    -- within the size limit.
    SELECT e.ord, e.problem, e.payload_size INTO v_bad
    FROM (
        SELECT
            x.ord::integer AS ord,
            pg_column_size(x.elem -> 'payload') AS payload_size,
            CASE
                WHEN jsonb_typeof(x.elem) <> 'object'
                    THEN format('is a JSON %s, not an object', jsonb_typeof(x.elem))
                WHEN x.elem - ARRAY[
                    'job_type', 'payload', 'idempotency_key', 'max_attempts', 'run_at',
                    'priority', 'queue'
                ] <> '{}'::jsonb
                    THEN format(
                        'has unknown key(s) %s; allowed: job_type, payload, idempotency_key, '
                        || 'max_attempts, run_at, priority, queue',
                        (SELECT string_agg(quote_ident(k.key), ', ')
                         FROM jsonb_object_keys(x.elem) AS k (key)
                         WHERE k.key NOT IN (
                             'job_type', 'payload', 'idempotency_key', 'max_attempts',
                             'run_at', 'priority', 'queue'
                         ))
                    )
                WHEN jsonb_typeof(x.elem -> 'job_type') IS DISTINCT FROM 'string'
                    THEN 'job_type must be a non-blank string'
                WHEN jsonb_typeof(x.elem -> 'payload') = 'null'
                    THEN 'payload must not be null'
                WHEN coalesce(jsonb_typeof(x.elem -> 'idempotency_key'), 'null')
                    NOT IN ('string', 'null')
                    THEN 'idempotency_key must be a string or null'
                WHEN coalesce(jsonb_typeof(x.elem -> 'queue'), 'string') <> 'string'
                    THEN 'queue must be a non-blank string'
                WHEN coalesce(jsonb_typeof(x.elem -> 'run_at'), 'null') NOT IN ('string', 'null')
                    OR (x.elem ->> 'run_at') !~ (
                        '^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?'
                        || '(Z|z|[+-]\d{2}(:?\d{2})?)$'
                    )
                    THEN format(
                        'run_at must be an ISO 8601 time with a UTC offset '
                        || '(2030-01-31T08:00:00+01:00), or null; got %s',
                        x.elem -> 'run_at'
                    )
                WHEN coalesce(jsonb_typeof(x.elem -> 'max_attempts'), 'number') <> 'number'
                    OR (x.elem ->> 'max_attempts') !~ '^-?[0-9]{1,9}$'
                    THEN 'max_attempts must be an integer'
                WHEN coalesce(jsonb_typeof(x.elem -> 'priority'), 'number') <> 'number'
                    OR (x.elem ->> 'priority') !~ '^-?[0-9]{1,9}$'
                    THEN 'priority must be an integer'
                ELSE jobq__job_argument_problem(
                    x.elem ->> 'job_type',
                    coalesce(x.elem ->> 'queue', 'default'),
                    x.elem ->> 'idempotency_key',
                    coalesce((x.elem ->> 'max_attempts')::integer, 5),
                    coalesce((x.elem ->> 'priority')::integer, 0)
                )
            END AS problem
        FROM jsonb_array_elements(jobs) WITH ORDINALITY AS x (elem, ord)
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

    -- Insert. Ids are drawn before the insert so that each element keeps its id in input
    -- order; of several elements with one idempotency key only the first is inserted, and a
    -- key that already exists inserts nothing (ON CONFLICT DO NOTHING waits for a concurrent
    -- inserter of that key, as in jobq_enqueue).
    BEGIN
        IF NOT jsonb_path_exists(jobs, '$[*].idempotency_key ? (@ != null)') THEN
            -- No element has a key: every element is inserted, nothing to deduplicate or
            -- look up.
            RETURN QUERY
            WITH parsed AS MATERIALIZED (
                SELECT
                    x.ord::integer AS ord,
                    gen_random_uuid() AS new_id,
                    x.elem ->> 'job_type' AS job_type,
                    coalesce(x.elem -> 'payload', '{}'::jsonb) AS payload,
                    coalesce((x.elem ->> 'max_attempts')::integer, 5) AS max_attempts,
                    coalesce((x.elem ->> 'run_at')::timestamptz, now()) AS available_at,
                    coalesce((x.elem ->> 'priority')::integer, 0) AS priority,
                    coalesce(x.elem ->> 'queue', 'default') AS queue
                FROM jsonb_array_elements(jobs) WITH ORDINALITY AS x (elem, ord)
            ),

            inserted AS (
                INSERT INTO jobq_jobs AS j (
                    id, queue, job_type, payload, max_attempts, available_at, priority
                )
                SELECT
                    p.new_id, p.queue, p.job_type, p.payload, p.max_attempts,
                    p.available_at, p.priority
                FROM parsed AS p
                ORDER BY p.ord
                RETURNING j.queue, j.available_at
            ),

            woken AS (
                SELECT count(pg_notify('jobq', q.queue)) AS n
                FROM (
                    SELECT DISTINCT w.queue FROM inserted AS w WHERE w.available_at <= now()
                ) AS q
            )

            SELECT p.ord, p.new_id
            FROM parsed AS p
            CROSS JOIN woken
            ORDER BY p.ord;
            RETURN;
        END IF;

        WITH parsed AS MATERIALIZED (
            SELECT
                x.ord::integer AS ord,
                gen_random_uuid() AS new_id,
                x.elem ->> 'job_type' AS job_type,
                coalesce(x.elem -> 'payload', '{}'::jsonb) AS payload,
                x.elem ->> 'idempotency_key' AS idempotency_key,
                coalesce((x.elem ->> 'max_attempts')::integer, 5) AS max_attempts,
                coalesce((x.elem ->> 'run_at')::timestamptz, now()) AS available_at,
                coalesce((x.elem ->> 'priority')::integer, 0) AS priority,
                coalesce(x.elem ->> 'queue', 'default') AS queue
            FROM jsonb_array_elements(jobs) WITH ORDINALITY AS x (elem, ord)
        ),

        -- first_id: the id of the first element with the same key (its own id without one).
        input AS MATERIALIZED (
            SELECT
                p.*,
                CASE
                    WHEN p.idempotency_key IS NULL THEN p.new_id
                    ELSE first_value(p.new_id) OVER (
                        PARTITION BY p.idempotency_key ORDER BY p.ord
                    )
                END AS first_id
            FROM parsed AS p
        ),

        inserted AS (
            INSERT INTO jobq_jobs AS j (
                id, queue, job_type, payload, idempotency_key, max_attempts, available_at,
                priority
            )
            SELECT
                i.new_id, i.queue, i.job_type, i.payload, i.idempotency_key, i.max_attempts,
                i.available_at, i.priority
            FROM input AS i
            WHERE i.new_id = i.first_id
            ORDER BY i.ord
            ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING j.id, j.queue, j.available_at
        ),

        woken AS (
            SELECT count(pg_notify('jobq', q.queue)) AS n
            FROM (
                SELECT DISTINCT w.queue FROM inserted AS w WHERE w.available_at <= now()
            ) AS q
        )

        SELECT
            array_agg(i.ord ORDER BY i.ord),
            array_agg(ins.id ORDER BY i.ord),
            array_agg(i.idempotency_key ORDER BY i.ord)
        INTO v_ords, v_ids, v_keys
        FROM input AS i
        LEFT JOIN inserted AS ins ON ins.id = i.first_id
        CROSS JOIN woken;
    EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format THEN
        -- A run_at of the right shape but no real time (30 February): name the element.
        FOR v_bad IN
            SELECT x.ord::integer AS ord, x.elem ->> 'run_at' AS run_at
            FROM jsonb_array_elements(jobs) WITH ORDINALITY AS x (elem, ord)
            WHERE x.elem ->> 'run_at' IS NOT NULL
            ORDER BY x.ord
        LOOP
            BEGIN
                PERFORM v_bad.run_at::timestamptz;
            EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format THEN
                RAISE EXCEPTION
                    'jobq_enqueue_many: jobs element % (counting from 1): run_at % is not a '
                    'real time', v_bad.ord, quote_literal(v_bad.run_at)
                    USING ERRCODE = 'invalid_parameter_value';
            END;
        END LOOP;
        RAISE;  -- not a run_at after all
    END;

    IF v_ords IS NULL THEN
        RETURN;  -- an empty array
    END IF;

    -- Elements whose key already existed: read the existing ids with the fresh snapshot of
    -- this statement (it sees rows that concurrent enqueuers committed meanwhile).
    LOOP
        SELECT
            array_agg(coalesce(r.id, j.id) ORDER BY r.ord),
            (count(*) FILTER (WHERE coalesce(r.id, j.id) IS NULL))::integer
        INTO v_ids, v_missing
        FROM unnest(v_ords, v_ids, v_keys) AS r (ord, id, key)
        LEFT JOIN jobq_jobs AS j ON r.id IS NULL AND j.idempotency_key = r.key;
        EXIT WHEN v_missing = 0;

        -- The row of a key vanished between our insert and our read (pruned): enqueue those
        -- elements again, one by one, through jobq_enqueue's own loop.
        SELECT array_agg(
            CASE WHEN r.id IS NOT NULL THEN r.id ELSE jobq_enqueue(
                job_type => x.elem ->> 'job_type',
                payload => coalesce(x.elem -> 'payload', '{}'::jsonb),
                idempotency_key => x.elem ->> 'idempotency_key',
                max_attempts => coalesce((x.elem ->> 'max_attempts')::integer, 5),
                run_at => (x.elem ->> 'run_at')::timestamptz,
                priority => coalesce((x.elem ->> 'priority')::integer, 0),
                queue => coalesce(x.elem ->> 'queue', 'default')
            ) END ORDER BY r.ord)
        INTO v_ids
        FROM unnest(v_ords, v_ids) AS r (ord, id)
        INNER JOIN LATERAL (SELECT jobs -> (r.ord - 1) AS elem) AS x ON true;
    END LOOP;

    RETURN QUERY SELECT r.ord, r.id FROM unnest(v_ords, v_ids) AS r (ord, id) ORDER BY r.ord;
END;
$_$;

COMMENT ON FUNCTION public.jobq_enqueue_many(jobs jsonb) IS 'Adds many jobs in one statement, each with jobq_enqueue''s semantics: an existing
idempotency_key returns the existing id; two elements with the same key get the same id (the
first is inserted). Built for 10,000+ jobs per call.
Arguments: jobs (a JSON array of objects with the keys of jobq_enqueue: job_type required;
payload, idempotency_key, max_attempts, run_at as ISO 8601 text with an offset, priority,
queue optional).
Result: one row per element, (ord, id), ord counting from 1 in input order.
Errors: 22023 when jobs is not an array, an element is not an object, has an unknown key or a
bad value (the message names the element, counting from 1 like ord, and the key); 54000 a
payload too large. Nothing is inserted when any element is bad.
Concurrency: as jobq_enqueue; one NOTIFY jobq per queue that got jobs available now.';

CREATE FUNCTION public.jobq_fail(job_id uuid, worker_id text, error text, retry boolean DEFAULT true, backoff interval DEFAULT '00:00:10'::interval, attempt integer DEFAULT NULL::integer) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_status text;
    v_queue text;
    v_available_at timestamptz;
BEGIN
    IF retry IS NULL THEN
        RAISE EXCEPTION 'jobq_fail: retry must be true or false, not NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF backoff IS NULL OR backoff < interval '0' THEN
        RAISE EXCEPTION 'jobq_fail: backoff must be an interval >= 0, got %',
            coalesce(backoff::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    UPDATE jobq_jobs AS j
    SET
        status = CASE
            WHEN NOT jobq_fail.retry THEN 'failed'
            WHEN j.attempts >= j.max_attempts THEN 'dead_letter'
            ELSE 'pending'
        END,
        available_at = CASE
            WHEN jobq_fail.retry AND j.attempts < j.max_attempts
                THEN now() + jobq__backoff(j.attempts, jobq_fail.backoff)
            ELSE j.available_at
        END,
        finished_at = CASE
            WHEN jobq_fail.retry AND j.attempts < j.max_attempts THEN NULL
            ELSE now()
        END,
        last_error = coalesce(jobq_fail.error, ''),
        errors = j.errors || jsonb_build_object(
            'attempt', j.attempts,
            'at', now(),
            'worker', j.locked_by,
            'error', coalesce(jobq_fail.error, '')
        ),
        locked_at = NULL,
        locked_by = NULL,
        updated_at = now()
    -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
    -- test would let the planner scan jobq_jobs_locked_idx instead of the primary key.
    WHERE j.id = jobq_fail.job_id
      AND j.locked_by = jobq_fail.worker_id
      AND (jobq_fail.attempt IS NULL OR j.attempts = jobq_fail.attempt)
    RETURNING j.status, j.queue, j.available_at INTO v_status, v_queue, v_available_at;
    IF v_status = 'pending' AND v_available_at <= now() THEN
        PERFORM pg_notify('jobq', v_queue);  -- a retry without backoff: wake a worker
    END IF;
    RETURN v_status;
END;
$$;

COMMENT ON FUNCTION public.jobq_fail(job_id uuid, worker_id text, error text, retry boolean, backoff interval, attempt integer) IS 'Records a failed attempt of a job while the worker holds its claim: last_error, and one
object {attempt, at, worker, error} appended to errors. With retry and attempts left: pending
again, available after attempts × backoff (arithmetic, capped at 365 days). With no attempts
left: dead_letter. With retry => false: failed.
Arguments: job_id (the job), worker_id (the worker that claimed it), error (the error text;
NULL is stored as an empty text), retry (false: a permanent failure), backoff (>= 0, the delay
per attempt), attempt (NULL = any; else only the claim of that attempt counts).
Result: the new status, or NULL when the claim is not held (nothing changes then).
Errors: 22023 NULL retry, NULL or negative backoff.
Concurrency: the row lock orders it against a concurrent takeover, as jobq_complete. NOTIFY
jobq when the job is available again at once (backoff 0).';

CREATE FUNCTION public.jobq_fail_many(job_ids uuid[], worker_id text, errors text[], retries boolean[] DEFAULT NULL::boolean[], backoffs interval[] DEFAULT NULL::interval[], attempts integer[] DEFAULT NULL::integer[]) RETURNS TABLE(ord integer, job_id uuid, status text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
    v_count integer := coalesce(pg_catalog.cardinality(jobq_fail_many.job_ids), 0);
    v_bad bigint;
    v_ords bigint[];
    v_statuses text[];
    v_wake text[];
BEGIN
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
        SELECT DISTINCT ON (f.job_id) f.job_id, f.error, f.retry, f.backoff, f.attempt, f.i
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
                WHEN NOT d.retry THEN 'failed'
                WHEN j.attempts >= j.max_attempts THEN 'dead_letter'
                ELSE 'pending'
            END,
            available_at = CASE
                WHEN d.retry AND j.attempts < j.max_attempts
                    THEN pg_catalog.now() + jobq__backoff(j.attempts, d.backoff)
                ELSE j.available_at
            END,
            finished_at = CASE
                WHEN d.retry AND j.attempts < j.max_attempts THEN NULL
                ELSE pg_catalog.now()
            END,
            last_error = coalesce(d.error, ''),
            errors = j.errors || pg_catalog.jsonb_build_object(
                'attempt', j.attempts,
                'at', pg_catalog.now(),
                'worker', j.locked_by,
                'error', coalesce(d.error, '')
            ),
            locked_at = NULL,
            locked_by = NULL,
            updated_at = pg_catalog.now()
        FROM d
        WHERE j.id = d.job_id
          AND j.locked_by = jobq_fail_many.worker_id
          AND (d.attempt IS NULL OR j.attempts = d.attempt)
        RETURNING d.i, j.status, j.queue, j.available_at
    )

    SELECT
        pg_catalog.array_agg(x.i),
        pg_catalog.array_agg(x.status),
        pg_catalog.array_agg(DISTINCT x.queue) FILTER (
            WHERE x.status = 'pending' AND x.available_at <= pg_catalog.now()
        )
    INTO v_ords, v_statuses, v_wake
    FROM failed AS x;

    -- Retries without backoff are available at once: wake a worker of each such queue.
    PERFORM pg_catalog.pg_notify('jobq', q.queue) FROM pg_catalog.unnest(v_wake) AS q (queue);

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
once, for its first element. Runs with enable_seqscan = off (for this function only; the
caller keeps its own setting): each job is found by its primary key whatever the statistics
say.
Arguments: job_ids (the jobs), worker_id (the worker that claimed them), errors (one error
text per job, same order; a NULL element is stored as an empty text), retries (one flag per
job; NULL = all true), backoffs (one interval >= 0 per job; NULL = all 10 seconds), attempts
(one claim attempt per job; NULL = any, and a NULL element does not fence its job).
Result: one row per element of job_ids, in their order: ord (from 1), job_id, and status, the
new status (pending, dead_letter or failed) or NULL when the claim is not held (nothing changes
for that job).
Errors: 22023 for a NULL errors array, when errors, retries, backoffs or attempts differ in
length from job_ids, or for a NULL retry or a NULL or negative backoff (naming the element);
nothing changes then.
Concurrency: as jobq_fail, job by job. It waits for the rows it changes: do not send two calls
over the same jobs at once. One NOTIFY jobq per queue that got a job back available now.';

CREATE FUNCTION public.jobq_health(stuck_after interval DEFAULT '01:00:00'::interval, max_pending_age interval DEFAULT '00:15:00'::interval, max_transaction_age interval DEFAULT '00:05:00'::interval) RETURNS TABLE(check_name text, queue text, severity text, value double precision, detail text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_table regclass := 'jobq_jobs'::regclass;
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
    -- Beyond 1000 years an interval means never (and cannot overflow now() - interval).
    stuck_after := least(stuck_after, interval '1000 years');
    max_pending_age := least(max_pending_age, interval '1000 years');
    max_transaction_age := least(max_transaction_age, interval '1000 years');

    -- Jobs whose claim has not been renewed for stuck_after: their worker is dead or hung
    -- and no worker with a shorter lock_timeout has taken them back.
    RETURN QUERY
    SELECT
        'stuck_processing'::text, NULL::text,
        CASE WHEN count(*) > 0 THEN 'warning' ELSE 'ok' END,
        count(*)::double precision,
        format('%s job(s) processing with a lock older than %s', count(*), stuck_after)
    FROM jobq_jobs AS j
    WHERE j.status = 'processing' AND j.locked_at < now() - stuck_after;

    -- Per queue: how long the oldest job available now has waited.
    RETURN QUERY
    SELECT
        'oldest_pending_age'::text, j.queue,
        CASE WHEN now() - min(j.available_at) > max_pending_age THEN 'warning' ELSE 'ok' END,
        extract(epoch FROM now() - min(j.available_at))::double precision,
        format('%s job(s) available, the oldest waiting for %s',
               count(*), date_trunc('second', now() - min(j.available_at)))
    FROM jobq_jobs AS j
    WHERE j.status = 'pending' AND j.available_at <= now()
    GROUP BY j.queue;

    RETURN QUERY
    SELECT
        'dead_letters'::text, NULL::text,
        CASE WHEN count(*) > 0 THEN 'warning' ELSE 'ok' END,
        count(*)::double precision,
        format('%s job(s) in dead_letter: see jobq dead-letter list', count(*))
    FROM jobq_jobs AS j
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
        format('%s dead / %s live rows; last autovacuum %s, last vacuum %s',
               s.n_dead_tup, s.n_live_tup,
               coalesce(s.last_autovacuum::text, 'never'), coalesce(s.last_vacuum::text, 'never'))
    FROM pg_stat_user_tables AS s
    WHERE s.relid = v_table;

    -- Sessions idle in a transaction, and the oldest transaction holding back VACUUM.
    RETURN QUERY
    SELECT
        'idle_in_transaction'::text, NULL::text,
        CASE WHEN count(*) > 0 THEN 'warning' ELSE 'ok' END,
        count(*)::double precision,
        format('%s session(s) idle in transaction for more than %s', count(*),
               max_transaction_age)
    FROM pg_stat_activity AS a
    WHERE a.state LIKE 'idle in transaction%'
      AND a.state_change < now() - max_transaction_age;

    RETURN QUERY
    SELECT
        'oldest_transaction'::text, NULL::text,
        CASE
            WHEN coalesce(max(now() - a.xact_start), interval '0') > max_transaction_age
                THEN 'warning'
            ELSE 'ok'
        END,
        coalesce(extract(epoch FROM max(now() - a.xact_start)), 0)::double precision,
        format('the oldest transaction holding back VACUUM is %s old (pid %s)',
               coalesce(date_trunc('second', max(now() - a.xact_start))::text, '0'),
               coalesce((array_agg(a.pid ORDER BY a.xact_start))[1]::text, '-'))
    FROM pg_stat_activity AS a
    WHERE a.backend_xmin IS NOT NULL
      AND a.pid <> pg_backend_pid()
      AND a.xact_start IS NOT NULL;
END;
$$;

COMMENT ON FUNCTION public.jobq_health(stuck_after interval, max_pending_age interval, max_transaction_age interval) IS 'Admin. Health findings of this queue, one row per check (and per queue for
oldest_pending_age). Checks: stuck_processing (locks older than stuck_after),
oldest_pending_age (per queue, against max_pending_age), dead_letters, dead_tuples of
jobq_jobs with its last (auto)vacuum, idle_in_transaction and oldest_transaction (against
max_transaction_age: such sessions stop VACUUM from cleaning the queue). See
docs/operations.md for what to do about each.
Arguments: stuck_after (a claim older than this is stuck), max_pending_age (the oldest
pending job may wait this long), max_transaction_age (the longest transaction or idle
session tolerated).
Result: rows (check_name, queue, severity ok or warning, value a number, detail a sentence).
Errors: 22023 a NULL or non-positive interval.';

CREATE FUNCTION public.jobq_heartbeat(worker_id text, job_ids uuid[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_renewed integer;
BEGIN
    -- The inner SELECT locks the rows that the worker holds and nobody else has locked, and
    -- is evaluated once (an InitPlan); the UPDATE then renews exactly those. Both find the
    -- rows by the primary key (no status test: locked_by implies processing).
    UPDATE jobq_jobs AS j
    SET locked_at = now()
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

COMMENT ON FUNCTION public.jobq_heartbeat(worker_id text, job_ids uuid[]) IS 'Renews locked_at (to now) of the jobs that the worker still holds, so that a long job of a
live worker is never taken over. Never waits: a held job whose row another transaction has
locked at that moment (an acknowledgement in flight, a takeover, an open UPDATE) is skipped
this time.
Arguments: worker_id (the worker that claimed them), job_ids (the jobs).
Result: how many claims were renewed; a smaller number than asked means some claims are lost
or were being acknowledged at that moment.
Errors: none.
Concurrency: it cannot deadlock with the same worker''s jobq_complete_many, jobq_fail_many or
jobq_release on another connection (it skips the rows they hold).';

CREATE FUNCTION public.jobq_list_jobs(statuses text[] DEFAULT NULL::text[], job_type text DEFAULT NULL::text, queue text DEFAULT NULL::text, max_rows integer DEFAULT 100) RETURNS SETOF public.jobq_jobs
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_bad text;
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RAISE EXCEPTION 'jobq_list_jobs: max_rows must be at least 1, got %',
            coalesce(max_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT s INTO v_bad FROM unnest(statuses) AS s
    WHERE s IS NULL OR s <> ALL (jobq__statuses())
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'jobq_list_jobs: statuses contains %, which is not a status',
            coalesce(quote_literal(v_bad), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Statuses: ' || pg_catalog.array_to_string(jobq__statuses(), ', ') || '.';
    END IF;

    RETURN QUERY
    SELECT j.*
    FROM jobq_jobs AS j
    WHERE (jobq_list_jobs.statuses IS NULL OR j.status = ANY (jobq_list_jobs.statuses))
      AND (jobq_list_jobs.job_type IS NULL OR j.job_type = jobq_list_jobs.job_type)
      AND (jobq_list_jobs.queue IS NULL OR j.queue = jobq_list_jobs.queue)
    ORDER BY j.updated_at DESC, j.id
    LIMIT jobq_list_jobs.max_rows;
END;
$$;

COMMENT ON FUNCTION public.jobq_list_jobs(statuses text[], job_type text, queue text, max_rows integer) IS 'Admin. Lists jobs, most recently changed first. Shows payloads, so it is granted to
admins only.
Arguments: statuses (NULL = all), job_type (NULL = any), queue (NULL = any), max_rows (at
most this many rows, default 100).
Result: rows of jobq_jobs.
Errors: 22023 an unknown status, max_rows < 1.';

CREATE FUNCTION public.jobq_prune(older_than interval DEFAULT '7 days'::interval, statuses text[] DEFAULT '{succeeded}'::text[]) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_bad text;
    v_hint text;
    v_deleted bigint;
BEGIN
    IF older_than IS NULL OR older_than < interval '0' THEN
        RAISE EXCEPTION 'jobq_prune: older_than must be an interval >= 0, got %',
            coalesce(older_than::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_hint := 'Finished statuses: '
        || pg_catalog.array_to_string(jobq__statuses(finished => TRUE), ', ') || '.';
    IF statuses IS NULL OR cardinality(statuses) = 0 THEN
        RAISE EXCEPTION 'jobq_prune: statuses must name at least one finished status'
            USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
    END IF;
    SELECT s INTO v_bad FROM unnest(statuses) AS s
    WHERE s IS NULL OR s <> ALL (jobq__statuses(finished => TRUE))
    LIMIT 1;
    IF FOUND THEN
        IF v_bad = ANY (jobq__statuses(finished => FALSE)) THEN
            RAISE EXCEPTION 'jobq_prune: statuses may not include %: only finished jobs are pruned',
                quote_literal(v_bad)
                USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
        END IF;
        RAISE EXCEPTION 'jobq_prune: statuses contains %, which is not a status',
            coalesce(quote_literal(v_bad), 'NULL')
            USING ERRCODE = 'invalid_parameter_value', HINT = v_hint;
    END IF;

    DELETE FROM jobq_jobs AS j
    WHERE j.status = ANY (jobq_prune.statuses)
      AND j.finished_at < now() - least(jobq_prune.older_than, interval '1000 years');
    GET DIAGNOSTICS v_deleted = ROW_COUNT;
    RETURN v_deleted;
END;
$$;

COMMENT ON FUNCTION public.jobq_prune(older_than interval, statuses text[]) IS 'Deletes finished jobs that finished long enough ago.
Arguments: older_than (>= 0: jobs whose finished_at is older than this), statuses (finished
statuses only: succeeded, failed, dead_letter; default succeeded).
Result: how many jobs were deleted.
Errors: 22023 for pending or processing in statuses (refused), an unknown status, an empty
list, a NULL or negative older_than.';

CREATE FUNCTION public.jobq_release(job_ids uuid[], worker_id text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_released integer;
BEGIN
    UPDATE jobq_jobs AS j
    SET
        status = 'pending',
        available_at = now(),
        attempts = greatest(j.attempts - 1, 0),
        locked_at = NULL,
        locked_by = NULL,
        updated_at = now()
    -- No status test: locked_by implies processing (jobq_jobs_claim_check), and a status
    -- test would let the planner scan jobq_jobs_locked_idx instead of the primary key.
    WHERE j.id = ANY (jobq_release.job_ids)
      AND j.locked_by = jobq_release.worker_id;
    GET DIAGNOSTICS v_released = ROW_COUNT;
    IF v_released > 0 THEN
        PERFORM pg_notify('jobq', r.queue)
        FROM (
            SELECT DISTINCT j.queue FROM jobq_jobs AS j WHERE j.id = ANY (jobq_release.job_ids)
        ) AS r;
    END IF;
    RETURN v_released;
END;
$$;

COMMENT ON FUNCTION public.jobq_release(job_ids uuid[], worker_id text) IS 'Gives back jobs that the worker claimed but never started (a worker shutting down with
prefetched jobs): pending, available now, attempts - 1 (the claim is not counted), claim
cleared, no error recorded; other workers are woken (NOTIFY jobq). Jobs it does not hold are
left alone.
Arguments: job_ids (the jobs), worker_id (the worker that claimed them).
Result: how many jobs were released.
Errors: none.';

CREATE FUNCTION public.jobq_requeue_dead_letter(job_id uuid) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_queue text;
BEGIN
    UPDATE jobq_jobs AS j
    SET
        status = 'pending',
        available_at = now(),
        attempts = 0,
        locked_at = NULL,
        locked_by = NULL,
        finished_at = NULL,
        updated_at = now()
    WHERE j.id = jobq_requeue_dead_letter.job_id
      AND j.status IN ('dead_letter', 'failed')
    RETURNING j.queue INTO v_queue;
    IF v_queue IS NULL THEN
        RETURN false;
    END IF;
    PERFORM pg_notify('jobq', v_queue);
    RETURN true;
END;
$$;

COMMENT ON FUNCTION public.jobq_requeue_dead_letter(job_id uuid) IS 'Makes a dead_letter or failed job pending again: available now, attempts 0, claim
cleared, error history (last_error, errors) kept; wakes a worker (NOTIFY jobq).
Arguments: job_id (the job).
Result: true if it did; false for any other status or an unknown id (nothing changes then).
Errors: none.';

CREATE FUNCTION public.jobq_requeue_dead_letters(job_type text DEFAULT NULL::text, queue text DEFAULT NULL::text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_count integer;
    v_queues text[];
BEGIN
    WITH requeued AS (
        UPDATE jobq_jobs AS j
        SET
            status = 'pending',
            available_at = now(),
            attempts = 0,
            locked_at = NULL,
            locked_by = NULL,
            finished_at = NULL,
            updated_at = now()
        WHERE j.status IN ('dead_letter', 'failed')
          AND (jobq_requeue_dead_letters.job_type IS NULL
               OR j.job_type = jobq_requeue_dead_letters.job_type)
          AND (jobq_requeue_dead_letters.queue IS NULL
               OR j.queue = jobq_requeue_dead_letters.queue)
        RETURNING j.queue
    )

    SELECT count(*)::integer, array_agg(DISTINCT r.queue) INTO v_count, v_queues
    FROM requeued AS r;
    PERFORM pg_notify('jobq', q.queue) FROM unnest(v_queues) AS q (queue);
    RETURN v_count;
END;
$$;

COMMENT ON FUNCTION public.jobq_requeue_dead_letters(job_type text, queue text) IS 'Makes every dead_letter or failed job pending again, as jobq_requeue_dead_letter does,
in one statement, with one NOTIFY jobq per queue that got jobs back.
Arguments: job_type (NULL = any), queue (NULL = any).
Result: how many jobs were requeued.
Errors: none.';

CREATE FUNCTION public.jobq_stats() RETURNS TABLE(queue text, job_type text, status text, jobs bigint, oldest_available_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT j.queue, j.job_type, j.status, count(*) AS jobs, min(j.available_at)
    FROM jobq_jobs AS j
    GROUP BY j.queue, j.job_type, j.status
    ORDER BY j.queue, j.job_type, j.status
$$;

COMMENT ON FUNCTION public.jobq_stats() IS 'Counts jobs per (queue, job_type, status) present. Reads the whole table: for dashboards
and operators, not for a hot loop.
Arguments: none.
Result: rows (queue, job_type, status, jobs, oldest_available_at): how many jobs, and the
oldest available_at among them (for pending jobs: how long the oldest has been waiting).
Errors: none.';

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

CREATE TABLE public.jobq_settings (
    singleton boolean DEFAULT true NOT NULL,
    max_payload_bytes integer DEFAULT 1048576 NOT NULL,
    CONSTRAINT jobq_settings_max_payload_bytes_check CHECK ((max_payload_bytes > 0)),
    CONSTRAINT jobq_settings_singleton_check CHECK (singleton)
);

COMMENT ON TABLE public.jobq_settings IS 'Settings of this jobq installation, one row, so that each schema (tenant) has its own.
Changed only through jobq_configure(), admin only: a producer cannot raise its own limits.';

COMMENT ON COLUMN public.jobq_settings.singleton IS 'Always true: the key that keeps this table at one row.';

COMMENT ON COLUMN public.jobq_settings.max_payload_bytes IS 'The largest payload jobq_enqueue and jobq_enqueue_many accept, in bytes of jsonb (default
1048576, 1 MiB); larger ones are refused with 54000.';

COMMENT ON CONSTRAINT jobq_settings_max_payload_bytes_check ON public.jobq_settings IS 'The payload limit is positive.';

COMMENT ON CONSTRAINT jobq_settings_singleton_check ON public.jobq_settings IS 'singleton is true, so no second row can be added.';

ALTER TABLE ONLY public.jobq_jobs
    ADD CONSTRAINT jobq_jobs_pkey PRIMARY KEY (id);

COMMENT ON CONSTRAINT jobq_jobs_pkey ON public.jobq_jobs IS 'A job is identified by its id.';

ALTER TABLE ONLY public.jobq_migrations
    ADD CONSTRAINT jobq_migrations_pkey PRIMARY KEY (version);

COMMENT ON CONSTRAINT jobq_migrations_pkey ON public.jobq_migrations IS 'One record per migration or function file.';

ALTER TABLE ONLY public.jobq_settings
    ADD CONSTRAINT jobq_settings_pkey PRIMARY KEY (singleton);

COMMENT ON CONSTRAINT jobq_settings_pkey ON public.jobq_settings IS 'One row: singleton is its key.';

CREATE INDEX jobq_jobs_claim_idx ON public.jobq_jobs USING btree (priority DESC, available_at, id) WHERE (status = 'pending'::text);

COMMENT ON INDEX public.jobq_jobs_claim_idx IS 'The claim of jobq_dequeue: exactly its filter (pending) and its order (priority DESC,
available_at, id), so its scan stops after batch_size entries. Finished jobs are not in it,
so claims do not slow down as they pile up; future jobs sort after those available now
(same priority).';

CREATE INDEX jobq_jobs_failed_idx ON public.jobq_jobs USING btree (status, finished_at) WHERE (status = ANY (ARRAY['failed'::text, 'dead_letter'::text]));

COMMENT ON INDEX public.jobq_jobs_failed_idx IS 'Failed and dead-letter jobs, for operators: listing, health, requeue, pruning them.
Succeeded jobs are left out on purpose: a completion, the most frequent write of a queue,
then adds no entry here, and pruning succeeded jobs is an occasional scan of the table.';

CREATE UNIQUE INDEX jobq_jobs_idempotency_key_key ON public.jobq_jobs USING btree (idempotency_key) WHERE (idempotency_key IS NOT NULL);

COMMENT ON INDEX public.jobq_jobs_idempotency_key_key IS 'One job per idempotency_key. Partial (only non-NULL keys): NULLs never collide, and a job
without a key, the common case, costs no entry here, when inserted or on any update.';

CREATE INDEX jobq_jobs_locked_idx ON public.jobq_jobs USING btree (locked_at) WHERE (status = 'processing'::text);

COMMENT ON INDEX public.jobq_jobs_locked_idx IS 'Stale claims: processing jobs by the age of their lock, so that jobq_dequeue finds the
claims older than lock_timeout with a short range scan (usually empty).';

COMMENT ON INDEX public.jobq_jobs_pkey IS 'The primary key: jobq_complete, jobq_fail, jobq_heartbeat and jobq_release find their jobs
by id.';

COMMENT ON INDEX public.jobq_migrations_pkey IS 'The index of jobq_migrations_pkey.';

COMMENT ON INDEX public.jobq_settings_pkey IS 'The index of jobq_settings_pkey (one row).';

REVOKE ALL ON FUNCTION public.jobq__backoff(attempts integer, backoff interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__job_argument_problem(job_type text, queue text, idempotency_key text, max_attempts integer, priority integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq__statuses(finished boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_complete(job_id uuid, worker_id text, attempt integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_complete_many(job_ids uuid[], worker_id text, attempts integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_configure(max_payload_bytes integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_dequeue(worker_id text, job_types text[], batch_size integer, lock_timeout interval, queues text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_enqueue(job_type text, payload jsonb, idempotency_key text, max_attempts integer, run_at timestamp with time zone, priority integer, queue text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_enqueue_many(jobs jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_fail(job_id uuid, worker_id text, error text, retry boolean, backoff interval, attempt integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_fail_many(job_ids uuid[], worker_id text, errors text[], retries boolean[], backoffs interval[], attempts integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_health(stuck_after interval, max_pending_age interval, max_transaction_age interval) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_heartbeat(worker_id text, job_ids uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_list_jobs(statuses text[], job_type text, queue text, max_rows integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_prune(older_than interval, statuses text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_release(job_ids uuid[], worker_id text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_requeue_dead_letter(job_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_requeue_dead_letters(job_type text, queue text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.jobq_stats() FROM PUBLIC;
