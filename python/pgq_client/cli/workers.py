"""``jobq workers``: the table of the dashboard's workers page."""

from __future__ import annotations

from .base import command, settings
from .output import emit, table

COLUMNS = ["worker_id", "job_types", "queues", "last_claim_at", "jobs_held", "stale_jobs",
           "last_heartbeat_at", "lock_expires_at"]


def _filter(names: list[str] | None, recorded: bool) -> str:
    """A claim filter as the workers page shows it: the names, ``all``, or ``?`` unrecorded."""
    return ",".join(names) if names is not None else ("all" if recorded else "?")


@command(name="workers", json=True, examples="jobq workers --json")
def workers() -> None:
    """Each worker that claimed within the last day or holds a job: its filters, last claim,
    jobs held and how many are stale (lock expired), last heartbeat (monitor)."""
    with settings().queue() as q:
        rows = q.workers_summary()
    cells = [
        [_filter(r[n], r["first_claim_at"] is not None) if n in ("job_types", "queues") else r[n]
         for n in COLUMNS]
        for r in rows
    ]
    emit(rows, lambda: table(COLUMNS, cells, "no workers"))


COMMANDS = [workers]
