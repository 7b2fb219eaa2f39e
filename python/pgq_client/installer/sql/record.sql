-- The record of an applied file: its version and the SHA-256 of what was applied.
INSERT INTO {schema}.jobq_migrations (version, checksum, breaking) VALUES ({version}, {checksum}, {breaking})  -- noqa: LT05
ON CONFLICT (version) DO UPDATE SET checksum = excluded.checksum, applied_at = pg_catalog.now();
