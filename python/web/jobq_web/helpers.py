"""What the views and actions share: the templates, the error page, the chart, and the parsing
of what a request names."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, cast

import psycopg
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from pgq_client.durations import parse_duration
from pgq_client.errors import JobqError, error_summary, from_psycopg
from pgq_client.statuses import FINISHED_STATUSES, STATUSES

from .guard import CSRF_COOKIE, csrf_token

if TYPE_CHECKING:
    from .app import Dashboard, Role, Sample


def when(value: datetime | None) -> str:
    if value is None:
        return "-"
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def span(value: timedelta | None) -> str:
    """A duration in its two largest units, as people write it: 0.5s, 45s, 1m 30s, 1h, 2d 3h."""
    if value is None:
        return ""
    seconds = value.total_seconds()
    if seconds < 60:
        return f"{seconds:g}s"
    rest, parts = int(seconds), list[str]()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        amount, rest = divmod(rest, size)
        if amount or parts:
            parts.append(f"{amount}{unit}")
    return " ".join(p for p in parts[:2] if not p.startswith("0"))


def age(value: datetime | None) -> str:
    if value is None:
        return "-"
    seconds = (datetime.now(timezone.utc) - value).total_seconds() // 1
    text = span(timedelta(seconds=abs(seconds)))
    return f"in {text}" if seconds < 0 else f"{text} ago"


ENV = Environment(
    loader=PackageLoader("jobq_web", "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
# What the Requeue buttons are shown on (jobq_requeue_dead_letter takes any finished job but a
# succeeded one).
REQUEUABLE = tuple(s for s in FINISHED_STATUSES if s != "succeeded")
ENV.globals.update(statuses=STATUSES, requeuable=REQUEUABLE)
# error_line: what a list shows of a job's error, the exception line, as the CLI does (a
# traceback's first line is the same for every failure).
ENV.filters.update(
    when=when, age=age, span=span, error_line=error_summary,
    pretty_json=lambda v: json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False, default=str),
)


def board_of(request: Request) -> Dashboard:
    return cast("Dashboard", request.app.state.jobq)


def base(request: Request) -> str:
    """The mount's prefix, which every link carries."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def render(
    request: Request, template: str, role: Role | None = None, code: int = 200, **context: Any
) -> HTMLResponse:
    token, fresh = csrf_token(request)
    page = ENV.get_template(template).render(
        base=base(request),
        csrf=token,
        role=role.name if role else None,
        can=role.can if role else {},
        request=request,
        refresh=board_of(request).refresh_seconds,
        notice=request.query_params.get("notice"),
        **context,
    )
    response = HTMLResponse(page, status_code=code)
    if fresh:
        response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict",
                            path=base(request) or "/", secure=request.url.scheme == "https")
    return response


def fail(request: Request, status: int, message: str, role: Role | None = None) -> HTMLResponse:
    return render(request, "error.html", role, status, message=message)


def error_page(request: Request, exc: Exception) -> HTMLResponse:
    """A page not found (a job id that is not a uuid among them), or a refused or failed call:
    403 for a missing privilege, 400 for an argument refused (by the client before sending it,
    a ValueError, or by jobq)."""
    if isinstance(exc, HTTPException):
        return fail(request, exc.status_code, f"no such page: {request.url.path}")
    if isinstance(exc, ValueError):
        return fail(request, 400, str(exc))
    error = exc if isinstance(exc, JobqError) else from_psycopg(cast(psycopg.Error, exc))
    state = error.sqlstate
    status = 403 if state == "42501" else 400 if state and state.startswith("22") else 500
    return render(request, "error.html", None, status, message=error.message, sqlstate=state)


def next_url(request: Request, value: str | None, default: str) -> str:
    """Where a POST returns to: a path of this dashboard only (never another site)."""
    if not value or value.startswith("//") or "\\" in value:
        return default
    return value if value.startswith(base(request) + "/") else default


def parse_cursor(value: str | None) -> tuple[datetime, uuid.UUID] | None:
    """``after`` = ``<sort_at ISO 8601 with offset>,<id>`` (the last row of the previous
    page)."""
    at, _, ident = (value or "").rpartition(",")
    try:
        when, job_id = datetime.fromisoformat(at), uuid.UUID(ident)
    except ValueError:
        return None
    return (when, job_id) if when.tzinfo is not None else None


def parse_when(value: str, name: str) -> datetime | None:
    """A time filter of the search form: ISO 8601, its offset UTC when it has none (what a
    browser's datetime-local field sends), or a duration ago (``2h``)."""
    if not value:
        return None
    try:
        return datetime.now(timezone.utc) - parse_duration(value)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(value[:-1] + "+00:00" if value[-1:] in "Zz" else value)
    except ValueError:
        raise ValueError(f"{name}: {value!r} is neither an ISO 8601 time nor a duration ago "
                         "(2h, 30m, 7d)") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def text_filter(value: str | None) -> str | None:
    return (value or "").strip() or None


def chart(samples: Sequence[Sample], width: int = 600, height: int = 120) -> dict[str, Any]:
    """Polylines (SVG points) of available and processing jobs over the samples."""
    if len(samples) < 2:
        return {"width": width, "height": height, "lines": {}, "top": 0, "span": 0}
    t0 = samples[0].at
    span = max(samples[-1].at - t0, 1e-9)
    top = max(1, *(max(s.available, s.processing) for s in samples))

    def point(s: Sample, value: int) -> str:
        return f"{(s.at - t0) / span * width:.1f},{height - value / top * (height - 4) - 2:.1f}"

    lines = {
        name: " ".join(point(s, getattr(s, name)) for s in samples)
        for name in ("available", "processing")
    }
    return {"width": width, "height": height, "top": top, "span": int(span), "lines": lines}


# The series of the throughput chart: the finished statuses, stacked in this order.
FINISHED_SERIES = ("succeeded", "failed", "dead_letter", "cancelled")


def throughput_chart(
    rows: Sequence[dict[str, Any]], width: int = 600, height: int = 120
) -> dict[str, Any]:
    """Bars of the jobs finished per bucket (``jobq_throughput``), stacked by status, and a
    polyline of the failed attempts, on one scale; each bar carries its numbers as title text
    (a tooltip and what a screen reader reads)."""
    counts = (*FINISHED_SERIES, "failed_attempts")
    totals = {name: sum(int(r[name]) for r in rows) for name in counts}
    if not rows:
        return {"width": width, "height": height, "top": 0, "bars": [], "line": "",
                "totals": totals, "busy": []}
    top = max(1, *(max(sum(r[s] for s in FINISHED_SERIES), r["failed_attempts"]) for r in rows))
    step, scale = width / len(rows), (height - 4) / top
    bars = []
    for i, r in enumerate(rows):
        y, parts = height - 1.0, []
        for name in FINISHED_SERIES:
            if r[name]:
                y -= r[name] * scale
                parts.append({"series": name, "y": f"{y:.1f}", "height": f"{r[name] * scale:.1f}"})
        numbers = ", ".join(f"{r[n]} {n.replace('_', ' ')}" for n in counts)
        bars.append({"x": f"{i * step:.1f}", "width": f"{max(step - 1, 1):.1f}", "parts": parts,
                     "title": f"{when(r['bucket_start'])}: {numbers}"})
    line = " ".join(f"{(i + 0.5) * step:.1f},{height - 1 - r['failed_attempts'] * scale:.1f}"
                    for i, r in enumerate(rows))
    busy = [r for r in rows if any(r[n] for n in counts)]
    return {"width": width, "height": height, "top": top, "bars": bars, "line": line,
            "totals": totals, "busy": busy}
