"""The connections jobq opens speak UTF-8, whatever the client encoding asked for.

jobq decodes jsonb as UTF-8 and sends its SQL files (whose comments are not all ASCII) as text.
With a DSN or a PGCLIENTENCODING of LATIN1, a claim could not read back a payload with an
accented letter (UnicodeDecodeError), an enqueue could not send a euro sign
(UnicodeEncodeError), and ``jobq migrate`` stopped with a traceback. Each test here asks for
LATIN1 in the DSN (libpq reads PGCLIENTENCODING into the same setting, and a connection
argument wins over both), on the UTF8 databases the tests create.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import psycopg
from click.testing import CliRunner
from psycopg.conninfo import make_conninfo

from jobq_cli import cli
from pgq_client import AsyncQueue, Job, Queue, Worker
from pgq_client.migrate import migrate

# An accented letter (in LATIN1), a euro sign and an emoji (in neither LATIN1 nor the BMP).
PAYLOAD = {"name": "café", "price": "10 €", "mood": "🙂"}


def latin1(dsn: str) -> str:
    return make_conninfo(dsn, client_encoding="LATIN1")


def test_a_queue_enqueues_and_reads_back_any_text_on_a_dsn_that_asks_for_latin1(dsn: str) -> None:
    with Queue(latin1(dsn)) as q:
        job_id = q.enqueue("enc", PAYLOAD)
        job = q.get_job(job_id)
        assert job is not None and job.payload == PAYLOAD
        (claimed,) = q.dequeue("w", job_types=["enc"])
        assert claimed.id == job_id and claimed.payload == PAYLOAD
        assert q.complete(job_id, "w", result={"echo": PAYLOAD["price"]})
        done = q.get_job(job_id)
        assert done is not None and done.result == {"echo": "10 €"}


def test_an_async_queue_does_the_same(dsn: str) -> None:
    async def main() -> None:
        async with AsyncQueue(latin1(dsn)) as q:
            job_id = await q.enqueue("enc", PAYLOAD)
            job = await q.get_job(job_id)
            assert job is not None and job.payload == PAYLOAD
            (claimed,) = await q.dequeue("w", job_types=["enc"])
            assert claimed.payload == PAYLOAD

    asyncio.run(main())


def test_a_worker_hands_its_handler_the_payload_and_stores_its_result(dsn: str) -> None:
    with Queue(dsn) as q:  # enqueued on a UTF-8 connection: the worker alone asks for LATIN1
        job_id = q.enqueue("enc", PAYLOAD)
    seen: list[Any] = []

    def handler(job: Job) -> dict[str, str]:
        seen.append(job.payload)
        return {"echo": job.payload["mood"]}

    Worker(latin1(dsn), handlers={"enc": handler}, poll_interval=0.1).run(burst=True)
    assert seen == [PAYLOAD]
    with Queue(dsn) as q:
        job = q.get_job(job_id)
    assert job is not None and job.status == "succeeded" and job.result == {"echo": "🙂"}


def test_the_command_line_enqueues_and_shows_any_text(dsn: str) -> None:
    runner = CliRunner()
    sent = runner.invoke(cli, ["--dsn", latin1(dsn), "enqueue", "enc", json.dumps(PAYLOAD)])
    assert sent.exit_code == 0, sent.output
    job_id = uuid.UUID(sent.output.strip().split()[-1])
    shown = runner.invoke(cli, ["--dsn", latin1(dsn), "jobs", "show", str(job_id), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["payload"] == PAYLOAD


def test_migrate_installs_jobq_on_a_dsn_that_asks_for_latin1(empty_dsn: str) -> None:
    migrate(latin1(empty_dsn))
    with Queue(empty_dsn) as q:
        assert q.get_job(q.enqueue("enc", PAYLOAD)) is not None
    runner = CliRunner()
    again = runner.invoke(cli, ["migrate", "--dsn", latin1(empty_dsn)])
    assert again.exit_code == 0, again.output
    assert "up to date" in again.output


def test_a_connection_given_to_jobq_keeps_its_own_client_encoding(dsn: str) -> None:
    """jobq changes only the connections it opens: the application's stays as it was made
    (and psycopg's own jsonb loader, which such a connection keeps, reads UTF-8 only)."""
    with psycopg.connect(latin1(dsn), autocommit=True) as conn:
        job_id = Queue(conn).enqueue("enc", {"name": "café"})
        assert conn.info.encoding == "iso8859-1"
    with Queue(dsn) as q:
        job = q.get_job(job_id)
    assert job is not None and job.payload == {"name": "café"}


def test_the_dashboard_shows_any_text_on_a_dsn_that_asks_for_latin1(dsn: str) -> None:
    from starlette.testclient import TestClient

    from jobq_web import create_app

    with Queue(dsn) as q:
        job_id = q.enqueue("enc", PAYLOAD)
    with TestClient(create_app(latin1(dsn)), base_url="http://127.0.0.1") as client:
        page = client.get(f"/jobs/{job_id}")
    assert page.status_code == 200, page.text
    assert "café" in page.text and "10 €" in page.text and "🙂" in page.text
