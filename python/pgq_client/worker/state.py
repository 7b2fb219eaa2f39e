"""What the Worker's threads share, behind its one lock."""

from __future__ import annotations

import contextlib
import enum
import queue
import select
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import NamedTuple

from .. import _sql
from ..models import Job
from .config import WorkerConfig
from .policy import PrefetchPolicy


class Outcome(enum.Enum):
    """How a handler thread finished a job (a :class:`Success` with a result and a
    :class:`Failure` are the other ways)."""

    ACK = "ack"  # the handler returned None: the job is completed without a result
    COMMITTED = "committed"  # completed in the handler's own transaction
    DROPPED = "dropped"  # nothing to send: the claim was lost, or the job could not run


class Success(NamedTuple):
    """The handler returned a value: the job is completed with it (JSON text) as its result."""

    job: Job
    result: str


@dataclass(frozen=True)
class Failure:
    """A failed attempt, for ``jobq_fail``: ``error`` is stored, ``summary`` is logged."""

    job: Job
    error: str
    summary: str
    retry: bool
    backoff: timedelta
    requested: bool = False  # the handler raised Retry: a retry it asked for, not a failure


class Release(NamedTuple):
    """A claimed job that no handler started, given back at shutdown."""

    job: Job


Ack = Job | Success | Failure | Release
"""What the acknowledger sends about a job: a bare job is completed without a result."""


def job_of(ack: Ack) -> Job:
    return ack if isinstance(ack, Job) else ack.job


def job_id(ack: Ack) -> uuid.UUID:
    return job_of(ack).id


class Waker:
    """A wake-up for a thread in :meth:`sleep`: :meth:`poke` writes a byte to a socket (from
    any thread, or a signal handler: it takes no lock)."""

    def __init__(self) -> None:
        self._read, self._write = socket.socketpair()
        self._read.setblocking(False)
        self._write.setblocking(False)

    def poke(self) -> None:
        with contextlib.suppress(OSError):  # a full buffer already holds a wake-up
            self._write.send(b"\0")

    def sleep(self, timeout: float, *others: int) -> list[int]:
        """Until a poke, one of the ``others`` file descriptors is readable, or ``timeout``;
        those of them that are."""
        ready, _, _ = select.select([self._read.fileno(), *others], [], [], max(timeout, 0.0))
        if self._read.fileno() in ready:
            with contextlib.suppress(BlockingIOError):
                while self._read.recv(4096):  # every poke so far
                    pass
        return [fd for fd in ready if fd in others]

    def close(self) -> None:
        self._read.close()
        self._write.close()


class Shared:
    """The state the fetcher, the handler threads and the acknowledger share; every field is
    read and written with ``lock`` held.

    A claimed job is ``held`` until the database has been told how it ended (or it was
    released), so heartbeats renew it and a burst run does not end before a retry it made is
    claimable; it is ``unfinished`` until a handler thread is done with it, which is what the
    prefetch policy counts. Jobs waiting for a handler thread are in ``work``, in claim order;
    what the acknowledger is to send is in ``acks``, in the order it came.

    It also carries what never changes: ``force`` is set when a second stop aborts the shutdown
    (every retry gives up); ``end()`` ends the run (a burst run is done).
    """

    def __init__(
        self,
        config: WorkerConfig,
        burst: bool,
        who: str,
        force: threading.Event,
        end: Callable[[], None],
    ) -> None:
        self.config, self.burst, self.who, self.force, self.end = config, burst, who, force, end
        self.sql = _sql.statements(config.schema)
        self.lock = threading.Lock()
        self.acks_ready = threading.Condition(self.lock)  # the acknowledger waits on it
        self.work: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self.policy = PrefetchPolicy(config.concurrency, config.prefetch, config.batch_size)
        self.held: dict[uuid.UUID, Job] = {}
        self.unfinished = 0
        self.acks: list[Ack] = []
        self.acks_closed = False
        # hand_on: the claimed jobs the fetcher completes with its next claim (see Fetcher);
        # key_acks: those of them that succeeded; key_completing: their ids and those of such
        # completions under way (heartbeats skip them when counting lost claims).
        self.hand_on: set[uuid.UUID] = set()
        self.key_acks: list[Job | Success] = []
        self.key_acks_open = True
        self.key_completing: set[uuid.UUID] = set()
        # A notification said that a job of this worker got a cancel request: the acknowledger
        # asks which ones (jobq_cancel_requested) before its next heartbeat is due.
        self.cancel_check = False
        # The fetcher: woken by something that may have made jobs claimable; the wake-up
        # socket it sleeps on (None while it is awake); whether a due claim waits for slots.
        self.woken = False
        self.fetcher_asleep: Waker | None = None
        self.slots_awaited = False
        self.done = 0  # totals, for the log
        self.failed = 0
        self.fatal: BaseException | None = None

    # -- called with the lock held ----------------------------------------------------------

    def wake_fetcher(self) -> None:
        if self.fetcher_asleep is not None:
            self.fetcher_asleep.poke()
            self.fetcher_asleep = None

    def ack_batch(self) -> int:
        """Results worth a round trip of their own: as many as a claim brings at most."""
        return self.policy.concurrency + self.policy.prefetch_now()

    def _add_acks(self, acks: Sequence[Ack]) -> None:
        """Wake the acknowledger when a result starts its wait, fills a batch, or is the last
        one for now (between those it waits for the batch to grow, see ACK_LINGER)."""
        self.acks += acks
        pending = len(self.acks)
        if pending == len(acks) or not self.unfinished or pending >= self.ack_batch():
            self.acks_ready.notify()

    # -- called without it --------------------------------------------------------------------

    def claimed(
        self, jobs: Sequence[Job], claim_seconds: float, hand_on: Sequence[uuid.UUID] = ()
    ) -> None:
        """A claim brought ``jobs``: they wait for a handler thread, in claim order."""
        with self.lock:
            self.policy.claim_took(claim_seconds)
            self.unfinished += len(jobs)
            self.hand_on.update(hand_on)
            for job in jobs:
                self.held[job.id] = job
                self.work.put(job)

    def finished(self, job: Job, run_seconds: float, outcome: Outcome | Success | Failure) -> None:
        """A handler thread is done with ``job`` (the hot path: one lock round per job)."""
        with self.lock:
            self.policy.job_took(run_seconds)
            self.unfinished -= 1
            if (
                (outcome is Outcome.ACK or isinstance(outcome, Success))
                and job.id in self.hand_on
                and self.key_acks_open
            ):
                self.key_acks.append(job if outcome is Outcome.ACK else outcome)
                self.key_completing.add(job.id)
                self.wake_fetcher()
            elif outcome is Outcome.ACK:
                self._add_acks((job,))
            elif isinstance(outcome, Outcome):
                self.done += outcome is Outcome.COMMITTED
                self._settled((job,))
            else:
                self._add_acks((outcome,))
            if (
                self.slots_awaited
                and self.fetcher_asleep is not None
                and self.policy.claim_size(self.unfinished, self.work.qsize())
            ):
                self.wake_fetcher()

    def check_cancels(self) -> None:  # the acknowledger asks which held jobs have one, now
        with self.lock:
            if self.held:
                self.cancel_check = True
                self.acks_ready.notify()

    def release(self, jobs: Sequence[Job]) -> None:
        """Give back claimed jobs no handler started (at shutdown)."""
        with self.lock:
            self.unfinished -= len(jobs)
            self._add_acks([Release(job) for job in jobs])

    def settled(
        self, jobs: Sequence[Job], done: int = 0, failed: int = 0, wake: bool = True
    ) -> None:
        """The database knows how ``jobs`` ended (or they are given up on)."""
        with self.lock:
            self.done += done
            self.failed += failed
            self._settled(jobs, wake)

    def _settled(self, jobs: Sequence[Job], wake: bool = True) -> None:
        limited = False
        for job in jobs:
            self.held.pop(job.id, None)
            self.hand_on.discard(job.id)
            self.key_completing.discard(job.id)
            limited = limited or job.limit_group is not None
        # A failure may have made a job claimable again (claim before a burst run ends); the
        # end of a limited job frees a slot of its key, which jobs the limit held back, here
        # or in no other worker's sight, may be waiting for: claim now, not at the next poll.
        # (Not when the fetcher settles what it completed: its claim in the same transaction
        # already had those slots.)
        if wake and (self.burst or limited):
            self.woken = True
            self.wake_fetcher()

    def take_key_acks(self) -> list[Job | Success]:  # the fetcher sends them with its next claim
        with self.lock:
            jobs, self.key_acks = self.key_acks, []
            return jobs

    def hand_over_key_acks(self, acks: Sequence[Job | Success], close: bool = False) -> None:
        """The acknowledger completes these jobs instead of the fetcher: a row lock held
        elsewhere or a result too large stopped it, or (``close``) it ends, and so do those
        finished later."""
        with self.lock:
            if close:
                self.key_acks_open = False
                acks, self.key_acks = [*acks, *self.key_acks], []
            for ack in acks:
                self.key_completing.discard(job_id(ack))
            if acks:
                self._add_acks(acks)

    def stop_with(self, exc: BaseException) -> None:
        """End the run on an error no retry gets past; ``run()`` raises the first such error."""
        with self.lock:
            if self.fatal is None:
                self.fatal = exc
        self.end()

    @property
    def in_flight(self) -> int:
        with self.lock:
            return len(self.held)
