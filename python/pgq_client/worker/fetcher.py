"""The fetcher: one thread, one connection, that LISTENs and claims."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.rows import tuple_row

from .. import _ops, _sql
from .._conn import fetch
from ..errors import JobqError, from_psycopg
from ..models import Job, job_row
from .acker import complete_many_call, look_for_unserved
from .joblog import log, log_completed
from .policy import MAX_CLAIM
from .retry import GaveUp, Link, Reconnecting, connection_lost, transient
from .state import Shared, Success, Waker, job_id, job_of

if TYPE_CHECKING:
    from psycopg._cursor_base import BaseCursor

MAX_SLEEP = 1.0  # seconds: a fetcher looks again at least this often, whatever woke it

EMPTY_CLAIM_PAUSE = 0.05
"""Seconds after a claim that found nothing during which a wake-up does not claim at once (it
claims when they have passed): anyone may NOTIFY on a worker's channel, and a flood of
notifications must not turn into as many claims. An enqueue in that window waits at most this
long; one after it is claimed at once."""

CAPS_TTL = 5.0
"""Seconds a fetcher keeps the list of capped groups (jobq_capped_groups) before reading it
again. A stale list only routes a completion the slower way (see Fetcher): the claim enforces
the caps whatever path a completion takes."""

RowMaker = Callable[[Sequence[Any]], Job]

# Whether the libpq in use has pipeline mode (14 and later; psycopg's binary package has it).
PIPELINE = psycopg.Pipeline.is_supported()

# The cancel channels (jobq-cancel:<schema>, jobq-cancel#<hash>): no wake-up channel starts so.
_CANCEL_CHANNELS = (f"jobq-{_sql.CANCEL_EVENT}:", f"jobq-{_sql.CANCEL_EVENT}#")


class Fetcher:
    """Claims jobs into the worker's buffer, on the connection that also LISTENs.

    A claim asks for what :class:`~pgq_client.worker.policy.PrefetchPolicy` says, one at a
    time, when one is due: at once after a full claim (more is waiting), after a notification
    for one of the worker's queues, else every ``poll_interval`` (jobs whose time has come, a
    notification lost while disconnected). A notification that comes during a claim is kept
    by psycopg and read right after it.

    A job whose completion frees something a claim can take at once is completed, when its
    handler succeeds, in the transaction and round trip of the next claim: a job of a group
    with a ``max_running`` cap (the claim counts its key's running jobs without it and takes
    the freed slot: for ``max_running = 1``, the key's whole turnover), and a job that others
    depend on (its row's ``has_dependents``: the claim takes a dependent its completion
    released, a chain's next step, without waiting for a commit, a notification and another
    claim). Both go in one call of ``jobq_complete_and_claim``, which claims the dependents
    the completion releases for this worker directly (docs/workflows.md, "Hand-off").
    When no claim is worth its round trip they go alone; when they are all jobs with
    dependents and the worker has seen nothing else to claim since its last claim, the claim
    asks for as many jobs as their completions are likely to release (see ``_batch``). The
    jobs stay held (heartbeats) until that has committed. Every other job is completed by the
    acknowledger, on its own connection, in parallel with the claims: a group without a cap
    has no slot to hand on. Which groups have one, the fetcher reads with
    ``jobq_capped_groups`` (a worker cannot read ``jobq_limits``) every ``CAPS_TTL`` seconds;
    until it knows, or when it may not call it, every limited job is taken to have a cap.
    """

    def __init__(self, shared: Shared, link: Link) -> None:
        self._shared, self._link = shared, link
        config = self._config = shared.config
        self._sql, self._who = shared.sql, shared.who
        self._stopping = threading.Event()
        self._wake = Waker()
        stopping = self._stopping
        self._retry = Reconnecting(self._who, stopping.is_set, stopping.wait, link.close)
        # A claim failed with the connection: it may have committed, its jobs locked by this
        # worker's id and unknown to it. Before the next claim, jobq_release_orphans gives back
        # every job locked by this id that the worker does not hold (see _release_orphans).
        self._orphans_unknown = False
        # Jobs to complete in the round trip of the next claim (see the class).
        self._key_acks: list[Job | Success] = []
        self._acks_retried = False  # they were sent before, and the reply was lost
        # Of the jobs of the last claim, those whose completion goes with a claim.
        self._hand_on: list[uuid.UUID] = []
        # The capped groups, read again at _caps_due; None: unknown (every group is capped).
        self._caps: frozenset[str] | None = None
        self._caps_due = 0.0
        # Jobs per completion a claim sized by _batch asks for (see _learn_width).
        self._width = 1
        # Completions go with the claim in one jobq_complete_and_claim (until it is refused).
        self._hand_off = True
        # The claim's columns (their names, as the server sends them) and how such rows are
        # read, with the position of has_dependents (see _claim_row).
        self._rows: tuple[tuple[bytes | None, ...], RowMaker, int | None] | None = None
        # Built once: only batch_size changes, set before each claim.
        self._claim_query = self._sql.dequeue
        self._params = {
            "worker_id": config.worker_id,
            "job_types": config.job_types,
            "batch_size": 0,
            "lock_timeout": config.lock_timeout,
            "queues": None if config.queues is None else list(config.queues),
        }

    def run(self) -> None:
        try:
            self._loop()
        except GaveUp:
            pass  # stopping while the database was away
        except JobqError as exc:  # a claim that will never work: stop, and say why
            log.error("%s: claiming jobs failed, stopping: %s", self._who, exc)
            self._shared.stop_with(exc)
        finally:
            # Completions of limited jobs that this thread took and did not send, and those
            # that handlers finish from now on, go to the acknowledger.
            self._shared.hand_over_key_acks(self._key_acks, close=True)
            self._key_acks = []
            self._link.close()

    def stop(self) -> None:  # a claim under way is finished and its jobs handed on
        self._stopping.set()
        self._wake.poke()

    def close(self) -> None:
        self._wake.close()

    def _loop(self) -> None:
        shared = self._shared
        more = True  # the last claim came back full: claim again as soon as there is room
        next_poll = 0.0
        quiet_until = 0.0  # after an empty claim: wake-ups wait until then (EMPTY_CLAIM_PAUSE)
        while not self._stopping.is_set():
            now = time.monotonic()
            with shared.lock:
                wanted = shared.policy.claim_size(shared.unfinished, shared.work.qsize())
                # A limited job's completion frees a slot of its key: a claim is due with it.
                acks = bool(shared.key_acks)
                notified = shared.woken
                woken = notified and now >= quiet_until
                due = more or woken or acks or now >= next_poll
                held_back = shared.woken and not due
                go = due and wanted > 0
                if go:
                    shared.woken = False  # what woke it is served by this claim
                elif not acks:
                    shared.slots_awaited = due  # a freed slot wakes it only when due
                    shared.fetcher_asleep = self._wake
            if acks and not go:
                # No room for a claim: the completions go alone.
                self._key_acks += shared.take_key_acks()
                self._retry(
                    lambda: self._claim(claim=False), f"acknowledging {len(self._key_acks)} jobs"
                )
                continue
            if not go:
                sleep = MAX_SLEEP if due else min(next_poll - now, MAX_SLEEP)
                if held_back:  # a wake-up after an empty claim: it claims at quiet_until
                    sleep = min(sleep, quiet_until - now)
                self._sleep(sleep)
                continue

            started = time.perf_counter()
            self._key_acks += shared.take_key_acks()
            quiet = not (more or notified or now >= next_poll)
            batch = self._params["batch_size"] = self._batch(wanted, quiet)
            jobs = self._retry(self._claim, "claiming jobs")
            shared.claimed(jobs, time.perf_counter() - started, self._hand_on)
            if jobs and log.isEnabledFor(logging.DEBUG):
                log.debug("%s claimed %d jobs", self._who, len(jobs))
            more = len(jobs) == wanted
            if not jobs:
                quiet_until = time.monotonic() + EMPTY_CLAIM_PAUSE
            if not more:
                next_poll = time.monotonic() + self._config.poll_interval
                # After a full claim the next one is due anyway; after a short one, a
                # notification that came during it makes the next one due.
                announced = self._read_notifications()
                if batch < wanted:
                    self._learn_width(len(jobs) == batch, announced)
                if shared.burst and not jobs and self._burst_done():
                    log.info("%s: no job available, burst run done", self._who)
                    self._report_unserved()
                    shared.end()
                    return

    def _batch(self, wanted: int, quiet: bool) -> int:
        """The claim's size: ``wanted``, or, when the last claim found fewer jobs than it asked
        for and nothing has been announced or come due since (``quiet``), and every completion
        going with it is of a job with dependents and no limit group, ``_width`` jobs per
        completion. Such a claim is there for the dependents those completions release, which
        ``jobq_complete_and_claim`` hands to this worker only when its ranges hold no pending
        job; a hand-off then fills the claim and no ``jobq_dequeue`` runs after it to top it
        up, a search that would find nothing (a chain's step is that one hand-off). What the
        completions release beyond it is released pending and announced on this connection,
        and claimed right after, as after any claim that came back short."""
        acks = self._key_acks
        if quiet and acks and all(job_of(ack).limit_group is None for ack in acks):
            return min(wanted, len(acks) * self._width)
        return wanted

    def _learn_width(self, filled: bool, announced: bool) -> None:
        """After a claim sized by ``_batch``: how many dependents a completion releases is
        known only once it has run. A claim the hand-off filled, after which the completions
        announced more (they released more than it took), makes the next one twice as wide;
        one the hand-off did not fill (a ``jobq_dequeue`` searched for the rest) makes it one
        job per completion again. A chain stays at one; a fan-out or a tree drained by this
        worker widens until its dependents are handed off in the completing call."""
        if not filled:
            self._width = 1
        elif announced:
            self._width = min(self._width * 2, MAX_CLAIM)

    def _report_unserved(self) -> None:
        """At the end of a burst run "no job available" is true only of this worker's job
        types and queues: name the available jobs that no worker serves."""
        look_for_unserved(self._sql, self._who, lambda call: fetch(self._link.get(), call))

    def _burst_done(self) -> bool:
        """Nothing claimable now, and nothing held that could make a job claimable again: no
        job waits for a handler or for its result to be sent, and nothing was settled or
        notified while the empty claim was under way."""
        with self._shared.lock:
            return not (self._shared.held or self._shared.woken)

    def _claim(self, claim: bool = True) -> list[Job]:
        """Claim (``claim``) and complete the limited jobs taken, in one round trip; the
        claimed jobs."""
        conn = self._link.get()
        if claim and self._orphans_unknown:
            self._release_orphans(conn)
        if claim and time.monotonic() >= self._caps_due:
            self._read_caps(conn)
        acks = self._key_acks
        self._hand_on = []
        try:
            if claim and not acks:
                with conn.cursor(row_factory=self._claim_row) as cur:
                    cur.execute(self._claim_query, self._params)
                    return cur.fetchall()
            acks.sort(key=job_id)  # id order, as the acknowledger's
            done = complete_many_call(self._sql, acks, self._config.worker_id)
            handed = self._complete_and_claim(conn, done.params) if claim else None
            row: Sequence[Any] | None
            if handed is not None:
                jobs = [job for job in handed if job.status != "succeeded"]
                row = (len(handed) - len(jobs),)
            else:
                # The completions, then the claim, in one transaction, so that the claim
                # counts the keys' running jobs without those it completes: in a pipeline,
                # one implicit transaction (no Sync between them) and one round trip; with a
                # libpq too old for pipelines (before 14), an explicit transaction.
                with conn.pipeline() if PIPELINE else conn.transaction():
                    done_cur = conn.cursor(row_factory=tuple_row)
                    done_cur.execute(done.query, done.params)
                    if claim:
                        cur = conn.cursor(row_factory=self._claim_row)
                        cur.execute(self._claim_query, self._params)
                row = done_cur.fetchone()
                jobs = cur.fetchall() if claim else []
        except (psycopg.errors.LockNotAvailable, psycopg.errors.ProgramLimitExceeded) as exc:
            # A completion waited past lock_wait for a row another session holds (the claim
            # never waits: SKIP LOCKED), or a result is over the size limit: the acknowledger
            # completes those jobs (and fails the one whose result it cannot store), and the
            # claim goes alone. Without completions, the claim itself failed: an error.
            if not acks:
                raise
            self._hand_over_key_acks(exc)
            return self._claim() if claim else []
        except psycopg.Error as exc:
            if connection_lost(exc):
                self._orphans_unknown |= claim  # it may have committed, its reply lost
                self._acks_retried = True
            raise
        done_count = int(row[0]) if row is not None and row[0] is not None else 0
        done_jobs = [job_of(ack) for ack in acks]
        log_completed(self._who, done_jobs, done_count, self._acks_retried)
        self._key_acks, self._acks_retried = [], False
        # A claim in the same transaction had the slots they freed: no wake-up for them.
        # Without one, the slots make a claim due, as the acknowledger's completions do.
        self._shared.settled(done_jobs, done=done_count, wake=not claim)
        return jobs

    def _complete_and_claim(
        self, conn: psycopg.Connection[Any], completion: Mapping[str, Any]
    ) -> list[Job] | None:
        """The completions and the claim in one call of ``jobq_complete_and_claim``, which
        claims the dependents they release for this worker directly: its rows, the completed
        jobs (status succeeded) then the claimed ones. None when this worker cannot call it
        (a role granted the worker level before it existed, a schema not migrated yet): the
        two calls then go as before, until the worker restarts."""
        if not self._hand_off:
            return None
        try:
            with conn.cursor(row_factory=self._claim_row) as cur:
                cur.execute(self._sql.complete_and_claim, {**completion, **self._params})
                return cur.fetchall()
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedFunction) as exc:
            log.warning(
                "%s: cannot complete and claim in one call (%s); completing and claiming in "
                "two until this worker restarts. Grant the worker level again (`jobq grant "
                "ROLE --as worker`) after an upgrade",
                self._who,
                from_psycopg(exc),
            )
            self._hand_off = False
            return None

    def _claim_row(self, cursor: BaseCursor[Any, Any]) -> RowMaker:
        """The claim's row factory: each row a :class:`Job`, its id put in ``_hand_on`` when
        it is completed with a claim (see the class)."""
        # The columns of a claim are the same from one claim to the next (until a migration
        # adds one): how a row becomes a Job is worked out again only when their names change.
        # cursor.description would make a Column object per column and per claim, more Python
        # calls than the rest of a claim of one job (a chain's step).
        res = cursor.pgresult
        key = tuple(map(res.fname, range(res.nfields))) if res is not None else ()
        if self._rows is None or self._rows[0] != key:
            deps = key.index(b"has_dependents") if b"has_dependents" in key else None
            self._rows = (key, job_row(cursor), deps)
        _, make, deps = self._rows
        caps, hand_on = self._caps, self._hand_on

        def row(values: Sequence[Any]) -> Job:
            job = make(values)
            group = job.limit_group
            if (deps is not None and values[deps]) or (
                group is not None and (caps is None or group in caps)
            ):
                hand_on.append(job.id)
            return job

        return row

    def _read_caps(self, conn: psycopg.Connection[Any]) -> None:
        """Read which groups have a cap, for the next ``CAPS_TTL`` seconds. Without EXECUTE
        on jobq_capped_groups (a role granted the worker level before it existed) every limited
        job keeps going with a claim, as if its group had one, until the worker restarts."""
        rows = self._optional(
            conn,
            _ops.call(self._sql.capped_groups),
            "cannot read which limit groups have a cap",
            "every limited job is completed with the next claim until this worker restarts. "
            "Grant the worker level again (`jobq grant ROLE --as worker`) after an upgrade",
        )
        self._caps = None if rows is None else frozenset(row[0] for row in rows)
        self._caps_due = float("inf") if rows is None else time.monotonic() + CAPS_TTL

    def _hand_over_key_acks(self, why: psycopg.Error) -> None:
        log.warning(
            "%s: completing %d jobs with the claim failed (%s); the acknowledger completes them",
            self._who,
            len(self._key_acks),
            from_psycopg(why),
        )
        self._shared.hand_over_key_acks(self._key_acks)
        self._key_acks, self._acks_retried = [], False

    def _release_orphans(self, conn: psycopg.Connection[Any]) -> None:
        """After a claim that failed with the connection: release the jobs locked by this
        worker's id that it does not hold (a claim that committed, its reply lost), so that
        they run now, as the same attempt, rather than after ``lock_timeout``. Claims are made
        by this thread alone, one at a time, so every job of a claim that came back is
        ``held``; worker ids are unique per process. When the function is not installed (jobq
        migrate not run) or not granted (a role granted only part of the worker level, which
        jobq migrate does not extend), those jobs wait for lock_timeout."""
        with self._shared.lock:
            held = list(self._shared.held)
        call = _ops.call(self._sql.release_orphans, worker_id=self._config.worker_id, job_ids=held)
        rows = self._optional(
            conn,
            call,
            "could not release the jobs of a claim whose reply may have been lost",
            "if it had claimed any, they run again after lock_timeout",
        )
        self._orphans_unknown = False
        if rows and rows[0][0]:
            log.warning(
                "%s released %d jobs claimed by a claim whose reply was lost; they run again "
                "now (the lost claim is not counted as an attempt)",
                self._who,
                rows[0][0],
            )

    def _optional(
        self, conn: psycopg.Connection[Any], call: _ops.Call, failing: str, so: str
    ) -> list[Any] | None:
        """The rows of a call the claim can do without; None, and a warning, after an error no
        retry gets past. A transient error propagates: the claim's retry retries this too."""
        try:
            return fetch(conn, call)
        except psycopg.Error as exc:
            if transient(exc):
                raise
            log.warning("%s: %s (%s); %s", self._who, failing, from_psycopg(exc), so)
            return None

    def _sleep(self, timeout: float) -> None:
        conn = self._link.conn
        listening = [conn.fileno()] if conn is not None and not conn.closed else []
        try:
            notified = self._wake.sleep(timeout, *listening)
        finally:
            with self._shared.lock:
                self._shared.fetcher_asleep = None
        if notified:
            self._read_notifications()

    def _read_notifications(self) -> bool:
        """Read the notifications that arrived; one for a queue of this worker makes a claim
        due, and a cancel request has the acknowledger ask which of its jobs must stop. A
        connection found broken here is dropped: the next claim opens a new one (and, as a
        notification may have been missed meanwhile, is due; a missed cancel is learnt of with
        the next heartbeat). Whether a claim was made due."""
        conn = self._link.conn
        if conn is None:
            return False
        queues = self._config.queues
        relevant = cancels = False
        try:
            for note in conn.notifies(timeout=0):
                if note.channel.startswith(_CANCEL_CHANNELS):
                    # Some running job got a cancel request (the payload names none): the
                    # acknowledger asks which of this worker's jobs have one.
                    cancels = True
                else:
                    # WAKE_ALL: one statement made jobs available in more than 100 queues
                    relevant = relevant or (
                        queues is None or note.payload in queues or note.payload == _sql.WAKE_ALL
                    )
        except psycopg.Error as exc:
            log.debug("%s: the listening connection was lost (%s)", self._who, exc)
            self._link.close()
            relevant = True
        if cancels:
            self._shared.check_cancels()
        if relevant:
            with self._shared.lock:
                self._shared.woken = True
        return relevant
