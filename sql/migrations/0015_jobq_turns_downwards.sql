-- 0015_jobq_turns_downwards.sql — a round_robin group without caps takes its keys in
-- descending key order (docs/decisions/0017-turns-away-from-the-probes.md).
--
-- The jobs a claim has started leave their index entries behind in jobq_jobs_limited_idx and
-- jobq_jobs_limited_turn_idx until VACUUM removes them: dead entries at the keys the cursor has
-- passed. The probes that look for a group's first pending job (whether limited jobs wait,
-- the skip scan's way into the group, the group's top priority) read both indexes upwards from
-- the group's lowest key; a cursor moving upwards left its trail of dead entries right in
-- their way, and they stepped over more of it at every claim. A cursor moving downwards
-- leaves it above, behind the keys still to be served. Each key's jobs are kept in reverse
-- claim order, so that a backward scan of the index meets each key's first job first: one
-- probe per key, as before.

DROP INDEX jobq_jobs_limited_turn_idx;

CREATE INDEX jobq_jobs_limited_turn_idx ON jobq_jobs (
    limit_group, priority DESC, (coalesce(limit_key, '')), available_at DESC, id DESC
)
WITH (deduplicate_items = off)
WHERE status = 'pending' AND NOT scheduled AND limit_group IS NOT NULL;

COMMENT ON INDEX jobq_jobs_limited_turn_idx IS
'The claim of a round_robin group without caps: the group''s pending limited jobs by priority,
each priority''s keys in order, each key''s jobs in reverse claim order. One probe gives the
group''s top priority (its lowest key first), one backward probe per key the next key below
the group''s cursor and its first job.';

COMMENT ON COLUMN jobq_limits.turn_key IS
'In a round_robin group without caps: the key that the last claim of the group started last
(the empty string for a NULL limit_key). The next claim starts with the key below it, in
descending key order, and wraps round to the last key. NULL (the group''s first claim): from
the lowest key, then from the last key down.';
