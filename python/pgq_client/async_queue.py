"""``AsyncQueue``: the :class:`~pgq_client.Queue` API for asyncio, over psycopg's
``AsyncConnection`` and ``AsyncConnectionPool``.

Its public methods are Queue's own, awaited (:func:`_awaited`): each builds the same operation
of :mod:`pgq_client._ops` and hands it to ``self._drive``, which here is a coroutine that runs
it on an asyncio connection. This module holds only that I/O.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar, cast

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from . import _ops, _sql
from ._conn import (
    SERIALIZATION_RETRIES,
    Client,
    Statuses,
    acommand,
    aconnect,
    aexecute,
    anext_wake,
    compatibility,
    done_channel,
    idle,
    own_transaction,
    serialization_pause,
)
from .errors import SerializationFailure
from .queue import Queue, TxConnection, log

__all__ = ["AsyncConnectable", "AsyncQueue", "aconnect"]

AsyncConnectable = str | psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any] | None

T = TypeVar("T")
A = ParamSpec("A")


def _awaited(
    method: Callable[Concatenate[Queue, A], T],
) -> Callable[Concatenate[AsyncQueue, A], Coroutine[Any, Any, T]]:
    """Queue's ``method`` as an AsyncQueue coroutine method: the same body (the operation and
    its checks), whose ``self._drive`` is AsyncQueue's, awaited."""

    async def call(self: AsyncQueue, /, *args: A.args, **kwargs: A.kwargs) -> T:
        return await cast(Awaitable[T], method(cast(Queue, self), *args, **kwargs))

    functools.update_wrapper(call, method)  # help() shows Queue's signature
    call.__qualname__ = f"AsyncQueue.{method.__name__}"
    call.__doc__ = f"As :meth:`Queue.{method.__name__}`, awaited.\n\n{method.__doc__ or ''}"
    return call


class AsyncQueue(Client[psycopg.AsyncConnection[Any], AsyncConnectionPool[Any]]):
    """:class:`~pgq_client.Queue` for asyncio: the same methods, arguments, results and
    errors, each a coroutine.

    ``AsyncQueue(dsn)`` opens (lazily) and owns one autocommit ``AsyncConnection``, used by one
    call at a time; ``AsyncQueue(connection)`` and ``AsyncQueue(pool)`` (a
    ``psycopg_pool.AsyncConnectionPool``) use the caller's, which stays theirs to close.
    ``AsyncQueue()`` takes ``JOBQ_DSN``, else ``DATABASE_URL``, as Queue does;
    ``AsyncQueue.embedded()`` starts the embedded PostgreSQL (a blocking call: before the
    event loop's work, or in ``asyncio.to_thread``). ``conn=`` (an ``AsyncConnection``) runs a
    call in the caller's transaction. An AsyncQueue belongs to the event loop it is first used
    on. ``async with AsyncQueue(...) as q:`` closes what it opened.
    """

    _kinds = (psycopg.AsyncConnection, AsyncConnectionPool)
    _other = (psycopg.Connection, ConnectionPool)
    _other_hint = " (use Queue with a Connection)"
    _read_ahead: ClassVar[bool] = False

    def __init__(self, dsn: AsyncConnectable = None, *, schema: str | None = None) -> None:
        super().__init__(dsn, schema=schema)
        self._lock = asyncio.Lock()

    # -- connection handling ------------------------------------------------------------------

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[tuple[psycopg.AsyncConnection[Any], bool]]:
        """A connection for one call, and whether the AsyncQueue owns the transaction around
        it."""
        self._check_open()
        if self._pool is not None:
            async with self._pool.connection() as conn:
                await self._check_compatible(conn)
                yield conn, True
            return
        async with self._lock:
            if self._conn is not None:
                conn, owns_tx = self._conn, idle(self._conn)
            else:
                stale, self._owned = self._unusable_owned()
                if stale is not None:
                    await stale.close()
                conn, owns_tx = self._owned or await aconnect(self.dsn), True
                self._owned = conn
            await self._check_compatible(conn)
            yield conn, owns_tx

    async def _check_compatible(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """As Queue._check_compatible."""
        if self._compatible:
            return
        if self._needs_dsn_schema(conn):
            self.schema = await asyncio.to_thread(_sql.schema_of_dsn, self.dsn)
        own = own_transaction(conn)
        found = await _ops.adrive(
            compatibility(self.schema), lambda call: aexecute(conn, own, call)
        )
        self._compatible_as(found)

    async def _drive(self, op: _ops.Op[T], conn: TxConnection | None = None) -> T:
        """Run one operation of :mod:`._ops` on this AsyncQueue's connection (or ``conn``)."""
        self._check_conn(conn)
        return await _ops.adrive(op, lambda call: self._run(call, conn))  # type: ignore[arg-type]

    async def _first(self, call: _ops.Call, conn: psycopg.AsyncConnection[Any] | None) -> Any:
        return (await self._run(call, conn))[0]

    async def _run(
        self, call: _ops.Call, conn: psycopg.AsyncConnection[Any] | None
    ) -> list[Any]:
        """Execute one statement and return its rows, as one short transaction unless
        ``conn`` (the caller's transaction) is given."""
        if conn is not None:
            # The caller's transaction: no commit, and a serialization failure is theirs to retry.
            await self._check_compatible(conn)
            return await aexecute(conn, False, self._bound(call))
        tries = SERIALIZATION_RETRIES if call.retry_serialization else 1
        for attempt in range(1, tries + 1):
            owns_tx = True
            try:
                async with self._connection() as (c, owns_tx):
                    return await aexecute(c, owns_tx, self._bound(call))
            except SerializationFailure:
                if attempt == tries or not owns_tx:
                    raise
                log.debug("serialization failure, retrying (%d/%d)", attempt, tries)
                await asyncio.sleep(serialization_pause(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    async def close(self) -> None:
        """Close the connections this AsyncQueue opened (not one it was given)."""
        for conn in self._detach():
            await conn.close()

    async def __aenter__(self) -> AsyncQueue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _waited(
        self, ids: list[uuid.UUID], deadline: float | None, poll: float,
        finish: Callable[[Statuses], T],
    ) -> T:
        """As Queue._waited."""
        if not ids:
            return finish({})
        async with self._listener() as (conn, channel):

            async def pause(p: _ops.Pause) -> None:
                if channel is None:
                    await asyncio.sleep(p.seconds)
                else:
                    await anext_wake(conn, channel, p.seconds)

            op = _ops.wait(self._sql, ids, deadline, poll, listening=channel is not None)
            return finish(
                await _ops.adrive(
                    op, lambda call: aexecute(conn, own_transaction(conn), self._bound(call)),
                    pause,
                )
            )

    @asynccontextmanager
    async def _listener(
        self,
    ) -> AsyncIterator[tuple[psycopg.AsyncConnection[Any], str | None]]:
        """As Queue._listener."""
        self._check_open()
        if self._pool is not None:
            async with self._pool.connection() as conn, self._listening(conn) as pair:
                yield pair
            return
        if self._conn is not None:
            async with self._lock:
                if idle(self._conn):
                    async with self._listening(self._conn) as pair:
                        yield pair
                else:
                    await self._check_compatible(self._conn)
                    yield self._conn, None  # LISTEN would take effect only at the caller's commit
            return
        conn = self._take_listener() or await aconnect(self.dsn)
        try:
            async with self._listening(conn) as pair:
                yield pair
        except BaseException:
            await conn.close()
            raise
        if not self._keep_listener(conn):
            await conn.close()

    @asynccontextmanager
    async def _listening(
        self, conn: psycopg.AsyncConnection[Any]
    ) -> AsyncIterator[tuple[psycopg.AsyncConnection[Any], str | None]]:
        await self._check_compatible(conn)
        if self._done_channel is None:
            self._channel_of(
                await aexecute(conn, own_transaction(conn), done_channel(self.schema))
            )
        channel = self._done_channel
        assert channel is not None
        await acommand(conn, _sql.listen(channel))
        try:
            yield conn, channel
        finally:
            if not conn.closed and not conn.broken:
                await acommand(conn, _sql.unlisten(channel))

    # -- Queue's methods, awaited -------------------------------------------------------------

    enqueue = _awaited(Queue.enqueue)
    enqueue_many = _awaited(Queue.enqueue_many)
    enqueue_iter = _awaited(Queue.enqueue_iter)
    dequeue = _awaited(Queue.dequeue)
    complete = _awaited(Queue.complete)
    complete_many = _awaited(Queue.complete_many)
    fail = _awaited(Queue.fail)
    fail_many = _awaited(Queue.fail_many)
    heartbeat = _awaited(Queue.heartbeat)
    release = _awaited(Queue.release)
    cancel = _awaited(Queue.cancel)
    status = _awaited(Queue.status)
    wait = _awaited(Queue.wait)
    result = _awaited(Queue.result)
    requeue_dead_letter = _awaited(Queue.requeue_dead_letter)
    requeue_dead_letters = _awaited(Queue.requeue_dead_letters)
    dead_letters = _awaited(Queue.dead_letters)
    list_jobs = _awaited(Queue.list_jobs)
    get_job = _awaited(Queue.get_job)
    stats = _awaited(Queue.stats)
    prune = _awaited(Queue.prune)
    configure = _awaited(Queue.configure)
    metrics = _awaited(Queue.metrics)
    health = _awaited(Queue.health)
    unserved_job_types = _awaited(Queue.unserved_job_types)
    schedule = _awaited(Queue.schedule)
    unschedule = _awaited(Queue.unschedule)
    schedules = _awaited(Queue.schedules)
    tick = _awaited(Queue.tick)
    set_limit = _awaited(Queue.set_limit)
    limits = _awaited(Queue.limits)
    limit_usage = _awaited(Queue.limit_usage)

