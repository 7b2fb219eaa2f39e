"""Retrying through lost connections, and telling them from errors a retry cannot fix."""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg

from .._opcore import settled, step
from ..errors import from_psycopg
from .joblog import log

T = TypeVar("T")

BACKOFF_BASE = 0.05  # seconds before the second retry; doubles each time
BACKOFF_CAP = 5.0

# SQLSTATEs that a later try can get past: the connection (08), the server going away or not
# yet up (57P01-03, 57P05), a cancelled statement (57014), a lack of resources (53: disk, memory,
# connections), a serialization failure or deadlock (40001, 40P01), a lock not available (55P03).
_TRANSIENT_CLASSES = ("08", "53")
_SERVER_GONE = frozenset({"57P01", "57P02", "57P03", "57P05"})
_TRANSIENT = _SERVER_GONE | {"57014", "40001", "40P01", "55P03"}


class GaveUp(Exception):
    """A retried call was abandoned (shutting down, or asked to hurry)."""


def connection_lost(exc: BaseException) -> bool:
    """True for an error that says the connection failed or was lost."""
    if not isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _SERVER_GONE


def transient(exc: BaseException) -> bool:
    """True for an error that trying again can get past (a lost connection above all); False
    for one that would come back every time (no privilege, undefined function, bad argument,
    a program limit): that one must stop what raised it, not be retried forever."""
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if state is None:  # raised by the client: connection failed, closed or timed out
        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
    return state.startswith(_TRANSIENT_CLASSES) or state in _TRANSIENT


def describe(exc: BaseException) -> str:
    """The first line of an error, with its SQLSTATE when it has one."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    state = getattr(exc, "sqlstate", None)
    return f"{first} [{state}]" if state else first


@dataclass(frozen=True)
class Reconnecting:
    """Runs calls again after each transient error until they succeed.

    ``on_lost()`` runs after each failure (it drops a broken connection, or lets a pool discard
    its dead ones: after a server restart every idle connection is dead, and trying them one by
    one with a backoff each would stall for minutes), so the first retry comes at once; later
    ones after a capped exponential backoff with jitter, waited by ``pause(seconds)`` (which
    shutdown can cut short). Each callback may be blocking or return an awaitable. The first
    error of a run is logged at WARNING, the rest at DEBUG, the recovery at INFO.
    """

    who: str
    give_up: Callable[[], bool]
    pause: Callable[[float], object]
    on_lost: Callable[[], object] = lambda: None

    async def acall(self, call: Callable[[], Awaitable[T] | T], doing: str) -> T:
        """``call()``, retried. Raises :class:`GaveUp` once ``give_up()`` is true after a
        failure, and a :class:`~pgq_client.JobqError` at once for an error that is not
        transient."""
        failures = 0  # in a row
        while True:
            try:
                result: T = await settled(call())
            except psycopg.Error as exc:
                if not transient(exc):
                    raise from_psycopg(exc) from exc
                log.log(
                    logging.WARNING if failures == 0 else logging.DEBUG,
                    "%s: %s while %s (%s); retrying",
                    self.who,
                    "database unavailable" if connection_lost(exc) else "transient error",
                    doing,
                    describe(exc),
                )
                await settled(self.on_lost())
                if failures and not self.give_up():
                    ceiling = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (failures - 1))
                    await settled(self.pause(random.uniform(ceiling / 2, ceiling)))
                failures += 1
                if self.give_up():
                    raise GaveUp(doing) from exc
                continue
            if failures:
                log.info("%s: database reachable again (%s)", self.who, doing)
            return result

    def __call__(self, call: Callable[[], T], doing: str) -> T:
        """:meth:`acall` with blocking callbacks (``pause`` an ``Event.wait``), on the calling
        thread: nothing it awaits suspends, so it is stepped without an event loop."""
        return step(self.acall(call, doing))


class Link:
    """A connection of the worker's own (not pooled): opened when first needed, with ``setup``
    run on it (e.g. its LISTEN), and opened again once it is closed or broken (after an
    error, the next :meth:`get` finds out)."""

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        setup: Callable[[psycopg.Connection[Any]], None] | None = None,
    ) -> None:
        self._connect = connect
        self._setup = setup
        self.conn: psycopg.Connection[Any] | None = None

    def get(self) -> psycopg.Connection[Any]:
        conn = self.conn
        if conn is None or conn.closed or conn.broken:
            self.close()
            conn = self._connect()
            try:
                if self._setup is not None:
                    self._setup(conn)
            except BaseException:
                conn.close()
                raise
            self.conn = conn
        return conn

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception as exc:  # closing a broken connection may complain; it is gone
                log.debug("closing a connection: %s", exc)
