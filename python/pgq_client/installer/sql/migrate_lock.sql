-- The session-level advisory lock that serialises runs over the schema; its key is random and
-- kept where only jobq's owner may read it (lock_table.sql).
SELECT pg_catalog.pg_advisory_lock(l.key) FROM {schema}.jobq__migrate_lock AS l
