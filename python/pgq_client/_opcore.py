"""How an operation of :mod:`._ops` is written and run, and the argument checks they share.

An operation is a generator: it checks its arguments (raising before anything is sent), yields
each :class:`Call` it needs (``prune``: one per batch) and is sent its rows, or thrown its
error (which it may reword), and returns the method's result in the client's types. It does no
I/O: ``Queue`` runs it with :func:`drive` on a ``Connection``, ``AsyncQueue`` with
:func:`adrive` on an ``AsyncConnection``, so checks, statements and mapping are one code for
both. ``wait`` also yields :class:`Pause`: wait for a notification (or sleep).
"""

from __future__ import annotations

import inspect
import json
import re
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

from psycopg.rows import BaseRowFactory, dict_row

from ._sql import Query
from .errors import InvalidArgument, JobqError

T = TypeVar("T")


class Call(NamedTuple):
    """One statement an operation needs run, and how (a named tuple: one is built on every
    enqueue's path, and a frozen dataclass costs a setattr per field).

    ``retry_serialization``: a serialization failure is retried when the executor owns the
    transaction (an enqueue that met a concurrent one with the same idempotency key), never in
    the caller's (``conn=``). ``binary``: rows in binary, for results that are large arrays.
    """

    query: Query
    params: Mapping[str, Any]
    row_factory: BaseRowFactory[Any] = dict_row
    retry_serialization: bool = False
    binary: bool = False


@dataclass(frozen=True)
class Pause:
    """Wait up to ``seconds`` for the notification that one of the ``unfinished`` jobs (ids as
    text) finished, on the executor's listening connection; without one, sleep. The operation
    is sent no rows (an empty list) after it."""

    seconds: float
    unfinished: frozenset[str]


Op = Generator["Call | Pause", list[Any], T]


async def _no_pause(pause: Pause) -> None:
    raise AssertionError(f"this operation does not pause: {pause}")  # pragma: no cover


async def settled(value: T | Awaitable[T]) -> T:
    """The value of a blocking call, or the awaited value of an asyncio one: what lets one
    coroutine serve a blocking and an asyncio caller (:func:`drive`, ``_conn.Client``)."""
    if inspect.isawaitable(value):
        awaited: T = await value  # (not typing.cast: a call on every enqueue's path)
        return awaited
    return value


async def adrive(
    op: Op[T],
    run: Callable[[Call], list[Any] | Awaitable[list[Any]]],
    pause: Callable[[Pause], object] = _no_pause,
) -> T:
    """Run ``op`` to its result, each call and pause awaited when they are coroutines."""
    try:
        step = next(op)
        while True:
            if isinstance(step, Pause):
                await settled(pause(step))
                step = op.send([])
                continue
            try:
                rows = await settled(run(step))
            except JobqError as exc:
                step = op.throw(exc)
            else:
                step = op.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result


def drive(
    op: Op[T], run: Callable[[Call], list[Any]], pause: Callable[[Pause], None] | None = None
) -> T:
    """:func:`adrive` with a blocking ``run`` and ``pause``, stepped by :func:`step`."""
    return step(adrive(op, run, _no_pause if pause is None else pause))


def step(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (everything it awaits is synchronous),
    without an event loop: how one piece of code serves a blocking and an asyncio caller."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coroutine.close()  # pragma: no cover
    raise AssertionError("a synchronous executor suspended")  # pragma: no cover


# -- argument checks, done in the client before anything is sent ------------------------------


def check_aware(value: datetime | None, name: str) -> None:
    """Refuse a naive datetime: jobq times are absolute."""
    if value is not None and (value.tzinfo is None or value.tzinfo.utcoffset(value) is None):
        raise ValueError(
            f"{name} must be timezone-aware (e.g. datetime.now(timezone.utc)), got naive {value!r}"
        )


_ESCAPED_NUL = re.compile(r"(\\+)u0000")


def check_text(value: str | None, name: str) -> None:
    """Refuse what PostgreSQL text cannot store: NUL, and lone surrogates (not UTF-8)."""
    if value is None:
        return
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise ValueError(f"{name} contains a NUL (0x00) character, which PostgreSQL cannot store")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{name} contains a lone surrogate ({value[exc.start]!r} at {exc.start}): "
            "not valid UTF-8 text"
        ) from None


# One encoder for every call: json.dumps with options builds a new one each time.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dump_json(value: Any, name: str) -> str:
    """``value`` as JSON text for a ``::jsonb`` parameter, refusing what jsonb cannot store
    (NUL, escaped as \\u0000, and lone surrogates) with a ValueError naming ``name``."""
    try:
        text = _ENCODER.encode(value)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name} is not JSON-serializable: {exc}") from None
    if "u0000" in text and any(len(m.group(1)) % 2 for m in _ESCAPED_NUL.finditer(text)):
        raise ValueError(f"{name} contains a NUL (0x00) character, which jsonb cannot store")
    try:
        if not text.isascii():  # (a flag of the string: ASCII has no lone surrogate)
            text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{name} contains a lone surrogate ({text[exc.start]!r}): not valid UTF-8 text"
        ) from None
    return text


def interval(value: timedelta | float | int, name: str) -> timedelta:
    """A duration for an ``::interval`` parameter: a timedelta, or a number of seconds."""
    return value if isinstance(value, timedelta) else timedelta(seconds=_number(value, name))


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a timedelta or a number of seconds, got {value!r}")
    return float(value)


def dump_result(value: Any) -> str | None:
    """A handler's return value as JSON text for ``jobq_complete(result => ...)``; None stores
    none. Refused with TypeError/ValueError when it is not JSON (NaN, a set, an object, a NUL
    or a lone surrogate in a string)."""
    return None if value is None else dump_json(value, "the result")


def job_ids_of(value: uuid.UUID | str | Iterable[uuid.UUID | str], name: str) -> list[uuid.UUID]:
    """Job ids as UUIDs, from one id or many (a UUID or its text); duplicates kept once, in
    order. A value that is not a UUID raises ValueError naming ``name``."""
    items: Iterable[uuid.UUID | str] = (
        [value] if isinstance(value, uuid.UUID | str) else value  # one id, or many
    )
    ids: dict[uuid.UUID, None] = {}
    for item in items:
        if isinstance(item, uuid.UUID):
            ids[item] = None
            continue
        try:
            ids[uuid.UUID(str(item))] = None
        except ValueError:
            raise ValueError(f"{name}: {item!r} is not a job id (a UUID)") from None
    return list(ids)


def job_id_of(value: uuid.UUID | str, name: str) -> uuid.UUID:
    """One job id, as :func:`job_ids_of` reads it."""
    return job_ids_of(value if isinstance(value, uuid.UUID) else str(value), name)[0]


def seconds(value: timedelta | float, name: str) -> float:
    """A duration, a timedelta or a number of seconds, in seconds; a negative one is refused."""
    result = value.total_seconds() if isinstance(value, timedelta) else _number(value, name)
    if result < 0:
        raise ValueError(f"{name} must not be negative, got {value!r}")
    return result


def payload_json(payload: Any) -> str:
    if payload is not None and type(payload) is not dict and not isinstance(payload, Mapping):
        # the same rule, and the same error, as jobq_enqueue's
        raise InvalidArgument(
            f"payload must be a JSON object, got {type(payload).__name__}: "
            "wrap the value in a dict"
        )
    return dump_json({} if payload is None else payload, "payload")

