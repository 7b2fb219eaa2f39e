"""What a schema records against the files: what :func:`~.runner.migrate` would do, or why
it refuses the schema."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from .files import FUNCTIONS_PREFIX, FunctionFile, Migration, MigrationError

_UNKNOWN = (
    "schema {schema!r} has {what} {version} applied, which this jobq does not know: it was "
    "installed by a newer jobq or by a development build before 0.1.0. Nothing was changed. "
    "Upgrade the jobq package (a development install cannot be upgraded: install into a new "
    "schema)"
)


@dataclass(frozen=True)
class Plan:
    """The migrations and function files pending in a schema, in order."""

    migrations: list[Migration]
    functions: list[FunctionFile]

    @property
    def versions(self) -> list[str]:
        return [m.version for m in self.migrations] + [f.version for f in self.functions]


def validate_schema(schema: str) -> None:
    # PostgreSQL cuts an identifier to 63 bytes (NOTICE only): a longer name would install into
    # a schema of another name than the one given. Bytes, not characters: 'ü' takes two.
    # Control characters (line ends among them) are refused: the name is written into SQL
    # comments and messages, where a line end would end the comment (--dry-run's script).
    size = len(schema.encode("utf-8", errors="surrogatepass"))
    control = any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in schema)
    if not schema or not schema.strip() or size > 63 or control:
        raise MigrationError(
            f"schema must be a non-blank name of at most 63 bytes without control characters, "
            f"got {schema!r}"
            + (f" ({size} bytes in UTF-8)" if size > 63 else "")
        )


def applied(conn: psycopg.Connection[Any], schema: str) -> dict[str, str]:
    """The versions ``schema`` records, with their checksums (empty: no jobq there)."""
    exists = conn.execute(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_class AS c"
        " JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace"
        " WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name"
        " AND c.relname OPERATOR(pg_catalog.=) 'jobq_migrations'::pg_catalog.name)",
        {"schema": schema},
    ).fetchone()
    if not exists or not exists[0]:
        return {}
    rows = conn.execute(
        sql.SQL("SELECT version, checksum FROM {}.jobq_migrations ORDER BY version").format(
            sql.Identifier(schema)
        )
    ).fetchall()
    return {str(version): str(checksum) for version, checksum in rows}


def check(
    recorded: dict[str, str],
    known: list[Migration],
    functions: list[FunctionFile],
    schema: str,
    history: dict[str, frozenset[str]],
) -> Plan:
    """Verify what ``schema`` records against the files; the plan, or :class:`MigrationError`
    for a record this jobq cannot build on."""
    by_version = {m.version: m for m in known}
    by_file = {f.version: f for f in functions}
    renamed = {FUNCTIONS_PREFIX + old for f in functions for old in f.renamed_from}
    for version, checksum in recorded.items():
        if version.startswith(FUNCTIONS_PREFIX):
            if version not in by_file and version not in renamed:
                raise MigrationError(
                    _UNKNOWN.format(schema=schema, what="function file", version=version)
                )
            continue
        migration = by_version.get(version)
        if migration is None:
            raise MigrationError(_UNKNOWN.format(schema=schema, what="migration", version=version))
        if migration.checksum != checksum:
            raise MigrationError(
                f"migration {version} was edited after it was applied to schema {schema!r} "
                f"(recorded sha256 {checksum[:12]}…, file now {migration.checksum[:12]}…): "
                "migrations are forward-only; restore the file and add a new migration"
            )
    # A recorded version of a function file that this jobq never shipped: applying ours would
    # put older bodies back.
    unknown = [
        f.version
        for f in functions
        if recorded.get(f.version) not in (None, f.checksum, *history.get(f.name, ()))
    ]
    if unknown:
        raise MigrationError(
            f"schema {schema!r} was migrated by a newer jobq: its function file(s) "
            f"{', '.join(unknown)} were applied from versions that this jobq does not know, "
            "and applying its own would put older bodies back. Upgrade the jobq package. "
            "(To install this jobq's functions anyway, as for a development build, delete "
            f"their records first: DELETE FROM {sql.Identifier(schema).as_string(None)}"
            ".jobq_migrations WHERE version LIKE 'functions/%'.)"
        )
    return Plan(
        migrations=[m for m in known if m.version not in recorded],
        functions=[
            f
            for f in functions
            if recorded.get(f.version) != f.checksum
            or any(FUNCTIONS_PREFIX + old in recorded for old in f.renamed_from)
        ],
    )

