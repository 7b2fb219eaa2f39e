"""Adding jobs: one from the command line, or many from newline-delimited JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import click

from . import options as opt
from .base import command, settings
from .output import emit
from .parsing import kind, parse_payload, parse_run_at

_LINE_DEFAULTS = ("priority", "max_attempts", "queue", "run_at")
_UNSET = click.core.ParameterSource.DEFAULT


@command(
    json=True,
    examples="""
        jobq enqueue send_email '{"to": "a@example.com"}' --idempotency-key welcome:42
        jobq enqueue report --run-at 2030-01-31T09:00:00+01:00 --priority 5
        jobq enqueue import - < big-payload.json
        jobq enqueue import @big-payload.json --queue bulk
        jobq enqueue sync '{"account": 7}' --limit-group per-customer --limit-key acme
        jobq enqueue --from jobs.ndjson
        jobq enqueue reindex --from - --queue bulk --batch-size 10000 < jobs.ndjson
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
def enqueue(
    job_type: str | None,
    payload: str | None,
    from_file: str | None,
    batch_size: int,
    idempotency_key: str | None,
    **options: Any,
) -> int:
    """Add a job of TYPE and print its id; or, with --from, load many jobs.

    PAYLOAD_JSON is a JSON object: the text itself, - to read it from stdin, or @FILE to read
    it from a file. --from loads in batches, each all or nothing; a bad line or a refused batch
    is reported and skipped, and the exit status is then 1.
    """
    if from_file is not None:
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


class _Lines:
    """The jobs of an NDJSON stream, read lazily: each line's number is kept for the jobs
    that are enqueued (to name the line of a refused job), bad lines are collected."""

    def __init__(self, stream: Iterable[bytes], defaults: Mapping[str, Any]) -> None:
        self._stream = stream
        self._defaults = defaults
        self.line_of: list[int] = []  # line number of each job, by its index
        self.bad: list[tuple[int, str]] = []
        self.bytes_read = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for number, raw in enumerate(self._stream, 1):
            self.bytes_read += len(raw)
            job = _job(raw) if raw.strip() else None
            if isinstance(job, str):
                self.bad.append((number, job))
            elif job is not None:
                self.line_of.append(number)
                yield {**self._defaults, **job}


@contextmanager
def _progress(lines: _Lines, total_bytes: int | None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr while it is a terminal (bytes of a file, else a job count);
    nothing otherwise, so that logs and pipes stay clean."""
    if not sys.stderr.isatty():
        yield lambda jobs: None
    elif total_bytes:
        bar = click.progressbar(
            length=total_bytes, label="enqueueing", file=sys.stderr, show_pos=False
        )
        with bar:
            yield lambda jobs: bar.update(lines.bytes_read - bar.pos)
    else:
        try:
            yield lambda jobs: click.echo(f"\renqueued {jobs:,} jobs", file=sys.stderr, nl=False)
        finally:
            click.echo("", file=sys.stderr)


def _bulk_enqueue(source: str, batch_size: int, defaults: Mapping[str, Any]) -> int:
    stream: Any = sys.stdin.buffer
    total = None
    if source != "-":
        try:
            stream = open(source, "rb")  # noqa: SIM115 - closed below, after the load
        except OSError as exc:
            reason = f"cannot read {source!r}: {exc.strerror or exc}"
            raise click.BadParameter(reason, param_hint="--from") from None
        total = os.fstat(stream.fileno()).st_size
    lines = _Lines(stream, defaults)
    started = time.monotonic()
    try:
        with _progress(lines, total) as progress, settings().queue() as q:
            summary = q.enqueue_iter(
                lines, batch_size=batch_size, skip_refused=True, progress=progress
            )
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    seconds = time.monotonic() - started
    # Each refused batch by its lines: the first, the last, the one at fault (when the error
    # names a job).
    refused: list[dict[str, Any]] = [
        {
            "lines": [lines.line_of[r.first], lines.line_of[r.first + r.count - 1]],
            "line": None if r.job is None else lines.line_of[r.job],
            "jobs": r.count,
            "error": str(r.error),
        }
        for r in summary.refused
    ]
    if not settings().as_json:
        for number, error in lines.bad:
            click.echo(f"line {number}: {error}; skipped", err=True)
        for r in refused:
            at = "" if r["line"] is None else f"line {r['line']}: "
            first, last = r["lines"]
            where = f"lines {first} to {last} ({r['jobs']} jobs)"
            click.echo(f"{at}{r['error']}; {where} were not enqueued", err=True)
    rate = summary.jobs / seconds if seconds > 0 else 0.0
    skipped = len(lines.bad) + sum(r.count for r in summary.refused)
    done = f"enqueued {summary.jobs:,} jobs in {summary.batches:,} batches"
    text = f"{done}, {seconds:.1f} s ({rate:,.0f} jobs/s)"
    bad = [{"line": n, "error": e} for n, e in lines.bad]
    counts = {"jobs": summary.jobs, "batches": summary.batches, "seconds": round(seconds, 3)}
    text += f"; {skipped:,} lines not enqueued" if skipped else ""
    emit({**counts, "bad_lines": bad, "refused": refused}, text)
    return 1 if lines.bad or refused else 0


COMMANDS = [enqueue]
