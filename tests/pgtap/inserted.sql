-- jobq_inserted(job_ids uuid[]) RETURNS TABLE(ord int, id uuid, inserted boolean)
--
-- Which of the ids an enqueue returned are jobs the current transaction created: true once
-- per new job (the first element with its id), false for a repeated id, a job from before
-- the transaction (its idempotency key was there), an unknown id or NULL; one row per element
-- in array order; it sees what the same statement inserted.
BEGIN;
SELECT plan(7);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

-- a job from "before": created_at set back, as a job a committed transaction made
SELECT jobq_enqueue('t', idempotency_key => 'old') AS old \gset
UPDATE jobq_jobs SET created_at = now() - interval '1 minute' WHERE id = :'old';

-- a batch: a new key, the old key, a repeat of the new key, no key
SELECT array_agg(id ORDER BY ord) AS ids FROM jobq_enqueue_many(
    '[{"job_type": "t", "idempotency_key": "new"}, {"job_type": "t", "idempotency_key": "old"},
      {"job_type": "t", "idempotency_key": "new"}, {"job_type": "t"}]'
) \gset

SELECT results_eq(
    format('SELECT ord, inserted FROM jobq_inserted(%L::uuid[])', :'ids'),
    $$VALUES (1, true), (2, false), (3, false), (4, true)$$,
    'a new job once, its repeat and the job from before not'
);
SELECT is(
    (SELECT id FROM jobq_inserted(:'ids'::uuid[]) WHERE ord = 2), :'old'::uuid,
    'each row carries its id'
);

-- in the same statement as the enqueue: its jobs are seen
SELECT results_eq(
    $$SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (WHERE n.inserted)
      FROM jobq_inserted((
          SELECT pg_catalog.array_agg(e.id ORDER BY e.ord)
          FROM jobq_enqueue_arrays(ARRAY['t', 't', 't'], idempotency_keys => ARRAY['old', 'x', NULL]) AS e
      )) AS n$$,
    $$VALUES (3::bigint, 2::bigint)$$,
    'in one statement with jobq_enqueue_arrays: 3 jobs, 2 added'
);

SELECT results_eq(
    $$SELECT ord, inserted FROM jobq_inserted(ARRAY[NULL, '01890000-0000-7000-8000-000000000000']::uuid[])$$,
    $$VALUES (1, false), (2, false)$$,
    'NULL and an unknown id: not inserted'
);
SELECT is_empty('SELECT * FROM jobq_inserted(NULL)', 'NULL: no rows');
SELECT is_empty('SELECT * FROM jobq_inserted(ARRAY[]::uuid[])', 'an empty array: no rows');

-- a job that finished in this transaction still counts as created by it
SELECT jobq_enqueue('f') AS fin \gset
SELECT id AS claimed FROM jobq_dequeue('w1', job_types => ARRAY['f']) \gset
SELECT jobq_complete(:'fin', 'w1') AS ignored \gset
SELECT is(
    (SELECT inserted FROM jobq_inserted(ARRAY[:'fin']::uuid[])), true,
    'a job created and finished in this transaction: inserted'
);

SELECT * FROM finish();
ROLLBACK;
