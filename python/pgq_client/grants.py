"""``jobq grant`` and ``jobq revoke``: the statements that give an existing role one of the
levels of jobq, or take back everything jobq granted it.

* producer: EXECUTE on ``jobq_enqueue``, ``jobq_enqueue_many``;
* worker: a producer's, plus claiming and acknowledging (``jobq_dequeue`` ... ``jobq_release``,
  ``jobq_fail_many`` and ``jobq_release_orphans`` included);
* monitor: the read-only views of exporters and dashboards (``jobq_stats``, ``jobq_health``);
* admin: every public ``jobq_*`` function (never the private ``jobq__*`` helpers), and SELECT
  on the tables, ``jobq_migrations`` included.

Which level gets which function is declared in one place, the function's own file
(``--! levels: producer, worker, admin`` in ``sql/functions/jobq_<name>.sql``), so a new
function is one file plus its test. With a connection, a level gets the functions that
declare it and are installed in the schema (an admin gets every installed public function);
without one (``--dry-run`` with no database), those of the files.

``jobq migrate`` carries the levels over an upgrade: a role that held every function of a
level gets the level's functions that the upgrade adds (see ``pgq_client.migrate``).

Each grant includes USAGE on the schema. ``PUBLIC`` is refused as a role to grant to: a level
is for one role, and PUBLIC is every role. Functions are named by signature (with a connection,
as the catalogue spells them; without, as the files declare them), so that an overload that
another role planted beside a jobq function is never named for it; with a connection, only the
functions and tables that jobq's owner owns are granted or revoked (``jobq doctor`` reports the
others). Identifiers are quoted with psycopg.sql. ``revoke`` runs each statement on its own and
goes on past one that fails, then raises :class:`RevokeIncomplete` naming what failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import psycopg
from psycopg import sql

from . import _sql
from .errors import InvalidArgument, JobqError, NotMigrated, from_psycopg
from .migrate import ADMIN_TABLES, FunctionFile, file_signature, function_files

__all__ = [
    "ADMIN_TABLES",
    "LEVELS",
    "Level",
    "RevokeIncomplete",
    "admin_functions",
    "declared_functions",
    "grant",
    "grant_statements",
    "plan",
    "render",
    "revoke",
    "revoke_plan",
    "revoke_statements",
]


class RevokeIncomplete(JobqError):
    """``jobq revoke`` ran every statement it could, and some failed (listed in the message)."""

Level = Literal["producer", "worker", "monitor", "admin"]
LEVELS: tuple[Level, ...] = ("producer", "worker", "monitor", "admin")


def declared_functions(level: Level, files: Sequence[FunctionFile] | None = None) -> list[str]:
    """The functions whose file declares ``level`` in its ``--! levels:`` line."""
    return [f.name for f in (function_files() if files is None else files) if level in f.levels]


def _file_signatures(schema: str, names: Sequence[str] | None = None) -> list[sql.Composable]:
    """``"schema".name(types)`` of the files' functions (those of ``names``, else all)."""
    files = function_files()
    wanted = {f.name for f in files} if names is None else set(names)
    return [
        sql.SQL("{}.{}").format(sql.Identifier(schema), sql.SQL(file_signature(f)))
        for f in files
        if f.name in wanted
    ]


def _functions(conn: psycopg.Connection[Any], schema: str) -> list[tuple[str, str]]:
    """(name, signature) of the jobq functions installed in ``schema`` that jobq's owner owns."""
    return [(str(r[0]), str(r[1])) for r in conn.execute(_sql.JOBQ_FUNCTIONS, {"schema": schema})]


def admin_functions(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    """The public jobq functions installed in ``schema`` that jobq's owner owns, by name
    (private ``jobq__*`` excluded)."""
    return sorted({name for name, _ in _functions(conn, schema) if not name.startswith("jobq__")})


def _check_role(role: str) -> None:
    if not role or not role.strip():
        raise InvalidArgument("ROLE must name a role")
    if role.strip().lower() == "public":
        raise InvalidArgument(
            f"ROLE {role!r} is PUBLIC, that is every role: grant a level to one role "
            "(CREATE ROLE app_worker; jobq grant app_worker --as worker)"
        )


def grant_statements(
    role: str,
    level: Level,
    schema: str = "public",
    functions: Sequence[sql.Composable] | None = None,
    tables: Sequence[str] = ADMIN_TABLES,
) -> list[sql.Composed]:
    """The GRANT statements for ``level``: ``functions`` (signatures) overrides the declared
    list, ``tables`` the tables an admin may read (an older installation lacks some)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    _check_role(role)
    grantee = sql.Identifier(role)
    nsp = sql.Identifier(schema)
    signatures = (
        _file_signatures(schema, [n for n in declared_functions(level)
                                  if not n.startswith("jobq__")])
        if functions is None else functions
    )
    statements = [sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(nsp, grantee)]
    statements += [
        sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(f, grantee) for f in signatures
    ]
    if level == "admin" and tables:
        listed = sql.SQL(", ").join(sql.SQL("{}.{}").format(nsp, sql.Identifier(t)) for t in tables)
        statements.append(sql.SQL("GRANT SELECT ON TABLE {} TO {}").format(listed, grantee))
    return statements


def render(statements: Sequence[sql.Composed], conn: psycopg.Connection[Any] | None = None) -> str:
    """The statements as a psql script."""
    return "".join(f"{s.as_string(conn)};\n" for s in statements)


def _installed(conn: psycopg.Connection[Any], schema: str) -> list[tuple[str, str]]:
    present = conn.execute(_sql.SCHEMA_EXISTS, {"schema": schema}).fetchone()
    if not (present and present[0]):
        raise NotMigrated(
            f'schema "{schema}" does not exist: run `jobq migrate --schema {schema}` first',
            sqlstate="3F000",
        )
    installed = _functions(conn, schema)
    if not any(name == "jobq_enqueue" for name, _ in installed):
        raise NotMigrated(
            f'jobq is not installed in schema "{schema}": run `jobq migrate --schema '
            f"{schema}` first",
            sqlstate="42883",
        )
    return installed


def plan(
    role: str, level: Level, schema: str = "public", conn: psycopg.Connection[Any] | None = None
) -> list[sql.Composed]:
    """The statements to run: with a connection, only functions installed in ``schema`` (and
    owned by jobq's owner), by signature."""
    functions: list[sql.Composable] | None = None
    tables: Sequence[str] = ADMIN_TABLES
    _check_role(role)
    if conn is not None:
        installed = _installed(conn, schema)
        public = [(n, sig) for n, sig in installed if not n.startswith("jobq__")]
        if level == "admin":
            functions = [sql.SQL(sig) for _, sig in public]
            present = {str(r[0]) for r in conn.execute(_sql.JOBQ_TABLES, {"schema": schema})}
            tables = [t for t in ADMIN_TABLES if t in present]
        else:
            declared = set(declared_functions(level))
            functions = [sql.SQL(sig) for n, sig in public if n in declared]
    return grant_statements(role, level, schema, functions, tables)


def grant(conninfo: str, role: str, level: Level, schema: str = "public") -> list[str]:
    """Grant ``level`` to ``role`` in one transaction; returns the statements it ran."""
    try:
        with psycopg.connect(conninfo, **_sql.connect_kwargs(conninfo)) as conn:
            statements = plan(role, level, schema, conn)
            for statement in statements:
                conn.execute(statement)
            done = [s.as_string(conn) for s in statements]
            conn.commit()
            return done
    except psycopg.Error as exc:
        raise from_psycopg(exc) from exc


# -- revoke ------------------------------------------------------------------------------------


def revoke_statements(
    role: str,
    schema: str = "public",
    functions: Sequence[sql.Composable] | None = None,
    tables: Sequence[str] = ADMIN_TABLES,
    schema_usage: bool | None = None,
) -> list[sql.Composed]:
    """The REVOKE statements that take back from ``role`` everything a level gives.

    ``functions`` (signatures) and ``tables`` default to those of the files; ``schema_usage``
    (default: for any schema but public) says whether USAGE on the schema is taken back too.
    ``PUBLIC`` is accepted here: it takes back what an older jobq granted to PUBLIC.
    """
    if not role or not role.strip():
        raise InvalidArgument("ROLE must name a role")
    grantee = (
        sql.SQL("PUBLIC") if role.strip().lower() == "public" else sql.Identifier(role)
    )
    nsp = sql.Identifier(schema)
    signatures = _file_signatures(schema) if functions is None else list(functions)
    statements = [
        sql.SQL("REVOKE ALL ON FUNCTION {} FROM {}").format(f, grantee) for f in signatures
    ]
    if tables:
        statements.append(
            sql.SQL("REVOKE ALL ON TABLE {} FROM {}").format(
                sql.SQL(", ").join(sql.SQL("{}.{}").format(nsp, sql.Identifier(t)) for t in tables),
                grantee,
            )
        )
    if schema_usage is None:
        schema_usage = schema != "public"
    if schema_usage:
        statements.append(sql.SQL("REVOKE USAGE ON SCHEMA {} FROM {}").format(nsp, grantee))
    return statements


def revoke_plan(
    role: str, schema: str = "public", conn: psycopg.Connection[Any] | None = None
) -> list[sql.Composed]:
    """The statements to run: with a connection, for every jobq function (by signature) and
    table installed in ``schema`` that jobq's owner owns, and USAGE on the schema when nothing
    but jobq lives in it (USAGE on a shared schema may have been granted for other reasons)."""
    if conn is None:
        return revoke_statements(role, schema)
    installed = _installed(conn, schema)
    tables = [str(r[0]) for r in conn.execute(_sql.JOBQ_TABLES, {"schema": schema})]
    row = conn.execute(_sql.SCHEMA_HAS_OTHERS, {"schema": schema}).fetchone()
    return revoke_statements(
        role, schema, [sql.SQL(sig) for _, sig in installed], tables,
        schema_usage=not (row and row[0]),
    )


def revoke(conninfo: str, role: str, schema: str = "public") -> list[str]:
    """Take back from ``role`` everything jobq grants; returns the statements it ran. Each
    statement is its own transaction, and one that fails does not stop the others: a role is
    never left with more than the statements that failed, which :class:`RevokeIncomplete`
    names, after the others have run."""
    done: list[str] = []
    failed: list[str] = []
    try:
        with psycopg.connect(conninfo, autocommit=True, **_sql.connect_kwargs(conninfo)) as conn:
            for statement in revoke_plan(role, schema, conn):
                text = statement.as_string(conn)
                try:
                    conn.execute(statement)
                except psycopg.Error as exc:
                    failed.append(f"{text}: {str(exc).strip().splitlines()[0]}")
                else:
                    done.append(text)
    except psycopg.Error as exc:
        raise from_psycopg(exc) from exc
    if failed:
        raise RevokeIncomplete(
            f"{len(failed)} of {len(done) + len(failed)} statements failed (the others were "
            "run): " + "; ".join(failed)
        )
    return done
