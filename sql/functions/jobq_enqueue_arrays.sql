-- jobq_enqueue_arrays: jobq_enqueue_many with one array per column instead of one JSON
-- document, the fast path for batches and bulk loads. Each column arrives as an array of its
-- own type, which a driver can send in binary (no quoting, no parsing of numbers, times or
-- keys); only the payloads are parsed, each on its own. The checks are set operations over the
-- arrays, and a pass to name the first bad job runs only when one is wrong; the insert, wake-up
-- and counting are jobq__insert_jobs', shared with jobq_enqueue_many.
--
-- NULL as a whole array means the default for every job (payloads '{}', no idempotency key,
-- max_attempts 5, run_at now, priority 0, queue 'default', no limit); a NULL element is what
-- jobq_enqueue does with a NULL argument: none / now for idempotency_keys, run_ats,
-- limit_groups and limit_keys, 22004 for a payload, 22023 for the others.
--! levels: producer, worker, admin
--! granted-as: jobq_enqueue_many
--! replaces: jobq_enqueue_arrays(text[], jsonb[], text[], int[], timestamptz[], int[], text[])

CREATE OR REPLACE FUNCTION jobq_enqueue_arrays(
    job_types text[],
    payloads jsonb[] DEFAULT NULL,
    idempotency_keys text[] DEFAULT NULL,
    max_attempts integer[] DEFAULT NULL,
    run_ats timestamptz[] DEFAULT NULL,
    priorities integer[] DEFAULT NULL,
    queues text[] DEFAULT NULL,
    limit_groups text[] DEFAULT NULL,
    limit_keys text[] DEFAULT NULL
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

COMMENT ON FUNCTION jobq_enqueue_arrays(
    text[], jsonb[], text[], integer[], timestamptz[], integer[], text[], text[], text[]
) IS
'Adds many jobs in one statement, given one array per column (element i of each array is job
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

REVOKE EXECUTE ON FUNCTION jobq_enqueue_arrays(
    text[], jsonb[], text[], integer[], timestamptz[], integer[], text[], text[], text[]
) FROM PUBLIC;
