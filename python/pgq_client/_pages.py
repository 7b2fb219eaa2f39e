"""The dashboard's reads as operations (driven like every other, see :mod:`._opcore`): a page
of jobs, a search, and which functions the connected role may execute."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

from ._opcore import Call, Op, check_aware, check_text, dump_json, job_id_of
from ._sql import ROLE_PRIVILEGES, Statements
from .models import JobsPage

Row = dict[str, Any]


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
    rows, last, stopped = _page((yield Call(s.jobs_page, params)), size)
    return JobsPage(
        rows,
        (last["sort_at"], last["id"]) if last else None,
        (stopped["sort_at"], stopped["id"]) if stopped else None,
    )


def _page(rows: list[Row], size: int) -> tuple[list[Row], Row | None, Row | None]:
    """A page's rows (asked for one more than ``size``: whether a next page exists), the last
    one when there is a next page, and the row that marks where a filtered search stopped (a
    last row that does not match)."""
    stopped = rows.pop() if rows and not rows[-1]["matches"] else None
    more = len(rows) > size
    rows = rows[:size]
    return rows, rows[-1] if more and rows else None, stopped


class FoundJobs(NamedTuple):
    """One page of ``jobq_find_jobs``: its rows (dicts, newest first), the id to pass as
    ``after_id`` for the next page when there is one, and, when the search stopped at its
    ``scan_limit``, the id to search on from and the creation time it reached."""

    rows: list[dict[str, Any]]
    next_after: uuid.UUID | None
    stopped_after: uuid.UUID | None
    stopped_at: datetime | None


def find_jobs(
    s: Statements, filters: Mapping[str, Any], size: int, scan_limit: int
) -> Op[FoundJobs]:
    """``filters``: arguments of ``jobq_find_jobs`` of :data:`FIND_FILTERS`, by name (those
    not given NULL); ``payload_contains`` any JSON value."""
    params = dict.fromkeys(FIND_FILTERS) | dict(filters)
    for name in ("job_id", "after_id"):
        value = params[name]
        if value is not None:
            params[name] = job_id_of(value, name)
    for name in ("idempotency_key", "job_type", "queue"):
        check_text(params[name], name)
    for name in ("created_after", "created_before", "finished_after", "finished_before"):
        check_aware(params[name], name)
    if params["statuses"] is not None:
        params["statuses"] = list(params["statuses"])
    if params["payload_contains"] is not None:
        params["payload_contains"] = dump_json(params["payload_contains"], "payload_contains")
    params.update(max_rows=size + 1, scan_limit=scan_limit)
    rows, last, stopped = _page((yield Call(s.find_jobs, params)), size)
    return FoundJobs(
        rows,
        last["id"] if last else None,
        stopped["id"] if stopped else None,
        stopped["created_at"] if stopped else None,
    )


FIND_FILTERS = (
    "job_id", "idempotency_key", "job_type", "queue", "statuses", "created_after",
    "created_before", "finished_after", "finished_before", "payload_contains", "after_id",
)


def function_privileges(
    s: Statements, functions: Mapping[str, str]
) -> Op[tuple[str, dict[str, bool | None]]]:
    # The schema None (a client that has not found it yet) is put in by the client.
    params = {
        "names": list(functions), "signatures": list(functions.values()), "schema": s.schema
    }
    rows = yield Call(ROLE_PRIVILEGES, params)
    return str(rows[0]["role"]), {r["name"]: r["allowed"] for r in rows}
