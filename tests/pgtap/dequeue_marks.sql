-- jobq_dequeue under a held horizon: the session's marks (jobq.claim_marks).
--
-- Rows that this transaction claimed are dead to nobody while it is open, exactly as under a
-- snapshot held by another session: their entries stay in jobq_jobs_claim_idx and every full
-- scan passes them. After more than 10,000 such entries a claim sets marks, and the claims of
-- the session read each range from its mark: in claim order still, higher priorities and jobs
-- promoted or taken back by the claim itself first; a job that becomes pending behind a mark
-- by another way (an earlier run_at, a late commit) is claimed at the next full scan, at most
-- a minute and at least a second later. now() is fixed in this transaction, clock_timestamp()
-- is not: the time until the next full scan passes with pg_sleep.
BEGIN;
SELECT plan(17);

DELETE FROM jobq_jobs;
SELECT pg_catalog.set_config('jobq.claim_marks', '', FALSE);

CREATE TEMP TABLE got (n serial, id uuid, priority int, available_at timestamptz);
CREATE FUNCTION pg_temp.claim(batch integer, worker text DEFAULT 'w1') RETURNS SETOF uuid
LANGUAGE sql AS $$
    INSERT INTO got (id, priority, available_at)
    SELECT d.id, d.priority, d.available_at
    FROM jobq_dequeue(worker, ARRAY['t'], batch) AS d
    RETURNING id
$$;
CREATE FUNCTION pg_temp.marks() RETURNS jsonb
LANGUAGE sql AS $$ SELECT nullif(current_setting('jobq.claim_marks', TRUE), '')::jsonb $$;

SELECT count(*) FROM jobq_enqueue_many(
    (SELECT jsonb_agg(jsonb_build_object('job_type', 't')) FROM generate_series(1, 30000))
);

SELECT count(*) FROM pg_temp.claim(100);
SELECT is(pg_temp.marks(), NULL, 'a claim that passes few dead entries sets no marks');

SELECT count(*) FROM generate_series(1, 10) AS g, LATERAL pg_temp.claim(1000 + 0 * g) AS c;
SELECT isnt(pg_temp.marks(), NULL,
            'after more than 10,000 dead entries passed, the session has marks');
SELECT is(jsonb_array_length(pg_temp.marks() -> 'r'), 1, '... one per range (one here)');
SELECT ok((pg_temp.marks() ->> 'until')::bigint
          <= (extract(epoch FROM clock_timestamp() + interval '1 minute') * 1000000)::bigint,
          '... until a full scan within a minute');

SELECT count(*) FROM generate_series(1, 5) AS g, LATERAL pg_temp.claim(1000 + 0 * g) AS c;
SELECT is((SELECT count(DISTINCT id) FROM got), 15100::bigint,
          'claims with marks go on: 15,100 jobs, each once');
SELECT is(
    (SELECT count(*) FROM (
        SELECT available_at, id, lag(available_at) OVER w AS pa, lag(id) OVER w AS pi
        FROM got WINDOW w AS (ORDER BY n)
    ) AS x WHERE (available_at, id) < (pa, pi)),
    0::bigint,
    '... in claim order'
);
SELECT is(
    (SELECT count(*) FROM jobq_jobs AS j, (SELECT * FROM got ORDER BY n DESC LIMIT 1) AS l
     WHERE j.status = 'pending' AND (j.available_at, j.id) < (l.available_at, l.id)),
    0::bigint,
    '... and no job left pending comes before the last one claimed'
);

-- Higher priority: read from the head of its range, at once.
SELECT jobq_enqueue('t', priority => 5) AS high \gset
SELECT is(pg_temp.claim(1), :'high'::uuid,
          'with marks, a job of higher priority enqueued since is claimed first');

-- Promoted by the claim itself: lowers the mark.
SELECT jobq_enqueue('t') AS due \gset
UPDATE jobq_jobs SET scheduled = TRUE, available_at = now() - interval '1 hour'
WHERE id = :'due';
SELECT is(pg_temp.claim(1), :'due'::uuid,
          'a scheduled job that comes due in this claim is ranked as a full scan ranks it');

-- Taken back by the claim itself: a full scan. (The claim of 10 moves the mark past the job.)
SELECT count(*) FROM pg_temp.claim(10, 'w2');
-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs SET locked_at = to_timestamp(extract(epoch FROM locked_at - timestamptz 'epoch') - 3600), locked_until = to_timestamp(extract(epoch FROM locked_until - timestamptz 'epoch') - 3600)
WHERE id = (SELECT id FROM got ORDER BY n LIMIT 1);
SELECT is(
    (SELECT d.id FROM jobq_dequeue('w1', ARRAY['t'], 1, lock_timeout => '1 minute') AS d),
    (SELECT id FROM got ORDER BY n LIMIT 1),
    'a stale claim taken back by this claim is claimed again first'
);

-- Behind a mark by another way: at the next full scan.
SELECT count(*) FROM generate_series(1, 5) AS g, LATERAL pg_temp.claim(1000 + 0 * g) AS c;
SELECT isnt(pg_temp.marks(), NULL, 'marks again after more claims');
SELECT jobq_enqueue('t', run_at => now() - interval '1 day') AS early \gset
SELECT is(
    (SELECT d.id FROM jobq_dequeue('w1', ARRAY['t'], 1, queues => ARRAY['default']) AS d),
    :'early'::uuid,
    'a claim with other filters does not use the marks: the earlier job first'
);
-- Another worker id: a full scan's marks start at the first job that its worker holds since
-- the claim's now() (the whole transaction here).
SELECT count(*) FROM pg_temp.claim(1000, 'w2');
SELECT isnt(pg_temp.marks(), NULL, '... and then marks for the first filters again');
SELECT jobq_enqueue('t', run_at => now() - interval '1 day') AS early2 \gset
SELECT isnt(pg_temp.claim(1, 'w2'), :'early2'::uuid,
            'with marks, a job enqueued behind the mark is not seen by this session at once');
SELECT pg_sleep(greatest(0, (pg_temp.marks() ->> 'until')::bigint / 1e6
                            - extract(epoch FROM clock_timestamp())::float8 + 0.05));
SELECT is(pg_temp.claim(1, 'w2'), :'early2'::uuid,
          'a job enqueued behind the mark is claimed first at the next full scan');

-- Whatever the setting holds, a claim works; values it did not write are ignored.
SELECT jobq_enqueue('t', run_at => now() - interval '2 days') AS early3 \gset
SELECT pg_catalog.set_config('jobq.claim_marks', '{"k": "x", "r": [[1', FALSE);
SELECT is(pg_temp.claim(1, 'w2'), :'early3'::uuid, 'a malformed jobq.claim_marks is ignored');
SELECT jobq_enqueue('t', run_at => now() - interval '3 days') AS early4 \gset
CREATE FUNCTION pg_temp.forged(until interval) RETURNS text
LANGUAGE sql AS $$
    SELECT pg_catalog.set_config('jobq.claim_marks', jsonb_build_object(
        'k', hashtextextended(format('%L %L %L', current_schema(), ARRAY['t'], NULL::text[]), 0),
        'until', (extract(epoch FROM clock_timestamp() + until) * 1000000)::bigint,
        'r', '[[0, 0, 0, null, "00000000-0000-0000-0000-000000000000"]]'::jsonb
    )::text, FALSE)
$$;
SELECT pg_temp.forged('30 seconds');
SELECT is(pg_temp.claim(1, 'w2'), NULL,
          'marks a session forged for itself hide jobs from its own claims only...');
SELECT pg_temp.forged('1 day');
SELECT is(pg_temp.claim(1, 'w2'), :'early4'::uuid,
          '... and marks whose next full scan is more than a minute away are ignored');

SELECT * FROM finish();
ROLLBACK;
