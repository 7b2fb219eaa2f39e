"""The connections of ``Queue`` and ``AsyncQueue``, beside the operations of :mod:`._ops`.

Both share where the DSN comes from, opening a connection, the state of a client
(:class:`Client`: the connection or pool it uses, its schema, the connections it listens on),
the check of the schema before the first statement (itself an operation) and the typed errors.
:class:`SyncClient` does the blocking I/O of a Queue apart from its hot path (``Queue._run``);
``AsyncQueue`` does the asyncio I/O in its own module, with :func:`aexecute` and its siblings.
"""

from __future__ import annotations

import inspect
import os
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar, cast

import psycopg
from psycopg.rows import scalar_row, tuple_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from . import _ops, _sql
from ._secrets import is_conninfo_error
from .errors import JobqError, from_psycopg
from .installer.compat import breaking_change_in, incompatibility
from .models import JobStatus, use_fast_json

__all__ = [
    "DSN_SOURCES",
    "SERIALIZATION_RETRIES",
    "Client",
    "Connectable",
    "Statuses",
    "SyncClient",
    "aconnect",
    "connect",
    "resolve_dsn",
    "serialization_pause",
    "translate_errors",
]

DSN_SOURCES = ("JOBQ_DSN", "DATABASE_URL")

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


def _connect_failed(exc: psycopg.Error) -> JobqError:
    # A DSN that libpq cannot parse: its error may quote the password, so it is not chained.
    error = from_psycopg(exc)
    if is_conninfo_error(exc):
        error.__suppress_context__ = True
    else:
        error.__cause__ = exc
    return error


def connect(dsn: str, **kwargs: Any) -> psycopg.Connection[Any]:
    """``psycopg.connect(dsn, autocommit=True)`` with jobq's connection arguments
    (:func:`~pgq_client._sql.connect_kwargs`), raising the typed jobq errors, decoding jsonb
    with :func:`~pgq_client.models.load_json`."""
    try:
        conn = psycopg.connect(dsn, autocommit=True, **{**_sql.connect_kwargs(dsn), **kwargs})
    except psycopg.Error as exc:
        raise _connect_failed(exc) from None
    use_fast_json(conn)
    return conn


async def aconnect(dsn: str, **kwargs: Any) -> psycopg.AsyncConnection[Any]:
    """:func:`connect` for an ``AsyncConnection``."""
    try:
        conn = await psycopg.AsyncConnection.connect(
            dsn, autocommit=True, **{**_sql.connect_kwargs(dsn), **kwargs}
        )
    except psycopg.Error as exc:
        raise _connect_failed(exc) from None
    use_fast_json(conn)
    return conn


def type_name(value: object) -> str:
    """``module.Class`` of a value: ``sqlalchemy.engine.base.Connection`` is not psycopg's."""
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def idle(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether ``conn`` is outside a transaction (pgconn's status: conn.info builds an object
    per call)."""
    return conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE


def own_transaction(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether a statement on ``conn`` needs a transaction of its own, committed, to leave the
    connection idle again: an idle connection outside autocommit."""
    return not conn.autocommit and idle(conn)


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


def done_channel(schema: str | None) -> _ops.Call:
    """The statement that names the installation's channel for finished jobs."""
    return _ops.Call(_sql.EVENT_CHANNEL.encode(), {"schema": schema, "kind": _sql.DONE}, tuple_row)


class Client(Generic[C, P]):
    """The state of a Queue (``C``: its connection type, ``P``: its pool type) or AsyncQueue.

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
            kinds = " or ".join(f"a {type_name_of(k)}" for k in self._kinds)
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
            raise TypeError(
                f"conn must be a {type_name_of(self._kinds[0])}, got {type_name(conn)}"
                + (self._other_hint if isinstance(conn, self._other) else "")
            )

    def _needs_dsn_schema(self, conn: C) -> bool:
        """Whether the schema is to be asked on a connection with the DSN's own settings:
        ``conn`` is one jobq opened, whose ``search_path = pg_catalog, pg_temp`` finds no jobq.
        On an application's connection (a given one, a pool's or a call's ``conn=``) it is
        asked on that connection (:func:`compatibility`)."""
        return self.schema is None and _sql.opened_by_jobq(conn)

    def _compatible_as(self, schema: str) -> None:
        self.schema, self._compatible = schema, True
        self._sql = _sql.statements(schema)

    def _bound(self, call: _ops.Call) -> _ops.Call:
        """``call`` with the schema put in, for an operation made before it was found."""
        if not self._late:
            return call
        return call._replace(query=_sql.bind_schema(call.query, self.schema or "public"))

    def _channel_of(self, rows: list[Any]) -> str:
        self._done_channel = str(rows[0][0]) if rows else _sql.event_channel("public", _sql.DONE)
        return self._done_channel

    def _unusable_owned(self) -> tuple[C | None, C | None]:
        """The connection this client opened: (it, None) when it is closed or broken (to
        close and open again), else (None, it)."""
        owned = self._owned
        if owned is not None and (owned.closed or owned.broken):
            return owned, None
        return None, owned

    def _detach(self) -> list[C]:
        """Mark the client closed; the connections it opened, to close."""
        self._closed = True
        opened = self._listeners + ([] if self._owned is None else [self._owned])
        self._owned, self._listeners = None, []
        return opened

    def _take_listener(self) -> C | None:
        conn = self._listeners.pop() if self._listeners else None
        return None if conn is None or conn.closed or conn.broken else conn

    def _keep_listener(self, conn: C) -> bool:
        """Keep ``conn`` for the next wait; False when the client is closed (close it)."""
        if not self._closed:
            self._listeners.append(conn)
        return not self._closed


def type_name_of(kind: type) -> str:
    return f"psycopg {kind.__name__}"


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


def command(conn: psycopg.Connection[Any], query: psycopg.sql.Composed) -> None:
    """LISTEN or UNLISTEN, leaving ``conn`` idle when it was."""
    with translate_errors(), conn.transaction() if own_transaction(conn) else nullcontext():
        conn.execute(query)


def next_wake(conn: psycopg.Connection[Any], channel: str, seconds: float) -> None:
    """Until a notification on ``channel`` (some awaited job ended: the caller reads the
    statuses again), or ``seconds``."""
    with translate_errors():
        # Notifications that came while a statement ran are kept by psycopg and come first.
        for note in conn.notifies(timeout=max(seconds, 0.0)):
            if note.channel == channel:
                return


async def aexecute(
    conn: psycopg.AsyncConnection[Any], own_tx: bool, call: _ops.Call
) -> list[Any]:
    """As :func:`execute`, on an AsyncConnection."""
    try:
        async with (
            conn.transaction() if own_tx and not conn.autocommit else nullcontext(),
            conn.cursor(row_factory=call.row_factory) as cur,
        ):
            await cur.execute(call.query, call.params, binary=call.binary)
            return await cur.fetchall()
    except psycopg.Error as exc:
        raise from_psycopg(exc) from exc


async def acommand(conn: psycopg.AsyncConnection[Any], query: psycopg.sql.Composed) -> None:
    """LISTEN or UNLISTEN, leaving ``conn`` idle when it was."""
    with translate_errors():
        async with conn.transaction() if own_transaction(conn) else nullcontext():
            await conn.execute(query)


async def anext_wake(conn: psycopg.AsyncConnection[Any], channel: str, seconds: float) -> None:
    """As :func:`next_wake`."""
    with translate_errors():
        notes = conn.notifies(timeout=max(seconds, 0.0))
        try:
            async for note in notes:
                if note.channel == channel:
                    return
        finally:
            await notes.aclose()


Connectable = str | psycopg.Connection[Any] | ConnectionPool[Any] | None
Statuses = dict[uuid.UUID, JobStatus]


class SyncClient(Client[psycopg.Connection[Any], ConnectionPool[Any]]):
    """The connections of a :class:`~pgq_client.Queue`: one at a time under a lock (a
    given one or its own), a pool's, and those it listens on for a wait."""

    _kinds = (psycopg.Connection, ConnectionPool)
    _other = (psycopg.AsyncConnection, AsyncConnectionPool)
    _other_hint = " (use AsyncQueue with an AsyncConnection)"

    def __init__(self, dsn: Connectable = None, *, schema: str | None = None) -> None:
        super().__init__(dsn, schema=schema)
        self._lock = threading.RLock()

    def _held(self) -> tuple[psycopg.Connection[Any], bool]:
        """Under ``self._lock``: the connection for one call (the caller's, or the one this
        client owns, opened or reopened here), and whether the client owns the transaction
        around it."""
        if self._conn is not None:
            conn, owns_tx = self._conn, idle(self._conn)
        else:
            stale, self._owned = self._unusable_owned()
            if stale is not None:
                stale.close()
            conn, owns_tx = self._owned or connect(self.dsn), True
            self._owned = conn
        self._check_compatible(conn)
        return conn, owns_tx

    def _check_compatible(self, conn: psycopg.Connection[Any]) -> None:
        """Once per client: find the schema, refuse one with a breaking change this client
        does not know."""
        if self._compatible:
            return
        if self._needs_dsn_schema(conn):
            self.schema = _sql.schema_of_dsn(self.dsn)
        own = own_transaction(conn)
        found = _ops.drive(compatibility(self.schema), lambda call: execute(conn, own, call))
        self._compatible_as(found)

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

    def _waited(
        self, ids: list[uuid.UUID], deadline: float | None, poll: float,
        finish: Callable[[Statuses], T],
    ) -> T:
        """The I/O of :meth:`wait`: ``finish`` of the statuses the wait ends with."""
        if not ids:
            return finish({})
        with self._listener() as (conn, channel):

            def pause(p: _ops.Pause) -> None:
                if channel is None:
                    time.sleep(p.seconds)
                else:
                    next_wake(conn, channel, p.seconds)

            op = _ops.wait(self._sql, ids, deadline, poll, listening=channel is not None)
            run: Callable[[_ops.Call], list[Any]] = lambda call: execute(  # noqa: E731
                conn, own_transaction(conn), self._bound(call)
            )
            return finish(_ops.drive(op, run, pause))

    @contextmanager
    def _listener(self) -> Iterator[tuple[psycopg.Connection[Any], str | None]]:
        """A connection for one wait, and the done channel it LISTENs on (None: it polls)."""
        self._check_open()
        if self._pool is not None:
            with self._pool.connection() as conn:
                yield from self._listening(conn)
            return
        if self._conn is not None:
            with self._lock:
                if not idle(self._conn):
                    self._check_compatible(self._conn)
                    yield self._conn, None  # LISTEN would take effect only at the caller's commit
                else:
                    yield from self._listening(self._conn)
            return
        with self._lock:
            conn = self._take_listener() or connect(self.dsn)
        try:
            yield from self._listening(conn)
        except BaseException:
            conn.close()
            raise
        with self._lock:
            kept = self._keep_listener(conn)
        if not kept:
            conn.close()

    def _listening(
        self, conn: psycopg.Connection[Any]
    ) -> Iterator[tuple[psycopg.Connection[Any], str | None]]:
        self._check_compatible(conn)
        channel = self._done_channel or self._channel_of(
            execute(conn, own_transaction(conn), done_channel(self.schema))
        )
        command(conn, _sql.listen(channel))
        try:
            yield conn, channel
        finally:
            if not conn.closed and not conn.broken:
                command(conn, _sql.unlisten(channel))
