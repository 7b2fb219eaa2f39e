"""The dashboard's routes, its guard (credential, CSRF) and its view of the role's privileges."""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import json
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import psycopg
from jinja2 import Environment, PackageLoader, select_autoescape
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import _sql

# The functions the pages call, with their argument types: the privilege check asks for each.
FUNCTIONS: dict[str, str] = {
    "jobq_queue_summary": "(interval)",
    "jobq_jobs_page": "(text, text, text, timestamptz, uuid, integer, integer)",
    "jobq_get_job": "(uuid)",
    "jobq_job_status": "(uuid[])",
    "jobq_requeue_dead_letter": "(uuid)",
    "jobq_requeue_dead_letters": "(text, text)",
    "jobq_cancel": "(uuid[], text)",
    "jobq_schedules": "()",
    "jobq_limits": "()",
    "jobq_limit_usage": "()",
}

STATUSES = ("pending", "processing", "succeeded", "failed", "dead_letter", "cancelled")
FINISHED = ("succeeded", "failed", "dead_letter", "cancelled")
REQUEUABLE = ("failed", "dead_letter", "cancelled")
PAGE_SIZE = 50
# How many finished jobs a filtered page examines at most (jobq_jobs_page's scan_limit): a
# filter that matches few of ten million jobs answers in milliseconds, with a link to search on.
SCAN_LIMIT = 10_000
# How far back the overview counts succeeded jobs for its throughput.
RECENT = timedelta(minutes=5)
CSRF_COOKIE = "jobq_csrf"
STATIC = {"jobq.css": "text/css; charset=utf-8", "jobq.js": "text/javascript; charset=utf-8"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


@dataclass(frozen=True)
class Credentials:
    """HTTP Basic credentials every request must present (compared in constant time)."""

    user: str
    password: str

    @classmethod
    def parse(cls, value: str) -> Credentials:
        """``USER:PASSWORD``; both parts non-empty."""
        user, sep, password = value.partition(":")
        if not sep or not user or not password:
            raise ValueError("a credential is USER:PASSWORD, both non-empty")
        return cls(user, password)

    def accepts(self, header: str | None) -> bool:
        if not header or not header.lower().startswith("basic "):
            return False
        try:
            given = base64.b64decode(header[6:].strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        expected = f"{self.user}:{self.password}".encode()
        return hmac.compare_digest(given, expected)


def parse_bind(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets) -> (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--bind takes HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# The names the dashboard answers to by default: this machine's. A page elsewhere whose name
# is made to resolve to 127.0.0.1 (DNS rebinding) sends its own name as Host, so the browser's
# same-origin rule would let it read the pages and post the forms: a request whose Host (or,
# for a state-changing one, whose Origin) names another host is refused.
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def host_name(value: str) -> str | None:
    """The host name of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``),
    lower-case, or None when it is malformed."""
    value = value.strip().lower()
    if not value or any(c.isspace() or c in "/@?#\\" for c in value):
        return None
    if value.startswith("["):
        end = value.find("]")
        rest = value[end + 1:] if end > 1 else None
        if rest is None or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return None
        return value[1:end]
    name, sep, port = value.partition(":")
    if sep and not port.isdigit():
        return None
    return name.rstrip(".") or None


class _Guard:
    """Refuses a request whose ``Host`` is not one of the allowed host names (421), or a
    state-changing one whose ``Origin`` is not (403); asks for the credential (when one is
    set); adds the security headers to every response. The CSRF token is checked by the POST
    routes themselves (they need the form)."""

    def __init__(
        self, app: ASGIApp, credentials: Credentials | None, allowed_hosts: frozenset[str]
    ) -> None:
        self.app = app
        self.credentials = credentials
        self.allowed_hosts = allowed_hosts

    def _allowed(self, name: str | None) -> bool:
        return name is not None and ("*" in self.allowed_hosts or name in self.allowed_hosts)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int, why: str
    ) -> None:
        refused = Response(why + "\n", status_code=status, media_type="text/plain")
        await refused(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if not self._allowed(host_name(host)):
            await self._refuse(
                scope, receive, send, 421,
                "the jobq dashboard does not answer to this host name (jobq web "
                "--allowed-host NAME adds one)",
            )
            return
        if scope.get("method", "GET") not in _SAFE_METHODS:
            origin = headers.get(b"origin")
            if origin is not None:
                parts = urlsplit(origin.decode("latin-1"))
                if parts.scheme not in ("http", "https") or not self._allowed(
                    host_name(parts.netloc)
                ):
                    await self._refuse(
                        scope, receive, send, 403,
                        "the jobq dashboard refuses a change requested by another site",
                    )
                    return
        if self.credentials is not None:
            raw = headers.get(b"authorization")
            if not self.credentials.accepts(raw.decode("latin-1") if raw else None):
                denied = Response(
                    "the jobq dashboard needs its credential\n",
                    status_code=401,
                    headers={"WWW-Authenticate": 'Basic realm="jobq", charset="UTF-8"'},
                    media_type="text/plain",
                )
                await denied(scope, receive, send)
                return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [
                    (k.lower().encode(), v.encode())
                    for k, v in SECURITY_HEADERS.items()
                    if k.lower().encode() not in names
                ]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class NotInstalled(Exception):
    """None of the functions the pages call exist where the dashboard looks for them."""

    def __init__(self, schema: str | None) -> None:
        where = f"schema {schema}" if schema else "the connection's search_path"
        super().__init__(
            f"jobq is not installed in {where} (run jobq migrate, or give the schema)"
        )


class _Sample:
    """One look at the queues, kept for the overview's chart."""

    __slots__ = ("at", "available", "processing", "scheduled")

    def __init__(self, at: float, available: int, processing: int, scheduled: int) -> None:
        self.at = at
        self.available = available
        self.processing = processing
        self.scheduled = scheduled


class Dashboard:
    """What the routes share: the pool, the statements, the samples of the chart."""

    def __init__(
        self,
        source: str | ConnectionPool,
        schema: str | None,
        refresh_seconds: float,
    ) -> None:
        self._owned = isinstance(source, str)
        self._dsn = source if isinstance(source, str) else None
        self._pool: ConnectionPool | None = None if isinstance(source, str) else source
        self._lock = threading.Lock()
        self.schema = schema
        self._sql = None if schema is None else _sql.statements(schema)
        self._where = schema
        self.refresh_seconds = refresh_seconds
        self.samples: deque[_Sample] = deque(maxlen=120)
        self.env = Environment(
            loader=PackageLoader("pgq_client.web", "templates"),
            autoescape=select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["when"] = _when
        self.env.filters["age"] = _age
        self.env.filters["span"] = _span
        self.env.filters["pretty_json"] = _pretty_json

    @property
    def sql(self) -> _sql.Statements:
        """The statements, qualified with the schema (found once when none was given)."""
        if self._sql is None:
            self._sql = _sql.statements(self.where())
        return self._sql

    def where(self) -> str:
        """The schema: the given one, else the one the search_path of the given pool's
        connections, or of the DSN's own settings, finds (the dashboard's own connections run
        with ``search_path = pg_catalog, pg_temp``)."""
        if self._where is None:
            if self._dsn is not None:
                self._where = _sql.schema_of_dsn(self._dsn)
            else:
                with self.pool().connection() as conn:
                    self._where = _sql.find_schema(conn)
        return self._where

    def pool(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None:
                assert self._dsn is not None
                # Opened on first use rather than in a lifespan handler: a Starlette app
                # mounted in another one never sees its own lifespan events.
                self._pool = ConnectionPool(
                    self._dsn,
                    min_size=1,
                    max_size=4,
                    kwargs={"autocommit": True, **_sql.connect_kwargs(self._dsn)},
                    open=True,
                    name="jobq-web",
                )
            return self._pool

    def close(self) -> None:
        with self._lock:
            if self._owned and self._pool is not None:
                self._pool.close()
                self._pool = None

    def query(self, statement: Any, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        with self.pool().connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(statement, params)
            return cur.fetchall()

    def role(self) -> tuple[str, dict[str, bool]]:
        """The connected role and, per function the pages use, whether it may call it."""
        with self.pool().connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(
                _sql.FUNCTION_PRIVILEGES,
                {
                    "names": list(FUNCTIONS),
                    "signatures": list(FUNCTIONS.values()),
                    "schema": self.where(),
                },
            )
            found = {r["name"]: r["allowed"] for r in cur.fetchall()}
            if all(v is None for v in found.values()):
                raise NotInstalled(self.schema)
            allowed = {name: bool(v) for name, v in found.items()}
            cur.execute("SELECT current_user::pg_catalog.text AS role")
            row = cur.fetchone()
        return (row["role"] if row else "?"), allowed

    def record(self, rows: Sequence[Mapping[str, Any]]) -> None:
        now = time.time()
        if self.samples and now - self.samples[-1].at < 1.0:
            return
        self.samples.append(
            _Sample(
                now,
                sum(int(r["available"]) for r in rows),
                sum(int(r["processing"]) for r in rows),
                sum(int(r["scheduled"]) for r in rows),
            )
        )


# -- formatting --------------------------------------------------------------------------------


def _when(value: datetime | None) -> str:
    if value is None:
        return "-"
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _span(value: timedelta | None) -> str:
    """A rate limit's window as people write it: 1s, 90s, 1m, 1h 30m, 1d."""
    if value is None:
        return ""
    seconds = value.total_seconds()
    if seconds < 60 or seconds % 60:
        return f"{seconds:g}s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes}m"
    if minutes % 1440 == 0:
        return f"{minutes // 1440}d"
    hours, rest = divmod(minutes, 60)
    return f"{hours}h" + (f" {rest}m" if rest else "")


def _age(value: datetime | None) -> str:
    if value is None:
        return "-"
    seconds = int((datetime.now(timezone.utc) - value).total_seconds())
    future = seconds < 0
    seconds = abs(seconds)
    if seconds < 60:
        text = f"{seconds}s"
    elif seconds < 3600:
        text = f"{seconds // 60}m {seconds % 60}s"
    elif seconds < 86400:
        text = f"{seconds // 3600}h {seconds % 3600 // 60}m"
    else:
        text = f"{seconds // 86400}d {seconds % 86400 // 3600}h"
    return f"in {text}" if future else f"{text} ago"


def _pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def chart(samples: Sequence[_Sample], width: int = 600, height: int = 120) -> dict[str, Any]:
    """Polylines (SVG points) of available and processing jobs over the samples."""
    if len(samples) < 2:
        return {"width": width, "height": height, "lines": [], "top": 0, "span": 0}
    t0, t1 = samples[0].at, samples[-1].at
    span = max(t1 - t0, 1e-9)
    top = max(1, *(max(s.available, s.processing) for s in samples))

    def points(values: Sequence[int]) -> str:
        return " ".join(
            f"{(s.at - t0) / span * width:.1f},{height - v / top * (height - 4) - 2:.1f}"
            for s, v in zip(samples, values, strict=True)
        )

    return {
        "width": width,
        "height": height,
        "top": top,
        "span": int(span),
        "lines": [
            {"name": "available", "points": points([s.available for s in samples])},
            {"name": "processing", "points": points([s.processing for s in samples])},
        ],
    }


# -- request helpers ---------------------------------------------------------------------------


def _base(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def _csrf_token(request: Request) -> tuple[str, bool]:
    """The CSRF token of this browser (its cookie), and whether it must be set now."""
    token = request.cookies.get(CSRF_COOKIE, "")
    if len(token) >= 32 and token.replace("-", "").replace("_", "").isalnum():
        return token, False
    return secrets.token_urlsafe(32), True


def _same_origin(request: Request) -> bool:
    """A POST's Origin (or Referer), when the browser sends one, names this host."""
    host = request.headers.get("host", "")
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == host


def _next_url(request: Request, value: str | None, default: str) -> str:
    """Where a POST returns to: a path of this dashboard only (never another site)."""
    base = _base(request)
    if value and value.startswith(base + "/") and not value.startswith("//") and "\\" not in value:
        return value
    return default


def _parse_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def _cursor(value: str | None) -> tuple[datetime, uuid.UUID] | None:
    """``after`` = ``<sort_at ISO 8601>,<id>`` (the last row of the previous page)."""
    if not value:
        return None
    at, _, ident = value.rpartition(",")
    try:
        when = datetime.fromisoformat(at)
        job_id = uuid.UUID(ident)
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return when, job_id


def _filter(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def create_app(
    source: str | ConnectionPool,
    *,
    schema: str | None = None,
    credentials: Credentials | None = None,
    refresh_seconds: float = 2.0,
    allowed_hosts: Sequence[str] = (),
) -> Starlette:
    """The dashboard as an ASGI application.

    ``source`` is a DSN (the app opens a small pool on first use and closes it on shutdown) or
    a ``psycopg_pool.ConnectionPool`` of yours (its connections must be in autocommit mode, or
    the app leaves them idle in a transaction between requests; the app never closes it).
    ``schema`` qualifies every call (default: the connection's search_path).
    ``credentials``: HTTP Basic credentials every request must present; required by
    ``jobq web`` on any bind other than localhost. ``allowed_hosts``: the host names, besides
    :data:`LOCAL_HOSTS`, that a request's ``Host`` (and a state-changing request's ``Origin``)
    may name (``"*"``: any, for an application that checks ``Host`` itself); others are
    refused (421, 403), which stops a page elsewhere that rebinds its name to this machine.
    """
    board = Dashboard(source, schema, refresh_seconds)

    def render(
        request: Request, template: str, status_code: int = 200, **context: Any
    ) -> HTMLResponse:
        token, fresh = _csrf_token(request)
        role, allowed = context.pop("_role", (None, None)) or (None, None)
        page = board.env.get_template(template).render(
            base=_base(request),
            csrf=token,
            role=role,
            can=allowed or {},
            request=request,
            refresh=board.refresh_seconds,
            notice=request.query_params.get("notice"),
            **context,
        )
        response = HTMLResponse(page, status_code=status_code)
        if fresh:
            response.set_cookie(
                CSRF_COOKIE,
                token,
                httponly=True,
                samesite="strict",
                path=_base(request) or "/",
                secure=request.url.scheme == "https",
            )
        return response

    def error_page(request: Request, exc: psycopg.Error, role: Any = None) -> HTMLResponse:
        state = getattr(exc, "sqlstate", None)
        status = 403 if state == "42501" else 400 if state and state.startswith("22") else 500
        diag = getattr(exc, "diag", None)
        message = getattr(diag, "message_primary", None) or type(exc).__name__
        return render(
            request,
            "error.html",
            status_code=status,
            _role=role,
            sqlstate=state,
            message=message,
        )

    def overview(request: Request) -> Response:
        try:
            role = board.role()
            rows: list[dict[str, Any]] = []
            if role[1].get("jobq_queue_summary"):
                rows = board.query(board.sql.queue_summary, {"recent": RECENT})
                board.record(rows)
        except psycopg.Error as exc:
            return error_page(request, exc)
        window = RECENT.total_seconds() / 60
        for r in rows:
            r["per_minute"] = r["succeeded_recent"] / window
        totals = {
            k: sum(int(r[k]) for r in rows)
            for k in ("available", "scheduled", "processing", "failed", "dead_letter",
                      "cancelled", "succeeded_recent")
        }
        template = "overview_live.html" if request.query_params.get("partial") else "overview.html"
        return render(
            request,
            template,
            _role=role,
            rows=rows,
            totals=totals,
            window_minutes=int(window),
            chart=chart(list(board.samples)),
        )

    def jobs(request: Request, dead_letters: bool = False) -> Response:
        params = request.query_params
        status = "dead_letter" if dead_letters else (params.get("status") or "pending")
        if status not in STATUSES:
            return render(
                request,
                "error.html",
                status_code=400,
                sqlstate=None,
                message=f"status must be one of {', '.join(STATUSES)}, got {status!r}",
            )
        queue, job_type = _filter(params.get("queue")), _filter(params.get("job_type"))
        cursor = _cursor(params.get("after"))
        if params.get("after") and cursor is None:
            return render(
                request, "error.html", status_code=400, sqlstate=None,
                message="after must be <sort_at ISO 8601 with offset>,<job id>",
            )
        try:
            role = board.role()
            rows: list[dict[str, Any]] = []
            if role[1].get("jobq_jobs_page"):
                rows = board.query(
                    board.sql.jobs_page,
                    {
                        "status": status,
                        "queue": queue,
                        "job_type": job_type,
                        "after_at": cursor[0] if cursor else None,
                        "after_id": cursor[1] if cursor else None,
                        # One more than shown: whether a next page exists.
                        "max_rows": PAGE_SIZE + 1,
                        "scan_limit": SCAN_LIMIT,
                    },
                )
        except psycopg.Error as exc:
            return error_page(request, exc)
        stopped = rows.pop() if rows and not rows[-1]["matches"] else None
        more = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        filters = {k: v for k, v in (("queue", queue), ("job_type", job_type)) if v}
        path = "/dead-letters" if dead_letters else "/jobs"
        first_query: dict[str, str] = {} if dead_letters else {"status": status}
        first_query.update(filters)

        def link(**extra: str) -> str:
            query = urlencode({**first_query, **extra})
            return f"{_base(request)}{path}" + (f"?{query}" if query else "")

        first_url = link()
        here = link(after=params["after"]) if cursor is not None else first_url
        next_url = None
        if more and rows:
            last = rows[-1]
            next_url = link(after=f"{last['sort_at'].isoformat()},{last['id']}")
        further_url = None
        if stopped is not None:
            further_url = link(after=f"{stopped['sort_at'].isoformat()},{stopped['id']}")
        return render(
            request,
            "jobs.html",
            _role=role,
            rows=rows,
            status=status,
            statuses=STATUSES,
            queue=queue or "",
            job_type=job_type or "",
            dead_letters=dead_letters,
            paged=cursor is not None,
            next_url=next_url,
            further_url=further_url,
            stopped=stopped,
            scan_limit=SCAN_LIMIT,
            first_url=first_url,
            here=here,
            requeuable=REQUEUABLE,
        )

    def dead_letter_page(request: Request) -> Response:
        return jobs(request, dead_letters=True)

    def job(request: Request) -> Response:
        job_id = _parse_uuid(request.path_params["job_id"])
        if job_id is None:
            return render(
                request, "error.html", status_code=404, sqlstate=None,
                message="no such job: not a job id",
            )
        try:
            role = board.role()
            row: dict[str, Any] | None = None
            full = bool(role[1].get("jobq_get_job"))
            if full:
                found = board.query(board.sql.get_job, {"job_id": job_id})
                row = found[0] if found else None
            elif role[1].get("jobq_job_status"):
                found = board.query(board.sql.job_status, {"job_ids": [job_id]})
                row = found[0] if found else None
        except psycopg.Error as exc:
            return error_page(request, exc)
        if row is None:
            return render(
                request, "error.html", status_code=404, _role=role, sqlstate=None,
                message=f"no job {job_id}" if full or role[1].get("jobq_job_status")
                else f"role {role[0]} may call neither jobq_get_job nor jobq_job_status",
            )
        return render(
            request,
            "job.html",
            _role=role,
            job=row,
            full=full,
            timeline=_timeline(row) if full else [],
            requeuable=REQUEUABLE,
            here=f"{_base(request)}/jobs/{job_id}",
        )

    def schedules(request: Request) -> Response:
        try:
            role = board.role()
            rows = (
                board.query(board.sql.schedules, {}) if role[1].get("jobq_schedules") else []
            )
        except psycopg.Error as exc:
            return error_page(request, exc)
        return render(request, "schedules.html", _role=role, rows=rows)

    def limits(request: Request) -> Response:
        try:
            role = board.role()
            rows = board.query(board.sql.limits, {}) if role[1].get("jobq_limits") else []
            usage = (
                board.query(board.sql.limit_usage, {})
                if role[1].get("jobq_limit_usage")
                else []
            )
        except psycopg.Error as exc:
            return error_page(request, exc)
        return render(request, "limits.html", _role=role, rows=rows, usage=usage)

    async def form(request: Request) -> dict[str, str] | None:
        """The POST's fields, or None when its CSRF token or origin is wrong."""
        body = (await request.body()).decode("utf-8", "replace")
        fields = {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}
        cookie = request.cookies.get(CSRF_COOKIE, "")
        given = fields.get("csrf", "")
        if not cookie or not hmac.compare_digest(cookie.encode(), given.encode()):
            return None
        if not _same_origin(request):
            return None
        return fields

    def forbidden(request: Request, why: str) -> HTMLResponse:
        return render(request, "error.html", status_code=403, sqlstate=None, message=why)

    def action(
        run: Callable[[Request, dict[str, str]], Response],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            fields = await form(request)
            if fields is None:
                return forbidden(
                    request,
                    "refused: the form's CSRF token is missing or wrong (reload the page and "
                    "try again)",
                )
            return await run_in_threadpool(run, request, fields)

        return endpoint

    def _act(
        request: Request,
        fields: dict[str, str],
        function: str,
        call: Callable[[], str],
        default: str,
    ) -> Response:
        try:
            role = board.role()
            if not role[1].get(function):
                return forbidden(request, f"role {role[0]} may not call {function}")
            notice = call()
        except psycopg.Error as exc:
            return error_page(request, exc)
        target = _next_url(request, fields.get("next"), default)
        joiner = "&" if "?" in target else "?"
        return RedirectResponse(f"{target}{joiner}{urlencode({'notice': notice})}", 303)

    def requeue(request: Request, fields: dict[str, str]) -> Response:
        job_id = _parse_uuid(request.path_params["job_id"])
        if job_id is None:
            return render(request, "error.html", status_code=404, sqlstate=None,
                          message="no such job: not a job id")

        def call() -> str:
            done = board.query(board.sql.requeue_dead_letter, {"job_id": job_id})
            ok = bool(done and done[0]["requeued"])
            return f"requeued {job_id}" if ok else f"{job_id} was not requeued (not finished)"

        return _act(request, fields, "jobq_requeue_dead_letter", call,
                    f"{_base(request)}/jobs/{job_id}")

    def cancel(request: Request, fields: dict[str, str]) -> Response:
        job_id = _parse_uuid(request.path_params["job_id"])
        if job_id is None:
            return render(request, "error.html", status_code=404, sqlstate=None,
                          message="no such job: not a job id")

        def call() -> str:
            done = board.query(
                board.sql.cancel,
                {"job_ids": [job_id], "reason": fields.get("reason") or "cancelled from jobq web"},
            )
            return f"{job_id}: {done[0]['status']}" if done else f"no job {job_id}"

        return _act(request, fields, "jobq_cancel", call, f"{_base(request)}/jobs/{job_id}")

    def requeue_all(request: Request, fields: dict[str, str]) -> Response:
        def call() -> str:
            done = board.query(
                board.sql.requeue_dead_letters,
                {
                    "job_type": _filter(fields.get("job_type")),
                    "queue": _filter(fields.get("queue")),
                },
            )
            return f"requeued {done[0]['requeued'] if done else 0} job(s)"

        return _act(request, fields, "jobq_requeue_dead_letters", call,
                    f"{_base(request)}/dead-letters")

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found\n", status_code=404, media_type="text/plain")
        data = resources.files("pgq_client.web").joinpath("static").joinpath(name).read_bytes()
        return Response(data, media_type=STATIC[name], headers={"Cache-Control": "max-age=300"})

    async def not_installed(request: Request, exc: Exception) -> Response:
        return render(request, "error.html", status_code=500, sqlstate=None, message=str(exc))

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        board.close()

    app = Starlette(
        routes=[
            Route("/", overview, name="overview"),
            Route("/jobs", jobs, name="jobs"),
            Route("/jobs/{job_id}", job, name="job"),
            Route("/jobs/{job_id}/requeue", action(requeue), methods=["POST"]),
            Route("/jobs/{job_id}/cancel", action(cancel), methods=["POST"]),
            Route("/dead-letters", dead_letter_page, name="dead_letters"),
            Route("/dead-letters/requeue", action(requeue_all), methods=["POST"]),
            Route("/schedules", schedules, name="schedules"),
            Route("/limits", limits, name="limits"),
            Route("/static/{name}", static, name="static"),
        ],
        middleware=[
            Middleware(
                _Guard,
                credentials=credentials,
                allowed_hosts=frozenset(
                    [*LOCAL_HOSTS, *(h.strip().lower().strip("[]") for h in allowed_hosts)]
                ),
            )
        ],
        exception_handlers={NotInstalled: not_installed},
        lifespan=lifespan,
    )
    app.state.jobq = board
    return app


def _timeline(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The job's life as far as its row tells it, oldest first."""
    events: list[dict[str, Any]] = []
    if job.get("created_at"):
        events.append({"at": job["created_at"], "what": "enqueued", "detail": ""})
    if job.get("available_at") and job["available_at"] != job.get("created_at"):
        events.append({"at": job["available_at"], "what": "available", "detail": ""})
    for e in job.get("errors") or []:
        at = e.get("at")
        try:
            when = datetime.fromisoformat(at) if isinstance(at, str) else None
        except ValueError:
            when = None
        events.append(
            {
                "at": when,
                "what": f"attempt {e.get('attempt', '?')} failed",
                "detail": f"{e.get('worker') or ''}: {e.get('error') or ''}".strip(": "),
            }
        )
    if job.get("locked_at") and job.get("status") == "processing":
        events.append(
            {"at": job["locked_at"], "what": f"claimed (attempt {job.get('attempts')})",
             "detail": job.get("locked_by") or ""}
        )
    if job.get("cancel_requested_at"):
        events.append({"at": job["cancel_requested_at"], "what": "cancel requested", "detail": ""})
    if job.get("finished_at"):
        events.append({"at": job["finished_at"], "what": job.get("status"), "detail": ""})
    far = datetime.max.replace(tzinfo=timezone.utc)
    events.sort(key=lambda e: e["at"] or far)
    return events
