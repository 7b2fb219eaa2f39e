"""``Queue``: enqueue jobs and administer a jobq installation, over psycopg's ``Connection``.
Each method builds the operation of :mod:`._ops` and drives it on this class's connection;
``AsyncQueue`` reuses these methods unchanged, on its own connection. A method that sends one
statement is declared by its signature and docstring, the statement and its checks named by
``@_ops.sends``, which supplies the body."""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal

import psycopg

from . import _ops
from ._conn import Statuses, SyncClient, execute
from ._opcore import step
from ._ops import WAIT_POLL_INTERVAL, job_ids_of
from .errors import SerializationFailure
from .models import (
    BulkSummary,
    Dependency,
    Fire,
    GraphNode,
    HealthRow,
    Job,
    JobsPage,
    Limit,
    LimitUsage,
    MetricSample,
    Schedule,
    StatsRow,
    UnservedJobType,
)

__all__ = ["Queue", "TxConnection"]


# ``conn=``: the caller's connection, a Connection for Queue, an AsyncConnection for AsyncQueue.
TxConnection = psycopg.Connection[Any] | psycopg.AsyncConnection[Any]


class Queue(SyncClient):
    """Enqueue jobs and administer a jobq installation (docs/python-api.md).

    ``Queue(dsn)`` opens (lazily) and owns one autocommit connection, shared by threads under a
    lock; ``Queue(connection)`` and ``Queue(pool)`` use the caller's, which stays theirs to close.
    ``Queue()`` takes ``JOBQ_DSN``, else ``DATABASE_URL``; ``Queue.embedded()`` uses the
    embedded PostgreSQL. ``schema`` None: the schema where the search_path finds jobq. Each call
    is its own short transaction, except with ``conn=`` (the caller's transaction) or on a given
    connection already in one.
    """

    _read_ahead: ClassVar[bool] = True  # enqueue_iter reads the next batch in a thread

    def _first(self, call: _ops.Call, conn: psycopg.Connection[Any] | None) -> Any:
        # One statement, run without _drive: every single enqueue's path.
        return self._run(call, conn)[0]

    def _run(self, call: _ops.Call, conn: psycopg.Connection[Any] | None) -> list[Any]:
        # A call on the client's own or given connection is written out here, not stepped
        # through Client._arun's coroutine: this is every enqueue's path, where each layer of
        # Python shows in the latency.
        if conn is not None or self._pool is not None or self._closed:
            return step(self._arun(call, conn))
        with self._lock:
            c, owns_tx = self._held_now()
            try:
                return execute(c, owns_tx, self._bound(call) if self._late else call)
            except SerializationFailure:
                if not (call.retry_serialization and owns_tx):
                    raise
        step(self._retry_pause(1))
        return step(self._arun(call, None, first=2))

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
        conn: TxConnection | None = None,
        limit_group: str | None = None,
        limit_key: str | None = None,
        depends_on: uuid.UUID | str | Iterable[uuid.UUID | str] | None = None,
        on_dependency_failure: str = "cancel",
    ) -> uuid.UUID:
        """Add a job and return its id (the existing job's id for a known idempotency key);
        with ``conn``, in the caller's transaction. ``run_at`` must be timezone-aware.
        ``depends_on``: jobs it waits for (it runs once they all succeeded);
        ``on_dependency_failure``: ``cancel``, ``run`` or ``wait`` when one of them fails."""
        if conn is not None:
            self._check_conn(conn)
        return self._first(  # type: ignore[no-any-return]
            _ops.enqueue_call(
                self._sql, job_type, payload, idempotency_key, run_at, priority, max_attempts,
                queue, limit_group, limit_key, depends_on, on_dependency_failure,
            ),
            conn,  # type: ignore[arg-type]
        )

    def enqueue_many(
        self,
        jobs: Sequence[Mapping[str, Any]],
        *,
        conn: TxConnection | None = None,
    ) -> list[uuid.UUID]:
        """Add many jobs in one statement, each a dict with the keys of :meth:`enqueue`;
        returns their ids in input order. A job's ``after`` lists the 1-based positions of
        other jobs of the list that it waits for: a whole graph in one call."""
        return self._drive(_ops.enqueue_many(self._sql, jobs), conn)

    def enqueue_iter(
        self,
        jobs: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 5000,
        skip_refused: bool = False,
        progress: Callable[[int], None] | None = None,
        conn: TxConnection | None = None,
    ) -> BulkSummary:
        """Add any number of jobs, read lazily from ``jobs``, in batches of ``batch_size`` (1 to
        100,000), one transaction each; a refused batch raises, unless ``skip_refused=True``
        records it in the :class:`BulkSummary` returned. ``progress(n)``: the running total."""
        if skip_refused and conn is not None:
            raise ValueError(
                "skip_refused=True needs a transaction per batch: it cannot be used with conn= "
                "(a refused batch aborts the caller's transaction)"
            )
        return self._drive(
            _ops.enqueue_iter(
                self._sql, jobs, batch_size, skip_refused, progress, self._read_ahead
            ),
            conn,
        )

    @_ops.sends(
        "add_dependencies", _ops.one(int), job_id=_ops.job_id_of, depends_on=_ops.job_ids_of
    )
    def add_dependencies(
        self,
        job_id: uuid.UUID | str,
        depends_on: uuid.UUID | str | Iterable[uuid.UUID | str],
        *,
        conn: TxConnection | None = None,
    ) -> int:
        """Make a job that is still waiting wait for more jobs too (a handler grafting work in
        front of a continuation); returns how many were added, 0 when it no longer waits."""

    def dependencies(self, job_id: uuid.UUID | str) -> list[Dependency]:
        """The jobs that ``job_id`` depends on, with their status and result."""
        return self._drive(_ops.dependencies(self._sql, job_id))

    @_ops.sends("job_graph", _ops.each(GraphNode.from_row), job_id=_ops.job_id_of)
    def job_graph(self, job_id: uuid.UUID | str) -> list[GraphNode]:
        """The workflow around a job: it, what it depends on and what depends on it,
        transitively, each with the ids of its dependencies (no payload or result)."""

    # -- working (the Worker is the usual way to consume) -------------------------------------

    @_ops.sends(
        "dequeue", _ops.JOBS, job_types=_ops.as_list, lock_timeout=_ops.interval,
        queues=_ops.as_list,
    )
    def dequeue(
        self,
        worker_id: str,
        job_types: Sequence[str] | None = None,
        batch_size: int = 1,
        lock_timeout: timedelta | float = timedelta(minutes=5),
        queues: Sequence[str] | None = None,
    ) -> list[Job]:
        """Claim up to ``batch_size`` jobs for ``worker_id``."""

    def complete(
        self,
        job_id: uuid.UUID,
        worker_id: str,
        attempt: int | None = None,
        *,
        result: Any = None,
    ) -> bool:
        """Mark a claimed job succeeded, keeping ``result`` (JSON-serialisable, None for
        none); False when ``worker_id`` no longer holds the claim."""
        return self._drive(_ops.complete(self._sql, job_id, worker_id, attempt, result))

    @_ops.sends(
        "complete_many", _ops.one(int), job_ids=_ops.as_list, attempts=_ops.as_list,
        results=_ops.results, whole=_ops.same_length,
    )
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

    @_ops.sends("fail", _ops.STATUS_OR_NONE, backoff=_ops.interval)
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

    @_ops.sends(
        "fail_many", _ops.EACH_STATUS, job_ids=_ops.as_list, errors=_ops.as_list,
        retries=_ops.as_list, backoffs=_ops.intervals, attempts=_ops.as_list,
        whole=_ops.same_length,
    )
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
        """Record a failed attempt of many claimed jobs in one statement; returns the new
        status of each, in order, None where the claim was lost."""

    @_ops.sends("heartbeat", _ops.one(int), job_ids=_ops.as_list)
    def heartbeat(self, worker_id: str, job_ids: Sequence[uuid.UUID]) -> int:
        """Renew the claims ``worker_id`` still holds; returns how many."""

    @_ops.sends("release", _ops.one(int), job_ids=_ops.as_list)
    def release(self, job_ids: Sequence[uuid.UUID], worker_id: str) -> int:
        """Give back claimed, never started jobs; returns how many were released."""

    # -- cancellation, results and waiting ---------------------------------------------------

    @_ops.sends(
        "cancel", _ops.STATUSES, job_ids=_ops.job_ids_of, reason=_ops.text,
        retry=True,  # a deadlock with a concurrent completion is retried
    )
    def cancel(
        self,
        job_ids: uuid.UUID | str | Iterable[uuid.UUID | str],
        reason: str | None = None,
        *,
        conn: TxConnection | None = None,
    ) -> dict[uuid.UUID, str]:
        """Cancel jobs: a pending one at once, a running one is asked to stop; returns the status
        of each known job after the call. With ``conn``, in the caller's transaction."""

    @_ops.sends("status", _ops.JOB_STATUSES, job_ids=_ops.job_ids_of)
    def status(
        self, job_ids: uuid.UUID | str | Iterable[uuid.UUID | str]
    ) -> Statuses:
        """How each known job stands now, in the order given; unknown ids are left out."""

    def wait(
        self,
        job_ids: uuid.UUID | str | Iterable[uuid.UUID | str],
        timeout: timedelta | float | None = 30.0,
        *,
        poll_interval: timedelta | float = WAIT_POLL_INTERVAL,
    ) -> Statuses:
        """Wait until every known job of ``job_ids`` has finished, or ``timeout`` seconds (None:
        no limit), and return their statuses then, as :meth:`status` does; woken by a
        notification, it looks again every ``poll_interval`` seconds and holds no transaction."""
        return self._waited(*_ops.wait_args(job_ids, timeout, poll_interval), lambda st: st)

    def result(
        self,
        job_id: uuid.UUID | str,
        timeout: timedelta | float | None = 30.0,
        *,
        poll_interval: timedelta | float = WAIT_POLL_INTERVAL,
    ) -> Any:
        """Wait for the job as :meth:`wait` does and return what its handler returned; raises
        :class:`~pgq_client.JobFailed`, ``TimeoutError`` or :class:`~pgq_client.JobNotFound`."""
        (wanted,) = job_ids_of(job_id, "job_id")
        ids, deadline, poll = _ops.wait_args([wanted], timeout, poll_interval)
        return self._waited(
            ids, deadline, poll, lambda found: _ops.result(wanted, found.get(wanted), timeout)
        )

    # -- administration -----------------------------------------------------------------------

    @_ops.sends("requeue_dead_letter", _ops.one(bool))
    def requeue_dead_letter(self, job_id: uuid.UUID) -> bool:
        """Make a ``dead_letter``, ``failed`` or ``cancelled`` job pending again; False for any
        other job."""

    @_ops.sends("requeue_dead_letters", _ops.one(int), include_cancelled=_ops.flag)
    def requeue_dead_letters(
        self,
        job_type: str | None = None,
        queue: str | None = None,
        include_cancelled: bool = False,
        reason: str | None = None,
    ) -> int:
        """Requeue every ``dead_letter``/``failed`` job (of a type, queue), ``cancelled`` ones
        too with ``include_cancelled``; returns how many. Recorded in the audit log, with
        ``reason``."""

    @_ops.sends(
        "list_jobs", _ops.each(Job.from_row), statuses=_ops.as_list, renamed=_ops.MAX_ROWS
    )
    def dead_letters(
        self,
        job_type: str | None = None,
        queue: str | None = None,
        *,
        statuses: Sequence[str] = ("dead_letter", "failed"),
        limit: int = 100,
    ) -> list[Job]:
        """The jobs waiting for a human: ``dead_letter`` and ``failed`` (latest first)."""

    @_ops.sends(
        "list_jobs", _ops.each(Job.from_row), statuses=_ops.as_list, renamed=_ops.MAX_ROWS
    )
    def list_jobs(
        self,
        *,
        statuses: Sequence[str] | None = None,
        job_type: str | None = None,
        queue: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        """Jobs in ``statuses`` (None: all), most recently changed first (admin)."""

    @_ops.sends("get_job", _ops.JOB_OR_NONE)
    def get_job(self, job_id: uuid.UUID) -> Job | None:
        """The job with this id, or None (admin)."""

    @_ops.sends(
        "find_jobs", _ops.FOUND_JOBS, job_id=_ops.job_id_of, after_id=_ops.job_id_of,
        idempotency_key=_ops.text, job_type=_ops.text, queue=_ops.text,
        created_after=_ops.aware, created_before=_ops.aware, finished_after=_ops.aware,
        finished_before=_ops.aware, statuses=_ops.as_list, payload_contains=_ops.dump_json,
        max_rows=_ops.one_more, renamed=_ops.MAX_ROWS,
    )
    def find_jobs(
        self,
        *,
        job_id: uuid.UUID | str | None = None,
        idempotency_key: str | None = None,
        job_type: str | None = None,
        queue: str | None = None,
        statuses: Sequence[str] | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        finished_after: datetime | None = None,
        finished_before: datetime | None = None,
        payload_contains: Any = None,
        after_id: uuid.UUID | str | None = None,
        limit: int = 50,
        scan_limit: int = 10_000,
    ) -> _ops.FoundJobs:
        """Jobs, live and finished, that match every filter given (``jobq_find_jobs``), newest
        first: times as ``[after, before)``, ``payload_contains`` (admin) as ``payload @>``
        it, ``after_id`` the previous page's ``next_after``. Beyond an id or key look-up, at
        most ``scan_limit`` jobs are examined per page (admin, monitor)."""

    @_ops.sends(
        "act_on_jobs", _ops.OUTCOMES, action=_ops.action, job_ids=_ops.job_ids_of,
        reason=_ops.text, retry=True,  # a cancel's deadlock with a concurrent completion
    )
    def act_on_jobs(
        self,
        action: Literal["cancel", "requeue", "delete", "run_now"],
        job_ids: uuid.UUID | str | Iterable[uuid.UUID | str],
        reason: str | None = None,
    ) -> dict[uuid.UUID, str]:
        """Cancel, requeue, delete (finished jobs) or run now (pending ones) the given jobs,
        recorded in the audit log with ``reason`` (``jobq_act_on_jobs``, admin); each id's
        outcome ("requeued", "left alone: pending", "unknown", ...)."""

    @_ops.sends("audit_log", _ops.each(dict), renamed=_ops.MAX_ROWS)
    def audit_log(self, before_id: int | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The actions recorded by :meth:`act_on_jobs`, newest first (``jobq_audit_log``,
        admin); ``before_id``: the id of the previous page's last row."""

    @_ops.sends("error_summary", _ops.each(dict), since=_ops.interval)
    def error_summary(
        self, since: timedelta | float = timedelta(hours=1), per_type: int = 5
    ) -> list[dict[str, Any]]:
        """The most frequent errors of each job type within ``since``: ``job_type``,
        ``error`` (the exception line), ``failures``, ``jobs``, ``last_seen``
        (``jobq_error_summary``, admin)."""

    @_ops.sends("stats", _ops.each(StatsRow.from_row))
    def stats(self) -> list[StatsRow]:
        """Job counts per queue, type and status."""

    def prune(
        self,
        older_than: timedelta | float = timedelta(days=7),
        statuses: Sequence[str] = ("succeeded",),
        *,
        batch_size: int | None = 10_000,
    ) -> int:
        """Delete finished jobs older than ``older_than`` in ``statuses``; returns how many. In
        batches of ``batch_size``, each its own transaction (None: one statement)."""
        return self._drive(_ops.prune(self._sql, older_than, statuses, batch_size))

    @_ops.sends("configure", _ops.one(dict), metrics=_ops.flag)
    def configure(
        self, *, max_payload_bytes: int | None = None, metrics: bool | None = None
    ) -> dict[str, Any]:
        """Change this installation's settings (None leaves one as it is); returns them all."""

    @_ops.sends("metrics", _ops.each(MetricSample.from_row))
    def metrics(self) -> list[MetricSample]:
        """The Prometheus samples of ``jobq_metrics()`` (monitor, admin)."""

    @_ops.sends("health", _ops.each(HealthRow.from_row))
    def health(self) -> list[HealthRow]:
        """Health findings (stuck jobs, waiting time, dead letters, VACUUM blockers)."""

    def unserved_job_types(
        self, idle: timedelta | float = timedelta(minutes=15)
    ) -> list[UnservedJobType]:
        """Available jobs, per queue and job type, that no worker asked for within ``idle``."""
        return self._drive(_ops.unserved_job_types(self._sql, idle))

    # -- schedules ----------------------------------------------------------------------------

    @_ops.sends(
        "schedule", _ops.VALUE, name=_ops.text, job_type=_ops.text, queue=_ops.text,
        whole=_ops.with_payload,
    )
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
        """Create or replace the periodic job ``name`` (five cron fields or ``@daily`` and the
        like, in the IANA ``timezone``) and return its next fire time."""

    @_ops.sends("unschedule", _ops.one(bool))
    def unschedule(self, name: str) -> bool:
        """Delete the schedule ``name``; whether it existed. Jobs it enqueued stay."""

    @_ops.sends("run_schedule", _ops.VALUE)
    def run_schedule(self, name: str) -> uuid.UUID | None:
        """Fire the schedule ``name`` now, as a tick fires it (its ``last_job_id`` becomes the
        job); the job's id, or None when there is no such schedule."""

    @_ops.sends("schedules", _ops.each(Schedule.from_row))
    def schedules(self) -> list[Schedule]:
        """Every schedule, by name, with its next fire (an instant and local wall-clock time)."""

    def tick(self) -> list[Fire]:
        """Fire the due schedules now (a Worker ticks by itself), one row per fire enqueued."""
        return self._drive(_ops.tick(self._sql))

    # -- limits -------------------------------------------------------------------------------

    @_ops.sends(
        "set_limit", _ops.NOTHING, limit_group=_ops.text, per=_ops.interval, share=_ops.text
    )
    def set_limit(
        self,
        limit_group: str,
        max_running: int | None = None,
        max_starts: int | None = None,
        per: timedelta | float | None = None,
        share: str | None = None,
    ) -> None:
        """Set the limits of ``limit_group`` (admin): per limit_key, at most ``max_running`` jobs
        at once and ``max_starts`` started within any ``per``; ``share`` orders the keys at equal
        priority: ``"fifo"`` (None), ``"round_robin"`` or ``"weighted"``. All None removes them."""

    @_ops.sends(
        "set_weight", _ops.NOTHING, limit_group=_ops.text, limit_key=_ops.text,
        weight=_ops.number,
    )
    def set_weight(self, limit_group: str, limit_key: str | None, weight: float = 1.0) -> None:
        """Set the weight of one key of ``limit_group`` (admin; ``limit_key`` None: its jobs
        without a key): under ``share="weighted"`` keys start jobs in proportion to weights."""

    @_ops.sends("limits", _ops.each(Limit.from_row))
    def limits(self) -> list[Limit]:
        """The limits set, one per limited group, by group (admin)."""

    @_ops.sends("limit_usage", _ops.each(LimitUsage.from_row))
    def limit_usage(self) -> list[LimitUsage]:
        """What each key of a limited group uses now (admin)."""

    @_ops.sends("pause", _ops.one(bool))
    def pause(self, queue: str, reason: str | None = None) -> bool:
        """Stop the claims of ``queue`` until :meth:`resume` (``jobq_pause``, admin); False when
        it was paused already."""

    @_ops.sends("resume", _ops.one(bool))
    def resume(self, queue: str) -> bool:
        """Let ``queue`` be claimed again and wake the workers (``jobq_resume``, admin); False
        when it was not paused."""

    @_ops.sends("queues", _ops.each(dict))
    def queues(self) -> list[dict[str, Any]]:
        """Each queue with live jobs or a pause: ``queue``, ``paused``, ``paused_at``,
        ``reason``, ``pending``, ``processing`` (``jobq_queues``, admin)."""

    # -- what a dashboard reads ---------------------------------------------------------------

    @_ops.sends("queue_summary", _ops.each(dict), recent=_ops.interval)
    def queue_summary(
        self, recent: timedelta | float = timedelta(minutes=5)
    ) -> list[dict[str, Any]]:
        """Per queue: jobs ``available``, ``scheduled``, ``processing``, ``failed``,
        ``dead_letter``, ``cancelled``, ``oldest_available_at``, how many succeeded within
        ``recent`` (``succeeded_recent``) and ``paused`` (``jobq_queue_summary``, monitor)."""

    @_ops.sends(
        "jobs_page", _ops.JOBS_PAGE, queue=_ops.text, job_type=_ops.text,
        max_rows=_ops.one_more, renamed={"size": "max_rows"}, whole=_ops.split_after,
    )
    def jobs_page(
        self,
        status: str,
        *,
        queue: str | None = None,
        job_type: str | None = None,
        after: tuple[datetime, uuid.UUID] | None = None,
        size: int = 50,
        scan_limit: int = 10_000,
    ) -> JobsPage:
        """One page of at most ``size`` jobs in ``status`` (``jobq_jobs_page``, monitor; no
        payload, result or error text for a monitor), after the cursor ``after`` (the
        ``next_after`` of the page before). A filtered search of finished jobs examines at most
        ``scan_limit`` of them and says where it stopped."""

    @_ops.sends("workers_summary", _ops.each(dict))
    def workers_summary(self) -> list[dict[str, Any]]:
        """One dict per worker that claimed within a day or holds jobs: its filters, claims,
        jobs held and stale, heartbeat and lock expiry (``jobq_workers_summary``, monitor)."""

    @_ops.sends("throughput", _ops.each(dict), since=_ops.interval, bucket=_ops.interval)
    def throughput(
        self, since: timedelta | float = timedelta(hours=1), bucket: timedelta | float = 60
    ) -> list[dict[str, Any]]:
        """Per ``bucket`` of the last ``since``, oldest first: ``bucket_start``, the jobs that
        finished ``succeeded``, ``failed``, ``dead_letter``, ``cancelled``, and the
        ``failed_attempts`` (``jobq_throughput``, monitor)."""

    @_ops.sends("names", _ops.NAMES)
    def names(self) -> dict[str, list[str]]:
        """The queue names and job types that exist, ``{"queue": [...], "job_type": [...]}``,
        each sorted (``jobq_names``, monitor)."""

    def function_privileges(
        self, functions: Mapping[str, str]
    ) -> tuple[str, dict[str, bool | None]]:
        """The connected role, and whether it may execute each of ``functions`` (a name and its
        argument types, ``{"jobq_stats": "()"}``) of this installation; None for one that is
        not installed there. What a front end asks to show what a role may not do."""
        return self._drive(_ops.function_privileges(self._sql, functions))
