"""``Queue`` and ``AsyncQueue`` against a real PostgreSQL, one suite for both.

Most tests take the ``client`` fixture and run twice: on ``Queue`` and on ``AsyncQueue``, whose
coroutines the fixture runs to completion, so that each behaviour is proved once for both
executors. Behaviour that only one of them has (threads, asyncio tasks, the LATIN1 connection)
is tested on that one alone.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import click
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool
from tests.helpers import job_row

from jobq_cli import operations as cli_operations
from pgq_client import (
    AsyncQueue,
    IncompatibleSchema,
    InvalidArgument,
    Job,
    JobFailed,
    JobNotFound,
    JobqError,
    Limit,
    NotMigrated,
    NullValue,
    PayloadTooLarge,
    Queue,
    SerializationFailure,
    Worker,
    _sql,
)
from pgq_client.errors import ConnectionFailed, from_psycopg
from pgq_client.migrate import migrate
from pgq_client.models import FINISHED_STATUSES, STATUSES

Conn = psycopg.Connection[Any]


def _count(conn: Conn, where: str = "true") -> int:
    row = conn.execute(f"SELECT count(*) FROM jobq_all_jobs WHERE {where}").fetchone()
    assert row is not None
    return int(row[0])


# -- the two executors ---------------------------------------------------------------------------


def _unwrap(value: Any) -> Any:
    return value._target if isinstance(value, Blocking) else value


class Blocking:
    """A Queue, AsyncQueue, connection, pool or cursor whose methods return their results:
    a coroutine is run to completion on the client's event loop."""

    def __init__(self, client: Client, target: Any) -> None:
        self._client, self._target = client, target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            result = value(*map(_unwrap, args), **{k: _unwrap(v) for k, v in kwargs.items()})
            result = self._client.run(result)
            if isinstance(result, psycopg.Cursor | psycopg.AsyncCursor):
                return Blocking(self._client, result)
            return result

        return call

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Client:
    """Makes what a test needs for one executor: ``Queue`` with psycopg's Connection and
    ConnectionPool, or ``AsyncQueue`` with AsyncConnection and AsyncConnectionPool."""

    def __init__(self, kind: str) -> None:
        self.is_async = kind == "async"
        self.cls: type[Queue] | type[AsyncQueue] = AsyncQueue if self.is_async else Queue
        self.name = self.cls.__name__
        self.loop = asyncio.new_event_loop() if self.is_async else None

    def run(self, value: Any) -> Any:
        if inspect.isawaitable(value):
            assert self.loop is not None
            return self.loop.run_until_complete(value)
        return value

    def queue(self, target: Any = None, **kwargs: Any) -> Any:
        return Blocking(self, self.cls(_unwrap(target), **kwargs))

    def embedded(self) -> Any:
        return Blocking(self, self.cls.embedded())

    def connect(self, dsn: str, **kwargs: Any) -> Any:
        if self.is_async:
            return Blocking(self, self.run(psycopg.AsyncConnection.connect(dsn, **kwargs)))
        return Blocking(self, psycopg.connect(dsn, **kwargs))

    def pool(self, dsn: str, **kwargs: Any) -> Any:
        if self.is_async:
            pool = AsyncConnectionPool(dsn, open=False, **kwargs)
            self.run(pool.open())
            return Blocking(self, pool)
        return Blocking(self, ConnectionPool(dsn, open=True, **kwargs))


@pytest.fixture(params=["sync", "async"])
def client(request: pytest.FixtureRequest) -> Iterator[Client]:
    """Each test that takes it runs on Queue, then on AsyncQueue."""
    made = Client(request.param)
    yield made
    if made.loop is not None:
        made.loop.close()


# -- one API ---------------------------------------------------------------------------------


def _public_methods(cls: type) -> dict[str, Any]:
    return {
        name: member
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and name != "close"
    }


def test_async_queue_has_every_method_of_queue_with_the_same_arguments() -> None:
    """Every public method of Queue is a coroutine of AsyncQueue with the same parameters,
    defaults, annotations and documentation."""
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
    """A public method is declared to send the statement of its name (``@_ops.sends``, whose
    body drives it), or its body is one call of the operation of the same name (dead letters
    are a listing; enqueue, one statement, builds its call with enqueue_call; wait reads its
    arguments with wait_args) whose result it returns: the statements and checks live in
    pgq_client._ops only."""
    renamed = {"dead_letters": "list_jobs", "enqueue": "enqueue_call", "wait": "wait_args"}
    for cls in (Queue, AsyncQueue):
        for name, method in _public_methods(cls).items():
            source = inspect.getsource(method)
            sent = re.match(r'\s*@_ops\.sends\(\s*"(\w+)"', source)
            if sent is not None:
                assert sent.group(1) == renamed.get(name, name), (cls.__name__, name)
            else:
                assert f"_ops.{renamed.get(name, name)}(" in source, (cls.__name__, name)
                # AsyncQueue awaits what the shared body returns: a body must return its drive.
                assert "return self._" in source, (cls.__name__, name)
            assert ".execute(" not in source and "cursor(" not in source, (cls.__name__, name)


# -- producing -------------------------------------------------------------------------------


def test_enqueue_dequeue_complete_round_trip(client: Client, dsn: str, conn: Conn) -> None:
    """A job enqueued with options is claimed as a typed Job carrying them, and completes
    once: a second completion of the same claim is refused."""
    with client.queue(dsn) as q:
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


def test_enqueue_with_conn_commits_with_the_callers_transaction(
    client: Client, dsn: str, conn: Conn
) -> None:
    """With conn=, enqueue and enqueue_many run in the caller's transaction: nothing is
    visible, nor committed by the client, until the caller commits."""
    with client.queue(dsn) as q, client.connect(dsn) as caller:
        job_id = q.enqueue("t", {"n": 1}, conn=caller)
        ids = q.enqueue_many([{"job_type": "t"}, {"job_type": "u"}], conn=caller)
        assert _count(conn) == 0, "not visible before the caller commits"
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        caller.commit()
    assert job_row(conn, job_id)["status"] == "pending"
    assert _count(conn) == 1 + len(ids)


def test_enqueue_with_conn_vanishes_when_the_caller_rolls_back(
    client: Client, dsn: str, conn: Conn
) -> None:
    """Jobs enqueued in the caller's transaction go with its rollback."""
    with client.queue(dsn) as q, client.connect(dsn) as caller:
        caller.execute("CREATE TABLE orders (id int)")
        caller.execute("INSERT INTO orders VALUES (1)")
        q.enqueue("t", {"order": 1}, conn=caller)
        q.enqueue_many([{"job_type": "t"}], conn=caller)
        caller.rollback()
    assert _count(conn) == 0


def test_a_refused_call_in_the_callers_transaction_leaves_it_for_the_caller(
    client: Client, dsn: str, conn: Conn
) -> None:
    """A refused call with conn= leaves the caller's transaction aborted, for the caller to
    roll back: the client neither commits nor rolls back a transaction it does not own."""
    with client.queue(dsn) as q, client.connect(dsn) as caller:
        q.enqueue("t", conn=caller)
        with pytest.raises(InvalidArgument, match="max_attempts"):
            q.enqueue("t", max_attempts=0, conn=caller)
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        caller.rollback()
    assert _count(conn) == 0


def test_naive_run_at_is_refused_with_value_error(client: Client, dsn: str, conn: Conn) -> None:
    """A run_at without a time zone is refused before anything is sent."""
    with client.queue(dsn) as q:
        with pytest.raises(ValueError, match="timezone-aware"):
            q.enqueue("t", run_at=datetime(2030, 1, 1))
        with pytest.raises(ValueError, match="timezone-aware"):
            q.enqueue_many([{"job_type": "t", "run_at": datetime(2030, 1, 1)}])
    assert _count(conn) == 0


def test_run_at_in_the_future_is_not_claimed_before_then(
    client: Client, dsn: str, conn: Conn
) -> None:
    """A job enqueued for later is stored with that time and not claimed before it."""
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    with client.queue(dsn) as q:
        job_id = q.enqueue("t", run_at=later)
        assert q.dequeue("w") == []
    assert job_row(conn, job_id)["available_at"] == later


def test_same_idempotency_key_returns_the_existing_job(
    client: Client, dsn: str, conn: Conn
) -> None:
    """A second enqueue with a known key returns the first job's id and changes nothing."""
    with client.queue(dsn) as q:
        first = q.enqueue("t", {"v": 1}, idempotency_key="k")
        second = q.enqueue("t", {"v": 2}, idempotency_key="k")
    assert first == second
    assert job_row(conn, first)["payload"] == {"v": 1}
    assert _count(conn) == 1


def test_threads_enqueuing_one_key_at_once_share_one_job(dsn: str, conn: Conn) -> None:
    """Eight Queues in eight threads enqueuing one key at once make one job, every one of
    them getting its id and none an error."""
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
    assert _count(conn) == 1


async def test_many_coroutines_enqueuing_one_key_at_once_share_one_job(
    dsn: str, conn: Conn
) -> None:
    """Forty coroutines on one AsyncQueue over a pool enqueuing one key at once share one
    job."""
    async with AsyncConnectionPool(dsn, min_size=8, max_size=8, open=False) as pool:
        q = AsyncQueue(pool)
        ids = await asyncio.gather(*(q.enqueue("t", idempotency_key="same") for _ in range(40)))
    assert len(set(ids)) == 1
    assert _count(conn) == 1


async def test_enqueue_inside_an_async_transaction_block(dsn: str, conn: Conn) -> None:
    """conn= inside ``async with caller.transaction()``: the job goes with the block's
    rollback on an exception and is kept when the block commits."""
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
    assert [row[0] for row in conn.execute("SELECT id FROM jobq_all_jobs")] == [kept]


def test_enqueue_many_returns_ids_in_input_order(client: Client, dsn: str, conn: Conn) -> None:
    """enqueue_many returns one id per element in input order, the same id for two elements
    with one key, and [] for no jobs."""
    later = datetime.now(timezone.utc) + timedelta(minutes=5)
    jobs: list[dict[str, Any]] = [{"job_type": "t", "payload": {"n": i}} for i in range(50)]
    jobs[7]["run_at"] = later
    jobs[8]["idempotency_key"] = "dup"
    jobs[9]["idempotency_key"] = "dup"
    with client.queue(dsn) as q:
        ids = q.enqueue_many(jobs)
        assert q.enqueue_many([]) == []
    assert len(ids) == 50
    assert ids[8] == ids[9]
    for i in (0, 7, 49):
        assert job_row(conn, ids[i])["payload"] == {"n": i}
    assert job_row(conn, ids[7])["available_at"] == later


# -- bad input: typed errors naming the argument, nothing changed -------------------------------


def test_bad_arguments_raise_typed_errors_naming_the_argument(
    client: Client, dsn: str, conn: Conn
) -> None:
    """Each bad argument raises its typed error with its SQLSTATE, naming the argument, and
    leaves the jobs and schedules as they were."""
    with client.queue(dsn) as q:
        q.enqueue("kept")
        with pytest.raises(InvalidArgument) as blank:
            q.enqueue("  ")
        assert blank.value.sqlstate == "22023" and "job_type" in str(blank.value)
        with pytest.raises(InvalidArgument, match="max_attempts") as attempts:
            q.enqueue("t", max_attempts=0)
        assert attempts.value.sqlstate == "22023"
        with pytest.raises(InvalidArgument, match="queue"):
            q.enqueue("t", queue=" ")
        with pytest.raises(InvalidArgument, match="colour") as key:
            q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "colour": "red"}])
        assert key.value.sqlstate == "22023" and "element 2" in str(key.value)
        with pytest.raises(InvalidArgument, match="batch_size") as batch:
            q.dequeue("w", batch_size=0)
        assert batch.value.sqlstate == "22023"
        with pytest.raises(InvalidArgument, match="between 1 and 10000"):
            q.dequeue("w", batch_size=10_001)
        with pytest.raises(InvalidArgument, match="payload must be a JSON object") as payload:
            q.enqueue("t", [1, 2])
        assert payload.value.sqlstate == "22023"
        with pytest.raises(ValueError, match="timezone-aware"):
            q.enqueue("t", run_at=datetime(2030, 1, 1))
        with pytest.raises(ValueError, match="job_type contains a NUL"):
            q.enqueue("nul\x00type")
        with pytest.raises(ValueError, match=re.escape("jobs[1]")):
            q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "payload": ["\x00"]}])
        with pytest.raises(InvalidArgument, match="pending"):
            q.prune(statuses=["pending"])
        with pytest.raises(TypeError, match="older_than"):
            q.prune(older_than="a week")
        with pytest.raises(InvalidArgument, match="cron"):
            q.schedule("nightly", "61 * * * *", "t")
    assert [row[0] for row in conn.execute("SELECT job_type FROM jobq_all_jobs")] == ["kept"]
    assert conn.execute("SELECT count(*) FROM jobq_schedules").fetchone() == (0,)


def test_worker_refuses_a_batch_size_the_claim_would_refuse(dsn: str) -> None:
    """The Worker refuses at construction the batch size that a claim refuses."""
    with pytest.raises(ValueError, match="between 1 and 10000"):
        Worker(dsn, handlers={"t": print}, batch_size=10_001)
    with Queue(dsn) as q, pytest.raises(InvalidArgument, match="between 1 and 10000"):
        q.dequeue("w", batch_size=10_001)


def test_payload_over_the_configured_limit_is_payload_too_large(
    client: Client, dsn: str, conn: Conn
) -> None:
    """configure() sets the payload limit; a larger payload is PayloadTooLarge (54000), a
    JobqError, and a smaller one is still enqueued."""
    with client.queue(dsn) as q:
        assert q.configure(max_payload_bytes=100)["max_payload_bytes"] == 100
        assert q.configure()["max_payload_bytes"] == 100
        with pytest.raises(PayloadTooLarge) as exc:
            q.enqueue("t", {"blob": "x" * 500})
        assert exc.value.sqlstate == "54000"
        assert isinstance(exc.value, JobqError)
        q.enqueue("t", {"small": 1})
    assert _count(conn) == 1


def test_payload_must_be_a_json_object_in_the_client_as_in_sql(
    client: Client, dsn: str, conn: Conn
) -> None:
    """A payload that is not a JSON object is refused with 22023, in enqueue and in an
    element of enqueue_many (named by its position); no payload is {}."""
    with client.queue(dsn) as q:
        for payload in ([1, 2], "text", 3, 1.5, True):
            with pytest.raises(InvalidArgument, match="payload must be a JSON object") as exc:
                q.enqueue("t", payload)
            assert exc.value.sqlstate == "22023"
        with pytest.raises(InvalidArgument, match="payload must be a JSON object") as exc:
            q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "payload": [1]}])
        assert exc.value.sqlstate == "22023" and "element 2" in str(exc.value)
        q.enqueue("t")  # no payload: {}
    assert conn.execute("SELECT payload FROM jobq_all_jobs").fetchall() == [({},)]


def test_null_value_maps_from_sqlstate_22004(conn: Conn) -> None:
    """A NULL payload sent to the SQL function directly is NullValue (22004) once mapped,
    and adds no job."""
    with pytest.raises(psycopg.Error) as raw:
        conn.execute("SELECT jobq_enqueue(job_type => 't', payload => NULL)")
    mapped = from_psycopg(raw.value)
    assert isinstance(mapped, NullValue)
    assert mapped.sqlstate == "22004"
    assert _count(conn) == 0


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
    client: Client, dsn: str, conn: Conn, call: Any, argument: str
) -> None:
    """A NUL or a lone surrogate in any text is refused with ValueError naming the argument
    before anything is sent; an escaped backslash-u0000 is stored as it is."""
    with client.queue(dsn) as q:
        with pytest.raises(ValueError, match=re.escape(argument)) as refused:
            call(q)
        assert "NUL" in str(refused.value) or "surrogate" in str(refused.value)
        q.enqueue("t", {"text": "a literal \\u0000 is fine"})  # escaped backslash: not a NUL
    assert conn.execute("SELECT payload FROM jobq_all_jobs").fetchall() == [
        ({"text": "a literal \\u0000 is fine"},)
    ]


def test_conn_of_the_other_kind_is_refused_before_anything_is_sent(
    dsn: str, conn: Conn
) -> None:
    """A Connection given to AsyncQueue, or an AsyncConnection to Queue, as conn= or as the
    queue's target, is a TypeError naming the class to use."""
    aq = AsyncQueue(dsn)
    with (
        psycopg.connect(dsn) as sync_conn,
        pytest.raises(TypeError, match=r"AsyncConnection.*use Queue"),
    ):
        asyncio.run(aq.enqueue("t", conn=sync_conn))

    async def other_kind() -> None:
        async with await psycopg.AsyncConnection.connect(dsn) as async_conn:
            with Queue(dsn) as sync_queue, pytest.raises(TypeError, match="use AsyncQueue"):
                sync_queue.enqueue("t", conn=async_conn)

    asyncio.run(other_kind())
    with pytest.raises(TypeError, match="use Queue"):
        AsyncQueue(ConnectionPool(dsn, open=False))
    with pytest.raises(TypeError, match="use AsyncQueue"):
        Queue(AsyncConnectionPool(dsn, open=False))
    assert _count(conn) == 0


def test_a_database_without_jobq_says_run_migrate(client: Client, empty_dsn: str) -> None:
    """On a database without jobq the first call is NotMigrated, saying to run jobq migrate."""
    with client.queue(empty_dsn) as q, pytest.raises(NotMigrated, match="jobq migrate"):
        q.enqueue("t")


def test_unreachable_server_is_connection_failed_without_the_password(client: Client) -> None:
    """A server that cannot be reached is ConnectionFailed, whose message has no password."""
    unreachable = "postgresql://app:s3cr3t-pw@127.0.0.1:1/x?connect_timeout=2"
    with client.queue(unreachable) as q, pytest.raises(ConnectionFailed) as exc:
        q.enqueue("t")
    assert "s3cr3t-pw" not in str(exc.value)


def test_a_dsn_libpq_cannot_parse_is_refused_without_the_password(client: Client) -> None:
    """A DSN libpq cannot parse is a JobqError without the password and without libpq's
    error chained (it may quote the password)."""
    with (
        client.queue("postgresql://app:p@ss w0rd@db:notaport/x") as q,
        pytest.raises(JobqError) as exc,
    ):
        q.enqueue("t")
    assert "ss w0rd" not in str(exc.value)
    assert exc.value.__cause__ is None


def test_a_schema_a_newer_jobq_broke_is_refused_before_the_first_statement(
    client: Client, dsn: str, conn: Conn, tmp_path: Path
) -> None:
    """A schema whose latest breaking change this client does not know is refused with
    IncompatibleSchema before any statement, on a DSN and on a given connection, which is
    left idle."""
    from tests.python.test_compat import BREAKING, FUTURE, with_migration

    migrate(dsn, migrations_dir=with_migration(tmp_path, FUTURE, BREAKING))
    with client.queue(dsn) as q, pytest.raises(IncompatibleSchema, match=FUTURE):
        q.enqueue("t")
    with client.connect(dsn) as caller:
        with pytest.raises(IncompatibleSchema):
            client.queue(caller).enqueue("t")
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert _count(conn) == 0


# -- connections ---------------------------------------------------------------------------------


def test_on_a_callers_connection_it_commits_when_not_in_a_transaction(
    client: Client, dsn: str, conn: Conn
) -> None:
    """A queue made on an idle caller's connection commits each call itself, leaves the
    connection idle, and does not close it."""
    with client.connect(dsn) as caller:  # not autocommit
        q = client.queue(caller)
        job_id = q.enqueue("t")
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert job_row(conn, job_id)["status"] == "pending"
        q.close()
        assert not caller.closed  # the caller's connection stays theirs


def test_on_a_pool(client: Client, dsn: str, conn: Conn) -> None:
    """A queue made on a pool runs each call on a connection of the pool and does not close
    the pool."""
    with client.pool(dsn, min_size=1, max_size=2) as pool:
        q = client.queue(pool)
        ids = [q.enqueue("t", {"i": i}) for i in range(5)]
        assert len(q.dequeue("w", batch_size=10)) == 5
        q.close()
        assert not pool.closed
    assert _count(conn) == len(ids)


def test_a_closed_queue_refuses_every_call_and_changes_nothing(
    client: Client, dsn: str, conn: Conn
) -> None:
    """Whatever the queue was made from (a DSN, a connection, a pool), a call after close()
    says so, before anything is sent."""
    with client.pool(dsn, min_size=1, max_size=1) as pool, client.connect(
        dsn, autocommit=True
    ) as given:
        for q in (client.queue(dsn), client.queue(given), client.queue(pool)):
            q.enqueue("t")
            q.close()
            closed = f"this {client.name} is closed"
            with pytest.raises(JobqError, match=closed):
                q.enqueue("t")
            with pytest.raises(JobqError, match=closed):
                q.enqueue_many([{"job_type": "t"}])
            with pytest.raises(JobqError, match=closed):
                q.dequeue("w")
    assert conn.execute("SELECT count(*), count(*) FILTER (WHERE status = 'pending') "
                        "FROM jobq_all_jobs").fetchone() == (3, 3)


def test_without_dsn_it_uses_jobq_dsn(
    client: Client, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given no DSN, a queue uses JOBQ_DSN before DATABASE_URL."""
    monkeypatch.setenv("JOBQ_DSN", dsn)
    monkeypatch.setenv("DATABASE_URL", "postgresql://127.0.0.1:1/wrong")
    with client.queue() as q:
        assert isinstance(q.enqueue("t"), uuid.UUID)
        assert q.dsn == dsn


def test_without_dsn_it_falls_back_to_database_url(
    client: Client, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given no DSN and no JOBQ_DSN, a queue uses DATABASE_URL."""
    monkeypatch.delenv("JOBQ_DSN", raising=False)
    monkeypatch.setenv("DATABASE_URL", dsn)
    with client.queue() as q:
        assert isinstance(q.enqueue("t"), uuid.UUID)


def test_without_any_dsn_it_says_how_to_give_one_and_starts_no_server(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no DSN, JOBQ_DSN or DATABASE_URL, a queue refuses at its first statement with a
    message naming each way to give a database, and never starts the embedded server."""
    for name in ("JOBQ_DSN", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    started: list[object] = []
    monkeypatch.setattr("pgq_client.embedded.start", lambda *a, **k: started.append(a) or "")
    with client.queue() as q, pytest.raises(JobqError) as caught:
        q.enqueue("t")
    for fix in ("JOBQ_DSN", "DATABASE_URL", "Queue.embedded()", "pgq_client.embedded.start()"):
        assert fix in str(caught.value)
    assert started == []


def test_embedded_uses_the_dsn_of_the_embedded_server(
    client: Client, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queue.embedded() and AsyncQueue.embedded() connect to what
    pgq_client.embedded.start() returns."""
    monkeypatch.setattr("pgq_client.embedded.start", lambda home=None: dsn)
    with client.embedded() as q:
        assert q.dsn == dsn
        assert isinstance(q.enqueue("t"), uuid.UUID)


def test_it_reconnects_after_its_connection_is_terminated(
    client: Client, dsn: str, conn: Conn
) -> None:
    """A lost connection is reported (an enqueue is not idempotent, so not retried) and the
    next call connects again."""
    with client.queue(dsn) as q:
        q.enqueue("t")
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        with pytest.raises(ConnectionFailed):
            q.enqueue("t")
        q.enqueue("t")
    assert _count(conn) == 2


def test_schema_qualified_queue_uses_its_own_tables(client: Client, dsn: str, conn: Conn) -> None:
    """A queue given a schema reads and writes that schema's tables only."""
    migrate(dsn, schema="tenant_a")
    with client.queue(dsn, schema="tenant_a") as tenant, client.queue(dsn) as public:
        tenant_id = tenant.enqueue("t")
        assert public.dequeue("w") == []
        assert [j.id for j in tenant.dequeue("w")] == [tenant_id]
    assert conn.execute("SELECT count(*) FROM tenant_a.jobq_jobs").fetchone() == (1,)
    assert conn.execute("SELECT count(*) FROM public.jobq_jobs").fetchone() == (0,)


def test_a_schema_named_beyond_ascii_is_sent_in_the_connections_encoding(
    dsn: str, conn: Conn
) -> None:
    """Statements go as bytes when their text is ASCII (the same bytes in every client
    encoding); one naming a schema beyond ASCII stays an sql.SQL, encoded in the connection's
    encoding, so that a LATIN1 connection reaches that schema."""
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


def _try_enqueue(q: Queue, conn: Conn | None) -> object:
    try:
        return q.enqueue("t", idempotency_key="k", conn=conn)
    except JobqError as exc:
        return exc


def test_serializable_caller_transaction_conflict_is_raised_to_the_caller(dsn: str) -> None:
    """With conn= (in a thread), a serialization failure reaches the caller, typed, and is
    not retried behind their back."""
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


async def test_serializable_caller_transaction_conflict_is_raised_to_the_caller_async(
    dsn: str,
) -> None:
    """The same with AsyncQueue, the second enqueue a task waiting on the first's key."""
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


def test_serialization_failure_of_an_owned_transaction_is_retried(dsn: str) -> None:
    """An enqueue in a transaction the Queue owns that fails to serialize is retried and
    finds the key's job."""
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


async def test_serialization_failure_of_an_owned_transaction_is_retried_async(dsn: str) -> None:
    """The same with AsyncQueue, the waiting enqueue a task."""
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


def test_fail_then_dead_letters_lists_and_requeue_makes_pending(
    client: Client, dsn: str, conn: Conn
) -> None:
    """fail() ends a job failed or dead_letter (None for a claim not held); dead_letters,
    list_jobs and get_job list them; requeue makes them pending with their history kept."""
    with client.queue(dsn) as q:
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
        assert [j.id for j in q.list_jobs(statuses=["succeeded"])] == [ok_id]
        got = q.get_job(ok_id)
        assert got is not None and got.status == "succeeded"
        assert q.get_job(uuid.uuid4()) is None

        assert q.requeue_dead_letter(ok_id) is False
        assert q.requeue_dead_letter(failed_id) is True
        assert q.requeue_dead_letters(job_type="u") == 1
        assert q.dead_letters() == []
    for job_id in (failed_id, dead_id):
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"]) == ("pending", 0)
        assert len(row["errors"]) == 1  # history kept


def test_fail_many_reports_each_job_in_order_as_fail_would(
    client: Client, dsn: str, conn: Conn
) -> None:
    """fail_many gives each job the status fail() would, in order (None where the claim is
    another worker's), and refuses lists of the wrong length or a negative backoff."""
    with client.queue(dsn) as q:
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


def test_heartbeat_and_release_act_only_on_the_workers_own_claims(
    client: Client, dsn: str, conn: Conn
) -> None:
    """heartbeat and release count only the jobs the worker holds; a released job is pending
    with its attempt given back."""
    with client.queue(dsn) as q:
        a, b = q.enqueue_many([{"job_type": "t"}, {"job_type": "t"}])
        q.dequeue("w1", batch_size=1)
        q.dequeue("w2", batch_size=1)
        conn.execute("UPDATE jobq_jobs SET locked_at = locked_at - interval '1 hour',"
            " locked_until = locked_until - interval '1 hour'")
        assert q.heartbeat("w1", [a, b]) == 1
        assert q.heartbeat("other", [a, b]) == 0
        assert q.release([a, b], "w1") == 1
    held_by = dict(conn.execute("SELECT id, locked_by FROM jobq_all_jobs").fetchall())
    released = a if held_by[a] is None else b
    assert job_row(conn, released)["attempts"] == 0
    assert job_row(conn, released)["status"] == "pending"


def test_the_client_statuses_are_those_of_the_sql(conn: Conn) -> None:
    """The client's status names, and the CLI's prune choices, are the SQL's, in its order."""
    everything = conn.execute("SELECT jobq__statuses()").fetchone()
    finished = conn.execute("SELECT jobq__statuses(finished => true)").fetchone()
    assert everything == (list(STATUSES),), "the same names, in the same order"
    assert finished == (list(FINISHED_STATUSES),)
    prune_status = next(p for p in cli_operations.prune.params if p.name == "statuses")
    assert isinstance(prune_status.type, click.Choice)
    assert tuple(prune_status.type.choices) == FINISHED_STATUSES


def test_stats_prune_health_and_unserved(client: Client, dsn: str, conn: Conn) -> None:
    """stats counts per queue, type and status; prune deletes finished jobs older than the
    age asked, in batches, and refuses live statuses; health and unserved_job_types report."""
    with client.queue(dsn) as q:
        ids = q.enqueue_many([{"job_type": "t"} for _ in range(3)])
        claimed = q.dequeue("w", batch_size=2)
        q.complete_many([j.id for j in claimed], "w")
        rows = {(r.queue, r.job_type, r.status): r.jobs for r in q.stats()}
        assert rows == {("default", "t", "succeeded"): 2, ("default", "t", "pending"): 1}
        assert q.prune(older_than=timedelta(hours=1)) == 0
        conn.execute(
            "UPDATE jobq_jobs_history SET finished_at = now() - interval '2 hours' "
            "WHERE finished_at IS NOT NULL"
        )
        with pytest.raises(ValueError, match="batch_size"):
            q.prune(older_than=3600, batch_size=0)
        with pytest.raises(InvalidArgument):
            q.prune(statuses=["pending"])
        assert q.prune(older_than=3600, statuses=["succeeded"], batch_size=1) == 2
        assert {h.check_name for h in q.health()}
        conn.execute("UPDATE jobq_jobs SET available_at = now() - interval '1 hour'")
        conn.execute("UPDATE jobq_workers SET last_claim_at = now() - interval '1 hour'")
        unserved = q.unserved_job_types(idle=60)
        assert [(u.job_type, u.jobs) for u in unserved] == [("t", 1)]
    assert [row[0] for row in conn.execute("SELECT id FROM jobq_all_jobs")] == [
        i for i in ids if i not in {j.id for j in claimed}
    ]


def test_schedules(client: Client, dsn: str, conn: Conn) -> None:
    """schedule returns the next fire, schedules lists it, tick enqueues a due fire with the
    schedule's payload, unschedule says whether it existed."""
    with client.queue(dsn) as q:
        next_run = q.schedule("nightly", "0 3 * * *", "report", {"k": 1}, timezone="Europe/Paris")
        assert next_run.tzinfo is not None
        assert [s.name for s in q.schedules()] == ["nightly"]
        conn.execute("UPDATE jobq_schedules SET next_run_at = now() - interval '1 minute'")
        fires = q.tick()
        assert [f.schedule for f in fires] == ["nightly"]
        assert q.unschedule("nightly") is True
        assert q.unschedule("nightly") is False
    assert job_row(conn, fires[0].job_id)["payload"] == {"k": 1}


def test_limits_are_set_listed_used_and_removed(client: Client, dsn: str, conn: Conn) -> None:
    """set_limit sets a group's limits (returning None), limits lists them, limit_usage
    shows a key's use, and set_limit with no limit removes them."""
    with client.queue(dsn) as q:
        assert q.set_limit("cust", max_running=2, max_starts=5, per=60) is None
        job_id = q.enqueue("t", limit_group="cust", limit_key="k")
        [other] = q.enqueue_many([{"job_type": "t", "limit_group": "cust", "limit_key": "k"}])
        assert q.limits() == [Limit("cust", 2, 5, timedelta(minutes=1))]
        assert {j.id for j in q.dequeue("w", batch_size=10)} == {job_id, other}
        [usage] = q.limit_usage()
        assert (usage.running, usage.starts_in_window, usage.pending) == (2, 2, 0)
        q.set_limit("cust")
        assert q.limits() == []


# -- cancellation, results and waiting ----------------------------------------------------------

LONG_POLL = 120.0  # a wait that returns before this was woken by a notification


def test_cancel_and_status(client: Client, dsn: str, conn: Conn) -> None:
    """cancel cancels a pending job, asks a running one to stop, leaves unknown ids out, and
    with conn= goes with the caller's rollback; status reports each known job in order."""
    with client.queue(dsn) as q:
        running = q.enqueue("t")
        q.dequeue("w1")
        pending = q.enqueue("t", {"secret": 1})
        unknown = uuid.uuid4()
        assert q.cancel([unknown, running, pending], reason="not needed") == {
            running: "cancel_requested", pending: "cancelled"}
        st = q.status([pending, unknown, running])
        assert list(st) == [pending, running]
        assert st[running].status == "processing" and st[running].cancel_requested
        assert (st[pending].status, st[pending].last_error) == ("cancelled", "not needed")
        assert q.status(str(running)) == {running: st[running]}
        with pytest.raises(ValueError, match="job_ids: 'nope' is not a job id"):
            q.status(["nope"])
        with pytest.raises(ValueError, match="NUL"):
            q.cancel([running], reason="a\x00b")
        kept = q.enqueue("t")
        with client.connect(dsn) as caller:
            assert q.cancel([kept], conn=caller) == {kept: "cancelled"}
            caller.rollback()
        assert q.status([kept])[kept].status == "pending"


def test_result_complete_with_results_and_their_limit(
    client: Client, dsn: str, conn: Conn
) -> None:
    """result returns what completion stored, raises JobFailed, TimeoutError or JobNotFound
    as the job stands; a result over the payload limit changes nothing; wait refuses bad
    timings and returns {} for no ids."""
    with client.queue(dsn) as q:
        q.enqueue_many([{"job_type": "t"} for _ in range(3)])
        first, second, third = [j.id for j in q.dequeue("w1", batch_size=3)]
        assert q.complete_many([first, second], "w1", results=[{"pages": 3}, None]) == 2
        assert q.result(first) == {"pages": 3}
        assert q.result(second) is None
        q.configure(max_payload_bytes=1000)
        with pytest.raises(PayloadTooLarge, match="the limit is 1000 bytes"):
            q.complete(third, "w1", result={"s": "x" * 2000})
        with pytest.raises(ValueError, match="results must have one entry per job id"):
            q.complete_many([third], "w1", results=[1, 2])
        assert q.status([third])[third].status == "processing", "nothing changed"
        assert q.fail(third, "w1", "Traceback ...\nValueError: bad", retry=False) == "failed"
        with pytest.raises(JobFailed, match="ended failed: ValueError: bad") as failed:
            q.result(third)
        assert (failed.value.job_id, failed.value.status) == (third, "failed")
        late = q.enqueue("t")
        with pytest.raises(TimeoutError, match=f"job {late} has not finished within 0.2 s"):
            q.result(late, timeout=0.2, poll_interval=0.05)
        with pytest.raises(JobNotFound, match="no job"):
            q.result(uuid.uuid4(), timeout=0)
        with pytest.raises(ValueError, match="timeout must not be negative"):
            q.wait([late], timeout=-1)
        with pytest.raises(ValueError, match="poll_interval must be positive"):
            q.wait([late], poll_interval=0)
        assert q.wait([], timeout=1) == {}


async def _claim(q: AsyncQueue, n: int = 1) -> list[uuid.UUID]:
    return [j.id for j in await q.dequeue("w1", batch_size=n)]


async def _until_awaited(conn: Conn, *jobs: uuid.UUID) -> None:
    """Until the waiter has registered its interest in the jobs (jobq_awaits; it LISTENs first:
    from then on no notification of their end can be missed)."""
    for _ in range(3000):
        row = conn.execute(
            "SELECT bool_and(EXISTS (SELECT FROM jobq_awaits AS a WHERE a.job_id = j.id))"
            " FROM jobq_all_jobs AS j WHERE j.id = ANY(%s)",
            (list(jobs),),
        ).fetchone()
        if row and row[0]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the waiter never registered the jobs")


async def test_async_wait_is_woken_by_the_notification_not_a_poll(dsn: str, conn: Conn) -> None:
    """An AsyncQueue.wait with a two-minute poll ends when the jobs end in other sessions:
    the notifications woke it."""
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


async def test_async_wait_makes_up_for_a_lost_notification_by_the_poll(
    dsn: str, conn: Conn
) -> None:
    """An AsyncQueue.wait whose job's notification is never sent still sees the job end, at
    its next poll."""
    async with AsyncQueue(dsn) as q:
        job = await q.enqueue("t")
        await _claim(q)
        waiting = asyncio.ensure_future(q.wait([job], timeout=60, poll_interval=0.1))
        await _until_awaited(conn, job)
        conn.execute("DELETE FROM jobq_awaits WHERE job_id = %s", (job,))
        await asyncio.to_thread(Queue(dsn).complete, job, "w1")
        assert (await waiting)[job].status == "succeeded"


@pytest.mark.parametrize("kind", ["connection", "pool", "connection in a transaction"])
async def test_async_wait_on_a_given_connection_or_pool(dsn: str, conn: Conn, kind: str) -> None:
    """AsyncQueue.wait on a given connection or pool listens (or, in the caller's transaction,
    polls) and leaves no channel listened to."""
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
