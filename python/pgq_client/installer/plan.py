"""What a schema records in ``jobq_migrations`` (each version with the SHA-256 of its file)
against the files: what :func:`~.runner.migrate` would do, or why it refuses the schema (an
applied migration whose file changed, a record this jobq does not know, a function file
applied from a version that ``history.sha256`` does not list)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from .files import (
    FUNCTIONS_PREFIX,
    FunctionFile,
    Migration,
    MigrationError,
    available_migrations,
    function_files,
    function_history,
    statement,
)

_UNKNOWN = (
    "schema {schema!r} has {what} {version} applied, which this jobq does not know: it was "
    "installed by a newer jobq or by a development build before 0.1.0. Nothing was changed. "
    "Upgrade the jobq package (a development install cannot be upgraded: install into a new "
    "schema)"
)


@dataclass(frozen=True)
class Plan:
    """Migrations and function files in the order they are applied: those a run finds, or
    those pending in a schema."""

    migrations: list[Migration]
    functions: list[FunctionFile]
    history: dict[str, frozenset[str]]

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


def load(schema: str, migrations_dir: Path | None, functions_dir: Path | None) -> Plan:
    """Everything a run over ``schema`` would apply to an empty one (the directories replace
    the shipped files, for tests)."""
    validate_schema(schema)
    return Plan(
        available_migrations(migrations_dir),
        function_files(functions_dir),
        function_history(functions_dir),
    )


def applied(conn: psycopg.Connection[Any], schema: str) -> dict[str, str]:
    """The versions ``schema`` records, with their checksums (empty: no jobq there)."""
    exists = conn.execute(statement("has_migrations", schema)).fetchone()
    if not exists or not exists[0]:
        return {}
    rows = conn.execute(statement("recorded", schema)).fetchall()
    return {str(version): str(checksum) for version, checksum in rows}


def check(recorded: dict[str, str], files: Plan, schema: str) -> Plan:
    """Verify what ``schema`` records against the files; what is pending, or
    :class:`MigrationError` for a record this jobq cannot build on."""
    by_version = {m.version: m for m in files.migrations}
    known = {f.version for f in files.functions}
    known |= {FUNCTIONS_PREFIX + old for f in files.functions for old in f.renamed_from}
    for version, checksum in recorded.items():
        migration = by_version.get(version)
        if version.startswith(FUNCTIONS_PREFIX) and version in known:
            continue
        if migration is None:
            what = "function file" if version.startswith(FUNCTIONS_PREFIX) else "migration"
            raise MigrationError(_UNKNOWN.format(schema=schema, what=what, version=version))
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
        for f in files.functions
        if recorded.get(f.version) not in (None, f.checksum, *files.history.get(f.name, ()))
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
        [m for m in files.migrations if m.version not in recorded],
        [
            f
            for f in files.functions
            if recorded.get(f.version) != f.checksum
            or any(FUNCTIONS_PREFIX + old in recorded for old in f.renamed_from)
        ],
        files.history,
    )
