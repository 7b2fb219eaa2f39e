-- 0010_jobq_maintenance.sql — the record of the index rebuilds of jobq_maintain_indexes (run
-- by every jobq_tick): one row per index of jobq_jobs it has rebuilt, so that it rebuilds an
-- index at most once per interval, and so that an operator sees when and from what size.
-- Written only by a rebuild, never by the hot path.

CREATE TABLE jobq_index_rebuilds (
    index_name text NOT NULL,
    rebuilt_at timestamptz NOT NULL,
    bytes_before bigint NOT NULL,
    bytes_after bigint NOT NULL,
    took interval NOT NULL,
    CONSTRAINT jobq_index_rebuilds_pkey PRIMARY KEY (index_name)
);

COMMENT ON TABLE jobq_index_rebuilds IS
'jobq: the latest rebuild of each index of jobq_jobs by jobq_maintain_indexes (one row per
index, replaced by its next rebuild). Read by jobq_maintain_indexes, which rebuilds an index at
most once per 2 minutes; kept for operators.';
COMMENT ON COLUMN jobq_index_rebuilds.index_name IS 'The index of jobq_jobs, by name.';
COMMENT ON COLUMN jobq_index_rebuilds.rebuilt_at IS 'When its latest rebuild began.';
COMMENT ON COLUMN jobq_index_rebuilds.bytes_before IS 'Its size before that rebuild, in bytes.';
COMMENT ON COLUMN jobq_index_rebuilds.bytes_after IS 'Its size after that rebuild, in bytes.';
COMMENT ON COLUMN jobq_index_rebuilds.took IS
'How long that rebuild held the writers of jobq_jobs (the REINDEX alone, not the wait for its
lock).';
COMMENT ON CONSTRAINT jobq_index_rebuilds_pkey ON jobq_index_rebuilds IS 'One row per index.';
COMMENT ON INDEX jobq_index_rebuilds_pkey IS 'The latest rebuild of an index, by its name.';

REVOKE ALL ON TABLE jobq_index_rebuilds FROM PUBLIC;
