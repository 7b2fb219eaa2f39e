"""The pages: each asks the role's privileges, reads through the dashboard's Queue what the
role may read, and renders it (what it may not read is said, not attempted)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from pgq_client import FoundJobs, Job, JobsPage
from pgq_client.errors import error_summary
from pgq_client.statuses import STATUSES

from .helpers import (
    base,
    board_of,
    chart,
    fail,
    parse_cursor,
    parse_when,
    render,
    text_filter,
    throughput_chart,
)

PAGE_SIZE = 50
# How many finished jobs a filtered page examines at most (jobq_jobs_page's scan_limit): a
# filter that matches few of ten million jobs answers in milliseconds, with a link to search on.
SCAN_LIMIT = 10_000
# How far back the overview counts succeeded jobs for its throughput.
RECENT = timedelta(minutes=5)
# How far back the overview's errors per job type and its throughput chart go, and the chart's
# bucket.
ERRORS_SINCE = timedelta(hours=1)
CHART_BUCKET = timedelta(minutes=1)
AUDIT_PAGE = 50


def overview(request: Request) -> Response:
    board = board_of(request)
    role = board.role()
    rows: list[dict[str, Any]] = []
    if role.can["jobq_queue_summary"]:
        rows = board.queue().queue_summary(RECENT)
        board.record(rows)
    # What an operator looks at first: the most frequent errors of the last hour (admin) and
    # what jobq doctor warns of.
    partial = bool(request.query_params.get("partial"))
    errors = (board.queue().error_summary(ERRORS_SINCE, 3)
              if role.can["jobq_error_summary"] and not partial else [])
    findings = [] if partial else board.doctor(role.can["jobq_health"])
    history = (board.queue().throughput(ERRORS_SINCE, CHART_BUCKET)
               if role.can["jobq_throughput"] and not partial else [])
    paused: dict[str, Any] = {}
    # Every role sees the marker (the summary's paused); when and why are an admin's to see
    # (jobq_queues), as the buttons are.
    if role.can["jobq_queues"]:
        paused = {q["queue"]: q for q in board.queue().queues() if q["paused"]}
    return render(
        request,
        "overview_live.html" if partial else "overview.html",
        role,
        rows=rows,
        paused=paused,
        errors=errors,
        findings=findings,
        here=base(request) + "/",
        window_minutes=int(RECENT.total_seconds() // 60),
        chart=chart(list(board.samples)),
        throughput=throughput_chart(history),
        throughput_minutes=int(ERRORS_SINCE.total_seconds() // 60),
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
    page = JobsPage([], None, None)
    if role.can["jobq_jobs_page"]:
        page = board.queue().jobs_page(
            status, queue=queue, job_type=job_type, after=cursor, size=PAGE_SIZE,
            scan_limit=SCAN_LIMIT,
        )
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


# The idempotency key a schedule's fire gives its job (jobq_tick, jobq_schedule_run_now):
# jobq:schedule:<name>:<fire time, YYYY-MM-DDTHH:MM:SSZ>.
SCHEDULE_KEY = "jobq:schedule:"
FIRE_TIME_LENGTH = len("2000-01-01T00:00:00Z")


def schedule_of(key: str | None) -> str | None:
    """The name of the schedule whose fire made a job, read from its idempotency key."""
    if not key or not key.startswith(SCHEDULE_KEY):
        return None
    name = key[len(SCHEDULE_KEY):-FIRE_TIME_LENGTH - 1]
    return name if name and key[-FIRE_TIME_LENGTH - 1] == ":" else None


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
    graph = board.queue().job_graph(job_id) if role.can["jobq_job_graph"] else []
    this = next((n for n in graph if n.id == job_id), None)
    return render(
        request,
        "job.html",
        role,
        job=found,
        full=full,
        timeline=timeline(found) if full else [],
        schedule=schedule_of(found.idempotency_key) if full else None,
        here=f"{base(request)}/jobs/{job_id}",
        # its workflow: the jobs it waits for and those that wait for it (jobq_job_graph)
        parents=[n for n in graph if this is not None and n.id in this.depends_on],
        children=[n for n in graph if job_id in n.depends_on],
        graph_size=len(graph),
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
    rows = board.queue().workers_summary() if role.can["jobq_workers_summary"] else []
    return render(request, "workers.html", role, rows=rows)


def find(request: Request) -> Response:
    """The search form and its results: jobq_find_jobs with the filters given, each row
    selectable for an action on many."""
    params = request.query_params
    board = board_of(request)
    role = board.role()
    form = {name: (params.get(name) or "").strip() for name in FIND_FIELDS}
    statuses = [s for s in params.getlist("status") if s]
    bad = [s for s in statuses if s not in STATUSES]
    if bad:
        return fail(request, 400, f"status must be one of {', '.join(STATUSES)}, got {bad[0]!r}")
    filters: dict[str, Any] = {"statuses": statuses or None}
    for name in ("job_id", "idempotency_key", "job_type", "queue", "after_id"):
        filters[name] = text_filter(form[name])
    for name in ("created_after", "created_before", "finished_after", "finished_before"):
        filters[name] = parse_when(form[name], name)
    if form["payload_contains"]:
        try:
            filters["payload_contains"] = json.loads(form["payload_contains"])
        except json.JSONDecodeError as exc:
            return fail(request, 400, f"payload_contains: not valid JSON ({exc})")
    searched = any(v for v in filters.values()) or "search" in params
    found = FoundJobs([], None, None, None)
    if searched and role.can["jobq_find_jobs"]:
        found = board.queue().find_jobs(**filters, limit=PAGE_SIZE, scan_limit=SCAN_LIMIT)
    query = [(k, v) for k, v in form.items() if v and k != "after_id"]
    query += [("status", s) for s in statuses]
    path = base(request) + "/find"

    def link(after: uuid.UUID | None) -> str:
        return path + "?" + urlencode([*query, ("search", "1")]
                                      + ([("after_id", str(after))] if after else []))

    return render(
        request,
        "find.html",
        role,
        form=form,
        chosen=statuses,
        searched=searched,
        rows=found.rows,
        next_url=link(found.next_after) if found.next_after else None,
        further_url=link(found.stopped_after) if found.stopped_after else None,
        stopped_at=found.stopped_at,
        scan_limit=SCAN_LIMIT,
        # the choices of its queue and job type fields
        names=board.queue().names() if role.can["jobq_names"] else {},
        here=link(filters["after_id"]) if searched else path,
    )


FIND_FIELDS = ("job_id", "idempotency_key", "job_type", "queue", "created_after",
               "created_before", "finished_after", "finished_before", "payload_contains",
               "after_id")


def audit(request: Request) -> Response:
    board = board_of(request)
    role = board.role()
    before = request.query_params.get("before")
    if before is not None and not before.isdigit():
        return fail(request, 400, f"before must be an entry id (a number), got {before!r}")
    rows: list[dict[str, Any]] = []
    if role.can["jobq_audit_log"]:
        rows = board.queue().audit_log(int(before) if before else None, AUDIT_PAGE + 1)
    more = len(rows) > AUDIT_PAGE
    rows = rows[:AUDIT_PAGE]
    return render(
        request, "audit.html", role, rows=rows, paged=before is not None,
        next_url=f"{base(request)}/audit?before={rows[-1]['id']}" if more else None,
    )


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
