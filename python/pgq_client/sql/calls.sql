-- Every call of a jobq function the client sends, one statement after each "-- name:" line,
-- each an attribute of _sql.Statements: the public functions only, with named arguments and
-- every parameter cast to its pg_catalog type, so that another language can do the same. The
-- client puts the installation's schema before each jobq_* function it calls.

-- name: enqueue
-- Every argument of jobq_enqueue, as the client passes it. A single enqueue sends only the lines
-- of the arguments that differ from the function's defaults (Statements.enqueue_with): every
-- parameter costs a bind and a coercion in the server and a field in libpq's message, and the
-- usual call (a job type and a payload) is then the same two-parameter statement a hand-written
-- client would prepare.
SELECT jobq_enqueue(
    job_type => %(job_type)s::pg_catalog.text,
    payload => %(payload)s::pg_catalog.jsonb,
    idempotency_key => %(idempotency_key)s::pg_catalog.text,
    max_attempts => %(max_attempts)s::pg_catalog.int4,
    run_at => %(run_at)s::pg_catalog.timestamptz,
    priority => %(priority)s::pg_catalog.int4,
    queue => %(queue)s::pg_catalog.text,
    limit_group => %(limit_group)s::pg_catalog.text,
    limit_key => %(limit_key)s::pg_catalog.text,
    depends_on => %(depends_on)s::pg_catalog.uuid[],
    on_dependency_failure => %(on_dependency_failure)s::pg_catalog.text
) AS id;

-- name: enqueue_many
-- A batch's ids come back as one uuid[] in input order, read in binary (Call.binary): parsing
-- a thousand UUIDs from text, a row each, costs more than the array's binary elements. A bulk
-- load that keeps no ids sends the same statement with pg_catalog.count(*) instead.
SELECT pg_catalog.array_agg(id ORDER BY ord)
FROM jobq_enqueue_many(
    jobs => %(jobs)s::pg_catalog.jsonb
);

-- name: enqueue_arrays
-- A batch as one array per column, sent in binary (%b): no quoting or escaping of thousands of
-- values in the client, no parsing of numbers and times in the server. The payloads travel as
-- one JSON array, encoded in one pass by the client and split in the server into ARRAY(...
-- ORDER BY), cheaper than an ordered array_agg (docs/decisions/0004-one-producer-path.md). A
-- NULL array is the default for every job: when no job has a payload the JSON is NULL, its
-- ARRAY() empty, and NULLIF makes that NULL (a batch sent is never empty). A job type or queue
-- that every job of the batch has goes once (job_type, queue), repeated by array_fill in the
-- server, and its list is NULL. As enqueue_many, the ids or pg_catalog.count(*).
SELECT pg_catalog.array_agg(id ORDER BY ord)
FROM jobq_enqueue_arrays(
    job_types => CASE
        WHEN %(job_type)s::pg_catalog.text IS NULL THEN %(job_types)b::pg_catalog.text[]
        ELSE pg_catalog.array_fill(
            %(job_type)s::pg_catalog.text, ARRAY[%(jobs)s::pg_catalog.int4]
        )
    END,
    payloads => nullif(
        array(
            SELECT e.payload
            FROM
                pg_catalog.jsonb_array_elements(%(payloads)s::pg_catalog.jsonb)
                WITH ORDINALITY AS e (payload, n)
            ORDER BY e.n
        ),
        '{}'::pg_catalog.jsonb[]
    ),
    idempotency_keys => %(idempotency_keys)b::pg_catalog.text[],
    max_attempts => %(max_attempts)b::pg_catalog.int4[],
    run_ats => %(run_ats)b::pg_catalog.timestamptz[],
    priorities => %(priorities)b::pg_catalog.int4[],
    queues => CASE
        WHEN %(queue)s::pg_catalog.text IS NULL THEN %(queues)b::pg_catalog.text[]
        ELSE pg_catalog.array_fill(%(queue)s::pg_catalog.text, ARRAY[%(jobs)s::pg_catalog.int4])
    END,
    limit_groups => %(limit_groups)b::pg_catalog.text[],
    limit_keys => %(limit_keys)b::pg_catalog.text[]
);

-- name: dequeue
SELECT *  -- noqa: AM04
FROM jobq_dequeue(
    worker_id => %(worker_id)s::pg_catalog.text,
    job_types => %(job_types)s::pg_catalog.text[],
    batch_size => %(batch_size)s::pg_catalog.int4,
    lock_timeout => %(lock_timeout)s::pg_catalog.interval,
    queues => %(queues)s::pg_catalog.text[]
);

-- name: complete_and_claim
SELECT *  -- noqa: AM04
FROM jobq_complete_and_claim(
    job_ids => %(job_ids)s::pg_catalog.uuid[],
    worker_id => %(worker_id)s::pg_catalog.text,
    attempts => %(attempts)s::pg_catalog.int4[],
    results => %(results)s::pg_catalog.jsonb[],
    job_types => %(job_types)s::pg_catalog.text[],
    batch_size => %(batch_size)s::pg_catalog.int4,
    lock_timeout => %(lock_timeout)s::pg_catalog.interval,
    queues => %(queues)s::pg_catalog.text[]
);

-- name: complete
SELECT jobq_complete(
    job_id => %(job_id)s::pg_catalog.uuid,
    worker_id => %(worker_id)s::pg_catalog.text,
    attempt => %(attempt)s::pg_catalog.int4,
    result => %(result)s::pg_catalog.jsonb
) AS completed;

-- name: complete_many
SELECT jobq_complete_many(
    job_ids => %(job_ids)s::pg_catalog.uuid[],
    worker_id => %(worker_id)s::pg_catalog.text,
    attempts => %(attempts)s::pg_catalog.int4[],
    results => %(results)s::pg_catalog.jsonb[]
) AS completed;

-- name: fail
SELECT jobq_fail(
    job_id => %(job_id)s::pg_catalog.uuid,
    worker_id => %(worker_id)s::pg_catalog.text,
    error => %(error)s::pg_catalog.text,
    retry => %(retry)s::pg_catalog.bool,
    backoff => %(backoff)s::pg_catalog.interval,
    attempt => %(attempt)s::pg_catalog.int4
) AS status;

-- name: fail_many
SELECT
    ord,
    job_id,
    status
FROM
    jobq_fail_many(
        job_ids => %(job_ids)s::pg_catalog.uuid[],
        worker_id => %(worker_id)s::pg_catalog.text,
        errors => %(errors)s::pg_catalog.text[],
        retries => %(retries)s::pg_catalog.bool[],
        backoffs => %(backoffs)s::pg_catalog.interval[],
        attempts => %(attempts)s::pg_catalog.int4[]
    )
ORDER BY ord;

-- name: heartbeat
SELECT jobq_heartbeat(
    worker_id => %(worker_id)s::pg_catalog.text,
    job_ids => %(job_ids)s::pg_catalog.uuid[]
) AS renewed;

-- name: heartbeat_cancels
-- The Worker's heartbeat renews the claims and reads the cancel requests of the same jobs in one
-- statement, so that a worker learns of a cancel within one heartbeat interval at no extra
-- round trip.
SELECT
    jobq_heartbeat(
        worker_id => %(worker_id)s::pg_catalog.text,
        job_ids => %(job_ids)s::pg_catalog.uuid[]
    ) AS renewed,
    array(
        SELECT jobq_cancel_requested(job_ids => %(job_ids)s::pg_catalog.uuid[])
    ) AS cancel_requested;

-- name: cancel_requested
SELECT jobq_cancel_requested(
    job_ids => %(job_ids)s::pg_catalog.uuid[]
) AS id;

-- name: cancel
SELECT
    job_id,
    status
FROM jobq_cancel(
    job_ids => %(job_ids)s::pg_catalog.uuid[],
    reason => %(reason)s::pg_catalog.text
);

-- name: status
SELECT
    id,
    status,
    attempts,
    result,
    last_error,
    finished_at,
    cancel_requested
FROM jobq_job_status(
    job_ids => %(job_ids)s::pg_catalog.uuid[]
);

-- name: await_
SELECT
    id,
    status,
    attempts,
    result,
    last_error,
    finished_at,
    cancel_requested
FROM jobq_await(
    job_ids => %(job_ids)s::pg_catalog.uuid[],
    timeout => %(timeout)s::pg_catalog.interval
);

-- name: release
SELECT jobq_release(
    job_ids => %(job_ids)s::pg_catalog.uuid[],
    worker_id => %(worker_id)s::pg_catalog.text
) AS released;

-- name: release_orphans
SELECT jobq_release_orphans(
    worker_id => %(worker_id)s::pg_catalog.text,
    job_ids => %(job_ids)s::pg_catalog.uuid[]
) AS released;

-- name: capped_groups
-- The Worker completes a job of these groups in its next claim's transaction (a freed slot).
SELECT limit_group
FROM jobq_capped_groups();

-- name: requeue_dead_letter
SELECT jobq_requeue_dead_letter(
    job_id => %(job_id)s::pg_catalog.uuid
) AS requeued;

-- name: requeue_dead_letters
SELECT jobq_requeue_dead_letters(
    job_type => %(job_type)s::pg_catalog.text,
    queue => %(queue)s::pg_catalog.text,
    include_cancelled => %(include_cancelled)s::pg_catalog.bool,
    reason => %(reason)s::pg_catalog.text
) AS requeued;

-- name: list_jobs
SELECT *  -- noqa: AM04
FROM jobq_list_jobs(
    statuses => %(statuses)s::pg_catalog.text[],
    job_type => %(job_type)s::pg_catalog.text,
    queue => %(queue)s::pg_catalog.text,
    max_rows => %(max_rows)s::pg_catalog.int4
);

-- name: get_job
SELECT *  -- noqa: AM04
FROM jobq_get_job(
    job_id => %(job_id)s::pg_catalog.uuid
);

-- name: stats
SELECT
    queue,
    job_type,
    status,
    jobs,
    oldest_available_at
FROM jobq_stats()
ORDER BY queue, job_type, status;

-- name: prune
SELECT jobq_prune(
    older_than => %(older_than)s::pg_catalog.interval,
    statuses => %(statuses)s::pg_catalog.text[],
    batch_size => %(batch_size)s::pg_catalog.int4
) AS pruned;

-- name: configure
SELECT jobq_configure(
    max_payload_bytes => %(max_payload_bytes)s::pg_catalog.int4,
    metrics => %(metrics)s::pg_catalog.bool
) AS settings;  -- noqa: RF04

-- name: metrics
SELECT
    metric,
    labels,
    value
FROM jobq_metrics();

-- name: health
SELECT
    check_name,
    queue,
    severity,
    value,
    detail
FROM jobq_health();

-- name: unserved
SELECT
    queue,
    job_type,
    jobs,
    oldest_available_at
FROM jobq_unserved_job_types(
    idle => %(idle)s::pg_catalog.interval
);

-- name: schedule
SELECT jobq_schedule(
    name => %(name)s::pg_catalog.text,
    cron => %(cron)s::pg_catalog.text,
    job_type => %(job_type)s::pg_catalog.text,
    payload => %(payload)s::pg_catalog.jsonb,
    timezone => %(timezone)s::pg_catalog.text,
    queue => %(queue)s::pg_catalog.text,
    priority => %(priority)s::pg_catalog.int4,
    max_attempts => %(max_attempts)s::pg_catalog.int4,
    catch_up => %(catch_up)s::pg_catalog.text,
    paused => %(paused)s::pg_catalog.bool
) AS next_run_at;

-- name: unschedule
SELECT jobq_unschedule(
    name => %(name)s::pg_catalog.text
) AS deleted;

-- name: run_schedule
SELECT jobq_schedule_run_now(
    name => %(name)s::pg_catalog.text
) AS job_id;

-- name: schedules
SELECT
    name,
    cron,
    timezone,
    job_type,
    payload,
    queue,
    priority,
    max_attempts,
    catch_up,
    paused,
    next_run_at,
    next_run_local,
    created_at,
    updated_at,
    last_fired_at,
    last_job_id
FROM jobq_schedules()
ORDER BY name;

-- name: tick
SELECT
    schedule,
    fire_at,
    job_id
FROM jobq_tick()
ORDER BY schedule, fire_at;

-- name: jobs_page
-- The dashboard's keyset page (after_at, after_id: the previous page's last row; a last row with
-- matches false marks where a filtered search of finished jobs stopped).
SELECT
    id,
    queue,
    job_type,
    status,
    priority,
    attempts,
    max_attempts,
    available_at,
    created_at,
    updated_at,
    locked_at,
    locked_by,
    finished_at,
    last_error,
    cancel_requested,
    sort_at,
    matches
FROM jobq_jobs_page(
    status => %(status)s::pg_catalog.text,
    queue => %(queue)s::pg_catalog.text,
    job_type => %(job_type)s::pg_catalog.text,
    after_at => %(after_at)s::pg_catalog.timestamptz,
    after_id => %(after_id)s::pg_catalog.uuid,
    max_rows => %(max_rows)s::pg_catalog.int4,
    scan_limit => %(scan_limit)s::pg_catalog.int4
);

-- name: queue_summary
SELECT
    queue,
    available,
    scheduled,
    processing,
    failed,
    dead_letter,
    cancelled,
    oldest_available_at,
    succeeded_recent,
    paused
FROM jobq_queue_summary(
    recent => %(recent)s::pg_catalog.interval
);

-- name: set_limit
SELECT jobq_set_limit(
    limit_group => %(limit_group)s::pg_catalog.text,
    max_running => %(max_running)s::pg_catalog.int4,
    max_starts => %(max_starts)s::pg_catalog.int4,
    per => %(per)s::pg_catalog.interval,
    share => %(share)s::pg_catalog.text
);

-- name: set_weight
SELECT jobq_set_weight(
    limit_group => %(limit_group)s::pg_catalog.text,
    limit_key => %(limit_key)s::pg_catalog.text,
    weight => %(weight)s::pg_catalog.float4
);

-- name: limits
SELECT
    limit_group,
    max_running,
    max_starts,
    per,
    share
FROM jobq_limits()
ORDER BY limit_group;

-- name: limit_usage
SELECT
    limit_group,
    limit_key,
    running,
    max_running,
    starts_in_window,
    max_starts,
    per,
    pending,
    weight
FROM jobq_limit_usage();

-- name: workers_summary
SELECT
    worker_id,
    job_types,
    queues,
    first_claim_at,
    last_claim_at,
    jobs_held,
    stale_jobs,
    last_heartbeat_at,
    lock_expires_at,
    held_job_ids
FROM jobq_workers_summary();

-- name: pause
SELECT jobq_pause(
    queue => %(queue)s::pg_catalog.text,
    reason => %(reason)s::pg_catalog.text
) AS paused;

-- name: resume
SELECT jobq_resume(
    queue => %(queue)s::pg_catalog.text
) AS resumed;

-- name: queues
SELECT
    queue,
    paused,
    paused_at,
    reason,
    pending,
    processing
FROM jobq_queues();

-- name: add_dependencies
SELECT jobq_add_dependencies(
    job_id => %(job_id)s::pg_catalog.uuid,
    depends_on => %(depends_on)s::pg_catalog.uuid[]
);

-- name: dependencies
SELECT
    id,
    job_type,
    status,
    result
FROM jobq_dependencies(
    job_id => %(job_id)s::pg_catalog.uuid
);

-- name: job_graph
SELECT
    id,
    job_type,
    status,
    depends_on
FROM jobq_job_graph(
    job_id => %(job_id)s::pg_catalog.uuid
);

-- name: find_jobs
-- Jobs by what an operator knows of them, live and finished, newest first (after_id: the
-- previous page's last row; a last row with matches false marks where the search stopped).
SELECT
    id,
    queue,
    job_type,
    status,
    priority,
    attempts,
    max_attempts,
    available_at,
    created_at,
    updated_at,
    locked_at,
    locked_by,
    finished_at,
    last_error,
    cancel_requested,
    sort_at,
    matches
FROM jobq_find_jobs(
    job_id => %(job_id)s::pg_catalog.uuid,
    idempotency_key => %(idempotency_key)s::pg_catalog.text,
    job_type => %(job_type)s::pg_catalog.text,
    queue => %(queue)s::pg_catalog.text,
    statuses => %(statuses)s::pg_catalog.text[],
    created_after => %(created_after)s::pg_catalog.timestamptz,
    created_before => %(created_before)s::pg_catalog.timestamptz,
    finished_after => %(finished_after)s::pg_catalog.timestamptz,
    finished_before => %(finished_before)s::pg_catalog.timestamptz,
    payload_contains => %(payload_contains)s::pg_catalog.jsonb,
    after_id => %(after_id)s::pg_catalog.uuid,
    max_rows => %(max_rows)s::pg_catalog.int4,
    scan_limit => %(scan_limit)s::pg_catalog.int4
);

-- name: act_on_jobs
SELECT
    job_id,
    outcome
FROM jobq_act_on_jobs(
    action => %(action)s::pg_catalog.text,
    job_ids => %(job_ids)s::pg_catalog.uuid[],
    reason => %(reason)s::pg_catalog.text
);

-- name: audit_log
SELECT
    id,
    acted_at,
    login_role,
    acting_role,
    action,
    job_ids,
    changed,
    reason,
    filters
FROM jobq_audit_log(
    before_id => %(before_id)s::pg_catalog.int8,
    max_rows => %(max_rows)s::pg_catalog.int4
);

-- name: error_summary
SELECT
    job_type,
    error,
    failures,
    jobs,
    last_seen
FROM jobq_error_summary(
    since => %(since)s::pg_catalog.interval,
    per_type => %(per_type)s::pg_catalog.int4
);

-- name: throughput
SELECT
    bucket_start,
    succeeded,
    failed,
    dead_letter,
    cancelled,
    failed_attempts
FROM jobq_throughput(
    since => %(since)s::pg_catalog.interval,
    bucket => %(bucket)s::pg_catalog.interval
);

-- name: names
SELECT
    kind,
    name
FROM jobq_names();
