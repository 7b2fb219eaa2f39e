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
from typing import Any, Literal, TypeVar, cast

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
    job_ids_of,
    payload_json,
    seconds_or_none,
)
from ._pages import FoundJobs, find_jobs, function_privileges, jobs_page, queue_summary
from ._produce import MAX_BATCH, enqueue_call, enqueue_iter, enqueue_many
from ._sql import Query, Statements
from .errors import JobFailed, JobNotFound, NotMigrated
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
    ``_sql.DONE``). One row, the name (none when ``schema`` is not known)."""
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


def _settings(value: Any) -> dict[str, Any]:
    return dict(value)


def _statement(
    name: str, shape: Shape[T], *params: str, **checks: Callable[[Any, str], Any]
) -> Callable[..., Op[T]]:
    """The operation that sends statement ``name`` with its arguments, given in ``params``'
    order: each one named in ``checks`` is first checked (or converted) by it unless it is
    None; the result is the rows read as ``shape`` says."""
    row_factory, read = shape

    def op(s: Statements, *args: Any) -> Op[T]:
        values = dict(zip(params, args, strict=True))
        for key, check in checks.items():
            if values[key] is not None:
                values[key] = check(values[key], key)
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


def complete_many(
    s: Statements,
    job_ids: Sequence[uuid.UUID],
    worker_id: str,
    attempts: Sequence[int] | None,
    results: Sequence[Any] | None,
) -> Op[int]:
    _same_length(job_ids, attempts=attempts, results=results)
    rows = yield call(
        s.complete_many,
        job_ids=list(job_ids),
        worker_id=worker_id,
        attempts=None if attempts is None else list(attempts),
        results=None if results is None else [dump_result(r) for r in results],
    )
    return int(rows[0][0])


def fail_many(
    s: Statements,
    job_ids: Sequence[uuid.UUID],
    worker_id: str,
    errors: Sequence[str],
    retries: Sequence[bool] | None,
    backoffs: Sequence[timedelta | float] | None,
    attempts: Sequence[int | None] | None,
) -> Op[list[str | None]]:
    _same_length(job_ids, errors=errors, retries=retries, backoffs=backoffs, attempts=attempts)
    rows = yield call(
        s.fail_many,
        job_ids=list(job_ids),
        worker_id=worker_id,
        errors=list(errors),
        retries=None if retries is None else list(retries),
        backoffs=None
        if backoffs is None
        else [interval(b, f"backoffs[{i}]") for i, b in enumerate(backoffs)],
        attempts=None if attempts is None else list(attempts),
    )
    return [row[2] for row in rows]


def _same_length(job_ids: Sequence[uuid.UUID], **columns: Sequence[Any] | None) -> None:
    for name, values in columns.items():
        if values is not None and len(values) != len(job_ids):
            raise ValueError(f"{name} must have one entry per job id")


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


def _one_id(value: uuid.UUID | str, name: str) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise ValueError(f"{name}: {value!r} is not a job id (a UUID)") from None


add_dependencies = _statement(
    "add_dependencies", _value(int), "job_id", "depends_on",
    job_id=_one_id, depends_on=job_ids_of,
)
dependencies = _statement(
    "dependencies", _each(Dependency.from_row), "job_id", job_id=_one_id
)
job_graph = _statement("job_graph", _each(GraphNode.from_row), "job_id", job_id=_one_id)


# -- administration -----------------------------------------------------------------------------


requeue_dead_letter = _statement("requeue_dead_letter", _value(bool), "job_id")
requeue_dead_letters = _statement(
    "requeue_dead_letters", _value(int), "job_type", "queue", "include_cancelled",
    include_cancelled=_flag,
)


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


configure = _statement(
    "configure", _value(_settings), "max_payload_bytes", "metrics", metrics=_flag
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
        "payload": payload_json(payload),
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
