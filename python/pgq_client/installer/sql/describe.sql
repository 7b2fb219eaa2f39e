-- The comment of jobq_migrations, from its records: clients of every role read the latest
-- breaking change there (pg_description is readable by all; the table by admins only).
-- Runs with search_path set to the schema.
DO $jobq$
DECLARE
    v_latest text;
BEGIN
    SELECT pg_catalog.max(m.version) INTO v_latest FROM jobq_migrations AS m WHERE m.breaking;
    EXECUTE pg_catalog.format(
        'COMMENT ON TABLE %I.jobq_migrations IS %L',
        pg_catalog.current_schema(),
        'jobq migrations (NNNN_name) and function files (functions/jobq_name) applied to this '
        || 'schema, with the SHA-256 of each file (written by jobq migrate).'
        || coalesce(
            E'\nLatest breaking change: ' || v_latest
            || '. Clients of a jobq that does not have this migration refuse this schema.',
            ''
        )
    );
END
$jobq$;
