"""The worker: claims jobs in batches, runs their handlers on a thread pool, acknowledges them.

Threads of one running :class:`Worker`:

* **claimers** (``CLAIMERS``) — one ``jobq_dequeue`` round trip per batch, sized to the free
  slots (running handlers plus a prefetch buffer, by default sized to how fast jobs finish);
  two, so that while jobs are waiting one claim can be under way while another's jobs are
  handed out; woken by the listener, by finished handlers, and by a poll timer (scheduled and
  retried jobs, lost notifications);
* **listener** — one dedicated autocommit connection ``LISTEN jobq``, waiting in ``select()``
  on its socket and a wake-up socket (so that stopping does not wait for a timeout);
* **handlers** — ``concurrency`` threads running the job handlers;
* **acker** — sends every finished job so far in one ``jobq_complete_many`` call (fenced by
  attempt), and failures with ``jobq_fail``; keeps them across reconnects until they are sent;
* **heartbeat** — renews the claims of every job the worker holds (prefetched, running, or
  finished but not yet acknowledged) every ``heartbeat_interval``.

Every database call path catches ``psycopg.OperationalError`` and retries with capped
exponential backoff and jitter: the worker survives a server restart or a terminated backend.
Acknowledgements are fenced by the claim's attempt, so re-sending one after a reconnect is safe.
A claim that fails with the connection may have committed on the server, its reply lost: before
claiming again, the worker gives back every job locked by its id that it does not hold
(``jobq_release_orphans``), so those run at once instead of after ``lock_timeout``; worker ids
must therefore be unique per process (the default ``host:pid:random`` is).

Shutdown (``stop()``, SIGTERM or SIGINT when ``run()`` is on the main thread): claiming stops,
claimed-but-unstarted jobs are released at once (``jobq_release``), running handlers get
``shutdown_grace`` to finish, their results are acknowledged, and ``run()`` returns. A handler
still running after the grace period is left alone: its job keeps its claim until the lock
expires (``lock_timeout``, heartbeats having stopped), then another worker takes it over.
A second signal skips the rest of the grace period.
"""

from __future__ import annotations

import inspect
import logging
import os
import queue as queue_mod
import random
import secrets
import select
import signal
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from types import FrameType, TracebackType
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from . import _sql
from .errors import JobqError, PermanentError, Retry, from_psycopg
from .models import Job, job_row
from .queue import resolve_dsn

__all__ = ["Handler", "Worker"]

log = logging.getLogger("pgq_client.worker")

CLAIMERS = 2
"""Claim threads per worker: while jobs are waiting, one claim is under way while the jobs of
the other are handed out, so a round trip's latency (a commit) does not idle the handlers."""

PREFETCH_MAX_FACTOR = 16
"""With ``prefetch=None``, at most this many jobs per handler thread wait in the worker."""

Handler = Callable[..., object]
"""``handler(job)``, or ``handler(job, conn)`` for transactional completion."""


def _seconds(value: timedelta | float, name: str) -> float:
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 0:
        raise ValueError(f"{name} must not be negative, got {value!r}")
    return seconds


def _takes_connection(handler: Handler) -> bool:
    """True for a handler with two positional parameters: ``handler(job, conn)``."""
    try:
        params = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return len(positional) >= 2


def default_worker_id() -> str:
    """``host:pid:random`` — unique per process, readable in ``locked_by``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class _Backoff:
    """Capped exponential backoff with jitter, for reconnecting."""

    def __init__(self, base: float = 0.05, cap: float = 5.0) -> None:
        self.base = base
        self.cap = cap
        self.failures = 0

    def next_delay(self) -> float:
        ceiling = min(self.cap, self.base * 2**self.failures)
        self.failures += 1
        return random.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self.failures = 0


def _storable(text: str) -> str:
    """Error text PostgreSQL can store: NUL and lone surrogates escaped (an exception message
    may hold anything, and must not make its own failure unrecordable)."""
    text = text.replace("\x00", "\\x00")
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass(frozen=True)
class _Failure:
    job: Job
    error: str
    retry: bool
    backoff: timedelta


def _job_extra(job: Job) -> dict[str, Any]:
    return {"job_id": str(job.id), "job_type": job.job_type, "attempt": job.attempts}


def _job_log(
    level: int, job: Job, msg: str, *args: object, exc: BaseException | None = None
) -> None:
    if log.isEnabledFor(level):
        log.log(
            level,
            "job %s (type %s, attempt %d/%d): " + msg,
            job.id,
            job.job_type,
            job.attempts,
            job.max_attempts,
            *args,
            exc_info=exc,
            extra=_job_extra(job),
        )


class Worker:
    """Runs the handlers of jobs claimed from jobq.

    ``dsn_or_pool``: a DSN, a ``psycopg_pool.ConnectionPool`` (the caller's, left open), or None
    for ``JOBQ_DSN``, else ``DATABASE_URL``, else the embedded PostgreSQL. ``handlers`` maps a
    job type to ``handler(job)`` or ``handler(job, conn)`` (transactional completion: the
    handler's writes on ``conn`` commit together with the job's completion, or not at all).
    """

    def __init__(
        self,
        dsn_or_pool: str | ConnectionPool[Any] | None = None,
        handlers: Mapping[str, Handler] | None = None,
        *,
        concurrency: int = 8,
        queues: Sequence[str] | None = None,
        lock_timeout: timedelta | float = timedelta(minutes=5),
        batch_size: int | None = None,
        prefetch: int | None = None,
        poll_interval: timedelta | float = 1.0,
        heartbeat_interval: timedelta | float | None = None,
        shutdown_grace: timedelta | float = 30.0,
        retry_backoff: timedelta | float = timedelta(seconds=10),
        worker_id: str | None = None,
        schema: str | None = None,
    ) -> None:
        if not handlers:
            raise ValueError("Worker needs at least one handler: handlers={'job_type': fn}")
        for job_type, handler in handlers.items():
            if not callable(handler):
                raise TypeError(f"handler for {job_type!r} is not callable: {handler!r}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if isinstance(queues, str):
            raise TypeError("queues must be a list of queue names, not a string")
        self.handlers: dict[str, Handler] = dict(handlers)
        self._transactional = {t: _takes_connection(h) for t, h in self.handlers.items()}
        self._job_types = list(self.handlers)
        self.concurrency = concurrency
        self.queues = None if queues is None else list(queues)
        self.lock_timeout = timedelta(seconds=_seconds(lock_timeout, "lock_timeout"))
        if self.lock_timeout <= timedelta(0):
            raise ValueError("lock_timeout must be positive")
        # Claims are round trips (and commits): the more jobs each one brings, the fewer there
        # are. prefetch=None sizes the buffer of claimed jobs waiting for a handler thread to
        # the jobs: enough to cover two claim round trips at the rate the handlers finish
        # jobs, between 0 and PREFETCH_MAX_FACTOR x concurrency (see _prefetch_now). A fixed
        # prefetch (0 for long jobs: nothing waits in this worker) turns that off.
        if prefetch is not None and prefetch < 0:
            raise ValueError(f"prefetch must not be negative, got {prefetch}")
        self.prefetch = prefetch
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.batch_size = batch_size  # None: as many as there are free slots
        self._job_seconds: float | None = None  # moving average of handler run time
        self._claim_seconds = 0.005  # moving average of a claim's round trip
        self.poll_interval = _seconds(poll_interval, "poll_interval")
        lock_seconds = self.lock_timeout.total_seconds()
        self.heartbeat_interval = (
            lock_seconds / 3
            if heartbeat_interval is None
            else _seconds(heartbeat_interval, "heartbeat_interval")
        )
        if not 0 < self.heartbeat_interval < lock_seconds:
            raise ValueError("heartbeat_interval must be positive and shorter than lock_timeout")
        self.shutdown_grace = _seconds(shutdown_grace, "shutdown_grace")
        self.retry_backoff = timedelta(seconds=_seconds(retry_backoff, "retry_backoff"))
        self.worker_id = worker_id or default_worker_id()
        self.schema = schema
        self._sql = _sql.statements(schema)

        self._given_pool: ConnectionPool[Any] | None = None
        self._dsn: str | None = None
        if isinstance(dsn_or_pool, ConnectionPool):
            self._given_pool = dsn_or_pool
        elif dsn_or_pool is None or isinstance(dsn_or_pool, str):
            self._dsn = dsn_or_pool
        else:
            raise TypeError(f"Worker() takes a DSN or a ConnectionPool, got {dsn_or_pool!r}")
        self._pool: ConnectionPool[Any] | None = None

        # State shared by the threads, guarded by one lock. Each kind of waiter has its own
        # condition on it, so that a finished job wakes only the thread that has something to
        # do about it (not every claimer, the acker and the shutdown at each job).
        self._held_rows_lock = threading.Lock()  # see _call_on_held
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # shutdown: handlers finishing
        self._claim_cv = threading.Condition(lock)  # claimers: free slots, wake-ups, stop
        self._ack_cv = threading.Condition(lock)  # acker: results to send, closing
        self._held: dict[uuid.UUID, Job] = {}  # claimed and not yet acknowledged
        self._unstarted: dict[uuid.UUID, Job] = {}  # claimed, waiting for a handler thread
        self._running: dict[uuid.UUID, Job] = {}
        self._wake_seq = 0
        self._claiming = 0  # slots reserved by claims in flight
        self._claim_more = True  # the last claim came back full: more may be waiting
        # A claim failed with the connection: it may have committed, its jobs locked by this
        # worker's id and unknown to it. Before the next claim, jobq_release_orphans gives back
        # every job locked by this id that is not in _held (see _release_orphans).
        self._orphans_unknown = False
        self._releasing_orphans = False
        self._claim_seen_seq = 0  # the wake-up a claim last served
        self._next_poll = 0.0  # monotonic time of the next polling claim
        self._completions: list[Job] = []
        self._failures: list[_Failure] = []
        self._acking = False
        self._acks_closed = False
        self._ack_deadline = float("inf")
        self._fatal: BaseException | None = None
        self._burst = False

        self._stop = threading.Event()
        self._force = threading.Event()
        self._background_stop = threading.Event()
        self._done = threading.Event()
        self._work: queue_mod.SimpleQueue[Job | None] = queue_mod.SimpleQueue()
        self._started = False
        self._run_thread: threading.Thread | None = None
        self._shutdown_deadline = float("inf")

    # -- public API ------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the worker to shut down (thread-safe; also what SIGTERM/SIGINT do)."""
        if self._stop.is_set():
            self._force.set()
        self._stop.set()

    def __enter__(self) -> Worker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if self._started and threading.current_thread() is not self._run_thread:
            self._done.wait(self.shutdown_grace + 30)

    @property
    def in_flight(self) -> int:
        """Jobs this worker holds a claim on (prefetched, running, or awaiting acknowledgement)."""
        with self._cond:
            return len(self._held)

    def run(self, burst: bool = False) -> None:
        """Work until :meth:`stop` or SIGTERM/SIGINT; with ``burst``, until no job is available.

        Raises a :class:`~pgq_client.errors.JobqError` when the database cannot be used at
        start (unreachable, not migrated, no privilege) or stops being usable (not for
        connection losses, which are retried).
        """
        if self._started:
            raise RuntimeError("a Worker runs once; create a new one")
        self._started = True
        self._run_thread = threading.current_thread()
        self._burst = burst
        try:
            self._run()
        finally:
            self._done.set()

    # -- orchestration -------------------------------------------------------------------------

    def _run(self) -> None:
        dsn = self._resolve_dsn()
        self._check_database(dsn)
        if self._given_pool is not None:
            self._pool = self._given_pool
        else:
            self._pool = ConnectionPool(
                dsn,
                # claimers, acker, heartbeat; handlers' transactions (listener: its own)
                min_size=CLAIMERS + 2,
                max_size=self.concurrency + CLAIMERS + 2,
                kwargs={"autocommit": True},
                name=f"jobq-worker-{self.worker_id}",
                timeout=5.0,
                open=False,
            )
            self._pool.open(wait=False)

        restore = self._install_signal_handlers()
        waker, wake = socket.socketpair()  # wake.send() ends the listener's select()
        claimers = [
            threading.Thread(target=self._claim_loop, name=f"jobq-claimer-{i}", daemon=True)
            for i in range(CLAIMERS)
        ]
        threads = [
            threading.Thread(
                target=self._listen_loop, args=(dsn, waker), name="jobq-listener", daemon=True
            ),
            threading.Thread(target=self._ack_loop, name="jobq-acker", daemon=True),
            threading.Thread(target=self._heartbeat_loop, name="jobq-heartbeat", daemon=True),
        ]
        handler_threads = [
            threading.Thread(target=self._handler_loop, name=f"jobq-handler-{i}", daemon=True)
            for i in range(self.concurrency)
        ]
        listener, acker, heartbeat = threads
        log.info(
            "worker %s started: %d handler threads, job types %s, queues %s",
            self.worker_id,
            self.concurrency,
            ", ".join(sorted(self.handlers)),
            "all" if self.queues is None else ", ".join(self.queues),
        )
        try:
            for t in (*claimers, *threads, *handler_threads):
                t.start()
            while not self._stop.wait(0.5):
                pass
            self._shutdown(claimers, acker, handler_threads)
        finally:
            self._background_stop.set()
            with self._cond:
                self._notify_all()
            wake.send(b"\0")
            for t in (heartbeat, listener):
                t.join(timeout=10)
            waker.close()
            wake.close()
            if self._given_pool is None and self._pool is not None:
                self._pool.close(timeout=5)
            restore()
        if self._fatal is not None:
            raise self._fatal
        log.info("worker %s stopped", self.worker_id)

    def _shutdown(
        self,
        claimers: list[threading.Thread],
        acker: threading.Thread,
        handler_threads: list[threading.Thread],
    ) -> None:
        self._shutdown_deadline = time.monotonic() + self.shutdown_grace
        log.info("worker %s shutting down", self.worker_id)
        with self._cond:
            self._notify_all()
        for claimer in claimers:
            claimer.join()

        # Claimed but never started: give them back now, so other workers can take them.
        with self._cond:
            unstarted = list(self._unstarted.values())
            self._unstarted.clear()
            for job in unstarted:
                self._held.pop(job.id, None)
        for _ in handler_threads:
            self._work.put(None)
        if unstarted:
            self._release(unstarted)

        # Let running handlers finish within the grace period.
        with self._cond:
            while self._running and not self._force.is_set():
                remaining = self._shutdown_deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(min(remaining, 0.2))
            left = list(self._running.values())
        for job in left:
            _job_log(
                logging.WARNING,
                job,
                "still running after the shutdown grace period; left claimed, its lock expires "
                "after %s and another worker takes it over",
                self.lock_timeout,
            )

        # Flush the acknowledgements (retrying through connection losses, for a while).
        with self._cond:
            self._acks_closed = True
            self._ack_deadline = max(self._shutdown_deadline, time.monotonic()) + 10.0
            self._ack_cv.notify_all()
        acker.join()

    def _resolve_dsn(self) -> str:
        if self._given_pool is not None:
            conninfo = self._given_pool.conninfo
            return conninfo() if callable(conninfo) else conninfo
        if self._dsn is None:
            self._dsn, source = resolve_dsn(None)
            log.info("worker uses the database from %s", source)
        return self._dsn

    def _check_database(self, dsn: str) -> None:
        """Fail fast when the database is unreachable, not migrated, or not ours to work."""
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                conn.execute(self._sql.heartbeat, {"worker_id": self.worker_id, "job_ids": []})
        except psycopg.Error as exc:
            raise from_psycopg(exc) from exc

    def _install_signal_handlers(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def on_signal(signum: int, frame: FrameType | None) -> None:
            # Only set events here: the main thread does the rest outside the handler.
            if self._stop.is_set():
                self._force.set()
            self._stop.set()

        previous = {
            signal.SIGTERM: signal.signal(signal.SIGTERM, on_signal),
            signal.SIGINT: signal.signal(signal.SIGINT, on_signal),
        }

        def restore() -> None:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

        return restore

    def _set_fatal(self, exc: BaseException) -> None:
        with self._cond:
            if self._fatal is None:
                self._fatal = exc
        log.error("worker %s stops: %s", self.worker_id, exc)
        self._stop.set()

    def _wake(self) -> None:
        with self._cond:
            self._wake_seq += 1
            self._claim_cv.notify_all()

    def _notify_all(self) -> None:
        """Wake every waiting thread (the lock held): to stop, or to re-check everything."""
        self._cond.notify_all()
        self._claim_cv.notify_all()
        self._ack_cv.notify_all()

    def _prefetch_now(self) -> int:
        """How many claimed jobs may wait for a handler thread (the lock held).

        Fixed when ``prefetch`` was given. Otherwise the handlers should never wait for a
        claim: while one claim round trip is under way they finish ``concurrency x
        round trip / run time`` jobs, and the buffer holds twice that (rounded down), at most
        ``PREFETCH_MAX_FACTOR x concurrency`` (4 x concurrency until a job has finished).
        Jobs that run longer than two round trips thus get no prefetch (nothing waits in this
        worker that another could run), and no-op jobs the deepest buffer.
        """
        if self.prefetch is not None:
            return self.prefetch
        ceiling = PREFETCH_MAX_FACTOR * self.concurrency
        if self._job_seconds is None:
            return min(4 * self.concurrency, ceiling)
        wanted = 2 * self.concurrency * self._claim_seconds / max(self._job_seconds, 1e-6)
        return min(ceiling, int(wanted))

    def _claim_size(self) -> tuple[int, int]:
        """(jobs the next claim may ask for, how many make a claim worth it), the lock held.
        A claim is also worth it whenever a handler thread may be idle."""
        capacity = self.concurrency + self._prefetch_now()
        largest = capacity if self.batch_size is None else min(self.batch_size, capacity)
        free = capacity - len(self._unstarted) - len(self._running) - self._claiming
        return min(largest, free), max(1, largest // 2)

    def _claim_worth_it(self, wanted: int, threshold: int) -> bool:
        return wanted > 0 and (
            # a handler thread may be idle, and no claim is on its way to it
            (not self._unstarted and not self._claiming) or wanted >= threshold
        )

    def _slot_freed(self) -> None:
        """A running or unstarted job left its slot (the lock held): wake a claimer if a claim
        is now worth it (the same rule as in ``_claim_loop``)."""
        if self._claim_worth_it(*self._claim_size()):
            self._claim_cv.notify()

    def _call_on_held(self, query: sql.Composed, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``_call`` for a statement that locks many of the rows this worker holds (heartbeat,
        acknowledgements, release): one at a time. Before migration 0004 two of them run at
        once could lock their overlapping rows in different orders and deadlock (40P01, seen
        in make soak whenever a heartbeat met an acknowledgement under load); a heartbeat now
        skips rows locked by others, and this lock keeps it from skipping the ones this worker
        is acknowledging, so that a smaller count means lost claims."""
        with self._held_rows_lock:
            return self._call(query, params)

    def _call(self, query: sql.Composed, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        assert self._pool is not None
        with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(query, params)
            rows: list[dict[str, Any]] = cur.fetchall()
            return rows

    # -- claimer -------------------------------------------------------------------------------

    def _claim_loop(self) -> None:
        """One of the ``CLAIMERS`` claim threads.

        Claims reserve their slots before the round trip (``_claiming``), so claims in flight
        together never bring more than the capacity. A wake-up or a due poll is taken by one
        claimer only (``_claim_seen_seq``, ``_next_poll``); only while the last claim came back
        full (more is waiting) do the claimers claim side by side.
        """
        backoff = _Backoff()
        try:
            while not self._stop.is_set():
                with self._cond:
                    if self._orphans_unknown or self._releasing_orphans:
                        # Only while no claim is in flight: its jobs are not in _held yet.
                        if self._releasing_orphans or self._claiming:
                            self._claim_cv.wait(0.05)
                            continue
                        self._orphans_unknown = False
                        self._releasing_orphans = True
                        held = list(self._held)
                    else:
                        held = None
                if held is not None:
                    self._release_orphans(held, backoff)
                    continue
                with self._cond:
                    now = time.monotonic()
                    wanted, threshold = self._claim_size()
                    worth_it = self._claim_worth_it(wanted, threshold)
                    due = (
                        self._claim_more
                        or self._wake_seq != self._claim_seen_seq
                        or now >= self._next_poll
                    )
                    if not (worth_it and due):
                        wait = self._next_poll - now if worth_it else self.poll_interval
                        self._claim_cv.wait(max(0.001, min(wait, self.poll_interval, 1.0)))
                        continue
                    seq = self._wake_seq
                    self._claim_seen_seq = seq  # this wake-up is being served
                    if not self._claim_more:
                        self._next_poll = now + self.poll_interval  # and so is this poll
                    self._claiming += wanted
                try:
                    started = time.perf_counter()
                    jobs = self._dequeue(wanted)
                    took = time.perf_counter() - started
                except psycopg.OperationalError as exc:
                    with self._cond:
                        self._claiming -= wanted
                        self._claim_more = True  # retry at once after the backoff
                        self._orphans_unknown = True  # it may have committed, unseen
                        self._claim_cv.notify()
                    self._connection_trouble("claiming jobs", backoff, exc)
                    self._stop.wait(self._retry_delay(backoff))
                    continue
                except psycopg.Error as exc:
                    with self._cond:
                        self._claiming -= wanted
                    self._set_fatal(from_psycopg(exc))
                    return
                if backoff.failures:
                    log.info("worker %s: database reachable again (claimer)", self.worker_id)
                backoff.reset()
                with self._cond:
                    self._claiming -= wanted
                    self._claim_seconds += 0.2 * (took - self._claim_seconds)
                    for job in jobs:
                        self._held[job.id] = job
                        self._unstarted[job.id] = job
                        self._work.put(job)
                    self._claim_more = len(jobs) == wanted
                    if not self._claim_more:
                        self._next_poll = time.monotonic() + self.poll_interval
                    if len(jobs) < wanted:
                        self._slot_freed()  # slots were given back: another claimer may go
                    if (
                        self._burst
                        and not jobs
                        and seq == self._wake_seq  # nothing finished or was acknowledged meanwhile
                        and not self._claiming  # no other claim is bringing jobs
                        and not self._held
                        and not self._completions
                        and not self._failures
                        and not self._acking
                    ):
                        log.info("worker %s: no job available, burst run done", self.worker_id)
                        self._stop.set()
                        return
                if jobs:
                    log.debug("worker %s claimed %d jobs", self.worker_id, len(jobs))
        except Exception as exc:  # a bug: do not leave the worker claiming nothing, silently
            self._set_fatal(exc)

    def _release_orphans(self, held: list[uuid.UUID], backoff: _Backoff) -> None:
        """After a claim that failed with the connection: release the jobs locked by this
        worker's id that it does not hold (a claim that committed and whose reply was lost), so
        that they run now, as the same attempt, rather than after ``lock_timeout``. Called with
        no claim in flight (the claimers wait), so every job of a claim that did come back is
        in ``held``. Worker ids must be unique per process: the default is."""
        try:
            rows = self._call(
                self._sql.release_orphans, {"worker_id": self.worker_id, "job_ids": held}
            )
        except psycopg.OperationalError as exc:
            with self._cond:
                self._orphans_unknown = True  # still unknown: again before the next claim
                self._releasing_orphans = False
                self._claim_cv.notify_all()
            self._connection_trouble("releasing the jobs of a lost claim", backoff, exc)
            self._stop.wait(self._retry_delay(backoff))
            return
        except psycopg.Error as exc:
            # Not installed (jobq migrate not run) or not granted (a worker role granted before
            # jobq_release_orphans existed): those jobs wait for lock_timeout, as they used to.
            log.warning(
                "worker %s could not release the jobs of a claim whose reply may have been "
                "lost (%s); if it had claimed any, they run again after lock_timeout",
                self.worker_id,
                from_psycopg(exc),
            )
            released = 0
        else:
            released = int(rows[0]["released"])
        with self._cond:
            self._releasing_orphans = False
            self._claim_cv.notify_all()
        if released:
            log.warning(
                "worker %s released %d jobs claimed by a claim whose reply was lost; they run "
                "again now (the lost claim is not counted as an attempt)",
                self.worker_id,
                released,
            )

    def _dequeue(self, batch_size: int) -> list[Job]:
        assert self._pool is not None
        with self._pool.connection() as conn, conn.cursor(row_factory=job_row) as cur:
            cur.execute(
                self._sql.dequeue,
                {
                    "worker_id": self.worker_id,
                    "job_types": self._job_types,
                    "batch_size": batch_size,
                    "lock_timeout": self.lock_timeout,
                    "queues": self.queues,
                },
            )
            jobs: list[Job] = cur.fetchall()
            return jobs

    def _connection_trouble(self, doing: str, backoff: _Backoff, exc: BaseException) -> None:
        level = logging.WARNING if backoff.failures == 0 else logging.DEBUG
        log.log(
            level,
            "worker %s: database unavailable while %s (%s); retrying",
            self.worker_id,
            doing,
            str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
        )

    def _retry_delay(self, backoff: _Backoff, check_pool: bool = True) -> float:
        """How long to wait before retrying after a connection error.

        The first error after a success is usually a dead pooled connection (the server
        restarted, backends were terminated): then every idle connection of the pool is likely
        dead too. ``pool.check()`` discards them all at once and the call is retried at once;
        only when that fails again does the capped exponential backoff apply.
        """
        if backoff.failures == 0:
            backoff.failures = 1
            if check_pool and self._pool is not None:
                try:
                    self._pool.check()
                except Exception as exc:  # the pool keeps trying on its own
                    log.debug("worker %s: pool check failed: %s", self.worker_id, exc)
            return 0.0
        return backoff.next_delay()

    def _release(self, jobs: list[Job]) -> None:
        backoff = _Backoff()
        ids = [job.id for job in jobs]
        while True:
            try:
                rows = self._call_on_held(
                    self._sql.release, {"job_ids": ids, "worker_id": self.worker_id}
                )
            except psycopg.OperationalError as exc:
                if time.monotonic() > self._shutdown_deadline or self._force.is_set():
                    log.warning(
                        "worker %s could not release %d unstarted jobs (%s); they are taken "
                        "over when their lock expires",
                        self.worker_id,
                        len(ids),
                        exc,
                    )
                    return
                self._connection_trouble("releasing jobs", backoff, exc)
                time.sleep(self._retry_delay(backoff))
                continue
            except psycopg.Error as exc:
                log.error(
                    "worker %s could not release unstarted jobs: %s",
                    self.worker_id,
                    from_psycopg(exc),
                )
                return
            released = int(rows[0]["released"])
            log.info("worker %s released %d unstarted jobs", self.worker_id, released)
            for job in jobs:
                _job_log(logging.DEBUG, job, "released (never started)")
            return

    # -- listener ------------------------------------------------------------------------------

    def _listen_loop(self, dsn: str, waker: socket.socket) -> None:
        """LISTEN on its own connection; wakes the claimers on a notification for our queues.

        Waits in ``select()`` on the connection's socket and on ``waker`` (written to at
        shutdown), so that stopping does not wait for a timeout to run out.
        """
        backoff = _Backoff(cap=5.0)
        while not self._background_stop.is_set() and not self._stop.is_set():
            try:
                with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                    conn.execute(_sql.LISTEN)
                    if backoff.failures:
                        log.info("worker %s: listening again", self.worker_id)
                    backoff.reset()
                    self._wake()  # a notification may have been missed while disconnected
                    while not self._stop.is_set():
                        # Notifications already read by the client (during LISTEN) first.
                        for note in conn.notifies(timeout=0):
                            if self.queues is None or note.payload in self.queues:
                                self._wake()
                        ready, _, _ = select.select([conn.fileno(), waker.fileno()], [], [], 5.0)
                        if waker.fileno() in ready:
                            return  # shutting down
            except psycopg.OperationalError as exc:
                self._connection_trouble("listening", backoff, exc)
                self._stop.wait(self._retry_delay(backoff, check_pool=False))
            except Exception as exc:
                log.error("worker %s: listener failed: %s; polling only", self.worker_id, exc)
                return

    # -- handlers ------------------------------------------------------------------------------

    def _handler_loop(self) -> None:
        while True:
            job = self._work.get()
            if job is None:
                return
            with self._cond:
                if self._unstarted.pop(job.id, None) is None:
                    continue  # released at shutdown
                self._running[job.id] = job
            succeeded = False
            started = time.perf_counter()
            try:
                succeeded = self._execute(job)
            except BaseException as exc:  # never let a handler thread die, nor a job be stranded
                _job_log(logging.ERROR, job, "worker error while running the job", exc=exc)
                error = "".join(traceback.format_exception(exc)).rstrip()
                failure = _Failure(job, f"worker error: {error}", True, self.retry_backoff)
                self._push_failure(failure)
            finally:
                took = time.perf_counter() - started
                with self._cond:
                    avg = self._job_seconds
                    self._job_seconds = took if avg is None else avg + 0.05 * (took - avg)
                    if succeeded:
                        self._completions.append(job)
                        self._ack_cv.notify()
                    self._running.pop(job.id, None)
                    if self._burst:
                        self._wake_seq += 1  # for the burst end check; no wake-up by itself
                    self._slot_freed()
                    if self._stop.is_set():
                        self._cond.notify_all()  # the shutdown waits for running handlers

    def _execute(self, job: Job) -> bool:
        """Run the job's handler; True when its completion is left to the acker to send."""
        handler = self.handlers.get(job.job_type)
        if handler is None:  # not claimable (job_types filter); defensive
            self._push_failure(
                _Failure(job, f"no handler for job type {job.job_type!r}", True, self.retry_backoff)
            )
            return False
        _job_log(logging.DEBUG, job, "started")
        if self._transactional[job.job_type]:
            self._execute_in_transaction(job, handler)
            return False
        try:
            handler(job)
        except BaseException as exc:
            self._push_failure(self._failure_for(job, exc))
            return False
        return True

    def _failure_for(self, job: Job, exc: BaseException) -> _Failure:
        if isinstance(exc, Retry):
            backoff = self.retry_backoff
            if exc.after is not None:
                # jobq_fail waits attempts * backoff: divide so that the wait is `after`.
                backoff = exc.after / max(job.attempts, 1)
            _job_log(logging.INFO, job, "retry requested (after %s)", exc.after or "default")
            return _Failure(job, f"Retry: {exc}", True, backoff)
        error = "".join(traceback.format_exception(exc)).rstrip()
        if isinstance(exc, PermanentError):
            _job_log(logging.WARNING, job, "failed permanently: %s", exc)
            return _Failure(job, error, False, self.retry_backoff)
        # One line: the traceback is stored in the job's errors (and logged at DEBUG). Logging
        # it at WARNING for every retried failure made the logging lock the bottleneck of a
        # worker whose jobs fail often.
        _job_log(
            logging.WARNING,
            job,
            "failed, will be retried: %r",
            exc,
            exc=exc if log.isEnabledFor(logging.DEBUG) else None,
        )
        return _Failure(job, error, True, self.retry_backoff)

    def _push_failure(self, failure: _Failure) -> None:
        with self._cond:
            self._failures.append(failure)
            self._ack_cv.notify()

    def _execute_in_transaction(self, job: Job, handler: Handler) -> None:
        """Run ``handler(job, conn)`` and ``jobq_complete`` in one transaction."""
        assert self._pool is not None
        backoff = _Backoff()
        params = {"job_id": job.id, "worker_id": self.worker_id, "attempt": job.attempts}
        while True:
            handler_called = False
            failure: _Failure | None = None
            lost = False
            try:
                with self._pool.connection() as conn, conn.transaction():
                    handler_called = True
                    try:
                        handler(job, conn)
                    except BaseException as exc:
                        failure = self._failure_for(job, exc)
                        raise psycopg.Rollback() from None
                    row = conn.execute(self._sql.complete, params).fetchone()
                    if not (row and row[0]):
                        lost = True
                        raise psycopg.Rollback()
            except psycopg.OperationalError as exc:
                if not handler_called:
                    # Could not even open the transaction: a stale pooled connection or a
                    # database that is away. The handler has not run; try again.
                    if self._force.is_set() or time.monotonic() > self._shutdown_deadline:
                        _job_log(logging.WARNING, job, "not run: database unavailable at shutdown")
                        return
                    self._connection_trouble("opening a transaction", backoff, exc)
                    time.sleep(self._retry_delay(backoff))
                    continue
                if failure is None and not lost:
                    # Lost during the completion or the commit: whether it committed is
                    # unknown. A fenced fail is a no-op if it did, and a retry if it did not.
                    failure = _Failure(
                        job,
                        f"connection lost during transactional completion: {exc}",
                        True,
                        self.retry_backoff,
                    )
            except psycopg.Error as exc:
                if failure is None and not lost:
                    failure = self._failure_for(job, exc)
            except psycopg.Rollback:
                # Re-raised when the rollback itself could not run (the connection broke): the
                # transaction is gone either way, and failure/lost say why.
                pass
            break
        if lost:
            _job_log(
                logging.WARNING,
                job,
                "claim lost before completion (lock expired and taken over); the handler's "
                "transaction was rolled back",
            )
            with self._cond:
                self._held.pop(job.id, None)
        elif failure is not None:
            self._push_failure(failure)
        else:
            _job_log(logging.DEBUG, job, "succeeded (transactional)")
            with self._cond:
                self._held.pop(job.id, None)

    # -- acknowledgements ----------------------------------------------------------------------

    def _ack_loop(self) -> None:
        backoff = _Backoff()
        while True:
            with self._cond:
                while not self._completions and not self._failures and not self._acks_closed:
                    self._ack_cv.wait()
                if not self._completions and not self._failures:
                    return  # closed and flushed
                completions, self._completions = self._completions, []
                failures, self._failures = self._failures, []
                self._acking = True
            retried = backoff.failures > 0
            try:
                completions, failures = self._send_acks(completions, failures, retried)
            except Exception as exc:  # a bug or a fatal database error; already logged
                with self._cond:
                    self._acking = False
                if not isinstance(exc, JobqError):
                    log.exception("worker %s: acknowledgements failed", self.worker_id)
                self._set_fatal(exc)
                return
            with self._cond:
                self._acking = False
                if completions or failures:  # connection lost: put them back, in front
                    self._completions[:0] = completions
                    self._failures[:0] = failures
                    if time.monotonic() > self._ack_deadline:
                        for job in (*self._completions, *(f.job for f in self._failures)):
                            _job_log(
                                logging.ERROR,
                                job,
                                "result not recorded (database unavailable at shutdown); the "
                                "job runs again after its lock expires",
                            )
                        return
                else:
                    if self._burst:  # the burst end check waits for acknowledgements
                        self._wake_seq += 1
                        self._claim_cv.notify_all()
                    if backoff.failures:
                        log.info("worker %s: database reachable again (acker)", self.worker_id)
                    backoff.reset()
                    continue
            time.sleep(self._retry_delay(backoff))

    def _send_acks(
        self, completions: list[Job], failures: list[_Failure], retried: bool
    ) -> tuple[list[Job], list[_Failure]]:
        """Send what it can; returns what is left after a connection loss."""
        try:
            if completions:
                rows = self._call_on_held(
                    self._sql.complete_many,
                    {
                        "job_ids": [job.id for job in completions],
                        "worker_id": self.worker_id,
                        "attempts": [job.attempts for job in completions],
                    },
                )
                done = int(rows[0]["completed"])
                if done < len(completions):
                    log.warning(
                        "worker %s: %d of %d completed jobs were not recorded: their claim was "
                        "lost (lock expired, taken over)%s; jobs: %s",
                        self.worker_id,
                        len(completions) - done,
                        len(completions),
                        " or already recorded before the connection was lost" if retried else "",
                        ", ".join(
                            f"{j.id} ({j.job_type}, attempt {j.attempts})" for j in completions
                        ),
                    )
                for job in completions:
                    _job_log(logging.DEBUG, job, "succeeded")
                with self._cond:
                    for job in completions:
                        self._held.pop(job.id, None)
                completions = []
            if failures:
                # All failures so far in one round trip (one jobq_fail call per job).
                rows = self._call_on_held(
                    self._sql.fail_many,
                    {
                        "worker_id": self.worker_id,
                        "job_ids": [f.job.id for f in failures],
                        "errors": [_storable(f.error) for f in failures],
                        "retries": [f.retry for f in failures],
                        "backoffs": [f.backoff for f in failures],
                        "attempts": [f.job.attempts for f in failures],
                    },
                )
                for failure, row in zip(failures, rows, strict=True):
                    job = failure.job
                    if row["status"] is None:
                        _job_log(
                            logging.WARNING,
                            job,
                            "failure not recorded: claim lost (lock expired, taken over)%s",
                            " or recorded before the connection was lost" if retried else "",
                        )
                    else:
                        _job_log(logging.DEBUG, job, "failure recorded, now %s", row["status"])
                with self._cond:
                    for failure in failures:
                        self._held.pop(failure.job.id, None)
                failures = []
        except psycopg.OperationalError as exc:
            log.log(
                logging.WARNING if not retried else logging.DEBUG,
                "worker %s: database unavailable while acknowledging %d jobs (%s); retrying",
                self.worker_id,
                len(completions) + len(failures),
                str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
            )
        except psycopg.Error as exc:
            raise from_psycopg(exc) from exc
        return completions, failures

    # -- heartbeat -----------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        backoff = _Backoff()
        delay = self.heartbeat_interval
        while not self._background_stop.wait(delay):
            delay = self.heartbeat_interval
            with self._cond:
                ids = list(self._held)
            if not ids:
                continue
            try:
                rows = self._call_on_held(
                    self._sql.heartbeat, {"worker_id": self.worker_id, "job_ids": ids}
                )
            except psycopg.OperationalError as exc:
                self._connection_trouble("renewing claims", backoff, exc)
                delay = min(self._retry_delay(backoff), self.heartbeat_interval) or 0.001
                continue
            except psycopg.Error as exc:
                log.error("worker %s: heartbeat failed: %s", self.worker_id, from_psycopg(exc))
                continue
            backoff.reset()
            renewed = int(rows[0]["renewed"])
            with self._cond:
                still_held = [i for i in ids if i in self._held]
            if renewed < len(still_held):
                log.warning(
                    "worker %s: %d of %d claims were not renewed: lost (lock expired and taken "
                    "over; their results will not be recorded), or their row was locked by a "
                    "transactional completion at that moment",
                    self.worker_id,
                    len(still_held) - renewed,
                    len(still_held),
                )
            else:
                log.debug("worker %s renewed %d claims", self.worker_id, renewed)
