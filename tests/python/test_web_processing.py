"""The dashboard's page of processing jobs, against a real database: the order of the one index
of processing jobs (soonest lock expiry first), paged without repeats, and the claim's own time in
the "claimed" column (the cursor, sort_at, is the lock's expiry)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import psycopg
import pytest
from starlette.testclient import TestClient

from jobq_web import create_app
from pgq_client import Queue


@pytest.fixture
def client(dsn: str) -> Iterator[TestClient]:
    with TestClient(create_app(dsn), base_url="http://127.0.0.1") as c:
        yield c


def _claim(conn: psycopg.Connection[tuple[object, ...]], worker: str, lock: timedelta) -> str:
    row = conn.execute(
        "SELECT id FROM jobq_dequeue(%s, lock_timeout => %s)", (worker, lock)
    ).fetchone()
    assert row is not None
    return str(row[0])


def test_processing_jobs_are_listed_by_lock_expiry_showing_when_they_were_claimed(
    dsn: str, conn: psycopg.Connection[tuple[object, ...]], client: TestClient
) -> None:
    """A job claimed 10 minutes ago with a 1-hour lock comes after one claimed now with a
    20-second lock; each row's "claimed" column says how long ago it was claimed (never the
    lock's expiry, "in ..."), and the next page holds the other job."""
    Queue(dsn).enqueue_many([{"job_type": "t"}, {"job_type": "t"}])
    old = _claim(conn, "w-long", timedelta(hours=1))
    conn.execute(
        "UPDATE jobq_jobs SET locked_at = locked_at - interval '10 minutes',"
        " locked_until = locked_until - interval '10 minutes' WHERE id = %s",
        (old,),
    )
    new = _claim(conn, "w-short", timedelta(seconds=20))

    page = client.get("/jobs", params={"status": "processing"})
    assert page.status_code == 200, page.text
    rows = re.findall(r'<tr data-id="([0-9a-f-]+)">(.*?)</tr>', page.text, re.S)
    assert [r[0] for r in rows] == [new, old]
    claimed = {job: re.findall(r'<td title="[^"]*">([^<]*)</td>', html)[0] for job, html in rows}
    assert claimed[old].startswith("10m") and claimed[old].endswith(" ago"), claimed
    assert claimed[new].endswith(" ago"), claimed

    cursor = conn.execute(
        "SELECT sort_at FROM jobq_jobs_page('processing') WHERE id = %s", (new,)
    ).fetchone()
    assert cursor is not None
    after = f"{cursor[0].isoformat()},{new}"
    deeper = client.get("/jobs", params={"status": "processing", "after": after})
    assert deeper.status_code == 200, deeper.text
    assert re.findall(r'<tr data-id="([0-9a-f-]+)">', deeper.text) == [old]
