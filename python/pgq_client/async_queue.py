"""``AsyncQueue``: the :class:`~pgq_client.Queue` API for asyncio, over psycopg's
``AsyncConnection`` and ``AsyncConnectionPool``.

Every method checks its arguments, sends its statements and maps their rows with the same code
as ``Queue`` (the operations of :mod:`pgq_client._ops`); this module only runs them on an
asyncio connection.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import dict_row, scalar_row, tuple_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from . import _ops, _sql
from ._secrets import is_conninfo_error
from .errors import JobqError, SerializationFailure, from_psycopg
from .migrate import breaking_change_in, incompatibility
from .models import (
    BulkSummary,
    Fire,
    HealthRow,
    Job,
    JobStatus,
    Limit,
    LimitUsage,
    MetricSample,
    Schedule,
    StatsRow,
    UnservedJobType,
    use_fast_json,
)
from .queue import (
    SERIALIZATION_RETRIES,
    WAIT_POLL_INTERVAL,
    Queue,
    _check_skip_refused,
    _type_name,
    job_ids_of,
    log,
    resolve_dsn,
    serialization_pause,
    translate_errors,
)

__all__ = ["AsyncConnectable", "AsyncQueue", "aconnect"]

AsyncConnectable = str | psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any] | None

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


async def aconnect(dsn: str, **kwargs: Any) -> psycopg.AsyncConnection[Any]:
    """``AsyncConnection.connect(dsn, autocommit=True)`` raising the typed jobq errors, decoding
    jsonb with :func:`~pgq_client.models.load_json`. A DSN that libpq cannot parse is refused
    without chaining libpq's error, which may quote the password."""
    try:
        conn = await psycopg.AsyncConnection.connect(
            dsn, autocommit=True, **{**_sql.connect_kwargs(dsn), **kwargs}
        )
    except psycopg.Error as exc:
        if is_conninfo_error(exc):
            raise from_psycopg(exc) from None
        raise from_psycopg(exc) from exc
    use_fast_json(conn)
    return conn


def _as(method: Callable[..., Any]) -> Callable[[F], F]:
    """Give an AsyncQueue method the docstring of the Queue method it mirrors."""

    def apply(function: F) -> F:
        function.__doc__ = method.__doc__
        return function

    return apply


class AsyncQueue:
    """:class:`~pgq_client.Queue` for asyncio: the same methods, arguments, results and
    errors, each a coroutine.

    ``AsyncQueue(dsn)`` opens (lazily) and owns one autocommit ``AsyncConnection``, used by one
    call at a time; ``AsyncQueue(connection)`` and ``AsyncQueue(pool)`` (a
    ``psycopg_pool.AsyncConnectionPool``) use the caller's, which stays theirs to close.
    ``AsyncQueue()`` takes ``JOBQ_DSN``, else ``DATABASE_URL``, else the embedded PostgreSQL.
    ``conn=`` (an ``AsyncConnection``) runs a call in the caller's transaction. An AsyncQueue
    belongs to the event loop it is first used on. ``async with AsyncQueue(...) as q:`` closes
    what it opened.
    """

    def __init__(self, dsn: AsyncConnectable = None, *, schema: str | None = None) -> None:
        self._sql = _sql.statements(schema)
        self.schema = schema
        self._late = schema is None  # the schema is found before the first statement (Queue)
        self._lock = asyncio.Lock()
        self._owned: psycopg.AsyncConnection[Any] | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._pool: AsyncConnectionPool[Any] | None = None
        self._dsn: str | None = None
        if isinstance(dsn, psycopg.AsyncConnection):
            self._conn = dsn
        elif isinstance(dsn, AsyncConnectionPool):
            self._pool = dsn
        elif dsn is None or isinstance(dsn, str):
            self._dsn = dsn
        else:
            raise TypeError(
                "AsyncQueue() takes a DSN, a psycopg AsyncConnection or an AsyncConnectionPool, "
                f"got {dsn!r}" + (" (use Queue for it)" if _is_sync(dsn) else "")
            )
        self._closed = False
        self._compatible = False  # checked once, before the first statement
        # Connections of their own for AsyncQueue.wait (LISTEN), kept for the next wait.
        self._listeners: list[psycopg.AsyncConnection[Any]] = []
        self._done_channel: str | None = None

    # -- connection handling ------------------------------------------------------------------

    @property
    def dsn(self) -> str:
        """The DSN this AsyncQueue connects to (resolved on first use when none was given)."""
        if self._conn is not None:
            return self._conn.info.dsn
        if self._pool is not None:
            conninfo = self._pool.conninfo
            if callable(conninfo):  # it may be a coroutine function: the pool calls it
                raise JobqError("the pool's conninfo is a function: ask the pool's connections")
            return conninfo
        if self._dsn is None:
            self._dsn, _ = resolve_dsn(None)
        return self._dsn

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[tuple[psycopg.AsyncConnection[Any], bool]]:
        """A connection for one call, and whether the AsyncQueue owns the transaction around
        it."""
        if self._closed:
            raise JobqError("this AsyncQueue is closed")
        if self._pool is not None:
            async with self._pool.connection() as conn:
                await self._check_compatible(conn)
                yield conn, True
            return
        async with self._lock:
            if self._conn is not None:
                conn = self._conn
                owns_tx = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
                await self._check_compatible(conn)
                yield conn, owns_tx
                return
            if self._owned is None or self._owned.closed or self._owned.broken:
                if self._owned is not None:
                    await self._owned.close()
                    self._owned = None
                if self._dsn is None:  # the embedded server may have to start: not on the loop
                    self._dsn = (await asyncio.to_thread(resolve_dsn, None))[0]
                self._owned = await aconnect(self._dsn)
            await self._check_compatible(self._owned)
            yield self._owned, True

    async def _check_compatible(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Once per AsyncQueue: refuse a schema with a breaking change this client does not
        know."""
        if self._compatible:
            return
        idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with translate_errors():
            async with conn.cursor(row_factory=scalar_row) as cur:
                if idle and not conn.autocommit:  # leave the connection as it was: idle
                    async with conn.transaction():
                        await self._find_schema(conn)
                        await cur.execute(_sql.MIGRATIONS_COMMENT, {"schema": self.schema})
                        description = await cur.fetchone()
                else:
                    await self._find_schema(conn)
                    await cur.execute(_sql.MIGRATIONS_COMMENT, {"schema": self.schema})
                    description = await cur.fetchone()
        error = incompatibility(breaking_change_in(description), self.schema)
        if error is not None:
            raise error
        self._compatible = True

    async def _find_schema(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Given no schema: the one the application's search_path finds (Queue._find_schema)."""
        if self.schema is not None:
            return
        if _sql.opened_by_jobq(conn):
            assert self._dsn is not None
            self.schema = await asyncio.to_thread(_sql.schema_of_dsn, self._dsn)
        else:  # the application's connection: a given one, a pool's, or a call's conn=
            self.schema = await _sql.afind_schema(conn)
        self._sql = _sql.statements(self.schema)

    async def _drive(
        self, op: _ops.Op[T], conn: psycopg.AsyncConnection[Any] | None = None
    ) -> T:
        """Run one operation of :mod:`._ops` on this AsyncQueue's connection (or ``conn``)."""
        self._check_conn(conn)
        return await _ops.adrive(op, lambda call: self._run(call, conn))

    @staticmethod
    def _check_conn(conn: Any) -> None:
        """Refuse a ``conn=`` that is not a psycopg AsyncConnection."""
        if conn is not None and not isinstance(conn, psycopg.AsyncConnection):
            raise TypeError(
                f"conn must be a psycopg AsyncConnection, got {_type_name(conn)}"
                + (" (use Queue with a Connection)" if _is_sync(conn) else "")
            )

    async def _run(
        self, call: _ops.Call, conn: psycopg.AsyncConnection[Any] | None
    ) -> list[Any]:
        """Execute one statement and return its rows, as one short transaction unless
        ``conn`` (the caller's transaction) is given."""
        query, params, row_factory = call.query, call.params, call.row_factory
        binary = call.binary
        if conn is not None:
            # The caller's transaction: no commit, and a serialization failure is theirs to retry.
            await self._check_compatible(conn)
            if self._late:
                query = _sql.bind_schema(query, self.schema or "public")
            with translate_errors():
                async with conn.cursor(row_factory=row_factory) as cur:
                    await cur.execute(query, params, binary=binary)
                    return await cur.fetchall()
        tries = SERIALIZATION_RETRIES if call.retry_serialization else 1
        for attempt in range(1, tries + 1):
            try:
                async with self._connection() as (c, owns_tx):
                    if self._late:
                        query = _sql.bind_schema(query, self.schema or "public")
                    with translate_errors():
                        if owns_tx and not c.autocommit:
                            # A borrowed idle connection: one short transaction, committed.
                            async with c.transaction(), c.cursor(row_factory=row_factory) as cur:
                                await cur.execute(query, params, binary=binary)
                                return await cur.fetchall()
                        async with c.cursor(row_factory=row_factory) as cur:
                            await cur.execute(query, params, binary=binary)
                            return await cur.fetchall()
            except SerializationFailure:
                if attempt == tries or not owns_tx:
                    raise
                log.debug("serialization failure, retrying (%d/%d)", attempt, tries)
                await asyncio.sleep(serialization_pause(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    async def close(self) -> None:
        """Close the connections this AsyncQueue opened (not one it was given)."""
        self._closed = True
        owned, self._owned = self._owned, None
        listeners, self._listeners = self._listeners, []
        for conn in [owned, *listeners]:
            if conn is not None:
                await conn.close()

    async def __aenter__(self) -> AsyncQueue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- producing ----------------------------------------------------------------------------

    @_as(Queue.enqueue)
    async def enqueue(
        self,
        job_type: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        run_at: datetime | None = None,
        priority: int = 0,
        max_attempts: int = 5,
        queue: str = "default",
        conn: psycopg.AsyncConnection[Any] | None = None,
        limit_group: str | None = None,
        limit_key: str | None = None,
    ) -> uuid.UUID:
        # One statement: run directly, not through _drive (see _ops.enqueue_call).
        self._check_conn(conn)
        call = _ops.enqueue_call(
            self._sql, job_type, payload, idempotency_key, run_at, priority, max_attempts,
            queue, limit_group, limit_key,
        )
        job_id: uuid.UUID = (await self._run(call, conn))[0]
        return job_id

    @_as(Queue.enqueue_many)
    async def enqueue_many(
        self,
        jobs: Sequence[Mapping[str, Any]],
        *,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> list[uuid.UUID]:
        return await self._drive(_ops.enqueue_many(self._sql, jobs), conn)

    @_as(Queue.enqueue_iter)
    async def enqueue_iter(
        self,
        jobs: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 5000,
        skip_refused: bool = False,
        progress: Callable[[int], None] | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> BulkSummary:
        _check_skip_refused(skip_refused, conn)
        return await self._drive(
            _ops.enqueue_iter(self._sql, jobs, batch_size, skip_refused, progress), conn
        )

    # -- working ------------------------------------------------------------------------------

    @_as(Queue.dequeue)
    async def dequeue(
        self,
        worker_id: str,
        job_types: Sequence[str] | None = None,
        batch_size: int = 1,
        lock_timeout: timedelta | float = timedelta(minutes=5),
        queues: Sequence[str] | None = None,
    ) -> list[Job]:
        return await self._drive(
            _ops.dequeue(self._sql, worker_id, job_types, batch_size, lock_timeout, queues)
        )

    @_as(Queue.complete)
    async def complete(
        self,
        job_id: uuid.UUID,
        worker_id: str,
        attempt: int | None = None,
        *,
        result: Any = None,
    ) -> bool:
        return await self._drive(_ops.complete(self._sql, job_id, worker_id, attempt, result))

    @_as(Queue.complete_many)
    async def complete_many(
        self,
        job_ids: Sequence[uuid.UUID],
        worker_id: str,
        attempts: Sequence[int] | None = None,
        *,
        results: Sequence[Any] | None = None,
    ) -> int:
        return await self._drive(
            _ops.complete_many(self._sql, job_ids, worker_id, attempts, results)
        )

    @_as(Queue.fail)
    async def fail(
        self,
        job_id: uuid.UUID,
        worker_id: str,
        error: str,
        *,
        retry: bool = True,
        backoff: timedelta | float = timedelta(seconds=10),
        attempt: int | None = None,
    ) -> str | None:
        return await self._drive(
            _ops.fail(self._sql, job_id, worker_id, error, retry, backoff, attempt)
        )

    @_as(Queue.fail_many)
    async def fail_many(
        self,
        job_ids: Sequence[uuid.UUID],
        worker_id: str,
        errors: Sequence[str],
        *,
        retries: Sequence[bool] | None = None,
        backoffs: Sequence[timedelta | float] | None = None,
        attempts: Sequence[int | None] | None = None,
    ) -> list[str | None]:
        return await self._drive(
            _ops.fail_many(self._sql, job_ids, worker_id, errors, retries, backoffs, attempts)
        )

    @_as(Queue.heartbeat)
    async def heartbeat(self, worker_id: str, job_ids: Sequence[uuid.UUID]) -> int:
        return await self._drive(_ops.heartbeat(self._sql, worker_id, job_ids))

    @_as(Queue.release)
    async def release(self, job_ids: Sequence[uuid.UUID], worker_id: str) -> int:
        return await self._drive(_ops.release(self._sql, job_ids, worker_id))

    # -- cancellation, results and waiting ---------------------------------------------------

    @_as(Queue.cancel)
    async def cancel(
        self,
        job_ids: uuid.UUID | str | Iterable[uuid.UUID | str],
        reason: str | None = None,
        *,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> dict[uuid.UUID, str]:
        return await self._drive(_ops.cancel(self._sql, job_ids, reason), conn)

    @_as(Queue.status)
    async def status(
        self, job_ids: uuid.UUID | str | Iterable[uuid.UUID | str]
    ) -> dict[uuid.UUID, JobStatus]:
        return await self._drive(_ops.status(self._sql, job_ids))

    @_as(Queue.wait)
    async def wait(
        self,
        job_ids: uuid.UUID | str | Iterable[uuid.UUID | str],
        timeout: timedelta | float | None = 30.0,
        *,
        poll_interval: timedelta | float = WAIT_POLL_INTERVAL,
    ) -> dict[uuid.UUID, JobStatus]:
        ids, deadline, poll = _ops.wait_args(job_ids, timeout, poll_interval)
        if not ids:
            return {}
        async with self._listener() as (conn, channel):

            async def pause(p: _ops.Pause) -> None:
                if channel is None:
                    await asyncio.sleep(p.seconds)
                else:
                    await _next_wake(conn, channel, p.unfinished, p.seconds)

            return await _ops.adrive(
                _ops.wait(self._sql, ids, deadline, poll, listening=channel is not None),
                lambda call: _execute(
                    conn, _sql.bind_schema(call.query, self.schema or "public"), call.params
                ),
                pause,
            )

    @_as(Queue.result)
    async def result(
        self,
        job_id: uuid.UUID | str,
        timeout: timedelta | float | None = 30.0,
        *,
        poll_interval: timedelta | float = WAIT_POLL_INTERVAL,
    ) -> Any:
        (wanted,) = job_ids_of(job_id, "job_id")
        found = (await self.wait([wanted], timeout, poll_interval=poll_interval)).get(wanted)
        return _ops.result(wanted, found, timeout)

    @asynccontextmanager
    async def _listener(
        self,
    ) -> AsyncIterator[tuple[psycopg.AsyncConnection[Any], str | None]]:
        """A connection for one wait, and the done channel it LISTENs on (None: it polls)."""
        if self._closed:
            raise JobqError("this AsyncQueue is closed")
        if self._pool is not None:
            async with self._pool.connection() as conn, self._listening(conn) as pair:
                yield pair
            return
        if self._conn is not None:
            async with self._lock:
                conn = self._conn
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    await self._check_compatible(conn)
                    yield conn, None  # LISTEN would take effect only at the caller's commit
                else:
                    async with self._listening(conn) as pair:
                        yield pair
            return
        conn_or_none = self._listeners.pop() if self._listeners else None
        if conn_or_none is None or conn_or_none.closed or conn_or_none.broken:
            if self._dsn is None:  # the embedded server may have to start: not on the loop
                self._dsn = (await asyncio.to_thread(resolve_dsn, None))[0]
            conn_or_none = await aconnect(self._dsn)
        conn = conn_or_none
        try:
            async with self._listening(conn) as pair:
                yield pair
        except BaseException:
            await conn.close()
            raise
        if self._closed:
            await conn.close()
        else:
            self._listeners.append(conn)

    @asynccontextmanager
    async def _listening(
        self, conn: psycopg.AsyncConnection[Any]
    ) -> AsyncIterator[tuple[psycopg.AsyncConnection[Any], str | None]]:
        await self._check_compatible(conn)
        channel = await self._channel(conn)
        await _execute(conn, _sql.listen(channel))
        try:
            yield conn, channel
        finally:
            if not conn.closed and not conn.broken:
                await _execute(conn, _sql.unlisten(channel))

    async def _channel(self, conn: psycopg.AsyncConnection[Any]) -> str:
        if self._done_channel is None:
            with translate_errors():
                async with conn.cursor(row_factory=tuple_row) as cur:
                    await cur.execute(
                        _sql.EVENT_CHANNEL, {"schema": self.schema, "kind": _sql.DONE}
                    )
                    row = await cur.fetchone()
                if not conn.autocommit and conn.info.transaction_status == (
                    psycopg.pq.TransactionStatus.INTRANS
                ):
                    await conn.commit()
            self._done_channel = str(row[0]) if row else _sql.event_channel("public", _sql.DONE)
        return self._done_channel

    # -- administration -----------------------------------------------------------------------

    @_as(Queue.requeue_dead_letter)
    async def requeue_dead_letter(self, job_id: uuid.UUID) -> bool:
        return await self._drive(_ops.requeue_dead_letter(self._sql, job_id))

    @_as(Queue.requeue_dead_letters)
    async def requeue_dead_letters(
        self, job_type: str | None = None, queue: str | None = None
    ) -> int:
        return await self._drive(_ops.requeue_dead_letters(self._sql, job_type, queue))

    @_as(Queue.dead_letters)
    async def dead_letters(
        self,
        job_type: str | None = None,
        queue: str | None = None,
        *,
        statuses: Sequence[str] = ("dead_letter", "failed"),
        limit: int = 100,
    ) -> list[Job]:
        return await self._drive(_ops.list_jobs(self._sql, statuses, job_type, queue, limit))

    @_as(Queue.list_jobs)
    async def list_jobs(
        self,
        *,
        statuses: Sequence[str] | None = None,
        job_type: str | None = None,
        queue: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        return await self._drive(_ops.list_jobs(self._sql, statuses, job_type, queue, limit))

    @_as(Queue.get_job)
    async def get_job(self, job_id: uuid.UUID) -> Job | None:
        return await self._drive(_ops.get_job(self._sql, job_id))

    @_as(Queue.stats)
    async def stats(self) -> list[StatsRow]:
        return await self._drive(_ops.stats(self._sql))

    @_as(Queue.prune)
    async def prune(
        self,
        older_than: timedelta | float = timedelta(days=7),
        statuses: Sequence[str] = ("succeeded",),
        *,
        batch_size: int | None = 10_000,
    ) -> int:
        return await self._drive(_ops.prune(self._sql, older_than, statuses, batch_size))

    @_as(Queue.configure)
    async def configure(
        self, *, max_payload_bytes: int | None = None, metrics: bool | None = None
    ) -> dict[str, Any]:
        return await self._drive(_ops.configure(self._sql, max_payload_bytes, metrics))

    @_as(Queue.metrics)
    async def metrics(self) -> list[MetricSample]:
        return await self._drive(_ops.metrics(self._sql))

    @_as(Queue.health)
    async def health(self) -> list[HealthRow]:
        return await self._drive(_ops.health(self._sql))

    @_as(Queue.unserved_job_types)
    async def unserved_job_types(
        self, idle: timedelta | float = timedelta(minutes=15)
    ) -> list[UnservedJobType]:
        return await self._drive(_ops.unserved_job_types(self._sql, idle))

    # -- schedules ----------------------------------------------------------------------------

    @_as(Queue.schedule)
    async def schedule(
        self,
        name: str,
        cron: str,
        job_type: str,
        payload: Any = None,
        *,
        timezone: str = "UTC",
        queue: str = "default",
        priority: int = 0,
        max_attempts: int = 5,
        catch_up: Literal["skip", "latest", "all"] = "latest",
        paused: bool = False,
    ) -> datetime:
        return await self._drive(
            _ops.schedule(
                self._sql, name, cron, job_type, payload, timezone, queue, priority,
                max_attempts, catch_up, paused,
            )
        )

    @_as(Queue.unschedule)
    async def unschedule(self, name: str) -> bool:
        return await self._drive(_ops.unschedule(self._sql, name))

    @_as(Queue.schedules)
    async def schedules(self) -> list[Schedule]:
        return await self._drive(_ops.schedules(self._sql))

    @_as(Queue.tick)
    async def tick(self) -> list[Fire]:
        return await self._drive(_ops.tick(self._sql))

    # -- limits -------------------------------------------------------------------------------

    @_as(Queue.set_limit)
    async def set_limit(
        self,
        limit_group: str,
        max_running: int | None = None,
        max_starts: int | None = None,
        per: timedelta | float | None = None,
    ) -> None:
        await self._drive(_ops.set_limit(self._sql, limit_group, max_running, max_starts, per))

    @_as(Queue.limits)
    async def limits(self) -> list[Limit]:
        return await self._drive(_ops.limits(self._sql))

    @_as(Queue.limit_usage)
    async def limit_usage(self) -> list[LimitUsage]:
        return await self._drive(_ops.limit_usage(self._sql))


async def _execute(
    conn: psycopg.AsyncConnection[Any],
    query: _sql.Query | sql.Composed,
    params: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One statement on a connection that may be outside autocommit: then in a transaction of
    its own, committed, so that the connection is idle again (notifications arrive only
    between transactions). Its rows as dicts."""
    with translate_errors():
        idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if conn.autocommit or not idle:
            async with conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(query, params)
                return await cur.fetchall() if cur.description is not None else []
        async with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(query, params)
            return await cur.fetchall() if cur.description is not None else []


async def _next_wake(
    conn: psycopg.AsyncConnection[Any], channel: str, unfinished: frozenset[str], seconds: float
) -> None:
    """Until a notification on ``channel`` (some awaited job ended: the caller re-reads the
    statuses of its ``unfinished`` jobs), or ``seconds``."""
    with translate_errors():
        # Notifications that came while a statement ran are kept by psycopg and come first.
        notes = conn.notifies(timeout=max(seconds, 0.0))
        try:
            async for note in notes:
                if note.channel == channel:
                    return
        finally:
            await notes.aclose()


def _is_sync(value: object) -> bool:
    return isinstance(value, psycopg.Connection | ConnectionPool)
