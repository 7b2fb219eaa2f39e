"""``async def`` handlers in the Worker: one event loop, many jobs at once, mixed with plain
handlers under one ``concurrency`` limit; outcomes, transactional completion on an
``AsyncConnection``, shutdown, lost connections."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.helpers import count, job_row, wait_for
from tests.python.test_worker import LEDGER, running, steal

from pgq_client import Job, PermanentError, Queue, Retry, Worker
from pgq_client.worker import WorkerConfig
from pgq_client.worker.config import is_async

Conn = psycopg.Connection[Any]
AConn = psycopg.AsyncConnection[Any]


async def _anoop(job: Job) -> None:
    return None


# -- telling handlers apart --------------------------------------------------------------------


def test_async_handlers_are_told_apart_from_plain_ones_once() -> None:
    async def plain(job: Job) -> None: ...

    async def tx(job: Job, conn: AConn) -> None: ...

    async def with_option(job: Job, conn: AConn, extra: int) -> None: ...

    class Callable:
        async def __call__(self, job: Job) -> None: ...

    def sync(job: Job) -> None: ...

    config = WorkerConfig(
        handlers={
            "a": plain,
            "tx": tx,
            "p": functools.partial(with_option, extra=1),
            "o": Callable(),
            "s": sync,
            "l": lambda job: None,
        }
    )
    assert config.asynchronous == {"a", "tx", "p", "o"}
    assert config.transactional == {"tx", "p"}
    assert not is_async(print)


# -- one loop, many jobs, one limit ------------------------------------------------------------


def test_async_jobs_run_at_once_on_one_event_loop_thread(dsn: str, conn: Conn) -> None:
    n = 10
    ids = Queue(dsn).enqueue_many([{"job_type": "a"} for _ in range(n)])
    where: list[tuple[str, int]] = []
    loops: set[int] = set()
    state: dict[str, Any] = {}

    async def handler(job: Job) -> None:
        # Every job waits for all of them to have started: they run at once, or never finish.
        if "all_started" not in state:
            state["all_started"] = asyncio.Event()
        where.append((threading.current_thread().name, threading.get_ident()))
        loops.add(id(asyncio.get_running_loop()))
        if len(where) == n:
            state["all_started"].set()
        await asyncio.wait_for(state["all_started"].wait(), 30)

    Worker(dsn, {"a": handler}, concurrency=n).run(burst=True)
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == len(ids)
    assert {name for name, _ in where} == {"jobq-asyncio"}
    assert len({ident for _, ident in where}) == 1 and len(loops) == 1


def test_async_jobs_start_in_claim_order_when_handed_to_the_loop_in_runs(
    dsn: str, conn: Conn
) -> None:
    """The handler thread hands the loop every job it can take at once in one call: they
    still start in the order they were claimed in (priority first), across runs."""
    n = 60
    Queue(dsn).enqueue_many([{"job_type": "a", "priority": p} for p in range(n)])
    started: list[int] = []

    async def handler(job: Job) -> None:
        started.append(job.priority)
        await asyncio.sleep(0.001)

    Worker(dsn, {"a": handler}, concurrency=8).run(burst=True)
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == n
    assert started == sorted(range(n), reverse=True)


def test_concurrency_limits_sync_and_async_jobs_together(dsn: str, conn: Conn) -> None:
    limit = 3
    Queue(dsn).enqueue_many([{"job_type": t} for t in ("a", "s") * 6])
    lock = threading.Lock()
    gate = threading.Event()
    now = {"running": 0, "most": 0, "async_at_once": 0, "async_now": 0}

    def enter(is_async: bool) -> None:
        with lock:
            now["running"] += 1
            now["most"] = max(now["most"], now["running"])
            if is_async:
                now["async_now"] += 1
                now["async_at_once"] = max(now["async_at_once"], now["async_now"])

    def leave(is_async: bool) -> None:
        with lock:
            now["running"] -= 1
            now["async_now"] -= is_async

    async def async_handler(job: Job) -> None:
        enter(True)
        try:
            while not gate.is_set():
                await asyncio.sleep(0.01)
        finally:
            leave(True)

    def sync_handler(job: Job) -> None:
        enter(False)
        try:
            gate.wait(30)
        finally:
            leave(False)

    worker = Worker(dsn, {"a": async_handler, "s": sync_handler}, concurrency=limit)
    with running(worker):
        wait_for(f"{limit} jobs running", lambda: now["running"] == limit)
        gate.set()  # from now on every job passes at once
        wait_for(
            "every job",
            lambda: count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'")
            == 12,
        )
    assert now["most"] == limit, now


def test_async_only_worker_runs_one_handler_thread(
    dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    Queue(dsn).enqueue("a")
    with caplog.at_level(logging.INFO, logger="pgq_client.worker"):
        Worker(dsn, {"a": _anoop}, concurrency=50, worker_id="w-a").run(burst=True)
    start = next(r.getMessage() for r in caplog.records if "started" in r.getMessage())
    assert "50 jobs at once (1 handler thread and an event loop" in start, start


# -- outcomes ----------------------------------------------------------------------------------


def test_async_handler_outcomes_are_those_of_plain_handlers(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    ok, boom, permanent, last, retry_ = q.enqueue_many(
        [
            {"job_type": "ok"},
            {"job_type": "boom"},
            {"job_type": "permanent"},
            {"job_type": "boom", "max_attempts": 1},
            {"job_type": "retry"},
        ]
    )
    attempts: list[int] = []

    async def handle_ok(job: Job) -> None:
        await asyncio.sleep(0)

    async def handle_boom(job: Job) -> None:
        await asyncio.sleep(0)
        raise ValueError("bad input")

    async def handle_permanent(job: Job) -> None:
        raise PermanentError("document is encrypted")

    async def handle_retry(job: Job) -> None:
        attempts.append(job.attempts)
        raise Retry(after=0 if job.attempts == 1 else timedelta(seconds=100))

    Worker(
        dsn,
        {"ok": handle_ok, "boom": handle_boom, "permanent": handle_permanent,
         "retry": handle_retry},
        retry_backoff=60,
    ).run(burst=True)
    assert job_row(conn, ok)["status"] == "succeeded"
    row = job_row(conn, boom)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert 59 <= (row["available_at"] - row["updated_at"]).total_seconds() <= 61
    assert row["last_error"].splitlines()[0] == "ValueError: bad input"
    assert row["last_error"].splitlines()[1].startswith("Traceback (last ")
    row = job_row(conn, permanent)
    assert (row["status"], row["attempts"]) == ("failed", 1)
    assert "document is encrypted" in row["last_error"]
    assert job_row(conn, last)["status"] == "dead_letter"
    assert attempts == [1, 2]  # after=0: available again at once, even within a burst
    row = job_row(conn, retry_)
    assert (row["status"], row["attempts"]) == ("pending", 2)
    assert 99 <= (row["available_at"] - row["updated_at"]).total_seconds() <= 101


def test_a_cancelled_error_of_the_handlers_own_fails_the_attempt(dsn: str, conn: Conn) -> None:
    job_id = Queue(dsn).enqueue("t")

    async def handler(job: Job) -> None:
        inner = asyncio.ensure_future(asyncio.sleep(3600))
        inner.cancel()
        await inner  # raises CancelledError: the handler's, not a shutdown

    Worker(dsn, {"t": handler}, retry_backoff=60).run(burst=True)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert "CancelledError" in row["last_error"]


def test_plain_and_async_handlers_mix_in_one_worker(dsn: str, conn: Conn) -> None:
    ids = Queue(dsn).enqueue_many(
        [{"job_type": t, "payload": {"n": i}} for i, t in enumerate(("a", "s") * 50)]
    )
    ran: list[tuple[str, int]] = []

    async def a(job: Job) -> None:
        await asyncio.sleep(0.001)
        ran.append(("a", job.payload["n"]))

    def s(job: Job) -> None:
        ran.append(("s", job.payload["n"]))

    Worker(dsn, {"a": a, "s": s}, concurrency=4).run(burst=True)
    assert sorted(n for _, n in ran) == list(range(len(ids)))
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == len(ids)


# -- transactional completion on an AsyncConnection --------------------------------------------


def test_async_transactional_handler_commits_its_writes_with_the_completion(
    dsn: str, conn: Conn
) -> None:
    conn.execute("CREATE TABLE results (job_id uuid PRIMARY KEY, txid bigint)")
    job_id = Queue(dsn).enqueue("t")

    async def handler(job: Job, tx: AConn) -> None:
        assert isinstance(tx, psycopg.AsyncConnection)
        assert tx.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        await tx.execute("INSERT INTO results VALUES (%s, txid_current())", (job.id,))

    Worker(dsn, {"t": handler}).run(burst=True)
    assert job_row(conn, job_id)["status"] == "succeeded"
    row = conn.execute(
        "SELECT (r.txid % 4294967296)::text::xid = j.xmin "
        "FROM results r JOIN jobq_jobs_history j ON j.id = r.job_id"
    ).fetchone()
    assert row == (True,)  # the completion happened in the handler's transaction


def test_async_transactional_handler_exception_rolls_back_its_writes(
    dsn: str, conn: Conn
) -> None:
    conn.execute("CREATE TABLE results (job_id uuid)")
    job_id = Queue(dsn).enqueue("t")

    async def handler(job: Job, tx: AConn) -> None:
        await tx.execute("INSERT INTO results VALUES (%s)", (job.id,))
        raise RuntimeError("after the write")

    Worker(dsn, {"t": handler}, retry_backoff=60).run(burst=True)
    assert count(conn, "SELECT count(*) FROM results") == 0
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert "after the write" in row["last_error"]


def test_async_transactional_handler_whose_connection_dies_is_retried_not_stranded(
    dsn: str, conn: Conn
) -> None:
    conn.execute("CREATE TABLE results (job_id uuid, attempt int)")
    job_id = Queue(dsn).enqueue("t")

    async def handler(job: Job, tx: AConn) -> None:
        await tx.execute("INSERT INTO results VALUES (%s, %s)", (job.id, job.attempts))
        if job.attempts == 1:
            await tx.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    Worker(dsn, {"t": handler}, retry_backoff=0).run(burst=True)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("succeeded", 2)
    assert conn.execute("SELECT attempt FROM results").fetchall() == [(2,)]
    assert "terminating connection" in row["errors"][0]["error"]


def test_async_transactional_handler_that_lost_its_claim_has_its_writes_rolled_back(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    conn.execute("CREATE TABLE results (job_id uuid)")
    job_id = Queue(dsn).enqueue("t")

    async def handler(job: Job, tx: AConn) -> None:
        await tx.execute("INSERT INTO results VALUES (%s)", (job.id,))
        await asyncio.to_thread(steal, dsn, job.id)  # the lock expired, another worker took it

    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"):
        Worker(dsn, {"t": handler}, worker_id="slow", lock_timeout=3600).run(burst=True)
    assert count(conn, "SELECT count(*) FROM results") == 0
    row = job_row(conn, job_id)
    assert (row["status"], row["locked_by"], row["attempts"]) == ("processing", "thief", 2)
    assert any("claim lost" in r.getMessage() for r in caplog.records)


def test_plain_and_async_transactional_handlers_in_one_worker(dsn: str, conn: Conn) -> None:
    conn.execute("CREATE TABLE results (job_id uuid PRIMARY KEY, kind text)")
    ids = Queue(dsn).enqueue_many([{"job_type": t} for t in ("atx", "stx") * 20])

    async def atx(job: Job, tx: AConn) -> None:
        await tx.execute("INSERT INTO results VALUES (%s, 'async')", (job.id,))

    def stx(job: Job, tx: Conn) -> None:
        tx.execute("INSERT INTO results VALUES (%s, 'sync')", (job.id,))

    Worker(dsn, {"atx": atx, "stx": stx}, concurrency=4).run(burst=True)
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == len(ids)
    assert conn.execute("SELECT kind, count(*) FROM results GROUP BY 1 ORDER BY 1").fetchall() == [
        ("async", 20),
        ("sync", 20),
    ]


# -- heartbeats and shutdown -------------------------------------------------------------------


@pytest.mark.slow
def test_heartbeats_keep_a_long_async_job_from_being_taken_over(dsn: str, conn: Conn) -> None:
    job_id = Queue(dsn).enqueue("t")
    started = threading.Event()
    release = threading.Event()

    async def handler(job: Job) -> None:
        started.set()
        while not release.is_set():
            await asyncio.sleep(0.01)

    worker = Worker(dsn, {"t": handler}, lock_timeout=2, heartbeat_interval=0.5, worker_id="alive")
    thief = Queue(dsn)
    with running(worker):
        assert started.wait(10)
        deadline = time.monotonic() + 5  # 2.5 lock timeouts
        while time.monotonic() < deadline:
            assert thief.dequeue("thief", lock_timeout=timedelta(seconds=2)) == []
            time.sleep(0.25)
        assert job_row(conn, job_id)["locked_by"] == "alive"
        release.set()
        wait_for("completion", lambda: job_row(conn, job_id)["status"] == "succeeded")


@pytest.mark.slow  # seconds of waiting
def test_stop_lets_async_jobs_finish_within_the_grace_then_cancels_them_unacknowledged(
    dsn: str, conn: Conn
) -> None:
    quick, stuck = Queue(dsn).enqueue_many([{"job_type": "quick"}, {"job_type": "stuck"}])
    release = threading.Event()
    cancelled: list[uuid.UUID] = []
    started: set[str] = set()

    async def finishes_after_the_stop(job: Job) -> None:
        started.add(job.job_type)
        while not release.is_set():
            await asyncio.sleep(0.01)

    async def never_finishes(job: Job) -> None:
        started.add(job.job_type)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(job.id)
            raise

    worker = Worker(
        dsn,
        {"quick": finishes_after_the_stop, "stuck": never_finishes},
        concurrency=2,
        shutdown_grace=3.0,  # ample for the quick one, even on a busy machine
        worker_id="w",
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    wait_for("both jobs to start", lambda: started == {"quick", "stuck"})
    worker.stop()
    release.set()  # the quick one ends within the grace period: acknowledged
    thread.join(60)
    assert not thread.is_alive()
    assert not worker.aborted
    assert job_row(conn, quick)["status"] == "succeeded"
    assert cancelled == [stuck]  # the other was cancelled after the grace period...
    row = job_row(conn, stuck)  # ...and not acknowledged: claimed until its lock expires
    assert (row["status"], row["locked_by"], row["attempts"]) == ("processing", "w", 1)
    assert row["errors"] == []


def test_stop_releases_prefetched_jobs_while_async_ones_run(dsn: str, conn: Conn) -> None:
    ids = Queue(dsn).enqueue_many([{"job_type": "a"} for _ in range(3)])
    release = threading.Event()
    started: list[uuid.UUID] = []
    finished: list[uuid.UUID] = []

    async def handler(job: Job) -> None:
        started.append(job.id)
        while not release.is_set():
            await asyncio.sleep(0.01)
        finished.append(job.id)

    worker = Worker(dsn, {"a": handler}, concurrency=1, prefetch=1, worker_id="w")
    thread = threading.Thread(target=worker.run)
    thread.start()
    # Both claimed is not enough: the first claim may take both before a handler starts one.
    wait_for(
        "one running and one prefetched job",
        lambda: len(started) == 1
        and count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'processing'") == 2,
    )
    worker.stop()
    wait_for(
        "the prefetched job to be released while the other still runs",
        lambda: count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'processing'") == 1,
    )
    release.set()
    thread.join(30)
    assert not thread.is_alive()
    assert [job_row(conn, i)["status"] for i in finished] == ["succeeded"]
    others = [job_row(conn, i) for i in ids if i not in finished]
    assert [(r["status"], r["attempts"]) for r in others] == [("pending", 0)] * 2


ASYNC_HANDLER_MODULE = """
import asyncio
import os

import psycopg

DSN = os.environ["JOBQ_DSN"]


async def _mark(job, what):
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as c:
        await c.execute(
            "INSERT INTO ledger (job_id, attempt, worker, what) VALUES (%s, %s, %s, %s)",
            (job.id, job.attempts, job.locked_by, what),
        )


async def slow(job):
    await _mark(job, "start")
    try:
        await asyncio.sleep(float(job.payload.get("sleep", 0)))
    except asyncio.CancelledError:
        await _mark(job, "cancelled")
        raise
    await _mark(job, "end")


def plain(job):
    pass


HANDLERS = {"slow": slow, "plain": plain}
"""


@pytest.mark.slow
def test_sigterm_with_async_jobs_in_flight_finishes_them_cancels_the_late_and_exits_zero(
    dsn: str, conn: Conn, tmp_path: Path
) -> None:
    conn.execute(LEDGER)
    short, long_ = Queue(dsn).enqueue_many(
        [{"job_type": "slow", "payload": {"sleep": 1}},
         {"job_type": "slow", "payload": {"sleep": 3600}}]
    )
    (tmp_path / "async_jobs_for_test.py").write_text(textwrap.dedent(ASYNC_HANDLER_MODULE))
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["JOBQ_DSN"] = dsn
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgq_client", "worker", "async_jobs_for_test:HANDLERS",
         "--concurrency", "4", "--shutdown-grace", "5", "--worker-id", "w"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(
            "both jobs to start",
            lambda: count(conn, "SELECT count(*) FROM ledger WHERE what = 'start'") == 2,
        )
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    events = dict(conn.execute("SELECT what, job_id FROM ledger WHERE what <> 'start'").fetchall())
    assert events == {"end": short, "cancelled": long_}
    assert job_row(conn, short)["status"] == "succeeded"
    row = job_row(conn, long_)
    assert (row["status"], row["locked_by"]) == ("processing", "w")  # not acknowledged


def test_an_async_handler_enqueues_follow_ups_in_its_transaction(dsn: str, conn: Conn) -> None:
    from pgq_client import AsyncQueue

    ok, failing = Queue(dsn).enqueue_many(
        [{"job_type": "t", "payload": {"fail": fail}} for fail in (False, True)]
    )
    follow_ups = AsyncQueue()  # with conn= it uses the handler's connection only

    async def handler(job: Job, tx: AConn) -> None:
        await follow_ups.enqueue("next", {"after": str(job.id)}, conn=tx)
        if job.payload["fail"]:
            raise PermanentError("the follow-up goes with the rollback")

    Worker(dsn, {"t": handler}).run(burst=True)
    assert job_row(conn, ok)["status"] == "succeeded"
    assert job_row(conn, failing)["status"] == "failed"
    rows = conn.execute("SELECT payload FROM jobq_all_jobs WHERE job_type = 'next'").fetchall()
    assert rows == [({"after": str(ok)},)]


# -- results and cancel requests ---------------------------------------------------------------


@pytest.mark.parametrize("transactional", [False, True])
def test_an_async_handlers_return_value_is_the_jobs_result(
    dsn: str, conn: Conn, transactional: bool
) -> None:
    values: list[Any] = [{"pages": 12}, [1, "two"], None, {1, 2}]
    ids = Queue(dsn).enqueue_many([{"job_type": "t", "payload": {"n": i}} for i in range(4)])

    async def plain(job: Job) -> Any:
        return values[job.payload["n"]]

    async def in_tx(job: Job, tx: AConn) -> Any:
        return values[job.payload["n"]]

    Worker(dsn, {"t": in_tx if transactional else plain}, concurrency=3).run(burst=True)
    q = Queue(dsn)
    assert [q.result(i, timeout=0) for i in ids[:3]] == values[:3]
    row = job_row(conn, ids[3])  # a set is not JSON: a bug of the handler, no retry
    assert (row["status"], row["attempts"]) == ("failed", 1)
    assert row["last_error"].startswith("the handler returned a value that cannot be stored")


def test_a_running_async_handler_sees_the_cancel_and_stops(dsn: str, conn: Conn) -> None:
    job = Queue(dsn).enqueue("t")
    started = threading.Event()

    async def handler(j: Job) -> str:
        started.set()
        for _ in range(6000):
            if j.cancel_requested():
                raise RuntimeError("stopped: a cancel was requested")
            await asyncio.sleep(0.01)
        return "finished without a cancel"

    with running(Worker(dsn, {"t": handler}, lock_timeout=300)):
        assert started.wait(30)
        assert Queue(dsn).cancel([job], reason="user gave up") == {job: "cancel_requested"}
        wait_for(
            "the job to end cancelled",
            lambda: job_row(conn, job)["status"] == "cancelled",
            60,
        )
    row = job_row(conn, job)
    assert "stopped: a cancel was requested" in row["last_error"]
