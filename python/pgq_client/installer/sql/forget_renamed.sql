-- A renamed function's file is recorded under its new name only.
DELETE FROM {schema}.jobq_migrations
WHERE version IN ({versions});
