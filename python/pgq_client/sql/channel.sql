-- The wake-up channel of the installation in %(schema)s, computed by the server so that the
-- bytes of the name are counted in the database's encoding, as jobq__channel counts them.
-- (noqa LT01: sqlfluff reads || and <= inside OPERATOR () as two operators.)
SELECT
    CASE
        WHEN s.name OPERATOR (pg_catalog.=) 'public' THEN 'jobq'
        WHEN pg_catalog.octet_length(s.name) OPERATOR (pg_catalog.<=) 58  -- noqa: LT01
            THEN 'jobq.' OPERATOR (pg_catalog.||) s.name  -- noqa: LT01
        ELSE 'jobq#' OPERATOR (pg_catalog.||) pg_catalog.encode(  -- noqa: LT01
            pg_catalog.sha224(pg_catalog.convert_to(s.name, 'UTF8')), 'hex'
        )
    END AS channel  -- noqa: RF04
FROM (SELECT %(schema)s::pg_catalog.text AS name) AS s  -- noqa: RF04
