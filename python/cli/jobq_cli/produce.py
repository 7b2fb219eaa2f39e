"""Adding jobs: one from the command line, or many from newline-delimited JSON."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import click

from pgq_client import _ops

from . import parsing as opt
from .base import command, settings
from .output import counted, emit
from .parsing import kind, parse_payload, parse_run_at

_LINE_DEFAULTS = ("priority", "max_attempts", "queue", "run_at")
_UNSET = click.core.ParameterSource.DEFAULT


@command(
    json=True,
    examples="""
        jobq enqueue send_email '{"to": "a@example.com"}' --idempotency-key welcome:42
        jobq enqueue --from jobs.ndjson
        jobq enqueue report '{}' --after 01a24ef3-3a56-7cb1-8630-82070d3a08c7
    """,
)
@click.argument("job_type", metavar="[TYPE]", required=False)
@click.argument("payload", metavar="[PAYLOAD_JSON]", required=False)
@click.option(
    "--from",
    "from_file",
    metavar="FILE",
    help="Bulk load: one job per line (newline-delimited JSON objects with the keys of "
    "enqueue_many), - for stdin. TYPE and the options below are the defaults of each line.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 100_000),
    default=5000,
    help="With --from: jobs per statement and transaction.",
)
@click.option("--idempotency-key", metavar="K", help="Dedupe key: the same key, the same job.")
@click.option(
    "--run-at",
    metavar="T",
    callback=lambda _c, _p, value: parse_run_at(value),
    help="Not before this time: ISO 8601 with a UTC offset or Z (2030-01-31T09:00:00+01:00).",
)
@opt.new_job_options
@click.option("--limit-group", metavar="G", help="Count against the limits of group G.")
@click.option("--limit-key", metavar="K", help="Within --limit-group, a key with its own limits.")
@click.option(
    "--after",
    "depends_on",
    metavar="ID",
    multiple=True,
    help="Wait for job ID to succeed first (repeatable): the job is enqueued waiting.",
)
@click.option(
    "--on-dependency-failure",
    type=click.Choice(["cancel", "run", "wait"]),
    default="cancel",
    show_default=True,
    help="With --after, when a dependency fails: cancel this job, run it anyway once all "
    "have finished, or wait for the dependency to be requeued and succeed.",
)
def enqueue(
    job_type: str | None,
    payload: str | None,
    from_file: str | None,
    batch_size: int,
    idempotency_key: str | None,
    **options: Any,
) -> int:
    """Add a job of TYPE (PAYLOAD_JSON: JSON text, - for stdin, @FILE) or, with --from, many."""
    options["depends_on"] = list(options["depends_on"]) or None
    if from_file is not None:
        if options["depends_on"] is not None:
            raise click.UsageError(
                "--after applies to one job; lines of --from take depends_on and after keys"
            )
        if payload is not None or idempotency_key is not None:
            raise click.UsageError(
                "--from reads payloads and idempotency keys from its lines: "
                "PAYLOAD_JSON and --idempotency-key do not apply"
            )
        # The options given on the command line are the defaults of lines that leave them out.
        source = click.get_current_context().get_parameter_source
        defaults = {k: v for k, v in options.items() if k in _LINE_DEFAULTS and source(k) != _UNSET}
        if job_type is not None:
            defaults["job_type"] = job_type
        return _bulk_enqueue(from_file, batch_size, defaults)
    if job_type is None:
        raise click.UsageError("Missing argument 'TYPE' (or give --from FILE)")
    data = parse_payload(payload)
    with settings().queue() as q:
        job_id = q.enqueue(job_type, data, idempotency_key=idempotency_key, **options)
    emit({"id": job_id}, str(job_id))
    return 0


def _job(raw: bytes) -> dict[str, Any] | str:
    """The job on one line of the stream, or what is wrong with the line."""
    try:
        job = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
        return f"not valid JSON: {exc}"
    if not isinstance(job, dict):
        return f"must be a JSON object, got {kind(job)}"
    if isinstance(job.get("run_at"), str):
        try:
            job["run_at"] = parse_run_at(job["run_at"])
        except click.BadParameter as exc:
            return f"run_at {exc.message}"
    return job


_Lines = list[tuple[int, str]]  # line numbers, each with what is wrong with it


def _jobs(
    stream: Iterable[bytes], defaults: Mapping[str, Any], bad: _Lines, numbers: array[int]
) -> Iterator[dict[str, Any]]:
    """The jobs of an NDJSON stream, the line number of each put in ``numbers``; a bad line
    goes to ``bad``."""
    for number, raw in enumerate(stream, 1):
        job = _job(raw) if raw.strip() else None
        if isinstance(job, str):
            bad.append((number, job))
        elif job is not None:
            numbers.append(number)
            yield {**defaults, **job}


# How an error names the job at fault within the batch: said by its line instead.
_ELEMENT = re.compile(r"element \d+ \(counting from 1\): |jobs\[\d+\]\.")
_JOB = re.compile(r"jobs\[\d+\]")


@contextmanager
def _progress(stream: Any, source: str) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr while it is a terminal (bytes of a file, else a job count);
    nothing otherwise, so that logs and pipes stay clean."""
    if not sys.stderr.isatty():
        yield lambda jobs: None
    elif source != "-":
        size = os.fstat(stream.fileno()).st_size
        with click.progressbar(
            length=size, label="enqueueing", file=sys.stderr, show_pos=False
        ) as bar:
            yield lambda jobs: bar.update(stream.tell() - bar.pos)
    else:
        try:
            yield lambda jobs: click.echo(f"\renqueued {jobs:,} jobs", file=sys.stderr, nl=False)
        finally:
            click.echo("", file=sys.stderr)


def _open(source: str) -> Any:
    """The stream of ``--from``. Standard input is opened as a file object of its own: at exit
    after Ctrl-C, the reading thread may still be blocked in a read, and Python could not close
    the sys.stdin it holds the lock of."""
    if source != "-":
        try:
            return open(source, "rb")  # closed by the caller, after the load
        except OSError as exc:
            reason = f"cannot read {source!r}: {exc.strerror or exc}"
            raise click.BadParameter(reason, param_hint="--from") from None
    try:
        return open(sys.stdin.fileno(), "rb", closefd=False)
    except (AttributeError, OSError, ValueError):  # a stand-in without a descriptor (tests)
        return sys.stdin.buffer


def _bulk_enqueue(source: str, batch_size: int, defaults: Mapping[str, Any]) -> int:
    """Queue.enqueue_iter's operation over the lines, each refused job skipped alone; the
    summary says jobs by their line numbers."""
    stream = _open(source)
    bad_lines: _Lines = []
    numbers = array("q")  # the line of each job, by its index in the load
    settled = 0  # batches read and committed (or reported as not enqueued)
    started = time.monotonic()
    try:
        with _progress(stream, source) as bar, settings().queue() as q:

            def progress(jobs: int) -> None:
                nonlocal settled
                settled += 1
                bar(jobs)

            lines = _jobs(stream, defaults, bad_lines, numbers)
            load = _ops.enqueue_iter(q._sql, lines, batch_size, True, progress, True, alone=True)
            summary = q._drive(load)
    except BaseException as exc:  # a load that stopped (Ctrl-C, a lost connection)
        done_through = numbers[min(settled * batch_size, len(numbers)) - 1] if settled else 0
        if done_through or isinstance(exc, KeyboardInterrupt):
            again = done_through + 1
            how = f" (tail -n +{again} {shlex.quote(source)} | jobq enqueue --from - ...)"
            click.echo(
                f"jobq: stopped after line {done_through:,}: every line up to it is committed "
                f"(or reported as not enqueued), none after it; resume from line {again:,}"
                f"{'' if source == '-' else how}",
                err=True,
            )
        raise
    finally:
        if source != "-":
            stream.close()
    seconds = time.monotonic() - started
    refused = [
        (numbers[r.first], _JOB.sub("the job", _ELEMENT.sub("", str(r.error))))
        for r in summary.refused
    ]
    bad = sorted([*bad_lines, *refused])
    if not settings().as_json:
        for number, error in bad:
            click.echo(f"line {number}: {error}; skipped", err=True)
    jobs, batches, existing = summary.jobs, summary.batches, summary.existing
    added = jobs - existing
    rate = jobs / seconds if seconds > 0 else 0.0
    text = f"enqueued {counted(jobs, 'job')} in {counted(batches, 'batch', 'batches')}"
    text += f", {seconds:.1f} s ({rate:,.0f} jobs/s): {added:,} added"
    if existing:
        text += (
            f", {existing:,} already there (a job of the same job type and idempotency "
            "key, from before or from an earlier line, is left as it is, in its own queue)"
        )
    text += f"; {counted(len(bad), 'line')} not enqueued" if bad else ""
    result: dict[str, Any] = {"jobs": jobs, "added": added, "existing": existing}
    result |= {"batches": batches, "seconds": round(seconds, 3)}
    result["bad_lines"] = [{"line": n, "error": e} for n, e in bad_lines]
    result["refused"] = [
        {"lines": [n, n], "line": n, "jobs": 1, "error": e} for n, e in sorted(refused)
    ]
    emit(result, text)
    return 1 if bad else 0


COMMANDS = [enqueue]
