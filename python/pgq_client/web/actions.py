"""The POST routes: requeue, cancel, requeue all, pause and resume a queue, set and remove a
limit, each made by :func:`action`."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from .. import Queue
from ..errors import InvalidArgument
from .guard import csrf_ok
from .helpers import base, board_of, fail, next_url, text_filter


def action(function: str, act: Callable[..., str]) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of ``act(queue, form, job_id)`` (no ``job_id`` on a bulk route), which
    calls ``function`` and returns the notice shown on the page it returns to: it checks the
    form's CSRF token, then that the role may call ``function`` (refused with 403 without
    calling it otherwise), and redirects to the page the form came from."""

    async def endpoint(request: Request) -> Response:
        body = (await request.body()).decode("utf-8", "replace")
        fields = {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}
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
        back = f"/jobs/{job['job_id']}" if job else "/dead-letters"
        target = next_url(request, fields.get("next"), base(request) + back)
        joiner = "&" if "?" in target else "?"
        return RedirectResponse(f"{target}{joiner}{urlencode({'notice': notice})}", 303)

    return endpoint


def _requeue(queue: Queue, fields: dict[str, str], job_id: uuid.UUID) -> str:
    if queue.requeue_dead_letter(job_id):
        return f"requeued {job_id}"
    return f"{job_id} was not requeued (not finished)"


def _cancel(queue: Queue, fields: dict[str, str], job_id: uuid.UUID) -> str:
    done = queue.cancel([job_id], fields.get("reason") or "cancelled from jobq web")
    return f"{job_id}: {done[job_id]}" if job_id in done else f"no job {job_id}"


def _requeue_all(queue: Queue, fields: dict[str, str]) -> str:
    job_type, name = text_filter(fields.get("job_type")), text_filter(fields.get("queue"))
    return f"requeued {queue.requeue_dead_letters(job_type=job_type, queue=name)} job(s)"


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


requeue = action("jobq_requeue_dead_letter", _requeue)
cancel = action("jobq_cancel", _cancel)
requeue_all = action("jobq_requeue_dead_letters", _requeue_all)
pause = action("jobq_pause", _pause)
resume = action("jobq_resume", _resume)
set_limit = action("jobq_set_limit", _set_limit)
remove_limit = action("jobq_set_limit", _remove_limit)
