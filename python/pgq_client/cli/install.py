"""Installing jobq and checking the installation: migrate, grant, revoke, doctor.

Every use of the installer (``pgq_client.installer``) is in this module.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click
import psycopg

from .. import _sql
from ..errors import JobqError, from_psycopg
from ..installer import drift as checks
from ..installer import levels, runner
from ..installer import privileges as grants
from ..installer.script import render_dry_run
from ..models import HealthRow
from ..queue import Queue
from .base import Settings, command, settings
from .output import echo_json, table

LEVELS = levels.LEVELS
level_for = grants.narrowest_level


@contextmanager
def _catalogue(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection for reading the catalogue, raising the typed jobq errors."""
    try:
        with psycopg.connect(dsn, autocommit=True, **_sql.connect_kwargs(dsn)) as conn:
            yield conn
    except psycopg.Error as exc:
        raise from_psycopg(exc) from exc


def _print_plan(
    s: Settings,
    offline: Callable[[], list[Any]],
    online: Callable[[psycopg.Connection[Any]], list[Any]],
) -> None:
    """The statements of a dry run: read from the database when one is configured, else as the
    files declare them (a DBA may review them before any database exists)."""
    dsn = s.configured_dsn()
    if dsn is None:
        click.echo(grants.render(offline()), nl=False)
        return
    with _catalogue(dsn) as conn:
        click.echo(grants.render(online(conn), conn), nl=False)


@contextmanager
def _runner_messages() -> Iterator[None]:
    """The runner's warnings (who else controls the schema) and the grants that carry roles'
    levels over to new functions, one line each on stderr."""
    warned = logging.StreamHandler(sys.stderr)
    warned.setFormatter(logging.Formatter("jobq: warning: %(message)s"))
    warned.setLevel(logging.WARNING)
    granted = logging.StreamHandler(sys.stderr)
    granted.setFormatter(logging.Formatter("jobq: %(message)s"))
    level = runner.grant_logger.level
    runner.grant_logger.setLevel(logging.INFO)
    runner.grant_logger.addHandler(granted)
    runner.logger.addHandler(warned)
    try:
        yield
    finally:
        runner.logger.removeHandler(warned)
        runner.grant_logger.removeHandler(granted)
        runner.grant_logger.setLevel(level)


@command(
    json=True,
    schema_default="public",
    examples="""
        jobq migrate --dsn postgresql://app@db/app
        jobq migrate --dsn postgresql://app@db/app --schema tenant_a
        jobq migrate --dry-run > jobq.sql
    """,
)
@click.option("--dry-run", is_flag=True, help="Print the SQL it would run instead (for psql).")
@click.option(
    "--force",
    is_flag=True,
    help="Migrate even a schema that another role controls (objects jobq's owner does not "
    "own, or other roles that may CREATE there); it refuses one otherwise.",
)
def migrate(ctx: click.Context, dry_run: bool, force: bool, as_json: bool) -> None:
    """Install or upgrade jobq in the database (idempotent)."""
    s = settings(ctx)
    schema = s.schema("public") or "public"
    if dry_run:
        click.echo(render_dry_run(s.configured_dsn(), schema), nl=False)
        return
    with _runner_messages():
        applied = runner.migrate(s.dsn(), schema=schema, force=force)
    if as_json:
        echo_json({"schema": schema, "applied": applied})
        return
    if not applied:
        click.echo(f'jobq: schema "{schema}" is up to date, nothing to apply', err=True)
    for name in applied:
        click.echo(f"applied {name}")


@command(
    schema_default="public",
    examples="""
        jobq grant app_producer --as producer
        jobq grant app_worker --as worker --schema tenant_a
        jobq grant app_admin --as admin --dry-run
    """,
)
@click.argument("role")
@click.option(
    "--as",
    "level",
    type=click.Choice(LEVELS),
    required=True,
    help=levels.help_text(),
)
@click.option("--dry-run", is_flag=True, help="Print the GRANT statements instead.")
def grant(ctx: click.Context, role: str, level: levels.Level, dry_run: bool) -> None:
    """Grant an existing ROLE what a producer, worker, monitor or admin of jobq needs."""
    if role.strip().lower() == "public":
        raise click.BadParameter(
            "PUBLIC is every role: grant a level to one role", param_hint="ROLE"
        )
    s = settings(ctx)
    schema = s.schema("public") or "public"
    if dry_run:
        _print_plan(
            s,
            lambda: grants.grant_statements(role, level, schema),
            lambda conn: grants.plan(role, level, schema, conn),
        )
        return
    done = grants.grant(s.dsn(), role, level, schema)
    click.echo(
        f'jobq: granted {level} to "{role}" in schema "{schema}" ({len(done)} statements)', err=True
    )


@command(
    schema_default="public",
    examples="""
        jobq revoke app_worker
        jobq revoke app_worker --schema tenant_a --dry-run
    """,
)
@click.argument("role")
@click.option("--dry-run", is_flag=True, help="Print the REVOKE statements instead.")
def revoke(ctx: click.Context, role: str, dry_run: bool) -> None:
    """Take back from ROLE everything jobq grants in the schema (any level).

    EXECUTE on every jobq function and every privilege on the jobq tables; USAGE on the schema
    too when nothing but jobq lives in it. PUBLIC is accepted: it takes back what an older jobq
    granted to PUBLIC.
    """
    s = settings(ctx)
    schema = s.schema("public") or "public"
    if dry_run:
        _print_plan(
            s,
            lambda: grants.revoke_statements(role, schema),
            lambda conn: grants.revoke_plan(role, schema, conn),
        )
        return
    done = grants.revoke(s.dsn(), role, schema)
    click.echo(
        f'jobq: revoked everything jobq grants from "{role}" in schema "{schema}" '
        f"({len(done)} statements)",
        err=True,
    )


def _warning(check: str, detail: str) -> HealthRow:
    return HealthRow(check, None, "warning", 1.0, detail)


@command(json=True, examples="jobq doctor\njobq doctor --json")
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Health checks (jobq_health) and an audit of the installation; exits 1 when one of them
    warns, for monitoring.

    Beyond jobq_health's checks: who else controls the schema (objects in it that jobq's owner
    does not own, roles other than it that may CREATE there), and whether the functions
    installed are exactly those of this jobq's files, compared by signature (a body or a
    setting changed by hand, a CREATE OR REPLACE without SECURITY DEFINER, a half-applied
    upgrade, a jobq function or overload no file defines).
    """
    s = settings(ctx)
    dsn = s.dsn()
    # The catalogue first, on a connection of its own (search_path = pg_catalog, pg_temp): who
    # else controls the schema is read without calling a jobq function, one of which could be
    # what another role planted (or be made ambiguous by it).
    with _catalogue(dsn) as conn:
        where = s.schema() or _sql.schema_of_dsn(dsn)
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
    rows += [_warning("function_definition", f"{name} {what}") for name, what in drift] or [
        HealthRow(
            "function_definition",
            None,
            "ok",
            0.0,
            f"the functions in schema {where} are those of this jobq's files",
        )
    ]
    ok = all(r.severity == "ok" for r in rows)
    if as_json:
        echo_json({"ok": ok, "checks": rows})
    else:
        cells = [(r.check_name, r.queue, r.severity, r.detail) for r in rows]
        click.echo(table(["check", "queue", "severity", "detail"], cells))
    if not ok:
        ctx.exit(1)


COMMANDS = [migrate, grant, revoke, doctor]
