"""How a failed command ends: one line ``jobq: error: ...`` on stderr that says what to run,
exit 2 (usage) or 1 (anything else), never a traceback, never a DSN's password."""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import click
import psycopg
from psycopg.conninfo import conninfo_to_dict

from pgq_client import _secrets
from pgq_client.errors import JobqError, NotMigrated, PermissionDenied, from_psycopg

from .base import Settings

_DENIED_FUNCTION = re.compile(r"permission denied for function (?:\S+\.)?\"?(\w+)\"?")
_DENIED_OTHER = re.compile(r"permission denied for (schema|table|relation) \"?([^\s\"]+)\"?")
_RUN_MIGRATE = re.compile(r"[:;,]?\s*run `jobq migrate[^`]*`(?: first)?")


def _role_of(dsn: str | None) -> str:
    try:
        user = conninfo_to_dict(dsn).get("user") if dsn else None
    except psycopg.Error:
        user = None
    return str(user) if user else os.environ.get("PGUSER") or "ROLE"


def explain(exc: JobqError, settings: Settings) -> str:
    """The one-line message for a jobq error: the database's detail and hint, and what to run."""
    cause = exc.__cause__
    while cause is not None and not isinstance(cause, psycopg.Error):
        cause = cause.__cause__
    message = exc.message
    hint = cause.diag.message_hint if isinstance(cause, psycopg.Error) else None
    if hint and hint not in message:
        message = f"{message} (hint: {hint})"
    schema = settings.given_schema
    schema_arg = f" --schema {shlex.quote(schema)}" if schema is not None else ""
    if isinstance(exc, NotMigrated):
        dsn = settings.given_dsn
        dsn_arg = f" --dsn {shlex.quote(_secrets.mask_dsn(dsn))}" if dsn else ""
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


def _message(exc: click.ClickException | JobqError | psycopg.Error, s: Settings) -> tuple[str, int]:
    """What to say about ``exc`` and the exit code."""
    if isinstance(exc, click.UsageError):
        hint = ""
        if exc.ctx is not None and exc.cmd is not None:
            hint = f" (see `{exc.ctx.command_path} --help`)"
        return f"{exc.format_message()}{hint}", 2
    if isinstance(exc, click.ClickException):
        return exc.format_message(), exc.exit_code
    if isinstance(exc, JobqError):
        return explain(exc, s), 1
    mapped = from_psycopg(exc)
    mapped.__cause__ = exc
    return explain(mapped, s), 1


def _dsns_in_argv(argv: Sequence[str]) -> list[str]:
    after_flag = [arg for flag, arg in pairwise(argv) if flag == "--dsn"]
    return after_flag + [arg[len("--dsn=") :] for arg in argv if arg.startswith("--dsn=")]


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
        except (click.exceptions.Abort, KeyboardInterrupt) as exc:
            stopped = "aborted" if isinstance(exc, click.exceptions.Abort) else "interrupted"
            click.echo(f"jobq: {stopped}", err=True)
            code = 130
        except (click.ClickException, JobqError, psycopg.Error) as exc:
            message, code = _message(exc, settings)
            known = [*settings.known_dsns(), *_dsns_in_argv(argv)]
            text = _secrets.scrub(message, known)
            click.echo(f"jobq: error: {' '.join(text.splitlines())}", err=True)
        if standalone_mode:
            sys.exit(code)
        return code
