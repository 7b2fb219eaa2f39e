"""What the database holds, seen from above: the throughput and failures per bucket of time,
and the queue names and job types that exist."""

from __future__ import annotations

from datetime import timedelta

from ..queue import Queue
from . import options as opt
from .base import call, command
from .output import emit, table

COUNTS = ["succeeded", "failed", "dead_letter", "cancelled", "failed_attempts"]


@command(json=True, examples="jobq throughput\njobq throughput --since 24h --bucket 1h --json")
@opt.duration("--since", "1h", "How far back")
@opt.duration("--bucket", "1m", "The length of one row")
def throughput(since: timedelta, bucket: timedelta) -> None:
    """Jobs finished (succeeded, failed, dead_letter, cancelled) and failed attempts per bucket
    of time, from the jobs kept in the database (monitor)."""
    rows = call(Queue.throughput, since, bucket)

    def text() -> str:
        cells = [[r["bucket_start"], *(r[n] for n in COUNTS)] for r in rows]
        cells.append(["total", *(sum(r[n] for r in rows) for n in COUNTS)])
        return table(["bucket_start", *COUNTS], cells)

    emit(rows, text)


@command(json=True, examples="jobq names\njobq names --json")
def names() -> None:
    """The queue names and job types that exist: of the jobs available or running, of every job
    with an idempotency key, of metrics, schedules, workers and pauses (monitor)."""
    found = call(Queue.names)
    emit(found, lambda: "\n".join(f"{kind}  {name}" for kind, all_ in found.items()
                                   for name in all_))


COMMANDS = [throughput, names]
