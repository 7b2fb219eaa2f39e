"""``jobq migrate``: apply what is pending, each migration in its own transaction, the function
files in one more (a failure leaves the previous set of bodies in place, never half of each).

A session-level advisory lock per schema serialises concurrent runs: the second waits, then
finds nothing to do. Its key is random and kept in a table only jobq's owner may read
(``sql/lock_table.sql``).
"""

from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Any

import psycopg
import sqlparse
from psycopg import sql

from .. import _sql
from . import citus
from .drift import audit_findings, control_findings
from .files import MigrationError, statement
from .plan import applied, check, load
from .script import bootstrap, creating, transactions

logger = logging.getLogger("pgq_client.installer")
# The grants that carry a level over to the functions an upgrade adds, one INFO line each.
grant_logger = logging.getLogger("pgq_client.installer.grants")
_GRANT_NOTICE = "jobq migrate: granted "


@functools.lru_cache(maxsize=256)
def _split(text: str) -> tuple[str, ...]:
    """A script's statements. Splitting is most of what a migrate costs the client, and a
    process that installs many schemas (tenants, tests) splits the same texts again and
    again; the split is a pure function of the text."""
    return tuple(part for part in sqlparse.split(text) if part.strip())


def run_script(conn: psycopg.Connection[Any], script: sql.Composed) -> None:
    """Run a script one statement at a time (sqlparse splits, minding dollar quotes and
    comments): Citus propagates some DDL to its nodes as one prepared statement of the whole
    query, which a node refuses when it holds several commands."""
    for text in _split(script.as_string(conn)):
        conn.execute(text.encode())


def _execute(conn: psycopg.Connection[Any], step: sql.Composed, what: str, schema: str) -> None:
    """Run one step of a migration; an error names the step (the file) and the schema."""
    try:
        run_script(conn, step)
    except psycopg.Error as exc:
        diag = exc.diag
        message = diag.message_primary or str(exc).strip()
        detail = f" ({diag.message_detail})" if diag.message_detail else ""
        context = diag.context.strip().splitlines()[0] if diag.context else ""
        where = "" if not context or "inline_code_block" in context else f"; {context}"
        hint = f" Hint: {diag.message_hint}" if diag.message_hint else ""
        raise MigrationError(
            f"{what} failed in schema {schema!r}: {message}{detail}"
            f" [SQLSTATE {exc.sqlstate}]{where}; nothing of it was applied.{hint}"
        ) from exc


def _lock(conn: psycopg.Connection[Any], schema: str) -> None:
    """Take the migrate lock of ``schema``, making its table first if needed: on a first
    install nothing else exists to lock, and two first installs that race there fail on the
    catalogue's unique indexes, which this retries."""
    owner = statement("lock_owner", schema)
    for attempt in range(1, 6):
        row = conn.execute(owner).fetchone()
        if row is not None:
            break
        try:
            with conn.transaction():
                run_script(conn, creating(schema, statement("lock_table", schema)))
        except (psycopg.errors.UniqueViolation, psycopg.errors.InternalError_) as exc:
            # a concurrent first run made the same object, or changed its ACL or comment
            # ("tuple concurrently updated"): the next try finds it made
            if attempt == 5 or (
                isinstance(exc, psycopg.errors.InternalError_) and "concurrently" not in str(exc)
            ):
                raise
            time.sleep(0.05 * attempt)
    else:
        row = conn.execute(owner).fetchone()
    if not (row and row[0]):
        raise MigrationError(
            f"{schema}.jobq__migrate_lock does not belong to jobq's owner: another role made it "
            "and may know the key of the migrate lock. Drop it after checking who made it."
        )
    conn.execute(statement("migrate_lock", schema))


def _log_grant(diag: psycopg.errors.Diagnostic) -> None:
    """A NOTICE of the grants of the levels, as one INFO line of ``grant_logger``."""
    message = diag.message_primary or ""
    if message.startswith(_GRANT_NOTICE):
        grant_logger.info("%s", message[len("jobq migrate: "):])


def migrate(
    conninfo: str,
    schema: str = "public",
    dry_run: bool = False,
    *,
    force: bool = False,
    migrations_dir: Path | None = None,
    functions_dir: Path | None = None,
) -> list[str]:
    """Apply what is pending in ``schema`` (``dry_run``: nothing) and return the versions
    applied, in order: the numbered migrations, then ``functions/<name>`` for each function
    file. ``migrations_dir`` and ``functions_dir`` replace the shipped files (for tests). A
    schema that another role controls is refused unless ``force``, as is one whose records this
    jobq cannot build on, before anything is written."""
    files = load(schema, migrations_dir, functions_dir)
    with psycopg.connect(conninfo, autocommit=True, **_sql.connect_kwargs(conninfo)) as conn:
        todo = check(applied(conn, schema), files, schema)
        if dry_run:
            return todo.versions
        findings = control_findings(conn, schema)
        if findings and not force:
            raise MigrationError(
                f"schema {schema!r} is not under jobq's owner's control alone, so an upgrade "
                "could run what another role planted there: " + "; ".join(findings)
                + ". Fix it (docs/security.md, 'Install safely'), or run with --force"
            )
        for finding in findings:
            logger.warning("%s (migrating anyway: --force)", finding)
        # Before the lock: its table is the schema's first object, and a schema created while
        # schema-based sharding is on is distributed at once, where Citus refuses some DDL.
        distribute = citus.schema_sharding(conn)
        _lock(conn, schema)
        try:
            # Again under the lock (a concurrent run may have applied some), before the
            # bootstrap rewrites the table's comment; the bootstrap records nothing.
            todo = check(applied(conn, schema), files, schema)
            with conn.transaction():
                run_script(conn, bootstrap(schema))
            conn.add_notice_handler(_log_grant)
            for _, steps in transactions(schema, todo, files.functions):
                with conn.transaction():
                    for what, step in steps:
                        _execute(conn, step, what, schema)
            if distribute:
                citus.distribute(conn, schema, files.functions)
            for finding in audit_findings(conn, schema):
                logger.warning("%s", finding)
            return todo.versions
        finally:
            conn.execute("SELECT pg_catalog.pg_advisory_unlock_all()")
