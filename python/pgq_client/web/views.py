"""The pages: each asks the role's privileges, reads through the dashboard's Queue what the
role may read, and renders it (what it may not read is said, not attempted)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from .. import _ops
from ..errors import error_summary
from ..models import Job
from ..statuses import STATUSES
from .helpers import base, board_of, chart, fail, parse_cursor, render, text_filter

PAGE_SIZE = 50
# How many finished jobs a filtered page examines at most (jobq_jobs_page's scan_limit): a
# filter that matches few of ten million jobs answers in milliseconds, with a link to search on.
SCAN_LIMIT = 10_000
# How far back the overview counts succeeded jobs for its throughput.
RECENT = timedelta(minutes=5)


def overview(request: Request) -> Response:
    board = board_of(request)
    role = board.role()
    rows: list[dict[str, Any]] = []
    if role.can["jobq_queue_summary"]:
        rows = board.run(_ops.queue_summary, RECENT)
        board.record(rows)
    paused: dict[str, Any] = {}
    # Every role sees the marker (the summary's paused); when and why are an admin's to see
    # (jobq_queues), as the buttons are.
    if role.can["jobq_queues"]:
        paused = {q["queue"]: q for q in board.queue().queues() if q["paused"]}
    return render(
        request,
        "overview_live.html" if request.query_params.get("partial") else "overview.html",
        role,
        rows=rows,
        paused=paused,
        here=base(request) + "/",
        window_minutes=int(RECENT.total_seconds() // 60),
        chart=chart(list(board.samples)),
    )


def jobs(request: Request, dead_letters: bool = False) -> Response:
    params = request.query_params
    status = "dead_letter" if dead_letters else (params.get("status") or "pending")
    if status not in STATUSES:
        return fail(request, 400, f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    queue, job_type = text_filter(params.get("queue")), text_filter(params.get("job_type"))
    cursor = parse_cursor(params.get("after"))
    if params.get("after") and cursor is None:
        return fail(request, 400, "after must be <sort_at ISO 8601 with offset>,<job id>")
    board = board_of(request)
    role = board.role()
    page = _ops.JobsPage([], None, None)
    if role.can["jobq_jobs_page"]:
        page = board.run(_ops.jobs_page, status, queue, job_type, cursor, PAGE_SIZE, SCAN_LIMIT)
    path = base(request) + ("/dead-letters" if dead_letters else "/jobs")
    first = {} if dead_letters else {"status": status}
    first.update({k: v for k, v in (("queue", queue), ("job_type", job_type)) if v})

    def link(after: tuple[datetime, uuid.UUID] | None) -> str | None:
        query = {**first, "after": f"{after[0].isoformat()},{after[1]}"} if after else first
        return path + (f"?{urlencode(query)}" if query else "")

    return render(
        request,
        "jobs.html",
        role,
        rows=page.rows,
        status=status,
        queue=queue or "",
        job_type=job_type or "",
        dead_letters=dead_letters,
        paged=cursor is not None,
        next_url=link(page.next_after) if page.next_after else None,
        further_url=link(page.stopped_after) if page.stopped_after else None,
        stopped_at=page.stopped_after[0] if page.stopped_after else None,
        scan_limit=SCAN_LIMIT,
        first_url=link(None),
        here=link(cursor),
    )


def dead_letters(request: Request) -> Response:
    return jobs(request, dead_letters=True)


def job(request: Request) -> Response:
    job_id = request.path_params["job_id"]  # a uuid.UUID: the route takes no other
    board = board_of(request)
    role = board.role()
    full, brief = role.can["jobq_get_job"], role.can["jobq_job_status"]
    if full:
        found: Any = board.queue().get_job(job_id)
    else:
        found = board.queue().status([job_id]).get(job_id) if brief else None
    if found is None:
        return fail(
            request, 404,
            f"no job {job_id}" if full or brief
            else f"role {role.name} may call neither jobq_get_job nor jobq_job_status",
            role,
        )
    return render(
        request,
        "job.html",
        role,
        job=found,
        full=full,
        timeline=timeline(found) if full else [],
        here=f"{base(request)}/jobs/{job_id}",
    )


def schedules(request: Request) -> Response:
    board = board_of(request)
    role = board.role()
    rows = board.queue().schedules() if role.can["jobq_schedules"] else []
    return render(request, "schedules.html", role, rows=rows)


def limits(request: Request) -> Response:
    board = board_of(request)
    role = board.role()
    rows = board.queue().limits() if role.can["jobq_limits"] else []
    usage = board.queue().limit_usage() if role.can["jobq_limit_usage"] else []
    return render(request, "limits.html", role, rows=rows, usage=usage,
                  here=f"{base(request)}/limits")


def workers(request: Request) -> Response:
    board = board_of(request)
    role = board.role()
    rows = board.run(_ops.workers_summary) if role.can["jobq_workers_summary"] else []
    return render(request, "workers.html", role, rows=rows)


def timeline(job: Job) -> list[tuple[datetime | None, str, str]]:
    """The job's life as far as its row tells it, oldest first: (when, what, detail)."""
    events = [(job.created_at, "enqueued", "")]
    if job.available_at != job.created_at:
        events.append((job.available_at, "available", ""))
    for e in job.errors:
        try:
            at = datetime.fromisoformat(e["at"]) if isinstance(e.get("at"), str) else None
        except ValueError:
            at = None
        detail = f"{e.get('worker') or ''}: {error_summary(e.get('error'))}".strip(": ")
        events.append((at, f"attempt {e.get('attempt', '?')} failed", detail))
    if job.locked_at and job.status == "processing":
        events.append((job.locked_at, f"claimed (attempt {job.attempts})", job.locked_by or ""))
    if job.cancel_requested_at:
        events.append((job.cancel_requested_at, "cancel requested", ""))
    if job.finished_at:
        events.append((job.finished_at, job.status, ""))
    far = datetime.max.replace(tzinfo=timezone.utc)
    return sorted(events, key=lambda e: e[0] or far)
