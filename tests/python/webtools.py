"""What the dashboard's tests share: roles, seeded jobs, a server on a free port."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from tests.helpers import create_role, drop_role

from pgq_client import Queue


@contextmanager
def login_role(admin_dsn: str, dsn: str, level: str | None) -> Iterator[str]:
    """A login role granted ``level`` (None: nothing at all); yields its DSN."""
    name = create_role(admin_dsn, level, dsn=dsn, prefix="jobq_web")  # type: ignore[arg-type]
    try:
        yield make_conninfo(dsn, user=name)
    finally:
        drop_role(admin_dsn, name)


def dead_letter(dsn: str, job_type: str = "flaky", queue: str = "default",
                errors: tuple[str, ...] = ("first failure", "second failure")) -> uuid.UUID:
    """A job that failed once per error given, through the worker's functions, the last
    failure sending it to dead_letter."""
    with Queue(dsn) as q:
        job_id = q.enqueue(job_type, {"n": 1}, max_attempts=len(errors), queue=queue)
    with psycopg.connect(dsn, autocommit=True) as c:
        for error in errors:
            c.execute(
                "UPDATE jobq_jobs SET available_at = now() WHERE id = %s::uuid", (job_id,)
            )
            claimed = c.execute(
                "SELECT id FROM jobq_dequeue(%s::text, job_types => ARRAY[%s::text],"
                " queues => ARRAY[%s::text])",
                ("test-worker", job_type, queue),
            ).fetchall()
            assert claimed == [(job_id,)]
            c.execute(
                "SELECT jobq_fail(%s::uuid, %s::text, %s::text, backoff => '0'::interval)",
                (job_id, "test-worker", error),
            )
    return job_id


def status_of(dsn: str, job_id: uuid.UUID) -> str:
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute("SELECT status"
                        " FROM jobq_all_jobs WHERE id = %s::uuid", (job_id,)).fetchone()
    assert row is not None
    return str(row[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve an ASGI app with uvicorn in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped before it started"
        assert time.monotonic() < deadline, "uvicorn did not start within 30 s"
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
