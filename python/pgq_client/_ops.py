"""What each method of ``Queue`` and ``AsyncQueue`` does, written once for both, and the
statements the Worker sends: the one operations layer every front end reaches the database
through.

The executors and the argument checks are in :mod:`._opcore`, the producing operations in
:mod:`._produce`; this module names them all, so that a front end imports ``_ops`` alone.
"""

from __future__ import annotations

import functools
import inspect
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, ParamSpec, TypeVar, cast

from psycopg.rows import BaseRowFactory, dict_row, tuple_row

from . import _sql
from ._opcore import (
    Call,
    Op,
    Pause,
    adrive,
    check_aware,
    check_text,
    drive,
    dump_json,
    dump_result,
    interval,
    job_id_of,
    job_ids_of,
    payload_json,
    seconds,
)
from ._produce import enqueue_call, enqueue_iter, enqueue_many
from ._sql import ROLE_PRIVILEGES, Query, Statements
from .errors import JobFailed, JobNotFound
from .models import (
    JOB_ACTIONS,
    Dependency,
    Fire,
    FoundJobs,
    Job,
    JobsPage,
    JobStatus,
    UnservedJobType,
    job_row,
)

__all__ = [  # what it takes from the modules below it, for a front end to import _ops alone
    "Call", "FoundJobs", "Op", "Pause", "adrive", "check_aware", "check_text", "drive",
    "dump_json", "dump_result", "enqueue_call", "enqueue_iter", "enqueue_many", "interval",
    "job_id_of", "job_ids_of",
]

T = TypeVar("T")
P = ParamSpec("P")

# Queue.wait: seconds between two looks at the jobs when no notification came (a notification
# lost with a connection, a job pruned meanwhile), unless the caller says otherwise.
WAIT_POLL_INTERVAL = 1.0


# -- working ------------------------------------------------------------------------------------


def call(query: Query, row_factory: BaseRowFactory[Any] = tuple_row, /, **params: Any) -> Call:
    """A statement of :class:`~._sql.Statements` with its named arguments, as its template
    names them (``call(s.release, job_ids=ids, worker_id=me)``): how the Worker builds the
    statements it sends on its own cursors, batches and pipelines. Rows come back as tuples
    unless said otherwise, whatever row factory a pool's connections set."""
    return Call(query, params, row_factory)


def channel_call(schema: str | None, kind: str | None = None) -> Call:
    """The channel of the installation in ``schema``, named by the server as jobq's functions
    name it: its wake-up channel, or that of ``kind`` events (``_sql.CANCEL_EVENT``,
    ``_sql.DONE``). One row, the name."""
    if kind is None:
        return call(_CHANNEL, schema=schema)
    return call(_EVENT_CHANNEL, schema=schema, kind=kind)


_CHANNEL, _EVENT_CHANNEL = _sql.CHANNEL.encode(), _sql.EVENT_CHANNEL.encode()

Shape = tuple[BaseRowFactory[Any], Callable[[list[Any], dict[str, Any]], T]]
"""How an operation reads its statement's rows: their row factory, and its result of them and
of the arguments sent."""


def one(convert: Callable[[Any], T]) -> Shape[T]:  # the one value of the one row
    return tuple_row, lambda rows, _: convert(rows[0][0])


def each(convert: Callable[[Any], T]) -> Shape[list[T]]:  # each row, by column name
    return dict_row, lambda rows, _: [convert(row) for row in rows]


def as_list(values: Iterable[Any], name: str) -> list[Any]:  # psycopg adapts lists to arrays
    return list(values)


def text(value: str, name: str) -> str:
    check_text(value, name)
    return value


def number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


def flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True, False or None, got {type(value).__name__}")
    return value


def _statement(
    name: str,
    shape: Shape[T],
    /,
    *params: str,
    whole: Callable[[dict[str, Any]], None] | None = None,
    retry: bool = False,
    **checks: Callable[[Any, str], Any],
) -> Callable[..., Op[T]]:
    """The operation that sends statement ``name`` with its arguments, given in ``params``'
    order: each one named in ``checks`` is first checked (or converted) by it unless it is
    None, then ``whole`` checks them together; the result is the rows read as ``shape`` says.
    ``retry``: as :attr:`Call.retry_serialization`."""
    row_factory, read = shape

    def op(s: Statements, *args: Any) -> Op[T]:
        values = dict(zip(params, args, strict=True))
        for key, check in checks.items():
            if values[key] is not None:
                values[key] = check(values[key], key)
        if whole is not None:
            whole(values)
        rows = yield Call(getattr(s, name), values, row_factory, retry)
        return read(rows, values)

    op.__name__ = op.__qualname__ = name
    return op


def sends(
    name: str,
    shape: Shape[T],
    /,
    *,
    whole: Callable[[dict[str, Any]], None] | None = None,
    renamed: Mapping[str, str] | None = None,
    retry: bool = False,
    **checks: Callable[[Any, str], Any],
) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """A method of ``Queue`` declared by its signature and docstring alone: it sends statement
    ``name`` with the method's arguments, by their names (``conn`` aside: the caller's
    connection; ``renamed``: the statement's name for an argument, ``{"limit": "max_rows"}``),
    checked as :func:`_statement` checks them, and returns the rows read as ``shape`` says.
    The one description of the operation, for Queue and AsyncQueue."""

    def declare(method: Callable[P, T]) -> Callable[P, T]:
        signature = inspect.signature(method)
        names = [p for p in signature.parameters if p not in ("self", "conn")]
        sent = [(renamed or {}).get(p, p) for p in names]
        op = _statement(name, shape, *sent, whole=whole, retry=retry, **checks)

        @functools.wraps(method)
        def send(client: Any, /, *args: Any, **kwargs: Any) -> Any:
            given = signature.bind(client, *args, **kwargs)
            given.apply_defaults()
            values = given.arguments
            return client._drive(op(client._sql, *map(values.get, names)), values.get("conn"))

        return cast(Callable[P, T], send)

    return declare


MAX_ROWS = {"limit": "max_rows"}  # a listing's limit, as jobq's functions name it


def _by_id(rows: list[Any], values: dict[str, Any]) -> Any:  # in the order of the ids sent
    return _in_order(values["job_ids"], rows)


JOB_STATUSES: Shape[dict[uuid.UUID, JobStatus]] = (dict_row, _by_id)
STATUSES: Shape[dict[uuid.UUID, str]] = (tuple_row, _by_id)
OUTCOMES: Shape[dict[uuid.UUID, str]] = (tuple_row, lambda rows, _: dict(rows))
JOBS: Shape[list[Job]] = (job_row, lambda rows, _: cast(list[Job], rows))
JOB_OR_NONE: Shape[Job | None] = (dict_row, lambda rows, _: Job.from_row(rows[0]) if rows else None)
NOTHING: Shape[None] = (tuple_row, lambda rows, _: None)
VALUE: Shape[Any] = (tuple_row, lambda rows, _: rows[0][0])
STATUS_OR_NONE = one(lambda status: None if status is None else str(status))
EACH_STATUS: Shape[list[str | None]] = (tuple_row, lambda rows, _: [row[2] for row in rows])
NAMES: Shape[dict[str, list[str]]] = (  # jobq_names' rows, by kind of name
    tuple_row, lambda rows, _: {k: [n for c, n in rows if c == k] for k in ("queue", "job_type")}
)


def results(values: Sequence[Any], name: str) -> list[str | None]:
    return [dump_result(value) for value in values]


def with_payload(values: dict[str, Any]) -> None:
    """No payload is an empty one, as for an enqueue."""
    values["payload"] = payload_json(values["payload"])


complete = _statement(
    "complete", one(bool), "job_id", "worker_id", "attempt", "result",
    result=lambda value, _: dump_result(value),
)


def same_length(values: dict[str, Any]) -> None:
    """Every array of a ``*_many`` call has one entry per job id."""
    for name, column in values.items():
        if name != "job_ids" and isinstance(column, list) and len(column) != len(values["job_ids"]):
            raise ValueError(f"{name} must have one entry per job id")


def intervals(values: Sequence[timedelta | float], name: str) -> list[timedelta]:
    return [interval(value, f"{name}[{i}]") for i, value in enumerate(values)]


# -- cancellation, results and waiting ---------------------------------------------------------


def wait_args(
    job_ids: uuid.UUID | str | Iterable[uuid.UUID | str],
    timeout: timedelta | float | None,
    poll_interval: timedelta | float,
) -> tuple[list[uuid.UUID], float | None, float]:
    """The checked arguments of a wait, before any connection is taken: the ids, the deadline
    (``time.monotonic()``; None: none) and the poll interval in seconds."""
    ids = job_ids_of(job_ids, "job_ids")
    limit = None if timeout is None else seconds(timeout, "timeout")
    poll = None if poll_interval is None else seconds(poll_interval, "poll_interval")
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
        rows = yield Call(s.status, {"job_ids": ids})
    statuses = _in_order(ids, rows)
    while True:
        unfinished = frozenset(str(i) for i, st in statuses.items() if not st.finished)
        if not unfinished:
            return statuses
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return statuses
        yield Pause(poll if deadline is None else min(poll, deadline - now), unfinished)
        rows = yield Call(s.status, {"job_ids": ids})
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


def _in_order(ids: list[uuid.UUID], rows: list[Any]) -> dict[uuid.UUID, Any]:
    """The jobs' rows by id, in the order of ``ids``: a JobStatus of each dict row, the status
    of each (id, status) row."""
    found = dict(
        (row["id"], JobStatus.from_row(row)) if isinstance(row, dict) else row for row in rows
    )
    return {job_id: found[job_id] for job_id in ids if job_id in found}


# -- what the Worker sends too, and administration ---------------------------------------------


dependencies = _statement(
    "dependencies", each(Dependency.from_row), "job_id", job_id=job_id_of
)
unserved_job_types = _statement(
    "unserved", each(UnservedJobType.from_row), "idle", idle=interval
)
tick = _statement("tick", each(Fire.from_row))

# What jobq_act_on_jobs does, by the name the CLI and the dashboard give it.
ACTIONS = JOB_ACTIONS


def action(value: str, name: str) -> str:
    if value not in ACTIONS:
        raise ValueError(f"{name} must be one of {', '.join(ACTIONS)}, got {value!r}")
    return value


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


# -- what a dashboard reads ---------------------------------------------------------------------


def one_more(size: int, name: str) -> int:
    """A page's size as sent: one more row than shown, whether a next page exists."""
    return size + 1


def aware(value: datetime, name: str) -> datetime:
    check_aware(value, name)
    return value


def split_after(values: dict[str, Any]) -> None:
    """A jobs page's cursor (``after``) as jobq_jobs_page takes it: a time and an id."""
    after = values.pop("after")
    values["after_at"], values["after_id"] = after if after else (None, None)


Row = dict[str, Any]


def _page(rows: list[Row], values: dict[str, Any]) -> tuple[list[Row], Row | None, Row | None]:
    """A page's rows (asked for one more than its size: whether a next page exists), the last
    one when there is a next page, and the row that marks where a filtered search stopped (a
    last row that does not match)."""
    size = values["max_rows"] - 1
    stopped = rows.pop() if rows and not rows[-1]["matches"] else None
    more = len(rows) > size
    rows = rows[:size]
    return rows, rows[-1] if more and rows else None, stopped


def _jobs_page(rows: list[Row], values: dict[str, Any]) -> JobsPage:
    rows, last, stopped = _page(rows, values)
    return JobsPage(
        rows,
        (last["sort_at"], last["id"]) if last else None,
        (stopped["sort_at"], stopped["id"]) if stopped else None,
    )


def _found_jobs(rows: list[Row], values: dict[str, Any]) -> FoundJobs:
    rows, last, stopped = _page(rows, values)
    return FoundJobs(
        rows,
        last["id"] if last else None,
        stopped["id"] if stopped else None,
        stopped["created_at"] if stopped else None,
    )


JOBS_PAGE: Shape[JobsPage] = (dict_row, _jobs_page)
FOUND_JOBS: Shape[FoundJobs] = (dict_row, _found_jobs)


def function_privileges(
    s: Statements, functions: Mapping[str, str]
) -> Op[tuple[str, dict[str, bool | None]]]:
    # The schema None (a client that has not found it yet) is put in by the client.
    params = {
        "names": list(functions), "signatures": list(functions.values()), "schema": s.schema
    }
    rows = yield Call(ROLE_PRIVILEGES, params)
    return str(rows[0]["role"]), {r["name"]: r["allowed"] for r in rows}
