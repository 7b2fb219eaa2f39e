"""Where a jobq schema lives on a Citus cluster (docs/scaling.md).

On a Citus coordinator with schema-based sharding, `jobq migrate --schema S` makes ``S`` a
distributed schema: its tables live whole on one worker node, and its functions run there
(calls from the coordinator are delegated). NOTIFY is per node, so a Worker that LISTENs on
the coordinator would never hear the jobs of its schema: the Worker asks the coordinator once
where the schema lives and opens its own connections to that node instead (same credentials
and database). Without Citus, or for a schema that is not distributed, nothing changes.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

_HAS_CITUS = "SELECT pg_catalog.to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL"

# The primary node that holds the placement of <schema>.jobq_jobs, when <schema> is a
# distributed schema. Read from Citus's catalog tables (not the citus_shards view, which asks
# every node for sizes).
_NODE = """
SELECT n.nodename, n.nodeport
FROM pg_catalog.pg_dist_schema AS d
JOIN pg_catalog.pg_dist_shard AS s
    ON s.logicalrelid = pg_catalog.to_regclass(
        pg_catalog.format('%%I.jobq_jobs', d.schemaid::pg_catalog.regnamespace::text))
JOIN pg_catalog.pg_dist_placement AS p ON p.shardid = s.shardid
JOIN pg_catalog.pg_dist_node AS n ON n.groupid = p.groupid
WHERE d.schemaid = pg_catalog.to_regnamespace(%(schema)s::text)
  AND n.noderole = 'primary'
  AND n.isactive
LIMIT 1
"""


def schema_node(conn: psycopg.Connection[Any], schema: str | None) -> tuple[str, int] | None:
    """(host, port) of the Citus node that holds ``schema``, or None (no Citus, or a schema
    that is not distributed)."""
    if schema is None:
        return None  # public cannot be a distributed schema
    has_citus = conn.execute(_HAS_CITUS).fetchone()
    if not has_citus or not has_citus[0]:
        return None
    row = conn.execute(_NODE, {"schema": schema}).fetchone()
    if row is None:
        return None
    return str(row[0]), int(row[1])


def node_conninfo(conninfo: str, node: tuple[str, int]) -> str:
    """``conninfo`` with its host and port replaced by the node's."""
    params = conninfo_to_dict(conninfo)
    params.pop("hostaddr", None)
    params["host"], params["port"] = node[0], str(node[1])
    return make_conninfo("", **params)
