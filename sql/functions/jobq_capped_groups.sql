-- jobq_capped_groups (worker, admin): the limit groups with a max_running cap, for workers
-- that route their acknowledgements. Completing a job of a capped group frees a slot of its
-- key that a held-back job may be waiting for, so a worker completes such a job inside its next
-- claim's transaction, which then counts the key without it and takes the slot at once; a job
-- of any other group (no limit, a rate limit alone, a share alone) frees nothing a claim could
-- use, and is completed apart, by whatever path is cheapest.
--
-- A worker reads this now and then and keeps the answer for a few seconds (a worker role cannot
-- read jobq_limits). Its staleness is harmless: the caps are enforced inside the claim whatever
-- path a completion takes; a stale answer only sends a completion the slower way (a freed slot
-- taken by the next claim after that commit instead of in it).
--
-- Names only: a worker already sees limit_group on every job it claims; the numbers stay with
-- jobq_limits (monitor, admin).
--! levels: worker, admin

CREATE OR REPLACE FUNCTION jobq_capped_groups() RETURNS TABLE (limit_group text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT l.limit_group
    FROM jobq_limits AS l
    WHERE l.max_running IS NOT NULL
    ORDER BY l.limit_group
$$;

COMMENT ON FUNCTION jobq_capped_groups() IS
'Worker and admin. The limit groups that have a max_running cap (jobq_set_limit), by name: a
completion of one of their jobs frees a slot that a claim can take, so a worker completes such a
job in the transaction of its next claim. Any other group (unlimited, a rate limit alone, a
share alone) frees nothing on completion. Workers keep the answer for a few seconds; caps are
enforced by the claim whatever they do with it.
Arguments: none.
Result: limit_group, one row per capped group, by name.
Errors: none.
Concurrency: a plain read; it takes no lock.';

REVOKE EXECUTE ON FUNCTION jobq_capped_groups() FROM PUBLIC;
