"""``AsyncQueue`` against a real PostgreSQL: the methods of ``Queue``, awaited.

The two share their argument checks, statements and row mapping (``pgq_client._ops``); these
tests check that the asyncio executor runs them the way ``Queue`` does: each call its own short
transaction, or the caller's with ``conn=``, typed errors with their SQLSTATE, nothing changed
by refused input.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool
from tests.helpers import job_row

from pgq_client import (
    AsyncQueue,
    InvalidArgument,
    Job,
    JobqError,
    NotMigrated,
    NullValue,
    PayloadTooLarge,
    Queue,
    SerializationFailure,
)
from pgq_client.errors import ConnectionFailed, IncompatibleSchema
from pgq_client.migrate import migrate

Conn = psycopg.Connection[Any]
AConn = psycopg.AsyncConnection[Any]


def _count(conn: Conn, where: str = "true") -> int:
    row = conn.execute(f"SELECT count(*) FROM jobq_jobs WHERE {where}").fetchone()
    assert row is not None
    return int(row[0])


# -- one API ---------------------------------------------------------------------------------


def _public_methods(cls: type) -> dict[str, Any]:
    return {
        name: member
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and name != "close"
    }


def test_async_queue_has_every_method_of_queue_with_the_same_arguments() -> None:
    sync, asynchronous = _public_methods(Queue), _public_methods(AsyncQueue)
    assert sorted(sync) == sorted(asynchronous)
    for name, method in sync.items():
        mirrored = asynchronous[name]
        assert inspect.iscoroutinefunction(mirrored), name
        ours, theirs = inspect.signature(method), inspect.signature(mirrored)
        assert list(ours.parameters) == list(theirs.parameters), name
        for param, other in zip(
            ours.parameters.values(), theirs.parameters.values(), strict=True
        ):
            assert (param.kind, param.default) == (other.kind, other.default), (name, param)
            assert str(other.annotation) == str(param.annotation), (name, param)
        assert str(ours.return_annotation) == str(theirs.return_annotation), name
        assert mirrored.__doc__ == f"As :meth:`Queue.{name}`, awaited.\n\n{method.__doc__}", name


def test_each_method_is_an_operation_shared_with_queue_not_a_copy() -> None:
    # A method body of either class is one call of the operation of the same name (dead
    # letters are a listing; enqueue, one statement, builds its call with enqueue_call): the
    # statements and checks live in pgq_client._ops only.
    for cls in (Queue, AsyncQueue):
        for name, method in _public_methods(cls).items():
            source = inspect.getsource(method)
            op = {"dead_letters": "list_jobs", "enqueue": "enqueue_call", "wait": "wait_args"}.get(
                name, name
            )
            assert f"_ops.{op}(" in source, (cls.__name__, name)
            assert ".execute(" not in source and "cursor(" not in source, (cls.__name__, name)


# -- producing -------------------------------------------------------------------------------


async def test_enqueue_dequeue_complete_round_trip(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        job_id = await q.enqueue("ocr", {"rev": 1}, priority=3, max_attempts=2, queue="scans")
        assert isinstance(job_id, uuid.UUID)
        jobs = await q.dequeue("w1", job_types=["ocr"], queues=["scans"], batch_size=5)
        assert [j.id for j in jobs] == [job_id]
        job = jobs[0]
        assert isinstance(job, Job)
        assert (job.job_type, job.payload, job.queue, job.priority, job.attempts) == (
            "ocr",
            {"rev": 1},
            "scans",
            3,
            1,
        )
        assert await q.complete(job_id, "w1", attempt=1) is True
        assert await q.complete(job_id, "w1", attempt=1) is False
    assert job_row(conn, job_id)["status"] == "succeeded"


async def test_enqueue_with_conn_commits_with_the_callers_transaction(
    dsn: str, conn: Conn
) -> None:
    async with AsyncQueue(dsn) as q, await psycopg.AsyncConnection.connect(dsn) as caller:
        job_id = await q.enqueue("t", {"n": 1}, conn=caller)
        ids = await q.enqueue_many([{"job_type": "t"}, {"job_type": "u"}], conn=caller)
        assert _count(conn) == 0, "not visible before the caller commits"
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        await caller.commit()
    assert job_row(conn, job_id)["status"] == "pending"
    assert _count(conn) == 1 + len(ids)


async def test_enqueue_with_conn_vanishes_when_the_caller_rolls_back(
    dsn: str, conn: Conn
) -> None:
    async with AsyncQueue(dsn) as q, await psycopg.AsyncConnection.connect(dsn) as caller:
        await caller.execute("CREATE TABLE orders (id int)")
        await caller.execute("INSERT INTO orders VALUES (1)")
        await q.enqueue("t", {"order": 1}, conn=caller)
        await q.enqueue_many([{"job_type": "t"}], conn=caller)
        await caller.rollback()
    assert _count(conn) == 0


async def test_enqueue_inside_an_async_transaction_block(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q, await psycopg.AsyncConnection.connect(
        dsn, autocommit=True
    ) as caller:
        with pytest.raises(RuntimeError, match="order failed"):
            async with caller.transaction():
                await q.enqueue("t", conn=caller)
                raise RuntimeError("order failed")
        assert _count(conn) == 0
        async with caller.transaction():
            kept = await q.enqueue("t", conn=caller)
    assert [row[0] for row in conn.execute("SELECT id FROM jobq_jobs")] == [kept]


async def test_many_coroutines_enqueuing_one_key_at_once_share_one_job(
    dsn: str, conn: Conn
) -> None:
    async with AsyncConnectionPool(dsn, min_size=8, max_size=8, open=False) as pool:
        q = AsyncQueue(pool)
        ids = await asyncio.gather(*(q.enqueue("t", idempotency_key="same") for _ in range(40)))
    assert len(set(ids)) == 1
    assert _count(conn) == 1


async def test_enqueue_many_returns_ids_in_input_order(dsn: str, conn: Conn) -> None:
    later = datetime.now(timezone.utc) + timedelta(minutes=5)
    jobs: list[dict[str, Any]] = [{"job_type": "t", "payload": {"n": i}} for i in range(50)]
    jobs[7]["run_at"] = later
    jobs[8]["idempotency_key"] = "dup"
    jobs[9]["idempotency_key"] = "dup"
    async with AsyncQueue(dsn) as q:
        ids = await q.enqueue_many(jobs)
        assert await q.enqueue_many([]) == []
    assert len(ids) == 50 and ids[8] == ids[9]
    assert job_row(conn, ids[49])["payload"] == {"n": 49}
    assert job_row(conn, ids[7])["available_at"] == later


# -- bad input: the same errors as Queue, nothing changed -------------------------------------


async def test_bad_arguments_raise_typed_errors_naming_the_argument(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        await q.enqueue("kept")
        with pytest.raises(InvalidArgument) as blank:
            await q.enqueue("  ")
        assert blank.value.sqlstate == "22023" and "job_type" in str(blank.value)
        with pytest.raises(InvalidArgument, match="max_attempts") as attempts:
            await q.enqueue("t", max_attempts=0)
        assert attempts.value.sqlstate == "22023"
        with pytest.raises(InvalidArgument, match="queue"):
            await q.enqueue("t", queue=" ")
        with pytest.raises(InvalidArgument, match="colour") as key:
            await q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "colour": "red"}])
        assert key.value.sqlstate == "22023" and "element 2" in str(key.value)
        with pytest.raises(InvalidArgument, match="batch_size") as batch:
            await q.dequeue("w", batch_size=0)
        assert batch.value.sqlstate == "22023"
        with pytest.raises(InvalidArgument, match="payload must be a JSON object") as payload:
            await q.enqueue("t", [1, 2])
        assert payload.value.sqlstate == "22023"
        with pytest.raises(ValueError, match="timezone-aware"):
            await q.enqueue("t", run_at=datetime(2030, 1, 1))
        with pytest.raises(ValueError, match="job_type contains a NUL"):
            await q.enqueue("nul\x00type")
        with pytest.raises(ValueError, match=re.escape("jobs[1]")):
            await q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "payload": ["\x00"]}])
        with pytest.raises(InvalidArgument, match="pending"):
            await q.prune(statuses=["pending"])
        with pytest.raises(TypeError, match="older_than"):
            await q.prune(older_than="a week")  # type: ignore[arg-type]
        with pytest.raises(InvalidArgument, match="cron"):
            await q.schedule("nightly", "61 * * * *", "t")
    assert [row[0] for row in conn.execute("SELECT job_type FROM jobq_jobs")] == ["kept"]
    assert conn.execute("SELECT count(*) FROM jobq_schedules").fetchone() == (0,)


async def test_a_null_payload_sent_raw_is_null_value(dsn: str, conn: Conn) -> None:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as raw:
        with pytest.raises(psycopg.Error) as exc:
            await raw.execute("SELECT jobq_enqueue(job_type => 't', payload => NULL)")
    from pgq_client.errors import from_psycopg

    mapped = from_psycopg(exc.value)
    assert isinstance(mapped, NullValue) and mapped.sqlstate == "22004"
    assert _count(conn) == 0


async def test_payload_over_the_configured_limit_is_payload_too_large(
    dsn: str, conn: Conn
) -> None:
    async with AsyncQueue(dsn) as q:
        assert (await q.configure(max_payload_bytes=100))["max_payload_bytes"] == 100
        with pytest.raises(PayloadTooLarge) as exc:
            await q.enqueue("t", {"blob": "x" * 500})
        assert exc.value.sqlstate == "54000"
        await q.enqueue("t", {"small": 1})
    assert _count(conn) == 1


async def test_a_refused_call_in_the_callers_transaction_leaves_it_for_the_caller(
    dsn: str, conn: Conn
) -> None:
    async with AsyncQueue(dsn) as q, await psycopg.AsyncConnection.connect(dsn) as caller:
        await q.enqueue("t", conn=caller)
        with pytest.raises(InvalidArgument, match="max_attempts"):
            await q.enqueue("t", max_attempts=0, conn=caller)
        # The transaction is aborted, as after any failed statement: the caller rolls back.
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        await caller.rollback()
    assert _count(conn) == 0


async def test_conn_of_the_other_kind_is_refused_before_anything_is_sent(
    dsn: str, conn: Conn
) -> None:
    async with AsyncQueue(dsn) as q:
        with (
            psycopg.connect(dsn) as sync_conn,
            pytest.raises(TypeError, match=r"AsyncConnection.*use Queue"),
        ):
            await q.enqueue("t", conn=sync_conn)  # type: ignore[arg-type]
        async with await psycopg.AsyncConnection.connect(dsn) as async_conn:
            with Queue(dsn) as sync_queue, pytest.raises(TypeError, match="use AsyncQueue"):
                sync_queue.enqueue("t", conn=async_conn)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="use Queue"):
        AsyncQueue(ConnectionPool(dsn, open=False))  # type: ignore[arg-type]
    assert _count(conn) == 0


async def test_async_queue_on_a_database_without_jobq_says_run_migrate(empty_dsn: str) -> None:
    async with AsyncQueue(empty_dsn) as q:
        with pytest.raises(NotMigrated, match="jobq migrate"):
            await q.enqueue("t")


async def test_unreachable_server_is_connection_failed_without_the_password() -> None:
    async with AsyncQueue("postgresql://app:s3cr3t-pw@127.0.0.1:1/x?connect_timeout=2") as q:
        with pytest.raises(ConnectionFailed) as exc:
            await q.enqueue("t")
    assert "s3cr3t-pw" not in str(exc.value)


async def test_a_dsn_libpq_cannot_parse_is_refused_without_the_password() -> None:
    async with AsyncQueue("postgresql://app:p@ss w0rd@db:notaport/x") as q:
        with pytest.raises(JobqError) as exc:
            await q.enqueue("t")
    assert "ss w0rd" not in str(exc.value)
    assert exc.value.__cause__ is None


async def test_a_closed_async_queue_refuses_calls(dsn: str) -> None:
    q = AsyncQueue(dsn)
    await q.enqueue("t")
    await q.close()
    with pytest.raises(JobqError, match="closed"):
        await q.enqueue("t")


async def test_a_schema_a_newer_jobq_broke_is_refused_before_the_first_statement(
    dsn: str, conn: Conn, tmp_path: Path
) -> None:
    from tests.python.test_compat import BREAKING, FUTURE, with_migration

    migrate(dsn, migrations_dir=with_migration(tmp_path, FUTURE, BREAKING))
    async with AsyncQueue(dsn) as q:
        with pytest.raises(IncompatibleSchema, match=FUTURE):
            await q.enqueue("t")
    async with await psycopg.AsyncConnection.connect(dsn) as caller:
        with pytest.raises(IncompatibleSchema):
            await AsyncQueue(caller).enqueue("t")
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert _count(conn) == 0


# -- connections ---------------------------------------------------------------------------------


async def test_async_queue_on_a_callers_connection_commits_when_not_in_a_transaction(
    dsn: str, conn: Conn
) -> None:
    async with await psycopg.AsyncConnection.connect(dsn) as caller:  # not autocommit
        q = AsyncQueue(caller)
        job_id = await q.enqueue("t")
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert job_row(conn, job_id)["status"] == "pending"
        await q.close()
        assert not caller.closed  # the caller's connection stays theirs


async def test_async_queue_on_a_pool(dsn: str, conn: Conn) -> None:
    async with AsyncConnectionPool(dsn, min_size=1, max_size=2, open=False) as pool:
        q = AsyncQueue(pool)
        ids = [await q.enqueue("t", {"i": i}) for i in range(5)]
        assert len(await q.dequeue("w", batch_size=10)) == 5
        await q.close()
        assert not pool.closed
    assert _count(conn) == len(ids)


async def test_async_queue_without_dsn_uses_jobq_dsn(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBQ_DSN", dsn)
    monkeypatch.setenv("DATABASE_URL", "postgresql://127.0.0.1:1/wrong")
    async with AsyncQueue() as q:
        assert isinstance(await q.enqueue("t"), uuid.UUID)
        assert q.dsn == dsn


async def test_async_queue_reconnects_after_its_connection_is_terminated(
    dsn: str, conn: Conn
) -> None:
    async with AsyncQueue(dsn) as q:
        await q.enqueue("t")
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        with pytest.raises(ConnectionFailed):
            await q.enqueue("t")  # the loss is reported, not hidden (an enqueue is not idempotent)
        await q.enqueue("t")  # and the next call reconnects
    assert _count(conn) == 2


async def test_schema_qualified_async_queue_uses_its_own_tables(dsn: str, conn: Conn) -> None:
    migrate(dsn, schema="tenant_a")
    async with AsyncQueue(dsn, schema="tenant_a") as tenant, AsyncQueue(dsn) as public:
        tenant_id = await tenant.enqueue("t")
        assert await public.dequeue("w") == []
        assert [j.id for j in await tenant.dequeue("w")] == [tenant_id]
    assert conn.execute("SELECT count(*) FROM tenant_a.jobq_jobs").fetchone() == (1,)


async def test_serializable_caller_transaction_conflict_is_raised_to_the_caller(
    dsn: str,
) -> None:
    async with AsyncQueue(dsn) as q, await psycopg.AsyncConnection.connect(
        dsn
    ) as a, await psycopg.AsyncConnection.connect(dsn) as b:
        for c in (a, b):
            await c.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
        await q.enqueue("t", idempotency_key="k", conn=a)
        second = asyncio.ensure_future(q.enqueue("t", idempotency_key="k", conn=b))
        done, _ = await asyncio.wait([second], timeout=0.5)
        assert not done  # b waits on a's uncommitted key
        await a.commit()
        with pytest.raises(SerializationFailure) as exc:
            await second
        assert exc.value.sqlstate == "40001"
        await b.rollback()


async def test_a_closed_async_queue_refuses_every_call_and_changes_nothing(
    dsn: str, conn: Conn
) -> None:
    # Whatever the AsyncQueue was made from (a DSN, a connection, a pool), a call after
    # close() says so, before anything is sent.
    async with AsyncConnectionPool(dsn, min_size=1, max_size=1, open=False) as pool:
        given = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        try:
            for q in (AsyncQueue(dsn), AsyncQueue(given), AsyncQueue(pool)):
                await q.enqueue("t")
                await q.close()
                with pytest.raises(JobqError, match="this AsyncQueue is closed"):
                    await q.enqueue("t")
                with pytest.raises(JobqError, match="this AsyncQueue is closed"):
                    await q.enqueue_many([{"job_type": "t"}])
                with pytest.raises(JobqError, match="this AsyncQueue is closed"):
                    await q.dequeue("w")
        finally:
            await given.close()
    assert conn.execute("SELECT count(*), count(*) FILTER (WHERE status = 'pending') "
                        "FROM jobq_jobs").fetchone() == (3, 3)


async def test_serialization_failure_of_an_owned_transaction_is_retried(dsn: str) -> None:
    serializable = make_conninfo(dsn, options="-c default_transaction_isolation=serializable")
    async with AsyncQueue(dsn) as holder, AsyncQueue(
        serializable
    ) as q, await psycopg.AsyncConnection.connect(serializable) as a:
        first = await holder.enqueue("t", idempotency_key="k", conn=a)
        waiting = asyncio.ensure_future(q.enqueue("t", idempotency_key="k"))
        done, _ = await asyncio.wait([waiting], timeout=0.5)
        assert not done
        await a.commit()  # the waiting enqueue fails to serialize, is retried, finds the key
        assert await waiting == first


# -- working and administration ---------------------------------------------------------------


async def test_fail_requeue_and_listing(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        failed_id = await q.enqueue("t", max_attempts=3)
        dead_id = await q.enqueue("u", max_attempts=1, queue="other")
        ok_id = await q.enqueue("v")
        jobs = {j.id: j for j in await q.dequeue("w", batch_size=10)}
        assert set(jobs) == {failed_id, dead_id, ok_id}
        assert await q.fail(failed_id, "w", "boom", retry=False, attempt=1) == "failed"
        assert await q.fail(dead_id, "w", "bang", attempt=1) == "dead_letter"
        assert await q.fail(ok_id, "someone-else", "x") is None
        assert await q.complete_many([ok_id], "w", attempts=[1]) == 1
        listed = await q.dead_letters()
        assert {j.id: j.status for j in listed} == {failed_id: "failed", dead_id: "dead_letter"}
        assert [j.id for j in await q.dead_letters(queue="other")] == [dead_id]
        assert [j.id for j in await q.list_jobs(statuses=["succeeded"])] == [ok_id]
        got = await q.get_job(ok_id)
        assert got is not None and got.status == "succeeded"
        assert await q.get_job(uuid.uuid4()) is None
        assert await q.requeue_dead_letter(ok_id) is False
        assert await q.requeue_dead_letter(failed_id) is True
        assert await q.requeue_dead_letters(job_type="u") == 1
        assert await q.dead_letters() == []
    assert _count(conn, "status = 'pending'") == 2


async def test_fail_many_heartbeat_and_release(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        retried, last, stopped = await q.enqueue_many(
            [
                {"job_type": "t", "max_attempts": 3},
                {"job_type": "t", "max_attempts": 1},
                {"job_type": "t"},
            ]
        )
        assert len(await q.dequeue("w", batch_size=3)) == 3
        assert await q.heartbeat("w", [retried, last, stopped]) == 3
        assert await q.heartbeat("other", [retried]) == 0
        assert await q.fail_many(
            [retried, last],
            "w",
            ["boom", "bang"],
            backoffs=[timedelta(minutes=1), 0],
            attempts=[1, None],
        ) == ["pending", "dead_letter"]
        with pytest.raises(ValueError, match="retries must have one entry per job id"):
            await q.fail_many([retried], "w", ["e"], retries=[True, False])
        assert await q.release([stopped], "w") == 1
    row = job_row(conn, stopped)
    assert (row["status"], row["attempts"]) == ("pending", 0)
    assert job_row(conn, last)["status"] == "dead_letter"


async def test_stats_prune_health_and_unserved(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        ids = await q.enqueue_many([{"job_type": "t"} for _ in range(3)])
        claimed = await q.dequeue("w", batch_size=2)
        await q.complete_many([j.id for j in claimed], "w")
        rows = {(r.queue, r.job_type, r.status): r.jobs for r in await q.stats()}
        assert rows == {("default", "t", "succeeded"): 2, ("default", "t", "pending"): 1}
        conn.execute(
            "UPDATE jobq_jobs SET finished_at = now() - interval '2 hours' "
            "WHERE finished_at IS NOT NULL"
        )
        with pytest.raises(ValueError, match="batch_size"):
            await q.prune(older_than=3600, batch_size=0)
        assert await q.prune(older_than=3600, batch_size=1) == 2  # three statements
        assert {h.check_name for h in await q.health()}
        conn.execute("UPDATE jobq_jobs SET available_at = now() - interval '1 hour'")
        conn.execute("UPDATE jobq_workers SET last_claim_at = now() - interval '1 hour'")
        unserved = await q.unserved_job_types(idle=60)
        assert [(u.job_type, u.jobs) for u in unserved] == [("t", 1)]
    assert [row[0] for row in conn.execute("SELECT id FROM jobq_jobs")] == [
        i for i in ids if i not in {j.id for j in claimed}
    ]


async def test_schedules(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        next_run = await q.schedule("nightly", "0 3 * * *", "report", {"k": 1},
                                    timezone="Europe/Paris")
        assert next_run.tzinfo is not None
        assert [s.name for s in await q.schedules()] == ["nightly"]
        conn.execute("UPDATE jobq_schedules SET next_run_at = now() - interval '1 minute'")
        fires = await q.tick()
        assert [f.schedule for f in fires] == ["nightly"]
        assert await q.unschedule("nightly") is True
        assert await q.unschedule("nightly") is False
    assert job_row(conn, fires[0].job_id)["payload"] == {"k": 1}


# -- cancellation, results and waiting ----------------------------------------------------------

LONG_POLL = 120.0  # a wait that returns before this was woken by a notification


async def _claim(q: AsyncQueue, n: int = 1) -> list[uuid.UUID]:
    return [j.id for j in await q.dequeue("w1", batch_size=n)]


async def _until_awaited(conn: Conn, *jobs: uuid.UUID) -> None:
    """Until the waiter has registered its interest in the jobs (jobq_awaits; it LISTENs first:
    from then on no notification of their end can be missed)."""
    for _ in range(3000):
        row = conn.execute(
            "SELECT bool_and(EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = j.id))"
            " FROM jobq_jobs AS j WHERE j.id = ANY(%s)",
            (list(jobs),),
        ).fetchone()
        if row and row[0]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the waiter never registered the jobs")


async def test_cancel_and_status_as_queue_does(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        running = await q.enqueue("t")
        await _claim(q)
        pending = await q.enqueue("t", {"secret": 1})
        unknown = uuid.uuid4()
        assert await q.cancel([unknown, running, pending], reason="not needed") == {
            running: "cancel_requested", pending: "cancelled"}
        st = await q.status([pending, unknown, running])
        assert list(st) == [pending, running]
        assert st[running].status == "processing" and st[running].cancel_requested
        assert (st[pending].status, st[pending].last_error) == ("cancelled", "not needed")
        assert await q.status(str(running)) == {running: st[running]}
        with pytest.raises(ValueError, match="job_ids: 'nope' is not a job id"):
            await q.status(["nope"])
        with pytest.raises(ValueError, match="NUL"):
            await q.cancel([running], reason="a\x00b")
        kept = await q.enqueue("t")
        async with await psycopg.AsyncConnection.connect(dsn) as caller:
            assert await q.cancel([kept], conn=caller) == {kept: "cancelled"}
            await caller.rollback()
        assert (await q.status([kept]))[kept].status == "pending"


async def test_result_complete_with_results_and_their_limit(dsn: str, conn: Conn) -> None:
    from pgq_client import JobFailed, JobNotFound

    async with AsyncQueue(dsn) as q:
        await q.enqueue_many([{"job_type": "t"} for _ in range(3)])
        first, second, third = await _claim(q, 3)
        assert await q.complete_many([first, second], "w1", results=[{"pages": 3}, None]) == 2
        assert await q.result(first) == {"pages": 3}
        assert await q.result(second) is None
        await q.configure(max_payload_bytes=1000)
        with pytest.raises(PayloadTooLarge, match="the limit is 1000 bytes"):
            await q.complete(third, "w1", result={"s": "x" * 2000})
        with pytest.raises(ValueError, match="results must have one entry per job id"):
            await q.complete_many([third], "w1", results=[1, 2])
        assert (await q.status([third]))[third].status == "processing", "nothing changed"
        assert await q.fail(third, "w1", "Traceback ...\nValueError: bad", retry=False) == "failed"
        with pytest.raises(JobFailed, match="ended failed: ValueError: bad") as failed:
            await q.result(third)
        assert (failed.value.job_id, failed.value.status) == (third, "failed")
        late = await q.enqueue("t")
        with pytest.raises(TimeoutError, match=f"job {late} has not finished within 0.2 s"):
            await q.result(late, timeout=0.2, poll_interval=0.05)
        with pytest.raises(JobNotFound, match="no job"):
            await q.result(uuid.uuid4(), timeout=0)
        with pytest.raises(ValueError, match="timeout must not be negative"):
            await q.wait([late], timeout=-1)
        with pytest.raises(ValueError, match="poll_interval must be positive"):
            await q.wait([late], poll_interval=0)
        assert await q.wait([], timeout=1) == {}


async def test_wait_is_woken_by_the_notification_not_a_poll(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        jobs = [await q.enqueue("t") for _ in range(3)]
        x, y = await _claim(q, 2)
        (z,) = [j for j in jobs if j not in (x, y)]
        waiting = asyncio.ensure_future(q.wait(jobs, timeout=60, poll_interval=LONG_POLL))
        await _until_awaited(conn, *jobs)
        other = Queue(dsn)
        await asyncio.to_thread(other.complete, x, "w1", result="ok")
        await asyncio.to_thread(other.fail, y, "w1", "no", retry=False)
        await asyncio.to_thread(other.cancel, [z])
        statuses = await waiting  # 120 s poll: only the notifications could end it
    assert [statuses[j].status for j in (x, y, z)] == ["succeeded", "failed", "cancelled"]
    assert list(statuses) == jobs and statuses[x].result == "ok"


async def test_a_lost_notification_is_made_up_for_by_the_poll(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        job = await q.enqueue("t")
        await _claim(q)
        waiting = asyncio.ensure_future(q.wait([job], timeout=60, poll_interval=0.1))
        await _until_awaited(conn, job)
        conn.execute("DELETE FROM jobq_awaits WHERE job_id = %s", (job,))
        await asyncio.to_thread(Queue(dsn).complete, job, "w1")
        assert (await waiting)[job].status == "succeeded"


@pytest.mark.parametrize("kind", ["connection", "pool", "connection in a transaction"])
async def test_wait_on_a_given_connection_or_pool(dsn: str, conn: Conn, kind: str) -> None:
    job = Queue(dsn).enqueue("t")
    Queue(dsn).dequeue("w1")
    if kind == "pool":
        async with AsyncConnectionPool(dsn, min_size=1, max_size=1, open=False) as pool:
            q = AsyncQueue(pool)
            waiting = asyncio.ensure_future(q.wait([job], timeout=60, poll_interval=LONG_POLL))
            await _until_awaited(conn, job)
            await asyncio.to_thread(Queue(dsn).complete, job, "w1")
            statuses = await waiting
            async with pool.connection() as c:  # given back as it was
                cur = await c.execute("SELECT pg_listening_channels()")
                assert await cur.fetchall() == []
    else:
        async with await psycopg.AsyncConnection.connect(
            dsn, autocommit=kind == "connection"
        ) as c:
            if kind != "connection":
                await c.execute("SELECT 1")  # a transaction is open: the wait polls
            q = AsyncQueue(c)
            poll = LONG_POLL if kind == "connection" else 0.1
            waiting = asyncio.ensure_future(q.wait([job], timeout=60, poll_interval=poll))
            if kind == "connection":
                await _until_awaited(conn, job)
            else:
                await asyncio.sleep(0.2)
            await asyncio.to_thread(Queue(dsn).complete, job, "w1")
            statuses = await waiting
            cur = await c.execute("SELECT pg_listening_channels()")
            assert await cur.fetchall() == []
    assert statuses[job].status == "succeeded"
