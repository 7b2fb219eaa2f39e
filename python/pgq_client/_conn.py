"""The connections of ``Queue`` and ``AsyncQueue`` (:class:`Client`), written once as
coroutines that await a call's value whether it is blocking or asyncio
(:func:`~._opcore.settled`): ``AsyncQueue`` awaits them, :class:`SyncClient` steps them without
an event loop (:func:`~._opcore.step`). Only ``Queue._run``, every enqueue's path, is written
out as plain blocking code."""

from __future__ import annotations

import inspect
import logging
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    contextmanager,
    nullcontext,
)
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar, cast

import psycopg
from psycopg.rows import scalar_row, tuple_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from . import _ops, _sql
from ._opcore import settled, step
from .errors import JobqError, SerializationFailure, from_psycopg
from .installer.compat import breaking_change_in, incompatibility
from .models import JobStatus, use_fast_json

DSN_SOURCES = ("JOBQ_DSN", "DATABASE_URL")

log = logging.getLogger("pgq_client.queue")

# How often a statement of a transaction the client owns is retried on a serialization failure.
SERIALIZATION_RETRIES = 5

NO_DSN = (
    "no database given: pass a DSN (Queue('postgresql://...')), set JOBQ_DSN or DATABASE_URL, "
    "or start the embedded PostgreSQL explicitly with Queue.embedded() or "
    "pgq_client.embedded.start(), which returns its DSN"
)

C = TypeVar("C", psycopg.Connection[Any], psycopg.AsyncConnection[Any])
P = TypeVar("P")
S = TypeVar("S", bound="Client[Any, Any]")
T = TypeVar("T")

Connectable = str | psycopg.Connection[Any] | ConnectionPool[Any] | None
Statuses = dict[uuid.UUID, JobStatus]


def serialization_pause(attempt: int) -> float:
    """Seconds to wait before trying a transaction again after its ``attempt``-th
    serialization failure."""
    return 0.01 * 2.0**attempt


def resolve_dsn(dsn: str | None = None, *, embedded: bool = True) -> tuple[str, str]:
    """The DSN to use and where it came from: ``dsn`` itself, ``JOBQ_DSN``, ``DATABASE_URL``,
    else (with ``embedded``, as the CLI does) the embedded PostgreSQL, started if needed;
    without ``embedded``, :class:`~pgq_client.JobqError` saying how to give one."""
    if dsn:
        return dsn, "argument"
    for name in DSN_SOURCES:
        value = os.environ.get(name)
        if value:
            return value, name
    if not embedded:
        raise JobqError(NO_DSN)
    from . import embedded as server  # pgserver is imported only when it is wanted

    return server.start(), "embedded"


@contextmanager
def translate_errors() -> Iterator[None]:
    """Re-raise psycopg errors as the typed jobq exceptions (the original is ``__cause__``)."""
    try:
        yield
    except psycopg.Error as exc:
        raise from_psycopg(exc) from exc


def opened(dsn: str, **kwargs: Any) -> psycopg.Connection[Any]:
    """``psycopg.connect(dsn, autocommit=True)`` with jobq's connection arguments
    (:func:`~pgq_client._sql.connect_kwargs`, then ``kwargs``), decoding jsonb with
    :func:`~pgq_client.models.load_json`; psycopg's errors as they are, which the Worker
    tells apart to retry (:func:`connect` raises the typed jobq errors)."""
    conn = psycopg.connect(dsn, **{"autocommit": True, **_sql.connect_kwargs(dsn), **kwargs})
    use_fast_json(conn)
    return conn


def connect(dsn: str, **kwargs: Any) -> psycopg.Connection[Any]:
    """:func:`opened`, raising the typed jobq errors."""
    try:
        return opened(dsn, **kwargs)
    except psycopg.Error as exc:
        # Not chained: libpq's message for a DSN it cannot parse may quote the password.
        raise from_psycopg(exc) from None


async def aconnect(dsn: str, **kwargs: Any) -> psycopg.AsyncConnection[Any]:
    """:func:`connect` for an ``AsyncConnection``."""
    try:
        conn = await psycopg.AsyncConnection.connect(
            dsn, autocommit=True, **{**_sql.connect_kwargs(dsn), **kwargs}
        )
    except psycopg.Error as exc:
        raise from_psycopg(exc) from None
    use_fast_json(conn)
    return conn


def idle(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether ``conn`` is outside a transaction (pgconn's status: conn.info builds an object
    per call)."""
    return conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE


def own_transaction(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether a statement on ``conn`` needs a transaction of its own, committed, to leave the
    connection idle again: an idle connection outside autocommit."""
    return not conn.autocommit and idle(conn)


@asynccontextmanager
async def _entered(
    manager: AbstractContextManager[T] | AbstractAsyncContextManager[T],
) -> AsyncIterator[T]:
    """``manager`` entered, as ``with`` enters a blocking one and ``async with`` an asyncio
    one (a lock, a transaction, a pool's connection)."""
    if isinstance(manager, AbstractAsyncContextManager):
        async with manager as value:
            yield value
    else:
        with manager as value:
            yield value


def compatibility(schema: str | None) -> Generator[_ops.Call, list[Any], str]:
    """The schema to use (``schema``, else the one the connection's search_path finds, else
    ``public``), after checking that its latest breaking change is one this client knows
    (:class:`~pgq_client.errors.IncompatibleSchema` otherwise)."""
    if schema is None:
        rows = yield _ops.Call(_sql.FIND_SCHEMA.encode(), {}, tuple_row)
        schema = str(rows[0][0]) if rows and rows[0][0] else "public"
    rows = yield _ops.Call(_sql.MIGRATIONS_COMMENT.encode(), {"schema": schema}, scalar_row)
    error = incompatibility(breaking_change_in(rows[0] if rows else None), schema)
    if error is not None:
        raise error
    return schema


def execute(conn: psycopg.Connection[Any], own_tx: bool, call: _ops.Call) -> list[Any]:
    """Execute ``call`` on ``conn`` and return its rows; with ``own_tx``, on a connection
    outside autocommit, in a short transaction of its own, committed, so that the connection
    is idle again (notifications arrive only between transactions)."""
    # The cursor is not closed by a `with`: its close() is a measurable share of a single
    # enqueue, and a cursor whose rows are read holds nothing that its release does not free
    # (psycopg's conn.execute() leaves its cursor so too).
    try:
        if own_tx and not conn.autocommit:
            with conn.transaction():
                cur = conn.cursor(row_factory=call.row_factory)
                cur.execute(call.query, call.params, binary=call.binary)
                return cur.fetchall()
        cur = conn.cursor(row_factory=call.row_factory)
        cur.execute(call.query, call.params, binary=call.binary)
        return cur.fetchall()
    except psycopg.Error as exc:
        raise from_psycopg(exc) from exc


def fetch(conn: psycopg.Connection[Any], call: _ops.Call) -> list[Any]:
    """The rows of ``call`` on ``conn``, in the statement's own transaction (an autocommit
    connection's) or the one open; psycopg's errors as they are (the Worker retries the
    transient ones)."""
    cur = conn.cursor(row_factory=call.row_factory)  # not closed: see execute
    cur.execute(call.query, call.params, binary=call.binary)
    return cur.fetchall()


async def fetched(
    conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], call: _ops.Call
) -> list[Any]:
    """:func:`fetch` on either kind of connection, awaited."""
    cur: Any = conn.cursor(row_factory=call.row_factory)  # not closed: see execute
    await settled(cur.execute(call.query, call.params, binary=call.binary))
    rows: list[Any] = await settled(cur.fetchall())
    return rows


class Client(Generic[C, P]):
    """The state of a Queue (``C``: its connection type, ``P``: its pool type) or AsyncQueue,
    and the plumbing both share.

    It uses a DSN (its own connection, opened lazily), a connection or a pool given to it
    (theirs to close). ``schema`` None: the schema is the one the search_path of a given
    connection or pool, or of the DSN's own settings, finds, asked before the first statement.
    """

    _kinds: ClassVar[tuple[type, type]]  # the connection and pool types it takes
    _other: ClassVar[tuple[type, ...]]  # the other client's, named in a TypeError
    _other_hint: ClassVar[str]

    def __init__(self, dsn: str | C | P | None = None, *, schema: str | None = None) -> None:
        self._sql = _sql.statements(schema)
        self.schema = schema
        self._late = schema is None  # the schema is found before the first statement
        self._owned: C | None = None
        self._conn: C | None = None
        self._pool: P | None = None
        self._dsn: str | None = None
        if isinstance(dsn, self._kinds[0]):
            self._conn = cast(C, dsn)
        elif isinstance(dsn, self._kinds[1]):
            self._pool = cast(P, dsn)
        elif dsn is None or isinstance(dsn, str):
            self._dsn = dsn  # None: resolved when first needed (a Queue used with conn= only)
        else:
            kinds = " or ".join(f"a psycopg {k.__name__}" for k in self._kinds)
            raise TypeError(
                f"{type(self).__name__}() takes a DSN, {kinds}, got {dsn!r}"
                + (self._other_hint if isinstance(dsn, self._other) else "")
            )
        self._closed = False
        self._compatible = False  # checked once, before the first statement
        # Connections of its own for wait (LISTEN), kept for the next wait.
        self._listeners: list[C] = []
        self._done_channel: str | None = None

    @classmethod
    def embedded(cls: type[S], *, schema: str | None = None, home: Path | None = None) -> S:
        """A client of the embedded PostgreSQL (:func:`pgq_client.embedded.start`: started if
        it is not running, jobq migrated into it), for a try-out without a server."""
        from . import embedded as server

        return cls(server.start(home), schema=schema)

    @property
    def dsn(self) -> str:
        """The DSN this client connects to: the one given, else ``JOBQ_DSN``, else
        ``DATABASE_URL`` (:class:`~pgq_client.JobqError` saying how to give one without)."""
        if self._conn is not None:
            return self._conn.info.dsn
        if self._pool is not None:
            conninfo = self._pool.conninfo  # type: ignore[attr-defined]
            if inspect.iscoroutinefunction(conninfo):
                raise JobqError("the pool's conninfo is a coroutine function: ask its connections")
            return str(conninfo() if callable(conninfo) else conninfo)
        if self._dsn is None:
            self._dsn = resolve_dsn(None, embedded=False)[0]
        return self._dsn

    def _check_open(self) -> None:
        if self._closed:
            raise JobqError(f"this {type(self).__name__} is closed")

    def _check_conn(self, conn: object) -> None:
        """Refuse a ``conn=`` that is not this client's kind of connection."""
        if conn is not None and not isinstance(conn, self._kinds[0]):
            kind = type(conn)  # sqlalchemy.engine.base.Connection is not psycopg's
            raise TypeError(
                f"conn must be a psycopg {self._kinds[0].__name__}, got "
                f"{kind.__module__}.{kind.__qualname__}"
                + (self._other_hint if isinstance(conn, self._other) else "")
            )

    def _bound(self, call: _ops.Call) -> _ops.Call:
        """``call`` with the schema put in, for an operation made before it was found: in its
        statement, and as its ``schema`` argument where that is None (a catalogue query)."""
        if not self._late:
            return call
        schema = self.schema or "public"
        if call.params.get("schema", "") is None:
            call = call._replace(params={**call.params, "schema": schema})
        return call._replace(query=_sql.bind_schema(call.query, schema))

    def _detach(self) -> list[C]:
        """Mark the client closed; the connections it opened, to close."""
        self._closed = True
        opened = self._listeners + ([] if self._owned is None else [self._owned])
        self._owned, self._listeners = None, []
        return opened

    # The blocking or asyncio forms of what the plumbing calls, awaited through settled and
    # _entered: open a connection (connect, aconnect), sleep, run a blocking function (the
    # DSN's schema: _sql.schema_of_dsn) and the client's lock.
    _connector: Callable[[str], C | Awaitable[C]]
    _sleeper: Callable[[float], object]
    _offload: Callable[[Callable[[str], str], str], str | Awaitable[str]]
    _lock: Any  # a threading.RLock or an asyncio.Lock

    # The result of a coroutine of the plumbing: stepped to its value by a blocking client
    # (:func:`~._opcore.step`), the coroutine itself, for its caller to await, by AsyncQueue.
    _finish: Callable[[Coroutine[Any, Any, Any]], Any]
    _run: Callable[[_ops.Call, Any], list[Any] | Awaitable[list[Any]]]  # one call, its rows

    # -- the plumbing, written once --------------------------------------------------------

    def _drive(self, op: _ops.Op[T], conn: Any = None) -> T:
        """Run ``op`` (the caller's connection ``conn`` for its transaction, if given)."""
        self._check_conn(conn)
        return cast(T, self._finish(_ops.adrive(op, lambda call: self._run(call, conn))))

    def _waited(
        self, ids: list[uuid.UUID], deadline: float | None, poll: float,
        finish: Callable[[Statuses], T],
    ) -> T:
        return cast(T, self._finish(self._wait_io(ids, deadline, poll, finish)))

    async def _arun(self, call: _ops.Call, conn: C | None, first: int = 1) -> list[Any]:
        """Run ``call`` and return its rows; ``first``: the attempt this is (a transaction
        the client owns is tried again on a serialization failure when ``call`` allows it)."""
        if conn is not None:
            # The caller's transaction: no commit, and a serialization failure is theirs to retry.
            await self._check_compatible(conn)
            return await self._execute(conn, False, self._bound(call))
        tries = SERIALIZATION_RETRIES if call.retry_serialization else 1
        for attempt in range(first, tries + 1):
            owns_tx = True
            try:
                self._check_open()
                if self._pool is not None:
                    async with _entered(cast(Any, self._pool).connection()) as c:
                        await self._check_compatible(c)
                        return await self._execute(c, True, self._bound(call))
                await settled(self._lock.acquire())  # (no _entered: every enqueue's path)
                try:
                    c, owns_tx = await self._held()
                    return await self._execute(c, owns_tx, self._bound(call))
                finally:
                    self._lock.release()
            except SerializationFailure:
                if attempt >= tries or not owns_tx:
                    raise
                await self._retry_pause(attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _retry_pause(self, attempt: int) -> None:
        log.debug("serialization failure, retrying (%d/%d)", attempt, SERIALIZATION_RETRIES)
        await settled(self._sleeper(serialization_pause(attempt)))

    async def _execute(self, conn: C, own_tx: bool, call: _ops.Call) -> list[Any]:
        """As :func:`execute`, on either kind of connection."""
        try:
            if own_tx and not conn.autocommit:
                async with _entered(conn.transaction()):
                    return await fetched(conn, call)
            return await fetched(conn, call)
        except psycopg.Error as exc:
            raise from_psycopg(exc) from exc

    async def _open(self) -> C:
        return await settled(self._connector(self.dsn))

    async def _close(self, conn: C) -> None:
        if isinstance(conn, psycopg.AsyncConnection):
            await conn.close()
        else:
            conn.close()

    async def _command(self, conn: C, query: psycopg.sql.Composed) -> None:
        """LISTEN or UNLISTEN, leaving the connection idle when it was."""
        with translate_errors():
            async with _entered(conn.transaction() if own_transaction(conn) else nullcontext()):
                executed: object = conn.execute(query)
                await settled(executed)

    async def _next_wake(self, conn: C, channel: str, seconds: float) -> None:
        """Wait up to ``seconds`` for a notification on ``channel``; those that came while a
        statement ran are kept by psycopg and come first."""
        with translate_errors():
            notes = conn.notifies(timeout=max(seconds, 0.0))
            if isinstance(notes, Generator):
                for note in notes:
                    if note.channel == channel:
                        return
                return
            try:
                async for note in notes:
                    if note.channel == channel:
                        return
            finally:
                await notes.aclose()

    async def _check_compatible(self, conn: C) -> None:
        """Once per client: find the schema, refuse one with a breaking change this client
        does not know. On a connection jobq opened, whose ``search_path = pg_catalog,
        pg_temp`` finds no jobq, the schema is asked with the DSN's own settings; on an
        application's connection, on that connection."""
        if self._compatible:
            return
        if self.schema is None and _sql.opened_by_jobq(conn):
            self.schema = await settled(self._offload(_sql.schema_of_dsn, self.dsn))
        own = own_transaction(conn)
        found = await _ops.adrive(
            compatibility(self.schema), lambda call: self._execute(conn, own, call)
        )
        self.schema, self._compatible = found, True
        self._sql = _sql.statements(found)

    async def _held(self) -> tuple[C, bool]:
        """Under the client's lock: the connection for one call (the given one, or the one
        this client owns, opened or reopened here), and whether the client owns the
        transaction around it."""
        if self._conn is not None:
            conn, owns_tx = self._conn, idle(self._conn)
        else:
            owned = self._owned
            if owned is not None and (owned.closed or owned.broken):
                self._owned = None
                await self._close(owned)
            conn, owns_tx = self._owned or await self._open(), True
            self._owned = conn
        await self._check_compatible(conn)
        return conn, owns_tx

    async def _wait_io(
        self, ids: list[uuid.UUID], deadline: float | None, poll: float,
        finish: Callable[[Statuses], T],
    ) -> T:
        """The I/O of :meth:`wait`: ``finish`` of the statuses the wait ends with."""
        if not ids:
            return finish({})
        async with self._listener() as (conn, channel):

            async def pause(p: _ops.Pause) -> None:
                if channel is None:
                    await settled(self._sleeper(p.seconds))
                else:
                    await self._next_wake(conn, channel, p.seconds)

            op = _ops.wait(self._sql, ids, deadline, poll, listening=channel is not None)
            return finish(await _ops.adrive(
                op, lambda call: self._execute(conn, own_transaction(conn), self._bound(call)),
                pause,
            ))

    @asynccontextmanager
    async def _listener(self) -> AsyncIterator[tuple[C, str | None]]:
        """A connection for one wait, and the done channel it LISTENs on (None: it polls)."""
        self._check_open()
        if self._pool is not None:
            pool = cast(Any, self._pool)  # ConnectionPool or AsyncConnectionPool, as C is
            async with _entered(pool.connection()) as conn, self._listening(conn) as pair:
                yield pair
            return
        if self._conn is not None:
            async with _entered(self._lock), self._listening(self._conn) as pair:
                yield pair
            return
        async with _entered(self._lock):
            kept = self._listeners.pop() if self._listeners else None
        conn = kept if kept and not (kept.closed or kept.broken) else await self._open()
        try:
            async with self._listening(conn) as pair:
                yield pair
        except BaseException:
            await self._close(conn)
            raise
        async with _entered(self._lock):
            if not self._closed:
                self._listeners.append(conn)  # for the next wait
                return
        await self._close(conn)

    @asynccontextmanager
    async def _listening(self, conn: C) -> AsyncIterator[tuple[C, str | None]]:
        await self._check_compatible(conn)
        if not idle(conn):
            yield conn, None  # LISTEN would take effect only at the caller's commit
            return
        if self._done_channel is None:
            done = _ops.channel_call(self.schema, _sql.DONE)
            rows = await self._execute(conn, own_transaction(conn), done)
            self._done_channel = str(rows[0][0])
        channel = self._done_channel
        await self._command(conn, _sql.listen(channel))
        try:
            yield conn, channel
        finally:
            if not conn.closed and not conn.broken:
                await self._command(conn, _sql.unlisten(channel))


class SyncClient(Client[psycopg.Connection[Any], ConnectionPool[Any]]):
    """The connections of a :class:`~pgq_client.Queue`: one at a time under a lock (a
    given one or its own), a pool's, and those it listens on for a wait; the plumbing of
    :class:`Client` run with :func:`~._opcore.step`."""

    _kinds = (psycopg.Connection, ConnectionPool)
    _other = (psycopg.AsyncConnection, AsyncConnectionPool)
    _other_hint = " (use AsyncQueue with an AsyncConnection)"

    def __init__(self, dsn: Connectable = None, *, schema: str | None = None) -> None:
        super().__init__(dsn, schema=schema)
        self._lock = threading.RLock()

    def close(self) -> None:
        """Close the connections this client opened (not one it was given)."""
        with self._lock:
            opened = self._detach()
        for conn in opened:
            conn.close()

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _held_now(self) -> tuple[psycopg.Connection[Any], bool]:
        """:meth:`_held`, without a coroutine once the schema is checked and the connection
        open: every enqueue's path."""
        if self._compatible:
            if self._conn is not None:
                return self._conn, idle(self._conn)
            owned = self._owned
            if owned is not None and not owned.closed and not owned.broken:
                return owned, True
        return step(self._held())

    _finish = staticmethod(step)
    _connector = staticmethod(connect)
    _sleeper = staticmethod(time.sleep)

    @staticmethod
    def _offload(blocking: Callable[[str], str], arg: str) -> str:
        return blocking(arg)
