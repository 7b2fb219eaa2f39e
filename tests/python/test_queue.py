"""The producer/admin client `Queue` against a real PostgreSQL."""

from __future__ import annotations

import re
import threading
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import click
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool
from tests.helpers import job_row

from pgq_client import (
    InvalidArgument,
    Job,
    JobqError,
    NotMigrated,
    NullValue,
    PayloadTooLarge,
    Queue,
    SerializationFailure,
    Worker,
    _sql,
    cli,
)
from pgq_client.errors import ConnectionFailed, from_psycopg
from pgq_client.migrate import migrate
from pgq_client.models import FINISHED_STATUSES, STATUSES

Conn = psycopg.Connection[Any]


def test_enqueue_dequeue_complete_round_trip(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        job_id = q.enqueue("ocr", {"rev": 1}, priority=3, max_attempts=2, queue="scans")
        assert isinstance(job_id, uuid.UUID)
        jobs = q.dequeue("w1", job_types=["ocr"], queues=["scans"], batch_size=5)
        assert [j.id for j in jobs] == [job_id]
        job = jobs[0]
        assert isinstance(job, Job)
        assert (job.job_type, job.payload, job.queue, job.priority) == (
            "ocr",
            {"rev": 1},
            "scans",
            3,
        )
        assert (job.status, job.attempts, job.max_attempts, job.locked_by) == (
            "processing",
            1,
            2,
            "w1",
        )
        assert job.available_at.tzinfo is not None
        assert q.complete(job_id, "w1", attempt=1) is True
        assert q.complete(job_id, "w1", attempt=1) is False
    assert job_row(conn, job_id)["status"] == "succeeded"


def test_enqueue_with_conn_commits_with_the_callers_transaction(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q, psycopg.connect(dsn) as caller:
        job_id = q.enqueue("t", {"n": 1}, conn=caller)
        # Not visible to others before the caller commits; the Queue did not commit it.
        assert conn.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (0,)
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        caller.commit()
    assert job_row(conn, job_id)["status"] == "pending"


def test_enqueue_with_conn_vanishes_when_the_caller_rolls_back(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q, psycopg.connect(dsn) as caller:
        caller.execute("CREATE TABLE orders (id int)")
        caller.execute("INSERT INTO orders VALUES (1)")
        q.enqueue("t", {"order": 1}, conn=caller)
        caller.rollback()
    assert conn.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (0,)


def test_naive_run_at_is_refused_with_value_error(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        with pytest.raises(ValueError, match="timezone-aware"):
            q.enqueue("t", run_at=datetime(2030, 1, 1))
        with pytest.raises(ValueError, match="timezone-aware"):
            q.enqueue_many([{"job_type": "t", "run_at": datetime(2030, 1, 1)}])
    assert conn.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (0,)


def test_run_at_in_the_future_is_not_claimed_before_then(dsn: str, conn: Conn) -> None:
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    with Queue(dsn) as q:
        job_id = q.enqueue("t", run_at=later)
        assert q.dequeue("w") == []
    assert job_row(conn, job_id)["available_at"] == later


def test_same_idempotency_key_returns_the_existing_job(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        first = q.enqueue("t", {"v": 1}, idempotency_key="k")
        second = q.enqueue("t", {"v": 2}, idempotency_key="k")
    assert first == second
    assert job_row(conn, first)["payload"] == {"v": 1}
    assert conn.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (1,)


def test_threads_enqueuing_one_key_at_once_share_one_job(dsn: str, conn: Conn) -> None:
    barrier = threading.Barrier(8)
    ids: list[uuid.UUID] = []
    errors: list[BaseException] = []

    def enqueue() -> None:
        try:
            with Queue(dsn) as q:
                barrier.wait()
                ids.append(q.enqueue("t", idempotency_key="same"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=enqueue) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(ids) == 8 and len(set(ids)) == 1
    assert conn.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (1,)


def test_enqueue_many_returns_ids_in_input_order(dsn: str, conn: Conn) -> None:
    later = datetime.now(timezone.utc) + timedelta(minutes=5)
    jobs: list[dict[str, Any]] = [{"job_type": "t", "payload": {"n": i}} for i in range(50)]
    jobs[7]["run_at"] = later
    jobs[8]["idempotency_key"] = "dup"
    jobs[9]["idempotency_key"] = "dup"
    with Queue(dsn) as q:
        ids = q.enqueue_many(jobs)
        assert q.enqueue_many([]) == []
    assert len(ids) == 50
    assert ids[8] == ids[9]
    for i in (0, 7, 49):
        assert job_row(conn, ids[i])["payload"] == {"n": i}
    assert job_row(conn, ids[7])["available_at"] == later


def test_bad_arguments_raise_typed_errors_with_sqlstate(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        with pytest.raises(InvalidArgument) as blank:
            q.enqueue("  ")
        assert blank.value.sqlstate == "22023"
        assert "job_type" in str(blank.value)
        with pytest.raises(InvalidArgument, match="max_attempts"):
            q.enqueue("t", max_attempts=0)
        with pytest.raises(InvalidArgument):
            q.enqueue_many([{"job_type": "t", "colour": "red"}])
        with pytest.raises(InvalidArgument):
            q.dequeue("w", batch_size=0)
    assert conn.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (0,)


def test_payload_over_the_configured_limit_is_payload_too_large(dsn: str) -> None:
    with Queue(dsn) as q:
        settings = q.configure(max_payload_bytes=100)
        assert settings["max_payload_bytes"] == 100
        assert q.configure()["max_payload_bytes"] == 100
        with pytest.raises(PayloadTooLarge) as exc:
            q.enqueue("t", {"blob": "x" * 500})
        assert exc.value.sqlstate == "54000"
        assert isinstance(exc.value, JobqError)
        q.enqueue("t", {"small": 1})


def test_payload_must_be_a_json_object_in_the_client_as_in_sql(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        for payload in ([1, 2], "text", 3, 1.5, True):
            with pytest.raises(InvalidArgument, match="payload must be a JSON object") as exc:
                q.enqueue("t", payload)
            assert exc.value.sqlstate == "22023"
        with pytest.raises(InvalidArgument, match="payload must be a JSON object") as exc:
            q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "payload": [1]}])
        assert exc.value.sqlstate == "22023" and "element 2" in str(exc.value)
        q.enqueue("t")  # no payload: {}
    assert conn.execute("SELECT payload FROM jobq_jobs").fetchall() == [({},)]


def test_worker_refuses_a_batch_size_the_claim_would_refuse(dsn: str) -> None:
    with pytest.raises(ValueError, match="between 1 and 10000"):
        Worker(dsn, handlers={"t": print}, batch_size=10_001)
    with Queue(dsn) as q, pytest.raises(InvalidArgument, match="between 1 and 10000"):
        q.dequeue("w", batch_size=10_001)


def test_null_value_maps_from_sqlstate_22004(conn: Conn) -> None:
    with pytest.raises(psycopg.Error) as raw:
        conn.execute("SELECT jobq_enqueue(job_type => 't', payload => NULL)")
    mapped = from_psycopg(raw.value)
    assert isinstance(mapped, NullValue)
    assert mapped.sqlstate == "22004"


def test_queue_on_a_database_without_jobq_says_run_migrate(empty_dsn: str) -> None:
    with Queue(empty_dsn) as q, pytest.raises(NotMigrated, match="jobq migrate"):
        q.enqueue("t")


def test_unreachable_server_is_connection_failed() -> None:
    with (
        Queue("postgresql://127.0.0.1:1/x?connect_timeout=2") as q,
        pytest.raises(ConnectionFailed),
    ):
        q.enqueue("t")


def test_fail_then_dead_letters_lists_and_requeue_makes_pending(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        failed_id = q.enqueue("t", max_attempts=3)
        dead_id = q.enqueue("u", max_attempts=1, queue="other")
        ok_id = q.enqueue("v")
        jobs = {j.id: j for j in q.dequeue("w", batch_size=10)}
        assert set(jobs) == {failed_id, dead_id, ok_id}
        assert q.fail(failed_id, "w", "boom", retry=False, attempt=1) == "failed"
        assert q.fail(dead_id, "w", "bang", attempt=1) == "dead_letter"
        assert q.fail(ok_id, "someone-else", "x") is None
        assert q.complete_many([ok_id], "w", attempts=[1]) == 1

        listed = q.dead_letters()
        assert {j.id: j.status for j in listed} == {failed_id: "failed", dead_id: "dead_letter"}
        assert [j.id for j in q.dead_letters(queue="other")] == [dead_id]
        assert [j.id for j in q.dead_letters(job_type="t")] == [failed_id]
        assert listed[0].last_error in ("boom", "bang")

        assert q.requeue_dead_letter(ok_id) is False
        assert q.requeue_dead_letter(failed_id) is True
        assert q.requeue_dead_letters(job_type="u") == 1
        assert q.dead_letters() == []
    for job_id in (failed_id, dead_id):
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"]) == ("pending", 0)
        assert len(row["errors"]) == 1  # history kept


def test_fail_many_reports_each_job_in_order_as_fail_would(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        retried, last, stopped, other = q.enqueue_many(
            [
                {"job_type": "t", "max_attempts": 3},
                {"job_type": "t", "max_attempts": 1},
                {"job_type": "t"},
                {"job_type": "u"},
            ]
        )
        assert len(q.dequeue("w", job_types=["t"], batch_size=3)) == 3
        assert len(q.dequeue("w2", job_types=["u"])) == 1
        statuses = q.fail_many(
            [retried, last, stopped, other],
            "w",
            ["boom", "bang", "bad", "not mine"],
            retries=[True, True, False, True],
            backoffs=[timedelta(minutes=1), 0, 0, 0],
            attempts=[1, None, 1, 1],
        )
        assert statuses == ["pending", "dead_letter", "failed", None]
        assert q.fail_many([], "w", []) == []
        with pytest.raises(ValueError, match="retries must have one entry per job id"):
            q.fail_many([retried], "w", ["e"], retries=[True, False])
        with pytest.raises(InvalidArgument, match=r"backoffs\[1\] must be an interval >= 0"):
            q.fail_many([retried], "w", ["e"], backoffs=[-1])
    row = job_row(conn, retried)
    assert (row["status"], row["last_error"], row["locked_by"]) == ("pending", "boom", None)
    assert row["available_at"] - row["updated_at"] == timedelta(minutes=1)
    assert job_row(conn, other)["locked_by"] == "w2"


def test_the_client_statuses_are_those_of_the_sql(conn: Conn) -> None:
    everything = conn.execute("SELECT jobq__statuses()").fetchone()
    finished = conn.execute("SELECT jobq__statuses(finished => true)").fetchone()
    assert everything == (list(STATUSES),), "the same names, in the same order"
    assert finished == (list(FINISHED_STATUSES),)
    prune_status = next(p for p in cli.prune.params if p.name == "statuses")
    assert isinstance(prune_status.type, click.Choice)
    assert tuple(prune_status.type.choices) == FINISHED_STATUSES


def test_heartbeat_and_release_act_only_on_the_workers_own_claims(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        a, b = q.enqueue_many([{"job_type": "t"}, {"job_type": "t"}])
        q.dequeue("w1", batch_size=1)
        q.dequeue("w2", batch_size=1)
        conn.execute("UPDATE jobq_jobs SET locked_at = now() - interval '1 hour'")
        assert q.heartbeat("w1", [a, b]) == 1
        assert q.release([a, b], "w1") == 1
    held_by = dict(conn.execute("SELECT id, locked_by FROM jobq_jobs").fetchall())
    released = a if held_by[a] is None else b
    assert job_row(conn, released)["attempts"] == 0
    assert job_row(conn, released)["status"] == "pending"


def test_stats_and_prune(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        ids = q.enqueue_many([{"job_type": "t"} for _ in range(3)])
        q.dequeue("w", batch_size=2)
        done = [j for j in ids if job_row(conn, j)["status"] == "processing"]
        q.complete_many(done, "w")
        rows = {(r.queue, r.job_type, r.status): r.jobs for r in q.stats()}
        assert rows == {("default", "t", "succeeded"): 2, ("default", "t", "pending"): 1}
        assert q.prune(older_than=timedelta(hours=1)) == 0
        conn.execute(
            "UPDATE jobq_jobs SET finished_at = now() - interval '2 hours' "
            "WHERE finished_at IS NOT NULL"
        )
        assert q.prune(older_than=3600, statuses=["succeeded"]) == 2
        with pytest.raises(InvalidArgument):
            q.prune(statuses=["pending"])
    assert conn.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (1,)


def test_queue_on_a_callers_connection_commits_when_not_in_a_transaction(
    dsn: str, conn: Conn
) -> None:
    with psycopg.connect(dsn) as caller:  # not autocommit
        q = Queue(caller)
        job_id = q.enqueue("t")
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert job_row(conn, job_id)["status"] == "pending"
        q.close()
        assert not caller.closed  # the caller's connection stays theirs


def test_queue_on_a_pool(dsn: str, conn: Conn) -> None:
    with ConnectionPool(dsn, min_size=1, max_size=2, open=True) as pool:
        q = Queue(pool)
        ids = [q.enqueue("t", {"i": i}) for i in range(5)]
        assert len(q.dequeue("w", batch_size=10)) == 5
        q.close()
        assert not pool.closed
    assert conn.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (len(ids),)


def test_a_closed_queue_refuses_every_call_and_changes_nothing(dsn: str, conn: Conn) -> None:
    # Whatever the Queue was made from (a DSN, a connection, a pool), a call after close()
    # says so, before anything is sent.
    with ConnectionPool(dsn, min_size=1, max_size=1, open=True) as pool, psycopg.connect(
        dsn, autocommit=True
    ) as given:
        for q in (Queue(dsn), Queue(given), Queue(pool)):
            q.enqueue("t")
            q.close()
            with pytest.raises(JobqError, match="this Queue is closed"):
                q.enqueue("t")
            with pytest.raises(JobqError, match="this Queue is closed"):
                q.enqueue_many([{"job_type": "t"}])
            with pytest.raises(JobqError, match="this Queue is closed"):
                q.dequeue("w")
    assert conn.execute("SELECT count(*), count(*) FILTER (WHERE status = 'pending') "
                        "FROM jobq_jobs").fetchone() == (3, 3)


def test_queue_without_dsn_uses_jobq_dsn(dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBQ_DSN", dsn)
    monkeypatch.setenv("DATABASE_URL", "postgresql://127.0.0.1:1/wrong")
    with Queue() as q:
        assert isinstance(q.enqueue("t"), uuid.UUID)


def test_queue_without_dsn_falls_back_to_database_url(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JOBQ_DSN", raising=False)
    monkeypatch.setenv("DATABASE_URL", dsn)
    with Queue() as q:
        assert isinstance(q.enqueue("t"), uuid.UUID)


def test_queue_without_any_dsn_says_how_to_give_one_and_starts_no_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no DSN, JOBQ_DSN or DATABASE_URL, a Queue refuses at its first statement with a
    message naming each way to give a database, and never starts the embedded server."""
    for name in ("JOBQ_DSN", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    started: list[object] = []
    monkeypatch.setattr("pgq_client.embedded.start", lambda *a, **k: started.append(a) or "")
    with Queue() as q, pytest.raises(JobqError) as caught:
        q.enqueue("t")
    for fix in ("JOBQ_DSN", "DATABASE_URL", "Queue.embedded()", "pgq_client.embedded.start()"):
        assert fix in str(caught.value)
    assert started == []


def test_queue_embedded_uses_the_dsn_of_the_embedded_server(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queue.embedded() connects to what pgq_client.embedded.start() returns."""
    monkeypatch.setattr("pgq_client.embedded.start", lambda home=None: dsn)
    with Queue.embedded() as q:
        assert q.dsn == dsn
        assert isinstance(q.enqueue("t"), uuid.UUID)


def test_queue_reconnects_after_its_connection_is_terminated(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        q.enqueue("t")
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        with pytest.raises(ConnectionFailed):
            q.enqueue("t")  # the loss is reported, not hidden (an enqueue is not idempotent)
        q.enqueue("t")  # and the next call reconnects
    assert conn.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (2,)


def test_schema_qualified_queue_uses_its_own_tables(dsn: str, conn: Conn) -> None:
    migrate(dsn, schema="tenant_a")
    with Queue(dsn, schema="tenant_a") as tenant, Queue(dsn) as public:
        tenant_id = tenant.enqueue("t")
        assert public.dequeue("w") == []
        assert [j.id for j in tenant.dequeue("w")] == [tenant_id]
    assert conn.execute("SELECT count(*) FROM tenant_a.jobq_jobs").fetchone() == (1,)
    assert conn.execute("SELECT count(*) FROM public.jobq_jobs").fetchone() == (0,)


def test_a_schema_named_beyond_ascii_is_sent_in_the_connections_encoding(
    dsn: str, conn: Conn
) -> None:
    # Statements go as bytes when their text is ASCII (the same bytes in every client
    # encoding); one that names a schema beyond ASCII stays an sql.SQL, which psycopg encodes
    # in the connection's encoding: in LATIN1 "ü" is one byte, and the UTF-8 bytes of the
    # name would name no schema.
    schema = "tenant_ü"
    assert isinstance(_sql.statements(None).dequeue, bytes)
    assert isinstance(_sql.statements("tenant_a").dequeue, bytes)
    assert isinstance(_sql.statements(schema).dequeue, sql.SQL)
    migrate(dsn, schema=schema)
    with psycopg.connect(dsn, autocommit=True, options="-c client_encoding=LATIN1") as latin1:
        job_id = Queue(latin1, schema=schema).enqueue("t", {"name": "ü"})
    with Queue(dsn, schema=schema) as q:  # read back in UTF-8 (see the note below)
        assert [(j.id, j.payload) for j in q.dequeue("w")] == [(job_id, {"name": "ü"})]
    table = sql.SQL("SELECT count(*) FROM {}.jobq_jobs").format(sql.Identifier(schema))
    assert conn.execute(table).fetchone() == (1,)
    # (psycopg's default jsonb loader, which a caller's connection keeps, reads the bytes as
    # UTF-8 whatever the client encoding: a payload beyond ASCII read on a LATIN1 connection
    # fails to decode. Not jobq's to change on a connection it was given.)


def test_serializable_caller_transaction_conflict_is_raised_to_the_caller(dsn: str) -> None:
    # With conn=, the transaction is the caller's: a serialization failure reaches them, typed,
    # and nothing is retried behind their back.
    with Queue(dsn) as q, psycopg.connect(dsn) as a, psycopg.connect(dsn) as b:
        for c in (a, b):
            c.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
        first = q.enqueue("t", idempotency_key="k", conn=a)
        outcome: list[object] = []
        t = threading.Thread(target=lambda: outcome.append(_try_enqueue(q, b)))
        t.start()
        t.join(0.5)
        assert t.is_alive()  # b waits on a's uncommitted key
        a.commit()
        t.join(10)
        b.rollback()
    assert len(outcome) == 1
    assert isinstance(outcome[0], SerializationFailure)
    assert outcome[0].sqlstate == "40001"
    assert isinstance(first, uuid.UUID)


def test_serialization_failure_of_an_owned_transaction_is_retried(dsn: str) -> None:
    serializable = make_conninfo(dsn, options="-c default_transaction_isolation=serializable")
    with Queue(dsn) as holder, Queue(serializable) as q, psycopg.connect(serializable) as a:
        first = holder.enqueue("t", idempotency_key="k", conn=a)
        outcome: list[object] = []
        t = threading.Thread(target=lambda: outcome.append(_try_enqueue(q, None)))
        t.start()
        t.join(0.5)
        assert t.is_alive()
        a.commit()  # the waiting enqueue fails to serialize, is retried, finds the key
        t.join(10)
    assert outcome == [first]


def _try_enqueue(q: Queue, conn: Conn | None) -> object:
    try:
        return q.enqueue("t", idempotency_key="k", conn=conn)
    except JobqError as exc:
        return exc


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda q: q.enqueue("nul\x00type"), "job_type"),
        (lambda q: q.enqueue("t", queue="lone \ud800"), "queue"),
        (lambda q: q.enqueue("t", idempotency_key="k\x00"), "idempotency_key"),
        (lambda q: q.enqueue("t", {"v": "a\x00b"}), "payload"),
        (lambda q: q.enqueue("t", {"\udfff": 1}), "payload"),
        (
            lambda q: q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "payload": ["\x00"]}]),
            "jobs[1]",
        ),
    ],
)
def test_text_postgresql_cannot_store_is_refused_before_sending(
    dsn: str, conn: Conn, call: Any, argument: str
) -> None:
    with Queue(dsn) as q:
        with pytest.raises(ValueError, match=re.escape(argument)) as refused:
            call(q)
        assert "NUL" in str(refused.value) or "surrogate" in str(refused.value)
        q.enqueue("t", {"text": "a literal \\u0000 is fine"})  # escaped backslash: not a NUL
    assert conn.execute("SELECT payload FROM jobq_jobs").fetchall() == [
        ({"text": "a literal \\u0000 is fine"},)
    ]
