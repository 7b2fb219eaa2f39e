"""Claims that return exactly what docs/sql-api.md promises beside another session's open
transaction: a limited claim reads past the rows another transaction holds, and
jobq_await registers interest without waiting on, or holding, a row lock a worker needs. The
reproductions that need one session only are in tests/pgtap (dequeue.sql, limits.sql,
prune.sql); the model-based test of the whole API is tests/python/test_model.py."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg

Conn = psycopg.Connection[Any]


def enqueue(conn: Conn, job_type: str, **kw: object) -> uuid.UUID:
    args = ", ".join(f"{k} => %({k})s" for k in kw)
    sep = ", " if args else ""
    row = conn.execute(f"SELECT jobq_enqueue(%(t)s{sep}{args})", {"t": job_type, **kw}).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def test_a_claim_of_one_range_reads_past_a_row_another_transaction_holds(
    dsn: str, conn: Conn
) -> None:
    """Another session holds the first job's row (FOR UPDATE, its transaction open): a claim
    of that job type takes the next job at once instead of waiting for that transaction, and
    the held job is claimed once it is released."""
    first = enqueue(conn, "t", priority=5)
    second = enqueue(conn, "t", priority=4)
    conn.execute("SET lock_timeout = '2s'")  # a claim that waited would fail with 55P03
    claim = "SELECT id FROM jobq_dequeue('wA', job_types => ARRAY['t'], batch_size => 1)"
    with psycopg.connect(dsn) as other:
        other.execute("SELECT 1 FROM jobq_jobs WHERE id = %s FOR UPDATE", (first,))
        assert [r[0] for r in conn.execute(claim)] == [second]
        other.rollback()
    assert [r[0] for r in conn.execute(claim)] == [first]


def test_limited_claim_reads_past_rows_another_transaction_holds(dsn: str, conn: Conn) -> None:
    """Session B's open claim holds u1 and u2; with a limited job waiting, a claim of one job
    in session A returns u3, not nothing."""
    u1 = enqueue(conn, "t", priority=5)
    u2 = enqueue(conn, "t", priority=4)
    u3 = enqueue(conn, "t", priority=3)
    enqueue(conn, "t", priority=0, limit_group="g")
    with psycopg.connect(dsn) as b:
        held = [r[0] for r in b.execute("SELECT id FROM jobq_dequeue('wB', batch_size => 2)")]
        assert held == [u1, u2]
        got = [r[0] for r in conn.execute("SELECT id FROM jobq_dequeue('wA', batch_size => 1)")]
        assert got == [u3]
        b.rollback()


def test_limited_claim_takes_a_keys_next_job_when_its_first_is_held(dsn: str, conn: Conn) -> None:
    """A key with room 1 whose first job another transaction holds (not claimed: a row lock
    only) gives its next job instead, and never more than its room."""
    conn.execute("SELECT jobq_set_limit('g', max_running => 1)")
    l1 = enqueue(conn, "t", priority=5, limit_group="g")
    l2 = enqueue(conn, "t", priority=4, limit_group="g")
    enqueue(conn, "t", priority=3, limit_group="g")
    with psycopg.connect(dsn) as b:
        b.execute("SELECT 1 FROM jobq_jobs WHERE id = %s FOR UPDATE", (l1,))
        got = [r[0] for r in conn.execute("SELECT id FROM jobq_dequeue('wA', batch_size => 5)")]
        assert got == [l2]
        b.rollback()


def test_await_with_timeout_zero_never_waits_for_a_row_lock(dsn: str, conn: Conn) -> None:
    """A worker's acknowledgement in flight holds the job's row; jobq_await(ids, '0') returns
    at once all the same, without waiting for that transaction."""
    job = enqueue(conn, "t")
    conn.execute("SELECT id FROM jobq_dequeue('w1')")
    with psycopg.connect(dsn) as worker:
        worker.execute("SELECT jobq_heartbeat('w1', ARRAY[%s]::uuid[])", (job,))  # holds the row
        with psycopg.connect(dsn, autocommit=True) as producer:
            producer.execute("SET lock_timeout = '2s'")
            rows = producer.execute(
                "SELECT id, status FROM jobq_await(ARRAY[%s]::uuid[], '0')", (job,)
            ).fetchall()
            assert rows == [(job, "processing")]
        worker.rollback()


def test_open_await_holds_no_lock_a_completion_waits_for(dsn: str, conn: Conn) -> None:
    """jobq_await(ids, '0') left open in a producer's transaction; the
    worker's completion does not wait for it, and once the producer commits, the job's next
    end is announced on the done channel."""
    job = enqueue(conn, "t")
    conn.execute("SELECT id FROM jobq_dequeue('w1')")
    with psycopg.connect(dsn) as producer:
        producer.execute("SELECT * FROM jobq_await(ARRAY[%s]::uuid[], '0')", (job,)).fetchall()
        with psycopg.connect(dsn, autocommit=True) as worker:
            worker.execute("SET lock_timeout = '2s'")
            done = worker.execute("SELECT jobq_complete(%s, 'w1')", (job,)).fetchone()
            assert done == (True,)
        producer.commit()

    # Registered and committed: the end of a job is notified once.
    other = enqueue(conn, "t")
    conn.execute("SELECT id FROM jobq_dequeue('w1')")
    channel = conn.execute("SELECT jobq__event_channel('done')").fetchone()
    assert channel is not None
    with psycopg.connect(dsn, autocommit=True) as listener:
        listener.execute(f'LISTEN "{channel[0]}"')
        conn.execute("SELECT * FROM jobq_await(ARRAY[%s]::uuid[], '0')", (other,)).fetchall()
        got: list[str] = []

        def listen() -> None:
            for note in listener.notifies(timeout=5.0, stop_after=1):
                got.append(note.payload)

        t = threading.Thread(target=listen)
        t.start()
        assert conn.execute("SELECT jobq_complete(%s, 'w1')", (other,)).fetchone() == (True,)
        t.join()
        assert len(got) == 1
        left = conn.execute(
            "SELECT count(*) FROM jobq_awaits WHERE job_id = %s", (other,)
        ).fetchone()
        assert left == (0,)  # the completion that announced it removed the registration

    # The first registration committed after its job had ended: jobq_prune removes it.
    stale = conn.execute("SELECT count(*) FROM jobq_awaits WHERE job_id = %s", (job,)).fetchone()
    assert stale == (1,)
    conn.execute("SELECT jobq_prune()")
    assert conn.execute("SELECT count(*) FROM jobq_awaits").fetchone() == (0,)


def test_prune_batch_reads_past_a_row_another_transaction_holds(dsn: str, conn: Conn) -> None:
    """The oldest finished job is held by another session: a batch of one deletes the next
    oldest (of whichever status), not nothing."""
    ids = [
        r[0]
        for r in conn.execute(
            """INSERT INTO jobq_jobs (job_type, status, finished_at)
               VALUES ('t', 'succeeded', now() - interval '3 days'),
                      ('t', 'failed', now() - interval '2 days'),
                      ('t', 'succeeded', now() - interval '1 day')
               RETURNING id"""
        )
    ]
    with psycopg.connect(dsn) as other:
        other.execute("SELECT 1 FROM jobq_jobs_history WHERE id = %s FOR UPDATE", (ids[0],))
        got = conn.execute(
            "SELECT jobq_prune('0', '{succeeded,failed}', batch_size => 1)"
        ).fetchone()
        assert got == (1,)
        left = {r[0] for r in conn.execute("SELECT id FROM jobq_all_jobs")}
        assert left == {ids[0], ids[2]}
        other.rollback()
