"""The Worker's settings and handler types: checked once, then frozen."""

from __future__ import annotations

import inspect
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Any, Protocol, Union

import psycopg

from .._opcore import seconds
from ..models import Job

MAX_WORKER_ID = 200  # characters; jobq refuses longer worker ids


class PlainHandler(Protocol):
    """``handler(job)``: returning completes the job, raising fails it."""

    def __call__(self, job: Job, /) -> object: ...


class TransactionalHandler(Protocol):
    """``handler(job, conn)``: runs in a transaction on ``conn`` that also completes the job."""

    def __call__(self, job: Job, conn: psycopg.Connection[Any], /) -> object: ...


class AsyncPlainHandler(Protocol):
    """``async def handler(job)``: runs on the Worker's event loop; returning completes the job,
    raising fails it."""

    def __call__(self, job: Job, /) -> Awaitable[object]: ...


class AsyncTransactionalHandler(Protocol):
    """``async def handler(job, conn)``: runs on the Worker's event loop in a transaction on the
    ``AsyncConnection`` ``conn`` that also completes the job."""

    def __call__(self, job: Job, conn: psycopg.AsyncConnection[Any], /) -> Awaitable[object]: ...


Handler = Union[  # noqa: UP007 (a runtime alias on 3.10)
    PlainHandler, TransactionalHandler, AsyncPlainHandler, AsyncTransactionalHandler
]
"""What ``Worker(handlers={job_type: handler})`` takes: a plain or a transactional handler,
``def`` or ``async def``."""


def takes_connection(handler: Callable[..., object]) -> bool:
    """True for a handler with two positional parameters: ``handler(job, conn)`` (so a plain
    function needs no marking)."""
    try:
        params = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature take the job alone
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in params if p.kind in positional) >= 2


def is_async(handler: Callable[..., object]) -> bool:
    """True for an ``async def`` handler (a coroutine function, a ``functools.partial`` of one,
    or an object whose ``__call__`` is one): the Worker runs it on its event loop."""
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        getattr(handler, "__call__", None)  # noqa: B004 (the method, not callability)
    )


def default_worker_id() -> str:
    """``host:pid:random``: unique per process, readable in ``locked_by``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


_RULES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("concurrency", lambda v: v >= 1, "be at least 1"),
    ("lock_timeout", lambda v: v > timedelta(0), "be positive"),
    ("prefetch", lambda v: v is None or v >= 0, "not be negative"),
    ("batch_size", lambda v: v is None or 1 <= v <= 10_000, "be between 1 and 10000"),
    ("poll_interval", lambda v: v > 0, "be positive"),
    ("shutdown_grace", lambda v: v >= 0, "not be negative"),
    ("retry_backoff", lambda v: v >= timedelta(0), "not be negative"),
    ("tick_interval", lambda v: v is None or v > 0, "be positive (or None: no ticking)"),
    ("lock_wait", lambda v: 0 < v <= 3600, "be positive and at most 3600 s"),
    ("summary_interval", lambda v: v is None or v > 0, "be positive (or None: no summary)"),
    ("worker_id", lambda v: isinstance(v, str) and bool(v.strip()) and len(v) <= MAX_WORKER_ID,
     f"be a non-blank string of at most {MAX_WORKER_ID} characters"),
)
"""What each setting must be: a ValueError naming it otherwise."""

_TIMEDELTAS = ("lock_timeout", "retry_backoff")  # the durations that go to SQL
_SECONDS = ("poll_interval", "heartbeat_interval", "shutdown_grace", "summary_interval",
            "tick_interval", "lock_wait")


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a :class:`~pgq_client.Worker` was told, validated when made.

    Durations are given as timedeltas or seconds, and kept as timedeltas where they go to SQL,
    else as seconds. ``heartbeat_interval`` None means a third of ``lock_timeout``;
    ``summary_interval`` None turns the periodic log line off; ``worker_id`` None, a new one.
    """

    handlers: Mapping[str, Handler]
    concurrency: int = 8
    queues: Sequence[str] | None = None
    lock_timeout: timedelta = timedelta(minutes=5)
    batch_size: int | None = None
    prefetch: int | None = None
    poll_interval: float = 1.0
    heartbeat_interval: float | None = None
    shutdown_grace: float = 30.0
    retry_backoff: timedelta = timedelta(seconds=10)
    worker_id: str = field(default_factory=default_worker_id)
    schema: str | None = None
    summary_interval: float | None = 60.0
    # Seconds between two jobq_tick calls (schedules); None: this worker fires none.
    tick_interval: float | None = 5.0
    # Seconds a statement of the fetcher or the acknowledger waits for a row lock that another
    # session holds (their connections' lock_timeout) before it gives up and is retried later.
    lock_wait: float = 0.5
    transactional: frozenset[str] = field(init=False)
    # The job types whose handler is ``async def``: they run on the Worker's event loop.
    asynchronous: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        if not self.handlers:
            raise ValueError("Worker needs at least one handler: handlers={'job_type': fn}")
        for job_type, handler in self.handlers.items():
            if not isinstance(job_type, str) or not job_type.strip():
                raise ValueError(f"job types must be non-blank strings, got {job_type!r}")
            if not callable(handler):
                raise TypeError(f"handler for {job_type!r} is not callable: {handler!r}")
        if isinstance(self.queues, str) or not all(isinstance(q, str) for q in self.queues or ()):
            raise TypeError("queues must be a list of queue names, not a string")
        set_ = object.__setattr__  # the dataclass is frozen: normalise once, here
        for name in (*_TIMEDELTAS, *_SECONDS):  # Worker's arguments: a timedelta or seconds
            if (value := getattr(self, name)) is not None:
                value = seconds(value, name)
                set_(self, name, timedelta(seconds=value) if name in _TIMEDELTAS else value)
        if not self.worker_id:  # None or "": a new one
            set_(self, "worker_id", default_worker_id())
        for name, valid, rule in _RULES:
            value = getattr(self, name)
            if not valid(value):
                raise ValueError(f"{name} must {rule}, got {value!r}")
        lock_seconds = self.lock_timeout.total_seconds()
        heartbeat = lock_seconds / 3 if self.heartbeat_interval is None else self.heartbeat_interval
        if not 0 < heartbeat < lock_seconds:
            raise ValueError("heartbeat_interval must be positive and shorter than lock_timeout")
        set_(self, "handlers", MappingProxyType(dict(self.handlers)))
        set_(self, "queues", None if self.queues is None else tuple(self.queues))
        set_(self, "heartbeat_interval", heartbeat)
        set_(self, "transactional", frozenset(t for t, h in self.handlers.items()
                                              if takes_connection(h)))
        set_(self, "asynchronous", frozenset(t for t, h in self.handlers.items() if is_async(h)))

    @property
    def handler_threads(self) -> int:
        """One when every handler is ``async def`` (it hands their jobs to the loop)."""
        return 1 if set(self.handlers) <= self.asynchronous else self.concurrency

    @property
    def job_types(self) -> list[str]:
        return list(self.handlers)

    @property
    def heartbeat_seconds(self) -> float:
        assert self.heartbeat_interval is not None  # set in __post_init__
        return self.heartbeat_interval
