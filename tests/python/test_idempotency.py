"""Idempotency keys are unique per job type: the same key under another job type is another job.

What one session shows (each enqueue path, each status, the index) is in tests/pgtap/enqueue*.sql.
Here: concurrent sessions enqueuing one key under two job types at once (each type dedupes on
its own job, through jobq_enqueue, jobq_enqueue_many and jobq_enqueue_arrays), a producer of
one type that cannot reach the other type's job through its key, and the upgrade of an install
made before migration 0014 (existing keys keep their jobs; the wider unique index is built).
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from tests.helpers import MakeRole

from pgq_client.migrate import migrate

ROOT = Path(__file__).resolve().parents[2]
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
            "SELECT job_type, id FROM jobq_jobs WHERE idempotency_key = 'k'"
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
            "SELECT status, payload FROM jobq_jobs WHERE id = %s", [first]
        ).fetchone() == ("pending", {"secret": 1})


def test_an_install_before_0014_upgrades_keeping_its_keys_per_job_type(
    empty_dsn: str, tmp_path: Path
) -> None:
    """Keys enqueued before the upgrade (unique across job types then) keep their jobs: the
    same type still gets the existing id, another type now gets a job of its own."""
    before = tmp_path / "migrations"
    before.mkdir()
    for f in sorted((ROOT / "sql" / "migrations").glob("00*.sql")):
        if f.name < "0014":
            (before / f.name).write_bytes(f.read_bytes())
    migrate(empty_dsn, migrations_dir=before)
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        old_index = c.execute(
            "SELECT pg_get_indexdef('jobq_jobs_idempotency_key_key'::regclass)"
        ).fetchone()
        assert old_index is not None and "(idempotency_key)" in old_index[0]
        # The rows an older jobq wrote: keys unique across types, one without a key.
        existing = dict(
            c.execute(
                "INSERT INTO jobq_jobs (job_type, idempotency_key) VALUES"
                " ('a', 'k1'), ('b', 'k2'), ('a', NULL), ('a', NULL)"
                " RETURNING coalesce(idempotency_key, id::text), id"
            ).fetchall()
        )
        assert "0014_jobq_hardening" in migrate(empty_dsn)
        index = c.execute(
            "SELECT pg_get_indexdef('jobq_jobs_idempotency_key_key'::regclass)"
        ).fetchone()
        assert index is not None
        assert "(job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL)" in index[0]
        assert c.execute("SELECT jobq_enqueue('a', idempotency_key => 'k1')").fetchone() == (
            existing["k1"],
        )
        assert c.execute("SELECT jobq_enqueue('b', idempotency_key => 'k2')").fetchone() == (
            existing["k2"],
        )
        row = c.execute("SELECT jobq_enqueue('b', idempotency_key => 'k1')").fetchone()
        assert row is not None and row[0] not in existing.values()
        assert c.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (5,)
