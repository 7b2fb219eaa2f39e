"""The ``jobq`` command line (also ``python -m pgq_client``).

The database comes from ``--dsn``, else ``JOBQ_DSN``, else ``DATABASE_URL``, else a local
embedded PostgreSQL that the CLI starts itself; which one is used is said on stderr (except for
an explicit ``--dsn``). A user error prints one line ``jobq: error: ...`` on stderr and exits
with 2 (usage) or 1 (anything else), never with a traceback.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
import psycopg
from psycopg.conninfo import conninfo_to_dict

from .errors import JobqError, from_psycopg
from .queue import DSN_SOURCES, Queue, check_aware, resolve_dsn

__all__ = ["cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])


def _describe(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(unparsable DSN)"
    shown = [f"{k}={params[k]}" for k in ("host", "port", "dbname", "user") if params.get(k)]
    return " ".join(shown) or "(libpq defaults)"


class _Settings:
    """What the group options say; the DSN is resolved on first use."""

    def __init__(self, dsn: str | None) -> None:
        self.given_dsn = dsn
        self._dsn: str | None = None

    def configured_dsn(self) -> str | None:
        """--dsn or the environment, without starting the embedded server."""
        if self.given_dsn:
            return self.given_dsn
        for name in DSN_SOURCES:
            if os.environ.get(name):
                return os.environ[name]
        return None

    def dsn(self) -> str:
        if self._dsn is None:
            if self.given_dsn:
                self._dsn = self.given_dsn
            else:
                self._dsn, source = resolve_dsn(None)
                if source == "embedded":
                    click.echo(
                        f"jobq: using embedded PostgreSQL at {_describe(self._dsn)}", err=True
                    )
                else:
                    click.echo(f"jobq: using {source} ({_describe(self._dsn)})", err=True)
        return self._dsn

    def queue(self, schema: str | None) -> Queue:
        return Queue(self.dsn(), schema=schema)


def _settings(ctx: click.Context) -> _Settings:
    obj = ctx.find_object(_Settings)
    if obj is None:  # pragma: no cover - the group always sets it
        obj = _Settings(None)
    return obj


def _fail(message: str) -> NoReturn:
    raise click.ClickException(message)


def schema_option(default: str | None) -> Callable[[F], F]:
    help_text = (
        f"Schema jobq is installed in (default: {default})."
        if default
        else "Schema jobq is installed in (default: the connection's search_path)."
    )
    return click.option("--schema", default=default, metavar="NAME", help=help_text)


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[("" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def _when(value: datetime | None) -> str:
    return "" if value is None else value.isoformat(sep=" ", timespec="seconds")


class JobqGroup(click.Group):
    """A click group whose errors are one line on stderr: ``jobq: error: ...``."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        code = 0
        try:
            rv = super().main(
                args=args,
                prog_name=prog_name or "jobq",
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
            code = rv if isinstance(rv, int) else 0
        except click.exceptions.Exit as exc:
            code = exc.exit_code
        except click.exceptions.Abort:
            click.echo("jobq: aborted", err=True)
            code = 130
        except click.UsageError as exc:
            hint = ""
            if exc.ctx is not None and exc.cmd is not None:
                hint = f" (see `{exc.ctx.command_path} --help`)"
            click.echo(f"jobq: error: {exc.format_message()}{hint}", err=True)
            code = 2
        except click.ClickException as exc:
            click.echo(f"jobq: error: {exc.format_message()}", err=True)
            code = exc.exit_code
        except JobqError as exc:
            click.echo(f"jobq: error: {exc}", err=True)
            code = 1
        except psycopg.Error as exc:
            click.echo(f"jobq: error: {from_psycopg(exc)}", err=True)
            code = 1
        except KeyboardInterrupt:
            click.echo("jobq: interrupted", err=True)
            code = 130
        if standalone_mode:
            sys.exit(code)
        return code


@click.group(cls=JobqGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--dsn",
    metavar="URL",
    help="PostgreSQL connection string (default: $JOBQ_DSN, else $DATABASE_URL, else an "
    "embedded PostgreSQL started on demand).",
)
@click.pass_context
def cli(ctx: click.Context, dsn: str | None) -> None:
    """jobq: a PostgreSQL job queue whose logic lives in SQL."""
    ctx.obj = _Settings(dsn)


# -- installation ------------------------------------------------------------------------------


@cli.command()
@schema_option("public")
@click.option("--dry-run", is_flag=True, help="Print the SQL it would run instead (for psql).")
@click.pass_context
def migrate(ctx: click.Context, schema: str, dry_run: bool) -> None:
    """Install or upgrade jobq in the database (idempotent)."""
    from . import migrate as runner

    settings = _settings(ctx)
    if dry_run:
        click.echo(runner.render_dry_run(settings.configured_dsn(), schema), nl=False)
        return
    # the runner's warnings (who else controls the schema) as one line each on stderr
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("jobq: warning: %(message)s"))
    handler.setLevel(logging.WARNING)
    runner.logger.addHandler(handler)
    try:
        applied = runner.migrate(settings.dsn(), schema=schema)
    finally:
        runner.logger.removeHandler(handler)
    if not applied:
        click.echo(f'jobq: schema "{schema}" is up to date, nothing to apply', err=True)
    for name in applied:
        click.echo(f"applied {name}")


@cli.command()
@click.argument("role")
@click.option(
    "--as",
    "level",
    type=click.Choice(["producer", "worker", "monitor", "admin"]),
    required=True,
    help="producer: enqueue; worker: + claim and acknowledge; monitor: stats and health, "
    "read-only; admin: every public function and SELECT on the tables.",
)
@schema_option("public")
@click.option("--dry-run", is_flag=True, help="Print the GRANT statements instead.")
@click.pass_context
def grant(ctx: click.Context, role: str, level: str, schema: str, dry_run: bool) -> None:
    """Grant an existing ROLE what a producer, worker, monitor or admin of jobq needs."""
    from . import grants

    lvl = next(x for x in grants.LEVELS if x == level)
    if role.strip().lower() == "public":
        raise click.BadParameter(
            "PUBLIC is every role: grant a level to one role", param_hint="ROLE"
        )
    settings = _settings(ctx)
    if dry_run:
        dsn = settings.configured_dsn()
        if dsn is None:
            click.echo(grants.render(grants.grant_statements(role, lvl, schema)), nl=False)
            return
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                statements = grants.plan(role, lvl, schema, conn)
                click.echo(grants.render(statements, conn), nl=False)
        except psycopg.Error as exc:
            raise from_psycopg(exc) from exc
        return
    done = grants.grant(settings.dsn(), role, lvl, schema)
    click.echo(
        f'jobq: granted {level} to "{role}" in schema "{schema}" ({len(done)} statements)', err=True
    )


@cli.command()
@click.argument("role")
@schema_option("public")
@click.option("--dry-run", is_flag=True, help="Print the REVOKE statements instead.")
@click.pass_context
def revoke(ctx: click.Context, role: str, schema: str, dry_run: bool) -> None:
    """Take back from ROLE everything jobq grants in the schema (any level).

    EXECUTE on every jobq function and every privilege on the jobq tables; USAGE on the schema
    too when nothing but jobq lives in it. PUBLIC is accepted: it takes back what an older jobq
    granted to PUBLIC.
    """
    from . import grants

    settings = _settings(ctx)
    if dry_run:
        dsn = settings.configured_dsn()
        if dsn is None:
            click.echo(grants.render(grants.revoke_statements(role, schema)), nl=False)
            return
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                statements = grants.revoke_plan(role, schema, conn)
                click.echo(grants.render(statements, conn), nl=False)
        except psycopg.Error as exc:
            raise from_psycopg(exc) from exc
        return
    done = grants.revoke(settings.dsn(), role, schema)
    click.echo(
        f'jobq: revoked everything jobq grants from "{role}" in schema "{schema}" '
        f"({len(done)} statements)",
        err=True,
    )


# -- producing ---------------------------------------------------------------------------------


def _parse_payload(value: str | None) -> Any:
    if value is None:
        return {}
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="PAYLOAD_JSON") from None
    if not isinstance(data, dict):
        raise click.BadParameter(
            f"must be a JSON object, got {value!r} (e.g. '{{\"value\": {value}}}')",
            param_hint="PAYLOAD_JSON",
        )
    return data


def _parse_run_at(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not an ISO 8601 time (e.g. 2030-01-31T09:00:00+01:00)",
            param_hint="--run-at",
        ) from None
    try:
        check_aware(when, "--run-at")
    except ValueError:
        raise click.BadParameter(
            f"{value!r} has no UTC offset; give one (e.g. {value}+00:00 or {value}Z)",
            param_hint="--run-at",
        ) from None
    return when


@cli.command()
@click.argument("job_type", metavar="TYPE")
@click.argument("payload", metavar="[PAYLOAD_JSON]", required=False)
@click.option("--idempotency-key", metavar="K", help="Dedupe key: the same key, the same job.")
@click.option("--run-at", metavar="T", help="Not before this time: ISO 8601 with an offset.")
@click.option("--priority", type=int, default=0, show_default=True, help="Higher runs first.")
@click.option("--max-attempts", type=int, default=5, show_default=True)
@click.option("--queue", default="default", show_default=True)
@schema_option(None)
@click.pass_context
def enqueue(
    ctx: click.Context,
    job_type: str,
    payload: str | None,
    idempotency_key: str | None,
    run_at: str | None,
    priority: int,
    max_attempts: int,
    queue: str,
    schema: str | None,
) -> None:
    """Add a job of TYPE and print its id."""
    data = _parse_payload(payload)
    when = _parse_run_at(run_at)
    with _settings(ctx).queue(schema) as q:
        job_id = q.enqueue(
            job_type,
            data,
            idempotency_key=idempotency_key,
            run_at=when,
            priority=priority,
            max_attempts=max_attempts,
            queue=queue,
        )
    click.echo(str(job_id))


# -- operating ---------------------------------------------------------------------------------


@cli.command()
@schema_option(None)
@click.pass_context
def stats(ctx: click.Context, schema: str | None) -> None:
    """Job counts per queue, type and status."""
    with _settings(ctx).queue(schema) as q:
        rows = q.stats()
    if not rows:
        click.echo("no jobs")
        return
    click.echo(
        _table(
            ["queue", "job_type", "status", "jobs", "oldest_available_at"],
            [(r.queue, r.job_type, r.status, r.jobs, _when(r.oldest_available_at)) for r in rows],
        )
    )


@cli.command("doctor")
@schema_option(None)
@click.pass_context
def doctor(ctx: click.Context, schema: str | None) -> None:
    """Health checks (jobq_health) and an audit of the installation; exits 1 when one of them
    warns, for monitoring.

    Beyond jobq_health's checks (which include who else owns or may CREATE in the schema):
    whether the functions installed are exactly those of this jobq's files (a body or a
    setting changed by hand, a CREATE OR REPLACE without SECURITY DEFINER, a half-applied
    upgrade, a jobq function no file defines).
    """
    from . import _sql
    from . import migrate as runner
    from .models import HealthRow

    settings = _settings(ctx)
    with settings.queue(schema) as q:
        rows = q.health()
    try:
        with psycopg.connect(settings.dsn(), autocommit=True) as conn:
            row = conn.execute(_sql.JOBQ_SCHEMA, {"schema": schema}).fetchone()
            where = str(row[0]) if row and row[0] else (schema or "public")
            drift = runner.function_drift(conn, where)
    except psycopg.Error as exc:
        raise from_psycopg(exc) from exc
    rows += [
        HealthRow("function_definition", None, "warning", 1.0, f"{name} {what}")
        for name, what in drift
    ] or [
        HealthRow("function_definition", None, "ok", 0.0,
                  f"the functions in schema {where} are those of this jobq's files")
    ]
    click.echo(
        _table(
            ["check", "queue", "severity", "detail"],
            [(r.check_name, r.queue, r.severity, r.detail) for r in rows],
        )
    )
    if any(r.severity != "ok" for r in rows):
        ctx.exit(1)


cli.add_command(doctor, "health")  # the same command under the SQL function's name


@cli.group("dead-letter")
def dead_letter() -> None:
    """Jobs that used all their attempts (dead_letter) or failed permanently (failed)."""


@dead_letter.command("list")
@click.option("--job-type", metavar="T")
@click.option("--queue", metavar="Q")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@schema_option(None)
@click.pass_context
def dead_letter_list(
    ctx: click.Context, job_type: str | None, queue: str | None, limit: int, schema: str | None
) -> None:
    """List dead_letter and failed jobs, most recent first."""
    with _settings(ctx).queue(schema) as q:
        jobs = q.dead_letters(job_type=job_type, queue=queue, limit=limit)
    if not jobs:
        click.echo("no dead-letter or failed jobs")
        return
    rows = []
    for job in jobs:
        last = (job.last_error or "").strip().splitlines()
        error = last[-1] if last else ""
        rows.append(
            (
                job.id,
                job.job_type,
                job.queue,
                job.status,
                f"{job.attempts}/{job.max_attempts}",
                _when(job.finished_at),
                error[:80],
            )
        )
    click.echo(
        _table(["id", "job_type", "queue", "status", "attempts", "finished_at", "last_error"], rows)
    )


@dead_letter.command("requeue")
@click.argument("job_id", metavar="[ID]", required=False)
@click.option("--all", "all_", is_flag=True, help="Requeue every dead_letter and failed job.")
@click.option("--job-type", metavar="T", help="With --all: only jobs of this type.")
@click.option("--queue", metavar="Q", help="With --all: only jobs of this queue.")
@schema_option(None)
@click.pass_context
def dead_letter_requeue(
    ctx: click.Context,
    job_id: str | None,
    all_: bool,
    job_type: str | None,
    queue: str | None,
    schema: str | None,
) -> None:
    """Make a dead_letter or failed job (ID, or --all) pending again."""
    if (job_id is None) == (not all_):
        raise click.UsageError("give either a job ID or --all")
    if job_id is not None and (job_type or queue):
        raise click.UsageError("--job-type and --queue go with --all, not with an ID")
    if job_id is not None:
        try:
            parsed = uuid.UUID(job_id)
        except ValueError:
            raise click.BadParameter(f"{job_id!r} is not a UUID", param_hint="ID") from None
        with _settings(ctx).queue(schema) as q:
            if not q.requeue_dead_letter(parsed):
                _fail(f"job {parsed} is not dead_letter or failed (or unknown); nothing changed")
        click.echo(f"requeued {parsed}")
        return
    with _settings(ctx).queue(schema) as q:
        count = q.requeue_dead_letters(job_type=job_type, queue=queue)
    click.echo(f"requeued {count} jobs")


@cli.command()
@click.option(
    "--older-than",
    type=click.FloatRange(min=0),
    default=7 * 24 * 3600,
    show_default="7 days",
    metavar="SECONDS",
    help="Only jobs finished longer ago than this.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(["succeeded", "failed", "dead_letter"]),
    help="Finished status to prune (repeatable; default: succeeded).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="Jobs deleted per transaction (the oldest first), until none is left.",
)
@schema_option(None)
@click.pass_context
def prune(
    ctx: click.Context,
    older_than: float,
    statuses: tuple[str, ...],
    batch_size: int,
    schema: str | None,
) -> None:
    """Delete finished jobs."""
    with _settings(ctx).queue(schema) as q:
        count = q.prune(
            timedelta(seconds=older_than), list(statuses) or ["succeeded"], batch_size=batch_size
        )
    click.echo(f"pruned {count} jobs")


@cli.command()
@click.option("--max-payload-bytes", type=click.IntRange(min=1), help="Largest payload (jsonb).")
@schema_option(None)
@click.pass_context
def configure(ctx: click.Context, max_payload_bytes: int | None, schema: str | None) -> None:
    """Show (and change) this installation's settings (admin)."""
    with _settings(ctx).queue(schema) as q:
        settings = q.configure(max_payload_bytes=max_payload_bytes)
    click.echo(json.dumps(settings, indent=2, sort_keys=True))


# -- working -----------------------------------------------------------------------------------


def _load_handlers(spec: str) -> dict[str, Callable[..., object]]:
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise click.BadParameter(
            f"{spec!r}: expected MODULE:HANDLERS, e.g. myapp.jobs:HANDLERS",
            param_hint="MODULE:HANDLERS",
        )
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        _fail(f"cannot import handler module {module_name!r}: {exc}")
    except Exception as exc:
        _fail(f"importing handler module {module_name!r} failed: {type(exc).__name__}: {exc}")
    try:
        handlers = getattr(module, attribute)
    except AttributeError:
        _fail(f"module {module_name!r} has no attribute {attribute!r}")
    if not isinstance(handlers, Mapping) or not handlers:
        kind = type(handlers).__name__
        _fail(f"{spec} must be a non-empty dict of job type -> handler, got {kind}")
    bad = [k for k, v in handlers.items() if not isinstance(k, str) or not callable(v)]
    if bad:
        _fail(f"{spec}: these entries are not job type -> callable: {bad!r}")
    return dict(handlers)


@cli.command()
@click.argument("handlers_spec", metavar="MODULE:HANDLERS")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True)
@click.option(
    "--queue", "queues", multiple=True, metavar="Q", help="Serve this queue only (repeatable)."
)
@click.option("--burst", is_flag=True, help="Exit when no job is available now.")
@click.option(
    "--prefetch",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help=(
        "Jobs claimed ahead of a free handler thread [default: sized to how fast jobs finish,"
        " at most 16 x concurrency; 0 for long jobs]."
    ),
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Most jobs per claim [default: the free slots, concurrency + prefetch at most].",
)
@click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=300.0,
    show_default=True,
    metavar="SECONDS",
    help="Claims not renewed for this long are taken over.",
)
@click.option(
    "--shutdown-grace",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="On SIGTERM/SIGINT, how long running jobs may take to finish.",
)
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    metavar="SECONDS",
)
@click.option("--worker-id", metavar="ID", help="Default: host:pid:random.")
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="INFO",
    show_default=True,
)
@schema_option(None)
@click.pass_context
def worker(
    ctx: click.Context,
    handlers_spec: str,
    concurrency: int,
    queues: tuple[str, ...],
    burst: bool,
    prefetch: int | None,
    batch_size: int | None,
    lock_timeout: float,
    shutdown_grace: float,
    poll_interval: float,
    worker_id: str | None,
    log_level: str,
    schema: str | None,
) -> None:
    """Run the handlers of MODULE:HANDLERS (a dict job type -> function) until SIGTERM."""
    from .worker import Worker

    handlers = _load_handlers(handlers_spec)
    logging.basicConfig(
        level=getattr(logging, log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    w = Worker(
        _settings(ctx).dsn(),
        handlers,
        concurrency=concurrency,
        queues=list(queues) or None,
        prefetch=prefetch,
        batch_size=batch_size,
        lock_timeout=timedelta(seconds=lock_timeout),
        shutdown_grace=shutdown_grace,
        poll_interval=poll_interval,
        worker_id=worker_id,
        schema=schema,
    )
    w.run(burst=burst)
    if w.aborted:  # a second Ctrl-C or SIGTERM cut the shutdown short
        ctx.exit(130)


# -- the embedded server ---------------------------------------------------------------------

_HOME_HELP = "Where its data lives (default: $JOBQ_HOME, else a per-user directory)."


def _home_option(f: F) -> F:
    path = click.Path(file_okay=False, path_type=Path)
    return click.option("--home", type=path, metavar="DIR", help=_HOME_HELP)(f)


@cli.group("embedded")
@_home_option
@click.pass_context
def embedded_group(ctx: click.Context, home: Path | None) -> None:
    """The PostgreSQL that jobq starts itself when no database is given."""
    ctx.meta["jobq.embedded.home"] = home


def _home(ctx: click.Context, home: Path | None) -> Path | None:
    return home if home is not None else ctx.meta.get("jobq.embedded.home")


@embedded_group.command("status")
@_home_option
@click.pass_context
def embedded_status(ctx: click.Context, home: Path | None) -> None:
    """Say whether it exists and runs; starts nothing.

    Prints its connection string too when it runs.
    """
    from . import embedded

    home = _home(ctx, home)
    st = embedded.embedded_status(home)
    state = "running" if st.running else ("stopped" if st.initialized else "not created")
    pid = f" (pid {st.pid})" if st.pid else ""
    click.echo(f"{embedded.describe_embedded(home)}: {state}{pid}")
    if st.running:
        click.echo(st.dsn)


@embedded_group.command("dsn")
@_home_option
@click.pass_context
def embedded_dsn(ctx: click.Context, home: Path | None) -> None:
    """Print its connection string, starting it if needed."""
    from . import embedded

    click.echo(embedded.get_embedded_dsn(_home(ctx, home)))


@embedded_group.command(
    "psql", context_settings={"ignore_unknown_options": True, "help_option_names": ["--help"]}
)
@_home_option
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED, metavar="[PSQL ARGS]...")
@click.pass_context
def embedded_psql(ctx: click.Context, home: Path | None, psql_args: tuple[str, ...]) -> None:
    """Run psql on its jobq database, starting it if needed.

    Arguments after the options are psql's: `jobq embedded psql -c 'TABLE jobq_jobs'`.
    """
    from . import embedded

    dsn = embedded.get_embedded_dsn(_home(ctx, home))
    psql = embedded.psql_path()
    if psql is None:
        _fail(f"psql not found; connect with: {dsn}")
    sys.stdout.flush()
    os.execv(psql, [psql, "--dbname", dsn, *psql_args])


@embedded_group.command("stop")
@_home_option
@click.pass_context
def embedded_stop(ctx: click.Context, home: Path | None) -> None:
    """Stop the server; the data stays.

    The next jobq command that needs it starts it again.
    """
    from . import embedded

    home = _home(ctx, home)
    stopped = embedded.stop_embedded(home)
    click.echo(("stopped " if stopped else "not running: ") + embedded.describe_embedded(home))


@embedded_group.command("reset")
@_home_option
@click.option("--yes", is_flag=True, help="Confirm that every job in it is to be deleted.")
@click.pass_context
def embedded_reset(ctx: click.Context, home: Path | None, yes: bool) -> None:
    """Stop the server and DELETE its data, every job in it."""
    from . import embedded

    home = _home(ctx, home)
    pgdata = embedded.embedded_status(home).pgdata
    if not yes:
        raise click.UsageError(f"this deletes {pgdata} and every job in it; add --yes to confirm")
    if embedded.reset_embedded(home):
        click.echo(f"deleted {pgdata}")
    else:
        click.echo(f"nothing to delete: {pgdata} does not exist")


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``jobq`` script."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="jobq")
