-- jobq_maintain_indexes(lock_timeout interval DEFAULT '50 ms', bloat_ratio real DEFAULT 4)
--   RETURNS TABLE(action text, index_name text, detail text)
-- Bad arguments are refused with 22023 naming the argument, and change nothing; an index
-- rebuilt within 2 minutes is left alone; PUBLIC cannot call it. The rebuild of a bloated
-- index by jobq_tick, its lock wait beside other sessions and the claims that run through it
-- are in
-- tests/python/test_maintain_indexes.py (VACUUM, which counts an index's entries, cannot run
-- in this transaction).
BEGIN;
SELECT plan(11);

DELETE FROM jobq_index_rebuilds;
SELECT jobq_enqueue('ix') FROM generate_series(1, 100);

CREATE TEMP TABLE sizes_before AS
SELECT c.relname, c.relfilenode FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
WHERE i.indrelid = 'jobq_jobs'::regclass;

SELECT throws_like($$SELECT * FROM jobq_maintain_indexes(lock_timeout => NULL)$$,
                   '%lock_timeout must be more than 0 and at most 1 minute, got NULL%',
                   'lock_timeout NULL is refused, naming it');
SELECT throws_ok($$SELECT * FROM jobq_maintain_indexes(lock_timeout => '0')$$, '22023', NULL,
                 'lock_timeout 0 is 22023');
SELECT throws_ok($$SELECT * FROM jobq_maintain_indexes(lock_timeout => '-1 s')$$, '22023', NULL,
                 'a negative lock_timeout is 22023');
SELECT throws_ok($$SELECT * FROM jobq_maintain_indexes(lock_timeout => '61 s')$$, '22023', NULL,
                 'a lock_timeout above 1 minute is 22023');
SELECT throws_like($$SELECT * FROM jobq_maintain_indexes(bloat_ratio => NULL)$$,
                   '%bloat_ratio must be from 2 to 1000, got NULL%',
                   'bloat_ratio NULL is refused, naming it');
SELECT throws_ok($$SELECT * FROM jobq_maintain_indexes(bloat_ratio => 1.5)$$, '22023', NULL,
                 'a bloat_ratio below 2 is 22023');
SELECT throws_ok($$SELECT * FROM jobq_maintain_indexes(bloat_ratio => 1001)$$, '22023', NULL,
                 'a bloat_ratio above 1000 is 22023');
SELECT is_empty($$SELECT c.relname FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
                  JOIN sizes_before AS b ON b.relname = c.relname
                  WHERE i.indrelid = 'jobq_jobs'::regclass AND c.relfilenode <> b.relfilenode$$,
                'the refused calls rebuilt nothing');

-- An index rebuilt less than 2 minutes ago is left alone whatever its size (this slot's
-- database may hold indexes that other files' rolled-back rows made grow).
INSERT INTO jobq_index_rebuilds (index_name, rebuilt_at, bytes_before, bytes_after, took)
SELECT c.relname, now() - interval '119 seconds', 0, 0, '0'
FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
WHERE i.indrelid = 'jobq_jobs'::regclass;
SELECT is_empty($$SELECT * FROM jobq_maintain_indexes(bloat_ratio => 2)$$,
                'no index rebuilt within 2 minutes is rebuilt again');
SELECT is_empty($$SELECT c.relname FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
                  JOIN sizes_before AS b ON b.relname = c.relname
                  WHERE i.indrelid = 'jobq_jobs'::regclass AND c.relfilenode <> b.relfilenode$$,
                'and none was');

SELECT is(has_function_privilege('public', 'jobq_maintain_indexes(interval, real)', 'EXECUTE'),
          false, 'PUBLIC cannot run jobq_maintain_indexes');

SELECT * FROM finish();
ROLLBACK;
