"""``jobq grant`` and ``jobq revoke``: give an existing role one of the levels of jobq
(:mod:`.levels`, with USAGE on the schema), or take back everything jobq granted it.

With a connection, only what is installed in the schema and owned by jobq's owner is named, by
signature as the catalogue spells it, so that an overload another role planted beside a jobq
function is never named for it; without one (``--dry-run``), what the files declare. PUBLIC is
refused as a grantee: a level is for one role, and PUBLIC is every role.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from .. import _conn, _sql
from .._conn import translate_errors
from ..errors import InvalidArgument, JobqError, NotMigrated
from .files import FunctionFile, file_signature, function_files
from .levels import ADMIN_TABLES, LEVELS, Level

__all__ = [
    "ADMIN_TABLES", "LEVELS", "Level", "RevokeIncomplete", "declared_functions", "grant",
    "grant_statements", "narrowest_level", "plan", "render", "revoke", "revoke_plan",
    "revoke_statements",
]


class RevokeIncomplete(JobqError):
    """``jobq revoke`` ran every statement it could, and some failed (listed in the message)."""


def declared_functions(level: Level, files: Sequence[FunctionFile] | None = None) -> list[str]:
    """The functions whose file declares ``level`` in its ``--! levels:`` line."""
    return [f.name for f in (function_files() if files is None else files) if level in f.levels]


def narrowest_level(function: str) -> Level:
    """The narrowest level whose grant includes ``function`` (as its file declares)."""
    files = function_files()
    return next((lv for lv in LEVELS if function in declared_functions(lv, files)), "admin")


def _file_signatures(schema: str, level: Level | None = None) -> list[sql.Composable]:
    """``"schema".name(types)`` of the files' functions (the public ones of ``level``)."""
    return [
        sql.SQL("{}.{}").format(sql.Identifier(schema), sql.SQL(file_signature(f)))
        for f in function_files()
        if level is None or (level in f.levels and not f.private)
    ]


def _check_role(role: str, *, public: bool = False) -> sql.Composable:
    if not role or not role.strip():
        raise InvalidArgument("ROLE must name a role")
    if role.strip().lower() != "public":
        return sql.Identifier(role)
    if public:  # revoke: takes back what an older jobq granted to PUBLIC
        return sql.SQL("PUBLIC")
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
    list, ``tables`` the tables an admin may read."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    grantee = _check_role(role)
    statements = [sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), grantee)]
    statements += [
        sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(f, grantee)
        for f in (_file_signatures(schema, level) if functions is None else functions)
    ]
    if level == "admin" and tables:
        statements.append(sql.SQL("GRANT SELECT ON TABLE {} TO {}").format(
            sql.SQL(", ").join(sql.Identifier(schema, name) for name in tables), grantee
        ))
    return statements


def render(statements: Sequence[sql.Composed], conn: psycopg.Connection[Any] | None = None) -> str:
    """The statements as a psql script."""
    return "".join(f"{s.as_string(conn)};\n" for s in statements)


def _installed(conn: psycopg.Connection[Any], schema: str) -> list[tuple[str, str]]:
    """(name, signature) of the jobq functions in ``schema`` that jobq's owner owns."""
    present = conn.execute(_sql.SCHEMA_EXISTS, {"schema": schema}).fetchone()
    if not (present and present[0]):
        raise NotMigrated(
            f'schema "{schema}" does not exist: run `jobq migrate --schema {schema}` first',
            sqlstate="3F000",
        )
    installed = [
        (str(r[0]), str(r[1])) for r in conn.execute(_sql.JOBQ_FUNCTIONS, {"schema": schema})
    ]
    if not any(name == "jobq_enqueue" for name, _ in installed):
        raise NotMigrated(
            f'jobq is not installed in schema "{schema}": run `jobq migrate --schema '
            f"{schema}` first",
            sqlstate="42883",
        )
    return installed


def _tables(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    return [str(r[0]) for r in conn.execute(_sql.JOBQ_TABLES, {"schema": schema})]


def plan(
    role: str, level: Level, schema: str = "public", conn: psycopg.Connection[Any] | None = None
) -> list[sql.Composed]:
    """The statements to run: with a connection, only functions installed in ``schema`` (and
    owned by jobq's owner), by signature."""
    _check_role(role)
    if conn is None:
        return grant_statements(role, level, schema)
    declared = None if level == "admin" else set(declared_functions(level))
    functions = [
        sql.SQL(sig) for name, sig in _installed(conn, schema)
        if not name.startswith("jobq__") and (declared is None or name in declared)
    ]
    tables = [t for t in ADMIN_TABLES if t in set(_tables(conn, schema))]
    return grant_statements(role, level, schema, functions, tables)


@contextmanager
def connect(conninfo: str) -> Iterator[psycopg.Connection[Any]]:
    """An autocommit connection whose errors, its statements' too, are jobq's typed ones."""
    with translate_errors(), _conn.connect(conninfo) as conn:
        yield conn


def grant(conninfo: str, role: str, level: Level, schema: str = "public") -> list[str]:
    """Grant ``level`` to ``role`` in one transaction; returns the statements it ran."""
    with connect(conninfo) as conn, conn.transaction():
        statements = plan(role, level, schema, conn)
        for statement in statements:
            conn.execute(statement)
        return [s.as_string(conn) for s in statements]


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
    """
    grantee = _check_role(role, public=True)
    statements = [
        sql.SQL("REVOKE ALL ON FUNCTION {} FROM {}").format(f, grantee)
        for f in (_file_signatures(schema) if functions is None else functions)
    ]
    if tables:
        statements.append(sql.SQL("REVOKE ALL ON TABLE {} FROM {}").format(
            sql.SQL(", ").join(sql.Identifier(schema, name) for name in tables), grantee
        ))
    if schema != "public" if schema_usage is None else schema_usage:
        statements.append(
            sql.SQL("REVOKE USAGE ON SCHEMA {} FROM {}").format(sql.Identifier(schema), grantee)
        )
    return statements


def revoke_plan(
    role: str, schema: str = "public", conn: psycopg.Connection[Any] | None = None
) -> list[sql.Composed]:
    """The statements to run: with a connection, for every jobq function (by signature) and
    table installed in ``schema`` that jobq's owner owns, and USAGE on the schema when nothing
    but jobq lives in it (USAGE on a shared schema may have been granted for other reasons)."""
    if conn is None:
        return revoke_statements(role, schema)
    functions = [sql.SQL(sig) for _, sig in _installed(conn, schema)]
    others = conn.execute(_sql.SCHEMA_HAS_OTHERS, {"schema": schema}).fetchone()
    return revoke_statements(
        role, schema, functions, _tables(conn, schema), schema_usage=not (others and others[0])
    )


def revoke(conninfo: str, role: str, schema: str = "public") -> list[str]:
    """Take back from ``role`` everything jobq grants; returns the statements it ran. Each runs
    on its own, and one that fails does not stop the others: :class:`RevokeIncomplete` then
    names those that failed."""
    done: list[str] = []
    failed: list[str] = []
    with connect(conninfo) as conn:
        for statement in revoke_plan(role, schema, conn):
            text = statement.as_string(conn)
            try:
                conn.execute(statement)
            except psycopg.Error as exc:
                failed.append(f"{text}: {str(exc).strip().splitlines()[0]}")
            else:
                done.append(text)
    if failed:
        raise RevokeIncomplete(
            f"{len(failed)} of {len(done) + len(failed)} statements failed (the others were "
            "run): " + "; ".join(failed)
        )
    return done
