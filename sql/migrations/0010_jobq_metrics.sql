-- 0010_jobq_metrics.sql — Prometheus metrics kept by the database itself (jobq_metrics()).
--
-- 1. jobq_metric_counters: the counters, the status gauge and the histograms, per (queue,
--    job_type), spread over one row per backend that wrote them (shard = its pid). Each jobq
--    function that changes jobs adds to its own backend's row, in the same transaction, with
--    one statement per call whatever the number of jobs (jobq__metrics_count). Two sessions
--    never write the same row, so counting never makes one worker wait for another, not even
--    for a producer that enqueues inside a long transaction of its own. jobq_metrics() sums
--    the rows, and folds those of backends that have exited into shard 0, so the table holds
--    about (live backends + 1) rows per (queue, job_type). A transaction upserts its row
--    once; its later counted statements append to jobq_metric_deltas instead (see there).
-- 2. jobq_jobs.claimed_at: when the current (or last) claim was made. locked_at cannot tell
--    that (heartbeats renew it), and jobq_run_seconds measures claim to finish.
-- 3. jobq_settings.metrics: jobq_configure(metrics => false) stops the counting (each counted
--    statement then reads the flag and returns); turning it on again counts the gauge anew.
-- 4. The status gauge (jobs_<status>) starts from the jobs present now, counted here once,
--    with writes to jobq_jobs blocked until this migration commits (a full read of the table:
--    apply it when the queue is quiet). Jobs that change status between this commit and that
--    of the function files (the same `jobq migrate`) are not in it; jobq_metrics_recount()
--    counts again.

ALTER TABLE jobq_jobs ADD COLUMN claimed_at timestamptz;

COMMENT ON COLUMN jobq_jobs.claimed_at IS
'When the latest claim was made (jobq_dequeue); heartbeats do not move it, unlike locked_at.
jobq_run_seconds measures from here to the end of the attempt. NULL for a job never claimed
(and for claims made before migration 0010).';

ALTER TABLE jobq_settings ADD COLUMN metrics boolean NOT NULL DEFAULT TRUE;

COMMENT ON COLUMN jobq_settings.metrics IS
'Whether the jobq functions count what they do for jobq_metrics() (jobq_configure(metrics =>
...)). While false, the counters stand still and the gauge jobq_jobs is recounted when it is
turned on again.';

CREATE TABLE jobq_metric_counters (
    shard integer NOT NULL,
    queue text NOT NULL,
    job_type text NOT NULL,
    enqueued bigint NOT NULL DEFAULT 0,
    started bigint NOT NULL DEFAULT 0,
    succeeded bigint NOT NULL DEFAULT 0,
    failed bigint NOT NULL DEFAULT 0,
    dead_lettered bigint NOT NULL DEFAULT 0,
    cancelled bigint NOT NULL DEFAULT 0,
    lock_expired bigint NOT NULL DEFAULT 0,
    released bigint NOT NULL DEFAULT 0,
    requeued bigint NOT NULL DEFAULT 0,
    jobs_pending bigint NOT NULL DEFAULT 0,
    jobs_processing bigint NOT NULL DEFAULT 0,
    jobs_succeeded bigint NOT NULL DEFAULT 0,
    jobs_failed bigint NOT NULL DEFAULT 0,
    jobs_dead_letter bigint NOT NULL DEFAULT 0,
    jobs_cancelled bigint NOT NULL DEFAULT 0,
    wait_buckets bigint[] NOT NULL DEFAULT '{}',
    wait_sum double precision NOT NULL DEFAULT 0,
    run_buckets bigint[] NOT NULL DEFAULT '{}',
    run_sum double precision NOT NULL DEFAULT 0,
    CONSTRAINT jobq_metric_counters_pkey PRIMARY KEY (queue, job_type, shard)
) WITH (fillfactor = 50);

COMMENT ON TABLE jobq_metric_counters IS
'jobq: the numbers behind jobq_metrics(), per (queue, job_type), one row per backend that
wrote them (shard: its pid; 0: folded rows of backends that have exited). Written by the jobq
functions in the transaction of the change they count (jobq__metrics_count), so a rollback
counts nothing; jobq_prune lowers the gauge, never a counter. Sum over shards (and the rows of
jobq_metric_deltas) to read. fillfactor 50:
room on the page for the updates of a busy row to stay HOT.';
COMMENT ON COLUMN jobq_metric_counters.shard IS
'The pid of the backend that writes this row (so no two sessions ever wait for one another
here); 0 for the sums that jobq_metrics() folded in from backends that have exited.';
COMMENT ON COLUMN jobq_metric_counters.queue IS 'The jobs'' queue.';
COMMENT ON COLUMN jobq_metric_counters.job_type IS 'The jobs'' job_type.';
COMMENT ON COLUMN jobq_metric_counters.enqueued IS
'Jobs added (jobq_enqueue, jobq_enqueue_many, schedules); an existing idempotency key adds none.';
COMMENT ON COLUMN jobq_metric_counters.started IS 'Claims of pending jobs (jobq_dequeue).';
COMMENT ON COLUMN jobq_metric_counters.succeeded IS
'Completions (jobq_complete, jobq_complete_many).';
COMMENT ON COLUMN jobq_metric_counters.failed IS
'Failed attempts reported by jobq_fail or jobq_fail_many, whatever the job''s next status.';
COMMENT ON COLUMN jobq_metric_counters.dead_lettered IS
'Jobs that went to dead_letter (a last failed attempt, or a takeover with no attempts left).';
COMMENT ON COLUMN jobq_metric_counters.cancelled IS
'Jobs that went to cancelled (jobq_cancel of a pending job; a failure, release or takeover of
a job with a cancel request).';
COMMENT ON COLUMN jobq_metric_counters.lock_expired IS
'Claims taken back by jobq_dequeue because their lock was older than lock_timeout.';
COMMENT ON COLUMN jobq_metric_counters.released IS
'Claims given back unstarted (jobq_release, jobq_release_orphans).';
COMMENT ON COLUMN jobq_metric_counters.requeued IS
'Finished jobs made pending again (jobq_requeue_dead_letter, jobq_requeue_dead_letters).';
COMMENT ON COLUMN jobq_metric_counters.jobs_pending IS
'Change in the number of pending jobs (the gauge jobq_jobs is the sum over shards).';
COMMENT ON COLUMN jobq_metric_counters.jobs_processing IS
'Change in the number of processing jobs (summed over shards).';
COMMENT ON COLUMN jobq_metric_counters.jobs_succeeded IS
'Change in the number of succeeded jobs (summed over shards; jobq_prune subtracts).';
COMMENT ON COLUMN jobq_metric_counters.jobs_failed IS
'Change in the number of failed jobs (summed over shards).';
COMMENT ON COLUMN jobq_metric_counters.jobs_dead_letter IS
'Change in the number of dead_letter jobs (summed over shards).';
COMMENT ON COLUMN jobq_metric_counters.jobs_cancelled IS
'Change in the number of cancelled jobs (summed over shards).';
COMMENT ON COLUMN jobq_metric_counters.wait_buckets IS
'jobq_wait_seconds: claims per bucket of jobq__metric_bounds() (not cumulative; the last
element is above the highest bound); empty until the first observation.';
COMMENT ON COLUMN jobq_metric_counters.wait_sum IS
'jobq_wait_seconds: the sum of the observed waits (available_at to claim), in seconds.';
COMMENT ON COLUMN jobq_metric_counters.run_buckets IS
'jobq_run_seconds: finished attempts per bucket of jobq__metric_bounds() (not cumulative).';
COMMENT ON COLUMN jobq_metric_counters.run_sum IS
'jobq_run_seconds: the sum of the observed run times (claim to completion or failure).';
COMMENT ON CONSTRAINT jobq_metric_counters_pkey ON jobq_metric_counters IS
'One row per (queue, job_type, shard): the upsert of jobq__metrics_count finds its own row.';
COMMENT ON INDEX jobq_metric_counters_pkey IS
'The index of jobq_metric_counters_pkey, for the upserts of jobq__metrics_count.';

REVOKE ALL ON TABLE jobq_metric_counters FROM PUBLIC;

-- The second and later counted statements of one transaction: updating the same row again
-- and again within a transaction costs more each time (every version stays until the
-- transaction ends, and each upsert walks them), so a transaction upserts its backend's row
-- once and appends the rest here; jobq_metrics() and jobq_prune() fold them into shard 0.
CREATE TABLE jobq_metric_deltas (LIKE jobq_metric_counters INCLUDING DEFAULTS);

COMMENT ON TABLE jobq_metric_deltas IS
'jobq: counts of jobq_metric_counters written by the second and later counted statements of a
transaction (one row per statement and (queue, job_type), appended: no index, no update), so
that a transaction that enqueues jobs one by one costs the same per job whatever its length.
jobq_metrics() and jobq_prune() fold the rows into jobq_metric_counters (shard 0).';
COMMENT ON COLUMN jobq_metric_deltas.shard IS 'The pid of the backend that wrote the row.';
COMMENT ON COLUMN jobq_metric_deltas.queue IS 'The jobs'' queue.';
COMMENT ON COLUMN jobq_metric_deltas.job_type IS 'The jobs'' job_type.';
COMMENT ON COLUMN jobq_metric_deltas.enqueued IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.started IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.succeeded IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.failed IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.dead_lettered IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.cancelled IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.lock_expired IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.released IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.requeued IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_pending IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_processing IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_succeeded IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_failed IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_dead_letter IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.jobs_cancelled IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.wait_buckets IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.wait_sum IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.run_buckets IS 'As in jobq_metric_counters.';
COMMENT ON COLUMN jobq_metric_deltas.run_sum IS 'As in jobq_metric_counters.';

REVOKE ALL ON TABLE jobq_metric_deltas FROM PUBLIC;

-- The gauge starts from the jobs present; no status change may slip between this count and
-- the first one that is counted, hence the lock (writers wait until this migration commits).
LOCK TABLE jobq_jobs IN SHARE MODE;

INSERT INTO jobq_metric_counters (
    shard, queue, job_type, jobs_pending, jobs_processing, jobs_succeeded, jobs_failed,
    jobs_dead_letter, jobs_cancelled
)
SELECT
    0 AS shard,
    j.queue,
    j.job_type,
    pg_catalog.count(*) FILTER (WHERE j.status = 'pending') AS jobs_pending,
    pg_catalog.count(*) FILTER (WHERE j.status = 'processing') AS jobs_processing,
    pg_catalog.count(*) FILTER (WHERE j.status = 'succeeded') AS jobs_succeeded,
    pg_catalog.count(*) FILTER (WHERE j.status = 'failed') AS jobs_failed,
    pg_catalog.count(*) FILTER (WHERE j.status = 'dead_letter') AS jobs_dead_letter,
    pg_catalog.count(*) FILTER (WHERE j.status = 'cancelled') AS jobs_cancelled
FROM jobq_jobs AS j
GROUP BY j.queue, j.job_type;
