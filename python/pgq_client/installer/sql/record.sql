-- The record of an applied file: its version and the SHA-256 of what was applied. On conflict
-- the time is the proposed row's (excluded.applied_at, the column's default), not now() in DO
-- UPDATE SET: Citus refuses a function that is not IMMUTABLE there when the schema is
-- distributed (an upgrade, docs/scaling.md).
INSERT INTO {schema}.jobq_migrations (version, checksum, breaking) VALUES ({version}, {checksum}, {breaking})  -- noqa: LT05
ON CONFLICT (version) DO UPDATE SET checksum = excluded.checksum, applied_at = excluded.applied_at;
