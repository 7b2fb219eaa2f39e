"""Jobs one by one: list, show, retry, follow (status, wait), cancel, and the dead letters."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import click

from ..models import STATUSES, JobStatus
from ..queue import Queue
from . import options as opt
from .base import call, command, fail, group, settings
from .output import columns, compact, counted, emit, error_line, jobs_table, show_job, yes


@group(
    "jobs",
    examples="jobq jobs list --status dead_letter --type send_email",
)
def jobs() -> None:
    """Look at jobs one by one and retry them (admin); follow them (status, wait: producer)."""


@command(jobs, "list", json=True)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="S",
    help=f"Only jobs in this status (repeatable): {', '.join(STATUSES)}.",
)
@opt.QUEUE
@click.option("--type", "job_type", metavar="T", help="Only jobs of this job type.")
@opt.LIMIT
def jobs_list(statuses: tuple[str, ...], **filters: Any) -> None:
    """List jobs, most recently changed first."""
    found = call(Queue.list_jobs, statuses=list(statuses) or None, **filters)
    emit(found, lambda: jobs_table(found, "updated_at", "no jobs"))


@command(jobs, "show", json=True)
@opt.ID
def jobs_show(job_id: uuid.UUID) -> None:
    """A job's payload, result, attempts, error history, cancel request and times."""
    job = call(Queue.get_job, job_id)
    if job is None:
        fail(f"no job {job_id}")
    emit(job, lambda: show_job(job))


def _retry(ids: Sequence[uuid.UUID]) -> None:
    """`jobs retry ID...` and `dead-letter requeue ID...`: each job requeued on its own."""
    with settings().queue() as q:
        done = {job_id: q.requeue_dead_letter(job_id) for job_id in dict.fromkeys(ids)}
    requeued = [job_id for job_id, ok in done.items() if ok]
    left = [job_id for job_id, ok in done.items() if not ok]
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
    statuses = call(Queue.cancel, job_ids, reason)
    unknown = [i for i in dict.fromkeys(job_ids) if i not in statuses]
    emit(
        {"jobs": [{"id": i, "status": st} for i, st in statuses.items()], "unknown": unknown},
        lambda: "\n".join(_cancelled(i, st) for i, st in statuses.items()),
    )
    if unknown:
        fail(f"no job {', '.join(map(str, unknown))} (nothing changed for it)")


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
def dead_letter_requeue(job_ids: list[uuid.UUID], all_: bool, **filters: Any) -> None:
    """Requeue jobs as `jobq jobs retry ID...`, or every dead_letter and failed one (--all;
    --include-cancelled: cancelled ones too)."""
    if bool(job_ids) == all_:
        raise click.UsageError("give either a job ID or --all")
    if job_ids:
        if any(filters.values()):
            raise click.UsageError(
                "--job-type, --queue and --include-cancelled go with --all, not with an ID"
            )
        _retry(job_ids)
        return
    count = call(Queue.requeue_dead_letters, **filters)
    emit({"requeued": count}, f"requeued {counted(count, 'job')}")


COMMANDS = [jobs, cancel, dead_letter]
