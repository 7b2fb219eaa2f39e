"""Jobs one by one: list, show, retry, follow (status, wait), cancel, and the dead letters."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import timedelta

import click

from ..models import STATUSES, JobStatus
from .base import command, fail, group, settings
from .output import compact, echo_json, error_line, jobs_table, show_job, table
from .parsing import Duration, parse_ids

_IDS = click.argument("job_ids", metavar="ID...", nargs=-1, required=True)


@group(
    "jobs",
    examples="""
        jobq jobs list --status dead_letter --type send_email
        jobq jobs show 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55
        jobq jobs retry 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55
        jobq jobs status 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55
        jobq jobs wait 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55 --timeout 5m
    """,
)
def jobs(_ctx: click.Context) -> None:
    """Look at jobs one by one and retry them (admin); follow them (status, wait: producer)."""


@command(jobs, "list", json=True)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="S",
    help=f"Only jobs in this status (repeatable): {', '.join(STATUSES)}.",
)
@click.option("--queue", metavar="Q", help="Only jobs of this queue.")
@click.option("--type", "job_type", metavar="T", help="Only jobs of this job type.")
@click.option("--limit", type=click.IntRange(min=1), default=100)
def jobs_list(
    ctx: click.Context,
    statuses: tuple[str, ...],
    queue: str | None,
    job_type: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List jobs, most recently changed first."""
    with settings(ctx).queue() as q:
        found = q.list_jobs(
            statuses=list(statuses) or None, job_type=job_type, queue=queue, limit=limit
        )
    if as_json:
        echo_json(found)
    else:
        click.echo(jobs_table(found) if found else "no jobs")


@command(jobs, "show", json=True)
@click.argument("job_id", metavar="ID")
def jobs_show(ctx: click.Context, job_id: str, as_json: bool) -> None:
    """A job's payload, result, attempts, error history, cancel request and times."""
    (parsed,) = parse_ids([job_id])
    with settings(ctx).queue() as q:
        job = q.get_job(parsed)
    if job is None:
        fail(f"no job {parsed}")
    if as_json:
        echo_json(job)
    else:
        click.echo(show_job(job))


def _retry(ctx: click.Context, job_ids: Sequence[str], as_json: bool) -> None:
    """`jobs retry ID...` and `dead-letter requeue ID...`: each job requeued on its own."""
    ids = parse_ids(job_ids)
    requeued: list[uuid.UUID] = []
    left: list[uuid.UUID] = []
    with settings(ctx).queue() as q:
        for job_id in dict.fromkeys(ids):
            (requeued if q.requeue_dead_letter(job_id) else left).append(job_id)
    if as_json:
        echo_json({"requeued": requeued, "not_requeued": left})
    else:
        for job_id in requeued:
            click.echo(f"requeued {job_id}")
    if left:
        fail(
            "not requeued (not dead_letter, failed or cancelled, or unknown; nothing changed "
            f"for them): {', '.join(map(str, left))}"
        )


@command(jobs, "retry", json=True)
@_IDS
def jobs_retry(ctx: click.Context, job_ids: tuple[str, ...], as_json: bool) -> None:
    """Make dead_letter, failed or cancelled jobs pending again (attempts 0, history kept).

    Exits 1 when one of them was not requeued (another status, or unknown); the others are.
    """
    _retry(ctx, job_ids, as_json)


def _print_statuses(
    ids: Sequence[uuid.UUID], found: Mapping[uuid.UUID, JobStatus], as_json: bool
) -> None:
    unknown = [i for i in dict.fromkeys(ids) if i not in found]
    if as_json:
        echo_json({"jobs": list(found.values()), "unknown": unknown})
        return
    if found:
        headers = ["id", "status", "attempts", "finished_at", "cancel_requested", "result"]
        rows = [
            (
                st.id,
                st.status,
                st.attempts,
                st.finished_at,
                "yes" if st.cancel_requested else "",
                compact(st.result),
                error_line(st.last_error, 60),
            )
            for st in found.values()
        ]
        click.echo(table([*headers, "last_error"], rows))
    for job_id in unknown:
        click.echo(f"jobq: no job {job_id}", err=True)


@command(jobs, "status", json=True)
@_IDS
def jobs_status(ctx: click.Context, job_ids: tuple[str, ...], as_json: bool) -> None:
    """How jobs stand: status, attempts, result, last error, cancel request (no payload; a
    producer may ask). Exits 1 when one of them is unknown."""
    ids = parse_ids(job_ids)
    with settings(ctx).queue() as q:
        found = q.status(ids)
    _print_statuses(ids, found, as_json)
    if len(found) < len(set(ids)):
        ctx.exit(1)


@command(jobs, "wait", json=True)
@_IDS
@click.option(
    "--timeout",
    type=Duration(),
    default="30s",
    metavar="DURATION",
    help="Give up after this long: seconds, or 90s, 30m, 12h, 1h30m.",
)
def jobs_wait(
    ctx: click.Context, job_ids: tuple[str, ...], timeout: timedelta, as_json: bool
) -> None:
    """Wait until the jobs have finished (succeeded, failed, dead_letter, cancelled), then print
    their statuses. Woken by a notification, not by polling. Exits 1 when one has not finished
    within --timeout or is unknown, 0 otherwise (whatever status they ended in)."""
    ids = parse_ids(job_ids)
    with settings(ctx).queue() as q:
        found = q.wait(ids, timeout)
    _print_statuses(ids, found, as_json)
    if len(found) < len(set(ids)) or not all(st.finished for st in found.values()):
        ctx.exit(1)


@command(
    json=True,
    examples="""
        jobq cancel 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55
        jobq cancel 7f0c2a9e-5d1b-4c1e-9a43-2f4e1d0b8c55 --reason 'customer withdrew the order'
    """,
)
@_IDS
@click.option(
    "--reason", metavar="TEXT", help="Why; kept with the job (its last_error when it was pending)."
)
def cancel(ctx: click.Context, job_ids: tuple[str, ...], reason: str | None, as_json: bool) -> None:
    """Cancel jobs: a pending job is cancelled at once; a running one is asked to stop (its
    handler sees job.cancel_requested()) and ends cancelled unless it completes first; a
    finished job is left alone. A producer may cancel. Exits 1 when one of them is unknown."""
    ids = parse_ids(job_ids)
    with settings(ctx).queue() as q:
        statuses = q.cancel(ids, reason)
    unknown = [i for i in dict.fromkeys(ids) if i not in statuses]
    if as_json:
        rows = [{"id": i, "status": st} for i, st in statuses.items()]
        echo_json({"jobs": rows, "unknown": unknown})
    else:
        for job_id, status in statuses.items():
            if status == "cancelled":
                click.echo(f"cancelled {job_id}")
            elif status == "cancel_requested":
                click.echo(
                    f"cancel requested {job_id} (running: it stops when its handler sees the "
                    "request, or ends succeeded if it completes first)"
                )
            else:
                click.echo(f"left alone {job_id} (already {status})")
    if unknown:
        fail(f"no job {', '.join(map(str, unknown))} (nothing changed for it)")


@group(
    "dead-letter",
    examples="""
        jobq dead-letter list --job-type send_email
        jobq dead-letter requeue --all --job-type send_email
    """,
)
def dead_letter(_ctx: click.Context) -> None:
    """Jobs that used all their attempts (dead_letter) or failed permanently (failed)."""


@command(dead_letter, "list", json=True)
@click.option("--job-type", metavar="T")
@click.option("--queue", metavar="Q")
@click.option("--limit", type=click.IntRange(min=1), default=100)
def dead_letter_list(
    ctx: click.Context, job_type: str | None, queue: str | None, limit: int, as_json: bool
) -> None:
    """List dead_letter and failed jobs, most recent first."""
    with settings(ctx).queue() as q:
        found = q.dead_letters(job_type=job_type, queue=queue, limit=limit)
    if as_json:
        echo_json(found)
    else:
        click.echo(jobs_table(found, "finished_at") if found else "no dead-letter or failed jobs")


@command(dead_letter, "requeue", json=True)
@click.argument("job_ids", metavar="[ID]...", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Requeue every dead_letter and failed job.")
@click.option("--job-type", metavar="T", help="With --all: only jobs of this type.")
@click.option("--queue", metavar="Q", help="With --all: only jobs of this queue.")
def dead_letter_requeue(
    ctx: click.Context,
    job_ids: tuple[str, ...],
    all_: bool,
    job_type: str | None,
    queue: str | None,
    as_json: bool,
) -> None:
    """Make dead_letter, failed or cancelled jobs (ID..., as `jobq jobs retry`) or every
    dead_letter and failed job (--all) pending again."""
    if bool(job_ids) == all_:
        raise click.UsageError("give either a job ID or --all")
    if job_ids:
        if job_type or queue:
            raise click.UsageError("--job-type and --queue go with --all, not with an ID")
        _retry(ctx, job_ids, as_json)
        return
    with settings(ctx).queue() as q:
        count = q.requeue_dead_letters(job_type=job_type, queue=queue)
    if as_json:
        echo_json({"requeued": count})
    else:
        click.echo(f"requeued {count} jobs")


COMMANDS = [jobs, cancel, dead_letter]
