-- The schema jobq installs into (created by the role that installs it, which then owns it).
CREATE SCHEMA IF NOT EXISTS {schema};
