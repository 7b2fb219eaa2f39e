-- jobq__error_entry (private): one entry of a job's errors, {attempt, at, worker, error}, and
-- kind when it is given (a lock that expired). jobq_fail, jobq_fail_many and the takeover of
-- jobq_dequeue append it with jobq__append_error.
--
-- Built from IMMUTABLE functions only (jsonb_object of the texts, jsonb_set of the number and
-- of `at`), with `at` given as jsonb, rendered once per statement by the caller: the JSON of a
-- timestamptz depends on the session's TimeZone, everything else here does not. Citus refuses
-- a STABLE function, such as jsonb_build_object, over columns in an UPDATE. Only pg_catalog is
-- named in the body, and it is a single expression without SET clauses, so that the planner
-- inlines it. NULL attempt gives a NULL entry (every caller passes jobq_jobs.attempts, which is
-- NOT NULL).

CREATE OR REPLACE FUNCTION jobq__error_entry(
    attempt integer, at jsonb, worker text, error text, kind text DEFAULT NULL
) RETURNS jsonb
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.jsonb_set(
        pg_catalog.jsonb_set(
            CASE
                WHEN kind IS NULL
                    THEN pg_catalog.jsonb_object(ARRAY['worker', worker, 'error', error])
                ELSE pg_catalog.jsonb_object(ARRAY['worker', worker, 'error', error, 'kind', kind])
            END,
            '{attempt}', attempt::text::jsonb
        ),
        '{at}', at
    )
$$;

COMMENT ON FUNCTION jobq__error_entry(integer, jsonb, text, text, text) IS
'Private. One entry of jobq_jobs.errors: {"attempt": attempt, "at": at, "worker": worker,
"error": error} and "kind" when kind is not NULL. IMMUTABLE: at comes rendered as jsonb.';

REVOKE EXECUTE ON FUNCTION jobq__error_entry(integer, jsonb, text, text, text) FROM PUBLIC;
