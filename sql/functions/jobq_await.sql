-- jobq_await: waits, inside the database, until the given jobs have finished or the timeout has
-- passed, for callers that can only send SQL (a psql script, a trigger-free pipeline, a driver
-- without LISTEN). A notification cannot reach a function while it runs (NOTIFY is delivered
-- between transactions), so it polls: each check is a new statement, which under READ
-- COMMITTED takes a new snapshot and so sees what committed meanwhile; between checks it
-- sleeps with pg_sleep, 10 ms at first, doubling up to 500 ms.
--
-- What a wait costs, and when it cannot work:
--   * The statement that called it keeps its snapshot until it returns, and with it the
--     backend's xmin: VACUUM cannot remove rows that died after the wait began, in any table of
--     the database, for as long as it waits. That is why the timeout is at most 5 minutes. A
--     client that can LISTEN holds nothing: it LISTENs on the done channel, calls
--     jobq_await(ids, timeout => '0') (which registers its interest in the jobs' end), and
--     re-reads jobq_job_status on each notification, as Queue.wait does.
--   * Under REPEATABLE READ or SERIALIZABLE every check would see the transaction's first
--     snapshot, so no commit made during the wait: it is refused (25000) unless timeout is 0.
--   * A job whose row the caller's transaction has locked (it updated the row, or cancelled
--     the job in the same transaction) cannot be completed by its worker before that
--     transaction ends, and a job the transaction enqueued is not visible to workers until it
--     commits: such a wait lasts until the timeout. Call it in a transaction of its own.
--
-- Registering interest (timeout 0) takes no row lock and waits for none, so that a producer
-- can never stall a worker, nor be stalled by one: it INSERTs one row per unfinished job into
-- jobq_awaits, a table without a unique index (a second insert of the same key would wait for
-- the first one's transaction) and without a foreign key (its check would lock the job's row,
-- which the claim's FOR UPDATE SKIP LOCKED would then pass over). It reads jobq_jobs without
-- locking. The statements that end a job (completion, failure, cancel, release, takeover)
-- delete the job's rows from jobq_awaits and send a NOTIFY on the done channel when they find
-- one (jobq__awaits_end): one probe of an index that is empty unless someone waits, so that a
-- completion nobody awaits sends nothing and costs next to nothing. A flag on the job's row,
-- read back by the completion's own UPDATE, would cost even less, but setting it is an UPDATE
-- of that row: it waits for an acknowledgement in flight and, left open in a producer's
-- transaction, holds a lock the worker's completion waits for. Only the ending statement
-- deletes rows, and the ending statements of one job are ordered by the job's own row lock.
--
-- The price is a narrow race that a row lock would close: an ending statement that ran
-- before the registration committed does not see it, and when that job's transaction commits
-- after the registration read the statuses (it is read in this function, before its commit),
-- the end is seen by no one at once. A client that LISTENs therefore re-reads the statuses now
-- and then as well as on each notification (Queue.wait every poll_interval, 1 s by default).
-- Rows left behind by such a race, or by jobs that no longer exist, are removed by jobq_prune.
--! levels: producer, worker, admin
--! granted-as: jobq_enqueue

CREATE OR REPLACE FUNCTION jobq_await(
    job_ids uuid[],
    timeout interval DEFAULT '30 seconds'
) RETURNS TABLE (
    id uuid,
    status text,
    attempts integer,
    result jsonb,
    last_error text,
    finished_at timestamptz,
    cancel_requested boolean
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_deadline timestamptz;
    v_pause double precision := 0.01::double precision;
BEGIN
    IF jobq_await.timeout IS NULL OR jobq_await.timeout < interval '0'
       OR jobq_await.timeout > interval '5 minutes' THEN
        RAISE EXCEPTION 'jobq_await: timeout must be between 0 and 5 minutes, got %',
            coalesce(jobq_await.timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Wait longer by calling it again, or LISTEN on the done channel.';
    END IF;
    IF pg_catalog.cardinality(jobq_await.job_ids) > 10000 THEN
        RAISE EXCEPTION 'jobq_await: job_ids has % elements, at most 10000 are allowed',
            pg_catalog.cardinality(jobq_await.job_ids)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;

    IF jobq_await.timeout = interval '0' THEN
        -- Only unfinished jobs not registered yet are written: a repeated call writes nothing.
        -- They are read in a step of their own, not in the INSERT's SELECT: Citus sends an
        -- INSERT whose SELECT reads a table to the shard as one statement, and its text for a
        -- table without a distribution column ends in `AND ( IS NOT NULL)`
        -- (docs/decisions/0002-sql-that-citus-can-run.md).
        WITH waited AS MATERIALIZED (
            SELECT j.id
            FROM jobq_jobs AS j
            WHERE j.id = ANY (jobq_await.job_ids)
              AND j.finished_at IS NULL
              AND NOT EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = j.id)
        )

        INSERT INTO jobq_awaits (job_id)
        SELECT w.id FROM waited AS w;
    ELSIF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'jobq_await: cannot wait in a % transaction: it would see no commit made '
                        'while it waits',
            pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
            USING ERRCODE = 'invalid_transaction_state',
                  HINT = 'Call it in a READ COMMITTED transaction (the default), or with '
                         'timeout => ''0'' to read the statuses once.';
    END IF;

    -- The deadline is on the wall clock: now() is the start of the transaction.
    v_deadline := pg_catalog.clock_timestamp() + jobq_await.timeout;
    LOOP
        EXIT WHEN NOT EXISTS (
            SELECT FROM jobq_jobs AS j
            WHERE j.id = ANY (jobq_await.job_ids) AND j.finished_at IS NULL
        );
        EXIT WHEN pg_catalog.clock_timestamp() >= v_deadline;
        PERFORM pg_catalog.pg_sleep(least(
            v_pause,
            extract(EPOCH FROM v_deadline - pg_catalog.clock_timestamp())::double precision
        ));
        v_pause := least(v_pause + v_pause, 0.5::double precision);
    END LOOP;

    RETURN QUERY
    SELECT
        j.id, j.status, j.attempts, j.result, j.last_error, j.finished_at,
        j.cancel_requested_at IS NOT NULL
    FROM jobq_all_jobs AS j
    WHERE j.id = ANY (jobq_await.job_ids)
    ORDER BY j.id;
END;
$$;

COMMENT ON FUNCTION jobq_await(uuid[], interval) IS
'Waits until every given job has finished (succeeded, failed, dead_letter, cancelled), or
until the timeout has passed, and returns their statuses at that moment. It sees commits made
while it waits (under READ COMMITTED it polls, each check a new statement with a new snapshot:
every 10 ms at first, every 500 ms at most). With timeout 0 it returns at once and registers
interest in the unfinished jobs (jobq_awaits): their end is then announced by a NOTIFY on the
done channel (jobq-done:<schema>, with an empty payload) to a client that LISTENs there, as
Queue.wait does, which also re-reads the statuses now and then; call it so in a transaction of
its own. Registering locks no job and waits for no lock. Cost: while it waits, its statement
holds a snapshot, so VACUUM cannot remove rows that died after the wait began; prefer LISTEN
for long waits. A job whose row the caller''s transaction has locked or enqueued cannot finish
before that transaction ends: the wait then lasts until the timeout.
Arguments: job_ids (the jobs; at most 10,000; unknown ids are left out and not waited for),
timeout (0 to 5 minutes, default 30 seconds).
Result: the rows of jobq_job_status (id, status, attempts, result, last_error, finished_at,
cancel_requested), one per known id, in id order.
Errors: 22023 timeout NULL, negative or over 5 minutes; 54000 more than 10,000 job_ids; 25000
a timeout above 0 in a REPEATABLE READ or SERIALIZABLE transaction.';

REVOKE EXECUTE ON FUNCTION jobq_await(uuid[], interval) FROM PUBLIC;
