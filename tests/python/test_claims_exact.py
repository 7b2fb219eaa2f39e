"""Claims that return exactly what the contract promises beside another session's open
transaction (issue 41): a limited claim reads past the rows another transaction holds, and
jobq_await registers interest without waiting on, or holding, a row lock a worker needs. The
reproductions that need one session only are in tests/pgtap (dequeue.sql, limits.sql,
prune.sql); the model-based test of the whole API is tests/python/test_model.py."""

from __future__ import annotations

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


def test_limited_claim_reads_past_rows_another_transaction_holds(dsn: str, conn: Conn) -> None:
    """Issue 41, item 2: session B's open claim holds u1 and u2; with a limited job waiting, a
    claim of one job in session A returns u3, not nothing."""
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
