-- The channel of %(kind)s events of the installation in %(schema)s, as jobq__event_channel
-- names it. (noqa LT01: sqlfluff reads || and <= inside OPERATOR () as two operators.)
SELECT
    CASE
        WHEN pg_catalog.octet_length(c.full_name) OPERATOR (pg_catalog.<=) 63  -- noqa: LT01
            THEN c.full_name
        ELSE
            c.prefix OPERATOR (pg_catalog.||) '#'  -- noqa: LT01
            OPERATOR (pg_catalog.||) pg_catalog.left(  -- noqa: LT01
                pg_catalog.encode(
                    pg_catalog.sha224(pg_catalog.convert_to(c.name, 'UTF8')), 'hex'
                ),
                62 OPERATOR (pg_catalog.-) pg_catalog.octet_length(c.prefix)
            )
    END AS channel  -- noqa: RF04
FROM (
    SELECT
        s.name,
        'jobq-' OPERATOR (pg_catalog.||) %(kind)s::pg_catalog.text AS prefix,  -- noqa: LT01, RF04
        'jobq-' OPERATOR (pg_catalog.||) %(kind)s::pg_catalog.text  -- noqa: LT01
        OPERATOR (pg_catalog.||) ':' OPERATOR (pg_catalog.||) s.name AS full_name  -- noqa: LT01
    FROM (SELECT %(schema)s::pg_catalog.text AS name) AS s  -- noqa: ST05, RF04
) AS c  -- noqa: ST05
