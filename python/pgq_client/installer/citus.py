"""jobq on a Citus cluster (docs/scaling.md).

On a coordinator with schema-based sharding, ``jobq migrate --schema S`` builds ``S`` as on
PostgreSQL and then makes it a distributed schema: its tables live whole on one worker node and
its functions run there (calls from the coordinator are delegated). NOTIFY is per node, so a
Worker asks the coordinator once where its schema lives and opens its own connections to that
node (same credentials and database). Without Citus, or for a schema that is not distributed,
nothing changes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .files import statement

if TYPE_CHECKING:
    from .files import FunctionFile

logger = logging.getLogger("pgq_client.installer")

# The setting a distributed function loses, and the functions that may run nested distributed
# statements (why: sql/citus_distribute.sql). jobq__complete_rows is called as an expression
# (an assignment) by jobq_complete_many and jobq_complete_and_claim: a distributed function
# called so on the schema's node runs as a task on its shard, where its own statements would
# be nested distributed queries.
RESET = "plan_cache_mode"
NESTED = ("jobq__complete_rows", "jobq__metrics_count")
NESTED_SETTING = "citus.allow_nested_distributed_execution"


def _has_citus(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(statement("has_citus")).fetchone()
    return bool(row and row[0])


def distributed(conn: psycopg.Connection[Any], schema: str) -> bool:
    """Whether ``schema`` is a Citus distributed schema (False without Citus)."""
    if not _has_citus(conn):
        return False
    row = conn.execute(statement("citus_distributed", schema)).fetchone()
    return bool(row and row[0])


def expected_settings(name: str, settings: set[str]) -> set[str]:
    """The settings ``jobq doctor`` expects of function ``name`` on Citus, given its file's."""
    wanted = {item for item in settings if not item.startswith(RESET + "=")}
    if name in NESTED:
        wanted |= {f"{NESTED_SETTING}=on", "search_path"}
    return wanted


def schema_sharding(conn: psycopg.Connection[Any]) -> bool:
    """Whether to distribute the schema (a coordinator with schema-based sharding on). Citus
    restricts DDL on distributed tables, and CREATE SCHEMA (IF NOT EXISTS) distributes a schema
    with the setting on: the runner turns it off for its session and distributes at the end."""
    setting = conn.execute(
        "SELECT pg_catalog.current_setting('citus.enable_schema_based_sharding', true)"
    ).fetchone()
    if setting is None or setting[0] != "on":
        return False
    conn.execute("SET citus.enable_schema_based_sharding = off")
    # jobq_jobs and jobq_cancel_requests have triggers, which Citus distributes only with this
    # on (and it refuses a migration's CREATE TRIGGER on a distributed table without it). The
    # schema's tables are colocated on one node: a trigger fires on its shard there and writes
    # the colocated shards in the same transaction (Citus refuses it any remote task).
    conn.execute("SET citus.enable_unsafe_triggers = on")
    return True


def distribute(conn: psycopg.Connection[Any], schema: str, functions: list[FunctionFile]) -> None:
    """Make ``schema`` a distributed schema (its tables, whole, on one node, its history one
    table per status first) and each function a distributed function colocated with
    ``jobq_jobs``, so that a call from the coordinator outside a transaction block runs on that
    node. What is distributed is left alone."""
    if schema == "public":
        logger.warning("schema 'public' cannot be a Citus distributed schema: jobq stays on "
                       "the coordinator (install it with --schema NAME to distribute it)")
        return
    if not distributed(conn, schema):
        _one_level_history(conn, schema)
        logger.info("schema %r: distributing it over the Citus cluster", schema)
        conn.execute(statement("citus_schema", schema))
    commands = statement(
        "citus_distribute",
        schema,
        names=[f.name for f in functions],
        setting=RESET,
        nested=NESTED,
        nested_setting=NESTED_SETTING,
    )
    with conn.transaction():
        # A node creates the function with Citus's own search_path, where the helpers that a
        # SQL function's body names are not found: it checks no body (each was checked here).
        conn.execute("SET LOCAL citus.propagate_set_commands TO 'local'")
        conn.execute("SET LOCAL check_function_bodies TO off")
        for (command,) in conn.execute(commands).fetchall():
            conn.execute(command.encode())


def _one_level_history(conn: psycopg.Connection[Any], schema: str) -> None:
    """Make each status's history one plain table, its rows kept (sql/citus_history.sql):
    Citus distributes no partitioned table that is a partition itself, and on PostgreSQL
    ``jobq_jobs_history`` is partitioned by status and each status by day. The functions read
    the layout from the catalogue; retention then deletes expired rows in batches
    (docs/retention.md). In one transaction: the schema is either as migrated or one level."""
    with conn.transaction():
        commands = [str(row[0]) for row in conn.execute(statement("citus_history", schema))]
        if commands:
            logger.info("schema %r: each status's history becomes one table (no day "
                        "partitions), which Citus can distribute", schema)
        for command in commands:
            conn.execute(command.encode())


def schema_node(conn: psycopg.Connection[Any], schema: str | None) -> tuple[str, int] | None:
    """(host, port) of the Citus node that holds ``schema``, or None (no Citus, or a schema
    that is not distributed; public cannot be one)."""
    if schema is None or not _has_citus(conn):
        return None
    row = conn.execute(statement("citus_node", schema)).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def node_conninfo(conninfo: str, node: tuple[str, int]) -> str:
    """``conninfo`` with its host and port replaced by the node's."""
    params = conninfo_to_dict(conninfo)
    params.pop("hostaddr", None)
    params["host"], params["port"] = node[0], str(node[1])
    return make_conninfo("", **params)
