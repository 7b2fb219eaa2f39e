-- jobq__claim_limited (private): the claim of jobq_dequeue when limited jobs (limit_group set)
-- wait within its filters. Claims up to batch_size jobs, limited and not, in claim order
-- (priority DESC, available_at, id), never more than a key's limits allow, and returns them in
-- that order. jobq_dequeue has already promoted due scheduled jobs and taken back stale claims.
--
-- Serialising per key without blocking other keys: each limited (limit_group, limit_key) the
-- claim considers is first locked with pg_try_advisory_xact_lock. A key that another
-- transaction holds (a claim of that key not yet committed) is skipped whole for this call:
-- its count could miss that claim's jobs. Once the lock is held, the key's processing jobs are
-- counted in a later statement, whose snapshot sees every claim that committed before the lock
-- was released (PostgreSQL makes a transaction visible before it releases its locks). An
-- advisory lock rather than a row lock: a key needs no row before its first start (an INSERT
-- of a new key's row would wait for a concurrent one), and a transaction-level advisory lock
-- costs no write. The lock's number is a hash of the schema, group and key seeded with the
-- installation's secret jobq_settings.lock_seed (read once per statement that takes locks),
-- so a role that knows a group and key cannot compute the number and hold it to stop the
-- key's claims; two keys whose hashes collide only skip each other now and then, never count
-- wrong. Every start also
-- writes the key's row in jobq_limit_keys: under REPEATABLE READ, whose snapshot is the
-- transaction's first, a claim that could have missed a concurrent start fails with 40001
-- when it writes that row, instead of starting one job too many.
--
-- Rate limits are a sliding window, exact: a start is allowed while fewer than max_starts
-- starts were recorded in the window of length per that ends at the clock of this claim
-- (clock_timestamp() under the key's lock, never earlier than the key's previous start), so
-- no window of that length, wherever it begins, holds more than max_starts starts. A token
-- bucket would be cheaper to keep (two numbers) but lets a full bucket plus a window's refill
-- start within one window, up to twice the limit. The window is jobq_limit_starts: one row per
-- claim that started jobs of the key, with the key's running total, so the starts within the
-- window are two index probes whatever their number.
--
-- Cost (only when limited jobs wait within the filters): one recursive probe of
-- jobq_jobs_limited_idx per (job_type, queue, limit_group, limit_key) with pending jobs, in
-- the claimed job types, which also gives each range's first job (the index holds each range
-- in claim order). The ranges are then visited in claim order a chunk at a time (as many as
-- candidates are missing), each chunk in at most three statements whatever its number of
-- keys: the locks, the counts of processing jobs (at most max_running index entries per key)
-- and the candidates, which probe again only the ranges whose key may start more than one job
-- (a key that may start one has its range's first job already: no statement when all do); a
-- rate-limited key adds two or three probes of jobq_limit_starts. Then one statement locks the
-- candidates, one claims them, and one (three for rate limits) records the starts. A key that
-- is full costs its probe, never the jobs it holds back.
--
-- Rows another transaction holds: the candidates are read without locks and then locked with
-- SKIP LOCKED, so some may be passed over. Only candidates the claim can take count towards
-- the batch (a key's jobs beyond its room do not, whatever their job type or queue), and when
-- the lock comes back short, another round reads past the rows it passed over and those it
-- has locked, with each key's room less what it took: the claim never comes back short while
-- jobs it could claim wait unlocked. A round costs the reads above again; it happens only when
-- a candidate was passed over.
--
-- Fair share (share round_robin or weighted; docs/decisions/0011-fair-share-by-pass.md):
-- stride scheduling. Each key of a sharing group has a pass in its row of jobq_limit_keys, the
-- virtual time of its next start; a start adds 1 / weight (1 under round_robin). A key back
-- from idle starts at least one start before the lowest pass of the group's keys with work, so
-- it is served within one turn and gets no credit for the time it had none. The claim gives a
-- sharing group the same places in the claim order as under fifo (its jobs' priorities and
-- available_at), and fills them by virtual start time (a key's n-th job: pass + (n - 1) /
-- weight): its ranges are visited, and its candidates locked, in that order. The batch is cut
-- in turns: within a turn a key starts only the jobs whose virtual start time falls in it, so
-- one key's backlog cannot fill a batch that other keys have work for; a claim left short
-- while a key used its turn up goes on to the next turn, so no slot stays idle. The pass is
-- written with the starts, under the key's lock; fifo groups read and write none of this.
--
-- Round robin without caps (share round_robin, max_running and max_starts NULL;
-- docs/decisions/0012-round-robin-by-cursor.md): such a group needs no lock, count or pass per
-- key, so the skip scan passes over its keys (one probe per group, not per key) and the group
-- is claimed by a cursor over its keys instead (step 2b): jobq_limits.turn_key, the key its
-- last claim started last. A claim takes the group's highest priority (one probe of
-- jobq_jobs_limited_turn_idx), then the keys below the cursor in descending key order,
-- wrapping round to the last key, one job each per turn, so its cost is a probe per start
-- whatever the number of keys (downwards: docs/decisions/0017-turns-away-from-the-probes.md).
-- A group's first claim (cursor NULL) starts at its lowest key, so that its keys start in key
-- order from the first (A, B, A, B for two keys; A, E, D, C, B, A for five). Each key with work
-- starts once before any starts twice, and a key that gets work waits at most one turn, with
-- one claim at a time; concurrent claims each take the keys below the cursor they read (the
-- later one takes the next jobs of keys the earlier one holds), so under concurrency the
-- counts differ by at most one per concurrent claim.
--
-- The limited jobs of paused queues (jobq_pause: paused_queues, NULL when none is) are left out
-- with their ranges; jobq_dequeue leaves the ranges of their other jobs out of range_*_hashes.
--
-- Not SECURITY DEFINER and no SET clause: it runs inside jobq_dequeue, with its search_path
-- and settings, and is granted to nobody.
--! replaces: jobq__claim_limited(text, text[], text[], integer, text[], text[])
--! replaces: jobq__claim_limited(text, text[], text[], integer, bigint[], bigint[])

CREATE OR REPLACE FUNCTION jobq__claim_limited(
    worker_id text,
    job_types text[],
    queues text[],
    batch_size integer,
    range_type_hashes bigint[],
    range_queue_hashes bigint[],
    lock_until timestamptz,
    paused_queues text[]
) RETURNS SETOF jobq_jobs
LANGUAGE plpgsql
VOLATILE
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

COMMENT ON FUNCTION jobq__claim_limited(
    text, text[], text[], integer, bigint[], bigint[], timestamptz, text[]
) IS
'Private. The claim of jobq_dequeue when limited jobs wait within its filters: claims up to
batch_size jobs in claim order, never more than each (limit_group, limit_key) may start
(max_running, max_starts per per), skipping keys that a concurrent claim holds, and records
the starts; the locks of its claims expire at lock_until; the limited jobs of paused_queues
are left pending.';

REVOKE EXECUTE ON FUNCTION jobq__claim_limited(
    text, text[], text[], integer, bigint[], bigint[], timestamptz, text[]
) FROM PUBLIC;
