-- 0011_jobq_fair_share_speed.sql — a round_robin group without caps is claimed by a rotating
-- cursor over its keys, so that a claim's cost does not grow with the number of keys
-- (docs/decisions/0012-round-robin-by-cursor.md): the group's cursor in jobq_limits, and an
-- index of the pending limited jobs by group and priority, each priority's keys in order.

ALTER TABLE jobq_limits
ADD COLUMN turn_key text;

COMMENT ON COLUMN jobq_limits.turn_key IS
'In a round_robin group without caps: the key that the last claim of the group started last
(the empty string for a NULL limit_key). The next claim starts with the key after it, in the
order of jobq_jobs_limited_turn_idx, and wraps round. NULL: from the first key.';

CREATE INDEX jobq_jobs_limited_turn_idx ON jobq_jobs (
    limit_group, priority DESC, (coalesce(limit_key, '')), available_at, id
)
WITH (deduplicate_items = off)
WHERE status = 'pending' AND NOT scheduled AND limit_group IS NOT NULL;

COMMENT ON INDEX jobq_jobs_limited_turn_idx IS
'The claim of a round_robin group without caps: the group''s pending limited jobs by priority,
each priority''s keys in order, each key''s jobs in claim order. One probe gives the group''s
top priority, one probe per key the next key after the group''s cursor and its first job.';
