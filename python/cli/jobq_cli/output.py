"""How commands print: aligned tables for people, one compact JSON line for scripts."""

from __future__ import annotations

import dataclasses
import json
import operator
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any

import click

from pgq_client.errors import error_summary
from pgq_client.models import Job

from .base import settings


def cell(value: object) -> str:
    """A value as a table shows it: nothing for None, times to the second."""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return "" if value is None else str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], empty: str = "") -> str:
    """The one table writer: aligned columns under a header; ``empty`` when there is no row."""
    if empty and not rows:
        return empty
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def fields(row: object, names: Sequence[str]) -> dict[str, Any]:
    return {name: getattr(row, name) for name in names}


def counted(count: int, noun: str, plural: str = "") -> str:
    """``1 job``, ``2 jobs``: a count as a sentence says it, thousands separated."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {plural or noun + 's'}"


def yes(flag: bool) -> str:
    return "yes" if flag else ""


def columns(
    rows: Iterable[Any], names: Sequence[str], empty: str = "", **shown: Callable[[Any], object]
) -> str:
    """A table of the fields ``names`` of each row (a dict's keys, else attributes); ``shown``
    renders a column its own way."""
    rows = list(rows)
    by: Callable[[str], Callable[[Any], object]]
    by = operator.itemgetter if rows and isinstance(rows[0], Mapping) else operator.attrgetter
    get = {n: shown.get(n) or by(n) for n in names}
    return table(names, [[get[n](row) for n in names] for row in rows], empty)


def listing(
    rows: Sequence[object], names: Sequence[str], empty: str, **shown: Callable[[Any], object]
) -> None:
    """``rows`` as JSON under ``--json``, else as a table of ``names`` (see :func:`columns`)."""
    emit(rows, lambda: columns(rows, names, empty, **shown))


def error_line(text: str | None, width: int = 80) -> str:
    """The exception line of a job's error (errors.error_summary), cut to ``width``."""
    return error_summary(text)[:width]


def compact(value: Any, width: int = 60) -> str:
    if value is None:
        return ""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= width else text[: width - 3] + "..."


def _json_value(value: Any) -> Any:
    """What ``json`` cannot write itself: dataclasses as objects, times as ISO 8601, ids as
    strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | timedelta):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def emit(value: Any, text: str | Callable[[], str]) -> None:
    """``value`` as JSON under ``--json``, the one JSON writer of every command (one line, keys
    sorted, UTF-8 as is); else ``text`` (a function: rendered only then), when there is any."""
    if settings().as_json:
        line = json.dumps(value, default=_json_value, ensure_ascii=False, sort_keys=True)
        click.echo(line)
        return
    shown = text if isinstance(text, str) else text()
    if shown:
        click.echo(shown)


def jobs_table(jobs: Sequence[Job], time_column: str, empty: str) -> str:
    return columns(
        jobs,
        ["id", "job_type", "queue", "status", "attempts", time_column, "last_error"],
        empty,
        attempts=lambda job: f"{job.attempts}/{job.max_attempts}",
        last_error=lambda job: error_line(job.last_error),
    )


def show_job(job: Job) -> str:
    names = ["id", "job_type", "queue", "status", "attempts", "priority", "idempotency_key"]
    names += ["created_at", "available_at", "updated_at", "locked_at", "locked_by", "finished_at"]
    if job.cancel_requested_at is not None:
        names += ["cancel_requested_at", "cancel_reason"]
    shown = {**fields(job, names), "attempts": f"{job.attempts}/{job.max_attempts}"}
    width = max(map(len, names))
    lines = [f"{n.ljust(width)}  {cell(v)}".rstrip() for n, v in shown.items()]

    def block(title: str, value: Any) -> None:
        lines.append(title)
        text = json.dumps(value, indent=2, ensure_ascii=False)
        lines.extend("  " + line for line in text.splitlines())

    block("payload:", job.payload)
    if job.result is not None:
        block("result:", job.result)
    lines.append(f"errors ({len(job.errors)}):")
    for entry in job.errors:
        head = f"  attempt {entry.get('attempt', '?')} at {entry.get('at', '?')}"
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
