-- jobq_enqueue_arrays: jobq_enqueue_many with one array per column instead of one JSON
-- document: the fast path for batches and bulk loads.
--
-- Why a second batch function: jobq_enqueue_many receives one JSON text, which the server
-- parses whole, then takes apart element by element (->, ->>, casts, type checks) before it
-- can insert. Here each column arrives as an array of its own type, which a driver can send
-- in binary (no quoting, no parsing of numbers, times or keys), and only the payloads are
-- parsed, each on its own. The checks are the same set operation over the arrays as in
-- jobq_enqueue_many (one pass, the first bad element named), the ids are drawn once per batch
-- (jobq__uuid_v7_many), and the workers are woken with one notification per queue for the
-- whole statement.
--
-- NULL as a whole array means the default for every job (payloads '{}', no idempotency key,
-- max_attempts 5, run_at now, priority 0, queue 'default'); a NULL element is what jobq_enqueue
-- does with a NULL argument: none / now for idempotency_keys and run_ats, 22004 for a payload,
-- 22023 for the others.
--! levels: producer, worker, admin
--! granted-as: jobq_enqueue_many

CREATE OR REPLACE FUNCTION jobq_enqueue_arrays(
    job_types text[],
    payloads jsonb[] DEFAULT NULL,
    idempotency_keys text[] DEFAULT NULL,
    max_attempts integer[] DEFAULT NULL,
    run_ats timestamptz[] DEFAULT NULL,
    priorities integer[] DEFAULT NULL,
    queues text[] DEFAULT NULL
) RETURNS TABLE (ord integer, id uuid)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_n integer;
    v_bad record;
    v_limit integer;
    v_ids uuid[];
    v_types text[];
    v_keys text[];
    v_missing integer;
    v_metrics boolean;
    -- The transaction's time, as a value: Citus refuses now() in a CASE, a COALESCE,
    -- RETURNING or ON CONFLICT DO UPDATE; a value is the same for PostgreSQL.
    v_now CONSTANT timestamptz := pg_catalog.now();
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
        (6, 'queues', pg_catalog.cardinality(queues), pg_catalog.array_ndims(queues))
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
    SELECT s.max_payload_bytes, s.metrics INTO v_limit, v_metrics FROM jobq_settings AS s;

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
                    ELSE jobq__job_argument_problem(
                        e.job_type, e.queue, e.idempotency_key, e.max_attempts, e.priority
                    )
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
                    CASE WHEN queues IS NULL THEN 'default' ELSE u.queue END AS queue
                FROM ROWS FROM (
                    pg_catalog.unnest(job_types), pg_catalog.unnest(payloads),
                    pg_catalog.unnest(idempotency_keys),
                    pg_catalog.unnest(jobq_enqueue_arrays.max_attempts),
                    pg_catalog.unnest(run_ats), pg_catalog.unnest(priorities),
                    pg_catalog.unnest(queues)
                ) WITH ORDINALITY AS u (
                    job_type, payload, idempotency_key, max_attempts, run_at, priority, queue, ord
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

    v_ids := jobq__uuid_v7_many(v_n);
    IF idempotency_keys IS NULL
        OR pg_catalog.cardinality(pg_catalog.array_remove(idempotency_keys, NULL)) = 0
    THEN
        -- No job has a key: every job is inserted, nothing to deduplicate or look up. The
        -- queues to wake and the counts for jobq_metrics() come from the arguments, not from
        -- RETURNING rows of the insert (a copy of every row to aggregate): with neither queues
        -- nor run_ats, all the jobs are in 'default' and available now.
        INSERT INTO jobq_jobs AS j (
            id, queue, job_type, payload, max_attempts, available_at, priority, scheduled
        )
        SELECT
            u.id,
            coalesce(u.queue, 'default'),
            u.job_type,
            coalesce(u.payload, '{}'::jsonb),
            coalesce(u.max_attempts, 5),
            coalesce(u.run_at, v_now),
            coalesce(u.priority, 0),
            coalesce(u.run_at > v_now, FALSE)
        FROM ROWS FROM (
            pg_catalog.unnest(v_ids), pg_catalog.unnest(job_types),
            pg_catalog.unnest(payloads),
            pg_catalog.unnest(jobq_enqueue_arrays.max_attempts),
            pg_catalog.unnest(run_ats), pg_catalog.unnest(priorities),
            pg_catalog.unnest(queues)
        ) AS u (id, job_type, payload, max_attempts, run_at, priority, queue);

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
        -- (the default) spares building its arrays. (A NULL element of queues was refused
        -- above.)
        IF v_metrics THEN
            PERFORM jobq__metrics_count(
                'enqueued'::text,
                coalesce(queues, pg_catalog.array_fill('default'::text, ARRAY[v_n])),
                job_types, NULL::text[], NULL::double precision[]
            );
        END IF;

        RETURN QUERY
        SELECT u.ord::integer, u.id
        FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS u (id, ord);
        RETURN;
    END IF;

    -- With keys: of several jobs with one key only the first is inserted (the others get its
    -- id), and a key that exists already inserts nothing (ON CONFLICT DO NOTHING waits for a
    -- concurrent inserter of that key, as in jobq_enqueue).
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
            CASE
                WHEN u.idempotency_key IS NULL THEN u.id
                ELSE pg_catalog.first_value(u.id) OVER (
                    PARTITION BY u.job_type, u.idempotency_key ORDER BY u.ord
                )
            END AS first_id
        FROM ROWS FROM (
            pg_catalog.unnest(v_ids), pg_catalog.unnest(job_types),
            pg_catalog.unnest(payloads), pg_catalog.unnest(idempotency_keys),
            pg_catalog.unnest(jobq_enqueue_arrays.max_attempts),
            pg_catalog.unnest(run_ats), pg_catalog.unnest(priorities),
            pg_catalog.unnest(queues)
        ) WITH ORDINALITY AS u (
            id, job_type, payload, idempotency_key, max_attempts, run_at, priority, queue, ord
        )
    ),

    inserted AS (
        INSERT INTO jobq_jobs AS j (
            id, queue, job_type, payload, idempotency_key, max_attempts, available_at,
            priority, scheduled
        )
        SELECT
            i.new_id, i.queue, i.job_type, i.payload, i.idempotency_key, i.max_attempts,
            i.available_at, i.priority, i.available_at > v_now
        FROM input AS i
        WHERE i.new_id = i.first_id
        ORDER BY i.ord
        ON CONFLICT (job_type, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
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
        pg_catalog.array_agg(ins.id ORDER BY i.ord),
        pg_catalog.array_agg(i.job_type ORDER BY i.ord),
        pg_catalog.array_agg(i.idempotency_key ORDER BY i.ord)
    INTO v_ids, v_types, v_keys
    FROM input AS i
    LEFT JOIN inserted AS ins ON ins.id = i.first_id
    CROSS JOIN woken
    CROSS JOIN counted;

    -- Jobs whose key existed already: read the existing ids with the fresh snapshot of this
    -- statement (it sees rows that concurrent enqueuers committed meanwhile).
    LOOP
        SELECT
            pg_catalog.array_agg(coalesce(r.id, j.id) ORDER BY r.ord),
            (pg_catalog.count(*) FILTER (WHERE coalesce(r.id, j.id) IS NULL))::integer
        INTO v_ids, v_missing
        FROM ROWS FROM (
            pg_catalog.unnest(v_ids), pg_catalog.unnest(v_types), pg_catalog.unnest(v_keys)
        ) WITH ORDINALITY AS r (id, job_type, key, ord)
        LEFT JOIN jobq_jobs AS j
            ON r.id IS NULL AND j.job_type = r.job_type AND j.idempotency_key = r.key;
        EXIT WHEN v_missing = 0;

        -- The row of a key vanished between our insert and our read (pruned): enqueue those
        -- jobs again, one by one, through jobq_enqueue's own loop.
        SELECT pg_catalog.array_agg(
            CASE WHEN r.id IS NOT NULL THEN r.id ELSE jobq_enqueue(
                job_type => job_types[r.ord],
                payload => coalesce(payloads[r.ord], '{}'::jsonb),
                idempotency_key => idempotency_keys[r.ord],
                max_attempts => coalesce(jobq_enqueue_arrays.max_attempts[r.ord], 5),
                run_at => run_ats[r.ord],
                priority => coalesce(priorities[r.ord], 0),
                queue => coalesce(queues[r.ord], 'default'::text),
                limit_group => NULL::text,
                limit_key => NULL::text
            ) END ORDER BY r.ord)
        INTO v_ids
        FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS r (id, ord);
    END LOOP;

    RETURN QUERY
    SELECT r.ord::integer, r.id
    FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS r (id, ord);
END;
$$;

COMMENT ON FUNCTION jobq_enqueue_arrays(
    text[], jsonb[], text[], integer[], timestamptz[], integer[], text[]
) IS
'Adds many jobs in one statement, given one array per column (element i of each array is job
i), each job with jobq_enqueue''s semantics: an existing idempotency key of the same job type
returns the existing id; two jobs with the same job type and key get the same id (the first is
inserted). The same jobs as jobq_enqueue_many, without a JSON document to parse; send the
arrays in binary where the driver can.
Arguments: job_types (one per job, 1-200 chars; its length is the number of jobs);
payloads (JSON objects), idempotency_keys, max_attempts, run_ats, priorities, queues: each
NULL (the default of jobq_enqueue for every job) or with one element per job, bounded as in
jobq_enqueue. A NULL element of idempotency_keys is no key, of run_ats now.
Result: one row per job, (ord, id), ord counting from 1 in array order.
Errors: 22023 job_types NULL or multidimensional, an array whose length differs from
job_types'', a bad element (the message names the element, counting from 1 like ord, and the
argument); 22004 a NULL payload element; 54000 a payload too large, or more than 100,000
jobs. Nothing is inserted when any job is bad.
Concurrency: as jobq_enqueue; one NOTIFY per queue that got jobs available now, or a single one
with an empty payload (wake every worker) when more than 100 queues did. The jobs it adds are
counted in jobq_metrics() (jobq_enqueued_total), in the caller''s transaction.';

REVOKE EXECUTE ON FUNCTION jobq_enqueue_arrays(
    text[], jsonb[], text[], integer[], timestamptz[], integer[], text[]
) FROM PUBLIC;
