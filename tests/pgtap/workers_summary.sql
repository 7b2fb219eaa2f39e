-- jobq_workers_summary() RETURNS TABLE(worker_id, job_types, queues, first_claim_at,
--     last_claim_at, jobs_held, stale_jobs, last_heartbeat_at, lock_expires_at, held_job_ids)
--
-- One row per worker that claimed within the last day (jobq_workers) or holds a processing job;
-- a held job whose locked_until has passed counts as stale. No argument, so no bad input.
-- Levels: monitor and admin may call it, a producer may not (42501).
BEGIN;
SELECT plan(7);

DELETE FROM jobq_jobs;
DELETE FROM jobq_jobs_history;
DELETE FROM jobq_workers;

SELECT is_empty('SELECT * FROM jobq_workers_summary()', 'no worker, no row');

SELECT jobq_enqueue('a', '{"k": "secret-payload"}') AS a1 \gset
SELECT jobq_enqueue('a') AS a2 \gset
SELECT jobq_enqueue('b', queue => 'q2') AS b1 \gset
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w1', job_types => '{a}', batch_size => 2)), 2,
          'w1 claims two jobs');
SELECT is((SELECT count(*)::int FROM jobq_dequeue('w2', queues => '{q2}')), 1, 'w2 claims one');
-- w2's claim lapses: its lock expired a minute ago, its last heartbeat was 6 minutes ago
UPDATE jobq_jobs SET locked_at = now() - interval '6 minutes', locked_until = now() - interval '1 minute'
WHERE id = :'b1';
-- a worker that holds a job but has no record (claimed by hand, or its record aged out)
INSERT INTO jobq_jobs (job_type, status, locked_at, locked_by, locked_until)
VALUES ('c', 'processing', now(), 'w3', now() + interval '1 minute');
-- a worker that claimed and holds nothing
SELECT is_empty($$SELECT * FROM jobq_dequeue('w4', job_types => '{none}')$$, 'w4 claims nothing');

SELECT results_eq(
    $$SELECT worker_id, job_types, queues, first_claim_at IS NOT NULL, jobs_held, stale_jobs,
             last_heartbeat_at, lock_expires_at, held_job_ids::text
      FROM jobq_workers_summary()$$,
    format($$VALUES
        ('w1'::text, '{a}'::text[], NULL::text[], true, 2::bigint, 0::bigint, now(),
         now() + interval '5 minutes', %L),
        ('w2', NULL, '{q2}', true, 1, 1, now() - interval '6 minutes', now() - interval '1 minute',
         %L),
        ('w3', NULL, NULL, false, 1, 0, now(), now() + interval '1 minute',
         (SELECT format('{%%s}', id) FROM jobq_jobs WHERE locked_by = 'w3')),
        ('w4', '{none}', NULL, true, 0, 0, NULL, NULL, '{}')$$,
        (SELECT array_agg(id ORDER BY locked_at, id) FROM jobq_jobs WHERE locked_by = 'w1')::text,
        ARRAY[:'b1'::uuid]::text),
    'per worker: its filters, jobs held, stale ones, last heartbeat, earliest lock expiry, job ids'
);

CREATE ROLE tws_monitor;
CREATE ROLE tws_producer;
-- The schema jobq is installed in (public here, a tenant's schema on Citus).
SELECT format('GRANT USAGE ON SCHEMA %I, tap TO tws_monitor, tws_producer', current_schema()) \gexec
GRANT ALL ON TABLE __tcache__ TO tws_monitor, tws_producer;
GRANT ALL ON SEQUENCE __tcache___id_seq, __tresults___numb_seq TO tws_monitor, tws_producer;
-- as `jobq grant --as monitor` grants it (the file's levels line); a producer gets it not
GRANT EXECUTE ON FUNCTION jobq_workers_summary() TO tws_monitor;

SET ROLE tws_monitor;
SELECT is_empty(
    $$SELECT w FROM jobq_workers_summary() AS w WHERE w::text LIKE '%secret%'$$,
    'monitor: may call it; no payload in any row'
);
SET ROLE tws_producer;
SELECT throws_ok('SELECT * FROM jobq_workers_summary()', '42501', NULL, 'producer: denied');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
