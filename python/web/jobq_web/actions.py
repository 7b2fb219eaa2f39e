"""The POST routes: requeue, cancel, requeue all, pause and resume a queue, act on the
selected jobs, a schedule's pause, resume, run now and delete, and set and remove a limit,
each made by :func:`action`. Every act on jobs is recorded in the audit log by the function
it calls."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pgq_client import JOB_ACTIONS, InvalidArgument, Queue

from .guard import csrf_ok
from .helpers import base, board_of, fail, next_url, text_filter


def action(function: str, act: Callable[..., str]) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of ``act(queue, form, job_id)`` (no ``job_id`` on a bulk route), which
    calls ``function`` and returns the notice shown on the page it returns to: it checks the
    form's CSRF token, then that the role may call ``function`` (refused with 403 without
    calling it otherwise), and redirects to the page the form came from."""

    async def endpoint(request: Request) -> Response:
        body = (await request.body()).decode("utf-8", "replace")
        parsed = parse_qs(body, keep_blank_values=True)
        fields = {k: v[0] for k, v in parsed.items()}
        # The selected rows' checkboxes, all named job_id.
        fields["job_ids"] = " ".join(parsed.get("job_id", []))
        if not csrf_ok(request, fields):
            return fail(request, 403, "refused: the form's CSRF token is missing or wrong "
                        "(reload the page and try again)")
        return await run_in_threadpool(perform, request, fields, dict(request.path_params))

    def perform(request: Request, fields: dict[str, str], job: dict[str, Any]) -> Response:
        board = board_of(request)
        role = board.role()
        if not role.can[function]:
            return fail(request, 403, f"role {role.name} may not call {function}", role)
        notice = act(board.queue(), fields, **job)
        back = f"/jobs/{job['job_id']}" if job else BACK.get(function, "/dead-letters")
        target = next_url(request, fields.get("next"), base(request) + back)
        joiner = "&" if "?" in target else "?"
        return RedirectResponse(f"{target}{joiner}{urlencode({'notice': notice})}", 303)

    return endpoint


# A job's own Requeue and Cancel buttons are an operator's acts, recorded in the audit log as
# the selected jobs' are (jobq_act_on_jobs). A producer or worker, which may cancel (from a job's
# page) but not call jobq_act_on_jobs, cancels through jobq_cancel, unrecorded.
_ACT = {"jobq_act_on_jobs": "(text, uuid[], text)"}


def _requeue(queue: Queue, fields: dict[str, str], job_id: uuid.UUID) -> str:
    outcome = queue.act_on_jobs("requeue", [job_id], fields.get("reason") or None)[job_id]
    if outcome == "requeued":
        return f"requeued {job_id}"
    return f"{job_id} was not requeued ({outcome})"


def _cancel(queue: Queue, fields: dict[str, str], job_id: uuid.UUID) -> str:
    reason = fields.get("reason") or "cancelled from jobq web"
    if queue.function_privileges(_ACT)[1]["jobq_act_on_jobs"]:
        outcome = queue.act_on_jobs("cancel", [job_id], reason)[job_id]
    else:
        outcome = queue.cancel([job_id], reason).get(job_id, "unknown")
    if outcome == "unknown":
        return f"no job {job_id}"
    return f"{job_id}: {outcome.removeprefix('left alone: ')}"


def _requeue_all(queue: Queue, fields: dict[str, str]) -> str:
    """``jobq_requeue_dead_letters``, which records itself in the audit log with the reason."""
    job_type, name = text_filter(fields.get("job_type")), text_filter(fields.get("queue"))
    count = queue.requeue_dead_letters(
        job_type=job_type, queue=name, reason=fields.get("reason") or None
    )
    return f"requeued {count} job(s)"


def _pause(queue: Queue, fields: dict[str, str]) -> str:
    name = fields.get("queue", "")
    return f"paused {name}" if queue.pause(name, fields.get("reason") or None) else (
        f"{name} was paused already")


def _resume(queue: Queue, fields: dict[str, str]) -> str:
    name = fields.get("queue", "")
    return f"resumed {name}" if queue.resume(name) else f"{name} was not paused"


def _whole(fields: dict[str, str], name: str) -> int | None:
    """A form's optional whole number: blank is None; anything else not a number is refused
    as the database refuses a bad argument, naming it."""
    text = fields.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidArgument(f"{name} must be a whole number, got {text!r}") from None


def _set_limit(queue: Queue, fields: dict[str, str]) -> str:
    group = fields.get("limit_group", "")
    per = _whole(fields, "per_seconds")
    try:
        queue.set_limit(group, _whole(fields, "max_running"), _whole(fields, "max_starts"),
                        per, fields.get("share") or None)
    except InvalidArgument as exc:
        return f"refused: {exc}"
    return f"set the limit of {group}"


def _remove_limit(queue: Queue, fields: dict[str, str]) -> str:
    group = fields.get("limit_group", "")
    queue.set_limit(group)
    return f"removed the limit of {group}"


def _act(queue: Queue, fields: dict[str, str]) -> str:
    """The selected jobs' action (``jobq_act_on_jobs``: done and recorded in the audit log)."""
    what = fields.get("action", "")
    if what not in JOB_ACTIONS:
        raise ValueError(f"action must be one of {', '.join(JOB_ACTIONS)}, got {what!r}")
    ids = fields["job_ids"].split()
    if not ids:
        raise ValueError("job_id: select at least one job")
    outcomes = queue.act_on_jobs(what, ids, fields.get("reason") or None)  # type: ignore[arg-type]
    done = sum(1 for o in outcomes.values() if not o.startswith("left alone") and o != "unknown")
    left = len(outcomes) - done
    return f"{what.replace('_', ' ')}: {done} of {len(outcomes)} job(s)" + (
        f" ({left} left alone or unknown)" if left else "")


def _schedule(queue: Queue, fields: dict[str, str]) -> str:
    """Pause or resume one schedule: set it again with only ``paused`` changed
    (``jobq_schedule``)."""
    name, what = fields.get("name", ""), fields.get("action", "")
    found = [s for s in queue.schedules() if s.name == name]
    if not found:
        return f"no schedule {name}"
    s = found[0]
    if what in ("pause", "resume"):
        queue.schedule(s.name, s.cron, s.job_type, s.payload, timezone=s.timezone, queue=s.queue,
                       priority=s.priority, max_attempts=s.max_attempts,
                       catch_up=s.catch_up, paused=what == "pause")  # type: ignore[arg-type]
        return f"{what}d schedule {name}"
    raise ValueError(f"action must be one of pause, resume, got {what!r}")


def _run_schedule(queue: Queue, fields: dict[str, str]) -> str:
    """Fire one schedule now, as a tick fires it (``jobq_schedule_run_now``: the schedule's
    last fire becomes this one)."""
    name = fields.get("name", "")
    job_id = queue.run_schedule(name)
    return f"no schedule {name}" if job_id is None else f"ran schedule {name} now: job {job_id}"


def _unschedule(queue: Queue, fields: dict[str, str]) -> str:
    name = fields.get("name", "")
    return f"deleted schedule {name}" if queue.unschedule(name) else f"no schedule {name}"


# Where a bulk route returns when its form names no page.
BACK = {"jobq_act_on_jobs": "/jobs", "jobq_schedule": "/schedules", "jobq_unschedule": "/schedules",
        "jobq_schedule_run_now": "/schedules", "jobq_pause": "/", "jobq_resume": "/",
        "jobq_set_limit": "/limits"}

requeue = action("jobq_act_on_jobs", _requeue)
cancel = action("jobq_cancel", _cancel)
requeue_all = action("jobq_requeue_dead_letters", _requeue_all)
pause = action("jobq_pause", _pause)
resume = action("jobq_resume", _resume)
act = action("jobq_act_on_jobs", _act)
schedule = action("jobq_schedule", _schedule)
run_schedule = action("jobq_schedule_run_now", _run_schedule)
unschedule = action("jobq_unschedule", _unschedule)
set_limit = action("jobq_set_limit", _set_limit)
remove_limit = action("jobq_set_limit", _remove_limit)
