"""How many jobs to claim, and when: arithmetic only (no database, clock, thread or lock)."""

from __future__ import annotations

from dataclasses import dataclass

PREFETCH_MAX_FACTOR = 16
"""With ``prefetch=None``, at most this many jobs per handler thread wait in the worker."""

MAX_CLAIM = 10_000
"""The largest ``batch_size`` jobq_dequeue accepts."""


@dataclass
class PrefetchPolicy:
    """Sizes claims to the handlers: each claim is a round trip and a commit, so a busy worker
    is fast when each brings many jobs, and fair to other workers when none waits here long.

    With ``prefetch=None`` the buffer of claimed jobs waiting for a handler thread holds what
    the handlers finish during two claim round trips (moving averages of both), at most
    ``PREFETCH_MAX_FACTOR x concurrency``, and ``4 x concurrency`` until a job has finished:
    handlers then never wait for a claim, and jobs longer than two round trips get no buffer
    (nothing waits in this worker that another worker could run). A fixed ``prefetch`` turns
    that off. The worker updates the averages and asks, under its lock.
    """

    concurrency: int
    prefetch: int | None = None
    batch_size: int | None = None
    job_seconds: float | None = None  # moving averages
    claim_seconds: float = 0.005

    def job_took(self, seconds: float) -> None:
        avg = self.job_seconds
        self.job_seconds = seconds if avg is None else avg + 0.05 * (seconds - avg)

    def claim_took(self, seconds: float) -> None:
        self.claim_seconds += 0.2 * (seconds - self.claim_seconds)

    def prefetch_now(self) -> int:
        """How many claimed jobs may wait for a handler thread."""
        if self.prefetch is not None:
            return self.prefetch
        ceiling = PREFETCH_MAX_FACTOR * self.concurrency
        if self.job_seconds is None:
            return min(4 * self.concurrency, ceiling)
        return min(ceiling, int(self._two_round_trips()))

    def _two_round_trips(self) -> float:
        """Jobs the handlers finish during two claim round trips."""
        assert self.job_seconds is not None
        return 2 * self.concurrency * self.claim_seconds / max(self.job_seconds, 1e-6)

    def claims_limit(self) -> bool:
        """True when claims, not handlers, limit the worker: jobs so short that the largest
        buffer does not hold two claim round trips of them."""
        return (
            self.prefetch is None
            and self.job_seconds is not None
            and self._two_round_trips() > PREFETCH_MAX_FACTOR * self.concurrency
        )

    def claim_size(self, unfinished: int, waiting: int) -> int:
        """Jobs the next claim should ask for; 0 when a claim is not worth its round trip now.

        ``unfinished``: jobs claimed and not yet finished by a handler (running or waiting);
        ``waiting``: those of them not started. A claim is worth it when it fills at least half
        of the largest claim, or whenever a handler thread may be idle (nothing waiting).
        """
        capacity = self.concurrency + self.prefetch_now()
        largest = min(capacity, MAX_CLAIM)
        if self.batch_size is not None:
            largest = min(largest, self.batch_size)
        wanted = min(largest, capacity - unfinished)
        if wanted <= 0:
            return 0
        # Half a claim is worth a round trip, when the buffer covers it. When claims limit the
        # worker, the handlers empty any buffer during a round trip anyway, and a claim's fixed
        # cost (a round trip and a commit) is best spread over as many jobs as fit: it waits
        # until nothing is left to start.
        worth = largest if self.claims_limit() else max(1, largest // 2)
        if waiting == 0 or wanted >= worth:
            return wanted
        return 0
