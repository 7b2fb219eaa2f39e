"""Finished jobs in jobq_jobs_history, with real sessions: what pgTAP cannot show in one
transaction (an enqueue racing the move of its key's job, a lock held by another session
against the maintenance) and the Queue/Worker paths that read results after the move."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import psycopg
import pytest
from tests.helpers import count, wait_for

from pgq_client import Queue, Worker

Conn = psycopg.Connection[Any]

OLD = "jobq__history_succeeded_20000101"  # a partition of long-expired succeeded jobs


def claim_one(conn: Conn, job_type: str) -> uuid.UUID:
    row = conn.execute(
        "SELECT id FROM jobq_dequeue(worker_id => 'w1', job_types => ARRAY[%s])", (job_type,)
    ).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def waiting_on_lock(conn: Conn, pid: int) -> bool:
    row = conn.execute(
        "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", (pid,)
    ).fetchone()
    return bool(row and row[0])


def test_an_enqueue_racing_the_move_of_its_keys_job_returns_that_job(dsn: str, conn: Conn) -> None:
    """A completion moves a keyed job to the history in a transaction left open; an enqueue
    of the same key in another session waits for it, and after the commit returns the
    finished job's id, adding no job: the key stays on one job across both tables."""
    job_id = conn.execute("SELECT jobq_enqueue('race', idempotency_key => 'k')").fetchone()
    assert job_id is not None
    assert claim_one(conn, "race") == job_id[0]
    with psycopg.connect(dsn) as mover, psycopg.connect(dsn, autocommit=True) as enqueuer:
        mover.execute("SELECT jobq_complete(%s, 'w1')", (job_id[0],))  # not committed yet
        pid = enqueuer.info.backend_pid
        out: list[Any] = []

        def enqueue() -> None:
            try:
                row = enqueuer.execute(
                    "SELECT jobq_enqueue('race', idempotency_key => 'k')"
                ).fetchone()
                out.append(row[0] if row else None)
            except psycopg.Error as exc:
                out.append(exc)

        thread = threading.Thread(target=enqueue)
        thread.start()
        wait_for(
            "the enqueue to wait for the moving transaction", lambda: waiting_on_lock(conn, pid)
        )
        mover.commit()
        thread.join(30)
    assert out == [job_id[0]]
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE idempotency_key = 'k'") == 1
    assert count(conn, "SELECT count(*) FROM jobq_jobs") == 0


def test_many_enqueues_racing_the_move_get_one_id(dsn: str, conn: Conn) -> None:
    """Eight sessions enqueue one key while the completion of its job commits: every one gets
    the job's id, and one job has the key."""
    row = conn.execute("SELECT jobq_enqueue('race', idempotency_key => 'many')").fetchone()
    assert row is not None
    job_id = row[0]
    claim_one(conn, "race")
    barrier = threading.Barrier(9)
    ids: list[Any] = []

    def enqueue() -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            barrier.wait()
            got = c.execute("SELECT jobq_enqueue('race', idempotency_key => 'many')").fetchone()
            ids.append(got[0] if got else None)

    threads = [threading.Thread(target=enqueue) for _ in range(8)]
    for t in threads:
        t.start()
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()
        c.execute("SELECT jobq_complete(%s, 'w1')", (job_id,))
    for t in threads:
        t.join(30)
    assert ids == [job_id] * 8
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE idempotency_key = 'many'") == 1


def test_a_repeatable_read_enqueue_racing_the_move_is_a_serialization_failure(
    dsn: str, conn: Conn
) -> None:
    """Under REPEATABLE READ an enqueue whose snapshot still sees the key's job live, moved
    since, fails with 40001 (as ON CONFLICT does for a key it cannot see) rather than adding a
    second job; retried, it returns that job's id."""
    row = conn.execute("SELECT jobq_enqueue('race', idempotency_key => 'rr')").fetchone()
    assert row is not None
    job_id = row[0]
    claim_one(conn, "race")
    with psycopg.connect(dsn) as producer:
        producer.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        producer.execute("SELECT 1")  # the snapshot
        conn.execute("SELECT jobq_complete(%s, 'w1')", (job_id,))
        with pytest.raises(psycopg.errors.SerializationFailure):
            producer.execute("SELECT jobq_enqueue('race', idempotency_key => 'rr')")
        producer.rollback()
        again = producer.execute("SELECT jobq_enqueue('race', idempotency_key => 'rr')").fetchone()
        producer.commit()
    assert again == (job_id,)
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE idempotency_key = 'rr'") == 1


def test_maintenance_gives_up_on_a_held_lock_and_the_next_call_drops(dsn: str, conn: Conn) -> None:
    """An expired partition whose parent another session holds (a reader of the history in an
    open transaction): the maintenance waits at most its lock_timeout, reports the drop as
    skipped and leaves the partition; a completion meanwhile goes through; once the reader
    commits, the next call drops it."""
    conn.execute(
        "CREATE TABLE jobq__history_succeeded_20000101 PARTITION OF jobq__history_succeeded"
        " FOR VALUES FROM ('2000-01-01 00:00+00') TO ('2000-01-02 00:00+00')"
    )
    conn.execute("SELECT * FROM jobq_set_retention('succeeded', interval '1 day')")
    with psycopg.connect(dsn) as reader:
        reader.execute("SELECT count(*) FROM jobq_jobs_history")  # holds ACCESS SHARE
        started = time.monotonic()
        rows = conn.execute(
            "SELECT action, partition_name FROM jobq_maintain_history(lock_timeout => '50 ms')"
        ).fetchall()
        waited = time.monotonic() - started
        assert rows == [("skipped", OLD)]
        assert waited < 5, "the maintenance waits about lock_timeout, not for the reader"
        job = conn.execute("SELECT jobq_enqueue('after')").fetchone()
        assert job is not None
        claim_one(conn, "after")
        assert conn.execute("SELECT jobq_complete(%s, 'w1')", (job[0],)).fetchone() == (True,)
        assert count(conn, "SELECT count(*) FROM pg_class WHERE relname = %s", OLD) == 1
        reader.commit()
    rows = conn.execute("SELECT action, partition_name FROM jobq_maintain_history()").fetchall()
    assert rows == [("dropped", OLD)]
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE job_type = 'after'") == 1


def test_results_and_waits_read_the_history(dsn: str, conn: Conn) -> None:
    """A Worker completes jobs (one transactionally) and fails one for good: Queue.status,
    Queue.wait and Queue.result read them from the history, where they are, not jobq_jobs."""
    conn.execute("CREATE TABLE side_effects (job_id uuid PRIMARY KEY)")
    queue = Queue(dsn)
    plain = queue.enqueue("plain", {"n": 2})
    tx = queue.enqueue("tx", {"n": 3})
    bad = queue.enqueue("bad", {}, max_attempts=1)

    def plain_handler(job: Any) -> Any:
        return {"double": job.payload["n"] * 2}

    def tx_handler(job: Any, c: Conn) -> Any:
        c.execute("INSERT INTO side_effects VALUES (%s)", (job.id,))
        return {"triple": job.payload["n"] * 3}

    def bad_handler(job: Any) -> Any:
        raise RuntimeError("no")

    worker = Worker(dsn, handlers={"plain": plain_handler, "tx": tx_handler, "bad": bad_handler})
    worker.run(burst=True)
    statuses = queue.wait([plain, tx, bad], timeout=10)
    assert {i: s.status for i, s in statuses.items()} == {
        plain: "succeeded", tx: "succeeded", bad: "dead_letter",
    }
    assert queue.result(plain, timeout=1) == {"double": 4}
    assert queue.result(tx, timeout=1) == {"triple": 9}
    assert count(conn, "SELECT count(*) FROM side_effects") == 1
    assert count(conn, "SELECT count(*) FROM jobq_jobs") == 0
    assert count(conn, "SELECT count(*) FROM jobq_jobs_history") == 3
    queue.close()
