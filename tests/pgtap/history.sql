-- Finished jobs live in jobq_jobs_history (partitioned by status, then finished_at):
--   * every path that finishes a job moves its row there in the same transaction
--     (jobq_complete, jobq_complete_many, jobq_fail to dead_letter / failed, jobq_cancel,
--     jobq_release of a job with a cancel request, a stale takeover in jobq_dequeue), and a
--     retry stays in jobq_jobs;
--   * a requeue moves the row back; jobq_prune deletes from the history; an idempotency key
--     still returns its job's id while the job is in the history;
--   * jobq_all_jobs shows every job with the columns of jobq_jobs;
--   * jobq_maintain_history (and jobq_tick) makes partitions ahead, empties expired ones whole
--     and drops them, never a live job, and moves rows out of a DEFAULT partition into the
--     partition made for them; jobq_prune empties a partition wholly in its range at once.
-- A lock held by another session (lock_timeout) is in tests/python/test_history.py.
BEGIN;
SELECT plan(58);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

-- The layout of the history: by status and then by day (PostgreSQL), or one plain table per
-- status (a Citus distributed schema, where make test-citus runs this file; its retention is
-- tested in history_one_table.sql).
SELECT c.relkind = 'p' AS history_days FROM pg_class AS c
WHERE c.oid = 'jobq__history_succeeded'::regclass \gset

CREATE TEMP VIEW place AS
SELECT j.id, 'live' AS place, j.status FROM jobq_jobs AS j
UNION ALL
SELECT h.id, 'history', h.status FROM jobq_jobs_history AS h;

------------------------------------------------------------------------------------------
-- Each finish path moves the job; a retry stays
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('c', '{"n": 1}', idempotency_key => 'key-c') AS c,
       jobq_enqueue('m1') AS m1, jobq_enqueue('m2') AS m2,
       jobq_enqueue('r', max_attempts => 2) AS r,
       jobq_enqueue('d', max_attempts => 1) AS d,
       jobq_enqueue('f') AS f \gset
SELECT count(*) AS claimed FROM jobq_dequeue('w', batch_size => 10) \gset
SELECT is(:claimed::int, 6, 'six jobs claimed');

SELECT is(jobq_complete(:'c', 'w', result => '{"ok": true}'), true, 'complete');
SELECT results_eq(format('SELECT place, status FROM place WHERE id = %L', :'c'),
                  $$VALUES ('history', 'succeeded')$$, 'a completed job is in the history, succeeded');
\if :history_days
SELECT ok((SELECT tableoid::regclass::text FROM jobq_jobs_history WHERE id = :'c')
              = 'jobq__history_succeeded_' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD'),
          '... in the partition of today''s succeeded jobs');
\else
-- (On a Citus node the row's table is the shard, its name the table's and a shard number.)
SELECT is((SELECT regexp_replace(tableoid::regclass::text, '_[0-9]+$', '') FROM jobq_jobs_history WHERE id = :'c'),
          'jobq__history_succeeded', '... in the table of succeeded jobs');
\endif
SELECT results_eq(format('SELECT result, locked_by, finished_at = now(), payload FROM jobq_all_jobs WHERE id = %L', :'c'),
                  $$VALUES ('{"ok": true}'::jsonb, NULL::text, true, '{"n": 1}'::jsonb)$$,
                  '... with its result, payload and finished_at, and no claim');
SELECT results_eq(format('SELECT status, result FROM jobq_job_status(ARRAY[%L]::uuid[])', :'c'),
                  $$VALUES ('succeeded'::text, '{"ok": true}'::jsonb)$$, 'jobq_job_status finds it');
SELECT is(jobq_complete(:'c', 'w'), false, 'a second completion finds nothing to complete');

SELECT is(jobq_complete_many(ARRAY[:'m1', :'m2']::uuid[], 'w', results => ARRAY['1', '2']::jsonb[]), 2,
          'complete_many');
SELECT results_eq(format('SELECT place, status FROM place WHERE id IN (%L, %L) ORDER BY id', :'m1', :'m2'),
                  $$VALUES ('history', 'succeeded'), ('history', 'succeeded')$$, '... both moved');

SELECT is(jobq_fail(:'r', 'w', 'again', backoff => '0'), 'pending', 'fail with attempts left');
SELECT results_eq(format('SELECT place, status FROM place WHERE id = %L', :'r'),
                  $$VALUES ('live', 'pending')$$, 'a retry stays in jobq_jobs');
SELECT is(jobq_fail(:'d', 'w', 'last'), 'dead_letter', 'fail of the last attempt');
SELECT results_eq(format('SELECT place, status FROM place WHERE id = %L', :'d'),
                  $$VALUES ('history', 'dead_letter')$$, 'a dead letter is in the history');
SELECT is(jobq_fail(:'f', 'w', 'bad', retry => false), 'failed', 'fail without retry');
SELECT results_eq(format('SELECT place, status FROM place WHERE id = %L', :'f'),
                  $$VALUES ('history', 'failed')$$, 'a failed job is in the history');

-- cancel of a pending job; release of a processing job with a cancel request
SELECT jobq_enqueue('x') AS x, jobq_enqueue('y') AS y \gset
SELECT is((SELECT status FROM jobq_cancel(ARRAY[:'x']::uuid[])), 'cancelled', 'cancel a pending job');
SELECT results_eq(format('SELECT place, status FROM place WHERE id = %L', :'x'),
                  $$VALUES ('history', 'cancelled')$$, 'a cancelled job is in the history');
SELECT is((SELECT id FROM jobq_dequeue('w2', '{y}')), :'y'::uuid, 'y claimed');
SELECT is((SELECT status FROM jobq_cancel(ARRAY[:'y']::uuid[])), 'cancel_requested', 'cancel requested');
-- The cancel requests are applied with SET CONSTRAINTS ALL, not by the constraint's name: on
-- a Citus node the name is the shell table's, and the shard's trigger has its own.
SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED;  -- applies it now, as COMMIT would
SELECT is(jobq_release(ARRAY[:'y']::uuid[], 'w2'), 1, 'release of a job with a cancel request');
SELECT results_eq(format('SELECT place, status FROM place WHERE id = %L', :'y'),
                  $$VALUES ('history', 'cancelled')$$, '... it is cancelled, in the history');

-- a stale claim with no attempt left: the takeover dead-letters it
SELECT jobq_enqueue('s', max_attempts => 1) AS s \gset
SELECT is((SELECT id FROM jobq_dequeue('w-old', '{s}')), :'s'::uuid, 's claimed');
-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600) WHERE id = :'s';
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w-new', '{s}')), 0, 'the takeover claims nothing');
SELECT results_eq(format('SELECT place, status FROM place WHERE id = %L', :'s'),
                  $$VALUES ('history', 'dead_letter')$$, 'a stale job without attempts is dead-lettered into the history');

------------------------------------------------------------------------------------------
-- Keys, requeue, prune, the view
------------------------------------------------------------------------------------------

SELECT is(jobq_enqueue('c', idempotency_key => 'key-c'), :'c'::uuid,
          'the key of a finished job returns its id');
SELECT is((SELECT id FROM jobq_enqueue_many('[{"job_type": "c", "idempotency_key": "key-c"}]')), :'c'::uuid,
          '... in jobq_enqueue_many too');
SELECT is((SELECT count(*)::int FROM jobq_jobs WHERE job_type = 'c'), 0, '... and nothing is added');

SELECT is(jobq_requeue_dead_letter(:'d'), true, 'requeue one dead letter');
SELECT results_eq(format('SELECT place, status, attempts, last_error FROM place JOIN jobq_all_jobs USING (id, status) WHERE id = %L', :'d'),
                  $$VALUES ('live', 'pending', 0, 'last')$$, '... back in jobq_jobs, pending, attempts 0, error kept');
SELECT is(jobq_requeue_dead_letters(include_cancelled => true), 4, 'the bulk requeue moves the failed, cancelled and dead_letter ones back');
SELECT is((SELECT count(*)::int FROM jobq_jobs_history WHERE status <> 'succeeded'), 0, '... none is left in the history');

UPDATE jobq_jobs_history SET finished_at = now() - interval '8 days' WHERE id = :'m1';
SELECT is(jobq_prune(), 1::bigint, 'jobq_prune deletes from the history');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE id = :'m1'), 0, '... the old one is gone');

SELECT results_eq(
    $$SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
      WHERE attrelid = 'jobq_all_jobs'::regclass AND attnum > 0 ORDER BY attnum$$,
    $$SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
      WHERE attrelid = 'jobq_jobs'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum$$,
    'jobq_all_jobs has the columns of jobq_jobs'
);
SELECT is((SELECT count(*)::int FROM jobq_all_jobs), (SELECT count(*)::int FROM place),
          'jobq_all_jobs shows every job, live or finished');
SELECT throws_ok($$INSERT INTO jobq_jobs_history (id, queue, job_type, payload, status, priority, attempts,
                       max_attempts, available_at, errors, created_at, updated_at, finished_at, scheduled)
                   VALUES (gen_random_uuid(), 'q', 't', '{}', 'pending', 0, 0, 1, now(), '[]', now(), now(), now(), false)$$,
                 '23514', NULL, 'the history cannot hold a live job');

\if :history_days
------------------------------------------------------------------------------------------
-- Maintenance: partitions ahead, retention, nothing live dropped
------------------------------------------------------------------------------------------

SELECT is(
    (SELECT count(*)::int FROM jobq_retention AS r
     WHERE (SELECT count(*) FROM generate_series(0, 2) AS g
            WHERE EXISTS (SELECT FROM jobq__history_partitions(r.status) AS p
                          WHERE p.lower_at <= ((now() AT TIME ZONE 'UTC')::date + g)::timestamp AT TIME ZONE 'UTC'
                            AND p.upper_at > ((now() AT TIME ZONE 'UTC')::date + g)::timestamp AT TIME ZONE 'UTC')) = 3),
    4, 'every status has partitions for today and the next two days');

-- The partition of the day after tomorrow is gone (ticks stopped) and a job finished then
-- waits in the DEFAULT partition: jobq_tick makes the partition again and moves the job in.
SELECT name AS last_partition FROM jobq__history_partitions('succeeded') ORDER BY lower_at DESC LIMIT 1 \gset
SELECT lower_at AS last_lower FROM jobq__history_partitions('succeeded') ORDER BY lower_at DESC LIMIT 1 \gset
SELECT format('DROP TABLE %I', :'last_partition') AS drop_last \gset
:drop_last;
UPDATE jobq_jobs_history SET finished_at = :'last_lower'::timestamptz + interval '1 hour' WHERE id = :'m2';
SELECT is((SELECT tableoid::regclass::text FROM jobq_jobs_history WHERE id = :'m2'), 'jobq__history_succeeded_default',
          'a job no partition covers waits in the DEFAULT partition');
SELECT lives_ok('SELECT * FROM jobq_tick()', 'jobq_tick runs the maintenance');
SELECT is((SELECT tableoid::regclass::text FROM jobq_jobs_history WHERE id = :'m2'), :'last_partition',
          '... which made the partition again and moved the job into it');

-- An expired partition is emptied whole (its DROP waits for seven more empty ones); live jobs
-- and recent partitions stay.
CREATE TABLE jobq__history_succeeded_20000101 PARTITION OF jobq__history_succeeded
FOR VALUES FROM ('2000-01-01 00:00+00') TO ('2000-01-02 00:00+00');
UPDATE jobq_jobs_history SET finished_at = '2000-01-01 12:00+00' WHERE id = :'c';
SELECT jobq_enqueue('live') AS live \gset
SELECT results_eq($$SELECT r.keep, r.partition_days FROM jobq_set_retention('succeeded', '1 day') AS r WHERE r.status = 'succeeded'$$,
                  $$VALUES ('1 day'::interval, 1)$$, 'jobq_set_retention: succeeded jobs are kept 1 day');
SELECT results_eq($$SELECT action, partition_name FROM jobq_maintain_history()$$,
                  $$VALUES ('truncated', 'jobq__history_succeeded_20000101')$$,
                  'jobq_maintain_history empties the expired partition whole, and only it');
SELECT is((SELECT count(*)::int FROM jobq__history_partitions('succeeded') WHERE name = 'jobq__history_succeeded_20000101'), 1,
          '... and leaves it attached, empty, for a later batch of drops');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE id = :'c'), 0, '... its job is gone with it');
SELECT is((SELECT count(*)::int FROM jobq_jobs WHERE id IN (:'live', :'r')), 2, 'live jobs are never dropped');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE id = :'m2'), 1, 'a recent finished job stays');

-- A DEFAULT partition whose every job has expired is emptied whole; one with a recent job
-- loses only its expired rows.
CREATE TEMP TABLE strays AS
SELECT h.* FROM jobq_jobs_history AS h WHERE h.id = :'m2';
INSERT INTO jobq_jobs_history
SELECT gen_random_uuid(), s.queue, 'stray', s.payload, NULL, s.status, s.priority, s.attempts, s.max_attempts,
       s.available_at, s.locked_at, s.locked_by, s.last_error, s.errors, s.created_at, s.updated_at,
       '2000-02-01 00:00+00'::timestamptz + g * interval '1 hour', s.scheduled, s.result,
       s.cancel_requested_at, s.cancel_reason, s.limit_group, s.limit_key, s.claimed_at
FROM strays AS s CROSS JOIN generate_series(1, 3) AS g;
SELECT results_eq($$SELECT action, partition_name, detail FROM jobq_maintain_history()$$,
                  $$VALUES ('truncated', 'jobq__history_succeeded_default',
                            '3 row(s) finished before ' || (now() - interval '1 day')::text)$$,
                  'a DEFAULT partition whose jobs all expired is emptied whole (TRUNCATE)');
INSERT INTO jobq_jobs_history
SELECT gen_random_uuid(), s.queue, 'stray', s.payload, NULL, s.status, s.priority, s.attempts, s.max_attempts,
       s.available_at, s.locked_at, s.locked_by, s.last_error, s.errors, s.created_at, s.updated_at,
       f, s.scheduled, s.result, s.cancel_requested_at, s.cancel_reason, s.limit_group, s.limit_key, s.claimed_at
FROM strays AS s CROSS JOIN (VALUES ('2000-02-01 00:00+00'::timestamptz), (now() + interval '1 year')) AS v (f);
SELECT results_eq($$SELECT action, detail FROM jobq_maintain_history()$$,
                  $$VALUES ('deleted', '1 row(s) finished before ' || (now() - interval '1 day')::text)$$,
                  '... one that holds a job not yet expired loses only its expired jobs');
SELECT is((SELECT count(*)::int FROM jobq_jobs_history WHERE job_type = 'stray'), 1, '... the recent one stays');

-- jobq_prune empties a partition that lies wholly in its range at once, whatever batch_size,
-- and deletes the rest row by row, batch_size of them.
CREATE TABLE jobq__history_succeeded_20000301 PARTITION OF jobq__history_succeeded
FOR VALUES FROM ('2000-03-01 00:00+00') TO ('2000-03-02 00:00+00');
CREATE TABLE jobq__history_succeeded_20000302 PARTITION OF jobq__history_succeeded
FOR VALUES FROM ('2000-03-02 00:00+00') TO ('2000-03-03 00:00+00');
INSERT INTO jobq_jobs_history
SELECT gen_random_uuid(), s.queue, 'old', s.payload, NULL, s.status, s.priority, s.attempts, s.max_attempts,
       s.available_at, s.locked_at, s.locked_by, s.last_error, s.errors, s.created_at, s.updated_at,
       '2000-03-01 00:00+00'::timestamptz + g * interval '1 hour', s.scheduled, s.result,
       s.cancel_requested_at, s.cancel_reason, s.limit_group, s.limit_key, s.claimed_at
FROM strays AS s CROSS JOIN generate_series(0, 47) AS g;
SELECT is(jobq_prune(now() - '2000-03-02 12:00+00'::timestamptz, batch_size => 5), 29::bigint,
          'jobq_prune: the 24 jobs of the partition wholly in range at once, then 5 row by row');
SELECT results_eq($$SELECT tableoid::regclass::text, count(*)::int FROM jobq_jobs_history WHERE job_type = 'old' GROUP BY 1$$,
                  $$VALUES ('jobq__history_succeeded_20000302', 19)$$,
                  '... the partition in range is empty, the other lost its 5 oldest jobs');
SELECT results_eq($$SELECT action, partition_name FROM jobq_maintain_history()$$,
                  $$VALUES ('truncated', 'jobq__history_succeeded_20000302')$$,
                  'the maintenance empties the expired partition jobq_prune left filled, and drops none of 3 empty ones');

-- Eight empty partitions of the past (3 above, 5 more): all dropped by one call, in one
-- statement; the partitions of the present stay.
SELECT format('CREATE TABLE jobq__history_succeeded_200004%s PARTITION OF jobq__history_succeeded'
              ' FOR VALUES FROM (%L) TO (%L)', to_char(d, 'FM00'),
              ('2000-04-' || d || ' 00:00+00')::timestamptz, ('2000-04-' || d + 1 || ' 00:00+00')::timestamptz)
FROM generate_series(1, 5) AS d \gexec
SELECT results_eq($$SELECT action, partition_name FROM jobq_maintain_history()$$,
                  $$VALUES ('dropped', 'jobq__history_succeeded_20000101'), ('dropped', 'jobq__history_succeeded_20000301'),
                           ('dropped', 'jobq__history_succeeded_20000302'), ('dropped', 'jobq__history_succeeded_20000401'),
                           ('dropped', 'jobq__history_succeeded_20000402'), ('dropped', 'jobq__history_succeeded_20000403'),
                           ('dropped', 'jobq__history_succeeded_20000404'), ('dropped', 'jobq__history_succeeded_20000405')$$,
                  'eight empty partitions of the past are dropped together');
SELECT is((SELECT count(*)::int FROM pg_class WHERE relname LIKE 'jobq\_\_history\_succeeded\_2000%'), 0,
          '... and are gone from the catalogue');
SELECT is((SELECT count(*)::int FROM jobq__history_partitions('succeeded')
           WHERE upper_at > (now() AT TIME ZONE 'UTC')::date::timestamp AT TIME ZONE 'UTC'), 3,
          '... the partitions of today and the next two days stay');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE id = :'m2'), 1, '... with their jobs');

\else
SELECT skip('the history has no day partitions here (Citus): history_one_table.sql', 20);
\endif

SELECT throws_ok($$SELECT * FROM jobq_maintain_history(lock_timeout => '0')$$, '22023', NULL,
                 'lock_timeout 0 (which would mean wait for ever) is refused');
SELECT throws_ok($$SELECT * FROM jobq_set_retention('pending', '1 day')$$, '22023', NULL,
                 'a live status has no retention');

SELECT * FROM finish();
ROLLBACK;
