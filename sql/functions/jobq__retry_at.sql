-- jobq__retry_at (private): when a failed attempt may run again: failed_at plus the arithmetic
-- backoff of the seed, attempts × backoff, capped at 365 days so that no number of attempts
-- and no backoff can overflow the interval or timestamptz range. Used by jobq_fail and
-- jobq_fail_many.
--
-- IMMUTABLE, and built only of IMMUTABLE operations: seconds since the epoch
-- (timestamptz - timestamptz, EXTRACT of an interval) plus the backoff in seconds (a month
-- counts as 30 days), back to a time with to_timestamp(). timestamptz + interval would be
-- STABLE (a day or a month depends on the session's TimeZone). Citus needs that: it refuses
-- a STABLE function over a column inside the CASE of an UPDATE; and PostgreSQL inlines an
-- IMMUTABLE SQL function only when its body is immutable. The sum is exact to the
-- microsecond (numeric; a double has 0.25 µs of precision at today's epoch). Only pg_catalog
-- is named in the body, so that it means the same wherever it runs (a Citus node plans it in
-- its own session). EXTRACT returns double precision before PostgreSQL 14: the casts keep
-- the arithmetic numeric, whose operators exist exactly in pg_catalog, so no look-alike for
-- mixed types can be chosen.
--! replaces: jobq__backoff(integer, interval)

CREATE OR REPLACE FUNCTION jobq__retry_at(
    failed_at timestamptz, attempts integer, backoff interval
) RETURNS timestamptz
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.to_timestamp(
        (
            extract(epoch FROM failed_at - timestamptz 'epoch')::numeric
            + least(
                greatest(attempts, 1)::numeric * extract(epoch FROM backoff)::numeric,
                31536000
            )
        )::double precision
    )
$$;

COMMENT ON FUNCTION jobq__retry_at(timestamptz, integer, interval) IS
'Private. failed_at + attempts × backoff (a number of seconds; a month is 30 days), capped at
365 days: when a failed attempt may run again. Never overflows.';

REVOKE EXECUTE ON FUNCTION jobq__retry_at(timestamptz, integer, interval) FROM PUBLIC;
