"""Jobs: list, find, show, retry, follow (status, wait), cancel, their workflow graph; act on
many with a record (cancel, requeue, delete, run-now, and the audit log); the errors per job
type; the dead letters."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import click

from pgq_client._ops import ACTIONS
from pgq_client.durations import parse_duration
from pgq_client.models import STATUSES, JobStatus
from pgq_client.queue import Queue

from . import parsing as opt
from .base import call, command, fail, group, settings
from .output import (
    cell,
    columns,
    compact,
    counted,
    emit,
    error_line,
    jobs_table,
    listing,
    show_job,
    yes,
)
from .parsing import F, parse_run_at


@group(
    "jobs",
    examples="jobq jobs list --status dead_letter --type send_email",
)
def jobs() -> None:
    """Look at jobs one by one and retry them (admin); follow them (status, wait: producer)."""


def _statuses(**attrs: Any) -> Callable[[F], F]:
    help = f"Only jobs in this status (repeatable): {', '.join(STATUSES)}."
    return click.option("--status", "statuses", multiple=True, metavar="S", help=help, **attrs)


_TYPE = click.option("--type", "job_type", metavar="T", help="Only jobs of this job type.")


@command(jobs, "list", json=True)
@_statuses()
@opt.QUEUE
@_TYPE
@opt.LIMIT
def jobs_list(statuses: tuple[str, ...], **filters: Any) -> None:
    """List jobs, most recently changed first."""
    found = call(Queue.list_jobs, statuses=list(statuses) or None, **filters)
    emit(found, lambda: jobs_table(found, "updated_at", "no jobs"))


def _when(_ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """A time filter: a duration ago (``2h``) or ISO 8601 with a UTC offset (or ``Z``)."""
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return datetime.now(timezone.utc) - parse_duration(value)
    try:
        return parse_run_at(value)
    except click.BadParameter:
        raise click.BadParameter(
            f"{value!r} is neither a duration ago (2h, 30m, 7d) nor an ISO 8601 time with a "
            "UTC offset (2030-01-31T08:00:00Z)",
            param=param,
        ) from None


def _json_value(_ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param=param) from None


def _time_option(name: str, what: str) -> Callable[[F], F]:
    return click.option(
        name, metavar="TIME", callback=_when,
        help=f"{what}: a duration ago (2h, 30m, 7d) or ISO 8601 with an offset.",
    )


@command(
    jobs,
    "find",
    json=True,
    examples="""
        jobq jobs find --key order-1234
        jobq jobs find --type send_email --status failed --created-after 2h
        jobq jobs find --payload '{"customer_id": 42}'
    """,
)
@click.option("--id", "job_id", metavar="ID", callback=opt.one_id, help="The job with this id.")
@click.option("--key", "idempotency_key", metavar="KEY", help="Jobs with this idempotency key.")
@_TYPE
@opt.QUEUE
@_statuses(type=click.Choice(STATUSES))
@_time_option("--created-after", "Created at or after")
@_time_option("--created-before", "Created before")
@_time_option("--finished-after", "Finished at or after")
@_time_option("--finished-before", "Finished before")
@click.option("--payload", "payload_contains", metavar="JSON", callback=_json_value,
              help="Jobs whose payload contains this JSON (@>; admin).")
@click.option("--after", "after_id", metavar="ID", callback=opt.one_id,
              help="The page after this job (the last id of the previous page).")
@click.option("--limit", type=opt.POSITIVE, default=50, help="At most N jobs (up to 1000).")
@click.option("--scan-limit", type=opt.POSITIVE, default=10_000,
              help="Examine at most N jobs beyond an id or key look-up.")
def jobs_find(statuses: tuple[str, ...], limit: int, scan_limit: int, **filters: Any) -> None:
    """Find jobs, live and finished, by id, key, type, queue, status, time or payload,
    newest first; says where to search on when it stopped before --limit matches."""
    found = call(Queue.find_jobs, statuses=list(statuses) or None, limit=limit,
                 scan_limit=scan_limit, **filters)
    names = ["id", "queue", "job_type", "status", "attempts", "created_at", "finished_at",
             "last_error"]

    def text() -> str:
        shown = columns(found.rows, names, "no jobs found",
                        last_error=lambda r: error_line(r["last_error"], 60))
        lines = [shown]
        if found.next_after:
            lines.append(f"more: --after {found.next_after}")
        if found.stopped_after:
            lines.append(
                f"searched {scan_limit:,} jobs back to {cell(found.stopped_at)}: "
                f"search older ones with --after {found.stopped_after}"
            )
        return "\n".join(lines)

    emit(
        {"jobs": [{n: r[n] for n in names} for r in found.rows],
         "next_after": found.next_after, "stopped_after": found.stopped_after},
        text,
    )


@command(jobs, "show", json=True)
@opt.ID
def jobs_show(job_id: uuid.UUID) -> None:
    """A job's payload, result, attempts, error history, cancel request and times."""
    job = call(Queue.get_job, job_id)
    if job is None:
        fail(f"no job {job_id}")
    emit(job, lambda: show_job(job))


_ACT = {"jobq_act_on_jobs": "(text, uuid[], text)"}


def _cancel(job_ids: Sequence[uuid.UUID], reason: str | None) -> dict[uuid.UUID, str]:
    """Each known job's status after the cancel, as ``jobq_cancel`` answers it. A role that
    may not call ``jobq_act_on_jobs`` (a producer or worker, which cancels its own jobs)
    calls ``jobq_cancel``, which writes no audit row."""
    with settings().queue() as q:
        _, allowed = q.function_privileges(_ACT)
        if not allowed["jobq_act_on_jobs"]:
            return q.cancel(job_ids, reason)
        outcomes = q.act_on_jobs("cancel", job_ids, reason)
    return {i: o.removeprefix("left alone: ") for i, o in outcomes.items() if o != "unknown"}


def _retry(ids: Sequence[uuid.UUID]) -> None:
    """`jobs retry ID...` and `dead-letter requeue ID...`: one requeue of the jobs through
    ``jobq_act_on_jobs``, recorded in the audit log as the commands on many jobs are."""
    outcomes = call(Queue.act_on_jobs, "requeue", ids, None)
    requeued = [job_id for job_id, outcome in outcomes.items() if outcome == "requeued"]
    left = [job_id for job_id, outcome in outcomes.items() if outcome != "requeued"]
    emit(
        {"requeued": requeued, "not_requeued": left},
        lambda: "\n".join(f"requeued {job_id}" for job_id in requeued),
    )
    if left:
        fail(
            "not requeued (not dead_letter, failed or cancelled, or unknown; nothing changed "
            f"for them): {', '.join(map(str, left))}"
        )


@command(jobs, "retry", json=True)
@opt.IDS
def jobs_retry(job_ids: list[uuid.UUID]) -> None:
    """Make dead_letter, failed or cancelled jobs pending again (exit 1: one was not)."""
    _retry(job_ids)


def _print_statuses(
    ids: Sequence[uuid.UUID], found: Mapping[uuid.UUID, JobStatus], finished: bool = False
) -> int:
    """Print how the jobs stand; 1 when one is unknown (or, with ``finished``, unfinished)."""
    unknown = [i for i in dict.fromkeys(ids) if i not in found]
    text = columns(
        found.values(),
        ["id", "status", "attempts", "finished_at", "cancel_requested", "result", "last_error"],
        cancel_requested=lambda st: yes(st.cancel_requested),
        result=lambda st: compact(st.result),
        last_error=lambda st: error_line(st.last_error, 60),
    )
    emit({"jobs": list(found.values()), "unknown": unknown}, text if found else "")
    if not settings().as_json:
        for job_id in unknown:
            click.echo(f"jobq: no job {job_id}", err=True)
    done = not unknown and (not finished or all(st.finished for st in found.values()))
    return 0 if done else 1


@command(jobs, "status", json=True)
@opt.IDS
def jobs_status(job_ids: list[uuid.UUID]) -> int:
    """How jobs stand, without their payload (a producer may ask); exit 1: one is unknown."""
    return _print_statuses(job_ids, call(Queue.status, job_ids))


@command(jobs, "wait", json=True)
@opt.IDS
@opt.duration("--timeout", "30s", "Give up after this long")
def jobs_wait(job_ids: list[uuid.UUID], timeout: timedelta) -> int:
    """Wait until the jobs have finished, then print their statuses (exit 1: one has not)."""
    return _print_statuses(job_ids, call(Queue.wait, job_ids, timeout), finished=True)


def _cancelled(job_id: uuid.UUID, status: str) -> str:
    if status == "cancelled":
        return f"cancelled {job_id}"
    if status == "cancel_requested":
        return (
            f"cancel requested {job_id} (running: it stops when its handler sees the request, "
            "or ends succeeded if it completes first)"
        )
    return f"left alone {job_id} (already {status})"


@command(
    json=True,
    examples="""
        jobq cancel 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55
        jobq cancel 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55 --reason 'customer withdrew the order'
    """,
)
@opt.IDS
@click.option(
    "--reason", metavar="TEXT", help="Why; kept with the job (its last_error when it was pending)."
)
def cancel(job_ids: list[uuid.UUID], reason: str | None) -> None:
    """Cancel jobs: pending ones at once, running ones when they stop (exit 1: one unknown)."""
    statuses = _cancel(job_ids, reason)
    unknown = [i for i in dict.fromkeys(job_ids) if i not in statuses]
    emit(
        {"jobs": [{"id": i, "status": st} for i, st in statuses.items()], "unknown": unknown},
        lambda: "\n".join(_cancelled(i, st) for i, st in statuses.items()),
    )
    _refuse_unknown(unknown)


def _refuse_unknown(unknown: Sequence[uuid.UUID]) -> None:
    if unknown:
        fail(f"no job {', '.join(map(str, unknown))} (nothing changed for it)")


_ACTED = {
    "cancel": "Cancel jobs: pending ones at once, running ones when their handler sees it.",
    "requeue": "Make failed, dead_letter or cancelled jobs pending again.",
    "delete": "Delete finished jobs (live ones are left alone: cancel them first).",
    "run_now": "Make pending jobs that wait for their run_at or a retry available now.",
}


_EXAMPLES = {
    "requeue": "jobq jobs requeue 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55 --reason 'relay fixed'",
    "delete": "jobq jobs delete 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55 --reason 'erasure request'",
}


def _action_command(action: str) -> click.Command:
    """`jobs cancel|requeue|delete|run-now ID...`: one recorded call of jobq_act_on_jobs; each
    job's outcome, a job the action does not apply to "left alone" (exit 1: one is unknown,
    as `jobq cancel`)."""

    @command(jobs, action.replace("_", "-"), json=True, examples=_EXAMPLES.get(action),
             help=f"{_ACTED[action]} Recorded in `jobq audit` (admin; exit 1: one is unknown).")
    @opt.IDS
    @click.option("--reason", metavar="TEXT", help="Why (kept in the audit log).")
    def act(job_ids: list[uuid.UUID], reason: str | None) -> None:
        outcomes = call(Queue.act_on_jobs, action, job_ids, reason)  # type: ignore[arg-type]
        emit(
            {"jobs": [{"id": i, "outcome": o} for i, o in outcomes.items()]},
            lambda: "\n".join(f"{i}  {o}" for i, o in outcomes.items()),
        )
        _refuse_unknown([i for i, o in outcomes.items() if o == "unknown"])

    return act


ACTION_COMMANDS = [_action_command(action) for action in ACTIONS]


@command(json=True, examples="jobq audit\njobq audit --limit 20 --json")
@click.option("--before", "before_id", type=opt.POSITIVE, metavar="N",
              help="The page before this entry (the last id of the previous page).")
@click.option("--limit", type=click.IntRange(1, 1000), default=100, help="At most N entries.")
def audit(before_id: int | None, limit: int) -> None:
    """What operators did to jobs, newest first: who, when, what, which jobs, why (admin)."""
    rows = call(Queue.audit_log, before_id, limit)
    listing(
        rows, ["id", "acted_at", "acting_role", "action", "jobs", "changed", "filters", "reason"],
        "no actions recorded",
        acting_role=lambda r: r["acting_role"] + (
            "" if r["acting_role"] == r["login_role"] else f" (login {r['login_role']})"),
        jobs=lambda r: len(r["job_ids"]),
        changed=lambda r: len(r["changed"]),
        filters=lambda r: " ".join(  # a bulk requeue's; a filter that is None matches all
            f"{k}={v}" for k, v in (r["filters"] or {}).items() if v not in (None, False)),
    )


@command(json=True, examples="jobq errors\njobq errors --since 24h --per-type 3")
@opt.duration("--since", "1h", "How far back")
@click.option("--per-type", type=click.IntRange(1, 100), default=5,
              help="The N most frequent errors of each job type.")
def errors(since: timedelta, per_type: int) -> None:
    """The most frequent errors of each job type, as their exception line (admin)."""
    rows = call(Queue.error_summary, since, per_type)
    listing(rows, ["job_type", "failures", "jobs", "last_seen", "error"], "no errors")


@group(
    "dead-letter",
    examples="""
        jobq dead-letter list --job-type send_email
        jobq dead-letter requeue --all --job-type send_email
    """,
)
def dead_letter() -> None:
    """Jobs that used all their attempts (dead_letter) or failed permanently (failed)."""


@command(dead_letter, "list", json=True)
@opt.JOB_TYPE
@opt.QUEUE
@opt.LIMIT
def dead_letter_list(**filters: Any) -> None:
    """List dead_letter and failed jobs, most recent first."""
    found = call(Queue.dead_letters, **filters)
    emit(found, lambda: jobs_table(found, "finished_at", "no dead-letter or failed jobs"))


@command(dead_letter, "requeue", json=True)
@opt.ids("[ID]...", required=False)
@click.option("--all", "all_", is_flag=True, help="Requeue every dead_letter and failed job.")
@opt.JOB_TYPE
@opt.QUEUE
@click.option("--include-cancelled", is_flag=True, help="With --all: cancelled jobs too.")
@click.option("--reason", metavar="TEXT", help="With --all: why (kept in the audit log).")
def dead_letter_requeue(job_ids: list[uuid.UUID], all_: bool, **filters: Any) -> None:
    """Requeue jobs as `jobq jobs retry ID...`, or every dead_letter and failed one (--all;
    --include-cancelled: cancelled ones too), recorded in the audit log."""
    if bool(job_ids) == all_:
        raise click.UsageError("give either a job ID or --all")
    if job_ids:
        if any(filters.values()):
            raise click.UsageError(
                "--job-type, --queue, --include-cancelled and --reason go with --all, not with "
                "an ID"
            )
        _retry(job_ids)
        return
    count = call(Queue.requeue_dead_letters, **filters)
    emit({"requeued": count}, f"requeued {counted(count, 'job')}")


@command(jobs, "graph", json=True)
@opt.ID
def jobs_graph(job_id: uuid.UUID) -> None:
    """The workflow around a job: it, the jobs it waits for and those that wait for it,
    transitively, nearest first, each with its status and dependencies."""
    nodes = call(Queue.job_graph, job_id)
    if not nodes:
        fail(f"no job {job_id}")
    listing(nodes, ["id", "job_type", "status", "depends_on"], "",
            depends_on=lambda n: " ".join(str(d) for d in n.depends_on))


COMMANDS = [jobs, cancel, dead_letter, audit, errors]
