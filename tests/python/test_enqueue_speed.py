"""The producer's fast paths: a single enqueue that sends only the arguments it needs, the
array-per-column batch (jobq_enqueue_arrays), and the bulk load (Queue.enqueue_iter,
`jobq enqueue --from`), each against a real PostgreSQL."""

from __future__ import annotations

import itertools
import uuid
from datetime import datetime, timezone
from typing import Any

import psycopg

from pgq_client import AsyncQueue, Queue

Conn = psycopg.Connection[Any]

RUN_AT = datetime(2031, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
# Each optional argument of Queue.enqueue with a value that differs from jobq_enqueue's default.
NON_DEFAULTS: dict[str, Any] = {
    "idempotency_key": "k",
    "max_attempts": 2,
    "run_at": RUN_AT,
    "priority": -7,
    "queue": "q2",
}
COLUMNS = "job_type, payload, idempotency_key, max_attempts, available_at, priority, queue"


def _columns(conn: Conn, job_id: uuid.UUID) -> tuple[Any, ...]:
    row = conn.execute(f"SELECT {COLUMNS} FROM jobq_jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    return tuple(row)


def _expected(args: dict[str, Any], now: datetime) -> tuple[Any, ...]:
    return (
        "t",
        {"i": 1},
        args.get("idempotency_key"),
        args.get("max_attempts", 5),
        args.get("run_at", now),
        args.get("priority", 0),
        args.get("queue", "default"),
    )


def _subsets() -> list[tuple[str, ...]]:
    names = list(NON_DEFAULTS)
    return [c for r in range(len(names) + 1) for c in itertools.combinations(names, r)]


def test_every_combination_of_optional_arguments_is_stored_as_given(
    dsn: str, conn: Conn
) -> None:
    with Queue(dsn) as q:
        for names in _subsets():
            args = {name: NON_DEFAULTS[name] for name in names}
            if "idempotency_key" in args:
                args["idempotency_key"] = "k:" + ",".join(names)
            with conn.transaction():
                job_id = q.enqueue("t", {"i": 1}, conn=conn, **args)
                now = conn.execute("SELECT now()").fetchone()
                assert now is not None
                assert _columns(conn, job_id) == _expected(args, now[0]), names


def test_arguments_equal_to_the_defaults_give_the_same_job_as_leaving_them_out(
    dsn: str, conn: Conn
) -> None:
    with Queue(dsn) as q, conn.transaction():
        explicit = q.enqueue("t", {"i": 1}, max_attempts=5, priority=0, queue="default",
                             idempotency_key=None, run_at=None, conn=conn)
        implicit = q.enqueue("t", {"i": 1}, conn=conn)
        assert _columns(conn, explicit) == _columns(conn, implicit)


def test_values_that_only_compare_equal_to_a_default_are_still_checked_by_the_server(
    dsn: str, conn: Conn
) -> None:
    # True == 1 and 5.0 == 5 in Python: they are sent, not mistaken for the defaults.
    with Queue(dsn) as q:
        job_id = q.enqueue("t", {"i": 1}, priority=True, max_attempts=5.0)  # type: ignore[arg-type]
        assert _columns(conn, job_id)[3:6:2] == (5, 1)


async def test_async_enqueue_sends_the_same_combinations(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        for names in _subsets():
            args = {name: NON_DEFAULTS[name] for name in names}
            if "idempotency_key" in args:
                args["idempotency_key"] = "ak:" + ",".join(names)
            job_id = await q.enqueue("t", {"i": 1}, **args)
            got = _columns(conn, job_id)
            created = conn.execute(
                "SELECT created_at FROM jobq_jobs WHERE id = %s", (job_id,)
            ).fetchone()
            assert created is not None
            assert got == _expected(args, created[0]), names


def test_a_schema_with_a_quote_in_its_name_is_quoted_in_every_statement(
    empty_dsn: str,
) -> None:
    from pgq_client.migrate import migrate

    schema = 'ten"ant'
    migrate(empty_dsn, schema=schema)
    with Queue(empty_dsn, schema=schema) as q:
        job_id = q.enqueue("t", {"i": 1}, priority=2)
        assert list(q.status([job_id])) == [job_id]
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        n = c.execute('SELECT count(*) FROM "ten""ant".jobq_jobs').fetchone()
        assert n == (1,)

