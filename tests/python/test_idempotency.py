"""Idempotency keys are unique per job type: the same key under another job type is another job.

What one session shows (each enqueue path, each status, the index) is in tests/pgtap/enqueue*.sql.
Here: concurrent sessions enqueuing one key under two job types at once (each type dedupes on
its own job, through jobq_enqueue, jobq_enqueue_many and jobq_enqueue_arrays), and a producer of
one type that cannot reach the other type's job through its key.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from tests.helpers import MakeRole

Conn = psycopg.Connection[Any]

ENQUEUE = {
    "enqueue": "SELECT jobq_enqueue(job_type => %(t)s, idempotency_key => %(k)s)",
    "enqueue_many": (
        "SELECT id FROM jobq_enqueue_many(jsonb_build_array(jsonb_build_object("
        "'job_type', %(t)s::text, 'idempotency_key', %(k)s::text)))"
    ),
    "enqueue_arrays": (
        "SELECT id FROM jobq_enqueue_arrays(ARRAY[%(t)s::text],"
        " idempotency_keys => ARRAY[%(k)s::text])"
    ),
}


def test_concurrent_enqueues_of_one_key_under_two_job_types_make_one_job_per_type(
    dsn: str, conn: Conn
) -> None:
    """24 sessions at once, each enqueuing key "k" under job type "a" or "b" through one of
    the three enqueue functions: exactly one job per type, every caller gets its type's id."""
    callers = [(t, path) for t in ("a", "b") for path in ENQUEUE for _ in range(4)]
    barrier = threading.Barrier(len(callers))
    got: list[tuple[str, uuid.UUID]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def enqueue(job_type: str, path: str) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                barrier.wait()
                row = c.execute(ENQUEUE[path], {"t": job_type, "k": "k"}).fetchone()
                assert row is not None
                with lock:
                    got.append((job_type, row[0]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=enqueue, args=c) for c in callers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = dict(
        conn.execute(
            "SELECT job_type, id FROM jobq_all_jobs WHERE idempotency_key = 'k'"
        ).fetchall()
    )
    assert set(rows) == {"a", "b"} and rows["a"] != rows["b"]
    assert sorted(got) == sorted((t, rows[t]) for t, _ in callers)


def test_a_producer_of_another_type_cannot_reach_a_job_through_its_key(
    dsn: str, make_role: MakeRole
) -> None:
    """A producer (the level of `jobq grant --as producer`) that enqueues another type with
    the key of an existing job gets its own job: the first job's status, result and pending
    state are out of its reach."""
    role = make_role("producer", dsn=dsn, login=False, prefix="jobq_idem")
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute(
            "SELECT jobq_enqueue('invoice', %s, idempotency_key => 'order:42')",
            [Jsonb({"secret": 1})],
        ).fetchone()
        assert row is not None
        first = row[0]
        with c.transaction():
            c.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
            row = c.execute(
                "SELECT jobq_enqueue('probe', idempotency_key => 'order:42')"
            ).fetchone()
            assert row is not None and row[0] != first
            mine = row[0]
            assert c.execute(
                "SELECT id FROM jobq_job_status(ARRAY[%s]::uuid[])", [mine]
            ).fetchall() == [(mine,)]
            assert c.execute(
                "SELECT job_id, status FROM jobq_cancel(ARRAY[%s]::uuid[])", [mine]
            ).fetchall() == [(mine, "cancelled")]
        assert c.execute(
            "SELECT status, payload FROM jobq_all_jobs WHERE id = %s", [first]
        ).fetchone() == ("pending", {"secret": 1})

