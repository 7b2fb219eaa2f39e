"""The dashboard's reads as operations (driven like every other, see :mod:`._opcore`): a page
of jobs, the per-queue summary, and which functions the connected role may execute."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from ._opcore import Call, Op, check_text
from ._sql import ROLE_PRIVILEGES, Statements


class JobsPage(NamedTuple):
    """One page of ``jobq_jobs_page``: its rows (dicts), the cursor (``sort_at``, ``id``) of the
    next page when there is one, and, when a filtered search of finished jobs stopped at its
    ``scan_limit``, the cursor to search on from and the time it reached."""

    rows: list[dict[str, Any]]
    next_after: tuple[datetime, uuid.UUID] | None
    stopped_after: tuple[datetime, uuid.UUID] | None


def jobs_page(
    s: Statements,
    status: str,
    queue: str | None,
    job_type: str | None,
    after: tuple[datetime, uuid.UUID] | None,
    size: int,
    scan_limit: int,
) -> Op[JobsPage]:
    check_text(queue, "queue")
    check_text(job_type, "job_type")
    params = {
        "status": status,
        "queue": queue,
        "job_type": job_type,
        "after_at": after[0] if after else None,
        "after_id": after[1] if after else None,
        "max_rows": size + 1,  # one more than shown: whether a next page exists
        "scan_limit": scan_limit,
    }
    rows = yield Call(s.jobs_page, params)
    # A last row that does not match marks where a filtered search stopped.
    stopped = rows.pop() if rows and not rows[-1]["matches"] else None
    more = len(rows) > size
    rows = rows[:size]
    last = rows[-1] if more and rows else None
    return JobsPage(
        rows,
        (last["sort_at"], last["id"]) if last else None,
        (stopped["sort_at"], stopped["id"]) if stopped else None,
    )


def queue_summary(s: Statements, recent: timedelta) -> Op[list[dict[str, Any]]]:
    """Per queue: jobs available, scheduled, processing, failed, dead-letter, cancelled, how
    many succeeded within ``recent``, and whether the queue is paused."""
    rows: list[dict[str, Any]] = yield Call(s.queue_summary, {"recent": recent})
    return rows


def function_privileges(
    s: Statements, functions: Mapping[str, str]
) -> Op[tuple[str, dict[str, bool | None]]]:
    """The connected role, and whether it may execute each of ``functions`` (name: argument
    types) of the statements' schema; None for one that is not installed there."""
    params = {
        "names": list(functions), "signatures": list(functions.values()), "schema": s.schema
    }
    rows = yield Call(ROLE_PRIVILEGES, params)
    return str(rows[0]["role"]), {r["name"]: r["allowed"] for r in rows}
