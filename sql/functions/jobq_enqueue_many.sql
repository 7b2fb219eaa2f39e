-- jobq_enqueue_many: adds many jobs in one statement, ids in input order, with jobq_enqueue's
-- semantics for each element. Built for 10,000+ jobs per call: one validation pass over the
-- array, one INSERT, no per-element lookup of keys (the first element of a key is found by a
-- window function), and a fast path for arrays without any idempotency key.
--! levels: producer, worker, admin

CREATE OR REPLACE FUNCTION jobq_enqueue_many(jobs jsonb) RETURNS TABLE (ord integer, id uuid)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_bad record;
    v_limit integer;
    v_ords integer[];
    v_ids uuid[];
    v_types text[];
    v_keys text[];
    v_missing integer;
    -- The transaction's time, as a value: Citus refuses now() in a CASE, a COALESCE,
    -- RETURNING or ON CONFLICT DO UPDATE; a value is the same for PostgreSQL.
    v_now CONSTANT timestamptz := pg_catalog.now();
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
                    'priority', 'queue', 'limit_group', 'limit_key'
                ] <> '{}'::jsonb
                    THEN pg_catalog.format(
                        'has unknown key(s) %s; allowed: job_type, payload, idempotency_key, '
                        'max_attempts, run_at, priority, queue, limit_group, limit_key',
                        (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(k.key), ', ')
                         FROM pg_catalog.jsonb_object_keys(x.elem) AS k (key)
                         WHERE k.key NOT IN (
                             'job_type', 'payload', 'idempotency_key', 'max_attempts',
                             'run_at', 'priority', 'queue', 'limit_group', 'limit_key'
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

    -- Insert. Ids are drawn before the insert so that each element keeps its id in input
    -- order; of several elements with one idempotency key only the first is inserted, and a
    -- key that already exists inserts nothing (ON CONFLICT DO NOTHING waits for a concurrent
    -- inserter of that key, as in jobq_enqueue).
    BEGIN
        IF NOT pg_catalog.jsonb_path_exists(jobs, '$[*].idempotency_key ? (@ != null)') THEN
            -- No element has a key: every element is inserted, nothing to deduplicate or
            -- look up.
            RETURN QUERY
            WITH parsed AS MATERIALIZED (
                SELECT
                    x.ord::integer AS ord,
                    jobq__uuid_v7() AS new_id,
                    x.elem ->> 'job_type' AS job_type,
                    coalesce(x.elem -> 'payload', '{}'::jsonb) AS payload,
                    coalesce((x.elem ->> 'max_attempts')::integer, 5) AS max_attempts,
                    coalesce((x.elem ->> 'run_at')::timestamptz, v_now) AS available_at,
                    coalesce((x.elem ->> 'priority')::integer, 0) AS priority,
                    coalesce(x.elem ->> 'queue', 'default') AS queue,
                    x.elem ->> 'limit_group' AS limit_group,
                    x.elem ->> 'limit_key' AS limit_key
                FROM pg_catalog.jsonb_array_elements(jobs) WITH ORDINALITY AS x (elem, ord)
            ),

            inserted AS (
                INSERT INTO jobq_jobs AS j (
                    id, queue, job_type, payload, max_attempts, available_at, priority, scheduled,
                    limit_group, limit_key
                )
                SELECT
                    p.new_id, p.queue, p.job_type, p.payload, p.max_attempts,
                    p.available_at, p.priority, p.available_at > v_now,
                    p.limit_group, p.limit_key
                FROM parsed AS p
                ORDER BY p.ord
                RETURNING j.queue, j.job_type, j.available_at
            ),

            woken AS (
                SELECT jobq__notify(pg_catalog.array_agg(DISTINCT w.queue)) AS n
                FROM inserted AS w
                WHERE w.available_at <= v_now
            ),

            counted AS MATERIALIZED (
                SELECT jobq__metrics_count(
                    'enqueued'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
                    NULL::text[], NULL::double precision[]
                ) AS n
                FROM inserted AS c
            )

            SELECT p.ord, p.new_id
            FROM parsed AS p
            CROSS JOIN woken
            CROSS JOIN counted
            ORDER BY p.ord;
            RETURN;
        END IF;

        WITH parsed AS MATERIALIZED (
            SELECT
                x.ord::integer AS ord,
                jobq__uuid_v7() AS new_id,
                x.elem ->> 'job_type' AS job_type,
                coalesce(x.elem -> 'payload', '{}'::jsonb) AS payload,
                x.elem ->> 'idempotency_key' AS idempotency_key,
                coalesce((x.elem ->> 'max_attempts')::integer, 5) AS max_attempts,
                coalesce((x.elem ->> 'run_at')::timestamptz, v_now) AS available_at,
                coalesce((x.elem ->> 'priority')::integer, 0) AS priority,
                coalesce(x.elem ->> 'queue', 'default') AS queue,
                x.elem ->> 'limit_group' AS limit_group,
                x.elem ->> 'limit_key' AS limit_key
            FROM pg_catalog.jsonb_array_elements(jobs) WITH ORDINALITY AS x (elem, ord)
        ),

        -- first_id: the id of the first element with the same job_type and key (its own id
        -- without a key).
        input AS MATERIALIZED (
            SELECT
                p.*,
                CASE
                    WHEN p.idempotency_key IS NULL THEN p.new_id
                    ELSE pg_catalog.first_value(p.new_id) OVER (
                        PARTITION BY p.job_type, p.idempotency_key ORDER BY p.ord
                    )
                END AS first_id
            FROM parsed AS p
        ),

        inserted AS (
            INSERT INTO jobq_jobs AS j (
                id, queue, job_type, payload, idempotency_key, max_attempts, available_at,
                priority, scheduled, limit_group, limit_key
            )
            SELECT
                i.new_id, i.queue, i.job_type, i.payload, i.idempotency_key, i.max_attempts,
                i.available_at, i.priority, i.available_at > v_now,
                i.limit_group, i.limit_key
            FROM input AS i
            WHERE i.new_id = i.first_id
            ORDER BY i.ord
            ON CONFLICT (job_type, idempotency_key) WHERE idempotency_key IS NOT NULL
            DO NOTHING
            RETURNING j.id, j.queue, j.job_type, j.available_at
        ),

        woken AS (
            SELECT jobq__notify(pg_catalog.array_agg(DISTINCT w.queue)) AS n
            FROM inserted AS w
            WHERE w.available_at <= v_now
        ),

        counted AS MATERIALIZED (
            SELECT jobq__metrics_count(
                'enqueued'::text, pg_catalog.array_agg(c.queue), pg_catalog.array_agg(c.job_type),
                NULL::text[], NULL::double precision[]
            ) AS n
            FROM inserted AS c
        )

        SELECT
            pg_catalog.array_agg(i.ord ORDER BY i.ord),
            pg_catalog.array_agg(ins.id ORDER BY i.ord),
            pg_catalog.array_agg(i.job_type ORDER BY i.ord),
            pg_catalog.array_agg(i.idempotency_key ORDER BY i.ord)
        INTO v_ords, v_ids, v_types, v_keys
        FROM input AS i
        LEFT JOIN inserted AS ins ON ins.id = i.first_id
        CROSS JOIN woken
        CROSS JOIN counted;
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

    IF v_ords IS NULL THEN
        RETURN;  -- an empty array
    END IF;

    -- Elements whose key already existed: read the existing ids with the fresh snapshot of
    -- this statement (it sees rows that concurrent enqueuers committed meanwhile).
    LOOP
        SELECT
            pg_catalog.array_agg(coalesce(r.id, j.id) ORDER BY r.ord),
            (pg_catalog.count(*) FILTER (WHERE coalesce(r.id, j.id) IS NULL))::integer
        INTO v_ids, v_missing
        -- ROWS FROM (unnest, ...): the multi-array unnest() shorthand exists only unqualified.
        FROM ROWS FROM (
            pg_catalog.unnest(v_ords), pg_catalog.unnest(v_ids), pg_catalog.unnest(v_types),
            pg_catalog.unnest(v_keys)
        ) AS r (ord, id, job_type, key)
        LEFT JOIN jobq_jobs AS j
            ON r.id IS NULL AND j.job_type = r.job_type AND j.idempotency_key = r.key;
        EXIT WHEN v_missing = 0;

        -- The row of a key vanished between our insert and our read (pruned): enqueue those
        -- elements again, one by one, through jobq_enqueue's own loop.
        SELECT pg_catalog.array_agg(
            CASE WHEN r.id IS NOT NULL THEN r.id ELSE jobq_enqueue(
                job_type => x.elem ->> 'job_type',
                payload => coalesce(x.elem -> 'payload', '{}'::jsonb),
                idempotency_key => x.elem ->> 'idempotency_key',
                max_attempts => coalesce((x.elem ->> 'max_attempts')::integer, 5),
                run_at => (x.elem ->> 'run_at')::timestamptz,
                priority => coalesce((x.elem ->> 'priority')::integer, 0),
                queue => coalesce(x.elem ->> 'queue', 'default'),
                limit_group => x.elem ->> 'limit_group',
                limit_key => x.elem ->> 'limit_key'
            ) END ORDER BY r.ord)
        INTO v_ids
        FROM ROWS FROM (pg_catalog.unnest(v_ords), pg_catalog.unnest(v_ids)) AS r (ord, id)
        INNER JOIN LATERAL (SELECT jobs -> (r.ord - 1) AS elem) AS x ON true;
    END LOOP;

    RETURN QUERY
    SELECT r.ord, r.id
    FROM ROWS FROM (pg_catalog.unnest(v_ords), pg_catalog.unnest(v_ids)) AS r (ord, id)
    ORDER BY r.ord;
END;
$$;

COMMENT ON FUNCTION jobq_enqueue_many(jsonb) IS
'Adds many jobs in one statement, each with jobq_enqueue''s semantics: an existing
idempotency_key of the same job_type returns the existing id; two elements with the same
job_type and key get the same id (the first is inserted). Built for 10,000+ jobs per call.
Arguments: jobs (a JSON array of objects with the keys of jobq_enqueue: job_type required;
payload, idempotency_key, max_attempts, run_at as ISO 8601 text with an offset, priority,
queue, limit_group, limit_key optional).
Result: one row per element, (ord, id), ord counting from 1 in input order.
Errors: 22023 when jobs is not an array, an element is not an object, has an unknown key or a
bad value (a payload that is not a JSON object included; the message names the element,
counting from 1 like ord, and the key); 54000 a payload too large, or more than 100,000
elements. Nothing is inserted when any element is bad.
Concurrency: as jobq_enqueue; one NOTIFY per queue that got jobs available now, or a single one
with an empty payload (wake every worker) when more than 100 queues did.';

REVOKE EXECUTE ON FUNCTION jobq_enqueue_many(jsonb) FROM PUBLIC;
