-- 0006_jobq_fair_share.sql — fair share across the keys of a limit group: the group's share
-- (fifo, round_robin or weighted) in jobq_limits, and per key its weight and its pass (the
-- virtual time of its next start) in jobq_limit_keys, the row every start of the key writes
-- under the key's lock (docs/decisions/0011-fair-share-by-pass.md). A group may now share
-- with no cap.

ALTER TABLE jobq_limits
ADD COLUMN share text NOT NULL DEFAULT 'fifo',
ADD CONSTRAINT jobq_limits_share_known CHECK (share IN ('fifo', 'round_robin', 'weighted')),
DROP CONSTRAINT jobq_limits_some_limit,
ADD CONSTRAINT jobq_limits_some_limit CHECK (
    max_running IS NOT NULL OR max_starts IS NOT NULL OR share <> 'fifo'
);

COMMENT ON COLUMN jobq_limits.share IS
'How claims share the group among its keys at equal priority: fifo (claim order), round_robin
(one start per key in turn) or weighted (starts in proportion to the keys'' weights).';
COMMENT ON CONSTRAINT jobq_limits_share_known ON jobq_limits IS
'share is fifo, round_robin or weighted.';
COMMENT ON CONSTRAINT jobq_limits_some_limit ON jobq_limits IS
'A row sets a cap or a share other than fifo: removing them all removes the row.';

ALTER TABLE jobq_limit_keys
ADD COLUMN weight real NOT NULL DEFAULT 1,
ADD COLUMN pass double precision,
ADD CONSTRAINT jobq_limit_keys_weight_positive CHECK (
    weight > 0 AND weight < 'Infinity'::real
);

COMMENT ON COLUMN jobq_limit_keys.weight IS
'The key''s weight in a weighted group (jobq_set_weight; 1 by default): its share of the starts
is its weight over the weights of the keys with work.';
COMMENT ON COLUMN jobq_limit_keys.pass IS
'In a group that shares: the virtual time of the key''s next start. Each start adds 1 / weight
(1 under round_robin); a claim takes the keys of lowest pass first, and a key that comes back
from idle starts one turn before the lowest pass of the keys with work. NULL: no start counted
yet.';
COMMENT ON CONSTRAINT jobq_limit_keys_weight_positive ON jobq_limit_keys IS
'A weight is positive and finite.';

COMMENT ON TABLE jobq_limit_keys IS
'jobq: one row per (limit_group, limit_key) of a limited group that has started a job or has a
weight, written by the claim under the key''s lock with every start (and by jobq_set_weight).
The write is what makes a claim in a REPEATABLE READ or SERIALIZABLE transaction fail (40001)
rather than miss a start that a concurrent claim committed after its snapshot. jobq_set_limit
deletes a group''s rows when it removes the limit.';
