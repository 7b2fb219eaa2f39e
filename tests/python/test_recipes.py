"""The recipes of examples/ against a real database: for each, a rollback leaves neither the
order nor its job, and a commit makes both, the job one that a Worker then runs.

Django and the command-line entry points run in subprocesses (Django's settings are global to
a process, and each test has a database of its own); the rest in this process.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from tests.helpers import create_role, drop_role

from pgq_client import Worker, grants

pytestmark = pytest.mark.slow  # the recipes' frameworks and their processes

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

Conn = psycopg.Connection[Any]


@pytest.fixture
def orders(dsn: str, conn: Conn) -> str:
    """The test's database with the recipes' application table."""
    conn.execute((EXAMPLES / "orders.sql").read_text())
    return dsn


def _run(args: list[str], dsn: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
    env["JOBQ_DSN"] = dsn
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        args, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _state(conn: Conn) -> tuple[int, list[tuple[str, Any, str]]]:
    orders = conn.execute("SELECT count(*) FROM orders").fetchone()
    assert orders is not None
    jobs = conn.execute(
        "SELECT job_type, payload, status FROM jobq_all_jobs ORDER BY payload ->> 'subject'"
    ).fetchall()
    return int(orders[0]), jobs


def _run_jobs(dsn: str, conn: Conn, handlers: dict[str, Any] | None = None) -> None:
    """A Worker runs what the recipe enqueued; every job succeeds."""
    if handlers is None:
        from examples.handlers import HANDLERS

        handlers = dict(HANDLERS)
    Worker(dsn, handlers, concurrency=2).run(burst=True)
    statuses = [row[0] for row in conn.execute("SELECT status FROM jobq_all_jobs")]
    assert statuses and set(statuses) == {"succeeded"}, statuses


def _uri(dsn: str) -> str:
    """The test's key=value DSN as the ``postgresql://`` URI asyncpg wants."""
    p = conninfo_to_dict(dsn)
    user = quote(str(p.get("user", "")), safe="")
    return f"postgresql://{user}@{p['host']}:{p['port']}/{p['dbname']}"


def _confirmation(order_id: int, email: str = "a@example.com") -> dict[str, str]:
    return {"to": email, "subject": f"Order {order_id} confirmed"}


# -- psql -----------------------------------------------------------------------------------------


def _psql(dsn: str, commit: str) -> subprocess.CompletedProcess[str]:
    psql = shutil.which("psql")
    if psql is None:
        pytest.skip("psql is not installed")
    return _run(
        [psql, "-X", "-q", "-v", "item=book", "-v", "email=a@example.com", "-v",
         f"commit={commit}", "-f", str(EXAMPLES / "enqueue.psql"), dsn],
        dsn,
    )


def test_psql_script_rollback_leaves_no_job(orders: str, conn: Conn) -> None:
    done = _psql(orders, "false")
    assert done.returncode == 0, done.stderr
    assert "rolled back" in done.stdout
    assert _state(conn) == (0, [])


def test_psql_script_commit_makes_a_job_a_worker_runs(orders: str, conn: Conn) -> None:
    done = _psql(orders, "true")
    assert done.returncode == 0, done.stderr
    assert "committed with job" in done.stdout
    assert _state(conn) == (1, [("send_email", _confirmation(1), "pending")])
    _run_jobs(orders, conn)


# -- Django ---------------------------------------------------------------------------------------


def test_django_atomic_rollback_leaves_no_job(orders: str, conn: Conn) -> None:
    done = _run(
        [sys.executable, "-m", "examples.django_enqueue", "book", "a@example.com", "--refuse"],
        orders,
    )
    assert done.returncode == 1, done.stderr
    assert "rolled back, no job" in done.stdout
    assert _state(conn) == (0, [])


def test_django_atomic_commit_makes_a_job_a_worker_runs(orders: str, conn: Conn) -> None:
    done = _run([sys.executable, "-m", "examples.django_enqueue", "book", "a@example.com"], orders)
    assert done.returncode == 0, done.stderr
    assert "order 1 committed with job" in done.stdout
    assert _state(conn) == (1, [("send_email", _confirmation(1), "pending")])
    _run_jobs(orders, conn)


def test_django_uses_its_psycopg_3_backend() -> None:
    done = subprocess.run(
        [sys.executable, "-c",
         "import examples.django_enqueue, django.db.backends.postgresql.psycopg_any as p;"
         " print(p.is_psycopg3)"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "JOBQ_DSN": "dbname=unused"},
    )
    assert done.stdout.strip() == "True", done.stderr


# -- SQLAlchemy -----------------------------------------------------------------------------------


def test_sqlalchemy_session_rollback_leaves_no_job(orders: str, conn: Conn) -> None:
    from sqlalchemy import create_engine

    from examples.sqlalchemy_enqueue import OrderRefused, place_order, url

    engine = create_engine(url(orders))
    try:
        with pytest.raises(OrderRefused):
            place_order(engine, "book", "a@example.com", refuse=True)
    finally:
        engine.dispose()
    assert _state(conn) == (0, [])


def test_sqlalchemy_session_commit_makes_jobs_a_worker_runs(orders: str, conn: Conn) -> None:
    from sqlalchemy import create_engine

    from examples.sqlalchemy_enqueue import place_order, url

    engine = create_engine(url(orders))
    try:
        order_id, job_id, reminder_id = place_order(engine, "book", "a@example.com")
    finally:
        engine.dispose()
    assert order_id == 1 and job_id != reminder_id
    assert _state(conn) == (
        1,
        [
            ("send_email", {"to": "a@example.com", "subject": "How is your book?"}, "pending"),
            ("send_email", _confirmation(1), "pending"),
        ],
    )
    _run_jobs(orders, conn)


async def test_sqlalchemy_async_session_rollback_leaves_no_job(orders: str, conn: Conn) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    from examples.sqlalchemy_enqueue import OrderRefused, place_order_async, url

    engine = create_async_engine(url(orders))
    try:
        with pytest.raises(OrderRefused):
            await place_order_async(engine, "book", "a@example.com", refuse=True)
    finally:
        await engine.dispose()
    assert _state(conn) == (0, [])


async def test_sqlalchemy_async_session_commit_makes_jobs(orders: str, conn: Conn) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    from examples.sqlalchemy_enqueue import place_order_async, url

    engine = create_async_engine(url(orders))
    try:
        order_id, _, _ = await place_order_async(engine, "pen", "b@example.com")
    finally:
        await engine.dispose()
    count, jobs = _state(conn)
    assert (count, [j[:2] for j in jobs]) == (
        1,
        [
            ("send_email", {"to": "b@example.com", "subject": "How is your pen?"}),
            ("send_email", _confirmation(order_id, "b@example.com")),
        ],
    )


def test_sqlalchemy_async_session_jobs_are_run_by_a_worker(orders: str, conn: Conn) -> None:
    done = _run(
        [sys.executable, "-m", "examples.sqlalchemy_enqueue", "pen", "b@example.com", "--async"],
        orders,
    )
    assert done.returncode == 0, done.stderr
    assert "order 1 committed with jobs" in done.stdout
    _run_jobs(orders, conn)


# -- FastAPI --------------------------------------------------------------------------------------


def test_fastapi_request_transaction_commit_and_rollback(
    orders: str, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from examples.fastapi_app import HANDLERS, app

    monkeypatch.setenv("JOBQ_DSN", orders)
    with TestClient(app) as client:
        refused = client.post("/orders", json={"item": "out of stock", "email": "a@example.com"})
        assert refused.status_code == 409, refused.text
        assert _state(conn) == (0, [])  # the order and its job were rolled back together

        placed = client.post("/orders", json={"item": "book", "email": "a@example.com"})
        assert placed.status_code == 201, placed.text
        body = placed.json()
        assert _state(conn) == (1, [("send_email", _confirmation(body["order_id"]), "pending")])
        stats = client.get("/stats").json()
        assert [(s["job_type"], s["status"], s["jobs"]) for s in stats] == [
            ("send_email", "pending", 1)
        ]
    _run_jobs(orders, conn, HANDLERS)  # an async def handler
    row = conn.execute("SELECT id FROM jobq_all_jobs").fetchone()
    assert row is not None and str(row[0]) == body["job_id"]


def test_fastapi_app_runs_under_the_roles_its_recipe_names(
    admin_dsn: str, orders: str, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a role granted only what docs/recipes.md's FastAPI section names (its `jobq grant`
    lines and its GRANT on orders), every route of the app answers."""
    from fastapi.testclient import TestClient

    from examples.fastapi_app import app

    section = (REPO / "docs" / "recipes.md").read_text().split("## FastAPI", 1)[1]
    section = section.split("\n## ", 1)[0]
    levels = re.findall(r"^jobq grant app_api --as (\w+)", section, re.M)
    table = re.search(r"^psql -c '(GRANT [^']+) TO app_api'$", section, re.M)
    assert levels and table, "the FastAPI recipe names no grant"
    role = create_role(admin_dsn, prefix="jobq_fastapi")
    try:
        for level in levels:
            grants.grant(orders, role, level, "public")
        conn.execute(sql.SQL(table.group(1) + " TO {}").format(sql.Identifier(role)))
        monkeypatch.setenv("JOBQ_DSN", make_conninfo(orders, user=role))
        with TestClient(app) as client:
            placed = client.post("/orders", json={"item": "book", "email": "a@example.com"})
            assert placed.status_code == 201, placed.text
            stats = client.get("/stats")
            assert stats.status_code == 200, stats.text
            assert [(s["job_type"], s["jobs"]) for s in stats.json()] == [("send_email", 1)]
    finally:
        drop_role(admin_dsn, role)


# -- asyncpg --------------------------------------------------------------------------------------


async def test_asyncpg_transaction_rollback_leaves_no_job(orders: str, conn: Conn) -> None:
    from examples.asyncpg_enqueue import OrderRefused, run

    with pytest.raises(OrderRefused):
        await run(_uri(orders), "book", "a@example.com", refuse=True)
    assert _state(conn) == (0, [])


async def test_asyncpg_transaction_commit_makes_a_job(orders: str, conn: Conn) -> None:
    from examples.asyncpg_enqueue import run

    order_id, job_id = await run(_uri(orders), "book", "a@example.com")
    assert _state(conn) == (1, [("send_email", _confirmation(order_id), "pending")])
    row = conn.execute("SELECT id FROM jobq_all_jobs").fetchone()
    assert row == (job_id,)


def test_asyncpg_job_is_run_by_a_worker(orders: str, conn: Conn) -> None:
    done = _run(
        [sys.executable, "-m", "examples.asyncpg_enqueue", "book", "a@example.com"], _uri(orders)
    )
    assert done.returncode == 0, done.stderr
    _run_jobs(orders, conn)
