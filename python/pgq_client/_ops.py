"""What each method of ``Queue`` and ``AsyncQueue`` does, written once for both, and the
statements the Worker sends: the one operations layer every front end reaches the database
through.

The executors and the argument checks are in :mod:`._opcore`, the producing operations in
:mod:`._produce`; this module names them all, so that a front end imports ``_ops`` alone.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

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
    seconds_or_none,
)
from ._pages import FoundJobs, find_jobs, function_privileges, jobs_page
from ._produce import MAX_BATCH, enqueue_call, enqueue_iter, enqueue_many
from ._sql import Query, Statements
from .errors import JobFailed, JobNotFound
from .models import (
    JOB_ACTIONS,
    Dependency,
    Fire,
    GraphNode,
    HealthRow,
    Job,
    JobStatus,
    Limit,
    LimitUsage,
    MetricSample,
    Schedule,
    StatsRow,
    UnservedJobType,
    job_row,
)

__all__ = [
    "MAX_BATCH",
    "WAIT_POLL_INTERVAL",
    "Call",
    "FoundJobs",
    "Op",
    "Pause",
    "adrive",
    "check_aware",
    "check_text",
    "drive",
    "dump_json",
    "dump_result",
    "enqueue_call",
    "enqueue_iter",
    "enqueue_many",
    "find_jobs",
    "function_privileges",
    "interval",
    "job_ids_of",
    "jobs_page",
    "queue_summary",
]

T = TypeVar("T")

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

Shape = tuple[BaseRowFactory[Any], Callable[[list[Any]], T]]
"""How an operation reads its statement's rows: their row factory, and its result of them."""


def _value(convert: Callable[[Any], T]) -> Shape[T]:  # the one value of the one row
    return tuple_row, lambda rows: convert(rows[0][0])


def _each(convert: Callable[[Any], T]) -> Shape[list[T]]:  # each row, by column name
    return dict_row, lambda rows: [convert(row) for row in rows]


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def _as_list(values: Iterable[Any], name: str) -> list[Any]:  # psycopg adapts lists to arrays
    return list(values)


def _result(value: Any, name: str) -> str | None:
    return dump_result(value)


def _text(value: str, name: str) -> str:
    check_text(value, name)
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True, False or None, got {type(value).__name__}")
    return value


def _statement(
    name: str,
    shape: Shape[T],
    /,
    *params: str,
    whole: Callable[[dict[str, Any]], None] | None = None,
    **checks: Callable[[Any, str], Any],
) -> Callable[..., Op[T]]:
    """The operation that sends statement ``name`` with its arguments, given in ``params``'
    order: each one named in ``checks`` is first checked (or converted) by it unless it is
    None, then ``whole`` checks them together; the result is the rows read as ``shape`` says."""
    row_factory, read = shape

    def op(s: Statements, *args: Any) -> Op[T]:
        values = dict(zip(params, args, strict=True))
        for key, check in checks.items():
            if values[key] is not None:
                values[key] = check(values[key], key)
        if whole is not None:
            whole(values)
        rows = yield Call(getattr(s, name), values, row_factory)
        return read(rows)

    op.__name__ = op.__qualname__ = name
    return op


dequeue = _statement(
    "dequeue",
    (job_row, lambda rows: cast(list[Job], rows)),
    "worker_id", "job_types", "batch_size", "lock_timeout", "queues",
    job_types=_as_list, lock_timeout=interval, queues=_as_list,
)
complete = _statement(
    "complete", _value(bool), "job_id", "worker_id", "attempt", "result", result=_result
)
fail = _statement(
    "fail",
    _value(_optional_text),
    "job_id", "worker_id", "error", "retry", "backoff", "attempt",
    backoff=interval,
)
heartbeat = _statement("heartbeat", _value(int), "worker_id", "job_ids", job_ids=_as_list)
release = _statement("release", _value(int), "job_ids", "worker_id", job_ids=_as_list)


def _same_length(values: dict[str, Any]) -> None:
    """Every array of a ``*_many`` call has one entry per job id."""
    for name, column in values.items():
        if name != "job_ids" and isinstance(column, list) and len(column) != len(values["job_ids"]):
            raise ValueError(f"{name} must have one entry per job id")


def _results(values: Sequence[Any], name: str) -> list[str | None]:
    return [dump_result(value) for value in values]


def _intervals(values: Sequence[timedelta | float], name: str) -> list[timedelta]:
    return [interval(value, f"{name}[{i}]") for i, value in enumerate(values)]


complete_many = _statement(
    "complete_many",
    _value(int),
    "job_ids", "worker_id", "attempts", "results",
    job_ids=_as_list, attempts=_as_list, results=_results, whole=_same_length,
)
fail_many = _statement(
    "fail_many",
    (tuple_row, lambda rows: [row[2] for row in rows]),
    "job_ids", "worker_id", "errors", "retries", "backoffs", "attempts",
    job_ids=_as_list, errors=_as_list, retries=_as_list, backoffs=_intervals,
    attempts=_as_list, whole=_same_length,
)


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
    limit = seconds_or_none(timeout, "timeout")
    poll = seconds_or_none(poll_interval, "poll_interval")
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


# -- workflows ----------------------------------------------------------------------------------


add_dependencies = _statement(
    "add_dependencies", _value(int), "job_id", "depends_on",
    job_id=job_id_of, depends_on=job_ids_of,
)
dependencies = _statement(
    "dependencies", _each(Dependency.from_row), "job_id", job_id=job_id_of
)
job_graph = _statement("job_graph", _each(GraphNode.from_row), "job_id", job_id=job_id_of)


# -- administration -----------------------------------------------------------------------------


requeue_dead_letter = _statement("requeue_dead_letter", _value(bool), "job_id")
requeue_dead_letters = _statement(
    "requeue_dead_letters", _value(int), "job_type", "queue", "include_cancelled", "reason",
    include_cancelled=_flag,
)


list_jobs = _statement(
    "list_jobs", _each(Job.from_row), "statuses", "job_type", "queue", "max_rows",
    statuses=_as_list,
)


configure = _statement(
    "configure", _value(dict), "max_payload_bytes", "metrics", metrics=_flag
)
get_job = _statement(
    "get_job", (dict_row, lambda rows: Job.from_row(rows[0]) if rows else None), "job_id"
)
stats = _statement("stats", _each(StatsRow.from_row))
metrics = _statement("metrics", _each(MetricSample.from_row))
health = _statement("health", _each(HealthRow.from_row))
schedules = _statement("schedules", _each(Schedule.from_row))
limits = _statement("limits", _each(Limit.from_row))
limit_usage = _statement("limit_usage", _each(LimitUsage.from_row))
unserved_job_types = _statement(
    "unserved", _each(UnservedJobType.from_row), "idle", idle=interval
)
tick = _statement("tick", _each(Fire.from_row))
unschedule = _statement("unschedule", _value(bool), "name")
run_schedule = _statement(
    "schedule_run_now", _value(lambda job_id: cast("uuid.UUID | None", job_id)), "name"
)
set_limit = _statement(
    "set_limit",
    (tuple_row, lambda rows: None),
    "limit_group", "max_running", "max_starts", "per", "share",
    limit_group=_text, per=interval, share=_text,
)
set_weight = _statement(
    "set_weight",
    (tuple_row, lambda rows: None),
    "limit_group", "limit_key", "weight",
    limit_group=_text, limit_key=_text, weight=_number,
)
queues = _statement("queues", _each(dict))
pause = _statement("pause", _value(bool), "queue", "reason")
resume = _statement("resume", _value(bool), "queue")
workers_summary = _statement("workers_summary", _each(dict))
queue_summary = _statement("queue_summary", _each(dict), "recent", recent=interval)
audit_log = _statement("audit_log", _each(dict), "before_id", "max_rows")
error_summary = _statement(
    "error_summary", _each(dict), "since", "per_type", since=interval
)
throughput = _statement(
    "throughput", _each(dict), "since", "bucket", since=interval, bucket=interval
)
# The kinds of name jobq_names lists.
NAME_KINDS = ("queue", "job_type")
names = _statement(
    "names", (tuple_row, lambda rows: {k: [n for c, n in rows if c == k] for k in NAME_KINDS})
)

# What jobq_act_on_jobs does, by the name the CLI and the dashboard give it.
ACTIONS = JOB_ACTIONS


def act_on_jobs(
    s: Statements,
    action: str,
    job_ids: uuid.UUID | str | Iterable[uuid.UUID | str],
    reason: str | None,
) -> Op[dict[uuid.UUID, str]]:
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    ids = job_ids_of(job_ids, "job_ids")
    check_text(reason, "reason")
    rows = yield Call(
        s.act_on_jobs,
        {"action": action, "job_ids": ids, "reason": reason},
        tuple_row,
        retry_serialization=True,  # a cancel's deadlock with a concurrent completion
    )
    return dict(rows)


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


# -- schedules ----------------------------------------------------------------------------------


_schedule = _statement(
    "schedule",
    _value(lambda next_run_at: cast(datetime, next_run_at)),
    "name", "cron", "job_type", "payload", "timezone", "queue", "priority", "max_attempts",
    "catch_up", "paused",
    name=_text, job_type=_text, queue=_text, payload=lambda payload, _: payload_json(payload),
)


def schedule(
    s: Statements, name: str, cron: str, job_type: str, payload: Any, *rest: Any
) -> Op[datetime]:
    """``jobq_schedule``; no payload is an empty one, as for an enqueue."""
    return _schedule(s, name, cron, job_type, {} if payload is None else payload, *rest)
