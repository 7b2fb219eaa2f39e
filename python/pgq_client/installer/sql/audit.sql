-- Who else controls the schema, as jobq_health reports it after a run of jobq migrate.
SELECT h.detail FROM {schema}.jobq_health() AS h
WHERE h.check_name IN ('schema_owner', 'schema_create') AND h.severity != 'ok'
ORDER BY h.check_name DESC
