"""Retrying through lost connections, and telling them from errors a retry cannot fix."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
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

    The first retry comes at once, after ``on_lost()`` (which drops a broken connection, or
    lets a pool discard its dead ones: after a server restart every idle connection is dead,
    and trying them one by one with a backoff each would stall for minutes); later ones after
    a capped exponential backoff with jitter, slept by ``pause(seconds)`` (an ``Event.wait``
    that shutdown can cut short). The first error of a run is logged at WARNING, the rest at
    DEBUG, the recovery at INFO. Raises :class:`GaveUp` once ``give_up()`` is true after a
    failure, and a :class:`~pgq_client.JobqError` at once for an error that is not transient.
    """
    failures = 0
    while True:
        try:
            result = call()
        except psycopg.Error as exc:
            wait = _after_failure(exc, failures, doing, who, give_up, on_lost)
            if wait:
                pause(wait)
                if give_up():
                    raise GaveUp(doing) from exc
            failures += 1
            continue
        if failures:
            log.info("%s: database reachable again (%s)", who, doing)
        return result


async def areconnecting(
    call: Callable[[], Awaitable[T]],
    *,
    doing: str,
    who: str,
    give_up: Callable[[], bool],
    on_lost: Callable[[], Awaitable[None]] | None = None,
) -> T:
    """:func:`reconnecting` for a coroutine: ``await call()``, tried again after each transient
    error, the same way (the pauses are ``asyncio.sleep``, which cancelling the task cuts
    short; ``on_lost`` is awaited)."""
    failures = 0
    while True:
        try:
            result = await call()
        except psycopg.Error as exc:
            wait = _after_failure(exc, failures, doing, who, give_up, lambda: None)
            if on_lost is not None:
                await on_lost()
            if wait:
                await asyncio.sleep(wait)
                if give_up():
                    raise GaveUp(doing) from exc
            failures += 1
            continue
        if failures:
            log.info("%s: database reachable again (%s)", who, doing)
        return result


def _after_failure(
    exc: psycopg.Error,
    failures: int,
    doing: str,
    who: str,
    give_up: Callable[[], bool],
    on_lost: Callable[[], None],
) -> float:
    """What a retry loop does after ``exc``, its ``failures + 1``-th failure in a row: raise the
    typed error when it is not transient, log it, call ``on_lost()``, raise :class:`GaveUp`
    when giving up; else the seconds to pause before the next try (none before the first)."""
    if not transient(exc):
        raise from_psycopg(exc) from exc
    log.log(
        logging.WARNING if failures == 0 else logging.DEBUG,
        "%s: %s while %s (%s); retrying",
        who,
        "database unavailable" if connection_lost(exc) else "transient error",
        doing,
        describe(exc),
    )
    on_lost()
    if give_up():
        raise GaveUp(doing) from exc
    if not failures:
        return 0.0
    ceiling = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (failures - 1))
    return random.uniform(ceiling / 2, ceiling)


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
