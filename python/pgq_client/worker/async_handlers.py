"""``async def`` handlers: one event loop, on a thread of the Worker's own, runs all their jobs.

Used instead of :class:`~.handlers.HandlerPool` when a Worker has at least one ``async def``
handler, so that a Worker of plain handlers alone runs no event loop.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from ..models import Job
from .handlers import HandlerPool, Transaction
from .joblog import job_log, log
from .retry import GaveUp, areconnecting
from .state import Failure, Outcome, Success

__all__ = ["AsyncHandlerPool"]

LOOP = "jobq-asyncio"  # the event loop's thread
CLOSE_SECONDS = 5.0  # at the end of a run, how long cancelled jobs and the pool may take


class AsyncHandlerPool(HandlerPool):
    """Runs plain and ``async def`` handlers side by side, ``concurrency`` jobs at most in all.

    Both kinds take a slot of one semaphore of ``concurrency`` slots for as long as their job
    runs. The handler threads (``concurrency`` of them when some handlers are plain, else one)
    each take a slot, then the next claimed job: a plain handler's job runs on the thread, which
    gives the slot back when it is done; an async handler's job is handed to the event loop,
    and the thread goes on to the next job while it runs there (the job gives the slot back
    when it ends). The order in which jobs start is still the order they were claimed in.

    An async transactional handler, ``async def handler(job, conn)``, gets an
    ``AsyncConnection`` of a pool on the loop, with a transaction open, in which the job is then
    completed (fenced by its claim), as for a plain one.

    At shutdown, async jobs get the grace period like the others; after it they are cancelled
    and not acknowledged: each stays claimed until its lock expires, as a plain handler that is
    still running does.
    """

    def __init__(self, *args: Any, dsn: str, connect_kwargs: Mapping[str, Any]) -> None:
        """``args`` as :class:`HandlerPool`'s; ``dsn`` and ``connect_kwargs`` open the pool of
        the async transactional handlers."""
        super().__init__(*args)
        config = self._config
        if set(config.handlers) <= config.asynchronous:
            # No plain handler: one thread hands every job to the loop.
            del self._threads[1:]
            del self._current[1:]
        self._slots = threading.Semaphore(config.concurrency)
        self._dsn = dsn
        self._connect_kwargs = dict(connect_kwargs)
        self._event_loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self._run_loop, name=LOOP, daemon=True)
        # Jobs on the loop; written on the loop's thread, read by others under the lock.
        self._lock = threading.Lock()
        self._async_jobs: dict[uuid.UUID, Job] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._finishing = False
        self._abandoned = False
        self._async_pool: AsyncConnectionPool[Any] | None = None

    # -- the HandlerPool interface ------------------------------------------------------------

    def start(self) -> None:
        self._loop_thread.start()
        if self._config.transactional & self._config.asynchronous:
            # Before any job: its connections open in the background.
            self._call(self._open_pool()).result(CLOSE_SECONDS)
        super().start()

    def finish(self) -> None:
        """Let each thread end once the jobs it took are done (jobs on the loop go on)."""
        with self._lock:
            self._finishing = True
        super().finish()
        for _ in self._threads:  # a thread waiting for a slot takes its None at once
            self._slots.release()

    def alive(self) -> bool:
        with self._lock:
            on_loop = bool(self._async_jobs)
        return on_loop or super().alive()

    def running(self) -> list[Job]:
        with self._lock:
            on_loop = list(self._async_jobs.values())
        return super().running() + on_loop

    def abandon(self) -> None:
        """Cancel the async jobs still running after the grace period: not acknowledged."""
        with self._lock:
            self._abandoned = True
            cancelled = len(self._async_jobs)
        if cancelled:
            log.info("%s: cancelling %d running async jobs", self._who, cancelled)
            self._event_loop.call_soon_threadsafe(self._cancel_tasks)

    def close(self) -> None:
        """Cancel what still runs on the loop, close its pool, stop it."""
        if not self._loop_thread.is_alive():
            self._event_loop.close()
            return
        try:
            self._call(self._close()).result(CLOSE_SECONDS + 1)
        except Exception as exc:  # a handler that ignores its cancellation; the run is over
            log.warning("%s: the event loop did not stop cleanly: %s", self._who, exc)
        self._event_loop.call_soon_threadsafe(self._event_loop.stop)
        self._loop_thread.join(CLOSE_SECONDS)

    # -- the handler threads ------------------------------------------------------------------

    def _run_jobs(self, index: int) -> None:
        """Take a slot, then the next claimed job. Async jobs go to the loop a run at a time:
        while some wait to be sent, the slot and the job are taken without blocking, and the
        first that is not there sends the run in one ``call_soon_threadsafe``, which writes to
        the loop's wake-up pipe once for all of them, not once per job. A plain job first sends
        the run before it, then runs here, so jobs still start in the order they were claimed
        in."""
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
            else:
                run = self._send_to_loop(run)
                try:
                    self._run_one(index, job)
                finally:
                    slots.release()

    def _send_to_loop(self, jobs: list[Job]) -> list[Job]:
        """Have the loop start ``jobs`` (if any); a new empty run."""
        if jobs:
            self._event_loop.call_soon_threadsafe(self._start_tasks, jobs)
        return []

    # -- the event loop -----------------------------------------------------------------------

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._event_loop)
        try:
            self._event_loop.run_forever()
        finally:
            self._event_loop.run_until_complete(self._event_loop.shutdown_asyncgens())
            self._event_loop.close()

    def _call(self, coroutine: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._event_loop)

    def _start_tasks(self, jobs: list[Job]) -> None:
        for job in jobs:
            task = self._event_loop.create_task(self._run_async(job), name=f"jobq-job-{job.id}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _cancel_tasks(self) -> None:
        for task in self._tasks:
            task.cancel()

    async def _run_async(self, job: Job) -> None:
        started = time.perf_counter()
        outcome: Outcome | Success | Failure
        try:
            outcome = await self._execute_async(job)
        except asyncio.CancelledError:
            outcome = Outcome.DROPPED  # abandoned at shutdown: left claimed, not acknowledged
            job_log(logging.DEBUG, job, "cancelled after the shutdown grace period")
        except BaseException as exc:  # never lose a job to a bug of the worker
            outcome = self.worker_error(job, exc)
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

    async def _execute_async(self, job: Job) -> Outcome | Success | Failure:
        handler = self.handler_of(job)
        if isinstance(handler, Failure):
            return handler
        if job.job_type in self._config.transactional:
            return await self._in_async_transaction(job, handler)
        try:
            value = await handler(job)
        except asyncio.CancelledError as exc:
            if self._abandoned:
                raise
            return self.failure_for(job, exc)  # the handler's own, not the worker's
        except BaseException as exc:
            return self.failure_for(job, exc)
        return self.returned(job, value)

    async def _in_async_transaction(
        self, job: Job, handler: Callable[..., Any]
    ) -> Outcome | Success | Failure:
        """Run ``await handler(job, conn)`` and ``jobq_complete`` in one transaction."""
        try:
            return await areconnecting(
                lambda: self._async_transaction(job, handler),
                doing="opening a transaction",
                who=self._who,
                give_up=self._giving_up,
                on_lost=self._check_async_pool,
            )
        except GaveUp:
            return self.not_run(job)

    async def _async_transaction(
        self, job: Job, handler: Callable[..., Any]
    ) -> Outcome | Failure:
        """One try, as :meth:`HandlerPool._transaction`, awaited."""
        assert self._async_pool is not None
        with Transaction(self, job) as txn:
            async with self._async_pool.connection() as conn, conn.transaction():
                txn.opened = True
                try:
                    value = await handler(job, conn)
                except asyncio.CancelledError as exc:
                    if self._abandoned:
                        raise  # the transaction rolls back on the way out
                    txn.roll_back(self.failure_for(job, exc))
                except BaseException as exc:
                    txn.roll_back(self.failure_for(job, exc))
                done = txn.completion(value)
                async with conn.cursor(row_factory=done.row_factory) as cur:
                    try:
                        await cur.execute(done.query, done.params)
                    except psycopg.errors.ProgramLimitExceeded as exc:  # the result's size
                        txn.roll_back(self.unstorable(job, exc))
                    txn.completed(await cur.fetchone())
        return txn.outcome()

    async def _open_pool(self) -> None:
        """The pool of async transactional handlers: the Worker's database, opened in the
        background at start, at most ``concurrency`` connections."""
        kwargs = {**self._connect_kwargs, "autocommit": True}
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self._dsn,
            min_size=min(self._config.concurrency, 4),
            max_size=self._config.concurrency,
            kwargs=kwargs,
            name=f"jobq-worker-{self._config.worker_id}-async",
            timeout=5.0,
            open=False,
        )
        await pool.open(wait=False)
        self._async_pool = pool

    async def _check_async_pool(self) -> None:
        """After a lost connection the pool's idle ones are likely dead too: let the pool test
        them all at once."""
        if self._async_pool is None:
            return
        try:
            await self._async_pool.check()
        except Exception as exc:  # the pool keeps trying on its own
            log.debug("%s: pool check failed: %s", self._who, exc)

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
