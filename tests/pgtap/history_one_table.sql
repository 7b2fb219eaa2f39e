-- The history as a Citus distributed schema has it: each status's partition of
-- jobq_jobs_history one plain table, no day partitions (the installer makes that layout
-- before it distributes a schema, docs/scaling.md). On PostgreSQL this file makes it for
-- succeeded in its own transaction, as the installer does; on a tenant's Citus node it is
-- there already. The functions read the layout from the catalogue:
--   * a completion lands in the table, jobq__history_partitions lists nothing of it;
--   * jobq_maintain_history makes no partition for it and deletes its jobs older than keep,
--     at most 10,000 per call, the oldest first, never a recent or a live job;
--   * jobq_prune deletes row by row.
BEGIN;
SELECT plan(12);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

SELECT c.relkind = 'p' AS history_days FROM pg_class AS c
WHERE c.oid = 'jobq__history_succeeded'::regclass \gset
\if :history_days
DROP TABLE jobq__history_succeeded;
CREATE TABLE jobq__history_succeeded PARTITION OF jobq_jobs_history FOR VALUES IN ('succeeded');
\endif

SELECT is((SELECT relkind::text FROM pg_class WHERE oid = 'jobq__history_succeeded'::regclass), 'r',
          'the succeeded jobs'' history is one plain table');
SELECT is_empty($$SELECT * FROM jobq__history_partitions('succeeded')$$,
                'jobq__history_partitions lists no partition of it');

SELECT jobq_enqueue('t') AS done, jobq_enqueue('t') AS live \gset
SELECT is((SELECT id FROM jobq_dequeue('w', batch_size => 1)), :'done'::uuid, 'one job claimed');
SELECT is(jobq_complete(:'done', 'w'), true, 'and completed');
-- (On a Citus node the row's table is the shard, its name the table's and a shard number.)
SELECT is((SELECT regexp_replace(tableoid::regclass::text, '_[0-9]+$', '') FROM jobq_jobs_history WHERE id = :'done'),
          'jobq__history_succeeded', 'a completed job is in the table of its status');

SELECT results_eq($$SELECT r.keep FROM jobq_set_retention('succeeded', '1 day') AS r WHERE r.status = 'succeeded'$$,
                  $$VALUES ('1 day'::interval)$$, 'succeeded jobs are kept 1 day');
SELECT is_empty($$SELECT * FROM jobq_maintain_history() WHERE partition_name LIKE 'jobq\_\_history\_succeeded%'$$,
                'nothing has expired: the maintenance makes no partition and deletes nothing');

-- 10,001 expired jobs (each finished an hour after the one before, from 2000-01-01): two calls.
INSERT INTO jobq_jobs_history
SELECT gen_random_uuid(), h.queue, 'old', h.payload, NULL, h.status, h.priority, h.attempts, h.max_attempts,
       h.available_at, h.locked_at, h.locked_by, h.last_error, h.errors, h.created_at, h.updated_at,
       '2000-01-01 00:00+00'::timestamptz + g * interval '1 hour', h.scheduled, h.result,
       h.cancel_requested_at, h.cancel_reason, h.limit_group, h.limit_key, h.claimed_at
FROM jobq_jobs_history AS h CROSS JOIN generate_series(0, 10000) AS g
WHERE h.id = :'done';
SELECT results_eq($$SELECT action, partition_name, detail FROM jobq_maintain_history() WHERE partition_name LIKE 'jobq\_\_history\_succeeded%'$$,
                  $$VALUES ('deleted', 'jobq__history_succeeded',
                            '10000 row(s) finished before ' || (now() - interval '1 day')::text
                            || ': more are left to the next call')$$,
                  'the maintenance deletes 10,000 expired jobs in one call, and says more are left');
SELECT is((SELECT min(finished_at) FROM jobq_jobs_history WHERE job_type = 'old'),
          '2000-01-01 00:00+00'::timestamptz + 10000 * interval '1 hour', '... the oldest first');
SELECT results_eq($$SELECT action, detail FROM jobq_maintain_history() WHERE partition_name LIKE 'jobq\_\_history\_succeeded%'$$,
                  $$VALUES ('deleted', '1 row(s) finished before ' || (now() - interval '1 day')::text)$$,
                  'the next call deletes the rest');
SELECT is((SELECT count(*)::int FROM jobq_all_jobs WHERE id IN (:'done', :'live')), 2,
          'the recent finished job and the live one stay');

INSERT INTO jobq_jobs_history
SELECT gen_random_uuid(), h.queue, 'old', h.payload, NULL, h.status, h.priority, h.attempts, h.max_attempts,
       h.available_at, h.locked_at, h.locked_by, h.last_error, h.errors, h.created_at, h.updated_at,
       '2000-01-01 00:00+00'::timestamptz, h.scheduled, h.result,
       h.cancel_requested_at, h.cancel_reason, h.limit_group, h.limit_key, h.claimed_at
FROM jobq_jobs_history AS h
WHERE h.id = :'done';
SELECT is(jobq_prune(interval '1 day', batch_size => 5), 1::bigint, 'jobq_prune deletes row by row');

SELECT * FROM finish();
ROLLBACK;
