"""The acknowledger: one thread, one connection, for everything the worker owes the database."""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

import psycopg

from .. import _ops, _sql
from .._conn import fetch
from ..errors import JobqError, PayloadTooLarge, PermissionDenied
from ..models import Job, mark_cancel_requested
from .joblog import UNSERVED_IDLE, duration, job_log, log, log_completed, report_unserved
from .retry import GaveUp, Link, Reconnecting
from .state import Ack, Failure, Release, Shared, Success, job_id, job_of

ACK_LINGER = 0.005
"""Seconds a result may wait for others to share its round trip (and its commit)."""

UNSERVED_AFTER = 3.0
"""Seconds after start when the worker looks for available jobs that no worker serves."""

CANCEL_CHECK_PAUSE = 0.05
"""Seconds between two cancel checks that notifications ask for: anyone may NOTIFY on the
cancel channel, and a flood of notifications must not turn into as many statements."""

LOCKED_RETRY_FIRST = 0.2
LOCKED_RETRY_CAP = 5.0
"""Seconds before an acknowledgement that found its row locked is tried again; doubles each
time it is locked again, up to the cap."""


class Locked(Exception):
    """A statement gave up waiting for a row lock another session holds (55P03, after the
    connection's lock_timeout): the call is retried later, apart from the other jobs."""


class _Path(NamedTuple):
    """How one kind of acknowledgement is sent: its statement for a batch, and what its rows
    say (logged, and the jobs settled)."""

    doing: str
    call: Callable[[Acknowledger, list[Any]], _ops.Call]
    done: Callable[[Acknowledger, list[Any], list[Any], bool], None]


class Acknowledger:
    """Sends releases, completions and failures, each kind in one statement, then the due
    heartbeat (which also asks which held jobs have a cancel request, and marks them for
    ``job.cancel_requested()``), tick and cancel check.

    One thread doing all of them one after the other keeps a heartbeat from meeting an
    acknowledgement of the same rows (a heartbeat skips rows locked by others, and a smaller
    count would no longer mean lost claims). Every call is fenced by the claim's attempt, so a
    batch whose reply was lost with the connection is simply sent again. Batches go in id
    order: jobq_cancel locks rows in id order too, so the two wait instead of deadlocking.
    """

    def __init__(self, shared: Shared, link: Link) -> None:
        self._shared, self._link = shared, link
        config = self._config = shared.config
        self._sql, self._force, self._who = shared.sql, shared.force, shared.who
        self._deadline = math.inf
        now = time.monotonic()
        self._next_beat = now + config.heartbeat_seconds
        self._next_summary = now + (config.summary_interval or math.inf)
        self._next_tick = now + (config.tick_interval or math.inf)  # claims first
        # After this worker's first claims have recorded what it serves (a burst run says it
        # at its end instead).
        self._next_unserved = math.inf if shared.burst else now + UNSERVED_AFTER
        self._next_cancel_check = 0.0
        self._tick_failed = False  # a failing tick is logged once, until it works again
        # False once jobq_cancel_requested was denied (a role granted before the function
        # existed): the heartbeat then goes alone, and running handlers are not told of cancels.
        self._cancels_allowed = True
        self._counted = (0, 0, now)  # done, failed, when: at the last summary
        # Acknowledgements whose row another session kept locked past lock_wait: sent again,
        # apart, at _stuck_at (never holding up the others meanwhile).
        self._stuck: list[Ack] = []
        self._stuck_at = math.inf
        self._stuck_delay = LOCKED_RETRY_FIRST
        self._retry = Reconnecting(self._who, self._giving_up, self._force.wait, self._lost)
        self._retried = False  # the statement under way was sent again after a lost connection

    def close(self, deadline: float) -> None:
        """Send what is left, retrying through connection losses until ``deadline``; then end."""
        self._deadline = deadline
        with self._shared.lock:
            self._shared.acks_closed = True
            self._shared.acks_ready.notify()

    def run(self) -> None:
        try:
            self._loop()
        finally:
            self._link.close()

    def _giving_up(self) -> bool:  # after close(), past the deadline; or aborting
        return self._force.is_set() or time.monotonic() > self._deadline

    def _loop(self) -> None:
        config = self._config
        while (batch := self._next_batch()) is not None:
            retrying = time.monotonic() >= self._stuck_at
            if retrying:
                batch, self._stuck, self._stuck_at = [*batch, *self._stuck], [], math.inf
            if not self._acknowledge(batch):
                return
            if retrying and self._stuck_at == math.inf:
                self._stuck_delay = LOCKED_RETRY_FIRST  # they all went through
            try:
                now = time.monotonic()
                if now >= self._next_beat:
                    # Set before the call: a heartbeat that met a lock brings the next one
                    # forward.
                    self._next_beat = time.monotonic() + config.heartbeat_seconds
                    self._heartbeat()
                elif self._shared.cancel_check and now >= self._next_cancel_check:
                    self._heartbeat(renew=False)
                    self._next_cancel_check = time.monotonic() + CANCEL_CHECK_PAUSE
                if now >= self._next_tick:
                    self._tick()
                    self._next_tick = time.monotonic() + (config.tick_interval or math.inf)
                if now >= self._next_unserved:
                    self._next_unserved = math.inf
                    self._unserved()
            except (GaveUp, JobqError) as exc:
                self._abandon([], exc)
                return
            if now >= self._next_summary:
                self._summary()
                self._next_summary = time.monotonic() + (config.summary_interval or math.inf)

    def _next_batch(self) -> list[Ack] | None:
        """Wait until something is to be sent (or a heartbeat, a tick, a cancel check or a
        summary is due), and take it; None once closed and everything is sent.

        Results wait up to ``ACK_LINGER`` for others to join them, and go at once when a
        claim's worth has gathered, when no job is left running (nothing else is coming soon:
        an idle worker adds no delay) and at shutdown.
        """
        shared = self._shared
        flush_at = math.inf
        with shared.lock:
            while True:
                now = time.monotonic()
                pending = len(shared.acks)
                check = shared.cancel_check and now >= self._next_cancel_check
                if (pending and shared.acks_closed) or check:
                    break
                if pending:
                    flush_at = min(flush_at, now + ACK_LINGER)
                    if now >= flush_at or not shared.unfinished or pending >= shared.ack_batch():
                        break
                elif shared.acks_closed and self._stuck_at == math.inf:
                    return None
                timer = min(
                    self._next_beat,
                    self._next_summary,
                    self._next_tick,
                    self._next_unserved,
                    self._stuck_at,
                    self._next_cancel_check if shared.cancel_check else math.inf,
                )
                if now >= timer:
                    break
                shared.acks_ready.wait(min(timer, flush_at) - now)
            batch, shared.acks = shared.acks, []
            return batch

    def _acknowledge(self, batch: list[Ack]) -> bool:
        """Send ``batch``, each kind in one statement (the failures last, with those of results
        that could not be stored). False on an error no retry gets past."""
        groups: dict[_Path, list[Any]] = {RELEASE: [], COMPLETE: [], FAIL: []}
        for ack in batch:
            groups[_PATHS.get(type(ack), COMPLETE)].append(ack)
        for path, acks in groups.items():
            try:
                if acks:
                    groups[FAIL] += self._send_apart(path, sorted(acks, key=job_id))
            except (GaveUp, JobqError) as exc:
                self._abandon([ack for group in groups.values() for ack in group], exc)
                return False
            acks.clear()
        return True

    def _send_apart(self, path: _Path, acks: list[Any]) -> list[Failure]:
        """``acks`` in one statement; when a row of theirs is locked by another session past
        lock_wait, or a result is over the installation's size limit (54000), each alone: a
        locked one is set aside and sent again when due, a result that is refused fails its
        job. Returns those failures."""
        try:
            rows, retried = self._send(path.call(self, acks), path.doing % len(acks))
        except (Locked, PayloadTooLarge) as exc:
            if len(acks) > 1:
                return [failure for ack in acks for failure in self._send_apart(path, [ack])]
            if isinstance(exc, Locked):
                self._defer(acks)
                return []
            if not isinstance(acks[0], Success):
                raise
            message = f"the handler's result cannot be stored: {exc}"
            return [Failure(acks[0].job, message, message, False, timedelta(0))]
        path.done(self, acks, rows, retried)
        return []

    def _send(self, statement: _ops.Call, doing: str) -> tuple[list[Any], bool]:
        """The rows of ``statement``, sent through lost connections, and whether it was
        retried (then an earlier try may have been applied, its reply lost)."""

        def call() -> list[Any]:
            try:
                return fetch(self._link.get(), statement)
            except psycopg.errors.LockNotAvailable as exc:
                # Not retried here: waiting for that row would hold up every other job.
                raise Locked(doing) from exc

        self._retried = False
        return self._retry(call, doing), self._retried

    def _lost(self) -> None:  # (a broken connection is replaced by the next Link.get)
        self._retried = True

    # -- what each path sends, and what its rows say ---------------------------------------------

    def _release_call(self, acks: list[Release]) -> _ops.Call:
        job_ids = [a.job.id for a in acks]
        return _ops.call(self._sql.release, job_ids=job_ids, worker_id=self._config.worker_id)

    def _released(self, acks: list[Release], rows: list[Any], retried: bool) -> None:
        log.info("%s released %d unstarted jobs", self._who, rows[0][0])
        for ack in acks:
            job_log(logging.DEBUG, ack.job, "released (never started)")
        self._shared.settled([a.job for a in acks])

    def _complete_call(self, acks: list[Job | Success]) -> _ops.Call:
        if len(acks) == 1 and isinstance(acks[0], Success):  # its error names the result alone
            job, result = acks[0]
            return _ops.call(
                self._sql.complete,
                job_id=job.id,
                worker_id=self._config.worker_id,
                attempt=job.attempts,
                result=result,
            )
        return complete_many_call(self._sql, acks, self._config.worker_id)

    def _completed(self, acks: list[Job | Success], rows: list[Any], retried: bool) -> None:
        jobs, done = [job_of(a) for a in acks], int(rows[0][0])  # a count, or jobq_complete's bool
        log_completed(self._who, jobs, done, retried)
        self._shared.settled(jobs, done=done)

    def _fail_call(self, failures: list[Failure]) -> _ops.Call:
        return _ops.call(
            self._sql.fail_many,
            job_ids=[f.job.id for f in failures],
            worker_id=self._config.worker_id,
            errors=[_storable(f.error) for f in failures],
            retries=[f.retry for f in failures],
            backoffs=[f.backoff for f in failures],
            attempts=[f.job.attempts for f in failures],
        )

    def _failed(self, failures: list[Failure], rows: list[Any], retried: bool) -> None:
        recorded = 0
        for failure, (_, _, status) in zip(failures, rows, strict=True):
            recorded += status is not None
            _log_failure(failure, status, retried)
        self._shared.settled([f.job for f in failures], failed=recorded)

    # -- heartbeats, cancels, schedules --------------------------------------------------------

    def _heartbeat(self, renew: bool = True) -> None:
        """Renew the claims of the held jobs and learn which have a cancel request, in one
        statement; without ``renew`` (a notification said a job of this worker got a cancel
        request), only the latter."""
        with self._shared.lock:
            ids = list(self._shared.held)
            self._shared.cancel_check = False  # this statement asks
        if not ids or not (renew or self._cancels_allowed):
            return
        doing = "renewing claims" if renew else "asking for cancel requests"
        s, worker_id = self._sql, self._config.worker_id
        if not renew:
            call = _ops.call(s.cancel_requested, job_ids=ids)
        else:
            beat = s.heartbeat_cancels if self._cancels_allowed else s.heartbeat
            call = _ops.call(beat, worker_id=worker_id, job_ids=ids)
        try:
            rows, _ = self._send(call, doing)
        except PermissionDenied as exc:
            if not self._cancels_allowed:
                raise
            log.warning(
                "%s: cannot ask for cancel requests (jobq_cancel_requested: %s); running jobs "
                "are not told of cancels. Grant the worker level again (`jobq grant ROLE --as "
                "worker`) after an upgrade",
                self._who,
                exc,
            )
            self._cancels_allowed = False
            self._heartbeat(renew)  # a heartbeat alone
            return
        except Locked:  # a table lock (DDL): the claims' locks run out meanwhile, so retry soon
            log.warning("%s: %s waited for a lock past lock_wait; retried", self._who, doing)
            self._next_beat = time.monotonic() + LOCKED_RETRY_FIRST
            return
        if not renew:
            self._mark_cancelled([row[0] for row in rows])
            return
        renewed = int(rows[0][0])
        if len(rows[0]) > 1:
            self._mark_cancelled(rows[0][1])
        # Jobs the fetcher is completing may have been locked by its transaction, and skipped:
        # they are not counted (the completion says whether their claim was lost).
        with self._shared.lock:
            held, completing = self._shared.held, self._shared.key_completing
            still_held = sum(1 for i in ids if i in held and i not in completing)
        if renewed < still_held:
            log.warning(
                "%s: %d of %d claims were not renewed: lost (lock expired and taken over; their "
                "results will not be recorded), or their row was locked by a transactional "
                "completion at that moment",
                self._who,
                still_held - renewed,
                still_held,
            )
        else:
            log.debug("%s renewed %d claims", self._who, renewed)

    def _mark_cancelled(self, ids: Sequence[uuid.UUID]) -> None:  # job.cancel_requested()
        with self._shared.lock:
            jobs = [self._shared.held[i] for i in ids if i in self._shared.held]
        for job in jobs:
            if mark_cancel_requested(job):
                job_log(logging.INFO, job, "cancel requested; job.cancel_requested() is now true")

    def _tick(self) -> None:
        """Fire the due schedules (``jobq_tick``). Every worker ticks, no leader is needed: due
        schedules are locked with SKIP LOCKED and each fire's job has an idempotency key. A
        tick that fails for good (a role without EXECUTE on jobq_tick) is logged once and is
        not fatal: the worker's jobs matter more than its schedules."""
        if self._giving_up() or self._shared.acks_closed:
            return
        try:
            fires = _ops.drive(_ops.tick(self._sql), lambda c: self._send(c, "firing schedules")[0])
        except Locked:
            log.debug("%s: firing schedules waited for a lock past lock_wait; next tick", self._who)
            return
        except JobqError as exc:
            if not self._tick_failed:
                log.warning(
                    "%s: cannot fire schedules (jobq_tick): %s; this worker keeps running jobs "
                    "and tries again every %.0f s without logging it again",
                    self._who,
                    exc,
                    self._config.tick_interval or 0,
                )
                self._tick_failed = True
            return
        if self._tick_failed:
            log.info("%s: firing schedules works again", self._who)
            self._tick_failed = False
        for fire in fires:
            log.info(
                "%s: schedule %s fired for %s: job %s",
                self._who, fire.schedule, fire.fire_at.isoformat(), fire.job_id,
            )

    def _unserved(self) -> None:
        """Say once, soon after start, which available jobs no worker serves."""
        if not (self._giving_up() or self._shared.acks_closed):
            look_for_unserved(
                self._sql, self._who, lambda c: self._send(c, "looking for jobs nobody serves")[0]
            )

    # -- what is set aside or given up on -------------------------------------------------------

    def _defer(self, acks: list[Ack]) -> None:
        """Set aside ``acks``, whose row another session keeps locked, due after the current
        delay (which then doubles)."""
        if self._giving_up():  # shutting down, past the deadline: stop waiting for that lock
            raise GaveUp("waiting for a row lock that another session holds")
        self._stuck += acks
        self._stuck_at = min(self._stuck_at, time.monotonic() + self._stuck_delay)
        for ack in acks:
            job_log(
                logging.WARNING,
                job_of(ack),
                "acknowledgement waits for a row lock another session holds; tried again in %s",
                duration(timedelta(seconds=self._stuck_delay)),
            )
        self._stuck_delay = min(self._stuck_delay * 2, LOCKED_RETRY_CAP)

    def _abandon(self, acks: list[Ack], why: BaseException) -> None:
        """Log what could not be sent, and let the worker stop (on a permanent error)."""
        if isinstance(why, JobqError):
            log.error("%s: acknowledging failed, stopping: %s", self._who, why)
            self._shared.stop_with(why)
        with self._shared.lock:  # what came in meanwhile is not sent either
            acks, self._shared.acks = [*acks, *self._shared.acks], []
        releases = [a for a in acks if isinstance(a, Release)]
        if releases:
            log.warning(
                "%s could not release %d unstarted jobs (%s); they are taken over when their "
                "lock expires",
                self._who,
                len(releases),
                why,
            )
        for ack in acks:
            if not isinstance(ack, Release):
                job_log(
                    logging.ERROR,
                    job_of(ack),
                    "result not recorded (%s); the job runs again after its lock expires",
                    "database unavailable at shutdown" if isinstance(why, GaveUp) else why,
                )

    def _summary(self) -> None:
        with self._shared.lock:
            done, failed, in_flight = self._shared.done, self._shared.failed, len(self._shared.held)
        now = time.monotonic()
        last_done, last_failed, since = self._counted
        self._counted = (done, failed, now)
        finished = (done - last_done) + (failed - last_failed)
        if finished or in_flight:
            log.info(
                "%s: %d jobs done, %d failed in the last %.0fs (%.1f/s); %d in flight",
                self._who,
                done - last_done,
                failed - last_failed,
                now - since,
                finished / max(now - since, 1e-9),
                in_flight,
            )


RELEASE = _Path("releasing %d unstarted jobs", Acknowledger._release_call, Acknowledger._released)
COMPLETE = _Path("acknowledging %d jobs", Acknowledger._complete_call, Acknowledger._completed)
FAIL = _Path("reporting %d failed jobs", Acknowledger._fail_call, Acknowledger._failed)
_PATHS: dict[type, _Path] = {Release: RELEASE, Failure: FAIL}  # jobs and Successes: COMPLETE


def complete_many_call(
    s: _sql.Statements, acks: Sequence[Job | Success], worker_id: str
) -> _ops.Call:
    """``jobq_complete_many`` of these jobs, each fenced by its claim's attempt, with the
    results of those that have one."""
    jobs = [job_of(a) for a in acks]
    results = [a.result if isinstance(a, Success) else None for a in acks]
    return _ops.call(
        s.complete_many,
        job_ids=[job.id for job in jobs],
        worker_id=worker_id,
        attempts=[job.attempts for job in jobs],
        results=results if any(r is not None for r in results) else None,
    )


def look_for_unserved(
    s: _sql.Statements, who: str, run: Callable[[_ops.Call], list[Any]]
) -> None:
    """Warn of the available jobs that no worker serves (a misspelt job type, a queue nobody
    serves), which would otherwise wait silently. Best effort: it needs EXECUTE on
    jobq_unserved_job_types (admin); without it the worker says so at DEBUG only."""
    try:
        rows = _ops.drive(_ops.unserved_job_types(s, UNSERVED_IDLE), run)
    except (psycopg.Error, JobqError, Locked, OSError) as exc:
        log.debug("%s: cannot look for jobs nobody serves: %s", who, exc)
        return
    report_unserved(who, rows)


_OUTCOMES = {
    "pending": "failed, retried in %s: %s",
    "dead_letter": "failed on its last attempt, now dead_letter: %s",
    "failed": "failed permanently (no retry), now failed: %s",
    "cancelled": "stopped after a cancel request, now cancelled: %s",
}


def _log_failure(failure: Failure, status: str | None, retried: bool) -> None:
    """Say what ``jobq_fail_many`` did with the attempt: its result is the job's new status."""
    job = failure.job
    wait = duration(failure.backoff * job.attempts)  # jobq_fail waits attempts x backoff
    if status is None:
        why = " or recorded before the connection was lost" if retried else ""
        job_log(logging.WARNING, job, "failure not recorded: claim lost (lock expired)%s", why)
    elif status == "pending" and failure.requested:  # a Retry the handler asked for
        job_log(logging.DEBUG, job, "retry requested, runs again in %s", wait)
    elif status == "pending":
        job_log(logging.WARNING, job, _OUTCOMES[status], wait, failure.summary)
    elif status == "cancelled":  # what was asked for: not a warning
        job_log(logging.INFO, job, _OUTCOMES[status], failure.summary)
    else:
        message = _OUTCOMES.get(status, f"failed, now {status}: %s")
        job_log(logging.WARNING, job, message, failure.summary)


def _storable(text: str) -> str:
    """Error text PostgreSQL can store: NUL and lone surrogates escaped (an exception message
    may hold anything, and must not make its own failure unrecordable)."""
    text = text.replace("\x00", "\\x00")
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
