"""Retrying through lost connections, and telling them from errors a retry cannot fix."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import psycopg

from ..errors import from_psycopg
from .joblog import log

__all__ = [
    "GaveUp",
    "Link",
    "areconnecting",
    "connection_lost",
    "describe",
    "reconnecting",
    "transient",
]

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


def reconnecting(
    call: Callable[[], T],
    *,
    doing: str,
    who: str,
    give_up: Callable[[], bool],
    pause: Callable[[float], object],
    on_lost: Callable[[], None] = lambda: None,
) -> T:
    """``call()``, tried again after each transient error until it succeeds.

    ``on_lost()`` runs after each failure (it drops a broken connection, or lets a pool discard
    its dead ones: after a server restart every idle connection is dead, and trying them one by
    one with a backoff each would stall for minutes), so the first retry comes at once; later
    ones after a capped exponential backoff with jitter, slept by ``pause(seconds)`` (an
    ``Event.wait`` that shutdown can cut short). The first error of a run is logged at WARNING,
    the rest at DEBUG, the recovery at INFO. Raises :class:`GaveUp` once ``give_up()`` is true
    after a failure, and a :class:`~pgq_client.JobqError` at once for an error that is not
    transient.
    """
    tries = _Tries(doing, who, give_up)
    while True:
        try:
            return tries.succeeded(call())
        except psycopg.Error as exc:
            for wait in tries.after(exc):
                if wait is None:
                    on_lost()
                else:
                    pause(wait)


async def _nothing() -> None:
    pass


async def areconnecting(
    call: Callable[[], Awaitable[T]],
    *,
    doing: str,
    who: str,
    give_up: Callable[[], bool],
    on_lost: Callable[[], Awaitable[None]] = _nothing,
) -> T:
    """:func:`reconnecting` for a coroutine: ``await call()``, ``on_lost`` awaited, the pauses
    ``asyncio.sleep`` (which cancelling the task cuts short)."""
    tries = _Tries(doing, who, give_up)
    while True:
        try:
            return tries.succeeded(await call())
        except psycopg.Error as exc:
            for wait in tries.after(exc):
                await (on_lost() if wait is None else asyncio.sleep(wait))


class _Tries:
    """The retry loop of :func:`reconnecting` and :func:`areconnecting`, without its I/O."""

    def __init__(self, doing: str, who: str, give_up: Callable[[], bool]) -> None:
        self.doing, self.who, self.give_up = doing, who, give_up
        self.failures = 0  # in a row

    def succeeded(self, result: T) -> T:
        if self.failures:
            log.info("%s: database reachable again (%s)", self.who, self.doing)
        return result

    def after(self, exc: psycopg.Error) -> Iterator[float | None]:
        """What follows the failure ``exc``: its typed error, raised when it is not transient;
        else None (run ``on_lost``), then the seconds to pause before the next try (none before
        the first), and :class:`GaveUp` raised once ``give_up()`` is true."""
        if not transient(exc):
            raise from_psycopg(exc) from exc
        log.log(
            logging.WARNING if self.failures == 0 else logging.DEBUG,
            "%s: %s while %s (%s); retrying",
            self.who,
            "database unavailable" if connection_lost(exc) else "transient error",
            self.doing,
            describe(exc),
        )
        yield None
        if self.failures and not self.give_up():
            ceiling = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (self.failures - 1))
            yield random.uniform(ceiling / 2, ceiling)
        self.failures += 1
        if self.give_up():
            raise GaveUp(self.doing) from exc


class Link:
    """A connection of the worker's own (not pooled): opened when first needed, with ``setup``
    run on it (e.g. its LISTEN), and opened again after it broke."""

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        setup: Callable[[psycopg.Connection[Any]], None] | None = None,
    ) -> None:
        self._connect = connect
        self._setup = setup
        self.conn: psycopg.Connection[Any] | None = None
        self.opened = 0  # how many connections it has opened, for "was this a retry?"

    def get(self) -> psycopg.Connection[Any]:
        conn = self.conn
        if conn is None or conn.closed:
            conn = self._connect()
            try:
                if self._setup is not None:
                    self._setup(conn)
            except BaseException:
                conn.close()
                raise
            self.conn = conn
            self.opened += 1
        return conn

    def drop_if_broken(self) -> None:
        """After an error: forget the connection if it cannot be used any more."""
        conn = self.conn
        if conn is not None and (conn.closed or conn.broken):
            self.close()

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception as exc:  # closing a broken connection may complain; it is gone
                log.debug("closing a connection: %s", exc)
