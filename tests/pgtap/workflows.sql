-- Dependencies between jobs: jobq_enqueue(depends_on, on_dependency_failure),
-- jobq_enqueue_many (depends_on, after), jobq_add_dependencies, jobq_dependencies,
-- jobq_job_graph.
--
-- A job with a dependency that has not succeeded is waiting and never claimed; the transaction
-- that makes its last dependency succeed makes it pending. A dependency that ends failed,
-- dead_letter or cancelled: cancel (default) cancels the dependent, naming the dependency, and
-- its dependents follow their rules; run releases it once every dependency has finished; wait
-- keeps it waiting until the dependency is requeued and succeeds. Bad input is 22023 and
-- changes nothing.
BEGIN;
SELECT plan(90);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;

CREATE FUNCTION pg_temp.st(job uuid) RETURNS text LANGUAGE sql AS
$$ SELECT status FROM jobq_all_jobs WHERE id = job $$;

-- Claims one job by id as worker w and completes it, fails it with a retry or for good.
CREATE FUNCTION pg_temp.run(job uuid, outcome text DEFAULT 'ok') RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    UPDATE jobq_jobs SET available_at = now(), scheduled = false,
        priority = (SELECT max(priority) + 1 FROM jobq_jobs)  -- first in line
    WHERE id = job;
    PERFORM FROM jobq_dequeue('w', batch_size => 1) AS d WHERE d.id = job;
    IF NOT FOUND THEN
        RETURN 'not claimed';
    END IF;
    IF outcome = 'ok' THEN
        PERFORM jobq_complete(job, 'w', result => '{"r": 1}');
    ELSIF outcome = 'retry' THEN
        PERFORM jobq_fail(job, 'w', 'boom', retry => true);
    ELSE
        PERFORM jobq_fail(job, 'w', 'boom', retry => false);
    END IF;
    RETURN pg_temp.st(job);
END;
$$;

------------------------------------------------------------------------------------------
-- release exactly when the last dependency succeeds
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('p') AS p1, jobq_enqueue('p') AS p2 \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'p1', :'p2']::uuid[]) AS c \gset
SELECT is(pg_temp.st(:'c'), 'waiting', 'a job with unfinished dependencies is waiting');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('x', ARRAY['c'], 10)), 0, 'a waiting job is never claimed');
SELECT is(pg_temp.run(:'p1', 'retry'), 'pending', 'a dependency fails with attempts left');
SELECT is(pg_temp.st(:'c'), 'waiting', 'no release while a dependency retries');
SELECT is(pg_temp.run(:'p1'), 'succeeded', 'the retried dependency succeeds');
SELECT is(pg_temp.st(:'c'), 'waiting', 'still waiting for the other dependency');
SELECT is(pg_temp.run(:'p2'), 'succeeded', 'the last dependency succeeds');
SELECT is(pg_temp.st(:'c'), 'pending', 'released by the last success');
SELECT is((SELECT waiting_on FROM jobq_jobs WHERE id = :'c'), 0, 'nothing left to wait for');
SELECT results_eq(
    format($$SELECT id, status, result FROM jobq_dependencies(%L) ORDER BY id$$, :'c'),
    format($$VALUES (%L::uuid, 'succeeded'::text, '{"r": 1}'::jsonb), (%L::uuid, 'succeeded', '{"r": 1}')$$,
           least(:'p1'::uuid, :'p2'::uuid), greatest(:'p1'::uuid, :'p2'::uuid)),
    'jobq_dependencies gives the dependencies with their results'
);

-- a dependency that already succeeded holds nothing back; a running one does
SELECT jobq_enqueue('c', depends_on => ARRAY[:'p1']::uuid[]) AS c2 \gset
SELECT is(pg_temp.st(:'c2'), 'pending', 'a job whose dependencies all succeeded is pending at once');

-- expired lock taken over: still no release until the new claim completes
SELECT jobq_enqueue('p') AS p3 \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'p3']::uuid[]) AS c3 \gset
UPDATE jobq_jobs SET priority = 1000000 WHERE id = :'p3';
SELECT is((SELECT id FROM jobq_dequeue('dead', ARRAY['p'])), :'p3'::uuid, 'a worker claims the dependency');
UPDATE jobq_jobs SET locked_until = now() - interval '1 second' WHERE id = :'p3';
SELECT is((SELECT id FROM jobq_dequeue('alive', ARRAY['p'])), :'p3'::uuid, 'another takes it over after its lock expired');
SELECT is(jobq_complete(:'p3', 'dead'), false, 'the first worker can no longer complete it');
SELECT is(pg_temp.st(:'c3'), 'waiting', 'no release by the fenced-off completion');
SELECT is(jobq_complete(:'p3', 'alive'), true, 'the new claim completes');
SELECT is(pg_temp.st(:'c3'), 'pending', 'released by the completion that counts');

------------------------------------------------------------------------------------------
-- on_dependency_failure through fail, dead letter and cancel, transitively
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('p') AS f \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'f']::uuid[]) AS fc \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'fc']::uuid[]) AS fcc \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'fc']::uuid[], on_dependency_failure => 'run') AS fcr \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'f']::uuid[], on_dependency_failure => 'run') AS fr \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'f']::uuid[], on_dependency_failure => 'wait') AS fw \gset
SELECT is(pg_temp.run(:'f', 'fail'), 'failed', 'the dependency fails for good');
SELECT is(pg_temp.st(:'fc'), 'cancelled', 'cancel: the dependent is cancelled');
SELECT is((SELECT last_error FROM jobq_all_jobs WHERE id = :'fc'), format('dependency %s ended failed', :'f'),
          'the reason names the dependency');
SELECT is(pg_temp.st(:'fcc'), 'cancelled', 'cancel applies transitively');
SELECT is(pg_temp.st(:'fcr'), 'pending', 'run below a cancelled job runs');
SELECT is(pg_temp.st(:'fr'), 'pending', 'run: released once the dependency finished');
SELECT is(pg_temp.st(:'fw'), 'waiting', 'wait: keeps waiting');
SELECT is((SELECT count(*)::int FROM jobq_jobs WHERE finished_at IS NOT NULL), 0, 'cancelled dependents moved to the history');

-- wait: requeue the dependency, it succeeds, the dependent runs
SELECT ok(jobq_requeue_dead_letter(:'f'), 'the failed dependency is requeued');
SELECT is(pg_temp.st(:'fw'), 'waiting', 'wait: still waiting after the requeue');
SELECT is(pg_temp.run(:'f'), 'succeeded', 'the requeued dependency succeeds');
SELECT is(pg_temp.st(:'fw'), 'pending', 'wait: released by the success after the requeue');

-- dead letter (attempts used up) and cancel of a dependency
SELECT jobq_enqueue('p', max_attempts => 1) AS d \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'d']::uuid[]) AS dc \gset
SELECT is(pg_temp.run(:'d', 'retry'), 'dead_letter', 'the dependency is dead-lettered');
SELECT is(pg_temp.st(:'dc'), 'cancelled', 'cancel: dependent of a dead letter cancelled');
SELECT jobq_enqueue('p') AS k \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'k']::uuid[]) AS kc \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'k']::uuid[], on_dependency_failure => 'run') AS kr \gset
SELECT is((SELECT status FROM jobq_cancel(ARRAY[:'k']::uuid[])), 'cancelled', 'the pending dependency is cancelled');
SELECT is(pg_temp.st(:'kc'), 'cancelled', 'cancel: its dependent is cancelled');
SELECT is(pg_temp.st(:'kr'), 'pending', 'run: its dependent is released');
-- cancelling a waiting job cancels it at once, and its dependents follow
SELECT jobq_enqueue('p') AS w0 \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'w0']::uuid[]) AS w1 \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'w1']::uuid[]) AS w2 \gset
SELECT is((SELECT status FROM jobq_cancel(ARRAY[:'w1']::uuid[])), 'cancelled', 'a waiting job is cancelled at once');
SELECT is(pg_temp.st(:'w2'), 'cancelled', 'and its dependents follow');
SELECT is(pg_temp.st(:'w0'), 'pending', 'its dependency is untouched');

-- requeue of a run dependent's dependency: it holds the dependent back again
SELECT jobq_enqueue('p') AS q1, jobq_enqueue('p') AS q2 \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'q1', :'q2']::uuid[], on_dependency_failure => 'run') AS qr \gset
SELECT is(pg_temp.run(:'q1', 'fail'), 'failed', 'one dependency of a run job fails');
SELECT ok(jobq_requeue_dead_letter(:'q1'), 'and is requeued');
SELECT is(pg_temp.run(:'q2'), 'succeeded', 'the other succeeds');
SELECT is(pg_temp.st(:'qr'), 'waiting', 'run: the requeued dependency holds it back again');
SELECT is(pg_temp.run(:'q1'), 'succeeded', 'the requeued one succeeds');
SELECT is(pg_temp.st(:'qr'), 'pending', 'run: released');

-- prune of a failed dependency: a job waiting for it under rule wait can never run and is
-- cancelled (its dependents follow); the pruned jobs' own edges go with them
SELECT jobq_enqueue('p') AS z \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'z']::uuid[], on_dependency_failure => 'wait') AS zw \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'zw']::uuid[], on_dependency_failure => 'run') AS zwr \gset
SELECT is(pg_temp.run(:'z', 'fail'), 'failed', 'the dependency of a wait job fails');
SELECT is(pg_temp.st(:'zw'), 'waiting', 'wait: waiting');
SELECT jobq_enqueue('c', depends_on => ARRAY[:'p1']::uuid[]) AS zf \gset
SELECT is(pg_temp.run(:'zf', 'fail'), 'failed', 'a job with a dependency fails too');
-- Times are moved back in seconds since the epoch, IMMUTABLE operations: Citus refuses
-- timestamptz - interval over a column in an UPDATE, and make test-citus runs this file.
UPDATE jobq_jobs_history SET finished_at = to_timestamp(extract(epoch FROM finished_at - timestamptz 'epoch') - 3600) WHERE id IN (:'z', :'zf');
SELECT cmp_ok(jobq_prune(interval '1 minute', ARRAY['failed']), '>=', 2::bigint, 'both are pruned');
SELECT is(pg_temp.st(:'zw'), 'cancelled', 'wait: cancelled once its dependency is gone');
SELECT is((SELECT last_error FROM jobq_all_jobs WHERE id = :'zw'), format('dependency %s ended pruned', :'z'),
          'the reason says the dependency was pruned');
SELECT is(pg_temp.st(:'zwr'), 'pending', 'run below it: released');
SELECT is((SELECT count(*)::int FROM jobq_job_dependencies WHERE job_id = :'zf'), 0,
          'no edge is left of the pruned jobs');

------------------------------------------------------------------------------------------
-- a whole graph in one jobq_enqueue_many; grafts
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('p') AS ext \gset
CREATE TEMP TABLE g AS
SELECT * FROM jobq_enqueue_many(format($$[
    {"job_type": "a"},
    {"job_type": "b", "after": [1]},
    {"job_type": "b", "after": [1]},
    {"job_type": "d", "after": [2, 3], "depends_on": ["%s"]},
    {"job_type": "e", "after": [6]},
    {"job_type": "f"}
]$$, :'ext')::jsonb);
SELECT is(
    (SELECT array_agg(pg_temp.st(id) ORDER BY ord) FROM g),
    ARRAY['pending', 'waiting', 'waiting', 'waiting', 'waiting', 'pending'],
    'after and depends_on make the graph (a forward after included)'
);
SELECT is((SELECT waiting_on FROM jobq_jobs WHERE id = (SELECT id FROM g WHERE ord = 4)), 3,
          'a fan-in waits for each of its dependencies');
SELECT is(pg_temp.run((SELECT id FROM g WHERE ord = 1)), 'succeeded', 'the root succeeds');
SELECT is((SELECT array_agg(pg_temp.st(id) ORDER BY ord) FROM g WHERE ord IN (2, 3)),
          ARRAY['pending', 'pending'], 'fan-out released in that transaction');
SELECT is((SELECT count(*)::int FROM jobq_job_graph((SELECT id FROM g WHERE ord = 1))), 4,
          'jobq_job_graph: the job and what depends on it, transitively');

-- graft: a running dependency adds work in front of the fan-in; it is awaited downstream
SELECT id AS b2 FROM g WHERE ord = 2 \gset
SELECT id AS fanin FROM g WHERE ord = 4 \gset
SELECT jobq_enqueue('graft') AS gr \gset
SELECT jobq_enqueue('graft', depends_on => ARRAY[:'gr']::uuid[]) AS gr2 \gset
SELECT is(jobq_add_dependencies(:'fanin', ARRAY[:'gr2']::uuid[]), 1, 'a waiting job gets a new dependency');
SELECT is(pg_temp.run(:'b2'), 'succeeded', 'b');
SELECT is(pg_temp.run((SELECT id FROM g WHERE ord = 3)), 'succeeded', 'b');
SELECT is(pg_temp.run(:'ext'), 'succeeded', 'the external dependency');
SELECT is(pg_temp.st(:'fanin'), 'waiting', 'the fan-in waits for the graft, two levels deep');
SELECT is(pg_temp.run(:'gr'), 'succeeded', 'graft');
SELECT is(pg_temp.run(:'gr2'), 'succeeded', 'graft');
SELECT is(pg_temp.st(:'fanin'), 'pending', 'released once the graft succeeded');
SELECT is(jobq_add_dependencies(:'fanin', ARRAY[:'gr']::uuid[]), 0, 'no graft on a job no longer waiting');

------------------------------------------------------------------------------------------
-- a release reads the edges of the finished jobs and their dependents by index, whatever the
-- statistics (none here: a graph is often enqueued and run before any ANALYZE) and beside
-- many other waiting jobs: no scan of the edge table, no read of every waiting job
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('ix') AS ixw \gset
SELECT count(*) FROM jobq_enqueue_many(
    (SELECT jsonb_agg(jsonb_build_object('job_type', 'ixw', 'depends_on', ARRAY[:'ixw']))
     FROM generate_series(1, 3000))
) \gset
CREATE TEMP TABLE ixp AS SELECT jobq_enqueue('ix', priority => 1000000) AS id FROM generate_series(1, 10);
SELECT count(*) FROM jobq_enqueue_many(
    (SELECT jsonb_agg(jsonb_build_object('job_type', 'ixc', 'depends_on', ARRAY[p.id]))
     FROM ixp AS p, generate_series(1, 20))
) \gset
SELECT is((SELECT count(*)::int FROM jobq_dequeue('ixw', ARRAY['ix'], 10) AS d JOIN ixp USING (id)), 10,
          'ten dependencies of 20 jobs each are claimed, beside 3,000 other waiting jobs');
-- (numscans of a table counts its sequential scans)
SELECT pg_stat_get_xact_numscans('jobq_job_dependencies'::regclass) AS edge_seqscans,
       pg_stat_get_xact_tuples_returned('jobq_jobs_waiting_idx'::regclass) AS waiting_reads \gset
SELECT is(jobq_complete_many(ARRAY(SELECT id FROM ixp), 'ixw'), 10, 'they succeed in one call');
SELECT is((SELECT count(*)::int FROM jobq_jobs WHERE job_type = 'ixc' AND status = 'pending'), 200,
          'their 200 dependents are released');
SELECT is(pg_stat_get_xact_numscans('jobq_job_dependencies'::regclass), :'edge_seqscans'::bigint, 'the release did not scan the edge table');
SELECT is(pg_stat_get_xact_tuples_returned('jobq_jobs_waiting_idx'::regclass), :'waiting_reads'::bigint,
          'nor read the waiting jobs beside its dependents');

------------------------------------------------------------------------------------------
-- jobq_complete_and_claim: the dependents its completion releases go to the worker, up to
-- batch_size, highest priority first (the others pending), read by index as above
------------------------------------------------------------------------------------------

SELECT jobq_enqueue('hp') AS hp1, jobq_enqueue('hp') AS hp2 \gset
CREATE TEMP TABLE hc AS
SELECT jobq_enqueue('hc', priority => g % 3, depends_on => ARRAY[:'hp1', :'hp2']::uuid[]) AS id
FROM generate_series(1, 30) AS g;
SELECT is((SELECT count(*)::int FROM jobq_dequeue('hw', ARRAY['hp'], 2)), 2, 'both dependencies are claimed');
SELECT results_eq(
    format($$SELECT id, status FROM jobq_complete_and_claim(ARRAY[%L]::uuid[], 'hw',
             job_types => ARRAY['hp', 'hc'], batch_size => 5)$$, :'hp1'),
    format($$VALUES (%L::uuid, 'succeeded'::text)$$, :'hp1'),
    'a completion that releases nothing returns its job alone (nothing to claim)'
);
SELECT is((SELECT count(*)::int FROM jobq_jobs WHERE job_type = 'hc' AND status = 'waiting'), 30,
          'no early release');
SELECT pg_stat_get_xact_numscans('jobq_job_dependencies'::regclass) AS edge_seqscans,
       pg_stat_get_xact_tuples_returned('jobq_jobs_waiting_idx'::regclass) AS waiting_reads \gset
CREATE TEMP TABLE got AS
SELECT * FROM jobq_complete_and_claim(ARRAY[:'hp2']::uuid[], 'hw', job_types => ARRAY['hp', 'hc'],
                                      batch_size => 5);
SELECT results_eq($$SELECT id, status FROM got WHERE status = 'succeeded'$$,
                  format($$VALUES (%L::uuid, 'succeeded'::text)$$, :'hp2'), 'the last completion');
SELECT is((SELECT count(*)::int FROM got WHERE status = 'processing'), 5, 'hands off five dependents');
SELECT is((SELECT pg_catalog.array_agg(DISTINCT priority) FROM got WHERE status = 'processing'), ARRAY[2],
          'of the highest priority');
SELECT is((SELECT count(*)::int FROM jobq_jobs AS j JOIN got USING (id)
           WHERE j.status = 'processing' AND j.locked_by = 'hw' AND j.attempts = 1
             AND j.claimed_at = now() AND j.waiting_on = 0), 5,
          'claimed for the worker as a claim claims them');
SELECT is((SELECT count(*)::int FROM jobq_jobs WHERE job_type = 'hc' AND status = 'pending'), 25,
          'the others are released pending');
SELECT is(pg_stat_get_xact_numscans('jobq_job_dependencies'::regclass), :'edge_seqscans'::bigint,
          'the hand-off did not scan the edge table');
SELECT is(pg_stat_get_xact_tuples_returned('jobq_jobs_waiting_idx'::regclass), :'waiting_reads'::bigint,
          'nor read the waiting jobs beside its dependents');

------------------------------------------------------------------------------------------
-- bad input: 22023, nothing changes
------------------------------------------------------------------------------------------

SELECT count(*) AS before FROM jobq_all_jobs \gset
SELECT throws_ok(format($$SELECT jobq_enqueue('x', depends_on => ARRAY[%L]::uuid[])$$, gen_random_uuid()),
                 '22023', NULL, 'an unknown id is refused');
SELECT throws_ok($$SELECT jobq_enqueue('x', depends_on => ARRAY[NULL]::uuid[])$$, '22023', NULL, 'a NULL id');
SELECT throws_ok($$SELECT jobq_enqueue('x', on_dependency_failure => 'ignore')$$, '22023', NULL, 'an unknown rule');
SELECT throws_ok($$SELECT jobq_enqueue_many('[{"job_type": "a", "after": [2]}, {"job_type": "b", "after": [1]}]')$$,
                 '22023', NULL, 'a cycle of after');
SELECT throws_ok($$SELECT jobq_enqueue_many('[{"job_type": "a", "after": [1]}]')$$, '22023', NULL, 'after naming itself');
SELECT throws_ok($$SELECT jobq_enqueue_many('[{"job_type": "a", "after": [3]}]')$$, '22023', NULL, 'after outside the array');
SELECT throws_ok($$SELECT jobq_enqueue_many('[{"job_type": "a"}, {"job_type": "a", "depends_on": ["00000000-0000-0000-0000-000000000000"]}]')$$,
                 '22023', NULL, 'an unknown id in jobq_enqueue_many');
SELECT jobq_enqueue('p') AS y1 \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'y1']::uuid[]) AS y2 \gset
SELECT jobq_enqueue('c', depends_on => ARRAY[:'y2']::uuid[]) AS y3 \gset
SELECT count(*) AS before FROM jobq_all_jobs \gset
SELECT throws_ok(format($$SELECT jobq_add_dependencies(%L, ARRAY[%L]::uuid[])$$, :'y2', :'y3'), '22023', NULL,
                 'a graft that closes a cycle is refused');
SELECT is((SELECT count(*) FROM jobq_job_dependencies WHERE job_id = :'y2'), 1::bigint, 'no edge was added');
SELECT is((SELECT count(*) FROM jobq_all_jobs), :'before'::bigint, 'nothing was inserted');

SELECT * FROM finish();
ROLLBACK;
