-- 0005_jobq_claims_at_volume.sql — claims whose cost does not grow with what they cannot
-- claim, time-ordered ids, and an index for pruning succeeded jobs.
--
-- 1. jobq_jobs.scheduled: true for a pending job whose available_at was in the future when it
--    was enqueued or retried. The claim indexes leave such jobs out, so that a million jobs
--    scheduled next year at the highest priority cost a claim nothing; every claim first
--    promotes the scheduled jobs that have come due (jobq_dequeue, over
--    jobq_jobs_scheduled_idx: one index probe when none has).
-- 2. jobq_jobs_claim_idx is rebuilt as (job_type, queue, priority DESC, available_at, id), for
--    pending jobs that are not scheduled: each (job_type, queue) pair has its own range in
--    claim order, so a claim filtered by job type or queue reads only its own ranges, and an
--    unfiltered one merges the ranges of the pairs that have pending jobs (one index probe per
--    pair). One claim index, as before: an enqueue still writes two index entries.
-- 3. Ids are UUID version 7 (48 bits of Unix time in milliseconds, then random bits), made in
--    SQL since PostgreSQL 13 has no uuidv7(): a new job's primary-key entry lands beside the
--    other recent ones instead of on a random leaf page. Ids of existing jobs stay as they are.
-- 4. jobq_jobs_succeeded_idx: succeeded jobs by finished_at, for jobq_prune. A completion
--    appends one entry at its right-hand end.
--
-- CREATE INDEX takes a lock that blocks writes to jobq_jobs until the migration commits: on a
-- large table, apply it when the queue is quiet (the claim index holds only pending jobs, but
-- building it reads the whole table, as building the other two does).

ALTER TABLE jobq_jobs ADD COLUMN scheduled boolean NOT NULL DEFAULT FALSE;

COMMENT ON COLUMN jobq_jobs.scheduled IS
'Internal to the claim: true while a pending job waits for an available_at that was in the
future when it was enqueued or retried. Such jobs are left out of jobq_jobs_claim_idx; every
claim first clears the flag of the jobs that have come due (jobq_jobs_scheduled_idx). Meaningful
only while the job is pending.';

UPDATE jobq_jobs SET scheduled = TRUE
WHERE status = 'pending' AND available_at > pg_catalog.now();

DROP INDEX jobq_jobs_claim_idx;

CREATE INDEX jobq_jobs_claim_idx ON jobq_jobs (job_type, queue, priority DESC, available_at, id)
WHERE status = 'pending' AND NOT scheduled;

COMMENT ON INDEX jobq_jobs_claim_idx IS
'The claim: pending jobs available now (not scheduled), one range per (job_type, queue) pair,
each in claim order (priority DESC, available_at, id). jobq_dequeue reads the ranges its
filters select, and merges them when there are several.';

CREATE INDEX jobq_jobs_scheduled_idx ON jobq_jobs (available_at)
WHERE status = 'pending' AND scheduled;

COMMENT ON INDEX jobq_jobs_scheduled_idx IS
'Scheduled jobs by the time they come due: every claim promotes the due ones (clears
scheduled), so that they enter jobq_jobs_claim_idx.';

CREATE INDEX jobq_jobs_succeeded_idx ON jobq_jobs (finished_at)
WHERE status = 'succeeded';

COMMENT ON INDEX jobq_jobs_succeeded_idx IS
'Succeeded jobs by finished_at, for jobq_prune (the oldest first, in batches). A completion
appends one entry at its right-hand end.';

COMMENT ON INDEX jobq_jobs_failed_idx IS
'Failed and dead-letter jobs, for operators: listing, health, requeue, and jobq_prune, which
reads them from here, the oldest first. Succeeded jobs have an index of their own,
jobq_jobs_succeeded_idx, so that a completion, the most frequent write of a queue, adds one
entry at its end rather than one here.';

COMMENT ON COLUMN jobq_jobs.available_at IS
'Not claimed before this time: run_at (or now) at enqueue, now + attempts × backoff after a
failure, now after a release or a requeue. A pending job whose available_at is in the future
when it is written is marked scheduled until a claim after that time promotes it.';

-- The same expression as jobq__uuid_v7() (sql/functions/jobq__uuid_v7.sql), written out: a
-- migration runs before the function files, and a default that named the function would tie
-- the column to it. Its built-ins are resolved here, once, and stored by OID.
ALTER TABLE jobq_jobs ALTER COLUMN id SET DEFAULT pg_catalog.encode(
    pg_catalog.set_bit(
        pg_catalog.set_bit(
            pg_catalog.overlay(
                pg_catalog.uuid_send(pg_catalog.gen_random_uuid()),
                pg_catalog.substr(
                    pg_catalog.int8send(
                        pg_catalog.floor(
                            pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
                            * 1000::double precision
                        )::bigint
                    ),
                    3
                ),
                1,
                6
            ),
            52,
            1
        ),
        53,
        1
    ),
    'hex'
)::uuid;

COMMENT ON COLUMN jobq_jobs.id IS
'The job''s id, made by jobq: a UUID version 7 (time-ordered: 48 bits of Unix time in
milliseconds, then random bits) since migration 0005, random (version 4) before. Callers rely
on neither.';
