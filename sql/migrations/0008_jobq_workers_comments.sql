-- 0008_jobq_workers_comments.sql — jobq_workers explains itself like the other tables.
--
-- 0007 came with the comments of the table and its columns; its primary key, constraint and
-- index, had none (tests/pgtap/comments.sql asks one of every index and named constraint of a
-- jobq table). 0004_jobq_comments runs before 0007 in a new install, so they are here.

COMMENT ON CONSTRAINT jobq_workers_pkey ON jobq_workers IS
'One row per worker_id: a claim refreshes its worker''s row instead of adding one.';

COMMENT ON INDEX jobq_workers_pkey IS
'The index of jobq_workers_pkey: jobq__worker_seen finds its worker''s row by worker_id.';
