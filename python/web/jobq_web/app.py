"""The dashboard's application: what its routes share (a Queue over its pool, the role's
privileges, the chart's samples), its routes, its guard and its error pages."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import psycopg
from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from pgq_client import HealthRow, JobqError, Queue, connect_kwargs
from pgq_client.installer import drift

from . import actions, views
from .guard import LOCAL_HOSTS, Credentials, Guard, is_loopback, parse_bind
from .helpers import error_page

# Dashboard, FUNCTIONS and NotInstalled serve `jobq web --check` (serve.role_report).
__all__ = ["FUNCTIONS", "Credentials", "Dashboard", "NotInstalled", "create_app", "is_loopback",
           "parse_bind"]

# The functions the pages call, with their argument types: the privilege check asks for each.
FUNCTIONS: dict[str, str] = {
    "jobq_queue_summary": "(interval)",
    "jobq_jobs_page": "(text, text, text, timestamptz, uuid, integer, integer)",
    "jobq_get_job": "(uuid)",
    "jobq_job_status": "(uuid[])",
    "jobq_requeue_dead_letters": "(text, text, boolean, text)",
    "jobq_cancel": "(uuid[], text)",
    "jobq_schedules": "()",
    "jobq_limits": "()",
    "jobq_limit_usage": "()",
    "jobq_set_limit": "(text, integer, integer, interval, text)",
    "jobq_queues": "()",
    "jobq_pause": "(text, text)",
    "jobq_resume": "(text)",
    "jobq_workers_summary": "()",
    "jobq_job_graph": "(uuid)",
    "jobq_find_jobs": "(uuid, text, text, text, text[], timestamptz, timestamptz, timestamptz,"
                      " timestamptz, jsonb, uuid, integer, integer)",
    "jobq_act_on_jobs": "(text, uuid[], text)",
    "jobq_audit_log": "(bigint, integer)",
    "jobq_error_summary": "(interval, integer)",
    "jobq_throughput": "(interval, interval)",
    "jobq_names": "()",
    "jobq_health": "(interval, interval, interval)",
    "jobq_schedule": "(text, text, text, jsonb, text, text, integer, integer, text, boolean)",
    "jobq_unschedule": "(text)",
    "jobq_schedule_run_now": "(text)",
}


class NotInstalled(JobqError):
    """None of the functions the pages call exist where the dashboard looks for them."""

    def __init__(self, schema: str | None) -> None:
        where = f"schema {schema}" if schema else "the connection's search_path"
        super().__init__(f"jobq is not installed in {where} (run jobq migrate, or give the schema)")


class Role(NamedTuple):
    """The connected role and, per function of :data:`FUNCTIONS`, whether it may call it."""

    name: str
    can: dict[str, bool]


@dataclass
class Sample:
    """One look at the queues (when, jobs available, jobs processing), for the chart."""

    at: float
    available: int
    processing: int


class Dashboard:
    """The pool (the given one, or one opened on first use from the DSN), the Queue that runs
    every call on it (given no schema, the Queue finds the one the search_path of the DSN's
    own settings, or of the given pool's connections, finds), and the chart's samples."""

    def __init__(
        self, source: str | ConnectionPool, schema: str | None, refresh_seconds: float = 2.0
    ) -> None:
        self._dsn = source if isinstance(source, str) else None
        self._pool = None if isinstance(source, str) else source
        self._queue: Queue | None = None
        self._lock = threading.Lock()
        self.schema = schema
        self.refresh_seconds = refresh_seconds
        self.samples: deque[Sample] = deque(maxlen=120)

    def queue(self) -> Queue:
        with self._lock:
            if self._queue is None:
                # The pool is opened on first use rather than in a lifespan handler: a Starlette
                # app mounted in another one never sees its own lifespan events.
                if self._dsn is not None:
                    kwargs = {"autocommit": True, **connect_kwargs(self._dsn)}
                    self._pool = ConnectionPool(self._dsn, min_size=1, max_size=4, kwargs=kwargs,
                                                open=True, name="jobq-web")
                self._queue = Queue(self._pool, schema=self.schema)
            return self._queue

    def doctor(self, health: bool) -> list[HealthRow]:
        """What ``jobq doctor`` warns of: ``jobq_health``'s findings that are not ok (when
        ``health``: the role may call it), who else controls the schema and the functions that
        differ from this jobq's files, read from the catalogue, in a transaction of its own."""
        queue = self.queue()
        rows = [h for h in queue.health() if h.severity != "ok"] if health else []
        where = queue.schema or "public"
        assert self._pool is not None
        with self._pool.connection() as conn, conn.transaction():
            control = drift.control_findings(conn, where)
            changed = drift.function_drift(conn, where)
        rows += [HealthRow("schema_control", None, "warning", 1.0, c) for c in control]
        rows += [HealthRow("function_definition", None, "warning", 1.0, f"{name} {what}")
                 for name, what in changed]
        return rows

    def role(self) -> Role:
        """:class:`NotInstalled` when none of the functions exists."""
        name, found = self.queue().function_privileges(FUNCTIONS)
        if all(allowed is None for allowed in found.values()):
            raise NotInstalled(self.schema)
        return Role(name, {function: bool(allowed) for function, allowed in found.items()})

    def record(self, rows: Sequence[dict[str, Any]]) -> None:
        now = time.time()
        if not self.samples or now - self.samples[-1].at >= 1.0:
            available = sum(int(r["available"]) for r in rows)
            self.samples.append(Sample(now, available, sum(int(r["processing"]) for r in rows)))

    def close(self) -> None:
        with self._lock:
            if self._dsn is not None and self._pool is not None:
                self._pool.close()
                self._pool = self._queue = None


def create_app(
    source: str | ConnectionPool,
    *,
    schema: str | None = None,
    credentials: Credentials | None = None,
    refresh_seconds: float = 2.0,
    allowed_hosts: Sequence[str] = (),
) -> Starlette:
    """The dashboard as an ASGI application, over a DSN (a pool of its own, opened on first use,
    closed on shutdown) or a ``psycopg_pool.ConnectionPool`` of yours (left open).
    ``credentials``: what every request must present. ``allowed_hosts``: the host names,
    besides :data:`LOCAL_HOSTS`, that a request's ``Host`` (and a change's ``Origin``) may
    name (``"*"``: any, for an application that checks ``Host`` itself)."""
    board = Dashboard(source, schema, refresh_seconds)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        board.close()

    hosts = frozenset([*LOCAL_HOSTS, *(h.strip().lower().strip("[]") for h in allowed_hosts)])
    app = Starlette(
        routes=[
            Route("/", views.overview, name="overview"),
            Route("/jobs", views.jobs, name="jobs"),
            Route("/jobs/{job_id:uuid}", views.job, name="job"),
            Route("/jobs/{job_id:uuid}/requeue", actions.requeue, methods=["POST"]),
            Route("/jobs/{job_id:uuid}/cancel", actions.cancel, methods=["POST"]),
            Route("/dead-letters", views.dead_letters, name="dead_letters"),
            Route("/dead-letters/requeue", actions.requeue_all, methods=["POST"]),
            Route("/queues/pause", actions.pause, methods=["POST"]),
            Route("/queues/resume", actions.resume, methods=["POST"]),
            Route("/schedules", views.schedules, name="schedules"),
            Route("/limits", views.limits, name="limits"),
            Route("/limits/set", actions.set_limit, methods=["POST"]),
            Route("/limits/remove", actions.remove_limit, methods=["POST"]),
            Route("/workers", views.workers, name="workers"),
            Route("/find", views.find, name="find"),
            Route("/jobs/act", actions.act, methods=["POST"]),
            Route("/audit", views.audit, name="audit"),
            Route("/schedules/act", actions.schedule, methods=["POST"]),
            Route("/schedules/run", actions.run_schedule, methods=["POST"]),
            Route("/schedules/delete", actions.unschedule, methods=["POST"]),
            Mount("/static", StaticFiles(packages=[("jobq_web", "static")]), name="static"),
        ],
        middleware=[Middleware(Guard, credentials=credentials, allowed_hosts=hosts)],
        exception_handlers={e: error_page for e in (404, JobqError, psycopg.Error, ValueError)},
        lifespan=lifespan,
    )
    app.state.jobq = board
    return app
