"""The handler pool: runs the claimed jobs, ``concurrency`` at most at once, in claim order.

``concurrency`` threads take the jobs from the worker's buffer. With ``async def`` handlers, an
event loop on a thread of its own runs their jobs, and both kinds share a semaphore of
``concurrency`` slots: a thread (one alone when every handler is async) takes a slot, then the
next job, which runs on the thread or on the loop. How a job ends is decided once for both
kinds (:meth:`HandlerPool._end`). After the shutdown grace, async jobs are cancelled and not
acknowledged: they stay claimed until their lock expires, as a plain handler that still runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import queue
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from .. import _ops
from .._conn import fetch, fetched
from .._opcore import drive, settled, step
from ..errors import PermanentError, Retry
from ..models import Dependency, Job, attach_dependency_reader
from .errortext import error_text
from .joblog import job_log, log
from .retry import GaveUp, Reconnecting, connection_lost
from .state import Failure, Outcome, Shared, Success

LOOP = "jobq-asyncio"  # the event loop's thread
CLOSE_SECONDS = 5.0  # at the end of a run, how long cancelled jobs and the async pool may take

P = TypeVar("P", ConnectionPool[Any], AsyncConnectionPool[Any])
Result = Outcome | Success | Failure
Run = Callable[[_ops.Call], list[Any] | Awaitable[list[Any]]]  # a statement in the transaction


class HandlerPool:
    """``pool``: the application's pool, which plain transactional handlers take their
    connections from; without one, ``dsn`` and ``connect_kwargs`` open a pool for them, and
    one for async ones on the loop. ``on_exit``: a thread ended, or at shutdown a job on the
    loop (the Worker looks at :meth:`alive` again)."""

    def __init__(
        self,
        shared: Shared,
        pool: ConnectionPool[Any] | None,
        on_exit: Callable[[], None],
        *,
        dsn: str,
        connect_kwargs: Mapping[str, Any],
    ) -> None:
        self._shared, self._given_pool, self._on_exit = shared, pool, on_exit
        config = self._config = shared.config
        self._sql, self._force, self._who = shared.sql, shared.force, shared.who
        self.deadline = math.inf  # set at shutdown: opening a transaction stops retrying then
        threads = config.handler_threads
        self._current: list[Job | None] = [None] * threads
        self._exited: list[int] = []
        self._threads = [
            threading.Thread(target=self._thread, args=(i,), name=f"jobq-handler-{i}", daemon=True)
            for i in range(threads)
        ]
        # The event loop's share; its jobs are written on its thread, read by others under _lock.
        self._loop = asyncio.new_event_loop() if config.asynchronous else None
        self._loop_thread = threading.Thread(target=self._run_loop, name=LOOP, daemon=True)
        self._slots = threading.Semaphore(config.concurrency)
        self._lock = threading.Lock()
        self._async_jobs: dict[uuid.UUID, Job] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._finishing = self._abandoned = False
        self._dsn, self._connect_kwargs = dsn, dict(connect_kwargs)
        self._pool = pool
        if pool is None and config.transactional - config.asynchronous:
            self._pool = self._new_pool(ConnectionPool)
        self._async_pool: AsyncConnectionPool[Any] | None = None

    # -- what the Worker calls ----------------------------------------------------------------

    def start(self) -> None:
        if self._pool is not None and self._pool is not self._given_pool:
            self._pool.open(wait=False)
        if self._loop is not None:
            self._loop_thread.start()
            if self._config.transactional & self._config.asynchronous:
                # Before any job: its connections open in the background.
                self._call(self._open_pool()).result(CLOSE_SECONDS)
        for thread in self._threads:
            thread.start()

    def finish(self) -> None:
        """Let each thread end once the jobs it took are done (jobs on the loop go on)."""
        with self._lock:
            self._finishing = True
        for _ in self._threads:
            self._shared.work.put(None)
            self._slots.release()  # a thread waiting for a slot takes its None at once

    def alive(self) -> bool:
        with self._lock:
            on_loop = bool(self._async_jobs)
        return on_loop or len(self._exited) < len(self._threads)

    def running(self) -> list[Job]:
        with self._lock:
            on_loop = list(self._async_jobs.values())
        return [job for job in self._current if job is not None] + on_loop

    def abandon(self) -> None:
        """After the grace period: cancel the async jobs, which are then not acknowledged (a
        thread cannot be stopped)."""
        with self._lock:
            self._abandoned = True
            cancelled = len(self._async_jobs)
        if cancelled and self._loop is not None:
            log.info("%s: cancelling %d running async jobs", self._who, cancelled)
            self._loop.call_soon_threadsafe(self._cancel_tasks)

    def close(self) -> None:
        """Close the pool opened for plain handlers; cancel what still runs on the loop, close
        its pool, stop it."""
        if self._pool is not None and self._pool is not self._given_pool:
            self._pool.close(timeout=CLOSE_SECONDS)
        if self._loop is None:
            return
        if not self._loop_thread.is_alive():
            self._loop.close()
            return
        try:
            self._call(self._close()).result(CLOSE_SECONDS + 1)
        except Exception as exc:  # a handler that ignores its cancellation; the run is over
            log.warning("%s: the event loop did not stop cleanly: %s", self._who, exc)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop_thread.join(CLOSE_SECONDS)

    # -- the handler threads ------------------------------------------------------------------

    def _thread(self, index: int) -> None:
        try:
            if self._loop is None:
                work, run_one = self._shared.work, self._run_one
                while (job := work.get()) is not None:
                    run_one(index, job)
            else:
                self._take_slots(index)
        finally:
            self._exited.append(index)  # before the wake-up, so that alive() is already false
            self._on_exit()

    def _take_slots(self, index: int) -> None:
        """Take a slot, then the next job. Async jobs go to the loop a run at a time: while
        some wait to be sent, slots and jobs are taken without blocking, and the first that is
        not there sends the run in one ``call_soon_threadsafe`` (one wake-up of the loop for
        all). A plain job sends the run before it first: jobs start in claim order."""
        work, slots, asynchronous = self._shared.work, self._slots, self._config.asynchronous
        run: list[Job] = []  # async jobs taken, not yet sent to the loop
        while True:
            if not slots.acquire(blocking=not run):
                run = self._send_to_loop(run)
                continue
            try:
                job = work.get(block=not run)
            except queue.Empty:
                slots.release()
                run = self._send_to_loop(run)
                continue
            if job is None:
                slots.release()
                self._send_to_loop(run)
                return
            if job.job_type in asynchronous:
                with self._lock:
                    self._async_jobs[job.id] = job
                run.append(job)
                continue
            run = self._send_to_loop(run)
            try:
                self._run_one(index, job)
            finally:
                slots.release()

    def _send_to_loop(self, jobs: list[Job]) -> list[Job]:  # a new empty run
        if jobs and self._loop is not None:
            self._loop.call_soon_threadsafe(self._start_tasks, jobs)
        return []

    def _run_one(self, index: int, job: Job) -> None:
        self._current[index] = job
        started = time.perf_counter()
        try:
            outcome = step(self._end(job))
        except BaseException as exc:  # never let a handler thread die, nor a job be stranded
            outcome = self._worker_error(job, exc)
        self._current[index] = None
        self._shared.finished(job, time.perf_counter() - started, outcome)

    # -- how a job ends, for both kinds ---------------------------------------------------------

    async def _end(self, job: Job) -> Result:
        """Run ``job``'s handler: how the job ended. A plain handler's job is stepped on its
        thread (nothing it awaits suspends), an async handler's awaited on the loop."""
        handler: Callable[..., Any] | None = self._config.handlers.get(job.job_type)
        if handler is None:  # the claim filters by job type: only a bug gets here
            return self._failure(job, f"no handler for job type {job.job_type!r}")
        if job.cancel_requested():  # jobq_fail then ends it cancelled, whatever retry says
            message = "not started: a cancel was requested before a handler took the job"
            return self._failure(job, message, retry=False)
        job_log(logging.DEBUG, job, "started")
        attach_dependency_reader(job, self._dependencies)
        asynchronous = job.job_type in self._config.asynchronous
        if job.job_type in self._config.transactional:
            return await self._in_transaction(job, handler, asynchronous)
        return await self._ran(job, handler, asynchronous)

    async def _ran(
        self,
        job: Job,
        handler: Callable[..., Any],
        asynchronous: bool,
        conn: Any = None,
        run: Run | None = None,
    ) -> Result:
        """Run the handler (``handler(job, conn)`` with a connection) and say how the job ended:
        with ``run``, its completion is run in the handler's transaction. A result jobq cannot
        store (not JSON, over the size limit) is a bug of the handler that another attempt
        would repeat: it fails the job, with no retry."""
        try:
            value = handler(job) if conn is None else handler(job, conn)
            if asynchronous:
                value = await value
        except BaseException as exc:
            return self._failure_for(job, exc)
        try:
            if run is None and value is None:
                return Outcome.ACK
            if run is None:
                return Success(job, _ops.dump_result(value) or "null")
            completion = _ops.complete(
                self._sql, job.id, self._config.worker_id, job.attempts, value
            )
            if await _ops.adrive(completion, run):
                return Outcome.COMMITTED
        except (TypeError, ValueError, psycopg.errors.ProgramLimitExceeded) as exc:
            why = "the handler returned a value that cannot be stored as the job's result"
            return self._failure(job, f"{why}: {exc}", retry=False)
        job_log(
            logging.WARNING,
            job,
            "claim lost before completion (lock expired and taken over); the handler's "
            "transaction was rolled back",
        )
        return Outcome.DROPPED

    def _failure(
        self, job: Job, error: str, retry: bool = True, summary: str | None = None
    ) -> Failure:
        return Failure(job, error, summary or error, retry, self._config.retry_backoff)

    def _failure_for(self, job: Job, exc: BaseException) -> Failure:
        """The handler raised ``exc``. An async job cancelled after the grace period is not a
        failure: its cancellation goes on up, and nothing is acknowledged."""
        if self._abandoned and isinstance(exc, asyncio.CancelledError):
            raise exc
        if isinstance(exc, Retry):
            backoff = self._config.retry_backoff
            if exc.after is not None:
                # jobq_fail waits attempts x backoff: divide, so that the wait is `after`.
                backoff = exc.after / max(job.attempts, 1)
            return Failure(job, f"Retry: {exc}", str(exc), True, backoff, requested=True)
        # The job's errors get the exception and the traceback's last frames, which producers
        # and monitors read; the whole traceback goes to the log, at DEBUG.
        job_log(logging.DEBUG, job, "the handler raised", exc=exc)
        if isinstance(exc, PermanentError):
            return self._failure(job, error_text(exc), retry=False, summary=str(exc))
        return self._failure(job, error_text(exc), summary=repr(exc))

    def _worker_error(self, job: Job, exc: BaseException) -> Failure:
        """A bug of the worker while it ran ``job``: the job is retried, never stranded."""
        job_log(logging.ERROR, job, "worker error while running the job", exc=exc)
        return self._failure(job, f"worker error: {error_text(exc)}", summary=repr(exc))

    # -- transactional completion, for both kinds ----------------------------------------------

    async def _in_transaction(
        self, job: Job, handler: Callable[..., Any], asynchronous: bool
    ) -> Result:
        """``handler(job, conn)`` and ``jobq_complete`` in one transaction, tried again while
        the transaction cannot be opened (and the handler has not run)."""
        pause = asyncio.sleep if asynchronous else self._force.wait
        retry = Reconnecting(
            self._who, self._giving_up, pause, lambda: self._check_pool(asynchronous)
        )
        try:
            return await retry.acall(
                lambda: self._transaction(job, handler, asynchronous), "opening a transaction"
            )
        except GaveUp:
            job_log(logging.WARNING, job, "not run: database unavailable at shutdown")
            return Outcome.DROPPED

    def _giving_up(self) -> bool:  # aborting, or past the grace period: stop opening
        return self._force.is_set() or time.monotonic() > self.deadline

    async def _transaction(
        self, job: Job, handler: Callable[..., Any], asynchronous: bool
    ) -> Result:
        """One try, which raises only while the handler has not run. Anything but a
        completion that said true rolls the handler's writes back."""
        opened, outcome = False, None
        try:
            async with self._connection(asynchronous) as (conn, run):
                opened = True
                outcome = await self._ran(job, handler, asynchronous, conn, run)
                if outcome is not Outcome.COMMITTED:
                    raise psycopg.Rollback()
        except psycopg.Rollback:
            pass  # its rollback could not run: the transaction is gone either way
        except psycopg.Error as exc:
            if not opened:
                raise
            if outcome in (None, Outcome.COMMITTED):  # else the rollback of a decided end failed
                outcome = self._broken(job, exc)
        assert outcome is not None
        if outcome is Outcome.COMMITTED:
            job_log(logging.DEBUG, job, "succeeded (transactional)")
        return outcome

    def _broken(self, job: Job, exc: psycopg.Error) -> Failure:
        """The transaction of a handler that ran ended with ``exc``."""
        if connection_lost(exc):
            # Lost during the completion or the commit: whether it committed is unknown. A
            # fenced fail is a no-op if it did, and a retry if it did not.
            return self._failure(job, f"connection lost during transactional completion: {exc}")
        return self._failure_for(job, exc)

    @contextlib.asynccontextmanager
    async def _connection(self, asynchronous: bool) -> AsyncIterator[tuple[Any, Run]]:
        """A connection in a transaction, and how to run a statement in it: of the async pool
        for an async handler, else of the worker's pool (each keeps the application's
        search_path; jobq's completion on it is qualified and typed, see _sql)."""
        if asynchronous:
            assert self._async_pool is not None
            async with self._async_pool.connection() as aconn, aconn.transaction():
                yield aconn, functools.partial(fetched, aconn)
        else:
            assert self._pool is not None
            with self._pool.connection() as conn, conn.transaction():
                yield conn, functools.partial(fetch, conn)

    def _dependencies(self, job_id: uuid.UUID) -> list[Dependency]:
        """``job.dependencies()``: on a connection of the handlers' pool when there is one, else
        on one opened for the call (a handler reads its dependencies once, at its start)."""
        with (
            self._pool.connection()
            if self._pool is not None
            else psycopg.connect(self._dsn, **self._connect_kwargs)
        ) as conn:
            return drive(_ops.dependencies(self._sql, job_id), functools.partial(fetch, conn))

    async def _check_pool(self, asynchronous: bool) -> None:
        """After a lost connection the pool's idle ones are likely dead too (a server restart,
        terminated backends): let the pool test them all at once."""
        pool = self._async_pool if asynchronous else self._pool
        try:
            await settled(pool.check() if pool is not None else None)
        except Exception as exc:  # the pool keeps trying on its own
            log.debug("%s: pool check failed: %s", self._who, exc)

    # -- the event loop -------------------------------------------------------------------------

    def _run_loop(self) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    def _call(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _start_tasks(self, jobs: list[Job]) -> None:
        assert self._loop is not None
        for job in jobs:
            task = self._loop.create_task(self._run_async(job), name=f"jobq-job-{job.id}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _cancel_tasks(self) -> None:
        for task in self._tasks:
            task.cancel()

    async def _run_async(self, job: Job) -> None:
        started = time.perf_counter()
        outcome: Result
        try:
            outcome = await self._end(job)
        except asyncio.CancelledError:
            outcome = Outcome.DROPPED  # abandoned at shutdown: left claimed, not acknowledged
            job_log(logging.DEBUG, job, "cancelled after the shutdown grace period")
        except BaseException as exc:  # never lose a job to a bug of the worker
            outcome = self._worker_error(job, exc)
        with self._lock:
            if self._abandoned:  # whatever the handler did once cancelled: not acknowledged
                outcome = Outcome.DROPPED
        self._shared.finished(job, time.perf_counter() - started, outcome)
        with self._lock:
            self._async_jobs.pop(job.id, None)
            finishing = self._finishing
        self._slots.release()
        if finishing:
            self._on_exit()  # the run's thread waits for the last job

    def _new_pool(self, kind: type[P], suffix: str = "") -> P:
        """A pool of transactional handlers' connections, opened in the background. They keep
        the application's search_path: jobq's completion on them is qualified and typed."""
        return kind(
            self._dsn,
            min_size=min(self._config.concurrency, 4),
            max_size=self._config.concurrency,
            kwargs=self._connect_kwargs,
            name=f"jobq-worker-{self._config.worker_id}{suffix}",
            timeout=5.0,
            open=False,
        )

    async def _open_pool(self) -> None:  # the async handlers' pool, on the loop
        pool = self._new_pool(AsyncConnectionPool[Any], "-async")
        await pool.open(wait=False)
        self._async_pool = pool

    async def _close(self) -> None:
        tasks = list(self._tasks)
        if tasks:
            if not self._abandoned:
                self._cancel_tasks()
            # Cancelled already: let them run their cleanup (a rollback, a log line) before
            # they are cancelled again.
            _, pending = await asyncio.wait(tasks, timeout=CLOSE_SECONDS)
            for task in pending:
                task.cancel()
        if self._async_pool is not None:
            await self._async_pool.close(timeout=CLOSE_SECONDS)
