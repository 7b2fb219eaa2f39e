"""The ``jobq`` command line (also ``python -m pgq_client``).

The database comes from ``--dsn``, else ``JOBQ_DSN``, else ``DATABASE_URL``, else a local
embedded PostgreSQL that the CLI starts itself; which one is used is said on stderr (except for
an explicit ``--dsn``). ``--dsn`` and ``--schema`` are taken before and after the command name
(``jobq --dsn URL migrate`` is ``jobq migrate --dsn URL``); given in both places, the one after
the command wins. A user error prints one line ``jobq: error: ...`` on stderr and exits with 2
(usage) or 1 (anything else), never with a traceback, and never shows a DSN's password.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import os
import re
import shlex
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

import click
import psycopg
from psycopg.conninfo import conninfo_to_dict

from . import _secrets, _sql
from .errors import JobqError, NotMigrated, PermissionDenied, error_summary, from_psycopg
from .models import FINISHED_STATUSES, STATUSES, HealthRow, Job, JobStatus, MetricSample, StatsRow
from .queue import DSN_SOURCES, Queue, check_aware, resolve_dsn

if TYPE_CHECKING:
    from .metrics import ListenAddress

__all__ = ["cli", "main", "parse_duration", "parse_run_at"]

F = TypeVar("F", bound=Callable[..., Any])

DIST_NAME = "pgq-client"


def _describe(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "(unparsable DSN)"
    shown = [f"{k}={params[k]}" for k in ("host", "port", "dbname", "user") if params.get(k)]
    return " ".join(shown) or "(libpq defaults)"


def _check_dsn(dsn: str, source: str) -> str:
    """Refuse a DSN libpq cannot parse, naming where it came from, without its password."""
    try:
        conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        reason = _secrets.scrub(_secrets.mask_quoted(str(exc).strip()), [dsn])
        raise click.ClickException(
            f"the connection string from {source} is not valid: {reason}"
        ) from None
    return dsn


class _Settings:
    """What ``--dsn`` and ``--schema`` say (wherever given); the DSN is resolved on first use."""

    def __init__(self) -> None:
        self.given_dsn: str | None = None
        self.given_schema: str | None = None
        self._dsn: str | None = None
        self._warned = False

    def _given(self, dsn: str) -> str:
        """``--dsn``, checked; a warning, once, when it carries a password: a command line is
        visible to every user of the machine (``ps``), a file or the environment is not."""
        dsn = _check_dsn(dsn, "--dsn")
        if not self._warned and conninfo_to_dict(dsn).get("password"):
            self._warned = True
            click.echo(
                "jobq: warning: the password in --dsn is visible to other users of this "
                "machine (ps); put it in a password file (PGPASSFILE, ~/.pgpass) or give the "
                "connection string in JOBQ_DSN instead",
                err=True,
            )
        return dsn

    def configured_dsn(self) -> str | None:
        """--dsn or the environment, without starting the embedded server."""
        if self.given_dsn:
            return self._given(self.given_dsn)
        for name in DSN_SOURCES:
            if os.environ.get(name):
                return _check_dsn(os.environ[name], name)
        return None

    def dsn(self) -> str:
        if self._dsn is None:
            if self.given_dsn:
                self._dsn = self._given(self.given_dsn)
                return self._dsn
            for name in DSN_SOURCES:
                if os.environ.get(name):
                    self._dsn = _check_dsn(os.environ[name], name)
                    click.echo(f"jobq: using {name} ({_describe(self._dsn)})", err=True)
                    return self._dsn
            self._dsn, _ = resolve_dsn(None)
            click.echo(f"jobq: using embedded PostgreSQL at {_describe(self._dsn)}", err=True)
        return self._dsn

    def schema(self, default: str | None = None) -> str | None:
        return self.given_schema if self.given_schema is not None else default

    def queue(self) -> Queue:
        return Queue(self.dsn(), schema=self.schema())

    def known_dsns(self) -> list[str | None]:
        """Every DSN whose password must not appear in a message."""
        return [self.given_dsn, self._dsn, *(os.environ.get(n) for n in DSN_SOURCES)]


def _settings(ctx: click.Context) -> _Settings:
    return ctx.ensure_object(_Settings)


def _fail(message: str) -> NoReturn:
    raise click.ClickException(message)


# -- options every command takes ---------------------------------------------------------------


def _store_dsn(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        _settings(ctx).given_dsn = value


def _store_schema(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        if not value.strip():
            raise click.BadParameter("must not be blank", param_hint="--schema")
        _settings(ctx).given_schema = value


def connection_options(schema_default: str | None) -> Callable[[F], F]:
    """``--dsn URL`` and ``--schema NAME``, stored in the shared settings (the innermost wins)."""
    schema_help = (
        f"Schema jobq is installed in (default: {schema_default})."
        if schema_default
        else "Schema jobq is installed in (default: the connection's search_path)."
    )

    def decorate(f: F) -> F:
        f = click.option(
            "--schema",
            metavar="NAME",
            expose_value=False,
            callback=_store_schema,
            help=schema_help,
        )(f)
        f = click.option(
            "--dsn",
            metavar="URL",
            expose_value=False,
            callback=_store_dsn,
            help="PostgreSQL connection string (default: $JOBQ_DSN, else $DATABASE_URL, else "
            "an embedded PostgreSQL started on demand).",
        )(f)
        return f

    return decorate


def json_option(f: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print JSON (keys in docs/cli.md) for scripts."
    )(f)


# -- output ------------------------------------------------------------------------------------


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[("" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def _when(value: datetime | None) -> str:
    return "" if value is None else value.isoformat(sep=" ", timespec="seconds")


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | timedelta):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(_jsonable(value), ensure_ascii=False, sort_keys=True))


def _job_json(job: Job) -> dict[str, Any]:
    return dict(asdict(job))


def _stats_json(row: StatsRow) -> dict[str, Any]:
    return dict(asdict(row))


def _health_json(row: HealthRow) -> dict[str, Any]:
    return dict(asdict(row))


def _error_line(text: str | None, width: int = 80) -> str:
    """The exception line of a job's error (errors.error_summary), cut to ``width``."""
    return error_summary(text)[:width]


# -- errors ------------------------------------------------------------------------------------


def _quoted(value: str) -> str:
    return shlex.quote(value)


def _role_of(dsn: str | None) -> str:
    if dsn:
        try:
            user = conninfo_to_dict(dsn).get("user")
        except psycopg.Error:
            user = None
        if user:
            return str(user)
    return os.environ.get("PGUSER") or "ROLE"


def _level_for(function: str) -> str:
    """The narrowest level whose grant includes ``function`` (as its file declares)."""
    from . import grants

    for level in grants.LEVELS:
        if function in grants.declared_functions(level):
            return level
    return "admin"


_DENIED_FUNCTION = re.compile(r"permission denied for function (?:\S+\.)?\"?(\w+)\"?")
_DENIED_OTHER = re.compile(r"permission denied for (schema|table|relation) \"?([^\s\"]+)\"?")
_RUN_MIGRATE = re.compile(r"[:;,]?\s*run `jobq migrate[^`]*`(?: first)?")


def _explain(exc: JobqError, settings: _Settings | None) -> str:
    """The one-line message for a jobq error: the database's detail and hint, and what to run."""
    cause = exc.__cause__
    while cause is not None and not isinstance(cause, psycopg.Error):
        cause = cause.__cause__
    message = exc.message
    if isinstance(cause, psycopg.Error):
        hint = cause.diag.message_hint
        if hint and hint not in message:
            message = f"{message} (hint: {hint})"
    if settings is None:
        return message
    schema = settings.given_schema
    schema_arg = f" --schema {_quoted(schema)}" if schema is not None else ""
    if isinstance(exc, NotMigrated):
        dsn_arg = ""
        if settings.given_dsn:
            dsn_arg = f" --dsn {_quoted(_secrets.mask_dsn(settings.given_dsn))}"
        if isinstance(cause, psycopg.Error) and cause.diag.message_primary:
            where = f"schema {schema!r} of this database" if schema is not None else "this database"
            reason = (
                f"jobq is not installed in {where} (or is older than this client): "
                f"{cause.diag.message_primary}"
            )
        else:
            reason = _RUN_MIGRATE.sub("", message).strip()
        return f"{reason}; run `jobq migrate{dsn_arg}{schema_arg}`"
    if isinstance(exc, PermissionDenied):
        role = _role_of(settings.given_dsn or settings.configured_dsn())
        function = _DENIED_FUNCTION.search(message)
        if function:
            level = _level_for(function.group(1))
            return (
                f"{message}; the role {role!r} needs the {level} grant: "
                f"`jobq grant {_quoted(role)} --as {level}{schema_arg}` "
                "(run by the owner of the jobq schema)"
            )
        if _DENIED_OTHER.search(message):
            return (
                f"{message}; grant the role {role!r} what it needs with "
                f"`jobq grant {_quoted(role)} --as producer|worker|admin{schema_arg}`"
            )
    return message


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
        argv = list(sys.argv[1:] if args is None else args)
        settings = _Settings()
        code = 0
        try:
            rv = super().main(
                args=argv,
                prog_name=prog_name or "jobq",
                complete_var=complete_var,
                standalone_mode=False,
                obj=settings,
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
            code = _error(f"{exc.format_message()}{hint}", settings, argv, 2)
        except click.ClickException as exc:
            code = _error(exc.format_message(), settings, argv, exc.exit_code)
        except JobqError as exc:
            code = _error(_explain(exc, settings), settings, argv, 1)
        except psycopg.Error as exc:
            mapped = from_psycopg(exc)
            mapped.__cause__ = exc
            code = _error(_explain(mapped, settings), settings, argv, 1)
        except KeyboardInterrupt:
            click.echo("jobq: interrupted", err=True)
            code = 130
        if standalone_mode:
            sys.exit(code)
        return code


def _dsns_in_argv(argv: Iterable[str]) -> list[str]:
    found: list[str] = []
    previous = ""
    for arg in argv:
        if previous == "--dsn":
            found.append(arg)
        elif arg.startswith("--dsn="):
            found.append(arg[len("--dsn=") :])
        previous = arg
    return found


def _error(message: str, settings: _Settings, argv: Sequence[str], code: int) -> int:
    """Print ``jobq: error: MESSAGE`` (one line, no password) and return the exit code."""
    dsns = [*settings.known_dsns(), *_dsns_in_argv(argv)]
    text = _secrets.scrub(message, dsns)
    click.echo(f"jobq: error: {' '.join(text.splitlines())}", err=True)
    return code


# -- the group ---------------------------------------------------------------------------------

MAIN_HELP = """jobq: a PostgreSQL job queue whose logic lives in SQL.

\b
The database is --dsn, else $JOBQ_DSN, else $DATABASE_URL, else an embedded
PostgreSQL started on demand. --dsn and --schema go before or after the command.

\b
Examples:
  jobq migrate --dsn postgresql://app@db/app
  jobq enqueue send_email '{"to": "a@example.com"}'
  jobq worker examples.handlers:HANDLERS --concurrency 8
  jobq stats
  jobq jobs list --status dead_letter
"""


@click.group(
    cls=JobqGroup,
    help=MAIN_HELP,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(
    package_name=DIST_NAME, prog_name="jobq", message="%(prog)s %(version)s (" + DIST_NAME + ")"
)
@connection_options(None)
@click.pass_context
def cli(ctx: click.Context) -> None:
    _settings(ctx)


# -- installation ------------------------------------------------------------------------------


@cli.command(
    epilog="""\b
Examples:
  jobq migrate --dsn postgresql://app@db/app
  jobq migrate --dsn postgresql://app@db/app --schema tenant_a
  jobq migrate --dry-run > jobq.sql
"""
)
@click.option("--dry-run", is_flag=True, help="Print the SQL it would run instead (for psql).")
@click.option(
    "--force",
    is_flag=True,
    help="Migrate even a schema that another role controls (objects jobq's owner does not "
    "own, or other roles that may CREATE there); it refuses one otherwise.",
)
@json_option
@connection_options("public")
@click.pass_context
def migrate(ctx: click.Context, dry_run: bool, force: bool, as_json: bool) -> None:
    """Install or upgrade jobq in the database (idempotent)."""
    from . import migrate as runner

    settings = _settings(ctx)
    schema = settings.schema("public") or "public"
    if dry_run:
        click.echo(runner.render_dry_run(settings.configured_dsn(), schema), nl=False)
        return
    # the runner's warnings (who else controls the schema) as one line each on stderr, and
    # the grants that carry roles' levels over to new functions
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("jobq: warning: %(message)s"))
    handler.setLevel(logging.WARNING)
    granted = logging.StreamHandler(sys.stderr)
    granted.setFormatter(logging.Formatter("jobq: %(message)s"))
    level = runner.grant_logger.level
    runner.grant_logger.setLevel(logging.INFO)
    runner.grant_logger.addHandler(granted)
    runner.logger.addHandler(handler)
    try:
        applied = runner.migrate(settings.dsn(), schema=schema, force=force)
    finally:
        runner.logger.removeHandler(handler)
        runner.grant_logger.removeHandler(granted)
        runner.grant_logger.setLevel(level)
    if as_json:
        _echo_json({"schema": schema, "applied": applied})
        return
    if not applied:
        click.echo(f'jobq: schema "{schema}" is up to date, nothing to apply', err=True)
    for name in applied:
        click.echo(f"applied {name}")


@cli.command(
    epilog="""\b
Examples:
  jobq grant app_producer --as producer
  jobq grant app_worker --as worker --schema tenant_a
  jobq grant app_admin --as admin --dry-run
"""
)
@click.argument("role")
@click.option(
    "--as",
    "level",
    type=click.Choice(["producer", "worker", "monitor", "admin"]),
    required=True,
    help="producer: enqueue; worker: + claim and acknowledge; monitor: stats and health, "
    "read-only; admin: every public function and SELECT on the tables.",
)
@click.option("--dry-run", is_flag=True, help="Print the GRANT statements instead.")
@connection_options("public")
@click.pass_context
def grant(ctx: click.Context, role: str, level: str, dry_run: bool) -> None:
    """Grant an existing ROLE what a producer, worker, monitor or admin of jobq needs."""
    from . import grants

    lvl = next(x for x in grants.LEVELS if x == level)
    if role.strip().lower() == "public":
        raise click.BadParameter(
            "PUBLIC is every role: grant a level to one role", param_hint="ROLE"
        )
    settings = _settings(ctx)
    schema = settings.schema("public") or "public"
    if dry_run:
        dsn = settings.configured_dsn()
        if dsn is None:
            click.echo(grants.render(grants.grant_statements(role, lvl, schema)), nl=False)
            return
        try:
            with psycopg.connect(dsn, autocommit=True, **_sql.connect_kwargs(dsn)) as conn:
                statements = grants.plan(role, lvl, schema, conn)
                click.echo(grants.render(statements, conn), nl=False)
        except psycopg.Error as exc:
            raise from_psycopg(exc) from exc
        return
    done = grants.grant(settings.dsn(), role, lvl, schema)
    click.echo(
        f'jobq: granted {level} to "{role}" in schema "{schema}" ({len(done)} statements)', err=True
    )


@cli.command(
    epilog="""\b
Examples:
  jobq revoke app_worker
  jobq revoke app_worker --schema tenant_a --dry-run
"""
)
@click.argument("role")
@click.option("--dry-run", is_flag=True, help="Print the REVOKE statements instead.")
@connection_options("public")
@click.pass_context
def revoke(ctx: click.Context, role: str, dry_run: bool) -> None:
    """Take back from ROLE everything jobq grants in the schema (any level).

    EXECUTE on every jobq function and every privilege on the jobq tables; USAGE on the schema
    too when nothing but jobq lives in it. PUBLIC is accepted: it takes back what an older jobq
    granted to PUBLIC.
    """
    from . import grants

    settings = _settings(ctx)
    schema = settings.schema("public") or "public"
    if dry_run:
        dsn = settings.configured_dsn()
        if dsn is None:
            click.echo(grants.render(grants.revoke_statements(role, schema)), nl=False)
            return
        try:
            with psycopg.connect(dsn, autocommit=True, **_sql.connect_kwargs(dsn)) as conn:
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


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    return "a number"


def parse_payload(value: str | None) -> dict[str, Any]:
    """PAYLOAD_JSON: JSON text, ``-`` (read stdin) or ``@FILE``; it must be a JSON object."""
    if value is None:
        return {}
    source = "PAYLOAD_JSON"
    if value == "-":
        text = sys.stdin.read()
        source = "PAYLOAD_JSON (stdin)"
    elif value.startswith("@"):
        path = value[1:]
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise click.BadParameter(
                f"cannot read {path!r}: {reason}", param_hint="PAYLOAD_JSON"
            ) from None
        source = f"PAYLOAD_JSON ({path})"
    else:
        text = value
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint=source) from None
    if not isinstance(data, dict):
        raise click.BadParameter(
            f'must be a JSON object (e.g. \'{{"to": "a@example.com"}}\'), got {_kind(data)}',
            param_hint=source,
        )
    return data


def parse_run_at(value: str | None) -> datetime | None:
    """``--run-at``: ISO 8601 with a UTC offset or ``Z``; a time without an offset is refused
    (its instant would depend on a time zone jobq cannot know)."""
    if value is None:
        return None
    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not an ISO 8601 time (e.g. 2030-01-31T09:00:00+01:00 or "
            "2030-01-31T08:00:00Z)",
            param_hint="--run-at",
        ) from None
    try:
        check_aware(when, "--run-at")
    except ValueError:
        local = when.isoformat(timespec="seconds")
        raise click.BadParameter(
            f"{value!r} has no UTC offset; give one, e.g. {local}+00:00 or {local}Z",
            param_hint="--run-at",
        ) from None
    return when


@cli.command(
    epilog="""\b
Examples:
  jobq enqueue send_email '{"to": "a@example.com"}' --idempotency-key welcome:42
  jobq enqueue report --run-at 2030-01-31T09:00:00+01:00 --priority 5
  jobq enqueue import - < big-payload.json
  jobq enqueue import @big-payload.json --queue bulk
  jobq enqueue sync '{"account": 7}' --limit-group per-customer --limit-key acme
  jobq enqueue --from jobs.ndjson
  jobq enqueue reindex --from - --queue bulk --batch-size 10000 < jobs.ndjson
"""
)
@click.argument("job_type", metavar="[TYPE]", required=False)
@click.argument("payload", metavar="[PAYLOAD_JSON]", required=False)
@click.option(
    "--from",
    "from_file",
    metavar="FILE",
    help="Bulk load: one job per line (newline-delimited JSON objects with the keys of "
    "enqueue_many), - for stdin. TYPE and the options below are the defaults of each line.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 100_000),
    default=5000,
    show_default=True,
    help="With --from: jobs per statement and transaction.",
)
@click.option("--idempotency-key", metavar="K", help="Dedupe key: the same key, the same job.")
@click.option(
    "--run-at",
    metavar="T",
    help="Not before this time: ISO 8601 with a UTC offset or Z (2030-01-31T09:00:00+01:00).",
)
@click.option("--priority", type=int, default=0, show_default=True, help="Higher runs first.")
@click.option("--max-attempts", type=int, default=5, show_default=True)
@click.option("--queue", default="default", show_default=True)
@click.option(
    "--limit-group", metavar="G", help="Count against the limits of group G (jobq limit set)."
)
@click.option(
    "--limit-key", metavar="K", help="Within --limit-group, the key with limits of its own."
)
@json_option
@connection_options(None)
@click.pass_context
def enqueue(
    ctx: click.Context,
    job_type: str | None,
    payload: str | None,
    from_file: str | None,
    batch_size: int,
    idempotency_key: str | None,
    run_at: str | None,
    priority: int,
    max_attempts: int,
    queue: str,
    limit_group: str | None,
    limit_key: str | None,
    as_json: bool,
) -> int:
    """Add a job of TYPE and print its id; or, with --from, load many jobs.

    PAYLOAD_JSON is a JSON object: the text itself, - to read it from stdin, or @FILE to read
    it from a file (for payloads too large for a command line).

    --from FILE reads one JSON object per line ({"job_type": ..., "payload": ..., and any of
    idempotency_key, max_attempts, run_at, priority, queue}; blank lines are skipped) and
    enqueues them in batches, each all or nothing. A line that is not such an object is
    reported with its line number and skipped; a batch that the database refuses is reported
    with the line at fault and skipped as a whole; the others go in. A progress bar shows on
    a terminal. Prints a summary; exits 1 if any line was not enqueued.
    """
    if from_file is not None:
        if payload is not None or idempotency_key is not None:
            raise click.UsageError(
                "--from reads payloads and idempotency keys from its lines: "
                "PAYLOAD_JSON and --idempotency-key do not apply"
            )
        defaults: dict[str, Any] = {}
        if job_type is not None:
            defaults["job_type"] = job_type
        if run_at is not None:
            defaults["run_at"] = parse_run_at(run_at)
        for key, value, default in (
            ("priority", priority, 0),
            ("max_attempts", max_attempts, 5),
            ("queue", queue, "default"),
        ):
            if value != default:
                defaults[key] = value
        return _bulk_enqueue(ctx, from_file, batch_size, defaults, as_json)
    if job_type is None:
        raise click.UsageError("Missing argument 'TYPE' (or give --from FILE)")
    data = parse_payload(payload)
    when = parse_run_at(run_at)
    with _settings(ctx).queue() as q:
        job_id = q.enqueue(
            job_type,
            data,
            idempotency_key=idempotency_key,
            run_at=when,
            priority=priority,
            max_attempts=max_attempts,
            queue=queue,
            limit_group=limit_group,
            limit_key=limit_key,
        )
    if as_json:
        _echo_json({"id": job_id})
    else:
        click.echo(str(job_id))
    return 0


class _Lines:
    """The jobs of an NDJSON stream, read lazily: each line's number is kept for the jobs
    that are enqueued (to name the line of a refused job), bad lines are collected."""

    def __init__(self, stream: Iterable[bytes], defaults: Mapping[str, Any]) -> None:
        self._stream = stream
        self._defaults = defaults
        self.line_of: list[int] = []  # line number of each job, by its index
        self.bad: list[tuple[int, str]] = []
        self.bytes_read = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for number, raw in enumerate(self._stream, 1):
            self.bytes_read += len(raw)
            if not raw.strip():
                continue
            try:
                job = json.loads(raw)
            except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
                self.bad.append((number, f"not valid JSON: {exc}"))
                continue
            if not isinstance(job, dict):
                self.bad.append((number, f"must be a JSON object, got {_kind(job)}"))
                continue
            if isinstance(job.get("run_at"), str):
                try:
                    job["run_at"] = parse_run_at(job["run_at"])
                except click.BadParameter as exc:
                    self.bad.append((number, f"run_at {exc.message}"))
                    continue
            if self._defaults:
                job = {**self._defaults, **job}
            self.line_of.append(number)
            yield job


class _Progress:
    """A progress bar on stderr while it is a terminal (bytes of a file, else a job count);
    nothing otherwise, so that logs and pipes stay clean."""

    def __init__(self, lines: _Lines, total_bytes: int | None) -> None:
        self._lines = lines
        self._bar: Any = None
        self._shown = 0
        self._tty = sys.stderr.isatty()
        if self._tty and total_bytes:
            self._bar = click.progressbar(
                length=total_bytes, label="enqueueing", file=sys.stderr, show_pos=False
            )
            self._bar.__enter__()

    def __call__(self, jobs: int) -> None:
        if self._bar is not None:
            self._bar.update(self._lines.bytes_read - self._shown)
            self._shown = self._lines.bytes_read
        elif self._tty:
            click.echo(f"\renqueued {jobs:,} jobs", file=sys.stderr, nl=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
        elif self._tty:
            click.echo("", file=sys.stderr)


def _bulk_enqueue(
    ctx: click.Context, source: str, batch_size: int, defaults: Mapping[str, Any], as_json: bool
) -> int:
    import time

    if source == "-":
        stream: Any = sys.stdin.buffer
        total = None
    else:
        try:
            stream = open(source, "rb")  # noqa: SIM115 - closed below, after the load
        except OSError as exc:
            raise click.BadParameter(
                f"cannot read {source!r}: {exc.strerror or exc}", param_hint="--from"
            ) from None
        total = os.fstat(stream.fileno()).st_size
    lines = _Lines(stream, defaults)
    progress = _Progress(lines, total)
    started = time.monotonic()
    try:
        with _settings(ctx).queue() as q:
            summary = q.enqueue_iter(
                lines, batch_size=batch_size, skip_refused=True, progress=progress
            )
    finally:
        progress.close()
        if stream is not sys.stdin.buffer:
            stream.close()
    seconds = time.monotonic() - started
    # Each refused batch: its first and last line, the line at fault (when the error names a
    # job), how many jobs, the error.
    refused = [
        (
            lines.line_of[r.first],
            lines.line_of[r.first + r.count - 1],
            None if r.job is None else lines.line_of[r.job],
            r.count,
            str(r.error),
        )
        for r in summary.refused
    ]
    if as_json:
        _echo_json({
            "jobs": summary.jobs,
            "batches": summary.batches,
            "seconds": round(seconds, 3),
            "bad_lines": [{"line": n, "error": e} for n, e in lines.bad],
            "refused": [
                {"lines": [first, last], "line": line, "jobs": count, "error": error}
                for first, last, line, count, error in refused
            ],
        })
    else:
        for number, error in lines.bad:
            click.echo(f"line {number}: {error}; skipped", err=True)
        for first, last, line, count, error in refused:
            at = "" if line is None else f"line {line}: "
            click.echo(
                f"{at}{error}; lines {first} to {last} ({count} jobs) were not enqueued",
                err=True,
            )
        rate = summary.jobs / seconds if seconds > 0 else 0.0
        skipped = len(lines.bad) + sum(r.count for r in summary.refused)
        click.echo(
            f"enqueued {summary.jobs:,} jobs in {summary.batches:,} batches, "
            f"{seconds:.1f} s ({rate:,.0f} jobs/s)"
            + (f"; {skipped:,} lines not enqueued" if skipped else "")
        )
    return 1 if lines.bad or summary.refused else 0


# -- operating ---------------------------------------------------------------------------------


@cli.command(epilog="\b\nExamples:\n  jobq stats\n  jobq stats --schema tenant_a --json\n")
@json_option
@connection_options(None)
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Job counts per queue, type and status."""
    with _settings(ctx).queue() as q:
        rows = q.stats()
    if as_json:
        _echo_json([_stats_json(r) for r in rows])
        return
    if not rows:
        click.echo("no jobs")
        return
    click.echo(
        _table(
            ["queue", "job_type", "status", "jobs", "oldest_available_at"],
            [(r.queue, r.job_type, r.status, r.jobs, _when(r.oldest_available_at)) for r in rows],
        )
    )


@cli.command(
    "metrics",
    epilog="\b\nExamples:\n  jobq metrics\n  jobq metrics --serve 127.0.0.1:9187\n",
)
@click.option(
    "--serve",
    metavar="HOST:PORT",
    help="Serve the metrics at http://HOST:PORT/metrics until stopped (Ctrl-C, SIGTERM), "
    "reading jobq_metrics() on every scrape. [::1]:PORT for IPv6, :PORT for every interface, "
    "port 0 for any free one.",
)
@connection_options(None)
@click.pass_context
def metrics_command(ctx: click.Context, serve: str | None) -> None:
    """Prometheus metrics kept by the database (jobq_metrics; monitor or admin): counters,
    gauges and histograms per queue and job type, in the Prometheus text format.

    See docs/metrics.md for each metric, and docs/grafana/ and docs/prometheus/ for a
    dashboard and alert rules.
    """
    from . import metrics as exporter

    if serve is None:
        with _settings(ctx).queue() as q:
            samples = q.metrics()
        click.echo(exporter.render(samples), nl=False)
        _say_if_not_counting(samples)
        return
    try:
        address = exporter.parse_listen_address(serve)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--serve") from None
    _serve_metrics(_settings(ctx), address)


def _say_if_not_counting(samples: Sequence[MetricSample]) -> None:
    """A note on stderr when the functions do not count (a new installation), since the
    counters then read 0 or stand still whatever the queue does."""
    if any(s.metric == "jobq_metrics_counting" and s.value == 0 for s in samples):
        click.echo(
            "jobq: counting is off (jobq_metrics_counting 0): counters, histograms and "
            "jobq_jobs stand still; `jobq configure --metrics` (admin) turns it on",
            err=True,
        )


def _serve_metrics(settings: _Settings, address: ListenAddress) -> None:
    """Serve /metrics until SIGTERM or SIGINT; one read of jobq_metrics() first, so that a
    wrong DSN or a role without access fails here rather than on every scrape."""
    import signal
    import threading

    from prometheus_client import CollectorRegistry, start_http_server

    from . import metrics as exporter

    with settings.queue() as q:
        _say_if_not_counting(q.metrics())
        registry = CollectorRegistry(auto_describe=False)
        registry.register(exporter.JobqCollector(q.metrics))
        try:
            server, thread = start_http_server(address.port, addr=address.host, registry=registry)
        except OSError as exc:
            _fail(f"cannot listen on {address}: {exc.strerror or exc}")
        bound = exporter.ListenAddress(address.host, int(server.server_port))
        click.echo(f"jobq: serving metrics at http://{bound}/metrics (Ctrl-C to stop)", err=True)
        stop = threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            while not stop.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
            server.shutdown()
            server.server_close()
            thread.join(5)
        click.echo("jobq: stopped serving metrics", err=True)


@cli.command("doctor", epilog="\b\nExamples:\n  jobq doctor\n  jobq doctor --json\n")
@json_option
@connection_options(None)
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Health checks (jobq_health) and an audit of the installation; exits 1 when one of them
    warns, for monitoring.

    Beyond jobq_health's checks: who else controls the schema (objects in it that jobq's owner
    does not own, roles other than it that may CREATE there), and whether the functions
    installed are exactly those of this jobq's files, compared by signature (a body or a
    setting changed by hand, a CREATE OR REPLACE without SECURITY DEFINER, a half-applied
    upgrade, a jobq function or overload no file defines).
    """
    from . import migrate as runner
    from .models import HealthRow

    settings = _settings(ctx)
    schema = settings.schema()
    dsn = settings.dsn()
    # The catalogue first, on a connection of its own (search_path = pg_catalog, pg_temp): who
    # else controls the schema is read without calling a jobq function, one of which could be
    # what another role planted (or be made ambiguous by it).
    try:
        where = schema if schema is not None else _sql.schema_of_dsn(dsn)
        with psycopg.connect(dsn, autocommit=True, **_sql.connect_kwargs(dsn)) as conn:
            control = runner.control_findings(conn, where)
            drift = runner.function_drift(conn, where)
    except psycopg.Error as exc:
        raise from_psycopg(exc) from exc
    rows = [HealthRow("schema_control", None, "warning", 1.0, finding) for finding in control]
    try:
        with Queue(dsn, schema=where) as q:
            rows = q.health() + rows
    except JobqError as exc:
        if not control:
            raise
        rows.append(HealthRow("health", None, "warning", 1.0, f"jobq_health failed: {exc}"))
    rows += [
        HealthRow("function_definition", None, "warning", 1.0, f"{name} {what}")
        for name, what in drift
    ] or [
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
        _echo_json({"ok": ok, "checks": [_health_json(r) for r in rows]})
    else:
        click.echo(
            _table(
                ["check", "queue", "severity", "detail"],
                [(r.check_name, r.queue, r.severity, r.detail) for r in rows],
            )
        )
    if not ok:
        ctx.exit(1)


cli.add_command(doctor, "health")  # the same command under the SQL function's name


# -- jobs one by one ---------------------------------------------------------------------------


def _parse_ids(values: Iterable[str]) -> list[uuid.UUID]:
    ids: list[uuid.UUID] = []
    for value in values:
        try:
            ids.append(uuid.UUID(value))
        except ValueError:
            raise click.BadParameter(
                f"{value!r} is not a job id (a UUID)", param_hint="ID"
            ) from None
    return ids


def _jobs_table(jobs: Sequence[Job]) -> str:
    rows = [
        (
            job.id,
            job.job_type,
            job.queue,
            job.status,
            f"{job.attempts}/{job.max_attempts}",
            _when(job.updated_at),
            _error_line(job.last_error),
        )
        for job in jobs
    ]
    return _table(
        ["id", "job_type", "queue", "status", "attempts", "updated_at", "last_error"], rows
    )


@cli.group(
    epilog="""\b
Examples:
  jobq jobs list --status dead_letter --type send_email
  jobq jobs show 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55
  jobq jobs retry 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55
  jobq jobs status 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55
  jobq jobs wait 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55 --timeout 5m
"""
)
@connection_options(None)
def jobs() -> None:
    """Look at jobs one by one and retry them (admin); follow them (status, wait: producer)."""


@jobs.command("list")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="S",
    help=f"Only jobs in this status (repeatable): {', '.join(STATUSES)}.",
)
@click.option("--queue", metavar="Q", help="Only jobs of this queue.")
@click.option("--type", "job_type", metavar="T", help="Only jobs of this job type.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@json_option
@connection_options(None)
@click.pass_context
def jobs_list(
    ctx: click.Context,
    statuses: tuple[str, ...],
    queue: str | None,
    job_type: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List jobs, most recently changed first."""
    with _settings(ctx).queue() as q:
        found = q.list_jobs(
            statuses=list(statuses) or None, job_type=job_type, queue=queue, limit=limit
        )
    if as_json:
        _echo_json([_job_json(j) for j in found])
    elif not found:
        click.echo("no jobs")
    else:
        click.echo(_jobs_table(found))


def _show(job: Job) -> str:
    fields = [
        ("id", job.id),
        ("job_type", job.job_type),
        ("queue", job.queue),
        ("status", job.status),
        ("attempts", f"{job.attempts}/{job.max_attempts}"),
        ("priority", job.priority),
        ("idempotency_key", job.idempotency_key),
        ("created_at", _when(job.created_at)),
        ("available_at", _when(job.available_at)),
        ("updated_at", _when(job.updated_at)),
        ("locked_at", _when(job.locked_at)),
        ("locked_by", job.locked_by),
        ("finished_at", _when(job.finished_at)),
    ]
    if job.cancel_requested_at is not None:
        fields.append(("cancel_requested_at", _when(job.cancel_requested_at)))
        fields.append(("cancel_reason", job.cancel_reason))
    width = max(len(name) for name, _ in fields)
    lines = [
        f"{name.ljust(width)}  {'' if value is None else value}".rstrip() for name, value in fields
    ]
    lines.append("payload:")
    lines += ["  " + line for line in json.dumps(job.payload, indent=2).splitlines()]
    if job.result is not None:
        lines.append("result:")
        result = json.dumps(job.result, indent=2, ensure_ascii=False)
        lines += ["  " + line for line in result.splitlines()]
    lines.append(f"errors ({len(job.errors)}):")
    for entry in job.errors:
        attempt = entry.get("attempt", "?")
        head = f"  attempt {attempt} at {entry.get('at', '?')}"
        if entry.get("worker"):
            head += f" by {entry['worker']}"
        if entry.get("kind"):
            head += f" ({entry['kind']})"
        lines.append(head + ":")
        lines += ["    " + line for line in str(entry.get("error", "")).splitlines()]
    if job.last_error and not job.errors:
        lines.append("last_error:")
        lines += ["    " + line for line in job.last_error.splitlines()]
    return "\n".join(lines)


@jobs.command("show")
@click.argument("job_id", metavar="ID")
@json_option
@connection_options(None)
@click.pass_context
def jobs_show(ctx: click.Context, job_id: str, as_json: bool) -> None:
    """A job's payload, result, attempts, error history, cancel request and times."""
    (parsed,) = _parse_ids([job_id])
    with _settings(ctx).queue() as q:
        job = q.get_job(parsed)
    if job is None:
        _fail(f"no job {parsed}")
    if as_json:
        _echo_json(_job_json(job))
    else:
        click.echo(_show(job))


@jobs.command("retry")
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True)
@json_option
@connection_options(None)
@click.pass_context
def jobs_retry(ctx: click.Context, job_ids: tuple[str, ...], as_json: bool) -> None:
    """Make dead_letter, failed or cancelled jobs pending again (attempts 0, history kept).

    Exits 1 when one of them was not requeued (another status, or unknown); the others are.
    """
    ids = _parse_ids(job_ids)
    requeued: list[uuid.UUID] = []
    left: list[uuid.UUID] = []
    with _settings(ctx).queue() as q:
        for job_id in dict.fromkeys(ids):
            (requeued if q.requeue_dead_letter(job_id) else left).append(job_id)
    if as_json:
        _echo_json({"requeued": requeued, "not_requeued": left})
    else:
        for job_id in requeued:
            click.echo(f"requeued {job_id}")
    if left:
        _fail(
            f"not requeued (not dead_letter, failed or cancelled, or unknown; nothing changed "
            f"for them): "
            f"{', '.join(map(str, left))}"
        )


# -- dead letters ------------------------------------------------------------------------------


@cli.group(
    "dead-letter",
    epilog="""\b
Examples:
  jobq dead-letter list --job-type send_email
  jobq dead-letter requeue --all --job-type send_email
""",
)
@connection_options(None)
def dead_letter() -> None:
    """Jobs that used all their attempts (dead_letter) or failed permanently (failed)."""


@dead_letter.command("list")
@click.option("--job-type", metavar="T")
@click.option("--queue", metavar="Q")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@json_option
@connection_options(None)
@click.pass_context
def dead_letter_list(
    ctx: click.Context, job_type: str | None, queue: str | None, limit: int, as_json: bool
) -> None:
    """List dead_letter and failed jobs, most recent first."""
    with _settings(ctx).queue() as q:
        found = q.dead_letters(job_type=job_type, queue=queue, limit=limit)
    if as_json:
        _echo_json([_job_json(j) for j in found])
        return
    if not found:
        click.echo("no dead-letter or failed jobs")
        return
    rows = [
        (
            job.id,
            job.job_type,
            job.queue,
            job.status,
            f"{job.attempts}/{job.max_attempts}",
            _when(job.finished_at),
            _error_line(job.last_error),
        )
        for job in found
    ]
    click.echo(
        _table(["id", "job_type", "queue", "status", "attempts", "finished_at", "last_error"], rows)
    )


@dead_letter.command("requeue")
@click.argument("job_id", metavar="[ID]", required=False)
@click.option("--all", "all_", is_flag=True, help="Requeue every dead_letter and failed job.")
@click.option("--job-type", metavar="T", help="With --all: only jobs of this type.")
@click.option("--queue", metavar="Q", help="With --all: only jobs of this queue.")
@json_option
@connection_options(None)
@click.pass_context
def dead_letter_requeue(
    ctx: click.Context,
    job_id: str | None,
    all_: bool,
    job_type: str | None,
    queue: str | None,
    as_json: bool,
) -> None:
    """Make a dead_letter, failed or cancelled job (ID, or --all) pending again."""
    if (job_id is None) == (not all_):
        raise click.UsageError("give either a job ID or --all")
    if job_id is not None and (job_type or queue):
        raise click.UsageError("--job-type and --queue go with --all, not with an ID")
    if job_id is not None:
        (parsed,) = _parse_ids([job_id])
        with _settings(ctx).queue() as q:
            if not q.requeue_dead_letter(parsed):
                _fail(
                    f"job {parsed} is not dead_letter, failed or cancelled (or unknown); "
                    "nothing changed"
                )
        if as_json:
            _echo_json({"requeued": 1})
        else:
            click.echo(f"requeued {parsed}")
        return
    with _settings(ctx).queue() as q:
        count = q.requeue_dead_letters(job_type=job_type, queue=queue)
    if as_json:
        _echo_json({"requeued": count})
    else:
        click.echo(f"requeued {count} jobs")


# -- retention and settings --------------------------------------------------------------------

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)


def parse_duration(text: str) -> timedelta:
    """``90``, ``90s``, ``30m``, ``12h``, ``7d``, ``1w``, or a sum such as ``1h30m``."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        pos = 0
        seconds = 0.0
        for match in _DURATION_PART.finditer(value):
            if match.start() != pos:
                break
            seconds += float(match.group(1)) * _UNITS[match.group(2).lower()]
            pos = match.end()
        if pos == 0 or value[pos:].strip():
            raise ValueError(
                f"{text!r} is not a duration (e.g. 90, 90s, 30m, 12h, 7d, 1w, 1h30m)"
            ) from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{text!r} is not a duration: it must be a finite, non-negative time")
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise ValueError(f"{text!r} is too long a duration") from None


class Duration(click.ParamType):  # type: ignore[type-arg]
    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> timedelta:
        if isinstance(value, timedelta):
            return value
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


_UTC = timezone.utc


# -- following and cancelling jobs (producer) -----------------------------------------------


def _statuses_table(statuses: Sequence[JobStatus]) -> str:
    rows = [
        (
            st.id,
            st.status,
            st.attempts,
            _when(st.finished_at),
            "yes" if st.cancel_requested else "",
            _compact(st.result),
            _error_line(st.last_error, 60),
        )
        for st in statuses
    ]
    return _table(
        ["id", "status", "attempts", "finished_at", "cancel_requested", "result", "last_error"],
        rows,
    )


def _compact(value: Any, width: int = 60) -> str:
    if value is None:
        return ""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= width else text[: width - 3] + "..."


def _status_json(st: JobStatus) -> dict[str, Any]:
    return dict(asdict(st))


@jobs.command("status")
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True)
@json_option
@connection_options(None)
@click.pass_context
def jobs_status(ctx: click.Context, job_ids: tuple[str, ...], as_json: bool) -> None:
    """How jobs stand: status, attempts, result, last error, cancel request (no payload; a
    producer may ask). Exits 1 when one of them is unknown."""
    ids = _parse_ids(job_ids)
    with _settings(ctx).queue() as q:
        found = q.status(ids)
    _print_statuses(ids, found, as_json)
    if len(found) < len(set(ids)):
        ctx.exit(1)


@jobs.command("wait")
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True)
@click.option(
    "--timeout",
    type=Duration(),
    default="30s",
    show_default=True,
    metavar="DURATION",
    help="Give up after this long: seconds, or 90s, 30m, 12h, 1h30m.",
)
@json_option
@connection_options(None)
@click.pass_context
def jobs_wait(
    ctx: click.Context, job_ids: tuple[str, ...], timeout: timedelta, as_json: bool
) -> None:
    """Wait until the jobs have finished (succeeded, failed, dead_letter, cancelled), then print
    their statuses. Woken by a notification, not by polling. Exits 1 when one has not finished
    within --timeout or is unknown, 0 otherwise (whatever status they ended in)."""
    ids = _parse_ids(job_ids)
    with _settings(ctx).queue() as q:
        found = q.wait(ids, timeout)
    _print_statuses(ids, found, as_json)
    if len(found) < len(set(ids)) or not all(st.finished for st in found.values()):
        ctx.exit(1)


def _print_statuses(
    ids: Sequence[uuid.UUID], found: Mapping[uuid.UUID, JobStatus], as_json: bool
) -> None:
    unknown = [i for i in dict.fromkeys(ids) if i not in found]
    if as_json:
        _echo_json({"jobs": [_status_json(st) for st in found.values()], "unknown": unknown})
        return
    if found:
        click.echo(_statuses_table(list(found.values())))
    for job_id in unknown:
        click.echo(f"jobq: no job {job_id}", err=True)


@cli.command(
    epilog="""\b
Examples:
  jobq cancel 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55
  jobq cancel 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55 --reason 'customer withdrew the order'
"""
)
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True)
@click.option("--reason", metavar="TEXT", help="Why; kept with the job (its last_error when it "
              "was pending).")
@json_option
@connection_options(None)
@click.pass_context
def cancel(ctx: click.Context, job_ids: tuple[str, ...], reason: str | None, as_json: bool) -> None:
    """Cancel jobs: a pending job is cancelled at once; a running one is asked to stop (its
    handler sees job.cancel_requested()) and ends cancelled unless it completes first; a
    finished job is left alone. A producer may cancel. Exits 1 when one of them is unknown."""
    ids = _parse_ids(job_ids)
    with _settings(ctx).queue() as q:
        statuses = q.cancel(ids, reason)
    unknown = [i for i in dict.fromkeys(ids) if i not in statuses]
    if as_json:
        _echo_json({
            "jobs": [{"id": i, "status": st} for i, st in statuses.items()],
            "unknown": unknown,
        })
    else:
        for job_id, status in statuses.items():
            if status == "cancelled":
                click.echo(f"cancelled {job_id}")
            elif status == "cancel_requested":
                click.echo(f"cancel requested {job_id} (running: it stops when its handler "
                           "sees the request, or ends succeeded if it completes first)")
            else:
                click.echo(f"left alone {job_id} (already {status})")
    if unknown:
        _fail(f"no job {', '.join(map(str, unknown))} (nothing changed for it)")


# -- schedules ---------------------------------------------------------------------------------


@cli.group(
    "schedule",
    epilog="""\b
Examples:
  jobq schedule set nightly-report '30 2 * * *' report --timezone America/New_York
  jobq schedule list --json
  jobq schedule delete nightly-report
""",
)
@connection_options(None)
def schedule() -> None:
    """Periodic jobs: cron schedules kept in the database, fired by every Worker's tick."""


@schedule.command("set")
@click.argument("name")
@click.argument("cron")
@click.argument("job_type", metavar="TYPE")
@click.argument("payload", metavar="[PAYLOAD_JSON]", required=False)
@click.option("--timezone", default="UTC", show_default=True, help="IANA zone of the cron times.")
@click.option("--queue", default="default", show_default=True)
@click.option("--priority", type=int, default=0, show_default=True, help="Higher runs first.")
@click.option("--max-attempts", type=int, default=5, show_default=True)
@click.option(
    "--catch-up",
    type=click.Choice(["skip", "latest", "all"]),
    default="latest",
    show_default=True,
    help="Fires nobody ticked in time: none, the most recent, or each (1,000 at most).",
)
@click.option("--paused", is_flag=True, help="Create or keep it paused (fires nothing).")
@connection_options(None)
@click.pass_context
def schedule_set(
    ctx: click.Context,
    name: str,
    cron: str,
    job_type: str,
    payload: str | None,
    timezone: str,
    queue: str,
    priority: int,
    max_attempts: int,
    catch_up: Literal["skip", "latest", "all"],
    paused: bool,
) -> None:
    """Create or replace schedule NAME: a job of TYPE at each CRON time; prints the next fire.

    CRON is five fields (minute hour day-of-month month day-of-week), quoted, or @hourly,
    @daily, @weekly, @monthly, @yearly.
    """
    data = parse_payload(payload)
    with _settings(ctx).queue() as q:
        next_run_at = q.schedule(
            name,
            cron,
            job_type,
            data,
            timezone=timezone,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            catch_up=catch_up,
            paused=paused,
        )
    click.echo(f"{name}: next fire {_when(next_run_at.astimezone(_UTC))}")


@schedule.command("list")
@json_option
@connection_options(None)
@click.pass_context
def schedule_list(ctx: click.Context, as_json: bool) -> None:
    """List the schedules with their next fire, in their own time zone and in UTC."""
    with _settings(ctx).queue() as q:
        rows = q.schedules()
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "name": r.name,
                        "cron": r.cron,
                        "timezone": r.timezone,
                        "job_type": r.job_type,
                        "payload": r.payload,
                        "queue": r.queue,
                        "priority": r.priority,
                        "max_attempts": r.max_attempts,
                        "catch_up": r.catch_up,
                        "paused": r.paused,
                        "next_run_local": r.next_run_local.isoformat(),
                        "next_run_utc": r.next_run_at.astimezone(_UTC).isoformat(),
                    }
                    for r in rows
                ],
                indent=2,
            )
        )
        return
    if not rows:
        click.echo("no schedules")
        return
    click.echo(
        _table(
            ["name", "cron", "timezone", "job_type", "catch_up", "paused", "next (local)",
             "next (UTC)"],
            [
                (
                    r.name,
                    r.cron,
                    r.timezone,
                    r.job_type,
                    r.catch_up,
                    "yes" if r.paused else "",
                    r.next_run_local.isoformat(sep=" ", timespec="seconds"),
                    _when(r.next_run_at.astimezone(_UTC)),
                )
                for r in rows
            ],
        )
    )


@schedule.command("delete")
@click.argument("name")
@connection_options(None)
@click.pass_context
def schedule_delete(ctx: click.Context, name: str) -> None:
    """Delete schedule NAME (jobs it already enqueued stay)."""
    with _settings(ctx).queue() as q:
        if not q.unschedule(name):
            _fail(f"no schedule named {name!r}; nothing changed")
    click.echo(f"deleted {name}")


# -- limits ------------------------------------------------------------------------------------


@cli.group(
    "limit",
    epilog="""\b
Examples:
  jobq limit set per-customer --max-running 2
  jobq limit set partner-api --max-starts 100 --per 60
  jobq limit list --json
  jobq limit delete per-customer
""",
)
@connection_options(None)
def limit() -> None:
    """Concurrency and rate limits per (limit group, limit key), enforced by every claim."""


@limit.command("set")
@click.argument("group")
@click.option(
    "--max-running",
    type=click.IntRange(min=1),
    help="At most N jobs of one key processing at once.",
    metavar="N",
)
@click.option(
    "--max-starts",
    type=click.IntRange(min=1),
    help="At most N jobs of one key started within any --per window.",
    metavar="N",
)
@click.option(
    "--per",
    type=click.FloatRange(min=0, min_open=True),
    help="The window of --max-starts, in seconds.",
    metavar="SECONDS",
)
@connection_options(None)
@click.pass_context
def limit_set(
    ctx: click.Context,
    group: str,
    max_running: int | None,
    max_starts: int | None,
    per: float | None,
) -> None:
    """Set the limits of GROUP; each key of the group has them for itself.

    With neither --max-running nor --max-starts, the limit is removed (as jobq limit delete).
    """
    if (max_starts is None) != (per is None):
        raise click.UsageError("--max-starts and --per go together (N jobs per SECONDS)")
    with _settings(ctx).queue() as q:
        q.set_limit(group, max_running=max_running, max_starts=max_starts, per=per)
    if max_running is None and max_starts is None:
        click.echo(f"removed the limit of {group}")
        return
    parts = []
    if max_running is not None:
        parts.append(f"at most {max_running} running")
    if max_starts is not None:
        parts.append(f"at most {max_starts} starts per {per:g} s")
    click.echo(f"{group}: {', '.join(parts)} per key")


@limit.command("list")
@json_option
@connection_options(None)
@click.pass_context
def limit_list(ctx: click.Context, as_json: bool) -> None:
    """List the limits and what each key uses now (running, starts in the window, pending)."""
    with _settings(ctx).queue() as q:
        limits = q.limits()
        usage = q.limit_usage()

    def seconds(per: timedelta | None) -> float | None:
        return None if per is None else per.total_seconds()

    if as_json:
        _echo_json({
            "limits": [
                {
                    "limit_group": r.limit_group,
                    "max_running": r.max_running,
                    "max_starts": r.max_starts,
                    "per_seconds": seconds(r.per),
                }
                for r in limits
            ],
            "usage": [
                {
                    "limit_group": u.limit_group,
                    "limit_key": u.limit_key,
                    "running": u.running,
                    "max_running": u.max_running,
                    "starts_in_window": u.starts_in_window,
                    "max_starts": u.max_starts,
                    "per_seconds": seconds(u.per),
                    "pending": u.pending,
                }
                for u in usage
            ],
        })
        return
    if not limits:
        click.echo("no limits")
        return

    def blank(value: object) -> str:
        return "" if value is None else str(value)

    def per_text(per: timedelta | None) -> str:
        return "" if per is None else f"{per.total_seconds():g} s"

    click.echo(
        _table(
            ["limit_group", "max_running", "max_starts", "per"],
            [
                (r.limit_group, blank(r.max_running), blank(r.max_starts), per_text(r.per))
                for r in limits
            ],
        )
    )
    if usage:
        click.echo("")
        click.echo(
            _table(
                ["limit_group", "limit_key", "running", "starts_in_window", "pending"],
                [
                    (
                        u.limit_group,
                        blank(u.limit_key),
                        f"{u.running}/{u.max_running}" if u.max_running else str(u.running),
                        f"{u.starts_in_window}/{u.max_starts}" if u.max_starts else "",
                        str(u.pending),
                    )
                    for u in usage
                ],
            )
        )


@limit.command("delete")
@click.argument("group")
@connection_options(None)
@click.pass_context
def limit_delete(ctx: click.Context, group: str) -> None:
    """Remove the limits of GROUP: its waiting jobs are claimed at once."""
    with _settings(ctx).queue() as q:
        q.set_limit(group)
    click.echo(f"removed the limit of {group}")


@cli.command()
@connection_options(None)
@click.pass_context
def tick(ctx: click.Context) -> None:
    """Fire the due schedules now, for pg_cron or a system timer (Workers tick by themselves)."""
    with _settings(ctx).queue() as q:
        fires = q.tick()
    for f in fires:
        click.echo(f"{f.schedule}  {_when(f.fire_at.astimezone(_UTC))}  {f.job_id}")
    click.echo(f"{len(fires)} fires enqueued")


@cli.command(
    epilog="""\b
Examples:
  jobq prune                                  # succeeded jobs finished over 7 days ago
  jobq prune --older-than 12h --status failed --status dead_letter
"""
)
@click.option(
    "--older-than",
    type=Duration(),
    default="7d",
    show_default=True,
    metavar="DURATION",
    help="Only jobs finished longer ago than this: seconds, or 90s, 30m, 12h, 7d, 1w, 1h30m.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(FINISHED_STATUSES),
    help="Finished status to prune (repeatable; default: succeeded).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="Jobs deleted per transaction (the oldest first), until none is left.",
)
@json_option
@connection_options(None)
@click.pass_context
def prune(
    ctx: click.Context,
    older_than: timedelta,
    statuses: tuple[str, ...],
    batch_size: int,
    as_json: bool,
) -> None:
    """Delete finished jobs."""
    with _settings(ctx).queue() as q:
        count = q.prune(older_than, list(statuses) or ["succeeded"], batch_size=batch_size)
    if as_json:
        _echo_json({"pruned": count})
    else:
        click.echo(f"pruned {count} jobs")


@cli.command(
    epilog="\b\nExamples:\n  jobq configure\n  jobq configure --max-payload-bytes 4194304\n"
)
@click.option("--max-payload-bytes", type=click.IntRange(min=1), help="Largest payload (jsonb).")
@click.option(
    "--metrics/--no-metrics",
    default=None,
    help="Count what the jobq functions do for `jobq metrics` (off on a new installation: it "
    "costs a write in every counted call). Turning it on counts the jobs present (reads the "
    "whole table, blocking writers meanwhile).",
)
@json_option
@connection_options(None)
@click.pass_context
def configure(
    ctx: click.Context, max_payload_bytes: int | None, metrics: bool | None, as_json: bool
) -> None:
    """Show (and change) this installation's settings (admin)."""
    with _settings(ctx).queue() as q:
        settings = q.configure(max_payload_bytes=max_payload_bytes, metrics=metrics)
    if as_json:
        _echo_json(settings)
    else:
        click.echo(_table(["setting", "value"], sorted(settings.items())))


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


@cli.command(
    epilog="""\b
Examples:
  jobq worker examples.handlers:HANDLERS --concurrency 8
  jobq worker examples.handlers:HANDLERS --queue emails --burst
  jobq --dsn postgresql://app_worker@db/app worker myapp.jobs:HANDLERS
"""
)
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
@connection_options(None)
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
) -> None:
    """Run the handlers of MODULE:HANDLERS (a dict job type -> function) until SIGTERM."""
    from .worker import Worker

    handlers = _load_handlers(handlers_spec)
    logging.basicConfig(
        level=getattr(logging, log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    settings = _settings(ctx)
    w = Worker(
        settings.dsn(),
        handlers,
        concurrency=concurrency,
        queues=list(queues) or None,
        prefetch=prefetch,
        batch_size=batch_size,
        lock_timeout=timedelta(seconds=lock_timeout),
        shutdown_grace=shutdown_grace,
        poll_interval=poll_interval,
        worker_id=worker_id,
        schema=settings.schema(),
    )
    w.run(burst=burst)
    if w.aborted:  # a second Ctrl-C or SIGTERM cut the shutdown short
        ctx.exit(130)


# -- the dashboard ---------------------------------------------------------------------------

WEB_AUTH_ENV = "JOBQ_WEB_AUTH"


@cli.command(
    "web",
    epilog="\b\nExamples:\n  jobq web\n  jobq web --bind 127.0.0.1:9000 --schema tenant_a\n"
    "  jobq web --check --dsn postgresql://exporter@db/app\n"
    "  JOBQ_WEB_AUTH=ops:s3cret jobq web --bind 0.0.0.0:8080\n",
)
@click.option(
    "--bind",
    metavar="HOST:PORT",
    default="127.0.0.1:8080",
    show_default=True,
    help="Where to listen. Any host other than localhost needs a credential.",
)
@click.option(
    "--auth",
    metavar="USER:PASSWORD",
    help=f"HTTP Basic credential every request must present (default: ${WEB_AUTH_ENV}; "
    "prefer the variable: a command line is visible to other users of the machine).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Print the role and which of the dashboard's functions it may call, then exit "
    "without serving (1 when jobq is not installed there).",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    metavar="NAME",
    multiple=True,
    help="A host name the dashboard answers to besides localhost, 127.0.0.1 and ::1 (and the "
    "--bind host); repeatable. Requests naming any other host (Host, or Origin of a change) "
    "are refused, which stops DNS rebinding.",
)
@connection_options(None)
@click.pass_context
def web(
    ctx: click.Context, bind: str, auth: str | None, check: bool, allowed_hosts: tuple[str, ...]
) -> None:
    """Serve the dashboard: queues, jobs, dead letters (requeue, cancel), schedules.

    It calls jobq's functions as the role it connects with: actions that role may not take are
    shown disabled.
    """
    try:
        import uvicorn

        from .web import Credentials, create_app, is_loopback, parse_bind
        from .web.app import FUNCTIONS, Dashboard, NotInstalled
    except ImportError as exc:
        _fail(
            f"jobq web needs the web extra ({exc.name} is missing): "
            "pip install 'pgq-client[web]'"
        )
    try:
        host, port = parse_bind(bind)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--bind") from None
    given = auth if auth is not None else os.environ.get(WEB_AUTH_ENV)
    credentials = None
    if given:
        try:
            credentials = Credentials.parse(given)
        except ValueError as exc:
            source = "--auth" if auth is not None else WEB_AUTH_ENV
            raise click.BadParameter(str(exc), param_hint=source) from None
    if credentials is None and not is_loopback(host):
        raise click.UsageError(
            f"--bind {bind} serves other machines: give a credential with --auth USER:PASSWORD "
            f"or ${WEB_AUTH_ENV} (and put TLS in front of it)"
        )
    settings = _settings(ctx)
    if check:
        board = Dashboard(settings.dsn(), settings.schema(), refresh_seconds=2.0)
        try:
            role, allowed = board.role()
        except NotInstalled as exc:
            _fail(str(exc))
        finally:
            board.close()
        click.echo(f"role {role} may call:")
        for name in FUNCTIONS:
            click.echo(f"  {name:28} {'yes' if allowed.get(name) else 'no'}")
        return
    # the bound address names this server; a wildcard bind names none of its own
    named = [] if host in ("0.0.0.0", "::", "") else [host]
    app = create_app(
        settings.dsn(),
        schema=settings.schema(),
        credentials=credentials,
        allowed_hosts=[*named, *allowed_hosts],
    )
    shown = f"[{host}]" if ":" in host else host
    click.echo(
        f"jobq web: http://{shown}:{port}/" + (" (credential required)" if credentials else ""),
        err=True,
    )
    uvicorn.run(app, host=host, port=port, log_level="warning")


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
