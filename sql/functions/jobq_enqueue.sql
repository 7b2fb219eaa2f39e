-- jobq_enqueue: adds one pending job, in the caller's transaction, and returns its id; an
-- existing idempotency key of the same job type returns the existing job's id instead (see
-- the loop below for why that is race-free). A key is unique per job type (the unique index
-- is (job_type, idempotency_key)): a producer of one job type can neither read nor cancel the
-- job of another type by guessing its key. Wakes idle workers with a NOTIFY on the
-- installation's channel (jobq__channel) when the job is available now.
--
-- The validation is jobq__job_argument_problem's, shared with jobq_enqueue_many. The payload
-- limit is read from jobq_settings, so a producer cannot raise it for itself. limit_group and
-- limit_key (checked by jobq__limit_argument_problem) name the limit the job counts against.
-- depends_on makes it wait for other jobs (jobq__add_edges, docs/workflows.md): a job without
-- it runs no statement more than before.
--! levels: producer, worker, admin
--! replaces: jobq_enqueue(text, jsonb, text, integer, timestamptz, integer, text)
--! replaces: jobq_enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, text)

CREATE OR REPLACE FUNCTION jobq_enqueue(
    job_type text,
    payload jsonb DEFAULT '{}',
    idempotency_key text DEFAULT NULL,
    max_attempts integer DEFAULT 5,
    run_at timestamptz DEFAULT NULL,
    priority integer DEFAULT 0,
    queue text DEFAULT 'default',
    limit_group text DEFAULT NULL,
    limit_key text DEFAULT NULL,
    depends_on uuid[] DEFAULT NULL,
    on_dependency_failure text DEFAULT 'cancel'
) RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
-- In ON CONFLICT (job_type, idempotency_key) the names must mean the columns; every reference to a
-- parameter in this function is qualified (jobq_enqueue.idempotency_key).
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

COMMENT ON FUNCTION jobq_enqueue(
    text, jsonb, text, integer, timestamptz, integer, text, text, text, uuid[], text
) IS
'Adds a pending job.
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

REVOKE EXECUTE ON FUNCTION jobq_enqueue(
    text, jsonb, text, integer, timestamptz, integer, text, text, text, uuid[], text
) FROM PUBLIC;
