"""Acknowledgements that wait for a row lock another session holds, set aside and retried."""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Sequence
from datetime import timedelta

from ..models import Job
from .joblog import duration, job_log
from .state import Failure

__all__ = ["LOCKED_RETRY_CAP", "LOCKED_RETRY_FIRST", "Locked", "Stuck"]

LOCKED_RETRY_FIRST = 0.2
LOCKED_RETRY_CAP = 5.0
"""Seconds before an acknowledgement that found its row locked is tried again; doubles each
time it is locked again, up to the cap."""


class Locked(Exception):
    """A statement gave up waiting for a row lock another session holds (55P03, after the
    connection's lock_timeout): the call is retried later, apart from the other jobs."""


class Stuck:
    """The releases, completions (with their results) and failures set aside by the
    acknowledger, due again at ``at`` (``math.inf``: none)."""

    def __init__(self) -> None:
        self.releases: list[Job] = []
        self.completions: list[Job] = []
        self.results: dict[uuid.UUID, str] = {}
        self.failures: list[Failure] = []
        self.at = math.inf
        self.delay = LOCKED_RETRY_FIRST

    def defer(
        self,
        releases: Sequence[Job],
        completions: Sequence[Job],
        results: dict[uuid.UUID, str],
        failures: Sequence[Failure],
    ) -> None:
        """Set these aside, due after the current delay (which then doubles)."""
        self.releases += releases
        self.completions += completions
        self.results.update(results)
        self.failures += failures
        if self.at == math.inf:
            self.at = time.monotonic() + self.delay
        for job in (*releases, *completions, *(f.job for f in failures)):
            job_log(
                logging.WARNING,
                job,
                "acknowledgement waits for a row lock another session holds; tried again in %s",
                duration(timedelta(seconds=self.delay)),
            )
        self.delay = min(self.delay * 2, LOCKED_RETRY_CAP)

    def take(
        self,
        releases: list[Job],
        completions: list[Job],
        results: dict[uuid.UUID, str],
        failures: list[Failure],
    ) -> tuple[list[Job], list[Job], dict[uuid.UUID, str], list[Failure]]:
        """The batch with what was set aside added back, to be tried again."""
        batch = (
            [*releases, *self.releases],
            [*completions, *self.completions],
            {**results, **self.results},
            [*failures, *self.failures],
        )
        self.releases, self.completions, self.results, self.failures = [], [], {}, []
        self.at = math.inf
        return batch
