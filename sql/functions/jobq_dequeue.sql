-- jobq_dequeue: the claim. Promotes the scheduled jobs that have come due, takes back stale
-- claims within the caller's filters, then claims up to batch_size available jobs with FOR
-- UPDATE SKIP LOCKED, in claim order (priority DESC, available_at, id), from the ranges of
-- jobq_jobs_claim_idx (hashtextextended(job_type, 0), hashtextextended(queue, 0), priority
-- DESC, available_at, id) that its filters select: one range per (job_type, queue) pair, keyed
-- by the hashes of the names (fixed-width keys make the index cheaper to insert into), whose
-- rows' names are compared with the filters (two pairs whose hashes collide share a range).
--
-- What a claim reads does not grow with the rows it cannot claim: finished jobs and scheduled
-- jobs are not in the claim index (a future job waits in jobq_jobs_scheduled_idx until a claim
-- promotes it, whatever its priority), and jobs of other job types or queues are in other
-- ranges, which it never enters. Finding the ranges costs one index probe per (job_type, queue)
-- pair that has pending jobs among those the filters allow (all of them for a claim filtered by
-- queue alone or not at all).
--
-- Several ranges are merged without locking: the first v_k rows of each are read, the first
-- v_k of those are locked in claim order with SKIP LOCKED until batch_size are, and the round
-- is repeated with a larger v_k only when concurrent claims held some and more may wait beyond.
-- Locking while merging (a cursor per range, FOR UPDATE SKIP LOCKED) would leave the head row
-- of every other range locked until the claim commits, hidden from every other worker.
--
-- Under a held horizon: while a snapshot older than the claims (a REPEATABLE READ transaction,
-- a long query, a standby's feedback) holds the xmin horizon back, no scan can mark the
-- entries of claimed rows dead, and a full scan of a range passes every job claimed since the
-- horizon stopped, visiting its heap row: the cost of a claim grows with the time the snapshot
-- is held. A full scan therefore counts the index entries it passed beyond the jobs it claimed
-- (pg_stat_get_xact_tuples_returned of jobq_jobs_claim_idx); past 10,000, the session keeps a
-- mark per range (custom setting jobq.claim_marks: no row is written, so no dead version is
-- made), the claim-order key where the range's live jobs began, and its next claims read each
-- range from its mark (3b) and move it on. What a mark can miss, a full scan finds: the next
-- comes when the marks' time is up, ten times what the last full scan took (so that full
-- scans take at most a tenth of the claims' time), at least a second, at most a minute.
-- Until then a job that becomes pending behind a mark other than by this claim (an enqueue
-- with an earlier run_at, a late commit, a release or takeover by another session) and a new
-- (job_type, queue) range wait; higher priorities are read from the head of their range, and
-- what this claim promotes (step 0) or takes back (step 1) is ranked as a full scan ranks it.
-- docs/decisions/0007-claims-under-a-held-horizon.md has the figures.
--
-- SET enable_bitmapscan = off: every claim leaves a dead entry at the head of jobq_jobs_claim_idx
-- (the job's pending version), and every completion one in jobq_jobs_locked_until_idx, until
-- VACUUM removes them. When the statistics say that few jobs are
-- pending (a quiet or new queue), the generic plan for the claim would be a bitmap scan and a sort,
-- which visits every entry, dead ones included, and their heap rows on every call, so a busy queue
-- slows down until autovacuum's next visit. Without bitmap scans the claim is an index scan in
-- ORDER BY order that stops at batch_size rows, and it marks the entries of dead rows as dead as it
-- passes them, so later claims skip them without visiting the heap
-- (docs/operations.md on autovacuum_naptime for queues of thousands of jobs a second).
--
-- SET enable_seqscan = off: finished jobs leave jobq_jobs (for jobq_jobs_history), so a queue
-- that has drained is an empty table, and statistics gathered then say so. A plan made on
-- them, generic and kept for the session, reads the whole table in every statement of the
-- claim (the search of the ranges, the promotion, the takeover, the claim itself): a Worker
-- that starts on an empty queue then scans a whole backlog on every claim until autovacuum's
-- next analyze invalidates the plans. Without sequential scans each statement reads its index.
--
-- SET plan_cache_mode = force_generic_plan: each statement is planned once per session, not
-- on every call while a generic plan looks dearer than a custom one (the recursive search of
-- the ranges always does). Every statement is written so that its generic plan is the right
-- one whatever the estimates: rows are found through an index and the UPDATEs find them by
-- primary key (id = ANY (ARRAY(...))), never through a join whose method depends on the
-- estimated LIMIT (a generic plan estimates LIMIT $n at a tenth of the table).
--
-- SET jit = off: a generic plan's estimates can pass jit_above_cost where a statement joins a
-- set of unknown size (generate_series, unnest) to index scans (jobq__claim_limited's
-- candidates, with statistics from a backlog of limited jobs). A claim reads a few index
-- entries per job; compiling its expressions never pays.
--
-- The figures behind these settings: docs/decisions/0003-planner-settings-of-hot-functions.md.
-- The settings apply only while jobq_dequeue runs (function SET clauses), to the statements of
-- the functions it calls too: the caller's session and transaction keep their own.
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_dequeue(
    worker_id text,
    job_types text[] DEFAULT NULL,
    batch_size integer DEFAULT 1,
    lock_timeout interval DEFAULT '5 minutes',
    queues text[] DEFAULT NULL
) RETURNS SETOF jobq_jobs
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
SET enable_bitmapscan = off
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
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

COMMENT ON FUNCTION jobq_dequeue(text, text[], integer, interval, text[]) IS
'Claims up to batch_size jobs for a worker and returns them: status processing, locked_at
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

REVOKE EXECUTE ON FUNCTION jobq_dequeue(text, text[], integer, interval, text[]) FROM PUBLIC;
