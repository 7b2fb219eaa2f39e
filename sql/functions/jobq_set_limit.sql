-- jobq_set_limit (admin): sets, changes or removes the limits of a limit group. Jobs name the
-- group (and a key within it) when they are enqueued; each (limit_group, limit_key) pair has
-- the group's limits for itself. The claim (jobq_dequeue, through jobq__claim_limited) reads
-- jobq_limits on every claim of the group's jobs, so a change applies to the next claim.
--
-- share decides the order among the group's keys at equal priority (fifo: claim order;
-- round_robin, weighted: by the keys' passes, jobq__claim_limited). NULL means fifo, and a
-- group whose caps are NULL and whose share is fifo has nothing to enforce: it is removed.
--
-- Removing a limit (caps NULL, share NULL or fifo) deletes the group's row and its keys'
-- bookkeeping (jobq_limit_keys, jobq_limit_starts): the group is unlimited from the next claim
-- on, and a limit set again later counts the starts made from then on (the weights are gone).
-- Any change wakes idle workers (a NOTIFY with an empty payload on the installation's channel,
-- delivered at commit), so that jobs a limit held back are claimed at once rather than at the
-- workers' next poll.
--! levels: admin
--! replaces: jobq_set_limit(text, integer, integer, interval)

CREATE OR REPLACE FUNCTION jobq_set_limit(
    limit_group text,
    max_running integer DEFAULT NULL,
    max_starts integer DEFAULT NULL,
    per interval DEFAULT NULL,
    share text DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_error text;
    -- A value, not now() in statements: Citus (docs/decisions/0002-sql-that-citus-can-run.md).
    v_now CONSTANT timestamptz := pg_catalog.now();
BEGIN
    IF jobq_set_limit.limit_group IS NULL THEN
        v_error := 'limit_group must be a non-blank string';
    ELSE
        v_error := jobq__limit_argument_problem(jobq_set_limit.limit_group, NULL::text);
    END IF;
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_set_limit: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_set_limit.share IS NOT NULL
       AND jobq_set_limit.share NOT IN ('fifo', 'round_robin', 'weighted') THEN
        RAISE EXCEPTION 'jobq_set_limit: share must be fifo, round_robin or weighted (or NULL: '
            'fifo), got %', jobq_set_limit.share
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_set_limit.max_running < 1 THEN
        RAISE EXCEPTION 'jobq_set_limit: max_running must be at least 1 (or NULL: no limit), got %',
            jobq_set_limit.max_running
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_set_limit.max_starts < 1 THEN
        RAISE EXCEPTION 'jobq_set_limit: max_starts must be at least 1 (or NULL: no limit), got %',
            jobq_set_limit.max_starts
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (jobq_set_limit.max_starts IS NULL) <> (jobq_set_limit.per IS NULL) THEN
        RAISE EXCEPTION 'jobq_set_limit: max_starts and per go together, got max_starts % and per %',
            coalesce(jobq_set_limit.max_starts::text, 'NULL'),
            coalesce(jobq_set_limit.per::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A rate limit is max_starts jobs per interval, such as 100 per ''1 minute''.';
    END IF;
    -- An interval of months or days has no fixed length (a month is 28 to 31 days, a day 23 to
    -- 25 hours across a daylight-saving change): the window must be exact.
    IF jobq_set_limit.per <= interval '0'
       OR pg_catalog.date_part('month', jobq_set_limit.per) <> 0::double precision
       OR pg_catalog.date_part('year', jobq_set_limit.per) <> 0::double precision
       OR pg_catalog.date_part('day', jobq_set_limit.per) <> 0::double precision
       OR jobq_set_limit.per > interval '10000 hours' THEN
        RAISE EXCEPTION 'jobq_set_limit: per must be a positive interval of hours, minutes and '
            'seconds, at most 10000 hours, got %', jobq_set_limit.per
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Write a day as ''24 hours''.';
    END IF;

    IF jobq_set_limit.max_running IS NULL AND jobq_set_limit.max_starts IS NULL
       AND coalesce(jobq_set_limit.share, 'fifo') = 'fifo' THEN
        DELETE FROM jobq_limits AS l WHERE l.limit_group = jobq_set_limit.limit_group;
        DELETE FROM jobq_limit_keys AS k WHERE k.limit_group = jobq_set_limit.limit_group;
        DELETE FROM jobq_limit_starts AS s WHERE s.limit_group = jobq_set_limit.limit_group;
    ELSE
        INSERT INTO jobq_limits AS l (
            limit_group, max_running, max_starts, per, share, updated_at
        )
        VALUES (
            jobq_set_limit.limit_group, jobq_set_limit.max_running, jobq_set_limit.max_starts,
            jobq_set_limit.per, coalesce(jobq_set_limit.share, 'fifo'), v_now
        )
        ON CONFLICT ON CONSTRAINT jobq_limits_pkey DO UPDATE
        SET max_running = excluded.max_running,
            max_starts = excluded.max_starts,
            per = excluded.per,
            share = excluded.share,
            updated_at = excluded.updated_at;
    END IF;
    PERFORM pg_catalog.pg_notify(jobq__channel(), '');
END;
$$;

COMMENT ON FUNCTION jobq_set_limit(text, integer, integer, interval, text) IS
'Admin only. Sets the limits of a limit group; each (limit_group, limit_key) pair of its jobs
has them for itself. Claims never make more than max_running jobs of one pair processing at
once, and never start more than max_starts jobs of one pair within any window of length per
(a sliding window). Held-back jobs stay pending and spend no attempt. share orders the keys of
the group at equal priority: fifo (claim order), round_robin (keys in turn, one start each) or
weighted (starts in proportion to the keys'' weights, jobq_set_weight). Caps NULL and share
NULL or fifo removes the group (its bookkeeping and weights too): its jobs are claimed as
unlimited from the next claim on.
Arguments: limit_group (1-200 chars, not blank), max_running (NULL = no concurrency limit, else
at least 1), max_starts (NULL = no rate limit, else at least 1), per (the window of
max_starts: NULL exactly when max_starts is; hours, minutes and seconds, positive, at most
10000 hours), share (fifo, round_robin or weighted; NULL = fifo).
Result: none.
Errors: 22023 limit_group NULL, blank or longer than 200 characters, max_running or
max_starts < 1, max_starts without per or per without max_starts, per not positive, with
days, months or years, or over 10000 hours, share not one of fifo, round_robin, weighted.
Concurrency: the change applies to claims that start after it commits; a claim running
meanwhile uses the limits it read. Wakes idle workers (NOTIFY with an empty payload on the
installation''s channel, at commit).';

REVOKE EXECUTE ON FUNCTION jobq_set_limit(text, integer, integer, interval, text) FROM PUBLIC;
