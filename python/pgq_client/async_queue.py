"""``AsyncQueue``: the :class:`~pgq_client.Queue` API for asyncio. Its public methods are
Queue's own, awaited (:func:`_awaited`), whose ``self._drive`` here runs the operation on an
``AsyncConnection``; this module holds only the asyncio calls that
:class:`~pgq_client._conn.Client`'s plumbing awaits."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar, cast

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from . import _ops
from ._conn import Client, aconnect
from .queue import Queue

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

    async def close(self) -> None:
        """Close the connections this AsyncQueue opened (not one it was given)."""
        for conn in self._detach():
            await conn.close()

    async def __aenter__(self) -> AsyncQueue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _first(self, call: _ops.Call, conn: psycopg.AsyncConnection[Any] | None) -> Any:
        return (await self._arun(call, conn))[0]

    _run = Client._arun
    _finish = staticmethod(lambda coroutine: coroutine)
    _connector = staticmethod(aconnect)
    _sleeper = staticmethod(asyncio.sleep)

    @staticmethod
    async def _offload(blocking: Callable[[str], str], arg: str) -> str:
        return await asyncio.to_thread(blocking, arg)

    # -- Queue's methods, awaited -------------------------------------------------------------

    enqueue = _awaited(Queue.enqueue)
    enqueue_many = _awaited(Queue.enqueue_many)
    enqueue_iter = _awaited(Queue.enqueue_iter)
    add_dependencies = _awaited(Queue.add_dependencies)
    dependencies = _awaited(Queue.dependencies)
    job_graph = _awaited(Queue.job_graph)
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
    find_jobs = _awaited(Queue.find_jobs)
    act_on_jobs = _awaited(Queue.act_on_jobs)
    audit_log = _awaited(Queue.audit_log)
    error_summary = _awaited(Queue.error_summary)
    stats = _awaited(Queue.stats)
    prune = _awaited(Queue.prune)
    configure = _awaited(Queue.configure)
    metrics = _awaited(Queue.metrics)
    health = _awaited(Queue.health)
    unserved_job_types = _awaited(Queue.unserved_job_types)
    schedule = _awaited(Queue.schedule)
    unschedule = _awaited(Queue.unschedule)
    run_schedule = _awaited(Queue.run_schedule)
    schedules = _awaited(Queue.schedules)
    tick = _awaited(Queue.tick)
    set_limit = _awaited(Queue.set_limit)
    set_weight = _awaited(Queue.set_weight)
    limits = _awaited(Queue.limits)
    limit_usage = _awaited(Queue.limit_usage)
    pause = _awaited(Queue.pause)
    resume = _awaited(Queue.resume)
    queues = _awaited(Queue.queues)
    queue_summary = _awaited(Queue.queue_summary)
    jobs_page = _awaited(Queue.jobs_page)
    workers_summary = _awaited(Queue.workers_summary)
    throughput = _awaited(Queue.throughput)
    names = _awaited(Queue.names)
    function_privileges = _awaited(Queue.function_privileges)
