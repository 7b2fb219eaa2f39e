"""Cancellation, results and waiting through the Queue and in SQL,
with real sessions: what pgTAP cannot see (NOTIFY is delivered at commit, jobq_await sees other
sessions' commits, isolation levels)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool
from tests.helpers import channel, event_channel, wait_for

from pgq_client import (
    JobFailed,
    JobNotFound,
    JobStatus,
    PayloadTooLarge,
    Queue,
    _sql,
)

Conn = psycopg.Connection[Any]

LONG_POLL = 120.0  # a wait that returns before this was woken by a notification


def claim(dsn: str, worker: str = "w1", n: int = 1) -> list[uuid.UUID]:
    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute(
            "SELECT id FROM jobq_dequeue(worker_id => %s, batch_size => %s)", (worker, n)
        ).fetchall()
    return [r[0] for r in rows]


def sql_one(dsn: str, query: str, *params: object) -> Any:
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute(query, params).fetchone()
    return None if row is None else row[0]


@contextmanager
def in_thread(body: Callable[[], Any]) -> Iterator[list[Any]]:
    """Run ``body`` in a thread; the list gets its return value (or its exception)."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(body())
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    try:
        yield out
    finally:
        thread.join(60)
    assert not thread.is_alive()
    if out and isinstance(out[0], BaseException):
        raise out[0]


def waiting_on(dsn: str, *jobs: uuid.UUID) -> Callable[[], bool]:
    """True once every job is registered as awaited (jobq_awaits): the waiter registers them
    after it LISTENs, so a notification of their end can no longer be missed (the waiter
    listens, or reads it)."""

    def check() -> bool:
        with psycopg.connect(dsn, autocommit=True) as c:
            row = c.execute(
                "SELECT bool_and(EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = j.id))"
                " FROM jobq_all_jobs AS j WHERE j.id = ANY(%s)",
                (list(jobs),),
            ).fetchone()
        return bool(row and row[0])

    return check


# -- status and cancel -------------------------------------------------------------------------


def test_status_reports_each_known_job_in_the_given_order_without_payload(dsn: str) -> None:
    q = Queue(dsn)
    a = q.enqueue("t", {"secret": 1})
    b = q.enqueue("t")
    (claimed,) = claim(dsn)
    assert q.complete(claimed, "w1", result={"pages": 3}) is True
    unknown = uuid.uuid4()
    statuses = q.status([b, unknown, a])
    assert list(statuses) == [b, a], "the given order; an unknown id is left out"
    done = statuses[claimed]
    assert done == JobStatus(claimed, "succeeded", 1, {"pages": 3}, None, done.finished_at, False)
    assert done.finished and done.finished_at is not None
    other = statuses[a if claimed == b else b]
    assert (other.status, other.finished, other.result, other.cancel_requested) == (
        "pending", False, None, False)
    assert not hasattr(other, "payload")
    assert q.status(str(a)) == {a: q.status([a])[a]}, "one id, as a UUID or as text"
    with pytest.raises(ValueError, match="job_ids: 'nope' is not a job id"):
        q.status(["nope"])


def test_cancel_reports_each_job_as_it_is_after_the_call(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    running = q.enqueue("t")
    claim(dsn)
    pending, done = q.enqueue("t"), q.enqueue("t")
    conn.execute("UPDATE jobq_jobs SET status = 'succeeded', finished_at = now() WHERE id = %s",
                 (done,))
    unknown = uuid.uuid4()
    assert q.cancel([done, unknown, running, pending], reason="not needed") == {
        done: "succeeded", running: "cancel_requested", pending: "cancelled"}
    st = q.status([running, pending])
    assert st[running].status == "processing" and st[running].cancel_requested
    assert st[pending].status == "cancelled" and st[pending].last_error == "not needed"
    assert q.cancel(running) == {running: "cancel_requested"}, "again: nothing changes"
    with pytest.raises(ValueError, match="NUL"):
        q.cancel([running], reason="a\x00b")
    with pytest.raises(ValueError, match="job_ids"):
        q.cancel(["1234"])


def test_cancel_in_the_callers_transaction_is_undone_by_its_rollback(dsn: str) -> None:
    q = Queue(dsn)
    job = q.enqueue("t")
    with psycopg.connect(dsn) as c:
        assert q.cancel([job], conn=c) == {job: "cancelled"}
        c.rollback()
    assert q.status([job])[job].status == "pending"


# -- results -----------------------------------------------------------------------------------


def test_result_returns_what_the_job_returned_and_none_for_no_result(dsn: str) -> None:
    q = Queue(dsn)
    a, b = q.enqueue("t"), q.enqueue("t")
    first, second = claim(dsn, n=2)
    assert q.complete_many([first, second], "w1", results=[[1, "two", {"3": None}], None]) == 2
    assert q.result(first) == [1, "two", {"3": None}]
    assert q.result(second) is None
    assert {a, b} == {first, second}


def test_result_raises_job_failed_with_the_status_and_last_error(dsn: str) -> None:
    q = Queue(dsn)
    failed = q.enqueue("t")
    claim(dsn)
    assert q.fail(failed, "w1", "Traceback ...\nValueError: bad input", retry=False) == "failed"
    dead = q.enqueue("t", max_attempts=1)
    claim(dsn)
    assert q.fail(dead, "w1", "boom") == "dead_letter"
    cancelled = q.enqueue("t")
    q.cancel([cancelled], reason="user gave up")
    for job_id, status, last_error in [
        (failed, "failed", "Traceback ...\nValueError: bad input"),
        (dead, "dead_letter", "boom"),
        (cancelled, "cancelled", "user gave up"),
    ]:
        with pytest.raises(JobFailed) as info:
            q.result(job_id)
        assert (info.value.job_id, info.value.status, info.value.last_error) == (
            job_id, status, last_error)
    assert str(info.value) == f"job {cancelled} ended cancelled: user gave up"
    with pytest.raises(JobFailed, match="ended failed: ValueError: bad input"):
        q.result(failed)


def test_result_of_a_job_that_does_not_finish_in_time_raises_timeout_error(dsn: str) -> None:
    q = Queue(dsn)
    job = q.enqueue("t")
    with pytest.raises(TimeoutError, match=f"job {job} has not finished within 0.2 s"):
        q.result(job, timeout=0.2, poll_interval=0.05)
    with pytest.raises(JobNotFound, match="no job"):
        q.result(uuid.uuid4(), timeout=0)


def test_a_result_over_the_size_limit_is_refused_and_changes_nothing(dsn: str) -> None:
    q = Queue(dsn)
    q.configure(max_payload_bytes=1000)
    job = q.enqueue("t")
    claim(dsn)
    before = q.status([job])
    with pytest.raises(PayloadTooLarge, match=r"result is \d+ bytes, the limit is 1000 bytes"):
        q.complete(job, "w1", result={"s": "x" * 2000})
    with pytest.raises(PayloadTooLarge, match=r"results\[1\]"):
        q.complete_many([job], "w1", results=[["x" * 2000]])
    assert q.status([job]) == before
    with pytest.raises(TypeError, match="the result is not JSON-serializable"):
        q.complete(job, "w1", result={1, 2})
    with pytest.raises(ValueError, match="the result is not JSON-serializable"):
        q.complete(job, "w1", result=float("nan"))
    assert q.complete(job, "w1", result={"s": "x" * 100}) is True


# -- waiting -----------------------------------------------------------------------------------


def test_wait_is_woken_by_the_notification_of_each_kind_of_end(dsn: str) -> None:
    q = Queue(dsn)
    jobs = [q.enqueue("t") for _ in range(3)]
    x, y = claim(dsn, n=2)
    (z,) = [j for j in jobs if j not in (x, y)]
    with in_thread(lambda: q.wait(jobs, timeout=60, poll_interval=LONG_POLL)) as out:
        wait_for("the wait to listen", waiting_on(dsn, *jobs))
        other = Queue(dsn)
        other.complete(x, "w1", result="ok")
        other.fail(y, "w1", "no", retry=False)
        other.cancel([z])
    statuses = out[0]
    assert [statuses[j].status for j in (x, y, z)] == ["succeeded", "failed", "cancelled"]
    assert list(statuses) == jobs


def test_wait_returns_on_a_completion_not_on_a_poll(dsn: str) -> None:
    q = Queue(dsn)
    job = q.enqueue("t")
    claim(dsn)
    with in_thread(lambda: q.wait([job], timeout=60, poll_interval=LONG_POLL)) as out:
        wait_for("the wait to listen", waiting_on(dsn, job))
        Queue(dsn).complete(job, "w1", result=7)
    # 60 s timeout, 120 s poll: only the notification could have ended the wait finished
    assert out[0][job].status == "succeeded" and out[0][job].result == 7


def test_a_completion_committed_before_the_waiter_listens_is_still_seen(dsn: str) -> None:
    q = Queue(dsn)
    job = q.enqueue("t")
    claim(dsn)
    q.complete(job, "w1", result="early")
    assert q.result(job, timeout=60, poll_interval=LONG_POLL) == "early"


def test_a_lost_notification_is_made_up_for_by_the_poll(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    job = q.enqueue("t")
    claim(dsn)
    with in_thread(lambda: q.wait([job], timeout=60, poll_interval=0.1)) as out:
        wait_for("the wait to listen", waiting_on(dsn, job))
        # unregister it, so that the completion sends nothing: only a poll can see it
        conn.execute("DELETE FROM jobq_awaits WHERE job_id = %s", (job,))
        Queue(dsn).complete(job, "w1")
    assert out[0][job].status == "succeeded"


def test_wait_until_the_timeout_returns_the_statuses_at_that_moment(dsn: str) -> None:
    q = Queue(dsn)
    job = q.enqueue("t")
    statuses = q.wait([job], timeout=0.2, poll_interval=0.05)
    assert statuses[job].status == "pending" and not statuses[job].finished
    assert q.wait([], timeout=1) == {}
    assert q.wait([uuid.uuid4()], timeout=60) == {}, "unknown ids are not waited for"
    with pytest.raises(ValueError, match="timeout must not be negative"):
        q.wait([job], timeout=-1)
    with pytest.raises(ValueError, match="poll_interval must be positive"):
        q.wait([job], poll_interval=0)


def test_wait_holds_no_snapshot_while_it_waits(dsn: str) -> None:
    q = Queue(dsn)
    job = q.enqueue("t")
    with in_thread(lambda: q.wait([job], timeout=60, poll_interval=LONG_POLL)) as out:
        wait_for("the wait to listen", waiting_on(dsn, job))
        with psycopg.connect(dsn, autocommit=True) as c:
            holding = c.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND backend_xmin IS NOT NULL AND pid <> pg_backend_pid()"
            ).fetchone()
            assert holding == (0,), "the waiter holds no snapshot (VACUUM is not held back)"
        Queue(dsn).cancel([job])
    assert out[0][job].status == "cancelled"


@pytest.mark.parametrize("kind", ["connection", "pool", "connection in a transaction"])
def test_wait_on_a_given_connection_or_pool(dsn: str, kind: str) -> None:
    job = Queue(dsn).enqueue("t")
    claim(dsn)
    if kind == "pool":
        with ConnectionPool(dsn, min_size=1, max_size=1, open=True) as pool:
            q = Queue(pool)
            with in_thread(lambda: q.wait([job], timeout=60, poll_interval=LONG_POLL)) as out:
                wait_for("the wait to listen", waiting_on(dsn, job))
                Queue(dsn).complete(job, "w1")
            with pool.connection() as c:  # the pool's connection is given back as it was
                assert c.execute("SELECT pg_listening_channels()").fetchall() == []
    else:
        with psycopg.connect(dsn, autocommit=kind == "connection") as c:
            if kind != "connection":
                c.execute("SELECT 1")  # a transaction is open: the wait polls
            q = Queue(c)
            poll = LONG_POLL if kind == "connection" else 0.1
            with in_thread(lambda: q.wait([job], timeout=60, poll_interval=poll)) as out:
                if kind == "connection":
                    wait_for("the wait to listen", waiting_on(dsn, job))
                Queue(dsn).complete(job, "w1")
            assert c.execute("SELECT pg_listening_channels()").fetchall() == []
    assert out[0][job].status == "succeeded"


# -- the notifications themselves ---------------------------------------------------------------


def listener(dsn: str, kind: str) -> Conn:
    c = psycopg.connect(dsn, autocommit=True)
    c.execute(_sql.listen(event_channel("public", kind)))
    return c


def payloads(c: Conn) -> list[str]:
    return [n.payload for n in c.notifies(timeout=0.5)]


def test_only_jobs_someone_awaits_are_notified_when_they_end(dsn: str) -> None:
    q = Queue(dsn)
    ids = q.enqueue_many([{"job_type": "t"} for _ in range(6)])
    claimed = claim(dsn, n=6)
    awaited = claimed[:3]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT * FROM jobq_await(%s, '0')", (awaited,))
    with listener(dsn, _sql.DONE) as c:
        q.complete_many(claimed[::2], "w1")  # two of them awaited
        # one notification per transaction, naming no job: waiters re-read their statuses
        assert payloads(c) == [_sql.CHECK_ALL]
        q.complete(claimed[1], "w1")  # awaited
        q.complete(claimed[3], "w1")  # not awaited
        assert payloads(c) == [_sql.CHECK_ALL]
        assert q.fail(claimed[5], "w1", "e", backoff=0) == "pending"  # not awaited: nothing
        assert payloads(c) == []
    assert set(ids) == set(claimed)


@pytest.mark.slow  # seconds of waiting
def test_every_end_of_an_awaited_job_is_notified_and_a_retry_is_not(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    jobs = q.enqueue_many([{"job_type": "t", "max_attempts": 2} for _ in range(5)])
    conn.execute("SELECT * FROM jobq_await(%s, '0')", (jobs,))
    a, b, c_, d = claim(dsn, n=4)
    (e,) = [j for j in jobs if j not in (a, b, c_, d)]
    with listener(dsn, _sql.DONE) as c:
        assert q.fail(a, "w1", "e", backoff=0) == "pending"
        assert payloads(c) == [], "a retry is not an end"
        assert q.fail(b, "w1", "e", retry=False) == "failed"
        assert payloads(c) == [_sql.CHECK_ALL]
        q.cancel([c_, e])  # c_ is running: a request, no end yet; e is cancelled at once
        assert payloads(c) == [_sql.CHECK_ALL]
        assert q.release([c_], "w1") == 1  # released with a request: cancelled
        assert payloads(c) == [_sql.CHECK_ALL]
        conn.execute("SELECT jobq_cancel(ARRAY[%s]::uuid[])", (d,))
        conn.execute("UPDATE jobq_jobs SET locked_at = locked_at - interval '1 hour',"
            " locked_until = locked_until - interval '1 hour' WHERE id = %s",
                     (d,))
        conn.execute("SELECT * FROM jobq_dequeue('w2', lock_timeout => '1 minute')")
        assert payloads(c) == [_sql.CHECK_ALL], "a takeover that ends the job"
    assert q.status([d])[d].status == "cancelled"


def test_more_than_100_ends_in_one_statement_are_one_notification(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    jobs = q.enqueue_many([{"job_type": "t"} for _ in range(150)])
    conn.execute("SELECT * FROM jobq_await(%s, '0')", (jobs,))
    with listener(dsn, _sql.DONE) as c:
        assert len(q.cancel(jobs)) == 150
        assert payloads(c) == [_sql.CHECK_ALL]


def test_a_cancel_of_running_jobs_notifies_the_workers_without_naming_them(dsn: str) -> None:
    q = Queue(dsn)
    a, b = q.enqueue("t"), q.enqueue("t")
    (first,) = claim(dsn, "worker-a")
    (second,) = claim(dsn, "worker-b")
    with listener(dsn, _sql.CANCEL_EVENT) as c:
        q.cancel([first, second])
        assert payloads(c) == [_sql.CHECK_ALL], "one, at the commit: workers re-check"
        q.cancel([first])
        assert payloads(c) == [], "no second request, no second notification"
    assert {a, b} == {first, second}


def test_no_notification_carries_a_job_id_or_a_worker_id(dsn: str, conn: Conn) -> None:
    """Anyone may LISTEN: a payload is readable by roles that may not read the jobs. Every end
    of an awaited job and every cancel request is announced with an empty payload; the
    wake-ups carry the queue name (docs/sql-api.md, jobq_enqueue) and nothing else."""
    q = Queue(dsn)
    jobs = q.enqueue_many([{"job_type": "t", "queue": "qn"} for _ in range(6)])
    conn.execute("SELECT * FROM jobq_await(%s, '0')", (jobs,))
    with psycopg.connect(dsn, autocommit=True) as c:
        for name in (channel("public"), event_channel("public", _sql.DONE),
                        event_channel("public", _sql.CANCEL_EVENT)):
            c.execute(_sql.listen(name))
        a, b, d, e, f = claim(dsn, "secret-worker", n=5)
        q.complete(a, "secret-worker")
        q.complete_many([b], "secret-worker")
        q.fail(d, "secret-worker", "x", retry=False)
        q.cancel([e, f])
        q.release([e], "secret-worker")
        q.enqueue("t", queue="qn")
        seen = [(n.channel, n.payload) for n in c.notifies(timeout=0.5)]
    assert {p for _, p in seen} <= {_sql.CHECK_ALL, "qn"}, seen
    channels = {channel("public"), event_channel("public", _sql.DONE),
                event_channel("public", _sql.CANCEL_EVENT)}
    assert {ch for ch, _ in seen} == channels


def test_the_channels_are_named_by_the_server_as_by_the_client(dsn: str) -> None:
    long_schema = "s" * 60
    with psycopg.connect(dsn, autocommit=True) as c:
        for schema in ("public", "tenant_a", long_schema):
            for kind in (_sql.DONE, _sql.CANCEL_EVENT):
                row = c.execute(_sql.EVENT_CHANNEL, {"schema": schema, "kind": kind}).fetchone()
                assert row == (event_channel(schema, kind),)
                assert len(row[0].encode()) <= 63  # type: ignore[index]
        assert event_channel(long_schema, "done").startswith("jobq-done#")


# -- jobq_await in SQL ---------------------------------------------------------------------------


@pytest.mark.parametrize("end", ["complete", "fail"])
def test_jobq_await_sees_a_commit_made_while_it_waits(dsn: str, end: str) -> None:
    q = Queue(dsn)
    job = q.enqueue("t")
    claim(dsn)

    def await_in_sql() -> str:
        with psycopg.connect(dsn, autocommit=True) as c:
            row = c.execute("SELECT status FROM jobq_await(ARRAY[%s]::uuid[], '1 minute')",
                            (job,)).fetchone()
        return str(row[0])  # type: ignore[index]

    with in_thread(await_in_sql) as out:
        wait_for(
            "jobq_await to be waiting",
            lambda: bool(sql_one(
            dsn, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND query LIKE '%%jobq_await(ARRAY%%'"
            " AND state = 'active' AND pid <> pg_backend_pid()")),
        )
        if end == "complete":
            q.complete(job, "w1")
        else:
            q.fail(job, "w1", "e", retry=False)
    # within the minute, only a commit seen while waiting makes it finished
    assert out == ["succeeded" if end == "complete" else "failed"]


def test_jobq_await_refuses_to_wait_under_repeatable_read(dsn: str) -> None:
    job = Queue(dsn).enqueue("t")
    with psycopg.connect(dsn) as c:
        c.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        with pytest.raises(psycopg.errors.InvalidTransactionState,
                           match="cannot wait in a REPEATABLE READ transaction"):
            c.execute("SELECT * FROM jobq_await(ARRAY[%s]::uuid[], '1 second')", (job,))
        c.rollback()
        rows = c.execute("SELECT status FROM jobq_await(ARRAY[%s]::uuid[], '0')", (job,))
        assert rows.fetchall() == [("pending",)], "timeout 0 reads the statuses once"
        c.rollback()


def test_bad_timeouts_are_refused_by_the_client_and_the_server(dsn: str) -> None:
    job = Queue(dsn).enqueue("t")
    with psycopg.connect(dsn, autocommit=True) as c, pytest.raises(
        psycopg.errors.InvalidParameterValue, match="timeout must be between 0 and 5 minutes"
    ):
        c.execute("SELECT * FROM jobq_await(ARRAY[%s]::uuid[], '6 minutes')", (job,))
    with pytest.raises(TypeError, match="timeout"):
        Queue(dsn).wait([job], timeout="soon")  # type: ignore[arg-type]
