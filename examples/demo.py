"""A short tour of jobq on a real database: ``python examples/demo.py`` (``make demo``).

On ``JOBQ_DSN`` (or ``DATABASE_URL``), else the embedded PostgreSQL, in a schema of its own,
``jobq_demo``, dropped and migrated again on every run, so that a rerun tells the same story:
thumbnails, OCR and e-mails, some failing for a moment and succeeding on retry, one corrupt
image (``PermanentError``), OCR results kept, and one e-mail whose relay is down until its
attempts are used up (``dead_letter``), then requeued and delivered. docs/embedded.md.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from pgq_client import Job, PermanentError, Queue, Worker, connect_kwargs
from pgq_client._conn import resolve_dsn
from pgq_client.errors import JobqError, error_summary
from pgq_client.installer.runner import migrate
from pgq_client.models import STATUS_IS_FINISHED, STATUSES

__all__ = ["main", "run_demo"]

SCHEMA = "jobq_demo"
QUEUE = "demo"
BACKOFF = timedelta(milliseconds=500)  # a retry waits attempts x BACKOFF
QUIET_TIMEOUT = 30.0  # how long the worker may take to drain the queue
Out = Callable[[str], None]

# (job type, label, payload, max_attempts). A handler's failures depend only on the payload and
# the attempt number, so every run fails and recovers alike.
_JOBS: list[tuple[str, str, dict[str, Any], int]] = [
    ("thumbnail", "cat.png", {"image": "cat.png"}, 5),
    ("thumbnail", "beach-2024.jpg", {"image": "beach-2024.jpg"}, 5),
    ("thumbnail", "scan-corrupt.gif", {"image": "scan-corrupt.gif", "corrupt": True}, 5),
    ("ocr", "invoice-1042.pdf", {"document": "invoice-1042.pdf"}, 5),
    ("ocr", "contract-scan.pdf", {"document": "contract-scan.pdf", "flaky_attempts": 2}, 5),
    ("send_email", "welcome -> alice@example.com", {"to": "alice@example.com"}, 5),
    ("send_email", "receipt -> bob@example.com",
     {"to": "bob@example.com", "greylisted_attempts": 1}, 5),
    ("send_email", "password-reset -> carol@example.com",
     {"to": "carol@example.com", "relay": "mail-eu.internal"}, 3),
]


class SmtpTemporaryError(Exception):
    """A 4xx SMTP reply: try again later."""


class _World:
    """The outside services the handlers talk to (simulated, deterministic)."""

    def __init__(self) -> None:
        self.relay_up = False
        self.sent: list[str] = []

    def handlers(self) -> dict[str, Callable[[Job], object]]:
        return {"thumbnail": self.thumbnail, "ocr": self.ocr, "send_email": self.send_email}

    def thumbnail(self, job: Job) -> None:
        if job.payload.get("corrupt"):
            raise PermanentError(
                f"{job.payload['image']} is not an image (bad magic bytes); retrying won't help"
            )
        time.sleep(0.05)  # "resize"

    def ocr(self, job: Job) -> dict[str, int]:
        document = str(job.payload["document"])
        if job.attempts <= int(job.payload.get("flaky_attempts", 0)):
            raise TimeoutError(f"OCR backend timed out on {document} (HTTP 504)")
        time.sleep(0.1)  # "recognise"
        return {"pages": len(document) % 5 + 1, "words": 40 * len(document)}  # the result

    def send_email(self, job: Job) -> None:
        relay = str(job.payload.get("relay", "mail.internal"))
        if relay == "mail-eu.internal" and not self.relay_up:
            raise ConnectionRefusedError(f"SMTP relay {relay}:25 refused the connection")
        if job.attempts <= int(job.payload.get("greylisted_attempts", 0)):
            raise SmtpTemporaryError("421 4.7.0 greylisted, try again later")
        self.sent.append(str(job.payload["to"]))


def jobq_command() -> str:
    """How the user's shell runs this installation's ``jobq``, so that hints work as printed
    (``make demo`` runs in .venv, which the user's shell has not necessarily activated)."""
    script = Path(sys.executable).parent / "jobq"
    if not script.is_file():
        return f"{shlex.quote(sys.executable)} -m pgq_client"
    on_path = shutil.which("jobq")
    if on_path is not None and os.path.samefile(on_path, script):
        return "jobq"
    # Relative only where the shell is where this runs: `make -C DIR` moves this, not the shell.
    with contextlib.suppress(OSError, ValueError):
        if os.path.samefile(os.environ.get("PWD", ""), Path.cwd()):
            return shlex.quote(str(script.relative_to(Path.cwd())))
    return shlex.quote(str(script))


def _describe_database(dsn: str, source: str) -> str:
    if source == "embedded":
        from pgq_client.embedded import describe_embedded

        return describe_embedded()
    params = conninfo_to_dict(dsn)
    where = f"{params.get('host') or 'localhost'}:{params.get('port') or '5432'}"
    return f"PostgreSQL {params.get('dbname') or ''} on {where} (from {source})"


def _drain(dsn: str, q: Queue, world: _World) -> None:
    """Run burst workers until no demo job is pending or processing, sleeping between runs
    until the next retry is due."""
    deadline = time.monotonic() + QUIET_TIMEOUT
    for run in itertools.count(1):
        Worker(dsn, handlers=world.handlers(), concurrency=4, queues=[QUEUE],
               retry_backoff=BACKOFF, poll_interval=0.2, shutdown_grace=5.0, schema=SCHEMA,
               worker_id=f"demo-worker-{run}").run(burst=True)
        waiting = [r for r in q.stats() if r.queue == QUEUE and not STATUS_IS_FINISHED[r.status]]
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise JobqError(
                f"the demo queue is not quiet after {QUIET_TIMEOUT:.0f}s: "
                + ", ".join(f"{r.jobs} {r.job_type} {r.status}" for r in waiting)
            )
        due = [r.oldest_available_at for r in waiting if r.oldest_available_at is not None]
        pause = (min(due) - datetime.now(timezone.utc)).total_seconds() if due else 0.1
        time.sleep(min(max(pause, 0.05), 1.0))


def _jobs(q: Queue) -> dict[uuid.UUID, Job]:
    return {job.id: job for job in q.list_jobs(queue=QUEUE, limit=1000)}


def _error_line(error: object) -> str:
    return error_summary(str(error or "")) or "(no message)"


def _print_job(job: Job, label: str, out: Out) -> None:
    head = f"   {job.job_type:<10}  {label:<40}"
    if job.status == "succeeded":
        tries = "first try" if job.attempts == 1 else f"attempt {job.attempts}"
        result = "" if job.result is None else f", result {json.dumps(job.result)}"
        out(f"{head} succeeded on {tries}{result}")
    elif job.status == "failed":
        out(f"{head} FAILED, not retried (PermanentError)")
    else:
        out(f"{head} DEAD LETTER after {job.attempts}/{job.max_attempts} attempts")
    for entry in job.errors:
        attempt = int(entry.get("attempt", 0))
        retried = job.status != "failed" and attempt < job.max_attempts
        outcome = f"  -> retried after {attempt * BACKOFF.total_seconds():.1f}s" if retried else ""
        out(f"   {'':<10}    attempt {attempt}: {_error_line(entry.get('error'))}{outcome}")


def _print_stats(q: Queue, out: Out) -> None:
    rows = sorted((r for r in q.stats() if r.queue == QUEUE),
                  key=lambda r: (r.job_type, STATUSES.index(r.status)))
    for row in rows:
        out(f"   {row.job_type:<10}  {row.status:<12}  {row.jobs:>4}")


def run_demo(out: Out = print) -> None:
    """Run the whole story, printing it through ``out``."""
    started = time.monotonic()
    jobq = jobq_command()
    dsn, source = resolve_dsn(None, embedded=True)
    out(f"using {_describe_database(dsn, source)}")
    with psycopg.connect(dsn, autocommit=True, **connect_kwargs(dsn)) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(SCHEMA)))
    applied = migrate(dsn, schema=SCHEMA)
    out(f"schema {SCHEMA}: dropped and recreated by the migrations ({len(applied)} files)")
    world = _World()

    with Queue(dsn, schema=SCHEMA) as q:
        out(f"\n1. The app enqueues {len(_JOBS)} jobs on queue {QUEUE!r}")
        labels: dict[uuid.UUID, str] = {}
        for job_type, label, payload, max_attempts in _JOBS:
            job_id = q.enqueue(job_type, payload, idempotency_key=f"demo:{job_type}:{label}",
                               max_attempts=max_attempts, queue=QUEUE)
            labels[job_id] = label
            out(f"   {job_type:<10}  {label}")
        order = list(labels)
        again = q.enqueue("send_email", _JOBS[5][2], queue=QUEUE,
                          idempotency_key=f"demo:send_email:{_JOBS[5][1]}")
        out("   (the welcome e-mail enqueued a second time with the same idempotency key: "
            f"{'same job, no duplicate' if again == order[5] else 'A DUPLICATE?!'})")

        out("\n2. A worker runs them (4 threads; failures are retried after attempts x "
            f"{BACKOFF.total_seconds():.1f}s; burst runs until the queue is quiet)")
        _drain(dsn, q, world)
        jobs = _jobs(q)
        for job_id in order:
            _print_job(jobs[job_id], labels[job_id], out)

        out("\n3. jobq_stats() for the queue")
        _print_stats(q, out)

        dead = q.dead_letters(queue=QUEUE, statuses=("dead_letter",))
        if len(dead) != 1:
            raise JobqError(f"the demo expected one dead letter, found {len(dead)}")
        target = dead[0]
        out("\n4. The dead letter, with its error history")
        out(f"   {target.id}  {target.job_type} {labels.get(target.id, '')}, "
            f"attempts {target.attempts} of {target.max_attempts}")
        out("   errors (one entry per failed attempt, kept across requeues):")
        for entry in target.errors:
            out(f"     attempt {entry.get('attempt')}: {_error_line(entry.get('error'))}")

        out("\n5. Requeue it once the cause is fixed - any of:")
        out(f"     {jobq} dead-letter requeue {target.id} --schema {SCHEMA}")
        out(f"     psql> SELECT {SCHEMA}.jobq_requeue_dead_letter(job_id => '{target.id}');")
        out(f"     psql> SELECT {SCHEMA}.jobq_requeue_dead_letters(job_type => 'send_email');")
        out(f"     python> Queue(schema={SCHEMA!r}).requeue_dead_letter(job_id)")
        out("   The mail relay is repaired; requeueing now (jobq_requeue_dead_letter) ...")
        world.relay_up = True
        requeued = q.requeue_dead_letter(target.id)
        after = _jobs(q)[target.id]
        out(f"   requeued: {requeued}; now {after.status}, attempts {after.attempts}, "
            f"{len(after.errors)} earlier errors kept")
        _drain(dsn, q, world)
        final = _jobs(q)[target.id]
        out(f"   after another worker run: {final.status} on attempt {final.attempts} "
            f"(e-mail delivered to {world.sent[-1]})")

        out("\n6. Final counts")
        _print_stats(q, out)

    out(f"\nDone in {time.monotonic() - started:.1f}s. Look around:")
    out(f"   {jobq} stats --schema {SCHEMA}")
    out(f"   {jobq} dead-letter list --schema {SCHEMA}")
    out(f"   {jobq} web --schema {SCHEMA}    # the dashboard, at http://127.0.0.1:8080/")
    if source == "embedded":
        table = f"{SCHEMA}.jobq_all_jobs"
        out(f"   {jobq} embedded psql -c 'SELECT id, job_type, status, attempts FROM {table}'")
        out(f"   {jobq} embedded psql    # then: SET search_path = {SCHEMA}; TABLE jobq_all_jobs;")
        out(f"   {jobq} embedded stop    # stops the embedded server; jobq starts it when needed")
    out(f"   (each run of the demo drops and recreates schema {SCHEMA})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python examples/demo.py",
        description="Run a short, self-contained jobq demo (schema jobq_demo).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show the worker's logs")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        # The demo narrates the failures itself; the worker's warnings would repeat them.
        logging.getLogger("pgq_client.worker").setLevel(logging.ERROR)
    try:
        run_demo()
    except (JobqError, psycopg.Error) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
