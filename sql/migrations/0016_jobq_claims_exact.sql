-- 0016_jobq_claims_exact.sql — a client's interest in a job's end (jobq_await with timeout 0)
-- is a row of jobq_awaits instead of a flag on the job's row.
--
-- The flag (jobq_jobs.awaited) was set by an UPDATE of the job's row: it waited for any claim
-- or acknowledgement of the job in flight, and, left open in a producer's transaction, held a
-- row lock that the worker's completion then waited for. An INSERT into a table of its own
-- does neither: the table has no unique index (a second insert of the same key would wait for
-- the first one's transaction) and no foreign key (its check would lock the job's row, which
-- a claim's FOR UPDATE SKIP LOCKED would then pass over). The statements that end a job delete
-- its rows and notify when they find one (jobq__awaits_end).
--
-- The marks of unfinished jobs are carried over; dropping the column rewrites no row.

CREATE TABLE jobq_awaits (
    job_id uuid NOT NULL,
    awaited_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX jobq_awaits_job_idx ON jobq_awaits (job_id);

INSERT INTO jobq_awaits (job_id)
SELECT j.id
FROM jobq_jobs AS j
WHERE j.awaited AND j.finished_at IS NULL;

ALTER TABLE jobq_jobs DROP COLUMN awaited;

COMMENT ON TABLE jobq_awaits IS
'Jobs whose end a client waits to be told of (jobq_await with timeout 0, as Queue.wait calls
it): the statement that ends such a job (completion, failure, cancel, release, takeover)
deletes its rows and sends a NOTIFY on the done channel. Registering takes no lock on the
job: no unique index, no foreign key. Empty unless someone waits; jobq_prune removes the rows
of jobs that ended or are gone.';
COMMENT ON COLUMN jobq_awaits.job_id IS
'The awaited job (not a foreign key: its check would lock the job''s row). Two clients waiting
for one job may give it two rows.';
COMMENT ON COLUMN jobq_awaits.awaited_at IS 'When jobq_await registered the interest.';
COMMENT ON INDEX jobq_awaits_job_idx IS
'The rows of a job: one probe per ending statement (an empty index when nobody waits). Not
unique, so that registering never waits for another transaction.';

REVOKE ALL ON TABLE jobq_awaits FROM PUBLIC;
