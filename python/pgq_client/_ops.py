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
from typing import Any, Literal, TypeVar

from psycopg.rows import tuple_row

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
from ._pages import JobsPage, function_privileges, jobs_page, queue_summary
from ._produce import MAX_BATCH, enqueue_call, enqueue_iter, enqueue_many
from ._sql import Statements
from .errors import JobFailed, JobNotFound, NotMigrated
from .models import (
    Fire,
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
    "JobsPage",
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
# The ``*_call`` functions build the statements the Worker sends on its own cursors, in its own
# batches and pipelines, with values it has already encoded; the operations of Queue and
# AsyncQueue below send the same ones. Rows come back as tuples, whatever row factory a pool's
# connection kwargs set.


def claim_call(
    s: Statements,
    worker_id: str,
    job_types: Sequence[str] | None,
    batch_size: int,
    lock_timeout: timedelta | float,
    queues: Sequence[str] | None,
) -> Call:
    """A claim (``jobq_dequeue``), its rows :class:`Job`. The Worker builds it once and sets
    ``params["batch_size"]`` before each claim."""
    params = {
        "worker_id": worker_id,
        "job_types": None if job_types is None else list(job_types),
        "batch_size": batch_size,
        "lock_timeout": interval(lock_timeout, "lock_timeout"),
        "queues": None if queues is None else list(queues),
    }
    return Call(s.dequeue, params, job_row)


def complete_call(
    s: Statements, job_id: uuid.UUID, worker_id: str, attempt: int | None, result: str | None
) -> Call:
    """``jobq_complete`` of one job, ``result`` already JSON text; one row: whether it was."""
    params = {"job_id": job_id, "worker_id": worker_id, "attempt": attempt, "result": result}
    return Call(s.complete, params, tuple_row)


def complete_many_call(
    s: Statements,
    job_ids: list[uuid.UUID],
    worker_id: str,
    attempts: list[int] | None,
    results: list[str | None] | None,
) -> Call:
    """``jobq_complete_many``, results already JSON text; one row: how many were completed."""
    params = {"job_ids": job_ids, "worker_id": worker_id, "attempts": attempts, "results": results}
    return Call(s.complete_many, params, tuple_row)


def fail_many_call(
    s: Statements,
    job_ids: list[uuid.UUID],
    worker_id: str,
    errors: list[str],
    retries: list[bool] | None,
    backoffs: list[timedelta] | None,
    attempts: list[int | None] | None,
) -> Call:
    """``jobq_fail_many``: a row (ord, job_id, status) per job, in order."""
    params = {
        "job_ids": job_ids,
        "worker_id": worker_id,
        "errors": errors,
        "retries": retries,
        "backoffs": backoffs,
        "attempts": attempts,
    }
    return Call(s.fail_many, params, tuple_row)


def heartbeat_call(
    s: Statements, worker_id: str, job_ids: list[uuid.UUID], cancels: bool = False
) -> Call:
    """``jobq_heartbeat``: one row, how many claims were renewed, and with ``cancels`` the ids
    among ``job_ids`` that have a cancel request, in the same statement."""
    query = s.heartbeat_cancels if cancels else s.heartbeat
    return Call(query, {"worker_id": worker_id, "job_ids": job_ids}, tuple_row)


def cancel_requested_call(s: Statements, job_ids: list[uuid.UUID]) -> Call:
    """``jobq_cancel_requested``: a row per job of ``job_ids`` with a cancel request."""
    return Call(s.cancel_requested, {"job_ids": job_ids}, tuple_row)


def release_call(s: Statements, job_ids: list[uuid.UUID], worker_id: str) -> Call:
    """``jobq_release``: one row, how many jobs were released."""
    return Call(s.release, {"job_ids": job_ids, "worker_id": worker_id}, tuple_row)


def release_orphans_call(s: Statements, worker_id: str, held: list[uuid.UUID]) -> Call:
    """``jobq_release_orphans``: one row, how many jobs locked by ``worker_id`` and not in
    ``held`` were released."""
    return Call(s.release_orphans, {"worker_id": worker_id, "job_ids": held}, tuple_row)


def tick_call(s: Statements) -> Call:
    """``jobq_tick``: a row (schedule, fire_at, job_id) per fire."""
    return Call(s.tick, {}, tuple_row)


def unserved_call(s: Statements, idle: timedelta | float) -> Call:
    """``jobq_unserved_job_types``: rows of :class:`UnservedJobType`'s fields, in order."""
    return Call(s.unserved, {"idle": interval(idle, "idle")}, tuple_row)


def channel_call(schema: str | None, kind: str | None = None) -> Call:
    """The channel of the installation in ``schema``, named by the server as jobq's functions
    name it: its wake-up channel, or that of ``kind`` events (``_sql.CANCEL_EVENT``,
    ``_sql.DONE``). One row, the name (none when ``schema`` is not known)."""
    if kind is None:
        return Call(_CHANNEL, {"schema": schema}, tuple_row)
    return Call(_EVENT_CHANNEL, {"schema": schema, "kind": kind}, tuple_row)


_CHANNEL, _EVENT_CHANNEL = _sql.CHANNEL.encode(), _sql.EVENT_CHANNEL.encode()


def _rows(call: Call, convert: Callable[[Any], T]) -> Op[list[T]]:  # each row, converted
    rows = yield call
    return [convert(row) for row in rows]


def _value(call: Call, convert: Callable[[Any], T]) -> Op[T]:  # its one value, converted
    rows = yield call._replace(row_factory=tuple_row)
    return convert(rows[0][0])


def _listing(name: str, convert: Callable[[Any], T]) -> Callable[[Statements], Op[list[T]]]:
    """The operation of a function without arguments that returns rows (``stats()``...)."""

    def op(s: Statements) -> Op[list[T]]:
        return _rows(Call(getattr(s, name), {}), convert)

    op.__name__ = op.__qualname__ = name
    return op


def dequeue(
    s: Statements,
    worker_id: str,
    job_types: Sequence[str] | None,
    batch_size: int,
    lock_timeout: timedelta | float,
    queues: Sequence[str] | None,
) -> Op[list[Job]]:
    jobs: list[Job] = yield claim_call(s, worker_id, job_types, batch_size, lock_timeout, queues)
    return jobs


def complete(
    s: Statements, job_id: uuid.UUID, worker_id: str, attempt: int | None, result: Any
) -> Op[bool]:
    return _value(complete_call(s, job_id, worker_id, attempt, dump_result(result)), bool)


def complete_many(
    s: Statements,
    job_ids: Sequence[uuid.UUID],
    worker_id: str,
    attempts: Sequence[int] | None,
    results: Sequence[Any] | None,
) -> Op[int]:
    _same_length(job_ids, attempts=attempts, results=results)
    return _value(
        complete_many_call(
            s,
            list(job_ids),
            worker_id,
            None if attempts is None else list(attempts),
            None if results is None else [dump_result(r) for r in results],
        ),
        int,
    )


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
    _same_length(job_ids, errors=errors, retries=retries, backoffs=backoffs, attempts=attempts)
    waits = None
    if backoffs is not None:
        waits = [interval(b, f"backoffs[{i}]") for i, b in enumerate(backoffs)]
    rows = yield fail_many_call(
        s,
        list(job_ids),
        worker_id,
        list(errors),
        None if retries is None else list(retries),
        waits,
        None if attempts is None else list(attempts),
    )
    return [row[2] for row in rows]


def _same_length(job_ids: Sequence[uuid.UUID], **columns: Sequence[Any] | None) -> None:
    for name, values in columns.items():
        if values is not None and len(values) != len(job_ids):
            raise ValueError(f"{name} must have one entry per job id")


def heartbeat(s: Statements, worker_id: str, job_ids: Sequence[uuid.UUID]) -> Op[int]:
    return _value(heartbeat_call(s, worker_id, list(job_ids)), int)


def release(s: Statements, job_ids: Sequence[uuid.UUID], worker_id: str) -> Op[int]:
    return _value(release_call(s, list(job_ids), worker_id), int)


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


# -- administration -----------------------------------------------------------------------------


def requeue_dead_letter(s: Statements, job_id: uuid.UUID) -> Op[bool]:
    return _value(Call(s.requeue_dead_letter, {"job_id": job_id}), bool)


def requeue_dead_letters(
    s: Statements, job_type: str | None, queue: str | None, include_cancelled: bool
) -> Op[int]:
    args = {"job_type": job_type, "queue": queue, "include_cancelled": include_cancelled}
    return _value(Call(s.requeue_dead_letters, args), int)


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


stats = _listing("stats", StatsRow.from_row)
metrics = _listing("metrics", MetricSample.from_row)
health = _listing("health", HealthRow.from_row)
schedules = _listing("schedules", Schedule.from_row)
limits = _listing("limits", lambda row: Limit(**row))
limit_usage = _listing("limit_usage", lambda row: LimitUsage(**row))
queues = _listing("queues", dict)


def pause(s: Statements, queue: str, reason: str | None) -> Op[bool]:
    return _value(Call(s.pause, {"queue": queue, "reason": reason}), bool)


def resume(s: Statements, queue: str) -> Op[bool]:
    return _value(Call(s.resume, {"queue": queue}), bool)


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


def unserved_job_types(s: Statements, idle: timedelta | float) -> Op[list[UnservedJobType]]:
    return _rows(unserved_call(s, idle), lambda row: UnservedJobType(*row))


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


def unschedule(s: Statements, name: str) -> Op[bool]:
    return _value(Call(s.unschedule, {"name": name}), bool)


def tick(s: Statements) -> Op[list[Fire]]:
    return _rows(tick_call(s), lambda row: Fire(*row))


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

