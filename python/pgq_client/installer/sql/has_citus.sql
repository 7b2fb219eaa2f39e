-- Whether this database has Citus's schema-based sharding catalogue.
SELECT pg_catalog.to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL AS present
