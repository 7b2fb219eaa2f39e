"""The handler threads: ``concurrency`` of them run the jobs, in the order they were claimed."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn

import psycopg
from psycopg_pool import ConnectionPool

from .. import _ops, _sql
from .._ops import dump_result
from ..errors import PermanentError, Retry
from ..models import Job
from .config import WorkerConfig
from .errortext import error_text
from .joblog import job_log, log
from .retry import GaveUp, connection_lost, reconnecting
from .state import Failure, Outcome, Shared, Success

__all__ = ["HandlerPool", "Transaction"]


class HandlerPool:
    """``concurrency`` threads, each taking the next claimed job from the worker's buffer: the
    pool is the semaphore that lets at most ``concurrency`` jobs run at once.

    A plain handler's success is left to the acknowledger (batched), with what it returned as
    the job's result (None: no result); a failure is too, with ``errortext.error_text`` of the
    exception as the error text.
    A transactional handler, ``handler(job, conn)``, runs in a transaction on a connection of
    ``pool`` that also completes the job (fenced by its claim, with its result) and commits: the
    handler's writes and the completion commit together or not at all. A job that was asked to
    stop before a thread took it is not started: it is reported failed, which ends it
    ``cancelled``.
    """

    def __init__(
        self,
        shared: Shared,
        config: WorkerConfig,
        pool: ConnectionPool[Any] | None,
        force: threading.Event,
        who: str,
        on_exit: Callable[[], None],
    ) -> None:
        self._shared = shared
        self._on_exit = on_exit  # each thread calls it when it ends
        self._config = config
        self._sql = _sql.statements(config.schema)
        self._pool = pool
        self._force = force
        self._who = who
        self.deadline = float("inf")  # set at shutdown: opening a transaction stops retrying
        self._current: list[Job | None] = [None] * config.concurrency
        self._exited: list[int] = []
        self._threads = [
            threading.Thread(target=self._loop, args=(i,), name=f"jobq-handler-{i}", daemon=True)
            for i in range(config.concurrency)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def finish(self) -> None:
        """Let each thread end once the jobs it took are done."""
        for _ in self._threads:
            self._shared.work.put(None)

    def alive(self) -> bool:
        return len(self._exited) < len(self._threads)

    def running(self) -> list[Job]:
        return [job for job in self._current if job is not None]

    def abandon(self) -> None:
        """After the grace period: stop what can be stopped (a thread cannot be)."""

    def close(self) -> None:
        """Free what the handlers hold once the run is over."""

    def _loop(self, index: int) -> None:
        try:
            self._run_jobs(index)
        finally:
            self._exited.append(index)  # before the wake-up, so that alive() is already false
            self._on_exit()

    def _run_jobs(self, index: int) -> None:
        work, run_one = self._shared.work, self._run_one
        while True:
            job = work.get()
            if job is None:
                return
            run_one(index, job)

    def _run_one(self, index: int, job: Job) -> None:
        """Run ``job`` on this thread (number ``index``) and hand on how it ended."""
        self._current[index] = job
        started = time.perf_counter()
        try:
            outcome = self._execute(job)
        except BaseException as exc:  # never let a handler thread die, nor a job be stranded
            outcome = self.worker_error(job, exc)
        self._current[index] = None
        self._shared.finished(job, time.perf_counter() - started, outcome)

    def _execute(self, job: Job) -> Outcome | Success | Failure:
        handler = self.handler_of(job)
        if isinstance(handler, Failure):
            return handler
        if job.job_type in self._config.transactional:
            return self._in_transaction(job, handler)
        try:
            value = handler(job)
        except BaseException as exc:
            return self.failure_for(job, exc)
        return self.returned(job, value)

    def handler_of(self, job: Job) -> Callable[..., Any] | Failure:
        """The handler to start ``job`` with, or why it must not start: it has no handler (the
        claim filters by job type: only a bug gets here), or a cancel was requested before a
        handler took it."""
        handler = self._config.handlers.get(job.job_type)
        if handler is None:
            message = f"no handler for job type {job.job_type!r}"
            return Failure(job, message, message, True, self._config.retry_backoff)
        if job.cancel_requested():
            # jobq_fail ends a job with a cancel request cancelled, whatever retry says.
            message = "not started: a cancel was requested before a handler took the job"
            return Failure(job, message, message, False, self._config.retry_backoff)
        job_log(logging.DEBUG, job, "started")
        return handler

    def worker_error(self, job: Job, exc: BaseException) -> Failure:
        """A bug of the worker while it ran ``job``: the job is retried, never stranded."""
        job_log(logging.ERROR, job, "worker error while running the job", exc=exc)
        message = f"worker error: {error_text(exc)}"
        return Failure(job, message, repr(exc), True, self._config.retry_backoff)

    def returned(self, job: Job, value: object) -> Outcome | Success | Failure:
        """The outcome of a plain handler that returned ``value`` (stored as the result)."""
        if value is None:
            return Outcome.ACK
        try:
            return Success(dump_result(value) or "null")
        except (TypeError, ValueError) as exc:
            return self.unstorable(job, exc)

    def unstorable(self, job: Job, exc: BaseException) -> Failure:
        """The handler returned a value jobq cannot store as the job's result: a bug of the
        handler that another attempt would repeat, so no retry."""
        message = f"the handler returned a value that cannot be stored as the job's result: {exc}"
        return Failure(job, message, message, False, self._config.retry_backoff)

    def failure_for(self, job: Job, exc: BaseException) -> Failure:
        backoff = self._config.retry_backoff
        if isinstance(exc, Retry):
            if exc.after is not None:
                # jobq_fail waits attempts x backoff: divide, so that the wait is `after`.
                backoff = exc.after / max(job.attempts, 1)
            return Failure(job, f"Retry: {exc}", str(exc), True, backoff, requested=True)
        # The job's errors get the exception and the traceback's last frames (errortext), which
        # producers and monitors read; the whole traceback goes to the log, at DEBUG.
        job_log(logging.DEBUG, job, "the handler raised", exc=exc)
        error = error_text(exc)
        if isinstance(exc, PermanentError):
            return Failure(job, error, str(exc), False, backoff)
        return Failure(job, error, repr(exc), True, backoff)

    def _in_transaction(
        self, job: Job, handler: Callable[..., object]
    ) -> Outcome | Success | Failure:
        """Run ``handler(job, conn)`` and ``jobq_complete`` in one transaction."""
        try:
            return reconnecting(
                lambda: self._transaction(job, handler),
                doing="opening a transaction",
                who=self._who,
                give_up=self._giving_up,
                pause=self._force.wait,
                on_lost=self._check_pool,
            )
        except GaveUp:
            return self.not_run(job)

    def _giving_up(self) -> bool:
        return self._force.is_set() or time.monotonic() > self.deadline

    def not_run(self, job: Job) -> Outcome:
        job_log(logging.WARNING, job, "not run: database unavailable at shutdown")
        return Outcome.DROPPED

    def _transaction(self, job: Job, handler: Callable[..., object]) -> Outcome | Failure:
        """One try; raises only while the handler has not run (the transaction could not be
        opened), which :func:`reconnecting` then retries."""
        assert self._pool is not None
        with Transaction(self, job) as txn, self._pool.connection() as conn, conn.transaction():
            txn.opened = True
            try:
                value = handler(job, conn)
            except BaseException as exc:
                txn.roll_back(self.failure_for(job, exc))
            done = txn.completion(value)
            with conn.cursor(row_factory=done.row_factory) as cur:
                try:
                    txn.completed(cur.execute(done.query, done.params).fetchone())
                except psycopg.errors.ProgramLimitExceeded as exc:  # the result's size
                    txn.roll_back(self.unstorable(job, exc))
        return txn.outcome()

    def _check_pool(self) -> None:
        """After a lost connection the pool's idle ones are likely dead too (a server restart,
        terminated backends): let the pool test them all at once."""
        assert self._pool is not None
        try:
            self._pool.check()
        except Exception as exc:  # the pool keeps trying on its own
            log.debug("%s: pool check failed: %s", self._who, exc)


class Transaction:
    """What a transactional completion decides, apart from its I/O: the sync pool
    (:meth:`HandlerPool._transaction`) and the async one run the handler and ``jobq_complete``
    in one transaction on their own connections, inside ``with Transaction(...)``, and leave
    every decision to this."""

    def __init__(self, pool: HandlerPool, job: Job) -> None:
        self.pool, self.job = pool, job
        self.opened = False  # the handler was called: an error is no longer retried
        self.failure: Failure | None = None
        self.lost = False

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> bool:
        """The transaction is over: a Rollback was decided here already; another psycopg
        error goes to :meth:`broke`; anything else propagates."""
        if isinstance(exc, psycopg.Rollback):
            return True
        if isinstance(exc, psycopg.Error):
            self.broke(exc)
            return True
        return False

    def roll_back(self, failure: Failure) -> NoReturn:
        """Roll the handler's writes back; the job ends with ``failure``."""
        self.failure = failure
        raise psycopg.Rollback() from None

    def completion(self, value: object) -> _ops.Call:
        """``jobq_complete`` of the job with ``value`` as its result, fenced by its claim."""
        try:
            result = dump_result(value)
        except (TypeError, ValueError) as exc:
            self.roll_back(self.pool.unstorable(self.job, exc))
        config = self.pool._config
        return _ops.complete_call(self.pool._sql, self.job.id, config.worker_id,
                                  self.job.attempts, result)

    def completed(self, row: tuple[Any, ...] | None) -> None:
        """``jobq_complete`` said false: the claim was lost, and nothing must commit."""
        if not (row and row[0]):
            self.lost = True
            raise psycopg.Rollback()

    def broke(self, exc: psycopg.Error) -> None:
        """The transaction ended with ``exc`` (a Rollback is re-raised as an error when the
        rollback itself could not run: the transaction is gone either way, and ``failure`` or
        ``lost`` say why)."""
        if not self.opened:
            raise exc
        if self.failure is not None or self.lost:
            return
        if connection_lost(exc):
            # Lost during the completion or the commit: whether it committed is unknown. A
            # fenced fail is a no-op if it did, and a retry if it did not.
            message = f"connection lost during transactional completion: {exc}"
            self.failure = Failure(self.job, message, message, True,
                                   self.pool._config.retry_backoff)
        else:
            self.failure = self.pool.failure_for(self.job, exc)

    def outcome(self) -> Outcome | Failure:
        if self.lost:
            job_log(
                logging.WARNING,
                self.job,
                "claim lost before completion (lock expired and taken over); the handler's "
                "transaction was rolled back",
            )
            return Outcome.DROPPED
        if self.failure is not None:
            return self.failure
        job_log(logging.DEBUG, self.job, "succeeded (transactional)")
        return Outcome.COMMITTED
