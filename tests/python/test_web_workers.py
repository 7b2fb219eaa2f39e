"""The dashboard's workers page against a real database: a running Worker and the job it holds,
a worker whose claim lapsed (stale), the job page's link to its worker, and what a monitor and
a role without grants see."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from starlette.testclient import TestClient
from webtools import login_role, status_of

from jobq_web import create_app
from pgq_client import Queue, Worker
from pgq_client.models import Job


@pytest.fixture
def client(dsn: str) -> Iterator[TestClient]:
    with TestClient(create_app(dsn), base_url="http://127.0.0.1") as c:
        yield c


def _row(html: str, worker_id: str) -> str:
    found = re.search(rf'<tr id="{worker_id}" data-worker="{worker_id}"([^>]*)>(.*?)</tr>', html,
                      re.DOTALL)
    assert found, f"no row for {worker_id}"
    return found.group(1) + found.group(2)


@pytest.fixture
def held(dsn: str) -> Iterator[tuple[uuid.UUID, uuid.UUID]]:
    """A live Worker ("live-w") holding a job in its handler, and a job that worker "gone"
    claimed whose lock expired a minute ago: (held job, stale job)."""
    release = threading.Event()

    def hold(job: Job) -> None:
        release.wait(30)

    with Queue(dsn) as q:
        job_id = q.enqueue("hold", {"secret": "hunter2"})
        lost = q.enqueue("lost", {"secret": "hunter2"})
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT jobq_dequeue('gone', job_types => '{lost}')")
        c.execute("UPDATE jobq_jobs SET locked_at = now() - interval '6 minutes',"
                  " locked_until = now() - interval '1 minute' WHERE id = %s", (lost,))
    worker = Worker(dsn, handlers={"hold": hold}, worker_id="live-w", poll_interval=0.1)
    runner = threading.Thread(target=worker.run)
    runner.start()
    try:
        for _ in range(200):
            if status_of(dsn, job_id) == "processing":
                break
            threading.Event().wait(0.05)
        else:
            pytest.fail("the worker never claimed the job")
        yield job_id, lost
    finally:
        release.set()
        worker.stop()
        runner.join(30)


def test_the_workers_page_shows_each_worker_its_jobs_and_stale_claims(
    client: TestClient, held: tuple[uuid.UUID, uuid.UUID]
) -> None:
    """Each worker's row: its filters, the jobs it holds linked to their pages, its last
    heartbeat; a worker whose held job's lock expired is flagged stale. The job page links its
    claim to the worker's row."""
    job_id, lost = held
    page = client.get("/workers")
    assert page.status_code == 200, page.text
    live = _row(page.text, "live-w")
    assert "stale" not in live
    assert '<td class="held">1</td>' in live and f'href="/jobs/{job_id}"' in live
    assert "<td>hold</td>" in live and "<td>all</td>" in live  # job types, queues
    gone = _row(page.text, "gone")
    assert 'class="stale"' in gone and "1 stale" in gone and f'href="/jobs/{lost}"' in gone
    assert "hunter2" not in page.text

    detail = client.get(f"/jobs/{job_id}")
    assert '<a id="job-worker" href="/workers#live-w">live-w</a>' in detail.text


def test_a_monitor_sees_the_workers_and_a_role_without_grants_is_told(
    admin_dsn: str, dsn: str, held: tuple[uuid.UUID, uuid.UUID]
) -> None:
    with login_role(admin_dsn, dsn, "monitor") as monitor_dsn, TestClient(
        create_app(monitor_dsn), base_url="http://127.0.0.1"
    ) as c:
        page = c.get("/workers")
        assert page.status_code == 200 and 'id="workers"' in page.text
        assert 'class="stale"' in _row(page.text, "gone") and "hunter2" not in page.text
    with login_role(admin_dsn, dsn, None) as nobody_dsn, TestClient(
        create_app(nobody_dsn), base_url="http://127.0.0.1"
    ) as c:
        page = c.get("/workers")
        assert page.status_code == 200 and 'id="workers-denied"' in page.text


def test_no_worker_no_row(client: TestClient) -> None:
    assert 'id="no-workers"' in client.get("/workers").text
