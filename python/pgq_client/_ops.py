"""What each method of ``Queue`` and ``AsyncQueue`` does, written once for both.

An operation is a generator: it checks its arguments (raising before anything is sent), yields
the :class:`Call` (statement, parameters, row factory) it needs, receives the rows, and returns
the method's result, mapped into the client's types. It does no I/O of its own: ``Queue`` runs
its calls on a psycopg ``Connection`` and ``AsyncQueue`` on an ``AsyncConnection``, each with
:func:`drive` or :func:`adrive`, so that the argument checks, the statements and the mapping
of rows (and of errors an operation rewords) are the same code for both.

An operation may yield several calls (``prune`` in batches); an error of a call is thrown into
the generator, which may reword it or let it through. ``wait`` also yields :class:`Pause`: the
executor then waits for a notification on its listening connection (or sleeps).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple, TypeVar

from psycopg.rows import BaseRowFactory, dict_row, scalar_row, tuple_row

from ._sql import Query, Statements
from .errors import InvalidArgument, JobFailed, JobNotFound, JobqError, NotMigrated
from .models import (
    BulkSummary,
    Fire,
    HealthRow,
    Job,
    JobStatus,
    Limit,
    LimitUsage,
    MetricSample,
    RefusedBatch,
    Schedule,
    StatsRow,
    UnservedJobType,
    job_row,
)

__all__ = [
    "WAIT_POLL_INTERVAL",
    "Call",
    "Op",
    "Pause",
    "adrive",
    "check_aware",
    "check_text",
    "drive",
    "dump_json",
    "dump_result",
    "interval",
    "job_ids_of",
]

# Queue.wait: seconds between two looks at the jobs when no notification came (a notification
# lost with a connection, a job pruned meanwhile), unless the caller says otherwise.
WAIT_POLL_INTERVAL = 1.0

T = TypeVar("T")


class Call(NamedTuple):
    """One statement an operation needs run, and how.

    ``retry_serialization``: when the executor owns the transaction, a serialization failure
    is retried (an enqueue that met a concurrent one with the same idempotency key); in the
    caller's transaction (``conn=``) it never is. ``binary``: the rows come back in binary
    (psycopg's ``execute(binary=True)``), for results that are large arrays. A named tuple,
    not a frozen dataclass: one is built per call, and a frozen dataclass's constructor
    costs a microsecond (a setattr per field) on every single enqueue's path.
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
"""An operation: yields calls (and pauses), is sent each call's rows, returns the method's
result."""


def _no_pause(pause: Pause) -> None:
    raise AssertionError(f"this operation does not pause: {pause}")  # pragma: no cover


async def _no_apause(pause: Pause) -> None:
    raise AssertionError(f"this operation does not pause: {pause}")  # pragma: no cover


def drive(
    op: Op[T], run: Callable[[Call], list[Any]], pause: Callable[[Pause], None] = _no_pause
) -> T:
    """Run ``op`` to its result, each call with ``run`` and each pause with ``pause`` (the
    synchronous executor)."""
    try:
        step = next(op)
        while True:
            if isinstance(step, Pause):
                pause(step)
                step = op.send([])
                continue
            try:
                rows = run(step)
            except JobqError as exc:
                step = op.throw(exc)
            else:
                step = op.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result


async def adrive(
    op: Op[T],
    run: Callable[[Call], Awaitable[list[Any]]],
    pause: Callable[[Pause], Awaitable[None]] = _no_apause,
) -> T:
    """Run ``op`` to its result, each call and pause awaited (the asyncio executor)."""
    try:
        step = next(op)
        while True:
            if isinstance(step, Pause):
                await pause(step)
                step = op.send([])
                continue
            try:
                rows = await run(step)
            except JobqError as exc:
                step = op.throw(exc)
            else:
                step = op.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result


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
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a timedelta or a number of seconds, got {value!r}")
    return timedelta(seconds=value)


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


def _payload(payload: Any) -> str:
    if payload is not None and type(payload) is not dict and not isinstance(payload, Mapping):
        # the same rule, and the same error, as jobq_enqueue's
        raise InvalidArgument(
            f"payload must be a JSON object, got {type(payload).__name__}: "
            "wrap the value in a dict"
        )
    return dump_json({} if payload is None else payload, "payload")


# -- producing ----------------------------------------------------------------------------------


def enqueue_call(
    s: Statements,
    job_type: str,
    payload: Any,
    idempotency_key: str | None,
    run_at: datetime | None,
    priority: int,
    max_attempts: int,
    queue: str,
    limit_group: str | None = None,
    limit_key: str | None = None,
) -> Call:
    """The one statement of an enqueue (the client's checks raise here, before anything is
    sent); its one row is the id. Not an operation (a generator run by :func:`drive`) like the
    others: one statement needs no driver, and this is the path of every single enqueue,
    where each layer of Python adds to the latency (docs/performance.md)."""
    check_text(job_type, "job_type")
    # Only the arguments that differ from jobq_enqueue's defaults are sent (see
    # _sql.ENQUEUE_ARGUMENTS), and only they are checked (None and the defaults need no
    # check); the id comes back as a plain value, not a dict.
    params: dict[str, Any] = {"job_type": job_type, "payload": _payload(payload)}
    if idempotency_key is not None:
        check_text(idempotency_key, "idempotency_key")
        params["idempotency_key"] = idempotency_key
    if not _is_int(max_attempts, 5):
        params["max_attempts"] = max_attempts
    if run_at is not None:
        check_aware(run_at, "run_at")
        params["run_at"] = run_at
    if not _is_int(priority, 0):
        params["priority"] = priority
    if queue != "default":
        check_text(queue, "queue")
        params["queue"] = queue
    if limit_group is not None:
        check_text(limit_group, "limit_group")
        params["limit_group"] = limit_group
    if limit_key is not None:
        check_text(limit_key, "limit_key")
        params["limit_key"] = limit_key
    return Call(s.enqueue_with(tuple(params)), params, scalar_row, retry_serialization=True)


def _is_int(value: Any, default: int) -> bool:
    """Whether ``value`` is the int ``default`` itself (not True for 1, not 5.0 for 5)."""
    return type(value) is int and value == default


def enqueue_many(s: Statements, jobs: Sequence[Mapping[str, Any]]) -> Op[list[uuid.UUID]]:
    if isinstance(jobs, Mapping | str | bytes):
        raise TypeError("enqueue_many() takes a list of job dicts")
    elements = list(jobs)
    bad = _not_a_mapping(elements)
    if bad is not None:
        raise TypeError(f"enqueue_many(): element {bad} is not a dict: {elements[bad]!r}")
    ids: list[uuid.UUID] = yield from _enqueue_batch(s, elements, 0, True)
    return ids


def enqueue_iter(
    s: Statements,
    jobs: Iterable[Mapping[str, Any]],
    batch_size: int,
    skip_refused: bool,
    progress: Callable[[int], None] | None,
    read_ahead: bool = False,
) -> Op[BulkSummary]:
    """Enqueue ``jobs`` (any iterable, read lazily) in batches of ``batch_size``, each batch one
    statement and all-or-nothing; see Queue.enqueue_iter.

    With ``read_ahead`` (the sync client), the next batch is read from ``jobs`` and its
    statement built in a thread of its own while the server inserts the current one: a batch
    of 5,000 takes the client about as long to build as the server to insert, so overlapping
    them is most of what a bulk load can gain. Everything else is as without it: batches go
    in input order, one at a time, each error raised (or recorded) at its batch's turn."""
    if isinstance(jobs, Mapping | str | bytes):
        raise TypeError("enqueue_iter() takes an iterable of job dicts")
    if type(batch_size) is not int or not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be an int from 1 to {MAX_BATCH}, got {batch_size!r}")
    source = iter(jobs)

    def read(offset: int) -> tuple[list[Mapping[str, Any]], Call | Exception | None]:
        """The next batch, and its statement or why it is refused."""
        batch = list(itertools.islice(source, batch_size))
        try:
            bad = _not_a_mapping(batch)
            if bad is not None:
                raise TypeError(f"jobs[{offset + bad}] is not a dict: {batch[bad]!r}")
            return batch, _batch_call(s, batch, offset, False)
        except (InvalidArgument, TypeError, ValueError) as exc:
            return batch, exc

    enqueued = batches = offset = 0
    refused: list[RefusedBatch] = []
    upcoming = _in_thread(read, 0) if read_ahead else None
    try:
        while True:
            batch, call = upcoming() if upcoming is not None else read(offset)
            if not batch:
                break
            if read_ahead:
                upcoming = _in_thread(read, offset + len(batch))
            try:
                if isinstance(call, Exception):
                    raise call
                assert call is not None
                rows = yield call
            except (InvalidArgument, TypeError, ValueError) as exc:
                named = _job_named(exc, offset)
                if not skip_refused:
                    raise _in_batch(exc, offset, len(batch), named) from exc
                refused.append(RefusedBatch(offset, len(batch), exc, named))
            else:
                enqueued += int(rows[0])
                batches += 1
                if progress is not None:
                    progress(enqueued)
            offset += len(batch)
    except Exception:
        # Whatever ended the load, the read ahead ends before the caller gets control back:
        # it must not find ``jobs`` still being read in another thread.
        if upcoming is not None:
            with contextlib.suppress(Exception):  # its own error is not this one's
                upcoming()
        raise
    return BulkSummary(enqueued, batches, tuple(refused))


_R = TypeVar("_R")


def _in_thread(fn: Callable[[int], _R], arg: int) -> Callable[[], _R]:
    """Start ``fn(arg)`` in a daemon thread; the function returned waits for it and returns
    its result or raises its exception. A daemon thread, not an executor's: a read that
    blocks (``jobq enqueue --from -`` on a terminal) must not keep Ctrl-C from ending the
    process."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, fn(arg)))
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="jobq-enqueue-read-ahead", daemon=True)
    thread.start()

    def result() -> _R:
        thread.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    return result


# The largest batch: jobq_enqueue_many's and jobq_enqueue_arrays' bound.
MAX_BATCH = 100_000

_SERVER_ELEMENT = re.compile(r"element (\d+) \(counting from 1\)")
_CLIENT_ELEMENT = re.compile(r"jobs\[(\d+)\]")


def _job_named(exc: Exception, offset: int) -> int | None:
    """The input index of the job an error names: the server counts from 1 within the batch,
    the client's checks name jobs[i] of the whole input."""
    text = str(exc)
    if isinstance(exc, JobqError):
        found = _SERVER_ELEMENT.search(text)
        return None if found is None else offset + int(found.group(1)) - 1
    found = _CLIENT_ELEMENT.search(text)
    return None if found is None else int(found.group(1))


def _in_batch(exc: Exception, offset: int, count: int, job: int | None) -> Exception:
    """``exc`` of the same type, saying which batch was refused and that the earlier ones
    stay enqueued."""
    where = f"the batch of jobs {offset} to {offset + count - 1} (counting from 0) was refused"
    if job is not None:
        where += f" at job {job}"
    if offset:
        where += f"; the {offset} jobs before it are enqueued"
    message = f"{exc} ({where})"
    if isinstance(exc, JobqError):
        return type(exc)(message, sqlstate=exc.sqlstate)
    return type(exc)(message)


# The keys of a job in enqueue_many/enqueue_iter, and the Python types each takes on the array
# path (jobq_enqueue_arrays). A batch with anything else (another key, a value of another type)
# goes as one JSON document to jobq_enqueue_many, whose checks name the job and the key.
_ARRAY_KEYS = frozenset((
    "job_type", "payload", "idempotency_key", "max_attempts", "run_at", "priority", "queue",
    "limit_group", "limit_key",
))
_INT4_MIN, _INT4_MAX = -(2**31), 2**31 - 1
_NO_PAYLOAD: dict[str, Any] = {}  # a job without "payload" (never changed: compared by identity)
_DICT_ONLY, _STR_ONLY = frozenset((dict,)), frozenset((str,))


def _not_a_mapping(values: list[Any]) -> int | None:
    """The index of the first of ``values`` that is not a mapping, None when all are. Dicts are
    told by their type first, in C (the set of the values' types): ``isinstance(v, Mapping)``,
    an ABC check, is far dearer, and a batch is thousands of dicts."""
    if set(map(type, values)) <= _DICT_ONLY:
        return None
    return next((i for i, v in enumerate(values) if not isinstance(v, Mapping)), None)


def _enqueue_batch(
    s: Statements, elements: list[Mapping[str, Any]], offset: int, with_ids: bool
) -> Generator[Call, list[Any], list[Any]]:
    """One batch (one statement, one transaction unless the caller holds one): its ids in
    input order, or (``with_ids`` false) one row, how many jobs. Errors name jobs by their
    index in the whole input (``offset`` + index)."""
    if not elements:
        return []
    rows: list[Any] = yield _batch_call(s, elements, offset, with_ids)
    if with_ids:
        ids: list[uuid.UUID] = rows[0]  # one row: the ids as one array, in input order
        return ids
    return rows


def _batch_call(
    s: Statements, elements: list[Mapping[str, Any]], offset: int, with_ids: bool
) -> Call:
    """The statement of one batch of :func:`_enqueue_batch` (the client's checks raise here,
    before anything is sent)."""
    params = _array_params(elements, offset)
    if params is not None:
        query = s.enqueue_arrays if with_ids else s.enqueue_arrays_count
        return Call(query, params, scalar_row, retry_serialization=True, binary=with_ids)
    json_elements: list[Mapping[str, Any]] = []
    for i, element in enumerate(elements, offset):
        run_at = element.get("run_at")
        if isinstance(run_at, datetime):
            check_aware(run_at, f"jobs[{i}].run_at")
            element = {**element, "run_at": run_at.isoformat()}
        elif run_at is not None:
            raise TypeError(f"jobs[{i}].run_at must be a datetime, got {run_at!r}")
        json_elements.append(element)
    try:
        jobs_json = dump_json(json_elements, "jobs")  # one encoder pass for the whole batch
    except (TypeError, ValueError):
        for i, element in enumerate(json_elements, offset):  # name the element at fault
            dump_json(element, f"jobs[{i}]")
        raise
    # The ids alone, in input order (no dict per row: a batch is often thousands of jobs).
    query = s.enqueue_many if with_ids else s.enqueue_many_count
    return Call(query, {"jobs": jobs_json}, scalar_row, retry_serialization=True, binary=with_ids)


def _array_params(elements: list[Mapping[str, Any]], offset: int) -> dict[str, Any] | None:
    """The parameters of ENQUEUE_ARRAYS for these jobs, one list per column (None for a column
    no job sets), or None when a job has a key or a value type that only the JSON path takes.

    Column by column, in list comprehensions: at thousands of jobs per batch, a Python loop
    over each job's keys would cost as much as the server's insert. A column
    that no job names is not looked at job by job (most batches name job_type and payload
    alone).
    """
    present: set[Any] = set().union(*elements)  # every key any job names
    if not present <= _ARRAY_KEYS:
        return None
    job_types = [job.get("job_type") for job in elements]
    if not set(map(type, job_types)) <= _STR_ONLY:
        return None
    texts: list[list[Any]] = []
    params: dict[str, Any] = {"jobs": len(elements), "queue": None}
    _one_or_each(params, "job_type", "job_types", job_types, texts)
    for key, name, text_default in (
        ("idempotency_key", "idempotency_keys", None),
        ("queue", "queues", "default"),
        ("limit_group", "limit_groups", None),
        ("limit_key", "limit_keys", None),
    ):
        if key not in present:
            params[name] = None
            continue
        values = [job.get(key, text_default) for job in elements]
        if all(v == text_default for v in values):
            params[name] = None
        elif all(v is None or type(v) is str for v in values):
            if key == "queue":
                _one_or_each(params, "queue", "queues", values, texts)
            else:
                params[name] = values
                texts.append(values)
        else:
            return None
    for key, name, int_default in (
        ("max_attempts", "max_attempts", 5),
        ("priority", "priorities", 0),
    ):
        if key not in present:
            params[name] = None
            continue
        numbers = [job.get(key, int_default) for job in elements]
        if not all(type(v) is int and _INT4_MIN <= v <= _INT4_MAX for v in numbers):
            return None
        params[name] = None if all(v == int_default for v in numbers) else numbers
    run_ats = [job.get("run_at") for job in elements] if "run_at" in present else []
    if all(v is None for v in run_ats):
        params["run_ats"] = None
    elif all(v is None or isinstance(v, datetime) for v in run_ats):
        for i, v in enumerate(run_ats, offset):
            check_aware(v, f"jobs[{i}].run_at")
        params["run_ats"] = run_ats
    else:
        return None
    payloads = [job.get("payload", _NO_PAYLOAD) for job in elements] if "payload" in present else []
    if all(v is _NO_PAYLOAD for v in payloads):
        params["payloads"] = None
    elif _not_a_mapping(payloads) is None:
        try:
            params["payloads"] = dump_json(payloads, "jobs")
        except (TypeError, ValueError):
            for i, v in enumerate(payloads, offset):  # name the payload at fault
                dump_json(v, f"jobs[{i}].payload")
            raise
    else:
        return None
    for text_column in texts:  # what PostgreSQL text cannot hold, one pass per column
        _check_texts(text_column, offset)
    return params


def _one_or_each(
    params: dict[str, Any], one: str, each: str, values: list[Any], texts: list[list[Any]]
) -> None:
    """A text column as its one value when every job has the same (the statement repeats it in
    the server, array_fill), else as the list: psycopg dumps a list into a binary array in
    Python, element by element, a noticeable share of a batch's time. A column of NULLs goes
    as the list, for the server to refuse by the job's index."""
    if values and values[0] is not None and values.count(values[0]) == len(values):
        params[one], params[each] = values[0], None
        texts.append(values[:1])
    else:
        params[one], params[each] = None, values
        texts.append(values)


def _check_texts(values: list[str | None], offset: int) -> None:
    joined = "".join(v for v in values if v is not None)
    if "\x00" not in joined:
        try:
            joined.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return
    for i, v in enumerate(values, offset):  # name the job at fault
        check_text(v, f"jobs[{i}]")


# -- working ------------------------------------------------------------------------------------


def dequeue(
    s: Statements,
    worker_id: str,
    job_types: Sequence[str] | None,
    batch_size: int,
    lock_timeout: timedelta | float,
    queues: Sequence[str] | None,
) -> Op[list[Job]]:
    params = {
        "worker_id": worker_id,
        "job_types": None if job_types is None else list(job_types),
        "batch_size": batch_size,
        "lock_timeout": interval(lock_timeout, "lock_timeout"),
        "queues": None if queues is None else list(queues),
    }
    jobs: list[Job] = yield Call(s.dequeue, params, job_row)
    return jobs


def complete(
    s: Statements, job_id: uuid.UUID, worker_id: str, attempt: int | None, result: Any
) -> Op[bool]:
    params = {
        "job_id": job_id,
        "worker_id": worker_id,
        "attempt": attempt,
        "result": dump_result(result),
    }
    rows = yield Call(s.complete, params)
    return bool(rows[0]["completed"])


def complete_many(
    s: Statements,
    job_ids: Sequence[uuid.UUID],
    worker_id: str,
    attempts: Sequence[int] | None,
    results: Sequence[Any] | None,
) -> Op[int]:
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
    rows = yield Call(s.complete_many, params)
    return int(rows[0]["completed"])


def fail(
    s: Statements,
    job_id: uuid.UUID,
    worker_id: str,
    error: str,
    retry: bool,
    backoff: timedelta | float,
    attempt: int | None,
) -> Op[str | None]:
    params = {
        "job_id": job_id,
        "worker_id": worker_id,
        "error": error,
        "retry": retry,
        "backoff": interval(backoff, "backoff"),
        "attempt": attempt,
    }
    rows = yield Call(s.fail, params)
    status: str | None = rows[0]["status"]
    return status


def fail_many(
    s: Statements,
    job_ids: Sequence[uuid.UUID],
    worker_id: str,
    errors: Sequence[str],
    retries: Sequence[bool] | None,
    backoffs: Sequence[timedelta | float] | None,
    attempts: Sequence[int | None] | None,
) -> Op[list[str | None]]:
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
        else [interval(b, f"backoffs[{i}]") for i, b in enumerate(backoffs)],
        "attempts": None if attempts is None else list(attempts),
    }
    rows = yield Call(s.fail_many, params)
    return [row["status"] for row in rows]


def heartbeat(s: Statements, worker_id: str, job_ids: Sequence[uuid.UUID]) -> Op[int]:
    rows = yield Call(s.heartbeat, {"worker_id": worker_id, "job_ids": list(job_ids)})
    return int(rows[0]["renewed"])


def release(s: Statements, job_ids: Sequence[uuid.UUID], worker_id: str) -> Op[int]:
    rows = yield Call(s.release, {"job_ids": list(job_ids), "worker_id": worker_id})
    return int(rows[0]["released"])


# -- cancellation, results and waiting ---------------------------------------------------------


def cancel(
    s: Statements, job_ids: uuid.UUID | str | Iterable[uuid.UUID | str], reason: str | None
) -> Op[dict[uuid.UUID, str]]:
    ids = job_ids_of(job_ids, "job_ids")
    check_text(reason, "reason")
    rows = yield Call(
        s.cancel,
        {"job_ids": ids, "reason": reason},
        tuple_row,
        retry_serialization=True,  # a deadlock with a concurrent completion is retried
    )
    found = dict(rows)
    return {job_id: found[job_id] for job_id in ids if job_id in found}


def status(
    s: Statements, job_ids: uuid.UUID | str | Iterable[uuid.UUID | str]
) -> Op[dict[uuid.UUID, JobStatus]]:
    ids = job_ids_of(job_ids, "job_ids")
    rows = yield Call(s.job_status, {"job_ids": ids})
    return _in_order(ids, rows)


def wait_args(
    job_ids: uuid.UUID | str | Iterable[uuid.UUID | str],
    timeout: timedelta | float | None,
    poll_interval: timedelta | float,
) -> tuple[list[uuid.UUID], float | None, float]:
    """The checked arguments of a wait, before any connection is taken: the ids, the deadline
    (``time.monotonic()``; None: none) and the poll interval in seconds."""
    ids = job_ids_of(job_ids, "job_ids")
    limit = _seconds_or_none(timeout, "timeout")
    poll = _seconds_or_none(poll_interval, "poll_interval")
    if not poll:
        raise ValueError(f"poll_interval must be positive, got {poll_interval!r}")
    return ids, None if limit is None else time.monotonic() + limit, poll


def wait(
    s: Statements,
    ids: list[uuid.UUID],
    deadline: float | None,
    poll: float,
    listening: bool,
) -> Op[dict[uuid.UUID, JobStatus]]:
    """Until every known job of ``ids`` has finished, or ``deadline``. ``listening``: the
    executor LISTENs on the done channel, so the jobs are marked as awaited first
    (``jobq_await(ids, 0)``: their end is then notified); otherwise (the caller's transaction,
    where a mark would lock the jobs' rows) it only polls."""
    if not ids:
        return {}
    if listening:
        rows = yield Call(s.await_, {"job_ids": ids, "timeout": timedelta(0)})
    else:
        rows = yield Call(s.job_status, {"job_ids": ids})
    statuses = _in_order(ids, rows)
    while True:
        unfinished = frozenset(str(i) for i, st in statuses.items() if not st.finished)
        if not unfinished:
            return statuses
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return statuses
        yield Pause(poll if deadline is None else min(poll, deadline - now), unfinished)
        rows = yield Call(s.job_status, {"job_ids": ids})
        statuses = _in_order(ids, rows)


def result(job_id: uuid.UUID, found: JobStatus | None, timeout: object) -> Any:
    """What ``Queue.result`` returns for the job as a wait left it, or the error it raises."""
    if found is None:
        raise JobNotFound(f"no job {job_id}")
    if found.status == "succeeded":
        return found.result
    if found.finished:
        raise JobFailed(job_id, found.status, found.last_error)
    raise TimeoutError(
        f"job {job_id} has not finished within {timeout} s (status {found.status})"
    )


def _in_order(ids: list[uuid.UUID], rows: list[dict[str, Any]]) -> dict[uuid.UUID, JobStatus]:
    found = {row["id"]: JobStatus.from_row(row) for row in rows}
    return {job_id: found[job_id] for job_id in ids if job_id in found}


# -- administration -----------------------------------------------------------------------------


def requeue_dead_letter(s: Statements, job_id: uuid.UUID) -> Op[bool]:
    rows = yield Call(s.requeue_dead_letter, {"job_id": job_id})
    return bool(rows[0]["requeued"])


def requeue_dead_letters(s: Statements, job_type: str | None, queue: str | None) -> Op[int]:
    rows = yield Call(s.requeue_dead_letters, {"job_type": job_type, "queue": queue})
    return int(rows[0]["requeued"])


def list_jobs(
    s: Statements,
    statuses: Sequence[str] | None,
    job_type: str | None,
    queue: str | None,
    limit: int,
) -> Op[list[Job]]:
    params = {
        "statuses": None if statuses is None else list(statuses),
        "job_type": job_type,
        "queue": queue,
        "max_rows": limit,
    }
    try:
        rows = yield Call(s.list_jobs, params)
    except NotMigrated as exc:
        raise NotMigrated(
            f"{exc.message} (listing jobs needs jobq_list_jobs; run `jobq migrate`)",
            sqlstate=exc.sqlstate,
        ) from exc
    return [Job.from_row(row) for row in rows]


def get_job(s: Statements, job_id: uuid.UUID) -> Op[Job | None]:
    rows = yield Call(s.get_job, {"job_id": job_id})
    return Job.from_row(rows[0]) if rows else None


def stats(s: Statements) -> Op[list[StatsRow]]:
    rows = yield Call(s.stats, {})
    return [StatsRow.from_row(row) for row in rows]


def prune(
    s: Statements,
    older_than: timedelta | float,
    statuses: Sequence[str],
    batch_size: int | None,
) -> Op[int]:
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be at least 1 or None, got {batch_size}")
    params = {
        "older_than": interval(older_than, "older_than"),
        "statuses": list(statuses),
        "batch_size": batch_size,
    }
    total = 0
    while True:  # one call per batch: each its own short transaction (unless conn= is given)
        rows = yield Call(s.prune, params)
        pruned = int(rows[0]["pruned"])
        total += pruned
        if batch_size is None or pruned < batch_size:
            return total


def configure(
    s: Statements, max_payload_bytes: int | None, metrics: bool | None = None
) -> Op[dict[str, Any]]:
    if metrics is not None and not isinstance(metrics, bool):
        raise TypeError(f"metrics must be True, False or None, got {type(metrics).__name__}")
    rows = yield Call(s.configure, {"max_payload_bytes": max_payload_bytes, "metrics": metrics})
    settings: dict[str, Any] = rows[0]["settings"]
    return settings


def metrics(s: Statements) -> Op[list[MetricSample]]:
    rows = yield Call(s.metrics, {})
    return [MetricSample.from_row(row) for row in rows]


def health(s: Statements) -> Op[list[HealthRow]]:
    rows = yield Call(s.health, {})
    return [HealthRow.from_row(row) for row in rows]


def unserved_job_types(s: Statements, idle: timedelta | float) -> Op[list[UnservedJobType]]:
    rows = yield Call(s.unserved, {"idle": interval(idle, "idle")})
    return [UnservedJobType(**row) for row in rows]


# -- schedules ----------------------------------------------------------------------------------


def schedule(
    s: Statements,
    name: str,
    cron: str,
    job_type: str,
    payload: Any,
    timezone: str,
    queue: str,
    priority: int,
    max_attempts: int,
    catch_up: Literal["skip", "latest", "all"],
    paused: bool,
) -> Op[datetime]:
    check_text(name, "name")
    check_text(job_type, "job_type")
    check_text(queue, "queue")
    params = {
        "name": name,
        "cron": cron,
        "job_type": job_type,
        "payload": _payload(payload),
        "timezone": timezone,
        "queue": queue,
        "priority": priority,
        "max_attempts": max_attempts,
        "catch_up": catch_up,
        "paused": paused,
    }
    rows = yield Call(s.schedule, params)
    next_run_at: datetime = rows[0]["next_run_at"]
    return next_run_at


def unschedule(s: Statements, name: str) -> Op[bool]:
    rows = yield Call(s.unschedule, {"name": name})
    return bool(rows[0]["deleted"])


def schedules(s: Statements) -> Op[list[Schedule]]:
    rows = yield Call(s.schedules, {})
    return [Schedule.from_row(row) for row in rows]


def tick(s: Statements) -> Op[list[Fire]]:
    rows = yield Call(s.tick, {})
    return [Fire(**row) for row in rows]


# -- limits -------------------------------------------------------------------------------------


def set_limit(
    s: Statements,
    limit_group: str,
    max_running: int | None,
    max_starts: int | None,
    per: timedelta | float | None,
) -> Op[None]:
    check_text(limit_group, "limit_group")
    params = {
        "limit_group": limit_group,
        "max_running": max_running,
        "max_starts": max_starts,
        "per": None if per is None else interval(per, "per"),
    }
    yield Call(s.set_limit, params, tuple_row)


def limits(s: Statements) -> Op[list[Limit]]:
    rows = yield Call(s.limits, {})
    return [Limit(**row) for row in rows]


def limit_usage(s: Statements) -> Op[list[LimitUsage]]:
    rows = yield Call(s.limit_usage, {})
    return [LimitUsage(**row) for row in rows]
