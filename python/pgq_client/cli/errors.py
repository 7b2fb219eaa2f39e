"""How a failed command ends: one line ``jobq: error: ...`` on stderr that says what to run,
exit 2 (usage) or 1 (anything else), never a traceback, never a DSN's password."""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import click
import psycopg
from psycopg.conninfo import conninfo_to_dict

from .. import _secrets
from ..errors import JobqError, NotMigrated, PermissionDenied, from_psycopg
from .base import Settings

_DENIED_FUNCTION = re.compile(r"permission denied for function (?:\S+\.)?\"?(\w+)\"?")
_DENIED_OTHER = re.compile(r"permission denied for (schema|table|relation) \"?([^\s\"]+)\"?")
_RUN_MIGRATE = re.compile(r"[:;,]?\s*run `jobq migrate[^`]*`(?: first)?")


def _role_of(dsn: str | None) -> str:
    if dsn:
        try:
            user = conninfo_to_dict(dsn).get("user")
        except psycopg.Error:
            user = None
        if user:
            return str(user)
    return os.environ.get("PGUSER") or "ROLE"


def explain(exc: JobqError, settings: Settings) -> str:
    """The one-line message for a jobq error: the database's detail and hint, and what to run."""
    cause = exc.__cause__
    while cause is not None and not isinstance(cause, psycopg.Error):
        cause = cause.__cause__
    message = exc.message
    if isinstance(cause, psycopg.Error):
        hint = cause.diag.message_hint
        if hint and hint not in message:
            message = f"{message} (hint: {hint})"
    schema = settings.given_schema
    schema_arg = f" --schema {shlex.quote(schema)}" if schema is not None else ""
    if isinstance(exc, NotMigrated):
        dsn_arg = ""
        if settings.given_dsn:
            dsn_arg = f" --dsn {shlex.quote(_secrets.mask_dsn(settings.given_dsn))}"
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
        from .install import level_for

        role = _role_of(settings.given_dsn or settings.configured_dsn())
        function = _DENIED_FUNCTION.search(message)
        if function:
            level = level_for(function.group(1))
            return (
                f"{message}; the role {role!r} needs the {level} grant: "
                f"`jobq grant {shlex.quote(role)} --as {level}{schema_arg}` "
                "(run by the owner of the jobq schema)"
            )
        if _DENIED_OTHER.search(message):
            return (
                f"{message}; grant the role {role!r} what it needs with "
                f"`jobq grant {shlex.quote(role)} --as producer|worker|admin{schema_arg}`"
            )
    return message


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


def _error(message: str, settings: Settings, argv: Sequence[str], code: int) -> int:
    """Print ``jobq: error: MESSAGE`` (one line, no password) and return the exit code."""
    text = _secrets.scrub(message, [*settings.known_dsns(), *_dsns_in_argv(argv)])
    click.echo(f"jobq: error: {' '.join(text.splitlines())}", err=True)
    return code


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
        settings = Settings()
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
            code = _error(explain(exc, settings), settings, argv, 1)
        except psycopg.Error as exc:
            mapped = from_psycopg(exc)
            mapped.__cause__ = exc
            code = _error(explain(mapped, settings), settings, argv, 1)
        except KeyboardInterrupt:
            click.echo("jobq: interrupted", err=True)
            code = 130
        if standalone_mode:
            sys.exit(code)
        return code
