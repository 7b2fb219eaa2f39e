-- jobq__backoff (private): the arithmetic backoff of the seed, attempts × backoff, capped at
-- 365 days so that no number of attempts and no backoff can overflow the interval or
-- timestamptz range. Used by jobq_fail. A single-expression LANGUAGE sql function without SET
-- clauses, so that the planner inlines it into the UPDATE that calls it. EXTRACT returns
-- double precision before PostgreSQL 14: the cast keeps the product numeric × numeric, an
-- operator that exists exactly in pg_catalog, so no look-alike for mixed types can be chosen.

CREATE OR REPLACE FUNCTION jobq__backoff(attempts integer, backoff interval) RETURNS interval
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.make_interval(
        secs => least(
            greatest(attempts, 1)::numeric * extract(epoch FROM backoff)::numeric,
            31536000
        )::double precision
    )
$$;

COMMENT ON FUNCTION jobq__backoff(integer, interval) IS
'Private. attempts × backoff, capped at 365 days (never overflows).';

REVOKE EXECUTE ON FUNCTION jobq__backoff(integer, interval) FROM PUBLIC;
