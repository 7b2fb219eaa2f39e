"""The Worker: claims jobs in batches, runs their handlers on threads, acknowledges them.

``run()`` starts the fetcher (:mod:`.fetcher`), the handler threads (:mod:`.handlers`) and the
acknowledger (:mod:`.acker`), waits for a stop (``stop()``, SIGTERM/SIGINT, a burst run's end
or an error no retry can fix) and shuts them down in order: claiming stops, unstarted jobs are
released, running handlers get ``shutdown_grace``, results are sent. A second stop aborts the
wait.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import queue
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from types import FrameType
from typing import Any, NoReturn

import psycopg
from psycopg_pool import ConnectionPool

from .. import _ops, _sql
from .._conn import fetch, opened, resolve_dsn
from .._secrets import is_conninfo_error
from ..errors import IncompatibleSchema, PermissionDenied, from_psycopg
from ..installer.citus import node_conninfo, schema_node
from ..installer.compat import check_compatible
from ..models import Job
from .acker import Acknowledger
from .config import (
    AsyncPlainHandler,
    AsyncTransactionalHandler,
    Handler,
    PlainHandler,
    TransactionalHandler,
    WorkerConfig,
    default_worker_id,
)
from .fetcher import Fetcher
from .handlers import HandlerPool
from .joblog import database_name, job_log, log
from .retry import Link, describe
from .state import Shared, Waker

__all__ = [
    "AsyncPlainHandler",
    "AsyncTransactionalHandler",
    "Handler",
    "PlainHandler",
    "TransactionalHandler",
    "Worker",
    "WorkerConfig",
    "default_worker_id",
]

ACK_FLUSH_SECONDS = 10.0  # after the grace period, how long results may take to be sent
FETCHER = "jobq-fetcher"  # thread names
ACKNOWLEDGER = "jobq-acknowledger"


class Worker:
    """Runs the handlers of jobs claimed from jobq.

    ``dsn_or_pool``: a DSN, a ``psycopg_pool.ConnectionPool`` (the caller's, left open), or None
    for ``JOBQ_DSN``, else ``DATABASE_URL``, else the embedded PostgreSQL. ``handlers`` maps a
    job type to ``handler(job)`` or ``handler(job, conn)`` (transactional completion: the
    handler's writes on ``conn`` commit together with the job's completion, or not at all),
    ``def`` or ``async def`` (run on one event loop, ``conn`` an ``AsyncConnection``).
    The other arguments are those of :class:`WorkerConfig`, checked here (``ValueError``).
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
        summary_interval: timedelta | float | None = 60.0,
        tick_interval: timedelta | float | None = 5.0,
        lock_wait: timedelta | float = 0.5,
    ) -> None:
        # The keyword arguments are WorkerConfig's settings, by name: checked there, once.
        settings = {n: v for n, v in locals().items() if n not in ("self", "dsn_or_pool")}
        self.config = WorkerConfig(**settings)
        self._given_pool: ConnectionPool[Any] | None = None
        self._dsn: str | None = None
        if isinstance(dsn_or_pool, ConnectionPool):
            self._given_pool = dsn_or_pool
        elif dsn_or_pool is None or isinstance(dsn_or_pool, str):
            self._dsn = dsn_or_pool
        else:
            raise TypeError(f"Worker() takes a DSN or a ConnectionPool, got {dsn_or_pool!r}")
        self._who = f"worker {self.config.worker_id}"
        # stop() may be called from a signal handler: it only counts and writes to a socket.
        self._stop_requests = 0
        self._signal: str | None = None
        self._ended = False  # the run ended by itself (burst done, fatal error)
        self._ended_threads: set[str] = set()
        self._patience = 1  # stop requests the shutdown takes before it aborts
        self._waker = Waker()  # wakes run(): a stop request, the end of the run or of a thread
        self._force = threading.Event()
        self._done = threading.Event()
        self._started = False
        self._run_thread: threading.Thread | None = None
        self._shared: Shared | None = None
        self.aborted = False
        """True after a run whose shutdown a second stop (or signal) cut short."""

    @property
    def worker_id(self) -> str:
        return self.config.worker_id

    def stop(self) -> None:
        """Ask the worker to shut down (thread-safe; also what SIGTERM/SIGINT do). A second call
        while it shuts down stops waiting for running handlers."""
        self._stop_requests += 1
        self._waker.poke()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self._started and threading.current_thread() is not self._run_thread:
            self._done.wait(self.config.shutdown_grace + ACK_FLUSH_SECONDS + 20)

    @property
    def in_flight(self) -> int:
        """Jobs this worker holds a claim on (prefetched, running, or awaiting acknowledgement)."""
        return 0 if self._shared is None else self._shared.in_flight

    def run(self, burst: bool = False) -> None:
        """Work until :meth:`stop` or SIGTERM/SIGINT; with ``burst``, until no job is available.

        Raises a :class:`~pgq_client.errors.JobqError` when the database cannot be used at
        start (unreachable, not migrated, no privilege), or when a call stops working for good
        (a privilege revoked, a function dropped): that stops the worker like ``stop()`` does,
        and ``run()`` raises once in-flight jobs are done. Lost connections are retried.
        """
        if self._started:
            raise RuntimeError("a Worker runs once; create a new one")
        self._started = True
        self._run_thread = threading.current_thread()
        try:
            self._run(burst)
        finally:
            self._done.set()
            self._waker.close()

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        """LISTEN on the wake-up and cancel channels of this worker's installation, named by
        the server as jobq's functions name them (the wake-up channel last)."""
        names = [
            fetch(conn, _ops.channel_call(self.config.schema, kind))[0][0]
            for kind in (_sql.CANCEL_EVENT, None)
        ]
        conn.execute(_sql.listen(*names))

    def _run(self, burst: bool) -> None:
        dsn, source = self._resolve_dsn()
        if self.config.schema is None:
            self.config = replace(self.config, schema=self._find_schema(dsn))
        config = self.config
        dsn, source = self._citus_node(dsn, source)
        connect = self._connector(dsn)
        listen = Link(connect, setup=self._listen)
        self._check_database(listen)
        log.info(
            "%s started: %s, job types %s, queues %s, database %s (%s%s)%s",
            self._who,
            _capacity(config),
            ", ".join(sorted(config.handlers)),
            "all" if config.queues is None else ", ".join(config.queues),
            database_name(dsn),
            source,
            "" if config.schema is None else f", schema {config.schema}",
            ", burst run" if burst else "",
        )
        shared = self._shared = Shared(config, burst, self._who, self._force, self._end)
        handlers = HandlerPool(
            shared, self._given_pool, self._waker.poke,
            dsn=dsn, connect_kwargs=self._connect_kwargs(dsn, own=False),
        )
        acker = Acknowledger(shared, Link(connect))
        fetcher = Fetcher(shared, listen)
        restore = self._install_signal_handlers()
        try:
            handlers.start()
            self._start(acker.run, ACKNOWLEDGER, shared)
            self._start(fetcher.run, FETCHER, shared)
            while not (self._stop_requests or self._ended):
                self._waker.sleep(1.0)
            self._shutdown(shared, handlers, acker, fetcher)
        finally:
            restore()
            listen.close()
            fetcher.close()
            handlers.close()
        if shared.fatal is not None:
            raise shared.fatal
        log.info(
            "%s stopped%s: %d jobs done, %d failed",
            self._who,
            " (aborted)" if self.aborted else "",
            shared.done,
            shared.failed,
        )

    def _shutdown(
        self, shared: Shared, handlers: HandlerPool, acker: Acknowledger, fetcher: Fetcher
    ) -> None:
        deadline = time.monotonic() + self.config.shutdown_grace
        handlers.deadline = deadline
        # A stop request beyond the one that started the shutdown aborts it.
        self._patience = 0 if self._ended and not self._stop_requests else 1
        fetcher.stop()
        self._wait(lambda: FETCHER in self._ended_threads)

        # Claimed but never started: give them back now, so other workers can take them.
        unstarted: list[Job] = []
        with contextlib.suppress(queue.Empty):
            while True:
                job = shared.work.get_nowait()
                if job is not None:
                    unstarted.append(job)
        if unstarted:
            shared.release(unstarted)
        handlers.finish()

        running = handlers.running()
        released = f"{len(unstarted)} unstarted jobs released; " if unstarted else ""
        if running:
            log.info(
                "%s stopping: %swaiting up to %gs for %d running jobs (%s aborts)",
                self._who,
                released,
                self.config.shutdown_grace,
                len(running),
                f"{self._signal} again" if self._signal else "stop() again",
            )
        else:
            log.info("%s stopping: %sno job running", self._who, released)
        self._wait(lambda: not handlers.alive(), until=deadline)
        for job in handlers.running():
            job_log(
                logging.WARNING,
                job,
                "%s: left claimed; its lock expires after %s and another worker takes it over",
                "still running when the shutdown was aborted"
                if self._force.is_set()
                else "still running after the shutdown grace period",
                self.config.lock_timeout,
            )
        handlers.abandon()

        # Send what is left: retried through connection losses until the flush deadline, or
        # tried once when aborting.
        flush_deadline = max(deadline, time.monotonic()) + ACK_FLUSH_SECONDS
        acker.close(flush_deadline)
        self._wait(
            lambda: ACKNOWLEDGER in self._ended_threads, until=flush_deadline + 1, abort=False
        )

    def _wait(self, done: Callable[[], bool], until: float = math.inf, abort: bool = True) -> None:
        """While shutting down, until ``done()`` or ``until``. A further stop request sets
        ``force``, which ends the wait (with ``abort``) and makes every retry give up."""
        while not done() and time.monotonic() < until:
            if self._stop_requests > self._patience and not self._force.is_set():
                self._force.set()
                self.aborted = True
                log.warning("%s: stop requested again, aborting the shutdown", self._who)
            if abort and self._force.is_set():
                return
            self._waker.sleep(min(until - time.monotonic(), 1.0))

    def _end(self) -> None:
        """End the run: burst done, or an error that claims or acknowledgements cannot get
        past."""
        self._ended = True
        self._waker.poke()

    def _start(self, body: Callable[[], None], name: str, shared: Shared) -> None:
        def target() -> None:
            try:
                body()
            except Exception as exc:  # a bug: the worker stops rather than lose jobs silently
                log.exception("%s: %s failed", self._who, name)
                shared.stop_with(exc)
            finally:
                self._ended_threads.add(name)  # before the wake-up: is_alive() may lag
                self._waker.poke()

        threading.Thread(target=target, name=name, daemon=True).start()

    def _resolve_dsn(self) -> tuple[str, str]:
        if self._given_pool is not None:
            conninfo = self._given_pool.conninfo
            return (conninfo() if callable(conninfo) else conninfo), "the given pool"
        if self._dsn is None:
            return resolve_dsn(None, embedded=False)
        return self._dsn, "the given DSN"

    def _find_schema(self, dsn: str) -> str:
        """Given no schema: the one the search_path of the given pool's connections, or of the
        DSN's own settings, finds (the worker's own connections run with ``search_path =
        pg_catalog, pg_temp``, so every call is qualified with it)."""
        try:
            if self._given_pool is not None:
                with self._given_pool.connection() as conn:
                    return _sql.find_schema(conn)
            return _sql.schema_of_dsn(dsn)
        except psycopg.Error as exc:
            _raise_from(exc)

    def _citus_node(self, dsn: str, source: str) -> tuple[str, str]:
        """On a Citus coordinator where the schema is a distributed schema, the DSN of the node
        that holds it, where its functions run and NOTIFY (see pgq_client.installer.citus).
        Unchanged without Citus, with a given pool, or when the node cannot be reached from
        here (claims then go through the coordinator, and the worker wakes by its poll)."""
        if self._given_pool is not None or self.config.schema is None:
            return dsn, source
        kwargs = self._connect_kwargs(dsn)
        try:
            with psycopg.connect(dsn, **kwargs) as conn:
                node = schema_node(conn, self.config.schema)
        except psycopg.Error:
            return dsn, source  # _check_database reports it
        if node is None:
            return dsn, source
        node_dsn = node_conninfo(dsn, node)
        try:
            psycopg.connect(node_dsn, **kwargs).close()
        except psycopg.Error as exc:
            log.warning(
                "%s: schema %s lives on Citus node %s:%s, which cannot be reached from here "
                "(%s); working through the coordinator, waking by poll",
                self._who, self.config.schema, node[0], node[1], describe(exc),
            )
            return dsn, source
        return node_dsn, f"{source}, on the Citus node {node[0]}:{node[1]} that holds the schema"

    def _connector(self, dsn: str) -> Callable[[], psycopg.Connection[Any]]:
        """How the fetcher and the acknowledger open their own connections (a given pool's
        ``kwargs`` apply to them too): :func:`~pgq_client._conn.opened`, which decodes jsonb
        with ``load_json`` (the fetcher's claims decode every job's payload and errors)."""
        return functools.partial(opened, dsn, **self._connect_kwargs(dsn))

    def _connect_kwargs(self, dsn: str, *, own: bool = True) -> dict[str, Any]:
        """The arguments of the connections the worker opens itself: for its own statements
        (``own``), :func:`pgq_client._sql.connect_kwargs` (``search_path = pg_catalog,
        pg_temp`` after the DSN's or the given pool's ``options``); for handlers, UTF-8 only."""
        given = {} if self._given_pool is None else self._given_pool.kwargs
        kwargs = {"connect_timeout": 10, **((given() if callable(given) else given) or {})}
        kwargs["autocommit"] = True
        if not own:
            return {**kwargs, **_sql.CLIENT_ENCODING}
        ours = _sql.connect_kwargs(dsn)
        if kwargs.get("options"):
            ours["options"] = f"{kwargs['options']} {_sql.SEARCH_PATH_OPTION}"
        # Every lock wait of the fetcher's and the acknowledger's statements is bounded: a
        # session that keeps a row locked (a transaction left open) makes a statement fail
        # with 55P03 after lock_wait, and the job it concerns is retried apart (Acknowledger),
        # instead of holding up the worker. A startup option: no round trip of its own. The
        # handlers' connections (own=False) keep the application's settings.
        wait = f"-c lock_timeout={max(1, round(self.config.lock_wait * 1000))}"
        return {**kwargs, **ours, "options": f"{ours['options']} {wait}"}

    def _check_database(self, link: Link) -> None:
        """Fail fast when the database is unreachable, not migrated, not ours to work, or has a
        breaking change that this client does not know."""
        beat = _sql.statements(self.config.schema).heartbeat
        try:
            conn = link.get()
            check_compatible(conn, self.config.schema)
            fetch(conn, _ops.call(beat, worker_id=self.worker_id, job_ids=[]))
        except IncompatibleSchema:
            link.close()
            raise
        except psycopg.Error as exc:
            link.close()
            _raise_from(exc, "a worker's role needs `jobq grant ROLE --as worker`")

    def _install_signal_handlers(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def on_signal(signum: int, frame: FrameType | None) -> None:
            # Only count and write a byte: the main thread may hold any lock at this moment.
            self._signal = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
            self.stop()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}

        def restore() -> None:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

        return restore


def _raise_from(exc: psycopg.Error, denied: str | None = None) -> NoReturn:
    """Raise the JobqError of ``exc`` (a PermissionDenied says what ``denied`` says)."""
    error = from_psycopg(exc)
    if denied is not None and isinstance(error, PermissionDenied):
        error = PermissionDenied(f"{error} ({denied})")
    if is_conninfo_error(exc):
        raise error from None  # libpq's own message may quote the password
    raise error from exc


def _capacity(config: WorkerConfig) -> str:
    """What runs the jobs, for the log line at start."""
    if not config.asynchronous:
        return f"{config.concurrency} handler threads"
    threads = config.handler_threads
    return (
        f"{config.concurrency} jobs at once ({threads} handler "
        f"thread{'s' if threads > 1 else ''} and an event loop for async handlers)"
    )
