-- What the schema records: each applied version with the SHA-256 of its file.
SELECT
    m.version,
    m.checksum
FROM {schema}.jobq_migrations AS m
