"""What a dashboard reads through the public client (Queue.queue_summary, jobs_page,
workers_summary, function_privileges), and that the dashboard uses nothing but public
``pgq_client`` names: it is an application built on the client, shipped apart from it."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool

from jobq_cli import cli
from pgq_client import AsyncQueue, InvalidArgument, JobsPage, Queue, connect_kwargs

DASHBOARD = "jobq_web"

PRIVILEGES = {
    "jobq_queue_summary": "(interval)",
    "jobq_get_job": "(uuid)",
    "jobq_no_such_function": "()",
}


def test_queue_summary_counts_each_queue(dsn: str) -> None:
    with Queue(dsn) as q:
        q.enqueue("t", queue="mail")
        q.enqueue("t", queue="mail")
        (claimed,) = q.dequeue("w1", queues=["mail"])
        assert q.complete(claimed.id, "w1")
        q.enqueue("t", queue="sms")
        q.pause("sms")
        rows = {r["queue"]: r for r in q.queue_summary(timedelta(minutes=1))}
    assert rows["mail"]["available"] == 1 and rows["mail"]["succeeded_recent"] == 1
    assert rows["sms"]["available"] == 1 and rows["sms"]["paused"] is True
    assert rows["mail"]["paused"] is False


def test_jobs_page_pages_with_its_cursor(dsn: str) -> None:
    with Queue(dsn) as q:
        ids = [q.enqueue("t", {"n": n}, queue="pages") for n in range(5)]
        first = q.jobs_page("pending", queue="pages", size=2)
        assert isinstance(first, JobsPage) and first.stopped_after is None
        second = q.jobs_page("pending", queue="pages", size=2, after=first.next_after)
        third = q.jobs_page("pending", queue="pages", size=2, after=second.next_after)
        assert third.next_after is None
        seen = [r["id"] for page in (first, second, third) for r in page.rows]
        assert sorted(seen) == sorted(ids) and len(seen) == 5
        assert q.jobs_page("pending", queue="elsewhere").rows == []
        with pytest.raises(InvalidArgument) as bad:
            q.jobs_page("nonsense")
        assert "status" in str(bad.value)
        with pytest.raises(ValueError, match="queue"):
            q.jobs_page("pending", queue="a\x00b")


def test_workers_summary_names_the_worker_that_holds_a_job(dsn: str) -> None:
    with Queue(dsn) as q:
        q.enqueue("t")
        (job,) = q.dequeue("reader-w")
        rows = {r["worker_id"]: r for r in q.workers_summary()}
    assert rows["reader-w"]["jobs_held"] == 1
    assert rows["reader-w"]["held_job_ids"] == [job.id]


def test_function_privileges_before_the_schema_is_known(
    dsn: str, empty_dsn: str, make_role: object
) -> None:
    """A Queue given no schema finds it before the first statement, a catalogue query too; a
    monitor may read summaries but not jobs; a function jobq does not have is None, and so is
    every function where jobq is not installed."""
    with Queue(dsn) as q:
        role, allowed = q.function_privileges(PRIVILEGES)
    assert allowed == {
        "jobq_queue_summary": True, "jobq_get_job": True, "jobq_no_such_function": None
    }
    monitor = make_role("monitor", dsn=dsn)  # type: ignore[operator]
    with Queue(make_conninfo(dsn, user=monitor)) as q:
        role, allowed = q.function_privileges(PRIVILEGES)
    assert role == monitor
    assert allowed["jobq_queue_summary"] is True and allowed["jobq_get_job"] is False
    with Queue(empty_dsn) as q:
        _, allowed = q.function_privileges(PRIVILEGES)
    assert set(allowed.values()) == {None}
    with Queue(dsn, schema="nowhere") as q:
        _, allowed = q.function_privileges(PRIVILEGES)
    assert set(allowed.values()) == {None}


def test_a_pool_opened_with_connect_kwargs_runs_as_jobq_runs_its_own(dsn: str) -> None:
    kwargs = {"autocommit": True, **connect_kwargs(dsn)}
    with ConnectionPool(dsn, min_size=1, max_size=2, kwargs=kwargs, open=True) as pool:
        with pool.connection() as conn:
            path = conn.execute("SHOW search_path").fetchone()
        assert path == ("pg_catalog,pg_temp",)
        q = Queue(pool)
        job_id = q.enqueue("t")
        assert q.schema == "public"
        assert [r["id"] for r in q.jobs_page("pending").rows] == [job_id]


async def test_async_queue_has_the_same_reads(dsn: str) -> None:
    async with AsyncQueue(dsn) as q:
        job_id = await q.enqueue("t", queue="async")
        page = await q.jobs_page("pending", queue="async")
        assert [r["id"] for r in page.rows] == [job_id]
        assert [r["queue"] for r in await q.queue_summary()] == ["async"]
        assert await q.workers_summary() == []
        _, allowed = await q.function_privileges(PRIVILEGES)
        assert allowed["jobq_get_job"] is True


def _private_uses(path: Path, package: str) -> list[str]:
    """Where the module at ``path`` (of ``package``) imports a private name or module of
    pgq_client, or reaches a private attribute of anything but itself."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([module] if module else [])])
            names = [module, *(f"{module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not (
            node.attr.startswith("__") and node.attr.endswith("__")
        ):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
            continue
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "pgq_client" and any(p.startswith("_") for p in parts[1:]):
                found.append(f"{path.name}:{node.lineno}: {name}")
    return found


def test_the_dashboard_uses_only_public_client_names() -> None:
    spec = importlib.util.find_spec(DASHBOARD)
    assert spec is not None and spec.origin is not None
    modules = sorted(Path(spec.origin).parent.glob("*.py"))
    assert len(modules) > 3
    private = [use for m in modules for use in _private_uses(m, DASHBOARD)]
    assert private == []


def test_the_private_use_check_sees_private_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from .. import Queue, _ops\nfrom pgq_client._sql import x\nimport pgq_client._conn\n"
        "from pgq_client.errors import JobqError\nq._drive(op)\nself._pool = None\n",
        encoding="utf-8",
    )
    assert _private_uses(module, "pgq_client.web") == [
        "m.py:1: pgq_client._ops", "m.py:2: pgq_client._sql", "m.py:2: pgq_client._sql.x",
        "m.py:3: pgq_client._conn", "m.py:5: ._drive",
    ]


def test_a_monitor_never_sees_a_payload_through_jobs_page(dsn: str, make_role: object) -> None:
    with Queue(dsn) as q:
        q.enqueue("t", {"secret": "s3cret"})
        (claimed,) = q.dequeue("w")
        q.fail(claimed.id, "w", "boom: s3cret", retry=False)
    monitor = make_role("monitor", dsn=dsn)  # type: ignore[operator]
    with Queue(make_conninfo(dsn, user=monitor)) as q:
        failed = q.jobs_page("failed").rows
    assert [r["id"] for r in failed] == [claimed.id] and failed[0]["last_error"] is None
    assert "s3cret" not in repr(failed)


def test_jobq_web_without_the_dashboard_says_what_to_install(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jobq web` is the client's command, the dashboard another distribution: without it the
    command says which package to install, and so does the client's old import path."""
    monkeypatch.setitem(sys.modules, "jobq_web", None)
    monkeypatch.delitem(sys.modules, "pgq_client.web", raising=False)
    result = CliRunner().invoke(cli, ["web", "--dsn", dsn, "--check"])
    assert result.exit_code == 1
    assert "the dashboard is the jobq-web package: pip install jobq-web" in result.output
    with pytest.raises(ImportError, match="pip install jobq-web"):
        importlib.import_module("pgq_client.web")


def test_the_client_package_passes_the_dashboard_on() -> None:
    import jobq_web
    import pgq_client.web

    assert pgq_client.web.create_app is jobq_web.create_app
