"""Installing jobq and checking the installation: migrate, grant, revoke, doctor.

Every use of the installer (``pgq_client.installer``) is in this module.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click
import psycopg

from pgq_client import _sql
from pgq_client.errors import JobqError, PermissionDenied
from pgq_client.installer import drift as checks
from pgq_client.installer import levels, runner
from pgq_client.installer import privileges as grants
from pgq_client.installer.files import statement
from pgq_client.installer.script import render_dry_run
from pgq_client.models import HealthRow
from pgq_client.queue import Queue

from .base import command, fail, settings
from .errors import _role_of
from .output import columns, emit
from .parsing import dry_run

level_for = grants.narrowest_level


@contextmanager
def _runner_messages() -> Iterator[None]:
    """The runner's warnings (who else controls the schema) and the grants that carry roles'
    levels over to new functions, one line each on stderr."""
    with contextlib.ExitStack() as undo:
        for logger, prefix, least in ((runner.logger, "jobq: warning: ", logging.WARNING),
                                      (runner.grant_logger, "jobq: ", logging.INFO)):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter(prefix + "%(message)s"))
            handler.setLevel(least)
            logger.addHandler(handler)
            undo.callback(logger.removeHandler, handler)
        undo.callback(runner.grant_logger.setLevel, runner.grant_logger.level)
        runner.grant_logger.setLevel(logging.INFO)
        yield


def _schema() -> str:
    return settings().given_schema or "public"


@command(
    json=True,
    schema_default="public",
    examples="jobq migrate --dsn postgresql://app@db/app\njobq migrate --dry-run > jobq.sql",
)
@dry_run("SQL it would run (for psql)")
@click.option(
    "--force",
    is_flag=True,
    help="Migrate even a schema that another role controls (objects jobq's owner does not "
    "own, or other roles that may CREATE there); it refuses one otherwise.",
)
def migrate(dry_run: bool, force: bool) -> None:
    """Install or upgrade jobq in the database (idempotent)."""
    s, schema = settings(), _schema()
    if dry_run:
        click.echo(render_dry_run(s.configured_dsn(), schema), nl=False)
        return
    try:
        with _runner_messages():
            applied = runner.migrate(s.dsn(), schema=schema, force=force)
    except (psycopg.errors.InsufficientPrivilege, PermissionDenied) as exc:
        fail(_who_migrates(s.dsn(), schema, str(exc).strip()))
    if not applied and not s.as_json:
        click.echo(f'jobq: schema "{schema}" is up to date, nothing to apply', err=True)
    emit({"schema": schema, "applied": applied}, "\n".join(f"applied {n}" for n in applied))


def _who_migrates(dsn: str, schema: str, denied: str) -> str:
    """What to do when migrate is denied: only the role that owns an installation can upgrade
    it (no ``jobq grant`` level can), and a new one needs CREATE where its schema goes."""
    role = _role_of(dsn)
    with grants.connect(dsn) as conn:
        owner = conn.execute(statement("migrations_owner", schema)).fetchone()
    if owner is not None:
        return (
            f"{denied}; jobq in schema {schema!r} belongs to the role {owner[0]!r}: run `jobq "
            f"migrate` as that role (grants to {role!r} cannot let it upgrade), or install a "
            "jobq of your own with `jobq migrate --schema NAME`"
        )
    own = "jobq" if schema == "public" else schema
    return (
        f"{denied}; installing jobq into schema {schema!r} needs a role that may create it or "
        "create in it: run `jobq migrate` as the database's owner, or have that owner run "
        f"`CREATE SCHEMA {own} AUTHORIZATION {role}`, then `jobq migrate --schema {own}`"
    )


def _privileges(
    dry_run: bool,
    plan: Callable[[str, psycopg.Connection[Any] | None], list[Any]],
    run: Callable[[str, str], list[str]],
    done: str,
) -> None:
    """Run a grant or revoke (``done`` says what it did); under --dry-run print its statements
    instead, read from the database when one is configured, else as the files declare them (a
    DBA may review them before any database exists)."""
    schema = _schema()
    if not dry_run:
        ran = run(settings().dsn(), schema)
        click.echo(f'jobq: {done} in schema "{schema}" ({len(ran)} statements)', err=True)
        return
    dsn = settings().configured_dsn()
    with grants.connect(dsn) if dsn else contextlib.nullcontext() as conn:
        click.echo(grants.render(plan(schema, conn), conn), nl=False)


@command(
    schema_default="public",
    examples="jobq grant app_producer --as producer\njobq grant app_admin --as admin --dry-run",
)
@click.argument("role")
@click.option(
    "--as", "level", type=click.Choice(levels.LEVELS), required=True, help=levels.help_text()
)
@dry_run("GRANT statements")
def grant(role: str, level: levels.Level, dry_run: bool) -> None:
    """Grant an existing ROLE what a producer, worker, monitor or admin of jobq needs."""
    if role.strip().lower() == "public":
        message = "PUBLIC is every role: grant a level to one role"
        raise click.BadParameter(message, param_hint="ROLE")
    _privileges(
        dry_run,
        lambda schema, conn: grants.plan(role, level, schema, conn),
        lambda dsn, schema: grants.grant(dsn, role, level, schema),
        f'granted {level} to "{role}"',
    )


@command(schema_default="public")
@click.argument("role")
@dry_run("REVOKE statements")
def revoke(role: str, dry_run: bool) -> None:
    """Take back from ROLE everything jobq grants in the schema, whatever the level."""
    _privileges(
        dry_run,
        lambda schema, conn: grants.revoke_plan(role, schema, conn),
        lambda dsn, schema: grants.revoke(dsn, role, schema),
        f'revoked everything jobq grants from "{role}"',
    )


def _warning(check: str, detail: str) -> HealthRow:
    return HealthRow(check, None, "warning", 1.0, detail)


@command(json=True, examples="jobq doctor\njobq doctor --json")
def doctor() -> int:
    """Health checks, who else controls the schema, drift from the files (exit 1: a warning)."""
    s = settings()
    dsn = s.dsn()
    # The catalogue first, on a connection of its own (search_path = pg_catalog, pg_temp): who
    # else controls the schema is read without calling a jobq function, one of which could be
    # what another role planted (or be made ambiguous by it).
    with grants.connect(dsn) as conn:
        where = s.given_schema or _sql.schema_of_dsn(dsn)
        control = checks.control_findings(conn, where)
        drift = checks.function_drift(conn, where)
    rows = [_warning("schema_control", finding) for finding in control]
    try:
        with Queue(dsn, schema=where) as q:
            rows = q.health() + rows
    except JobqError as exc:
        if not control:
            raise
        rows.append(_warning("health", f"jobq_health failed: {exc}"))
    same = f"the functions in schema {where} are those of this jobq's files"
    drifted = [_warning("function_definition", f"{name} {what}") for name, what in drift]
    rows += drifted or [HealthRow("function_definition", None, "ok", 0.0, same)]
    ok = all(r.severity == "ok" for r in rows)
    names = ["check", "queue", "severity", "detail"]
    emit({"ok": ok, "checks": rows}, columns(rows, names, check=lambda r: r.check_name))
    return 0 if ok else 1


COMMANDS = [migrate, grant, revoke, doctor]
