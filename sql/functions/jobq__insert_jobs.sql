-- jobq__insert_jobs (private): the insert that jobq_enqueue_many and jobq_enqueue_arrays share.
-- It takes jobs already checked by its caller, one array per column (element i of each array
-- is job i; a NULL array or element is jobq_enqueue's default), inserts them with ids that
-- increase in input order, wakes the workers of the queues that got jobs available now, counts
-- them for jobq_metrics(), and returns one (ord, id) per job. Both batch functions thus differ
-- only in how their input arrives and is checked; a new job column is added here once.
--
-- Without any idempotency key every job is inserted, and the queues to wake and the counts
-- come from the arguments rather than from RETURNING rows of the insert (a copy of every row
-- to aggregate). With keys, only the first job of a (job type, key) in the batch is inserted
-- (the others get its id, found by a window function, not by a lookup per job), and a key
-- that exists already inserts nothing: ON CONFLICT DO NOTHING waits for a concurrent inserter
-- of that key, as in jobq_enqueue, and the existing ids are then read with the fresh snapshot
-- of a new statement.
--
-- Not SECURITY DEFINER and no SET clause: it runs inside its callers, with their search_path,
-- and is granted to nobody.

CREATE OR REPLACE FUNCTION jobq__insert_jobs(
    job_types text[],
    payloads jsonb[],
    idempotency_keys text[],
    max_attempts integer[],
    run_ats timestamptz[],
    priorities integer[],
    queues text[],
    limit_groups text[],
    limit_keys text[]
) RETURNS TABLE (ord integer, id uuid)
LANGUAGE plpgsql
VOLATILE
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

COMMENT ON FUNCTION jobq__insert_jobs(
    text[], jsonb[], text[], integer[], timestamptz[], integer[], text[], text[], text[]
) IS
'Private. Inserts jobs that the caller has checked, one array per column (NULL: the default),
with jobq_enqueue''s dedupe of idempotency keys; wakes workers and counts the jobs. Returns
(ord, id) per job in input order. Shared by jobq_enqueue_many and jobq_enqueue_arrays.';

REVOKE EXECUTE ON FUNCTION jobq__insert_jobs(
    text[], jsonb[], text[], integer[], timestamptz[], integer[], text[], text[], text[]
) FROM PUBLIC;
