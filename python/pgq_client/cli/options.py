"""The options and arguments that more than one command takes, each declared once."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .parsing import Duration, parse_ids

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


POSITIVE = click.IntRange(min=1)
SECONDS = click.FloatRange(min=0, min_open=True)


def ids(metavar: str = "ID...", required: bool = True) -> Callable[[F], F]:
    """Job ids, parsed before the command runs (a malformed one is a usage error)."""
    parse = lambda _c, _p, values: parse_ids(values)  # noqa: E731
    return click.argument("job_ids", metavar=metavar, nargs=-1, required=required, callback=parse)


def one_id(_ctx: click.Context, _param: click.Parameter, value: str | None) -> uuid.UUID | None:
    """A job id given on its own (an argument or an option's value)."""
    return None if value is None else parse_ids([value])[0]


IDS = ids()
ID = click.argument("job_id", metavar="ID", callback=one_id)
QUEUE = click.option("--queue", metavar="Q", help="Only jobs of this queue.")
JOB_TYPE = click.option("--job-type", metavar="T", help="Only jobs of this job type.")
LIMIT = click.option("--limit", type=POSITIVE, default=100, help="At most N jobs.")


def dry_run(what: str) -> Callable[[F], F]:
    return click.option("--dry-run", is_flag=True, help=f"Print the {what} instead.")


def duration(name: str, default: str | None, what: str) -> Callable[[F], F]:
    return click.option(
        name,
        type=Duration(),
        default=default,
        metavar="DURATION",
        help=f"{what}: seconds, or 90s, 30m, 12h, 7d, 1w, 1h30m.",
    )


def seconds(
    name: str, default: float, what: str | None = None, kind: click.FloatRange = SECONDS
) -> Callable[[F], F]:
    """A time in seconds (positive unless ``kind`` says otherwise)."""
    return click.option(name, type=kind, default=default, metavar="SECONDS", help=what)


def new_job_options(f: F) -> F:
    """``--queue``, ``--priority`` and ``--max-attempts`` of a job to add."""
    f = click.option("--max-attempts", type=int, default=5)(f)
    f = click.option("--priority", type=int, default=0, help="Higher runs first.")(f)
    return click.option("--queue", default="default")(f)


def parsed(parse: Callable[[str], T], value: str, hint: str) -> T:
    """``parse(value)``, its ValueError a usage error that names ``hint``."""
    try:
        return parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None
