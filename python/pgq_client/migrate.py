"""The migration runner: applies ``sql/migrations/NNNN_<what>.sql`` in order, each once.

Each migration runs in its own transaction with ``search_path`` set to the target schema
(then ``pg_temp``), so every object lands in that schema and every function captures it. Each
applied migration is recorded in ``<schema>.jobq_migrations`` with the SHA-256 of its file; an
applied migration whose file changed afterwards is refused. A session-level advisory lock per
schema serialises concurrent runs: the second waits, then finds nothing to do.

``render_dry_run`` prints the very statements :func:`migrate` would run, as a script for psql.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from .errors import JobqError

__all__ = [
    "Migration",
    "MigrationError",
    "available_migrations",
    "migrate",
    "pending_migrations",
    "render_dry_run",
]

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
_LOCK_NAMESPACE = "jobq.migrate:"


class MigrationError(JobqError):
    """A migration cannot be applied (edited after it was applied, unknown, bad file name)."""


@dataclass(frozen=True)
class Migration:
    """One migration file: ``version`` is its name without ``.sql`` (``0001_jobq_core``)."""

    version: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def _migrations_dir() -> Path:
    """The migrations shipped in the wheel, else those of the source tree."""
    shipped = Path(str(importlib.resources.files("pgq_client"))) / "migrations"
    if shipped.is_dir():
        return shipped
    source = Path(__file__).resolve().parents[2] / "sql" / "migrations"
    if source.is_dir():
        return source
    raise MigrationError(f"no migrations found (looked in {shipped} and {source})")


def available_migrations() -> list[Migration]:
    """Every migration file, in order. Refuses files that do not follow ``NNNN_name.sql``."""
    found: list[Migration] = []
    for path in sorted(_migrations_dir().iterdir()):
        if path.suffix != ".sql":
            continue
        if not _NAME.match(path.name):
            raise MigrationError(
                f"migration file {path.name!r} does not follow NNNN_lowercase_name.sql"
            )
        found.append(Migration(version=path.stem, sql=path.read_text(encoding="utf-8")))
    numbers = [m.version[:4] for m in found]
    if len(set(numbers)) != len(numbers):
        raise MigrationError(f"two migration files share a number: {numbers}")
    return found


def _bootstrap(schema: str) -> sql.Composed:
    return sql.SQL(
        "CREATE SCHEMA IF NOT EXISTS {s};\n"
        "CREATE TABLE IF NOT EXISTS {s}.jobq_migrations (\n"
        "    version text NOT NULL,\n"
        "    checksum text NOT NULL,\n"
        "    applied_at timestamptz NOT NULL DEFAULT now(),\n"
        "    CONSTRAINT jobq_migrations_pkey PRIMARY KEY (version)\n"
        ");\n"
        "REVOKE ALL ON TABLE {s}.jobq_migrations FROM PUBLIC;\n"
        "COMMENT ON TABLE {s}.jobq_migrations IS "
        "'jobq migrations applied to this schema, with the SHA-256 of each file "
        "(written by jobq migrate).';\n"
    ).format(s=sql.Identifier(schema))


def _apply(schema: str, migration: Migration) -> sql.Composed:
    """The body of one migration's transaction: search_path, the file, its record."""
    return sql.SQL(
        "SET LOCAL search_path = {s}, pg_temp;\n{body}\n"
        "INSERT INTO {s}.jobq_migrations (version, checksum) VALUES ({v}, {c});\n"
    ).format(
        s=sql.Identifier(schema),
        body=sql.SQL(migration.sql),  # trusted: our own file
        v=sql.Literal(migration.version),
        c=sql.Literal(migration.checksum),
    )


def _lock_key(schema: str) -> sql.Composed:
    return sql.SQL("SELECT pg_advisory_lock(hashtext({k}))").format(
        k=sql.Literal(_LOCK_NAMESPACE + schema)
    )


def _applied(conn: psycopg.Connection[tuple[str, str]], schema: str) -> dict[str, str]:
    exists = conn.execute(
        "SELECT to_regclass(format('%%I.jobq_migrations', %(schema)s::text)) IS NOT NULL",
        {"schema": schema},
    ).fetchone()
    if not exists or not exists[0]:
        return {}
    rows = conn.execute(
        sql.SQL("SELECT version, checksum FROM {}.jobq_migrations ORDER BY version").format(
            sql.Identifier(schema)
        )
    ).fetchall()
    return {version: checksum for version, checksum in rows}


def _check(applied: dict[str, str], known: list[Migration], schema: str) -> list[Migration]:
    """Verify what is applied against the files; return the pending migrations, in order."""
    by_version = {m.version: m for m in known}
    for version, checksum in applied.items():
        migration = by_version.get(version)
        if migration is None:
            raise MigrationError(
                f"schema {schema!r} has migration {version} applied, which this jobq does not "
                "know: upgrade the jobq package before migrating"
            )
        if migration.checksum != checksum:
            raise MigrationError(
                f"migration {version} was edited after it was applied to schema {schema!r} "
                f"(recorded sha256 {checksum[:12]}…, file now {migration.checksum[:12]}…): "
                "migrations are forward-only; restore the file and add a new migration"
            )
    return [m for m in known if m.version not in applied]


def pending_migrations(
    conn: psycopg.Connection[tuple[str, str]], schema: str = "public"
) -> list[Migration]:
    """The migrations not yet applied to ``schema`` (after verifying the applied ones)."""
    return _check(_applied(conn, schema), available_migrations(), schema)


def migrate(conninfo: str, schema: str = "public", dry_run: bool = False) -> list[str]:
    """Apply the pending migrations to ``schema`` and return their versions, in order.

    Idempotent: a second run applies nothing and returns ``[]``. With ``dry_run`` nothing is
    changed and the versions that would be applied are returned.
    """
    _validate_schema(schema)
    known = available_migrations()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        if dry_run:
            return [m.version for m in _check(_applied(conn, schema), known, schema)]
        conn.execute(_lock_key(schema))
        try:
            with conn.transaction():
                conn.execute(_bootstrap(schema))
            pending = _check(_applied(conn, schema), known, schema)
            for migration in pending:
                with conn.transaction():
                    conn.execute(_apply(schema, migration))
            return [m.version for m in pending]
        finally:
            conn.execute("SELECT pg_advisory_unlock_all()")


def render_dry_run(conninfo: str | None, schema: str = "public") -> str:
    """The SQL that :func:`migrate` would run, as a psql script.

    With a connection, only the pending migrations; without one, all of them (for a new
    database). Each migration is one transaction; ``ON_ERROR_STOP`` makes psql stop at the
    first error.
    """
    _validate_schema(schema)
    known = available_migrations()
    if conninfo is None:
        pending = known
        header = "all migrations (no database was asked what is applied)"
    else:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            pending = _check(_applied(conn, schema), known, schema)
        header = f"{len(pending)} pending migration(s)"
    parts = [
        f"-- jobq migrate --dry-run: {header} for schema {schema!r}.",
        "-- Apply with: psql -v ON_ERROR_STOP=1 -f this_file.sql",
        "\\set ON_ERROR_STOP on",
        "BEGIN;",
        _bootstrap(schema).as_string(None),
        "COMMIT;",
    ]
    for migration in pending:
        parts += [
            f"-- migration {migration.version} (sha256 {migration.checksum})",
            "BEGIN;",
            _apply(schema, migration).as_string(None),
            "COMMIT;",
        ]
    return "\n".join(parts) + "\n"


def _validate_schema(schema: str) -> None:
    if not schema or not schema.strip() or len(schema) > 63 or "\x00" in schema:
        raise MigrationError(f"schema must be a non-blank name of at most 63 bytes, got {schema!r}")
