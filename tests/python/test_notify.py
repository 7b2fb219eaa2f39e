"""NOTIFY: each installation wakes its own workers, and one statement sends few notifications.

LISTEN/NOTIFY channels belong to the whole database: one channel for every schema would wake
every tenant's workers on any tenant's enqueue, and one notification per queue would make a
jobq_enqueue_many over many distinct queues queue as many in the server until commit, each then
delivered to every listener. So: channel ``jobq`` for schema public, ``jobq.<schema>`` for
another (``jobq#<sha224>`` for a name too long for that), and at most 100 notifications per
statement, else one with an empty payload that every worker takes as "wake up".
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from psycopg import sql
from tests.helpers import channel

from pgq_client import Queue, Worker, _sql
from pgq_client.migrate import migrate

Conn = psycopg.Connection[Any]


def _listener(dsn: str, channel: str) -> Conn:
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    return conn


def _received(conn: Conn) -> list[tuple[str, str]]:
    """The notifications delivered so far (those of committed transactions)."""
    conn.execute("SELECT 1")  # a round trip, so that pending notifications are read
    return [(n.channel, n.payload) for n in conn.notifies(timeout=0.5)]


NAMES = [
    "public",
    "tenant",
    "Tenant B",          # needs quoting, keeps its case
    "t" * 58,            # the longest that fits as jobq.<schema>
    "t" * 59,            # one byte more: hashed
    "ü" * 31,            # 62 bytes in UTF-8, 31 characters: hashed
]


def test_the_channel_rule_is_the_same_in_sql_in_the_client_and_in_its_query(
    empty_dsn: str,
) -> None:
    # jobq__channel() names the channel of current_schema(), the first schema of the
    # search_path that exists (in an installation, the one its functions pin): one
    # installation answers for every schema name put first.
    migrate(empty_dsn, schema="Tenant B")
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        for name in NAMES:
            schema = sql.Identifier(name)
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
            conn.execute(sql.SQL('SET search_path = {}, "Tenant B", pg_temp').format(schema))
            in_sql = conn.execute('SELECT "Tenant B".jobq__channel()').fetchone()
            conn.execute("RESET search_path")
            query = conn.execute(_sql.CHANNEL, {"schema": name}).fetchone()
            expected = channel(name)
            assert in_sql == query == (expected,), name
            assert len(expected.encode()) <= 63
        assert channel("public") == "jobq"
        assert channel("tenant") == "jobq.tenant"
        assert channel("t" * 59).startswith("jobq#")
        # with no schema given, the client asks where the search_path finds jobq
        conn.execute('SET search_path = "Tenant B"')
        assert _sql.find_schema(conn) == "Tenant B"


@pytest.mark.slow  # seconds of waiting
def test_each_installation_notifies_on_its_own_channel(empty_dsn: str) -> None:
    migrate(empty_dsn)
    migrate(empty_dsn, schema="tenant_a")
    migrate(empty_dsn, schema="tenant_b")
    public, a, b = (
        _listener(empty_dsn, channel(s)) for s in ("public", "tenant_a", "tenant_b")
    )
    try:
        with Queue(empty_dsn, schema="tenant_a") as q:
            q.enqueue("t", queue="qa")
        with Queue(empty_dsn) as q:
            q.enqueue("t", queue="qp")
        assert _received(a) == [("jobq.tenant_a", "qa")]
        assert _received(public) == [("jobq", "qp")]
        assert _received(b) == []  # the other tenant's workers were not woken
    finally:
        for c in (public, a, b):
            c.close()


def test_one_statement_sends_at_most_100_notifications(dsn: str) -> None:
    listener = _listener(dsn, "jobq")
    try:
        with Queue(dsn) as q:
            q.enqueue_many([{"job_type": "t", "queue": f"q{i}"} for i in range(100)])
            got = _received(listener)
            assert sorted(p for _, p in got) == sorted(f"q{i}" for i in range(100))

            # ten times the bound in distinct queues: one notification that wakes every worker
            q.enqueue_many([{"job_type": "t", "queue": f"many{i}"} for i in range(1_000)])
            assert _received(listener) == [("jobq", _sql.WAKE_ALL)]

            # requeue and release go through the same bound
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("UPDATE jobq_jobs SET status = 'dead_letter', finished_at = now() "
                          "WHERE queue LIKE 'many%'")
            assert q.requeue_dead_letters() == 1_000
            assert _received(listener) == [("jobq", _sql.WAKE_ALL)]
    finally:
        listener.close()


def test_a_worker_of_one_queue_wakes_on_the_wake_all_notification(dsn: str) -> None:
    done = threading.Event()
    worker = Worker(dsn, {"t": lambda job: done.set()}, queues=["q7"], poll_interval=60)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            # wait until it listens: its fetcher LISTENs, then claims on the same connection,
            # and sleeps on it (idle; this query's own session, active, names them too)
            for _ in range(200):
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND state = 'idle' "
                    "AND (query LIKE 'LISTEN %%' OR query LIKE '%%jobq_dequeue(%%')"
                ).fetchone()
                if row == (1,):
                    break
                threading.Event().wait(0.05)
            else:
                pytest.fail("the worker did not LISTEN within 10 s")
        threading.Event().wait(0.3)
        with Queue(dsn) as q:
            q.enqueue_many([{"job_type": "t", "queue": f"q{i}"} for i in range(101)])
        assert done.wait(10), "the wake-all notification did not wake the worker of queue q7"
    finally:
        worker.stop()
        thread.join(30)


@pytest.mark.parametrize("schema", ["tenant", "t" * 60])
def test_a_worker_in_a_schema_listens_on_that_schema_s_channel(
    empty_dsn: str, schema: str
) -> None:
    migrate(empty_dsn, schema=schema)
    done = threading.Event()
    worker = Worker(empty_dsn, {"t": lambda job: done.set()}, schema=schema, poll_interval=60)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        # The fetcher LISTENs and claims on one connection: once its first claim is done and it
        # sleeps (poll_interval 60 s), only a notification on its channel can wake it.
        with psycopg.connect(empty_dsn, autocommit=True) as conn:
            asleep: Any = None
            for _ in range(200):
                asleep = conn.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                    "AND state = 'idle' AND query LIKE '%%jobq_dequeue%%'"
                ).fetchone()
                if asleep:
                    break
                threading.Event().wait(0.05)
        assert asleep, "the worker did not make its first claim"
        assert channel(schema) != _sql.NOTIFY_CHANNEL
        threading.Event().wait(0.3)
        with Queue(empty_dsn, schema=schema) as q:
            q.enqueue("t", {"n": 1})
        assert done.wait(10), "the enqueue did not wake the worker of its schema"
    finally:
        worker.stop()
        thread.join(30)
