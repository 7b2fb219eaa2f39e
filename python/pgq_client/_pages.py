"""The dashboard's reads as operations (driven like every other, see :mod:`._opcore`): a page
of jobs, the per-queue summary, and which functions the connected role may execute."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ._opcore import Call, Op, check_text, interval
from ._sql import ROLE_PRIVILEGES, Statements
from .models import JobsPage


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


def queue_summary(s: Statements, recent: timedelta | float) -> Op[list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = yield Call(
        s.queue_summary, {"recent": interval(recent, "recent")}
    )
    return rows


def function_privileges(
    s: Statements, functions: Mapping[str, str]
) -> Op[tuple[str, dict[str, bool | None]]]:
    # The schema None (a client that has not found it yet) is put in by the client.
    params = {
        "names": list(functions), "signatures": list(functions.values()), "schema": s.schema
    }
    rows = yield Call(ROLE_PRIVILEGES, params)
    return str(rows[0]["role"]), {r["name"]: r["allowed"] for r in rows}
