"""What every command shares: where the database is, ``--dsn``/``--schema``/``--json``, and
the decorators that give each command those options."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, NoReturn, ParamSpec, TypeVar

import click
import psycopg
from psycopg.conninfo import conninfo_to_dict

from pgq_client import _secrets
from pgq_client._conn import DSN_SOURCES, resolve_dsn
from pgq_client.queue import Queue

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
T = TypeVar("T")
_DSN_HELP = (
    "PostgreSQL connection string (default: $JOBQ_DSN, else $DATABASE_URL, else an embedded "
    "PostgreSQL started on demand)."
)


_DRIVER_URL = re.compile(r"postgres(?:ql)?(\+\w+)://", re.IGNORECASE)
_PASSWORD_WARNING = (
    "jobq: warning: the password in --dsn is visible to other users of this machine (ps); put "
    "it in a password file (PGPASSFILE, ~/.pgpass) or give the connection string in JOBQ_DSN "
    "instead"
)


def _check_dsn(dsn: str, source: str) -> dict[str, Any]:
    """The parts of a DSN; one that libpq cannot parse is refused, naming where it came from,
    without its password."""
    try:
        return conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        reason = _secrets.scrub(_secrets.mask_quoted(str(exc).strip()), [dsn])
        driver = _DRIVER_URL.match(dsn)
        if driver:  # SQLAlchemy's form; libpq knows postgresql:// and postgres:// only
            reason += f" (drop {driver.group(1)!r}: libpq takes postgresql://...)"
        fail(f"the connection string from {source} is not valid: {reason}")


def describe(dsn: str) -> str:
    """A DSN that has been checked, without its password, for messages."""
    params = conninfo_to_dict(dsn)
    shown = [f"{k}={params[k]}" for k in ("host", "port", "dbname", "user") if params.get(k)]
    return " ".join(shown) or "(libpq defaults)"


class Settings:
    """What ``--dsn``, ``--schema``, ``--json`` and ``jobq embedded``'s ``--home`` say (wherever
    given); the DSN is resolved on first use."""

    def __init__(self) -> None:
        self.given_dsn: str | None = None
        self.given_schema: str | None = None
        self.as_json = False
        self.home: Path | None = None
        self._dsn: str | None = None
        self._warned = False

    def configured_dsn(self, announce: bool = False) -> str | None:
        """--dsn or the environment, without starting the embedded server. A password in --dsn
        is warned of, once: a command line is visible to every user of the machine (``ps``), a
        file or the environment is not."""
        if self.given_dsn:
            if _check_dsn(self.given_dsn, "--dsn").get("password") and not self._warned:
                self._warned = True
                click.echo(_PASSWORD_WARNING, err=True)
            return self.given_dsn
        for name in DSN_SOURCES:
            dsn = os.environ.get(name)
            if dsn:
                _check_dsn(dsn, name)
                if announce:
                    click.echo(f"jobq: using {name} ({describe(dsn)})", err=True)
                return dsn
        return None

    def dsn(self) -> str:
        """The DSN every connection of this command uses; the embedded server's when nothing
        else is configured (passed on explicitly: library code never starts that server)."""
        if self._dsn is None:
            self._dsn = self.configured_dsn(announce=True)
            if self._dsn is None:
                self._dsn, _ = resolve_dsn(None)
                click.echo(f"jobq: using embedded PostgreSQL at {describe(self._dsn)}", err=True)
        return self._dsn

    def queue(self) -> Queue:
        return Queue(self.dsn(), schema=self.given_schema)

    def known_dsns(self) -> list[str | None]:
        """Every DSN whose password must not appear in a message."""
        return [self.given_dsn, self._dsn, *(os.environ.get(n) for n in DSN_SOURCES)]


def settings() -> Settings:
    """The settings of the command being run (one object for the group and its commands)."""
    return click.get_current_context().ensure_object(Settings)


def call(method: Callable[Concatenate[Queue, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``method`` of a Queue on the command's database, the Queue closed afterwards."""
    with settings().queue() as q:
        return method(q, *args, **kwargs)


def fail(message: str) -> NoReturn:
    raise click.ClickException(message)


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """Keep ``--dsn``, ``--schema``, ``--json`` or ``--home`` in the shared settings; given
    before and after the command name, the innermost (the last one parsed) wins."""
    if value is None or value is False:
        return
    if param.name == "schema" and not value.strip():
        raise click.BadParameter("must not be blank", param_hint="--schema")
    s = ctx.ensure_object(Settings)
    attribute = {"dsn": "given_dsn", "schema": "given_schema", "json": "as_json"}
    setattr(s, attribute.get(str(param.name), str(param.name)), value)


def kept(*decls: str, **attrs: Any) -> Callable[[F], F]:
    return click.option(*decls, expose_value=False, callback=_store, **attrs)


def connection_options(schema_default: str | None) -> Callable[[F], F]:
    """``--dsn URL`` and ``--schema NAME``, kept in the shared settings."""
    where = schema_default or "the connection's search_path"
    schema = kept("--schema", metavar="NAME", help=f"Schema jobq is in (default: {where}).")
    dsn = kept("--dsn", metavar="URL", help=_DSN_HELP)
    return lambda f: dsn(schema(f))


def command(
    parent: click.Group | None = None,
    name: str | None = None,
    *,
    json: bool = False,
    schema_default: str | None = None,
    examples: str | None = None,
    **attrs: Any,
) -> Callable[[Callable[..., Any]], click.Command]:
    """A command that takes ``--dsn`` and ``--schema`` (and ``--json`` when ``json``) and shows
    ``examples`` (one command a line) after its help."""
    if examples:
        lines = "".join(f"  {line.strip()}\n" for line in examples.strip().splitlines())
        attrs["epilog"] = f"\b\nExamples:\n{lines}"

    def decorate(f: Callable[..., Any]) -> click.Command:
        if json:
            f = kept("--json", is_flag=True, help="Print JSON (keys in docs/cli.md).")(f)
        f = connection_options(schema_default)(f)
        make = parent.command if parent is not None else click.command
        return make(name, **attrs)(f)

    return decorate


def group(name: str, examples: str | None = None) -> Callable[[Callable[..., Any]], click.Group]:
    """A group of commands that takes ``--dsn`` and ``--schema`` for all of them."""
    return command(None, name, examples=examples, cls=click.Group)  # type: ignore[return-value]
