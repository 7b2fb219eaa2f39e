"""Nobody else can hold jobq up: a transaction that a producer
keeps open after its calls never stalls a worker's completion, failure, heartbeat or release.

Each test runs the producer as a real role of the producer level, in a real second session
whose transaction stays open, and the worker's statements with a short ``lock_timeout``: a
statement that waited for the producer's row lock would fail with 55P03 instead of hanging."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from tests.helpers import MakeRole, count, wait_for

from pgq_client import Job, Queue, Worker

Conn = psycopg.Connection[tuple[Any, ...]]


@pytest.fixture
def producer(dsn: str, make_role: MakeRole) -> str:
    """The DSN of a login role granted the producer level."""
    return make_conninfo(dsn, user=make_role("producer", dsn=dsn))


def _worker(dsn: str) -> Conn:
    """A worker's session whose every lock wait gives up after 2 s."""
    return psycopg.connect(dsn, autocommit=True, options="-c lock_timeout=2s")


def _claim(conn: Conn, worker: str, job_type: str) -> tuple[str, int]:
    row = conn.execute(
        "SELECT id::text, attempts FROM jobq_dequeue(%s, job_types => ARRAY[%s])",
        (worker, job_type),
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def _status(conn: Conn, job: str) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT status, cancel_requested_at IS NOT NULL, last_error"
        " FROM jobq_all_jobs WHERE id = %s",
        (job,),
    ).fetchone()
    assert row is not None
    return tuple(row)


def test_open_cancel_transaction_never_stalls_the_workers_calls(
    dsn: str, conn: Conn, producer: str
) -> None:
    ids = {t: conn.execute("SELECT jobq_enqueue(%s)::text", (t,)).fetchone()[0]  # type: ignore[index]
           for t in ("hb", "done", "failed", "released", "many")}
    with _worker(dsn) as w, psycopg.connect(producer) as p:
        for t in ids:
            _claim(w, "w1", t)
        asked = p.execute("SELECT job_id::text, status FROM jobq_cancel(%s::uuid[], 'stop')",
                          (list(ids.values()),)).fetchall()
        assert sorted(s for _, s in asked) == ["cancel_requested"] * 5
        # The producer's transaction stays open; every worker call goes through at once.
        assert w.execute("SELECT jobq_heartbeat('w1', ARRAY[%s]::uuid[])",
                         (ids["hb"],)).fetchone() == (1,)
        assert w.execute("SELECT jobq_complete(%s, 'w1')", (ids["done"],)).fetchone() == (True,)
        assert w.execute("SELECT jobq_complete_many(ARRAY[%s]::uuid[], 'w1')",
                         (ids["many"],)).fetchone() == (1,)
        assert w.execute("SELECT jobq_fail(%s, 'w1', 'boom', backoff => '0')",
                         (ids["failed"],)).fetchone() == ("pending",)
        assert w.execute("SELECT jobq_release(ARRAY[%s]::uuid[], 'w1')",
                         (ids["released"],)).fetchone() == (1,)
        p.commit()
    # At the commit: completed jobs are left alone; the two whose attempt ended with the job
    # pending again are cancelled, as a cancel of a pending job is; the running one is asked.
    assert _status(conn, ids["done"]) == ("succeeded", False, None)
    assert _status(conn, ids["many"]) == ("succeeded", False, None)
    assert _status(conn, ids["failed"]) == ("cancelled", False, "stop")
    assert _status(conn, ids["released"]) == ("cancelled", False, "stop")
    assert _status(conn, ids["hb"])[:2] == ("processing", True)
    assert conn.execute("SELECT count(*) FROM jobq_cancel_requests").fetchone() == (0,)


def test_request_applied_at_commit_ends_the_attempt_cancelled(
    dsn: str, conn: Conn, producer: str
) -> None:
    job = conn.execute("SELECT jobq_enqueue('c')::text").fetchone()[0]  # type: ignore[index]
    with _worker(dsn) as w, psycopg.connect(producer) as p:
        _claim(w, "w1", "c")
        p.execute("SELECT jobq_cancel(ARRAY[%s]::uuid[])", (job,))
        assert w.execute("SELECT count(*) FROM jobq_cancel_requested(ARRAY[%s]::uuid[])",
                         (job,)).fetchone() == (0,), "not before the commit"
        p.commit()
        assert w.execute("SELECT count(*) FROM jobq_cancel_requested(ARRAY[%s]::uuid[])",
                         (job,)).fetchone() == (1,)
        failed = w.execute("SELECT jobq_fail(%s, 'w1', 'stopped')", (job,)).fetchone()
        assert failed == ("cancelled",)
    assert conn.execute("SELECT cancel_requested FROM jobq_job_status(ARRAY[%s]::uuid[])",
                        (job,)).fetchone() == (True,)


def test_commit_waits_for_a_worker_statement_in_flight_and_orders_after_it(
    dsn: str, conn: Conn, producer: str
) -> None:
    """The commit's trigger takes the row lock: a worker transaction that holds it (a failure
    with a retry, not yet committed) goes first, and the commit then finds the job pending
    and cancels it, as one row lock ordered them before."""
    job = conn.execute("SELECT jobq_enqueue('c')::text").fetchone()[0]  # type: ignore[index]
    with (
        psycopg.connect(dsn, options="-c lock_timeout=2s") as w,
        psycopg.connect(producer) as p,
    ):
        _claim(w, "w1", "c")
        w.commit()
        p.execute("SELECT jobq_cancel(ARRAY[%s]::uuid[])", (job,))
        assert w.execute("SELECT jobq_fail(%s, 'w1', 'boom', backoff => '0')",
                         (job,)).fetchone() == ("pending",)
        committed = threading.Event()
        t = threading.Thread(target=lambda: (p.commit(), committed.set()))
        t.start()
        assert not committed.wait(0.5), "the commit waits for the worker's open failure"
        w.commit()
        t.join(10)
        assert committed.is_set()
    assert _status(conn, job) == ("cancelled", False, "cancelled")


def test_open_cancel_of_a_pending_job_holds_up_no_claim_and_no_worker_call(
    dsn: str, conn: Conn, producer: str
) -> None:
    held = conn.execute(
        "SELECT jobq_enqueue('p', priority => 9)::text"
    ).fetchone()[0]  # type: ignore[index]
    other = conn.execute("SELECT jobq_enqueue('p')::text").fetchone()[0]  # type: ignore[index]
    with _worker(dsn) as w, psycopg.connect(producer) as p:
        assert p.execute("SELECT status FROM jobq_cancel(ARRAY[%s]::uuid[])",
                         (held,)).fetchone() == ("cancelled",)
        # The claim passes over the locked row; calls naming it match no claim and do not wait.
        assert _claim(w, "w1", "p") == (other, 1)
        assert w.execute("SELECT jobq_complete(%s, 'w1')", (held,)).fetchone() == (False,)
        assert w.execute("SELECT jobq_fail(%s, 'w1', 'x')", (held,)).fetchone() == (None,)
        assert w.execute("SELECT jobq_release(ARRAY[%s]::uuid[], 'w1')", (held,)).fetchone() == (0,)
        renewed = w.execute("SELECT jobq_heartbeat('w1', ARRAY[%s]::uuid[])", (held,)).fetchone()
        assert renewed == (0,)
        p.commit()


# -- the Worker bounds its lock waits ---------------------------------------------------------


@contextmanager
def _running(worker: Worker) -> Iterator[Worker]:
    errors: list[BaseException] = []

    def target() -> None:
        try:
            worker.run()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, name="test-lock-worker")
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(60)
    assert not thread.is_alive(), "worker did not stop"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("outcome", ["complete", "fail"])
def test_a_row_locked_by_another_session_holds_up_only_its_own_acknowledgement(
    dsn: str, conn: Conn, outcome: str
) -> None:
    """A second session keeps a running job's row locked (FOR UPDATE, transaction open): the
    Worker's acknowledgement of that job gives up after lock_wait and is retried apart; the
    other jobs keep being completed; the held one is completed once the lock is released."""
    q = Queue(dsn)
    started, go = threading.Event(), threading.Event()

    def handler(job: Job) -> None:
        if job.payload.get("hold"):
            started.set()
            assert go.wait(30)
            if outcome == "fail":
                raise RuntimeError("held")

    held = q.enqueue("t", {"hold": True}, priority=10, max_attempts=1)
    worker = Worker(dsn, {"t": handler}, concurrency=2, lock_wait=0.2, poll_interval=0.1,
                    tick_interval=None, summary_interval=None)
    with _running(worker), psycopg.connect(dsn) as locker:
        assert started.wait(30)
        locker.execute("SELECT 1 FROM jobq_jobs WHERE id = %s FOR UPDATE", (held,))
        go.set()  # its acknowledgement now meets the lock
        others = q.enqueue_many([{"job_type": "t"} for _ in range(30)])
        wait_for(
            "the other jobs' completions while one row is locked",
            lambda: count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE id = ANY(%s) "
                          "AND status = 'succeeded'", others) == len(others),
            30,
        )
        assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE id = %s AND status = "
                     "'processing'", held) == 1, "the held job waits for its lock"
        locker.rollback()
        final = "succeeded" if outcome == "complete" else "dead_letter"
        wait_for(
            "the held job's acknowledgement after the lock is released",
            lambda: count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE id = %s AND status = %s",
                          held, final) == 1,
            30,
        )


@pytest.mark.slow
def test_a_heartbeat_that_met_a_table_lock_is_retried_soon(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    """A session holds jobq_jobs in SHARE mode (as DDL would hold a stronger lock): the
    Worker's heartbeat gives up after lock_wait and is retried within a fraction of a second,
    so the claim is renewed soon after the lock goes, not a whole heartbeat interval later."""
    caplog.set_level(logging.WARNING, logger="pgq_client")
    started, go = threading.Event(), threading.Event()

    def handler(job: Job) -> None:
        started.set()
        assert go.wait(60)

    job = Queue(dsn).enqueue("t")
    interval = 8.0
    worker = Worker(dsn, {"t": handler}, concurrency=1, heartbeat_interval=interval,
                    lock_timeout=60, lock_wait=0.2, poll_interval=0.1, tick_interval=None,
                    summary_interval=None)

    def locked_until() -> Any:
        return conn.execute("SELECT locked_until FROM jobq_jobs WHERE id = %s",
                            (job,)).fetchone()[0]  # type: ignore[index]

    with _running(worker), psycopg.connect(dsn) as locker:
        try:
            assert started.wait(30)
            claimed = locked_until()
            locker.execute("LOCK TABLE jobq_jobs IN SHARE MODE")  # blocks UPDATEs, not reads
            wait_for("the heartbeat to give up on the lock",
                     lambda: "waited for a lock past lock_wait" in caplog.text, 3 * interval)
            locker.rollback()
            released = time.monotonic()
            wait_for("the claim's renewal", lambda: locked_until() > claimed, 3 * interval)
            took = time.monotonic() - released
        finally:
            go.set()
    assert took < 3.0, f"renewed {took:.1f} s after the lock went (heartbeat every {interval} s)"


def test_the_workers_own_connections_carry_lock_wait_as_lock_timeout(dsn: str) -> None:
    """lock_wait is a startup option of the connections the fetcher and the acknowledger open
    (no statement of its own on the hot path), added to the options a caller gave."""
    worker = Worker(dsn, {"t": lambda job: None}, lock_wait=0.25)
    with worker._connector(dsn)() as c:  # what the fetcher and the acknowledger open
        assert c.execute("SHOW lock_timeout").fetchone() == ("250ms",)
    with pytest.raises(ValueError, match="lock_wait"):
        Worker(dsn, {"t": lambda job: None}, lock_wait=0)


# -- a flood of notifications does not multiply claims ----------------------------------------


def _dequeue_calls(conn: Conn, function: str = "jobq_dequeue") -> int:
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = %s",
        (function,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_flood_of_notifications_from_a_role_without_grants_makes_few_claims(
    admin_dsn: str, dsn: str, conn: Conn, make_role: MakeRole
) -> None:
    """Anyone may NOTIFY on a worker's channel. A role without any jobq grant sends 200
    notifications, each in its own transaction; the Worker's claims are counted by the server
    (pg_stat_user_functions, calls of jobq_dequeue): after an empty claim a wake-up waits for
    EMPTY_CLAIM_PAUSE, so the flood makes at most one claim per pause, and a real enqueue after
    it is still claimed at once (the poll interval is far longer)."""
    from pgq_client.worker.fetcher import EMPTY_CLAIM_PAUSE

    name = make_role(prefix="jobq_nobody")
    db = conn.info.dbname
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(sql.SQL("ALTER DATABASE {} SET track_functions = 'pl'").format(
            sql.Identifier(db)))
    try:
        done = threading.Event()
        worker = Worker(dsn, {"t": lambda job: done.set()}, poll_interval=30, lock_wait=0.5,
                        tick_interval=None, summary_interval=None)
        with _running(worker), psycopg.connect(make_conninfo(dsn, user=name),
                                               autocommit=True) as nobody:
            wait_for("the worker's first claim",
                     lambda: count(conn, "SELECT count(*) FROM jobq_workers") == 1, 30)
            time.sleep(0.2)
            flood = 200
            started = time.monotonic()
            for i in range(flood):
                nobody.execute(sql.SQL("NOTIFY {}, {}").format(
                    sql.Identifier("jobq"), sql.Literal("default" if i % 2 else "")))
                time.sleep(0.002)
            took = time.monotonic() - started
            time.sleep(2 * EMPTY_CLAIM_PAUSE)
            enqueued = time.monotonic()
            Queue(dsn).enqueue("t")
            assert done.wait(5), "a real enqueue after the flood is claimed"
            assert time.monotonic() - enqueued < 2.0, "at once, not at the next poll (30 s)"
        # Every worker backend has exited (its counts flushed) once the Worker has stopped.
        wait_for("the worker's sessions to end",
                 lambda: count(conn, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                               "current_database() AND pid <> pg_backend_pid()") == 0, 30)
        calls = _dequeue_calls(conn)
        bound = 3 + took / EMPTY_CLAIM_PAUSE + 2
        assert calls <= bound, f"{calls} claims for {flood} notifications over {took:.2f} s"
        assert calls < flood / 4
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as c:
            c.execute(sql.SQL("ALTER DATABASE {} RESET track_functions").format(
                sql.Identifier(db)))


def test_a_flood_on_the_cancel_channel_makes_few_cancel_checks(
    admin_dsn: str, dsn: str, conn: Conn, make_role: MakeRole
) -> None:
    """The same on the cancel channel, while the Worker holds a job: at most one
    jobq_cancel_requested per CANCEL_CHECK_PAUSE (its heartbeat is minutes away), and a real
    cancel still reaches the handler at once."""
    from pgq_client.worker.acker import CANCEL_CHECK_PAUSE

    name = make_role(prefix="jobq_nobody")
    db = conn.info.dbname
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(sql.SQL("ALTER DATABASE {} SET track_functions = 'all'").format(
            sql.Identifier(db)))
    try:
        started, asked = threading.Event(), threading.Event()

        def handler(job: Job) -> None:
            started.set()
            deadline = time.monotonic() + 30
            while not job.cancel_requested() and time.monotonic() < deadline:
                time.sleep(0.01)
            asked.set()

        job = Queue(dsn).enqueue("t")
        worker = Worker(dsn, {"t": handler}, poll_interval=30, tick_interval=None,
                        summary_interval=None)
        channel = conn.execute(
            "SELECT jobq__event_channel('cancel')"
        ).fetchone()[0]  # type: ignore[index]
        with _running(worker), psycopg.connect(make_conninfo(dsn, user=name),
                                               autocommit=True) as nobody:
            assert started.wait(30)
            flood = 200
            started_at = time.monotonic()
            for _ in range(flood):
                nobody.execute(sql.SQL("NOTIFY {}").format(sql.Identifier(channel)))
                time.sleep(0.002)
            took = time.monotonic() - started_at
            assert not asked.is_set()
            Queue(dsn).cancel([job])
            assert asked.wait(5), "a real cancel still reaches the handler"
        wait_for("the worker's sessions to end",
                 lambda: count(conn, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                               "current_database() AND pid <> pg_backend_pid()") == 0, 30)
        calls = _dequeue_calls(conn, "jobq_cancel_requested")
        bound = 2 + took / CANCEL_CHECK_PAUSE + 2
        assert calls <= bound, f"{calls} cancel checks for {flood} notifications over {took:.2f} s"
        assert calls < flood / 4
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as c:
            c.execute(sql.SQL("ALTER DATABASE {} RESET track_functions").format(
                sql.Identifier(db)))
