"""``jobq grant``: the GRANT statements that give an existing role one of the three jobq roles.

* producer: EXECUTE on ``jobq_enqueue``, ``jobq_enqueue_many``;
* worker: a producer's, plus claiming and acknowledging (``jobq_dequeue`` ...
  ``jobq_release_orphans``);
* admin: every public ``jobq_*`` function (never the private ``jobq__*`` helpers), and SELECT
  on the tables, ``jobq_migrations`` included.

Each includes USAGE on the schema. Functions are named without argument lists: jobq has no
overloads, so each name is unique in its schema. Identifiers are quoted with psycopg.sql.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import psycopg
from psycopg import sql

from . import _sql
from .errors import NotMigrated, from_psycopg

__all__ = [
    "ADMIN_TABLES",
    "LEVELS",
    "PRODUCER_FUNCTIONS",
    "WORKER_FUNCTIONS",
    "Level",
    "admin_functions",
    "grant",
    "grant_statements",
    "plan",
    "render",
]

Level = Literal["producer", "worker", "admin"]
LEVELS: tuple[Level, ...] = ("producer", "worker", "admin")

PRODUCER_FUNCTIONS = ("jobq_enqueue", "jobq_enqueue_many")
WORKER_FUNCTIONS = (
    *PRODUCER_FUNCTIONS,
    "jobq_dequeue",
    "jobq_complete",
    "jobq_complete_many",
    "jobq_fail",
    "jobq_heartbeat",
    "jobq_release",
    "jobq_release_orphans",
)
# The public functions this client knows of; an admin grant made with a connection lists the
# installed ones from pg_proc instead (so functions added by later migrations are included).
KNOWN_PUBLIC_FUNCTIONS = (
    *WORKER_FUNCTIONS,
    "jobq_requeue_dead_letter",
    "jobq_requeue_dead_letters",
    "jobq_stats",
    "jobq_prune",
    "jobq_configure",
    "jobq_list_jobs",
    "jobq_health",
)
ADMIN_TABLES = ("jobq_jobs", "jobq_settings", "jobq_migrations")


def admin_functions(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    """The public jobq functions installed in ``schema`` (private ``jobq__*`` excluded)."""
    rows = conn.execute(_sql.PUBLIC_FUNCTIONS, {"schema": schema}).fetchall()
    return [str(row[0]) for row in rows]


def grant_statements(
    role: str,
    level: Level,
    schema: str = "public",
    functions: Sequence[str] | None = None,
) -> list[sql.Composed]:
    """The GRANT statements for ``level``; ``functions`` (admin only) overrides the known list."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    grantee = sql.Identifier(role)
    nsp = sql.Identifier(schema)
    if level == "producer":
        names: Sequence[str] = PRODUCER_FUNCTIONS
    elif level == "worker":
        names = WORKER_FUNCTIONS
    else:
        names = KNOWN_PUBLIC_FUNCTIONS if functions is None else functions
    statements = [sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(nsp, grantee)]
    statements += [
        sql.SQL("GRANT EXECUTE ON FUNCTION {}.{} TO {}").format(nsp, sql.Identifier(f), grantee)
        for f in names
        if not f.startswith("jobq__")
    ]
    if level == "admin":
        tables = sql.SQL(", ").join(
            sql.SQL("{}.{}").format(nsp, sql.Identifier(t)) for t in ADMIN_TABLES
        )
        statements.append(sql.SQL("GRANT SELECT ON TABLE {} TO {}").format(tables, grantee))
    return statements


def render(statements: Sequence[sql.Composed], conn: psycopg.Connection[Any] | None = None) -> str:
    """The statements as a psql script."""
    return "".join(f"{s.as_string(conn)};\n" for s in statements)


def plan(
    role: str, level: Level, schema: str = "public", conn: psycopg.Connection[Any] | None = None
) -> list[sql.Composed]:
    """The statements to run: with a connection, the admin list comes from the catalogue."""
    functions: list[str] | None = None
    if conn is not None:
        present = conn.execute(_sql.SCHEMA_EXISTS, {"schema": schema}).fetchone()
        if not (present and present[0]):
            raise NotMigrated(
                f'schema "{schema}" does not exist: run `jobq migrate --schema {schema}` first',
                sqlstate="3F000",
            )
        installed = admin_functions(conn, schema)
        if "jobq_enqueue" not in installed:
            raise NotMigrated(
                f'jobq is not installed in schema "{schema}": run `jobq migrate --schema '
                f"{schema}` first",
                sqlstate="42883",
            )
        if level == "admin":
            functions = installed
    return grant_statements(role, level, schema, functions)


def grant(conninfo: str, role: str, level: Level, schema: str = "public") -> list[str]:
    """Grant ``level`` to ``role`` in one transaction; returns the statements it ran."""
    try:
        with psycopg.connect(conninfo) as conn:
            statements = plan(role, level, schema, conn)
            for statement in statements:
                conn.execute(statement)
            done = [s.as_string(conn) for s in statements]
            conn.commit()
            return done
    except psycopg.Error as exc:
        raise from_psycopg(exc) from exc
