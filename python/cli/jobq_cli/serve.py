"""Long-running processes: the worker, the dashboard, and the embedded server they may use."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click
from psycopg.conninfo import conninfo_to_dict

from pgq_client import _conn, embedded

from . import parsing as opt
from .base import command, fail, kept, settings

WEB_AUTH_ENV = "JOBQ_WEB_AUTH"
DASHBOARD_MISSING = "the dashboard is the jobq-web package: pip install jobq-web"
LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"]


def _load_handlers(spec: str) -> dict[str, Callable[..., object]]:
    """The handlers that MODULE:HANDLERS names, the module imported from the current directory
    too (where a project's code is when its worker is started by hand)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        message = f"{spec!r}: expected MODULE:HANDLERS, e.g. myapp.jobs:HANDLERS"
        raise click.BadParameter(message, param_hint="MODULE:HANDLERS")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        fail(f"cannot import handler module {module_name!r}: {exc}")
    except Exception as exc:
        fail(f"importing handler module {module_name!r} failed: {type(exc).__name__}: {exc}")
    try:
        handlers = getattr(module, attribute)
    except AttributeError:
        fail(f"module {module_name!r} has no attribute {attribute!r}")
    if not isinstance(handlers, Mapping) or not handlers:
        kind = type(handlers).__name__
        fail(f"{spec} must be a non-empty dict of job type -> handler, got {kind}")
    bad = [k for k, v in handlers.items() if not isinstance(k, str) or not callable(v)]
    if bad:
        fail(f"{spec}: these entries are not job type -> callable: {bad!r}")
    return dict(handlers)


@command(examples="jobq worker examples.handlers:HANDLERS --concurrency 8")
@click.argument("handlers_spec", metavar="MODULE:HANDLERS")
@click.option("--concurrency", type=opt.POSITIVE, default=8)
@click.option(
    "--queue", "queues", multiple=True, metavar="Q", help="Serve this queue only (repeatable)."
)
@click.option("--burst", is_flag=True, help="Exit when no job is available now.")
@click.option(
    "--prefetch",
    type=click.IntRange(min=0),
    metavar="N",
    help="Jobs claimed ahead of a free thread [default: sized to the job rate; 0: long jobs].",
)
@click.option("--batch-size", type=opt.POSITIVE, metavar="N", help="Most jobs per claim.")
@opt.seconds("--lock-timeout", 300.0, "Claims not renewed for this long are taken over.")
@opt.seconds("--shutdown-grace", 30.0, "On SIGTERM/SIGINT, how long running jobs may take.",
             click.FloatRange(min=0))
@opt.seconds("--poll-interval", 1.0)
@click.option("--worker-id", metavar="ID", help="Default: host:pid:random.")
@click.option("--log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False), default="INFO")
def worker(
    handlers_spec: str, queues: tuple[str, ...], burst: bool, log_level: str, **options: Any
) -> int:
    """Run the handlers of MODULE:HANDLERS (a dict job type -> function) until SIGTERM."""
    from pgq_client.worker import Worker

    handlers = _load_handlers(handlers_spec)
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    s = settings()
    w = Worker(s.dsn(), handlers, queues=list(queues) or None, schema=s.given_schema, **options)
    w.run(burst=burst)
    return 130 if w.aborted else 0  # aborted: a second Ctrl-C or SIGTERM cut the shutdown short


@command(None, "web")
@click.option(
    "--bind",
    metavar="HOST:PORT",
    default="127.0.0.1:8080",
    help="Where to listen; any host but localhost needs a credential.",
)
@click.option(
    "--auth",
    metavar="USER:PASSWORD",
    help=f"HTTP Basic credential (default: ${WEB_AUTH_ENV}, which ps does not show).",
)
@click.option(
    "--check", is_flag=True, help="Print which of the dashboard's functions the role may call."
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    metavar="NAME",
    multiple=True,
    help="Another host name to answer to (repeatable; any other is refused).",
)
def web(bind: str, auth: str | None, check: bool, allowed_hosts: tuple[str, ...]) -> None:
    """Serve the dashboard (the jobq-web package), as the role it connects with (what it may
    not do: disabled)."""
    try:
        from jobq_web import Credentials, is_loopback, parse_bind, serve
    except ImportError as exc:
        fail(f"{DASHBOARD_MISSING} ({exc.name} is missing)")
    host, port = opt.parsed(parse_bind, bind, "--bind")
    given = auth if auth is not None else os.environ.get(WEB_AUTH_ENV)
    source = "--auth" if auth is not None else WEB_AUTH_ENV
    credentials = opt.parsed(Credentials.parse, given, source) if given else None
    if credentials is None and not is_loopback(host):
        raise click.UsageError(
            f"--bind {bind} serves other machines: give a credential with --auth USER:PASSWORD "
            f"or ${WEB_AUTH_ENV} (and put TLS in front of it)"
        )
    schema = settings().given_schema
    # One connection first: a wrong password or an unreachable server ends the command with the
    # server's own message, where the dashboard's pool would wait 30 s on every page. A
    # connect_timeout the user set (in the DSN or PGCONNECT_TIMEOUT) is theirs to keep.
    dsn = settings().dsn()
    own = "connect_timeout" in conninfo_to_dict(dsn) or "PGCONNECT_TIMEOUT" in os.environ
    _conn.connect(dsn, **({} if own else {"connect_timeout": 10})).close()
    if check:
        for line in serve.role_report(dsn, schema):
            click.echo(line)
        return
    serve.serve(dsn, schema, host, port, credentials=credentials, allowed_hosts=allowed_hosts)


# `jobq embedded ...` manages the server used when no database is given: it takes --home
# (where that server lives), on the group or on a subcommand; --dsn or --schema would mean
# nothing there.
_HOME = kept(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Where its data lives (default: $JOBQ_HOME, else a per-user directory).",
)


@click.group("embedded")
@_HOME
def embedded_group() -> None:
    """The PostgreSQL that jobq starts itself when no database is given."""


def _embedded(name: str, **attrs: Any) -> Callable[[Callable[..., Any]], click.Command]:
    """A subcommand of ``jobq embedded``, which takes --home too."""
    return lambda f: embedded_group.command(name, **attrs)(_HOME(f))


@_embedded("status")
def embedded_status() -> None:
    """Say whether it runs (exit 3 when not, as an init script's status), with its DSN if so."""
    home = settings().home
    st = embedded.embedded_status(home)
    state = "running" if st.running else ("stopped" if st.initialized else "not created")
    pid = f" (pid {st.pid})" if st.pid else ""
    click.echo(f"{embedded.describe_embedded(home)}: {state}{pid}")
    if not st.running:
        click.get_current_context().exit(3)
    click.echo(st.dsn)


@_embedded("dsn")
def embedded_dsn() -> None:
    """Print its connection string, starting it if needed."""
    click.echo(embedded.get_embedded_dsn(settings().home))


_PSQL_SETTINGS = {"ignore_unknown_options": True, "help_option_names": ["--help"]}


@_embedded("psql", context_settings=_PSQL_SETTINGS)
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED, metavar="[PSQL ARGS]...")
def embedded_psql(psql_args: tuple[str, ...]) -> None:
    """Run psql on its jobq database, starting it if needed (arguments after the options are
    psql's)."""
    dsn = embedded.get_embedded_dsn(settings().home)
    psql = embedded.psql_path()
    if psql is None:
        fail(f"psql not found; connect with: {dsn}")
    sys.stdout.flush()
    os.execv(psql, [psql, "--dbname", dsn, *psql_args])


@_embedded("stop")
def embedded_stop() -> None:
    """Stop the server; the data stays (the next jobq command that needs it starts it)."""
    home = settings().home
    stopped = embedded.stop_embedded(home)
    click.echo(("stopped " if stopped else "not running: ") + embedded.describe_embedded(home))


@_embedded("reset")
@click.option("--yes", is_flag=True, help="Confirm that every job in it is to be deleted.")
def embedded_reset(yes: bool) -> None:
    """Stop the server and DELETE its data, every job in it."""
    pgdata = embedded.embedded_status(settings().home).pgdata
    if not yes:
        raise click.UsageError(f"this deletes {pgdata} and every job in it; add --yes to confirm")
    deleted = embedded.reset_embedded(settings().home)
    click.echo(f"deleted {pgdata}" if deleted else f"nothing to delete: {pgdata} does not exist")


COMMANDS = [worker, web, embedded_group]
