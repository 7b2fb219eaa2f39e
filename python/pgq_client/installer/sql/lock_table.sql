-- The key of the advisory lock that serialises runs of jobq migrate on one schema: random and
-- readable only by jobq's owner, so that no other role can take the lock and hold deploys up
-- (a key computed from public names, the schema's, could be).
CREATE TABLE IF NOT EXISTS {schema}.jobq__migrate_lock (
    singleton boolean NOT NULL DEFAULT TRUE,
    key bigint NOT NULL,  -- noqa: RF04
    CONSTRAINT jobq__migrate_lock_pkey PRIMARY KEY (singleton),
    CONSTRAINT jobq__migrate_lock_singleton CHECK (singleton)
);
REVOKE ALL ON TABLE {schema}.jobq__migrate_lock FROM PUBLIC;
INSERT INTO {schema}.jobq__migrate_lock (key)
SELECT
    pg_catalog.concat(
        'x', pg_catalog.left(pg_catalog.md5(pg_catalog.gen_random_uuid()::pg_catalog.text), 16)
    )::pg_catalog.bit(64)::pg_catalog.int8
ON CONFLICT (singleton) DO NOTHING;
COMMENT ON TABLE {schema}.jobq__migrate_lock IS 'Private. The key of the advisory lock that jobq '
'migrate holds while it runs: random, readable only by jobq''s owner, so that no other role can '
'take the lock and hold deploys up.';
COMMENT ON COLUMN {schema}.jobq__migrate_lock.singleton IS 'Always true: the table has one row.';
COMMENT ON COLUMN {schema}.jobq__migrate_lock.key IS
'The advisory lock''s key, drawn at random when the table was made.';
COMMENT ON CONSTRAINT jobq__migrate_lock_pkey ON {schema}.jobq__migrate_lock IS 'One row.';
COMMENT ON INDEX {schema}.jobq__migrate_lock_pkey IS 'One row.';
COMMENT ON CONSTRAINT jobq__migrate_lock_singleton ON {schema}.jobq__migrate_lock IS 'One row.';
