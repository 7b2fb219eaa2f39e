"""Running a queue: stats, throughput, the names in use, workers, metrics, settings, retention,
pausing queues, schedules and limits."""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
from datetime import timedelta, timezone
from typing import TYPE_CHECKING, Any

import click

from pgq_client.models import FINISHED_STATUSES, Limit, LimitUsage
from pgq_client.queue import Queue

from . import parsing as opt
from .base import call, command, fail, group, settings
from .output import cell, columns, counted, emit, fields, listing, table, yes
from .parsing import parse_payload

if TYPE_CHECKING:
    from pgq_client.metrics import ListenAddress

_UTC = timezone.utc


@command(json=True, examples="jobq stats\njobq stats --schema tenant_a --json")
def stats() -> None:
    """Job counts per queue, type and status; a paused queue's rows say so."""
    with settings().queue() as q:
        rows = q.stats()
        # jobq_queue_summary (monitor) says which queues are paused; jobq_queues is an admin's.
        summary = q.queue_summary()
    paused = sorted(r["queue"] for r in summary if r["paused"])
    names = ["queue", "job_type", "status", "jobs", "oldest_available_at"]
    found = [{**fields(r, names), "paused": r.queue in paused} for r in rows]

    def text() -> str:
        shown = columns(rows, [*names, "paused"], "no jobs",
                        paused=lambda r: "paused" if r.queue in paused else "")
        idle = [name for name in paused if all(r.queue != name for r in rows)]
        return shown + (f"\npaused, without jobs: {', '.join(idle)}" if idle else "")

    emit(found, text)


@command(None, "metrics")
@click.option(
    "--serve",
    metavar="HOST:PORT",
    help="Serve them at http://HOST:PORT/metrics until stopped ([::1]:PORT for IPv6, :PORT "
    "for every interface, port 0 for any free one).",
)
def metrics_command(serve: str | None) -> None:
    """Prometheus metrics kept by the database (monitor or admin; docs/metrics.md)."""
    from pgq_client import metrics as exporter

    address = None if serve is None else opt.parsed(exporter.parse_listen_address, serve, "--serve")
    with settings().queue() as q:
        # Read once under --serve too: a wrong DSN or a role without access fails here, not on
        # every scrape.
        samples = q.metrics()
        if address is None:
            click.echo(exporter.render(samples), nl=False)
        if any(s.metric == "jobq_metrics_counting" and s.value == 0 for s in samples):
            click.echo(
                "jobq: counting is off (jobq_metrics_counting 0): counters, histograms and "
                "jobq_jobs stand still; `jobq configure --metrics` (admin) turns it on",
                err=True,
            )
        if address is not None:
            _serve_metrics(q, address)


def _serve_metrics(q: Queue, address: ListenAddress) -> None:
    """Serve /metrics, read through ``q`` at each scrape, until SIGTERM or SIGINT."""
    from prometheus_client import CollectorRegistry, start_http_server

    from pgq_client import metrics as exporter

    registry = CollectorRegistry(auto_describe=False)
    registry.register(exporter.JobqCollector(q.metrics))
    try:
        server, thread = start_http_server(address.port, addr=address.host, registry=registry)
    except OSError as exc:
        fail(f"cannot listen on {address}: {exc.strerror or exc}")
    bound = exporter.ListenAddress(address.host, int(server.server_port))
    click.echo(f"jobq: serving metrics at http://{bound}/metrics (Ctrl-C to stop)", err=True)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with contextlib.suppress(KeyboardInterrupt):
            while not stop.wait(1.0):
                pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.shutdown()
        server.server_close()
        thread.join(5)
    click.echo("jobq: stopped serving metrics", err=True)


@command(examples="jobq configure\njobq configure --max-payload-bytes 4194304", json=True)
@click.option("--max-payload-bytes", type=opt.POSITIVE, help="Largest payload (jsonb).")
@click.option(
    "--metrics/--no-metrics",
    default=None,
    help="Count what jobq does, for `jobq metrics` (off on a new installation: a write per "
    "counted call; turning it on reads the whole table, blocking writers meanwhile).",
)
def configure(**changes: Any) -> None:
    """Show (and change) this installation's settings (admin)."""
    values = call(Queue.configure, **changes)
    emit(values, lambda: table(["setting", "value"], sorted(values.items())))


@command(
    json=True,
    examples="""
        jobq prune                                  # succeeded jobs finished over 7 days ago
        jobq prune --older-than 12h --status failed --status dead_letter
    """,
)
@opt.duration("--older-than", "7d", "Only jobs finished longer ago than this")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(FINISHED_STATUSES),
    help="Finished status to prune (repeatable; default: succeeded).",
)
@click.option("--batch-size", type=opt.POSITIVE, default=10_000, help="Jobs per transaction.")
def prune(older_than: timedelta, statuses: tuple[str, ...], batch_size: int) -> None:
    """Delete finished jobs."""
    count = call(Queue.prune, older_than, list(statuses) or ["succeeded"], batch_size=batch_size)
    emit({"pruned": count}, f"pruned {counted(count, 'job')}")


@group("schedule")
def schedule() -> None:
    """Periodic jobs: cron schedules kept in the database, fired by every Worker's tick."""


def _one_cron(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """CRON as one argument: an unquoted expression reaches jobq split into its fields, each
    ``*`` already replaced by the shell with the names of files."""
    if len(value.split()) < 2 and not value.startswith("@"):
        raise click.BadParameter(
            f"{value!r} is not a cron expression: quote all five fields as one argument, "
            "e.g. '30 2 * * *' (unquoted, the shell splits it and expands each * to file names)",
            param_hint="CRON",
        )
    return value


@command(schedule, "set")
@click.argument("name")
@click.argument("cron", callback=_one_cron)
@click.argument("job_type", metavar="TYPE")
@click.argument("payload", metavar="[PAYLOAD_JSON]", required=False)
@click.option("--timezone", default="UTC", help="IANA zone of the cron times.")
@opt.new_job_options
@click.option(
    "--catch-up",
    type=click.Choice(["skip", "latest", "all"]),
    default="latest",
    help="Fires nobody ticked in time: none, the most recent, or each (1,000 at most).",
)
@click.option("--paused", is_flag=True, help="Create or keep it paused (fires nothing).")
def schedule_set(name: str, cron: str, job_type: str, payload: str | None, **job: Any) -> None:
    """Create or replace schedule NAME: a job of TYPE at each CRON time ('30 2 * * *', @daily)."""
    next_run_at = call(Queue.schedule, name, cron, job_type, parse_payload(payload), **job)
    click.echo(f"{name}: next fire {cell(next_run_at.astimezone(_UTC))}")


@command(schedule, "list", json=True)
def schedule_list() -> None:
    """List the schedules with their next fire, in their own time zone and in UTC, and the job
    their latest fire enqueued."""
    rows = call(Queue.schedules)
    shown = ["name", "cron", "timezone", "job_type", "payload", "queue", "priority"]
    shown += ["max_attempts", "catch_up", "paused", "next_run_local"]
    shown += ["last_fired_at", "last_job_id"]
    found = [{**fields(r, shown), "next_run_utc": r.next_run_at.astimezone(_UTC)} for r in rows]
    names = ["name", "cron", "timezone", "job_type", "catch_up", "paused", "next_run_local"]
    marked = [{**f, "paused": yes(f["paused"])} for f in found]
    cells = [[f[n] for n in [*names, "next_run_utc", "last_job_id"]] for f in marked]
    heads = [*names[:6], "next (local)", "next (UTC)", "last job"]
    emit(found, table(heads, cells, "no schedules"))


@command(schedule, "delete")
@click.argument("name")
def schedule_delete(name: str) -> None:
    """Delete schedule NAME (jobs it already enqueued stay)."""
    if not call(Queue.unschedule, name):
        fail(f"no schedule named {name!r}; nothing changed")
    click.echo(f"deleted {name}")


@command()
def tick() -> None:
    """Fire the due schedules now, for pg_cron or a system timer (Workers tick by themselves)."""
    fires = call(Queue.tick)
    for f in fires:
        click.echo(f"{f.schedule}  {cell(f.fire_at.astimezone(_UTC))}  {f.job_id}")
    click.echo(f"{counted(len(fires), 'fire')} enqueued")


@group("limit")
def limit() -> None:
    """Concurrency and rate limits per (limit group, limit key), enforced by every claim."""


@command(limit, "set")
@click.argument("group")
@click.option("--max-running", type=opt.POSITIVE, metavar="N", help="Running at once, per key.")
@click.option("--max-starts", type=opt.POSITIVE, metavar="N", help="Started per --per, per key.")
@opt.duration("--per", None, "The window of --max-starts")
@click.option(
    "--share",
    type=click.Choice(["fifo", "round-robin", "weighted"]),
    help="The order of the keys at equal priority: fifo (claim order, the default), "
    "round-robin (keys in turn) or weighted (in proportion to `jobq limit weight`).",
)
def limit_set(
    group: str,
    max_running: int | None,
    max_starts: int | None,
    per: timedelta | None,
    share: str | None,
) -> None:
    """Set the limits and share each key of GROUP has (none of them: remove them)."""
    if (max_starts is None) != (per is None):
        raise click.UsageError("--max-starts and --per go together (N jobs per DURATION)")
    if per is not None and not per:
        raise click.BadParameter("the window must be longer than 0 s", param_hint="--per")
    sql_share = None if share is None else share.replace("-", "_")
    call(Queue.set_limit, group, max_running=max_running, max_starts=max_starts, per=per,
         share=sql_share)
    parts = []
    if max_running is not None:
        parts.append(f"at most {max_running} running")
    if max_starts is not None and per is not None:
        parts.append(f"at most {max_starts} starts per {per.total_seconds():g} s")
    if share not in (None, "fifo"):
        parts.append(f"shared {share}")
    click.echo(f"{group}: {', '.join(parts)} per key" if parts else f"removed the limit of {group}")


@command(limit, "weight")
@click.argument("group")
@click.argument("key")
@click.argument("weight", type=click.FloatRange(min=0, min_open=True))
def limit_weight(group: str, key: str, weight: float) -> None:
    """Set the WEIGHT of KEY in GROUP: under --share weighted, keys with work start jobs in
    proportion to their weights (1 unless set)."""
    call(Queue.set_weight, group, key, weight)
    click.echo(f"{group}: {key} weighs {weight:g}")


def _per_seconds(row: Limit | LimitUsage) -> dict[str, Any]:
    """A limit's row as JSON shows it: its window in seconds."""
    found = {f.name: getattr(row, f.name) for f in dataclasses.fields(row) if f.name != "per"}
    return {**found, "per_seconds": None if row.per is None else row.per.total_seconds()}


def _of(used: int | None, most: int | None) -> object:
    """What a key uses of its limit: ``used/most``, or ``used`` alone without a limit."""
    return f"{used}/{most}" if most else used


@command(limit, "list", json=True)
def limit_list() -> None:
    """List the limits and what each key uses now (running, starts in the window, pending,
    weight)."""
    with settings().queue() as q:
        limits = q.limits()
        usage = q.limit_usage()
    as_json = {"limits": [*map(_per_seconds, limits)], "usage": [*map(_per_seconds, usage)]}
    text = columns(
        limits,
        ["limit_group", "max_running", "max_starts", "per", "share"],
        "no limits",
        per=lambda r: "" if r.per is None else f"{r.per.total_seconds():g} s",
    )
    if limits and usage:
        text += "\n\n" + columns(
            usage,
            ["limit_group", "limit_key", "running", "starts_in_window", "pending", "weight"],
            running=lambda u: _of(u.running, u.max_running),
            starts_in_window=lambda u: _of(u.starts_in_window, u.max_starts),
        )
    emit(as_json, text)


@command(limit, "delete")
@click.argument("group")
def limit_delete(group: str) -> None:
    """Remove the limits of GROUP: its waiting jobs are claimed at once."""
    with settings().queue() as q:
        if group not in {row.limit_group for row in q.limits()}:
            fail(f"no limit for group {group!r}; nothing changed")
        q.set_limit(group)
    click.echo(f"removed the limit of {group}")


def _filter(names: list[str] | None, recorded: bool) -> str:
    """A claim filter as the workers page shows it: the names, ``all``, or ``?`` unrecorded."""
    return ",".join(names) if names is not None else ("all" if recorded else "?")


@command(name="workers", json=True, examples="jobq workers --json")
def workers() -> None:
    """Each worker that claimed within the last day or holds a job: its filters, last claim,
    jobs held and how many are stale (lock expired), last heartbeat (monitor)."""
    names = ["worker_id", "job_types", "queues", "last_claim_at", "jobs_held", "stale_jobs",
             "last_heartbeat_at", "lock_expires_at"]
    listing(
        call(Queue.workers_summary), names, "no workers",
        job_types=lambda r: _filter(r["job_types"], r["first_claim_at"] is not None),
        queues=lambda r: _filter(r["queues"], r["first_claim_at"] is not None),
    )


@group(
    "queue",
    examples="""
        jobq queue pause mail --reason 'smtp relay down'
        jobq queue list --json
    """,
)
def queue() -> None:
    """Pause and resume queues: a paused queue's jobs wait, pending, until it is resumed."""


@command(queue, "pause", json=True)
@click.argument("name", metavar="QUEUE")
@click.option("--reason", help="Why (shown by `jobq queue list`).")
def pause(name: str, reason: str | None) -> None:
    """Stop the claims of QUEUE: its jobs stay pending (no attempt spent), running ones finish,
    enqueues still succeed (admin)."""
    paused = call(Queue.pause, name, reason)
    emit({"queue": name, "paused": paused}, f"paused {name}" if paused else f"{name} was paused")


@command(queue, "resume", json=True)
@click.argument("name", metavar="QUEUE")
def resume(name: str) -> None:
    """Let QUEUE be claimed again; idle workers wake at once (admin)."""
    resumed = call(Queue.resume, name)
    emit(
        {"queue": name, "resumed": resumed},
        f"resumed {name}" if resumed else f"{name} was not paused",
    )


@command(queue, "list", json=True)
def list_queues() -> None:
    """Each queue with live jobs or a pause: paused, since when and why, pending and processing
    jobs (admin)."""
    names = ["queue", "paused", "paused_at", "reason", "pending", "processing"]
    listing(call(Queue.queues), names, "no queues", paused=lambda r: yes(r["paused"]))


COUNTS = ["succeeded", "failed", "dead_letter", "cancelled", "failed_attempts"]


@command(json=True, examples="jobq throughput\njobq throughput --since 24h --bucket 1h --json")
@opt.duration("--since", "1h", "How far back")
@opt.duration("--bucket", "1m", "The length of one row")
def throughput(since: timedelta, bucket: timedelta) -> None:
    """Jobs finished (succeeded, failed, dead_letter, cancelled) and failed attempts per bucket
    of time, from the jobs kept in the database (monitor)."""
    rows = call(Queue.throughput, since, bucket)

    def text() -> str:
        cells = [[r["bucket_start"], *(r[n] for n in COUNTS)] for r in rows]
        cells.append(["total", *(sum(r[n] for r in rows) for n in COUNTS)])
        return table(["bucket_start", *COUNTS], cells)

    emit(rows, text)


@command(json=True, examples="jobq names\njobq names --json")
def names() -> None:
    """The queue names and job types that exist: of the jobs available or running, of every job
    with an idempotency key, of metrics, schedules, workers and pauses (monitor)."""
    found = call(Queue.names)
    emit(found, lambda: "\n".join(f"{kind}  {name}" for kind, all_ in found.items()
                                   for name in all_))


COMMANDS = [
    stats, throughput, names, workers, metrics_command, configure, prune, queue, schedule, tick,
    limit,
]
