CREATE TABLE IF NOT EXISTS {schema}.jobq_migrations (
    version text NOT NULL,  -- noqa: RF04
    checksum text NOT NULL,  -- noqa: RF04
    applied_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    breaking boolean NOT NULL DEFAULT FALSE,
    CONSTRAINT jobq_migrations_pkey PRIMARY KEY (version)
);
REVOKE ALL ON TABLE {schema}.jobq_migrations FROM PUBLIC;
