-- jobq_enqueue_many: adds many jobs in one statement, ids in input order, with jobq_enqueue's
-- semantics for each element. Built for 10,000+ jobs per call: one validation pass over the
-- array that names the first bad element, one conversion of the elements into one array per
-- column, then jobq__insert_jobs (shared with jobq_enqueue_arrays) inserts them, with no
-- lookup per element. Elements with depends_on or after (docs/workflows.md) make the graph's
-- edges afterwards (jobq__add_edges); a batch without them runs nothing more.
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
$$;

COMMENT ON FUNCTION jobq_enqueue_many(jsonb) IS
'Adds many jobs in one statement, each with jobq_enqueue''s semantics: an existing
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

REVOKE EXECUTE ON FUNCTION jobq_enqueue_many(jsonb) FROM PUBLIC;
