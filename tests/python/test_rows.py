"""How the client decodes rows: ``load_json`` (the jsonb loader of the worker's connections)
gives what ``json.loads`` gives, and ``job_row`` the Job that ``Job(...)`` builds."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from pgq_client import Job, Queue, Worker
from pgq_client.models import job_row, load_json, mark_cancel_requested, use_fast_json

Conn = psycopg.Connection[Any]

# Values as the server writes them: jsonb in its canonical text, json verbatim (whitespace
# around the value included), every JSON type, non-ASCII text and escapes, numbers that a
# float cannot hold exactly.
VALUES = [
    "'{}'::jsonb",
    "'[]'::jsonb",
    "'null'::jsonb",
    "'true'::jsonb",
    "'\"text\"'::jsonb",
    "'12345678901234567890123'::jsonb",
    "'-1.5e300'::jsonb",
    "'0.1'::jsonb",
    """'{"a": [1, 2.5, -3e20, true, null], "é": "é ☃ \\ud83d\\ude00"}'::jsonb""",
    """'{"q": "\\"\\\\/\\n\\t"}'::jsonb""",
    """'{"nested": {"deep": [[[]], {}], "x": {"y": {"z": [{"k": "v"}]}}}}'::jsonb""",
    """'[{"attempt": 1, "error": "boom", "kind": "error"}]'::jsonb""",
    """'  {"a" : 1 ,  "a": 2}  '::json""",
    "' [1, 2] '::json",
    "'{}'::json",
    "'\"\"'::jsonb",
]


@pytest.mark.parametrize("value", VALUES)
def test_load_json_gives_what_json_loads_gives(conn: Conn, value: str) -> None:
    row = conn.execute(f"SELECT convert_to(({value})::text, 'UTF8')").fetchone()
    assert row is not None
    text = bytes(row[0])
    assert load_json(text) == json.loads(text)
    assert type(load_json(text)) is type(json.loads(text))


@pytest.mark.parametrize("binary", [False, True])
def test_a_connection_with_use_fast_json_fetches_the_same_values(
    dsn: str, conn: Conn, binary: bool
) -> None:
    query = "SELECT " + ", ".join(VALUES)
    with psycopg.connect(dsn, autocommit=True) as fast:
        use_fast_json(fast)
        got = fast.cursor(binary=binary).execute(query).fetchone()
    assert got == conn.cursor(binary=binary).execute(query).fetchone()


@pytest.mark.parametrize(
    "text",
    [
        b"{}", b"[]", b" {} ", b"\t[]\n", b'"\\u00e9"', '"é"'.encode(), b"1e400",
        b'\xef\xbb\xbf{"a": 1}',  # a UTF-8 byte order mark
        '{"a": [1]}'.encode("utf-16"), '{"a": [1]}'.encode("utf-16-le"),
        '[1, "é"]'.encode("utf-32-be"),
    ],
)
def test_load_json_gives_what_json_loads_gives_for_any_bytes(text: bytes) -> None:
    """Not only what PostgreSQL sends: whatever json.loads takes, load_json takes the same."""
    assert load_json(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [b"", b"{", b'{"a": 1} x', b"[1,]", b"nul", b"\xff{}", b'"\\ud800"  x', b" "],
)
def test_load_json_refuses_what_json_loads_refuses(text: bytes) -> None:
    with pytest.raises(ValueError) as expected:
        json.loads(text)
    with pytest.raises(type(expected.value)) as got:
        load_json(text)
    assert str(got.value) == str(expected.value)


def test_load_json_returns_a_new_object_for_every_empty_value() -> None:
    """``[]`` and ``{}`` are answered without parsing, never with a shared object that one
    handler could change under another."""
    a, b = load_json(b"[]"), load_json(b"[]")
    assert a == b == [] and a is not b
    c, d = load_json(b"{}"), load_json(b"{}")
    assert c == d == {} and c is not d


def test_job_row_builds_the_job_that_job_builds(dsn: str, conn: Conn) -> None:
    """job_row skips the frozen dataclass's __init__: the Job must be the same, still frozen,
    and still take the worker's cancel mark."""
    assert not hasattr(Job, "__post_init__") and "__slots__" not in vars(Job)
    q = Queue(dsn)
    job_id = q.enqueue("t", {"n": 1, "s": "é"}, idempotency_key="k-rows", priority=3)
    [claimed] = q.dequeue("w-rows", batch_size=1)
    assert claimed.id == job_id
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM jobq_all_jobs WHERE id = %s", (job_id,))
        assert cur.description is not None
        names = [d.name for d in cur.description]
        row = cur.fetchone()
    assert row is not None
    known = {f.name for f in dataclasses.fields(Job)}
    built = Job(**{n: v for n, v in zip(names, row, strict=True) if n in known})
    assert claimed == built
    assert vars(claimed) == vars(built)
    # The same through a cursor whose columns are exactly Job's fields, in order.
    with conn.cursor(row_factory=job_row) as cur:
        cur.execute(
            "SELECT " + ", ".join(f.name for f in dataclasses.fields(Job))
            + " FROM jobq_all_jobs WHERE id = %s",
            (job_id,),
        )
        assert cur.fetchone() == built
    with pytest.raises(dataclasses.FrozenInstanceError):
        claimed.payload = {}  # type: ignore[misc]
    assert not claimed.cancel_requested()
    assert mark_cancel_requested(claimed) and claimed.cancel_requested()
    assert not mark_cancel_requested(claimed)


def test_a_worker_hands_its_handlers_the_payloads_and_errors_as_stored(
    dsn: str, conn: Conn
) -> None:
    """End to end through the worker's own connections (which decode jsonb with load_json):
    each handler sees the payload it was given and, on its retry, the error history the
    database holds."""
    payloads: list[dict[str, Any]] = [
        {},
        {"n": 12345678901234567890123, "f": 0.1, "neg": -2.5},
        {"text": "é ☃ 😀 \"quoted\" \\ back\nslash", "list": [None, True, False, [], {}]},
        {"nested": {"deep": [[[]], {"k": "v"}]}},
    ]
    q = Queue(dsn)
    ids = [q.enqueue("t", p) for p in payloads]
    seen: dict[Any, list[tuple[Any, Any]]] = {}
    lock = threading.Lock()

    def handler(job: Job) -> None:
        with lock:
            seen.setdefault(job.id, []).append((job.payload, job.errors))
        if job.attempts == 1:
            raise RuntimeError("first try fails")

    Worker(dsn, {"t": handler}, retry_backoff=timedelta(0), concurrency=2).run(burst=True)
    for job_id, payload in zip(ids, payloads, strict=True):
        first, second = seen[job_id]
        assert first == (payload, [])
        stored = conn.execute("SELECT errors"
                              " FROM jobq_all_jobs WHERE id = %s", (job_id,)).fetchone()
        assert stored is not None
        assert second[0] == payload
        assert second[1] == stored[0][:1]
        assert second[1][0]["error"].startswith("RuntimeError: first try fails\n")


def _decodes_with_load_json(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    jsonb = conn.adapters.types["jsonb"].oid
    return all(
        getattr(conn.adapters.get_loader(jsonb, fmt), "_loads", None) is load_json
        for fmt in (psycopg.pq.Format.TEXT, psycopg.pq.Format.BINARY)
    )


def test_the_connections_jobq_opens_decode_jsonb_with_load_json(dsn: str) -> None:
    """The worker's own connections (its claims decode every job), a Queue's and an
    AsyncQueue's; never a connection the caller gave (whose loaders are theirs)."""
    from pgq_client._conn import connect
    from pgq_client.async_queue import aconnect

    worker = Worker(dsn, {"t": lambda job: None})
    with worker._connector(dsn)() as mine, connect(dsn) as queue_conn:
        assert _decodes_with_load_json(mine) and _decodes_with_load_json(queue_conn)

    async def opened() -> bool:
        conn = await aconnect(dsn)
        try:
            return _decodes_with_load_json(conn)
        finally:
            await conn.close()

    assert asyncio.run(opened())
    with psycopg.connect(dsn, autocommit=True) as given:
        Queue(given).enqueue("t", {"a": 1})
        assert not _decodes_with_load_json(given)


def test_a_json_loads_the_application_chose_is_kept(dsn: str) -> None:
    """An application that set psycopg's JSON loader globally (here: floats as Decimal) gets
    its values from jobq's connections too, handlers included."""
    from decimal import Decimal
    from functools import partial

    from psycopg.types.json import set_json_loads

    from pgq_client._conn import connect

    decimal_loads = partial(json.loads, parse_float=Decimal)
    set_json_loads(decimal_loads)
    try:
        with connect(dsn) as mine:
            assert not _decodes_with_load_json(mine)
            row = mine.execute("SELECT '{\"price\": 1.10}'::jsonb").fetchone()
            assert row is not None and row[0] == {"price": Decimal("1.10")}
        q = Queue(dsn)
        q.enqueue("t", {"price": 1.10})
        seen: list[Any] = []
        Worker(dsn, {"t": lambda job: seen.append(job.payload)}).run(burst=True)
        assert seen == [{"price": Decimal("1.10")}]
    finally:
        set_json_loads(json.loads)
    with connect(dsn) as mine:
        assert _decodes_with_load_json(mine)
