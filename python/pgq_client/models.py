"""Typed rows returned by the jobq functions."""

from __future__ import annotations

import json
import operator
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

import psycopg
from psycopg.types.json import set_json_loads

from .statuses import FINISHED_STATUSES, STATUS_IS_FINISHED, STATUSES

if TYPE_CHECKING:
    from psycopg._cursor_base import BaseCursor

__all__ = [
    "FINISHED_STATUSES", "JOB_ACTIONS", "STATUSES", "STATUS_IS_FINISHED", "BulkSummary",
    "Dependency", "Fire", "FoundJobs", "GraphNode", "HealthRow", "Job", "JobStatus", "JobsPage",
    "Limit", "LimitUsage", "MetricSample", "RefusedBatch", "Schedule", "StatsRow",
    "UnservedJobType", "job_row", "load_json", "use_fast_json",
]

# What jobq_act_on_jobs does to the jobs it is given (its `action` argument).
JOB_ACTIONS = ("cancel", "requeue", "delete", "run_now")

R = TypeVar("R", bound="_Row")


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


class _Row:
    """What every row type shares: it is built from a row of its function by column name."""

    @classmethod
    def from_row(cls: type[R], row: Mapping[str, Any]) -> R:
        """Build one from a row (a dict); columns this client does not know are ignored."""
        names = _field_names(cast(type, cls))
        return cls(**{k: v for k, v in row.items() if k in names})


@dataclass(frozen=True)
class Job(_Row):
    """One row of ``jobq_jobs``, as ``jobq_dequeue`` returns it. ``attempts`` counts the claims
    so far, this one included: the attempt that ``jobq_complete``/``jobq_fail`` fence."""

    id: uuid.UUID
    queue: str
    job_type: str
    payload: Any
    idempotency_key: str | None
    status: str
    priority: int
    attempts: int
    max_attempts: int
    available_at: datetime
    locked_at: datetime | None
    locked_by: str | None
    last_error: str | None
    errors: list[dict[str, Any]] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    finished_at: datetime | None = None
    result: Any = None
    cancel_requested_at: datetime | None = None
    cancel_reason: str | None = None
    limit_group: str | None = None
    limit_key: str | None = None

    def dependencies(self) -> list[Dependency]:
        """The jobs this one depends on, each with its status and result (``jobq_dependencies``),
        read in a short transaction of its own: a fan-in handler combines what they returned.
        Only on a Job that a Worker hands to a handler."""
        reader = self.__dict__.get(_DEPENDENCY_READER)
        if reader is None:
            raise RuntimeError(
                "job.dependencies() reads through the Worker that runs the job; elsewhere call "
                "Queue.dependencies(job.id)"
            )
        return cast("list[Dependency]", reader(self.id))

    def cancel_requested(self) -> bool:
        """True once ``jobq_cancel`` asked this job to stop; in a running handler it turns true
        within one heartbeat interval. A handler that sees it should raise: the job then ends
        ``cancelled`` (returning completes it as usual)."""
        return self.cancel_requested_at is not None or _CANCEL_SEEN in self.__dict__

    def __str__(self) -> str:
        return f"Job({self.id} {self.job_type} attempt {self.attempts}/{self.max_attempts})"


_JOB_FIELDS = tuple(f.name for f in fields(Job))

# The attribute a Worker sets on a running Job when it learns of a cancel request: the Job is
# frozen for its data, but whether it was asked to stop changes while it runs.
_CANCEL_SEEN = "_jobq_cancel_seen"


# The attribute a Worker sets on a Job it hands to a handler: how job.dependencies() reads.
_DEPENDENCY_READER = "_jobq_dependency_reader"


def attach_dependency_reader(job: Job, reader: Callable[[uuid.UUID], list[Dependency]]) -> None:
    """Let ``job.dependencies()`` read through ``reader`` (the Worker's connection)."""
    object.__setattr__(job, _DEPENDENCY_READER, reader)


def mark_cancel_requested(job: Job) -> bool:
    """Record that ``job`` was asked to stop (what ``job.cancel_requested()`` then says);
    False when it was already marked."""
    if _CANCEL_SEEN in job.__dict__:
        return False
    object.__setattr__(job, _CANCEL_SEEN, True)
    return True


_new = object.__new__


def _job_of(values: Sequence[Any]) -> Job:
    """``Job(*values)``, without the frozen dataclass's ``__init__`` and its
    ``object.__setattr__`` per field, the larger part of decoding a claimed job. It relies on
    Job having no ``__post_init__`` and no ``__slots__`` (tests/python/test_rows.py)."""
    job: Job = _new(Job)
    job.__dict__.update(zip(_JOB_FIELDS, values, strict=True))
    return job


def job_row(cursor: BaseCursor[Any, Any]) -> Callable[[Sequence[Any]], Job]:
    """psycopg row factory: each row of ``jobq_jobs`` columns straight into a :class:`Job`, the
    columns looked up once per result; columns this client does not know are ignored."""
    names = [c.name for c in cursor.description or ()]
    if tuple(names) == _JOB_FIELDS:
        return _job_of
    if set(_JOB_FIELDS) <= set(names):
        pick = operator.itemgetter(*(names.index(name) for name in _JOB_FIELDS))
        return lambda values: _job_of(pick(values))
    positions = [(i, name) for i, name in enumerate(names) if name in _JOB_FIELDS]
    return lambda values: Job(**{name: values[i] for i, name in positions})


@dataclass(frozen=True)
class Dependency(_Row):
    """One row of ``jobq_dependencies()``: a job that another depends on, with its result."""

    id: uuid.UUID
    job_type: str
    status: str
    result: Any


@dataclass(frozen=True)
class GraphNode(_Row):
    """One row of ``jobq_job_graph()``: a job of a workflow and the ids of its dependencies."""

    id: uuid.UUID
    job_type: str
    status: str
    depends_on: list[uuid.UUID]


@dataclass(frozen=True)
class JobStatus(_Row):
    """One row of ``jobq_job_status()`` / ``jobq_await()``: a job, without its payload."""

    id: uuid.UUID
    status: str
    attempts: int
    result: Any
    last_error: str | None
    finished_at: datetime | None
    cancel_requested: bool

    @property
    def finished(self) -> bool:
        """succeeded, failed, dead_letter or cancelled: nothing will change it by itself."""
        return STATUS_IS_FINISHED.get(self.status, False)


@dataclass(frozen=True)
class StatsRow(_Row):
    """One row of ``jobq_stats()``: how many jobs of a type are in a status, in a queue."""

    queue: str
    job_type: str
    status: str
    jobs: int
    oldest_available_at: datetime | None


@dataclass(frozen=True)
class MetricSample(_Row):
    """One row of ``jobq_metrics()``: a Prometheus sample (name as exposed, labels, value)."""

    metric: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class HealthRow(_Row):
    """One finding of ``jobq_health()``: a check, its queue (if per queue), ok or warning."""

    check_name: str
    queue: str | None
    severity: str
    value: float
    detail: str


@dataclass(frozen=True)
class Schedule(_Row):
    """One row of ``jobq_schedules()``: a periodic job and its next fire, as an instant and as a
    naive wall-clock time in the schedule's ``timezone`` (``next_run_local``); its latest fire
    and the job it enqueued (None before the first)."""

    name: str
    cron: str
    timezone: str
    job_type: str
    payload: dict[str, Any]
    queue: str
    priority: int
    max_attempts: int
    catch_up: str
    paused: bool
    next_run_at: datetime
    next_run_local: datetime
    created_at: datetime
    updated_at: datetime
    last_fired_at: datetime | None = None
    last_job_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Limit(_Row):
    """One row of ``jobq_limits()``: the limits of each key of a group; None: no such limit."""

    limit_group: str
    max_running: int | None
    max_starts: int | None
    per: timedelta | None
    share: str = "fifo"


@dataclass(frozen=True)
class LimitUsage(_Row):
    """One row of ``jobq_limit_usage()``: what one key of a limited group uses now."""

    limit_group: str
    limit_key: str | None
    running: int
    max_running: int | None
    starts_in_window: int | None
    max_starts: int | None
    per: timedelta | None
    pending: int
    weight: float = 1.0


@dataclass(frozen=True)
class Fire(_Row):
    """One row of ``jobq_tick()``: a schedule's fire and the job it enqueued."""

    schedule: str
    fire_at: datetime
    job_id: uuid.UUID


@dataclass(frozen=True)
class UnservedJobType(_Row):
    """One row of ``jobq_unserved_job_types()``: available jobs no worker asked for recently."""

    queue: str
    job_type: str
    jobs: int
    oldest_available_at: datetime

    def describe(self) -> str:
        return (
            f"{self.jobs} job(s) of type {self.job_type!r} in queue {self.queue!r}, "
            f"available since {self.oldest_available_at.isoformat(sep=' ', timespec='seconds')}"
        )


@dataclass(frozen=True)
class RefusedBatch:
    """A batch of :meth:`Queue.enqueue_iter` refused as a whole: the jobs ``first`` to ``first +
    count - 1`` of the input, the error, and the input index of the ``job`` it names, if any."""

    first: int
    count: int
    error: Exception
    job: int | None = None


@dataclass(frozen=True)
class BulkSummary:
    """What :meth:`Queue.enqueue_iter` did: ``jobs`` enqueued in ``batches`` committed batches,
    the batches ``refused`` (with ``skip_refused=True``), and of ``jobs``, those ``existing``
    already: a job of the same job type and idempotency key, left as it is, was there when the
    batch's transaction began (with ``conn=``, the caller's), or an earlier job of the batch
    has the same."""

    jobs: int
    batches: int
    refused: tuple[RefusedBatch, ...] = ()
    existing: int = 0


class JobsPage(NamedTuple):
    """One page of :meth:`Queue.jobs_page`: its rows (dicts, as ``jobq_jobs_page`` returns
    them), the cursor (``sort_at``, ``id``) of the next page when there is one, and, when a
    filtered search of finished jobs stopped at its ``scan_limit``, the cursor to search on
    from (its ``sort_at``: how far back it searched)."""

    rows: list[dict[str, Any]]
    next_after: tuple[datetime, uuid.UUID] | None
    stopped_after: tuple[datetime, uuid.UUID] | None


class FoundJobs(NamedTuple):
    """One page of ``jobq_find_jobs``: its rows (dicts, newest first), the id to pass as
    ``after_id`` for the next page when there is one, and, when the search stopped at its
    ``scan_limit``, the id to search on from and the creation time it reached."""

    rows: list[dict[str, Any]]
    next_after: uuid.UUID | None
    stopped_after: uuid.UUID | None
    stopped_at: datetime | None


# -- decoding jsonb -------------------------------------------------------------------------------

_raw_decode = json.JSONDecoder().raw_decode


def load_json(data: str | bytes) -> Any:
    """``json.loads(data)`` of a ``json`` or ``jsonb`` value, faster (a claim decodes a payload
    and ``errors`` per job): the bytes are UTF-8, as the encoding guess of ``json.loads`` finds
    for any text PostgreSQL sends, and a ``jsonb`` value fills its text; ``[]`` and ``{}`` are
    not parsed. Anything else goes to ``json.loads``: the same value, the same error."""
    if data == b"[]":
        return []
    if data == b"{}":
        return {}
    try:
        text = data if isinstance(data, str) else data.decode("utf-8", "surrogatepass")
        value, end = _raw_decode(text)
    except ValueError:  # UnicodeDecodeError included
        return json.loads(data)
    if end != len(text):
        return json.loads(data)
    return value


def use_fast_json(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    """Have ``conn`` (one that jobq opened) decode ``json`` and ``jsonb`` with
    :func:`load_json`, unless the application set its own function globally with psycopg's
    ``set_json_loads`` (one that reads floats as ``Decimal``, say)."""
    jsonb = conn.adapters.types["jsonb"].oid
    chosen = getattr(conn.adapters.get_loader(jsonb, psycopg.pq.Format.TEXT), "_loads", None)
    if chosen is json.loads:  # psycopg's default (the attribute is psycopg's own)
        set_json_loads(load_json, context=conn)
