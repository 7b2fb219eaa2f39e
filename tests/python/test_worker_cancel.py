"""The Worker with cancels and results: a handler's return value is the job's result; a
running handler learns of a cancel (by notification, and within one heartbeat interval without
one); a job asked to stop before it started is not run."""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from tests.helpers import count, job_row, wait_for
from tests.python.test_worker import running, worker_role  # noqa: F401

from pgq_client import Job, Queue, Worker, _sql
from pgq_client.worker.acker import Acknowledger

Conn = psycopg.Connection[Any]


def statuses(conn: Conn, ids: list[uuid.UUID]) -> list[str]:
    rows = dict(conn.execute("SELECT id, status FROM jobq_all_jobs WHERE id = ANY(%s)", (ids,)))
    return [rows[i] for i in ids]


# -- results -----------------------------------------------------------------------------------


@pytest.mark.parametrize("transactional", [False, True])
def test_a_handlers_return_value_is_the_jobs_result(
    dsn: str, conn: Conn, transactional: bool
) -> None:
    values: list[Any] = [{"pages": 12}, [1, "two"], "text", 3.5, True, None, {"nested": {"a": []}}]
    ids = Queue(dsn).enqueue_many([{"job_type": "t", "payload": {"n": i}} for i in range(7)])

    def plain(job: Job) -> Any:
        return values[job.payload["n"]]

    def in_tx(job: Job, tx: Conn) -> Any:
        return values[job.payload["n"]]

    Worker(dsn, {"t": in_tx if transactional else plain}, concurrency=3).run(burst=True)
    q = Queue(dsn)
    assert [q.result(i, timeout=0) for i in ids] == values
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE result IS NULL") == 1, (
        "None stores no result")


@pytest.mark.parametrize("transactional", [False, True])
@pytest.mark.parametrize(
    ("value", "why"),
    [({1, 2}, "Object of type set is not JSON serializable"),
     (float("nan"), "Out of range float values are not JSON compliant"),
     ({"s": "a\x00b"}, "NUL"),
     (object(), "not JSON serializable")],
)
def test_a_return_value_that_is_not_json_fails_the_job_without_retry(
    dsn: str, conn: Conn, transactional: bool, value: Any, why: str
) -> None:
    ok, bad = Queue(dsn).enqueue("t", {"bad": False}), Queue(dsn).enqueue("t", {"bad": True})
    conn.execute("CREATE TABLE side (id uuid)")

    def plain(job: Job) -> Any:
        return value if job.payload["bad"] else "fine"

    def in_tx(job: Job, tx: Conn) -> Any:
        tx.execute("INSERT INTO side VALUES (%s)", (job.id,))
        return value if job.payload["bad"] else "fine"

    Worker(dsn, {"t": in_tx if transactional else plain}).run(burst=True)
    row = job_row(conn, bad)
    assert row["status"] == "failed" and row["attempts"] == 1, "a bug of the handler: no retry"
    assert row["last_error"].startswith(
        "the handler returned a value that cannot be stored as the job's result")
    assert why in row["last_error"]
    assert (job_row(conn, ok)["status"], job_row(conn, ok)["result"]) == ("succeeded", "fine")
    if transactional:
        assert count(conn, "SELECT count(*) FROM side WHERE id = %s", bad) == 0, (
            "the handler's writes were rolled back with it")


@pytest.mark.parametrize("transactional", [False, True])
def test_a_result_over_the_size_limit_fails_its_job_and_the_rest_of_the_batch_completes(
    dsn: str, conn: Conn, transactional: bool
) -> None:
    q = Queue(dsn)
    q.configure(max_payload_bytes=2000)
    ids = q.enqueue_many([{"job_type": "t", "payload": {"n": i}} for i in range(30)])

    def result_of(job: Job) -> Any:
        n = job.payload["n"]
        return "x" * 5000 if n == 7 else (None if n % 2 else {"n": n})

    def in_tx(job: Job, tx: Conn) -> Any:
        return result_of(job)

    Worker(dsn, {"t": in_tx if transactional else result_of}, concurrency=4,
           prefetch=20).run(burst=True)
    row = job_row(conn, ids[7])
    assert row["status"] == "failed" and row["result"] is None
    assert "result is" in row["last_error"] and "the limit is 2000 bytes" in row["last_error"]
    others = [i for n, i in enumerate(ids) if n != 7]
    assert set(statuses(conn, others)) == {"succeeded"}
    assert [q.result(i, timeout=0) for i in ids[:4]] == [{"n": 0}, None, {"n": 2}, None]


# -- cancel ------------------------------------------------------------------------------------


class Stoppable:
    """A handler that runs until its job is asked to stop, then raises (the usual way to stop)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.saw_cancel: list[uuid.UUID] = []
        self.release = threading.Event()  # the test's way out, so that a failure cannot hang

    def __call__(self, job: Job) -> str:
        self.started.set()
        while not job.cancel_requested():
            if self.release.wait(0.01):
                return "finished without a cancel"
        self.saw_cancel.append(job.id)
        raise RuntimeError("stopped: a cancel was requested")


def test_a_running_handler_sees_the_cancel_at_once_by_notification(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    job = Queue(dsn).enqueue("t")
    handler = Stoppable()
    # heartbeats every 100 s: within the test, only the notification can tell the handler
    worker = Worker(dsn, {"t": handler}, lock_timeout=300)
    caplog.set_level(logging.INFO, logger="pgq_client")
    with running(worker):
        assert handler.started.wait(30)
        assert Queue(dsn).cancel([job], reason="user gave up") == {job: "cancel_requested"}
        try:
            wait_for(
                "the job to end cancelled",
                lambda: job_row(conn, job)["status"] == "cancelled",
                60,
            )
        finally:
            handler.release.set()
    assert handler.saw_cancel == [job]
    row = job_row(conn, job)
    assert (row["cancel_reason"], row["attempts"]) == ("user gave up", 1)
    assert "stopped: a cancel was requested" in row["last_error"]
    assert "cancel requested; job.cancel_requested() is now true" in caplog.text
    assert "stopped after a cancel request, now cancelled" in caplog.text


def test_a_cancel_the_worker_never_hears_of_is_seen_with_the_next_heartbeat(
    dsn: str, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker LISTENs on a channel nobody notifies: as if every notification was lost
    # while its listening connection was down.
    monkeypatch.setattr(_sql, "CANCEL_EVENT", "nobody-sends-this")
    prompted: list[int] = []  # cancel checks a notification prompted: there must be none
    beat = Acknowledger._heartbeat

    def spy(self: Acknowledger, renew: bool = True) -> None:
        if not renew:
            prompted.append(1)
        beat(self, renew)

    monkeypatch.setattr(Acknowledger, "_heartbeat", spy)
    job = Queue(dsn).enqueue("t")
    handler = Stoppable()
    worker = Worker(dsn, {"t": handler}, lock_timeout=30, heartbeat_interval=0.5)
    with running(worker):
        assert handler.started.wait(30)
        Queue(dsn).cancel([job])
        try:
            wait_for(
                "the job to end cancelled",
                lambda: job_row(conn, job)["status"] == "cancelled",
                60,
            )
        finally:
            handler.release.set()
    assert handler.saw_cancel == [job]
    assert prompted == [], "learnt of with a heartbeat, not by a notification"


def test_a_handler_that_finishes_despite_the_cancel_succeeds(dsn: str, conn: Conn) -> None:
    job = Queue(dsn).enqueue("t")
    started, proceed = threading.Event(), threading.Event()
    seen: list[bool] = []

    def handler(j: Job) -> str:
        started.set()
        assert proceed.wait(30)
        wait_for("the cancel request", j.cancel_requested, 30)
        seen.append(j.cancel_requested())
        return "done anyway"

    with running(Worker(dsn, {"t": handler})):
        assert started.wait(30)
        Queue(dsn).cancel([job])
        proceed.set()
        wait_for("the job to succeed", lambda: job_row(conn, job)["status"] == "succeeded", 60)
    assert seen == [True]
    assert Queue(dsn).result(job, timeout=0) == "done anyway"
    assert Queue(dsn).status([job])[job].cancel_requested


def test_a_prefetched_job_asked_to_stop_is_never_started(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    first = q.enqueue("t", {"n": 1}, priority=1)
    second = q.enqueue("t", {"n": 2})
    handler = Stoppable()
    calls: list[int] = []

    def counting(job: Job) -> str:
        calls.append(job.payload["n"])
        return handler(job)

    # one handler thread, the second job waits in the worker's buffer
    worker = Worker(dsn, {"t": counting}, concurrency=1, prefetch=1, lock_timeout=300)
    with running(worker):
        assert handler.started.wait(30)
        wait_for(
            "the second job's claim",
            lambda: job_row(conn, second)["locked_by"] == worker.worker_id,
            30,
        )
        # both in one statement: the worker marks both before the first handler stops
        assert q.cancel([first, second]) == {first: "cancel_requested",
                                             second: "cancel_requested"}
        try:
            wait_for(
                "both jobs to end cancelled",
                lambda: statuses(conn, [first, second]) == ["cancelled"] * 2,
                60,
            )
        finally:
            handler.release.set()
    assert calls == [1], "the second job's handler never ran"
    row = job_row(conn, second)
    assert row["attempts"] == 1 and row["last_error"].startswith("not started: a cancel")


def test_a_worker_role_without_jobq_cancel_requested_keeps_working_and_says_why(
    dsn: str, conn: Conn, worker_role: str, caplog: pytest.LogCaptureFixture  # noqa: F811
) -> None:
    # A role granted before jobq_cancel_requested existed, until `jobq grant` runs again.
    conn.execute(sql.SQL("REVOKE EXECUTE ON FUNCTION jobq_cancel_requested(uuid[]) FROM {}")
                 .format(sql.Identifier(worker_role)))
    ids = Queue(dsn).enqueue_many([{"job_type": "t"} for _ in range(3)])
    release = threading.Event()

    def handler(job: Job) -> int:
        release.wait(30)
        return 1

    caplog.set_level(logging.WARNING, logger="pgq_client")
    worker = Worker(make_conninfo(dsn, user=worker_role), {"t": handler},
                    lock_timeout=30, heartbeat_interval=0.3)
    with running(worker):
        wait_for("the warning", lambda: "cannot ask for cancel requests" in caplog.text, 30)
        release.set()
        wait_for("every job to succeed", lambda: set(statuses(conn, ids)) == {"succeeded"}, 60)
    assert "jobq grant ROLE --as worker" in caplog.text
    assert caplog.text.count("cannot ask for cancel requests") == 1
