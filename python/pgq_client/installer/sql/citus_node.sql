-- The primary node that holds the placement of <schema>.jobq_jobs, when the schema is a Citus
-- distributed schema. Read from Citus's catalogue tables (not the citus_shards view, which
-- asks every node for sizes).
SELECT
    n.nodename,
    n.nodeport
FROM pg_catalog.pg_dist_schema AS d
INNER JOIN pg_catalog.pg_dist_shard AS s
    ON s.logicalrelid = pg_catalog.to_regclass(
        pg_catalog.format('%I.jobq_jobs', d.schemaid::pg_catalog.regnamespace::text)
    )
INNER JOIN pg_catalog.pg_dist_placement AS p ON s.shardid = p.shardid
INNER JOIN pg_catalog.pg_dist_node AS n ON p.groupid = n.groupid
WHERE
    d.schemaid = pg_catalog.to_regnamespace({schema_ident}::text)
    AND n.noderole = 'primary'
    AND n.isactive
ORDER BY n.nodename, n.nodeport
LIMIT 1
