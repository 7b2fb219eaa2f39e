"""The producer/admin side of the client: a thin wrapper over the ``jobq_*`` functions."""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Literal

import psycopg
from psycopg import sql
from psycopg.rows import RowFactory, dict_row, scalar_row, tuple_row
from psycopg_pool import ConnectionPool

from . import _sql
from ._secrets import is_conninfo_error
from .errors import (
    InvalidArgument,
    JobFailed,
    JobNotFound,
    JobqError,
    NotMigrated,
    SerializationFailure,
    from_psycopg,
)
from .migrate import check_compatible
from .models import (
    Fire,
    HealthRow,
    Job,
    JobStatus,
    Schedule,
    StatsRow,
    UnservedJobType,
    job_row,
)

__all__ = ["Connectable", "Queue", "resolve_dsn"]

log = logging.getLogger("pgq_client.queue")

Connectable = str | psycopg.Connection[Any] | ConnectionPool[Any] | None

DSN_SOURCES = ("JOBQ_DSN", "DATABASE_URL")

# How often an enqueue in a transaction the Queue owns is retried on a serialization failure.
SERIALIZATION_RETRIES = 5

# Queue.wait: seconds between two looks at the jobs when no notification came (a notification
# lost with a connection, a job pruned meanwhile), unless the caller says otherwise.
WAIT_POLL_INTERVAL = 1.0


def resolve_dsn(dsn: str | None = None) -> tuple[str, str]:
    """The DSN to use and where it came from: ``dsn`` itself, ``JOBQ_DSN``, ``DATABASE_URL``,
    else the embedded PostgreSQL (started if needed)."""
    if dsn:
        return dsn, "argument"
    for name in DSN_SOURCES:
        value = os.environ.get(name)
        if value:
            return value, name
    try:
        embedded = importlib.import_module("pgq_client.embedded")
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise JobqError(
            "no database given (set JOBQ_DSN or DATABASE_URL, or pass a DSN), and the embedded "
            f"PostgreSQL is not available: {exc}"
        ) from exc
    return str(embedded.get_embedded_dsn()), "embedded"


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


def dump_json(value: Any, name: str) -> str:
    """``value`` as JSON text for a ``::jsonb`` parameter, refusing what jsonb cannot store
    (NUL, escaped as \\u0000, and lone surrogates) with a ValueError naming ``name``."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name} is not JSON-serializable: {exc}") from None
    if "u0000" in text and any(len(m.group(1)) % 2 for m in _ESCAPED_NUL.finditer(text)):
        raise ValueError(f"{name} contains a NUL (0x00) character, which jsonb cannot store")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{name} contains a lone surrogate ({text[exc.start]!r}): not valid UTF-8 text"
        ) from None
    return text


@contextmanager
def translate_errors() -> Iterator[None]:
    """Re-raise psycopg errors as the typed jobq exceptions (the original is ``__cause__``)."""
    try:
        yield
    except psycopg.Error as exc:
        raise from_psycopg(exc) from exc


def connect(dsn: str, **kwargs: Any) -> psycopg.Connection[Any]:
    """``psycopg.connect(dsn, autocommit=True)`` raising the typed jobq errors. A DSN that libpq
    cannot parse is refused without chaining libpq's error, which may quote the password."""
    try:
        return psycopg.connect(dsn, autocommit=True, **kwargs)
    except psycopg.Error as exc:
        if is_conninfo_error(exc):
            raise from_psycopg(exc) from None
        raise from_psycopg(exc) from exc


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


def _seconds_or_none(value: timedelta | float | None, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, timedelta):
        result = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a timedelta, a number of seconds or None, got {value!r}")
    else:
        result = float(value)
    if result < 0:
        raise ValueError(f"{name} must not be negative, got {value!r}")
    return result


def dump_result(value: Any) -> str | None:
    """A handler's return value as JSON text for ``jobq_complete(result => ...)``; None stores
    none. Refused with TypeError/ValueError when it is not JSON (NaN, a set, an object, a NUL
    or a lone surrogate in a string)."""
    return None if value is None else dump_json(value, "the result")


def _interval(value: timedelta | float | int, name: str) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a timedelta or a number of seconds, got {value!r}")
    return timedelta(seconds=value)


class Queue:
    """Enqueue jobs and administer a jobq installation.

    ``Queue(dsn)`` opens (lazily) and owns one autocommit connection, shared by threads under a
    lock; ``Queue(connection)`` and ``Queue(pool)`` use the caller's, which stays theirs to close.
    ``Queue()`` takes ``JOBQ_DSN``, else ``DATABASE_URL``, else the embedded PostgreSQL.
    ``schema`` qualifies every call (``"tenant".jobq_enqueue``); None leaves it to the
    search_path. Each call is its own short transaction, except with ``conn=`` (the caller's
    transaction) or on a borrowed connection that is inside a transaction already.

    Before its first statement, a Queue checks once that the schema has no breaking change
    this client does not know (:class:`~pgq_client.errors.IncompatibleSchema` otherwise).
    """

    def __init__(self, dsn: Connectable = None, *, schema: str | None = None) -> None:
        self._sql = _sql.statements(schema)
        self.schema = schema
        self._lock = threading.RLock()
        self._owned: psycopg.Connection[Any] | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._pool: ConnectionPool[Any] | None = None
        self._dsn: str | None = None
        if isinstance(dsn, psycopg.Connection):
            self._conn = dsn
        elif isinstance(dsn, ConnectionPool):
            self._pool = dsn
        elif dsn is None or isinstance(dsn, str):
            self._dsn = dsn
        else:
            raise TypeError(
                f"Queue() takes a DSN, a psycopg Connection or a ConnectionPool, got {dsn!r}"
            )
        self._closed = False
        self._compatible = False  # checked once, before the first statement
        # Connections of their own for Queue.wait (LISTEN), kept for the next wait.
        self._listeners: list[psycopg.Connection[Any]] = []
        self._done_channel: str | None = None

    # -- connection handling ------------------------------------------------------------------

    @property
    def dsn(self) -> str:
        """The DSN this Queue connects to (resolved on first use when none was given)."""
        if self._conn is not None:
            return self._conn.info.dsn
        if self._pool is not None:
            conninfo = self._pool.conninfo
            return conninfo() if callable(conninfo) else conninfo
        if self._dsn is None:
            self._dsn, _ = resolve_dsn(None)
        return self._dsn

    @contextmanager
    def _connection(self) -> Iterator[tuple[psycopg.Connection[Any], bool]]:
        """A connection for one call, and whether the Queue owns the transaction around it."""
        if self._closed:
            raise JobqError("this Queue is closed")
        if self._pool is not None:
            with self._pool.connection() as conn:
                self._check_compatible(conn)
                yield conn, True
            return
        with self._lock:
            if self._conn is not None:
                conn = self._conn
                owns_tx = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
                self._check_compatible(conn)
                yield conn, owns_tx
                return
            if self._owned is None or self._owned.closed or self._owned.broken:
                if self._owned is not None:
                    self._owned.close()
                    self._owned = None
                self._owned = connect(self.dsn)
            self._check_compatible(self._owned)
            yield self._owned, True

    def _check_compatible(self, conn: psycopg.Connection[Any]) -> None:
        """Once per Queue: refuse a schema with a breaking change this client does not know."""
        if self._compatible:
            return
        idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with translate_errors():
            if idle and not conn.autocommit:  # leave the connection as it was: idle
                with conn.transaction():
                    check_compatible(conn, self.schema)
            else:
                check_compatible(conn, self.schema)
        self._compatible = True

    def _run(
        self,
        query: sql.Composed,
        params: Mapping[str, Any],
        *,
        conn: psycopg.Connection[Any] | None = None,
        retry_serialization: bool = False,
        row_factory: RowFactory[Any] = dict_row,
    ) -> list[Any]:
        """Execute one statement and return its rows (dicts by default), as one short
        transaction."""
        if conn is not None:
            # The caller's transaction: no commit, and a serialization failure is theirs to retry.
            self._check_compatible(conn)
            with translate_errors(), conn.cursor(row_factory=row_factory) as cur:
                cur.execute(query, params)
                return cur.fetchall()
        tries = SERIALIZATION_RETRIES if retry_serialization else 1
        for attempt in range(1, tries + 1):
            try:
                with self._connection() as (c, owns_tx), translate_errors():
                    if owns_tx and not c.autocommit:
                        # A borrowed idle connection: one short transaction, committed.
                        with c.transaction(), c.cursor(row_factory=row_factory) as cur:
                            cur.execute(query, params)
                            return cur.fetchall()
                    with c.cursor(row_factory=row_factory) as cur:
                        cur.execute(query, params)
                        return cur.fetchall()
            except SerializationFailure:
                if attempt == tries or not owns_tx:
                    raise
                log.debug("serialization failure, retrying (%d/%d)", attempt, tries)
                time.sleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close the connections this Queue opened (not one it was given)."""
        with self._lock:
            self._closed = True
            if self._owned is not None:
                self._owned.close()
                self._owned = None
            listeners, self._listeners = self._listeners, []
        for conn in listeners:
            conn.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- producing ----------------------------------------------------------------------------

    def enqueue(
        self,
        job_type: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        run_at: datetime | None = None,
        priority: int = 0,
        max_attempts: int = 5,
        queue: str = "default",
        conn: psycopg.Connection[Any] | None = None,
    ) -> uuid.UUID:
        """Add a job and return its id (the existing job's id for a known idempotency key).

        ``run_at`` must be timezone-aware. With ``conn``, the job is added in the caller's
        transaction: it exists only if that transaction commits.
        """
        check_aware(run_at, "run_at")
        check_text(job_type, "job_type")
        check_text(queue, "queue")
        check_text(idempotency_key, "idempotency_key")
        if payload is not None and not isinstance(payload, Mapping):
            # the same rule, and the same error, as jobq_enqueue's
            raise InvalidArgument(
                f"payload must be a JSON object, got {type(payload).__name__}: "
                "wrap the value in a dict"
            )
        params = {
            "job_type": job_type,
            "payload": dump_json({} if payload is None else payload, "payload"),
            "idempotency_key": idempotency_key,
            "max_attempts": max_attempts,
            "run_at": run_at,
            "priority": priority,
            "queue": queue,
        }
        rows = self._run(self._sql.enqueue, params, conn=conn, retry_serialization=True)
        job_id: uuid.UUID = rows[0]["id"]
        return job_id

    def enqueue_many(
        self,
        jobs: Sequence[Mapping[str, Any]],
        *,
        conn: psycopg.Connection[Any] | None = None,
    ) -> list[uuid.UUID]:
        """Add many jobs in one statement; returns their ids in input order.

        Each element has the keys of :meth:`enqueue` (``job_type`` required).
        """
        if isinstance(jobs, Mapping | str | bytes):
            raise TypeError("enqueue_many() takes a list of job dicts")
        elements: list[dict[str, Any]] = []
        for i, job in enumerate(jobs):
            if not isinstance(job, Mapping):
                raise TypeError(f"enqueue_many(): element {i} is not a dict: {job!r}")
            element = job if type(job) is dict else dict(job)
            run_at = element.get("run_at")
            if isinstance(run_at, datetime):
                check_aware(run_at, f"jobs[{i}].run_at")
                element = {**element, "run_at": run_at.isoformat()}
            elif run_at is not None:
                raise TypeError(f"jobs[{i}].run_at must be a datetime, got {run_at!r}")
            elements.append(element)
        if not elements:
            return []
        try:
            jobs_json = dump_json(elements, "jobs")  # one encoder pass for the whole batch
        except (TypeError, ValueError):
            for i, element in enumerate(elements):  # name the element at fault
                dump_json(element, f"jobs[{i}]")
            raise
        # The ids alone, in input order (no dict per row: a batch is often thousands of jobs).
        ids: list[uuid.UUID] = self._run(
            self._sql.enqueue_many,
            {"jobs": jobs_json},
            conn=conn,
            retry_serialization=True,
            row_factory=scalar_row,
        )
        return ids

    # -- working (thin wrappers; the Worker is the usual way to consume) ----------------------

    def dequeue(
        self,
        worker_id: str,
        job_types: Sequence[str] | None = None,
        batch_size: int = 1,
        lock_timeout: timedelta | float = timedelta(minutes=5),
        queues: Sequence[str] | None = None,
    ) -> list[Job]:
        """Claim up to ``batch_size`` jobs for ``worker_id``."""
        params = {
            "worker_id": worker_id,
            "job_types": None if job_types is None else list(job_types),
            "batch_size": batch_size,
            "lock_timeout": _interval(lock_timeout, "lock_timeout"),
            "queues": None if queues is None else list(queues),
        }
        jobs: list[Job] = self._run(self._sql.dequeue, params, row_factory=job_row)
        return jobs

    def complete(
        self,
        job_id: uuid.UUID,
        worker_id: str,
        attempt: int | None = None,
        *,
        result: Any = None,
    ) -> bool:
        """Mark a claimed job succeeded, keeping ``result`` (any JSON-serialisable value; None
        stores none); False when ``worker_id`` no longer holds the claim (nothing is stored)."""
        params = {
            "job_id": job_id,
            "worker_id": worker_id,
            "attempt": attempt,
            "result": dump_result(result),
        }
        return bool(self._run(self._sql.complete, params)[0]["completed"])

    def complete_many(
        self,
        job_ids: Sequence[uuid.UUID],
        worker_id: str,
        attempts: Sequence[int] | None = None,
        *,
        results: Sequence[Any] | None = None,
    ) -> int:
        """Mark many claimed jobs succeeded, each with its result (None for none); returns how
        many were still held."""
        if attempts is not None and len(attempts) != len(job_ids):
            raise ValueError("attempts must have one entry per job id")
        if results is not None and len(results) != len(job_ids):
            raise ValueError("results must have one entry per job id")
        params = {
            "job_ids": list(job_ids),
            "worker_id": worker_id,
            "attempts": None if attempts is None else list(attempts),
            "results": None if results is None else [dump_result(r) for r in results],
        }
        return int(self._run(self._sql.complete_many, params)[0]["completed"])

    def fail(
        self,
        job_id: uuid.UUID,
        worker_id: str,
        error: str,
        *,
        retry: bool = True,
        backoff: timedelta | float = timedelta(seconds=10),
        attempt: int | None = None,
    ) -> str | None:
        """Record a failed attempt; returns the new status, None when the claim was lost."""
        params = {
            "job_id": job_id,
            "worker_id": worker_id,
            "error": error,
            "retry": retry,
            "backoff": _interval(backoff, "backoff"),
            "attempt": attempt,
        }
        status: str | None = self._run(self._sql.fail, params)[0]["status"]
        return status

    def fail_many(
        self,
        job_ids: Sequence[uuid.UUID],
        worker_id: str,
        errors: Sequence[str],
        *,
        retries: Sequence[bool] | None = None,
        backoffs: Sequence[timedelta | float] | None = None,
        attempts: Sequence[int | None] | None = None,
    ) -> list[str | None]:
        """Record a failed attempt of many claimed jobs in one statement (one error, and
        optionally one retry flag, backoff and attempt, per job); returns the new status of
        each, in order, None where the claim was lost."""
        for name, values in (
            ("errors", errors),
            ("retries", retries),
            ("backoffs", backoffs),
            ("attempts", attempts),
        ):
            if values is not None and len(values) != len(job_ids):
                raise ValueError(f"{name} must have one entry per job id")
        params = {
            "job_ids": list(job_ids),
            "worker_id": worker_id,
            "errors": list(errors),
            "retries": None if retries is None else list(retries),
            "backoffs": None
            if backoffs is None
            else [_interval(b, f"backoffs[{i}]") for i, b in enumerate(backoffs)],
            "attempts": None if attempts is None else list(attempts),
        }
        return [row["status"] for row in self._run(self._sql.fail_many, params)]

    def heartbeat(self, worker_id: str, job_ids: Sequence[uuid.UUID]) -> int:
        """Renew the claims ``worker_id`` still holds; returns how many."""
        params = {"worker_id": worker_id, "job_ids": list(job_ids)}
        return int(self._run(self._sql.heartbeat, params)[0]["renewed"])

    def release(self, job_ids: Sequence[uuid.UUID], worker_id: str) -> int:
        """Give back claimed, never started jobs; returns how many were released."""
        params = {"job_ids": list(job_ids), "worker_id": worker_id}
        return int(self._run(self._sql.release, params)[0]["released"])

    # -- cancellation, results and waiting ---------------------------------------------------

    def cancel(
        self,
        job_ids: uuid.UUID | str | Iterable[uuid.UUID | str],
        reason: str | None = None,
        *,
        conn: psycopg.Connection[Any] | None = None,
    ) -> dict[uuid.UUID, str]:
        """Cancel jobs (``jobq_cancel``). A pending job is cancelled at once; a running one is
        asked to stop (its handler sees ``job.cancel_requested()`` turn true) and ends
        ``cancelled`` unless it completes first; a finished job is left alone.

        Returns the status of each known job after the call, in the order given:
        ``cancelled``, ``cancel_requested`` (running) or the finished status it already had;
        unknown ids are left out. ``reason`` is kept (``last_error`` of a job cancelled while
        pending). With ``conn``, in the caller's transaction.
        """
        ids = job_ids_of(job_ids, "job_ids")
        check_text(reason, "reason")
        rows = self._run(
            self._sql.cancel,
            {"job_ids": ids, "reason": reason},
            conn=conn,
            retry_serialization=True,  # a deadlock with a concurrent completion is retried
            row_factory=tuple_row,
        )
        found = dict(rows)
        return {job_id: found[job_id] for job_id in ids if job_id in found}

    def status(
        self, job_ids: uuid.UUID | str | Iterable[uuid.UUID | str]
    ) -> dict[uuid.UUID, JobStatus]:
        """How each known job stands now (``jobq_job_status``: status, attempts, result,
        last_error, finished_at, cancel_requested; no payload), in the order given; unknown ids
        are left out."""
        ids = job_ids_of(job_ids, "job_ids")
        return _in_order(ids, self._run(self._sql.job_status, {"job_ids": ids}))

    def wait(
        self,
        job_ids: uuid.UUID | str | Iterable[uuid.UUID | str],
        timeout: timedelta | float | None = 30.0,
        *,
        poll_interval: timedelta | float = WAIT_POLL_INTERVAL,
    ) -> dict[uuid.UUID, JobStatus]:
        """Wait until every known job of ``job_ids`` has finished (succeeded, failed,
        dead_letter, cancelled), or until ``timeout`` seconds have passed (None: no limit), and
        return their statuses at that moment, as :meth:`status` does. It never raises for a
        job that has not finished: look at ``status.finished``.

        It LISTENs on the installation's done channel, marks the jobs as awaited (so that
        their end is notified: ``jobq_await(ids, timeout => 0)``) and then reads the statuses;
        a job that finished before it listened is seen by that first read. It is woken by the
        notification of a job's end, and looks again every ``poll_interval`` seconds in case a
        notification was lost. It holds no transaction (nor any snapshot) while it waits. A
        DSN-made Queue waits on a connection of its own; ``Queue(pool)`` borrows one from the
        pool for the wait; ``Queue(connection)`` waits on that connection (holding the Queue's
        lock), and polls only when the connection is inside a transaction.
        """
        ids = job_ids_of(job_ids, "job_ids")
        limit = _seconds_or_none(timeout, "timeout")
        poll = _seconds_or_none(poll_interval, "poll_interval")
        if not poll:
            raise ValueError(f"poll_interval must be positive, got {poll_interval!r}")
        deadline = None if limit is None else time.monotonic() + limit
        if not ids:
            return {}
        with self._listener() as (conn, channel):
            if channel is None:  # the caller's transaction: a mark would lock the jobs' rows
                statuses = self._statuses(conn, self._sql.job_status, ids)
            else:
                statuses = self._statuses(conn, self._sql.await_, ids, timeout=timedelta(0))
            while True:
                unfinished = {str(i) for i, st in statuses.items() if not st.finished}
                if not unfinished:
                    return statuses
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    return statuses
                pause = poll if deadline is None else min(poll, deadline - now)
                if channel is None:
                    time.sleep(pause)
                else:
                    _next_wake(conn, channel, unfinished, pause)
                statuses = self._statuses(conn, self._sql.job_status, ids)

    def result(
        self,
        job_id: uuid.UUID | str,
        timeout: timedelta | float | None = 30.0,
        *,
        poll_interval: timedelta | float = WAIT_POLL_INTERVAL,
    ) -> Any:
        """Wait for the job (as :meth:`wait` does) and return what its handler returned (None
        when it returned nothing). Raises :class:`~pgq_client.JobFailed` (``status``,
        ``last_error``) when the job ended ``failed``, ``dead_letter`` or ``cancelled``,
        ``TimeoutError`` when it has not finished within ``timeout``, and
        :class:`~pgq_client.JobNotFound` for an unknown id."""
        (wanted,) = job_ids_of(job_id, "job_id")
        found = self.wait([wanted], timeout, poll_interval=poll_interval).get(wanted)
        if found is None:
            raise JobNotFound(f"no job {wanted}")
        if found.status == "succeeded":
            return found.result
        if found.finished:
            raise JobFailed(wanted, found.status, found.last_error)
        raise TimeoutError(
            f"job {wanted} has not finished within {timeout} s (status {found.status})"
        )

    @contextmanager
    def _listener(self) -> Iterator[tuple[psycopg.Connection[Any], str | None]]:
        """A connection for one wait, and the done channel it LISTENs on (None: it polls)."""
        if self._closed:
            raise JobqError("this Queue is closed")
        if self._pool is not None:
            with self._pool.connection() as conn:
                yield from self._listening(conn)
            return
        if self._conn is not None:
            with self._lock:
                conn = self._conn
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    self._check_compatible(conn)
                    yield conn, None  # LISTEN would take effect only at the caller's commit
                else:
                    yield from self._listening(conn)
            return
        with self._lock:
            conn = self._listeners.pop() if self._listeners else None
        if conn is None or conn.closed or conn.broken:
            conn = connect(self.dsn)
        try:
            yield from self._listening(conn)
        except BaseException:
            conn.close()
            raise
        with self._lock:
            if self._closed:
                conn.close()
            else:
                self._listeners.append(conn)

    def _listening(
        self, conn: psycopg.Connection[Any]
    ) -> Iterator[tuple[psycopg.Connection[Any], str | None]]:
        self._check_compatible(conn)
        channel = self._channel(conn)
        _execute(conn, _sql.listen(channel))
        try:
            yield conn, channel
        finally:
            if not conn.closed and not conn.broken:
                with translate_errors():
                    _execute(conn, _sql.unlisten(channel))

    def _channel(self, conn: psycopg.Connection[Any]) -> str:
        if self._done_channel is None:
            with translate_errors(), conn.cursor(row_factory=tuple_row) as cur:
                row = cur.execute(
                    _sql.EVENT_CHANNEL, {"schema": self.schema, "kind": _sql.DONE}
                ).fetchone()
                if not conn.autocommit and conn.info.transaction_status == (
                    psycopg.pq.TransactionStatus.INTRANS
                ):
                    conn.commit()
            self._done_channel = str(row[0]) if row else _sql.event_channel("public", _sql.DONE)
        return self._done_channel

    def _statuses(
        self,
        conn: psycopg.Connection[Any],
        query: sql.Composed,
        ids: list[uuid.UUID],
        timeout: timedelta | None = None,
    ) -> dict[uuid.UUID, JobStatus]:
        params: dict[str, Any] = {"job_ids": ids}
        if timeout is not None:
            params["timeout"] = timeout
        return _in_order(ids, _execute(conn, query, params))

    # -- administration -----------------------------------------------------------------------

    def requeue_dead_letter(self, job_id: uuid.UUID) -> bool:
        """Make a ``dead_letter``, ``failed`` or ``cancelled`` job pending again; False for any
        other job."""
        rows = self._run(self._sql.requeue_dead_letter, {"job_id": job_id})
        return bool(rows[0]["requeued"])

    def requeue_dead_letters(self, job_type: str | None = None, queue: str | None = None) -> int:
        """Requeue every ``dead_letter``/``failed``/``cancelled`` job (of a type, queue); returns
        how many."""
        rows = self._run(self._sql.requeue_dead_letters, {"job_type": job_type, "queue": queue})
        return int(rows[0]["requeued"])

    def dead_letters(
        self,
        job_type: str | None = None,
        queue: str | None = None,
        *,
        statuses: Sequence[str] = ("dead_letter", "failed"),
        limit: int = 100,
    ) -> list[Job]:
        """The jobs waiting for a human: ``dead_letter`` and ``failed`` (latest first)."""
        return self.list_jobs(statuses=statuses, job_type=job_type, queue=queue, limit=limit)

    def list_jobs(
        self,
        *,
        statuses: Sequence[str] | None = None,
        job_type: str | None = None,
        queue: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        """Jobs in ``statuses`` (None: all), of a type and queue, most recently changed first
        (``jobq_list_jobs``, admin)."""
        params = {
            "statuses": None if statuses is None else list(statuses),
            "job_type": job_type,
            "queue": queue,
            "max_rows": limit,
        }
        try:
            rows = self._run(self._sql.list_jobs, params)
        except NotMigrated as exc:
            raise NotMigrated(
                f"{exc.message} (listing jobs needs jobq_list_jobs; run `jobq migrate`)",
                sqlstate=exc.sqlstate,
            ) from exc
        return [Job.from_row(row) for row in rows]

    def get_job(self, job_id: uuid.UUID) -> Job | None:
        """The job with this id, or None (admin). Built on ``jobq_list_jobs``, so the server
        reads every job to find it: for an operator's look-up, not for a hot path."""
        rows = self._run(self._sql.get_job, {"job_id": job_id})
        return Job.from_row(rows[0]) if rows else None

    def stats(self) -> list[StatsRow]:
        """Job counts per queue, type and status."""
        return [StatsRow.from_row(row) for row in self._run(self._sql.stats, {})]

    def prune(
        self,
        older_than: timedelta | float = timedelta(days=7),
        statuses: Sequence[str] = ("succeeded",),
        *,
        batch_size: int | None = 10_000,
    ) -> int:
        """Delete finished jobs older than ``older_than``, in ``statuses`` (some of
        :data:`~pgq_client.models.FINISHED_STATUSES`); returns how many.

        In batches of ``batch_size`` (the oldest first), one statement each, until a batch
        comes back short: on a queue of its own connection each batch is a short transaction,
        so a prune of millions of jobs neither holds one long transaction nor writes its WAL in
        one burst. ``batch_size=None``: one statement for all of them.
        """
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1 or None, got {batch_size}")
        params = {
            "older_than": _interval(older_than, "older_than"),
            "statuses": list(statuses),
            "batch_size": batch_size,
        }
        total = 0
        while True:
            pruned = int(self._run(self._sql.prune, params)[0]["pruned"])
            total += pruned
            if batch_size is None or pruned < batch_size:
                return total

    def configure(self, *, max_payload_bytes: int | None = None) -> dict[str, Any]:
        """Change this installation's settings (None leaves one as it is); returns them all."""
        rows = self._run(self._sql.configure, {"max_payload_bytes": max_payload_bytes})
        settings: dict[str, Any] = rows[0]["settings"]
        return settings

    def health(self) -> list[HealthRow]:
        """Health findings (stuck jobs, waiting time, dead letters, VACUUM blockers)."""
        return [HealthRow.from_row(row) for row in self._run(self._sql.health, {})]

    def unserved_job_types(
        self, idle: timedelta | float = timedelta(minutes=15)
    ) -> list[UnservedJobType]:
        """Available jobs, per queue and job type, that no worker asked for within ``idle``
        (``jobq_unserved_job_types``): a misspelt job type, a queue no worker serves. Workers
        ask through their claims, in any language. Reads every available pending job."""
        rows = self._run(self._sql.unserved, {"idle": _interval(idle, "idle")})
        return [UnservedJobType(**row) for row in rows]

    # -- schedules ----------------------------------------------------------------------------

    def schedule(
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
        """Create or replace the periodic job ``name`` and return its next fire time.

        ``cron`` has five fields (minute hour day-of-month month day-of-week) or is an
        ``@hourly``/``@daily``/``@weekly``/``@monthly``/``@yearly`` shortcut, read as wall-clock
        time in the IANA ``timezone``. ``catch_up`` says what a tick does with fires nobody
        ticked in time: ``skip`` none, ``latest`` the most recent, ``all`` each (1,000 at most).
        A bad cron, zone or policy raises :class:`InvalidArgument` (22023) naming it.
        """
        check_text(name, "name")
        check_text(job_type, "job_type")
        check_text(queue, "queue")
        if payload is not None and not isinstance(payload, Mapping):
            raise InvalidArgument(
                f"payload must be a JSON object, got {type(payload).__name__}: "
                "wrap the value in a dict"
            )
        params = {
            "name": name,
            "cron": cron,
            "job_type": job_type,
            "payload": dump_json({} if payload is None else payload, "payload"),
            "timezone": timezone,
            "queue": queue,
            "priority": priority,
            "max_attempts": max_attempts,
            "catch_up": catch_up,
            "paused": paused,
        }
        next_run_at: datetime = self._run(self._sql.schedule, params)[0]["next_run_at"]
        return next_run_at

    def unschedule(self, name: str) -> bool:
        """Delete the schedule ``name``; whether it existed. Jobs it enqueued stay."""
        return bool(self._run(self._sql.unschedule, {"name": name})[0]["deleted"])

    def schedules(self) -> list[Schedule]:
        """Every schedule, by name, with its next fire (an instant and local wall-clock time)."""
        return [Schedule.from_row(row) for row in self._run(self._sql.schedules, {})]

    def tick(self) -> list[Fire]:
        """Fire the due schedules now (``jobq_tick``): one row per fire enqueued.

        Workers tick by themselves; this is for setups without a Worker (cron, a system timer).
        """
        return [Fire(**row) for row in self._run(self._sql.tick, {})]


def _execute(
    conn: psycopg.Connection[Any], query: sql.Composed, params: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One statement on a connection that may be outside autocommit: then in a transaction of
    its own, committed, so that the connection is idle again (notifications arrive only
    between transactions). Its rows as dicts."""
    with translate_errors():
        if conn.autocommit or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with conn.cursor(row_factory=dict_row) as cur:
                cur.execute(query, params)
                return cur.fetchall() if cur.description is not None else []
        with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            cur.execute(query, params)
            return cur.fetchall() if cur.description is not None else []


def _in_order(ids: list[uuid.UUID], rows: list[dict[str, Any]]) -> dict[uuid.UUID, JobStatus]:
    found = {row["id"]: JobStatus.from_row(row) for row in rows}
    return {job_id: found[job_id] for job_id in ids if job_id in found}


def _next_wake(
    conn: psycopg.Connection[Any], channel: str, unfinished: set[str], seconds: float
) -> None:
    """Until a notification on ``channel`` for one of the ``unfinished`` jobs (or one that
    says to check everything), or ``seconds``."""
    with translate_errors():
        # Notifications that came while a statement ran are kept by psycopg and come first.
        for note in conn.notifies(timeout=max(seconds, 0.0)):
            if note.channel == channel and (
                note.payload == _sql.CHECK_ALL or note.payload in unfinished
            ):
                return
