"""What the commands read from their arguments (payloads, times, durations, job ids) and the
options and arguments that more than one command takes, each declared once."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import click

from pgq_client._opcore import dump_json
from pgq_client._ops import check_aware
from pgq_client.durations import parse_duration

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def kind(value: Any) -> str:
    """What a JSON value is, for a message that says it is not an object."""
    names = {type(None): "null", bool: "a boolean", list: "an array", str: "a string"}
    return names.get(type(value), "a number")


def parse_payload(value: str | None) -> dict[str, Any]:
    """PAYLOAD_JSON: JSON text, ``-`` (read stdin) or ``@FILE``; it must be a JSON object."""
    if value is None:
        return {}
    source, text = "PAYLOAD_JSON", value
    if value == "-":
        source, text = "PAYLOAD_JSON (stdin)", sys.stdin.read()
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
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint=source) from None
    if not isinstance(data, dict):
        raise click.BadParameter(
            f'must be a JSON object (e.g. \'{{"to": "a@example.com"}}\'), got {kind(data)}',
            param_hint=source,
        )
    try:
        dump_json(data, "it")  # what jsonb cannot store (NUL, lone surrogates), said here
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=source) from None
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


def parse_ids(values: Iterable[str]) -> list[uuid.UUID]:
    ids: list[uuid.UUID] = []
    for value in values:
        try:
            ids.append(uuid.UUID(value))
        except ValueError:
            message = f"{value!r} is not a job id (a UUID)"
            raise click.BadParameter(message, param_hint="ID") from None
    return ids


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
