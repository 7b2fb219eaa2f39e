"""A short tour of jobq on a real database: ``python -m pgq_client.demo`` (``make demo``).

It uses ``JOBQ_DSN`` (or ``DATABASE_URL``) when set, else the embedded PostgreSQL, and works in
a schema of its own, ``jobq_demo``, which it drops and recreates with the migrations on every
run: a rerun starts clean, tells the same story, and never touches the jobs of the ``public``
installation. Everything else goes through the public API: :class:`~pgq_client.Queue`,
:class:`~pgq_client.Worker` and the ``jobq_*`` SQL functions.

The story: an app enqueues thumbnails, OCR and e-mails. Some fail for a moment and succeed on
retry, one image is corrupt (``PermanentError``: failed at once), and one e-mail goes through a
mail relay that is down, so it uses up its attempts and lands in ``dead_letter``. The relay is
then "repaired" and the dead letter requeued, and it goes through. The OCR handler returns what
it read, kept as the job's result; a long report is cancelled while it runs (its handler sees
``job.cancel_requested()`` and stops), another before it starts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shlex
import shutil
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from pgq_client import Job, JobFailed, PermanentError, Queue, Worker, _sql
from pgq_client.errors import JobqError, error_summary
from pgq_client.installer.runner import migrate
from pgq_client.models import STATUSES
from pgq_client.queue import resolve_dsn

__all__ = ["main", "run_demo"]


SCHEMA = "jobq_demo"
QUEUE = "demo"
#: jobq waits attempts x backoff before a retry: 0.5 s, then 1 s, ... (production: seconds).
BACKOFF = timedelta(milliseconds=500)
#: How long the worker may take to drain the queue before the demo gives up.
QUIET_TIMEOUT = 30.0


class SmtpTemporaryError(Exception):
    """A 4xx SMTP reply: try again later."""


#: How long the report handler runs when nobody cancels it.
REPORT_SECONDS = 20.0


class _World:
    """The outside services the handlers talk to (simulated, deterministic)."""

    def __init__(self) -> None:
        self.mail_relay_up = False
        self._lock = threading.Lock()
        self.sent: list[str] = []
        self.report_started = threading.Event()

    def deliver(self, to: str) -> None:
        with self._lock:
            self.sent.append(to)


def _handlers(world: _World) -> dict[str, Callable[[Job], object]]:
    """Handlers whose failures depend only on the job (its payload and attempt number), so
    every run of the demo fails and recovers the same way."""

    def thumbnail(job: Job) -> None:
        image = str(job.payload["image"])
        if job.payload.get("corrupt"):
            raise PermanentError(f"{image} is not an image (bad magic bytes); retrying won't help")
        time.sleep(0.05)  # "resize"

    def ocr(job: Job) -> dict[str, int]:
        document = str(job.payload["document"])
        if job.attempts <= int(job.payload.get("flaky_attempts", 0)):
            raise TimeoutError(f"OCR backend timed out on {document} (HTTP 504)")
        time.sleep(0.1)  # "recognise"
        return {"pages": len(document) % 5 + 1, "words": 40 * len(document)}  # the result

    def report(job: Job) -> str:
        """A long job that checks, between its parts, whether it was asked to stop."""
        world.report_started.set()
        deadline = time.monotonic() + REPORT_SECONDS
        while time.monotonic() < deadline:
            if job.cancel_requested():
                raise RuntimeError("report stopped: a cancel was requested")
            time.sleep(0.01)  # "render a part"
        return "report done"

    def send_email(job: Job) -> None:
        relay = str(job.payload.get("relay", "mail.internal"))
        if relay == "mail-eu.internal" and not world.mail_relay_up:
            raise ConnectionRefusedError(f"SMTP relay {relay}:25 refused the connection")
        if job.attempts <= int(job.payload.get("greylisted_attempts", 0)):
            raise SmtpTemporaryError("421 4.7.0 greylisted, try again later")
        world.deliver(str(job.payload["to"]))

    return {"thumbnail": thumbnail, "ocr": ocr, "send_email": send_email, "report": report}


# The jobs the "app" enqueues: (job type, payload, max_attempts).
_JOBS: list[tuple[str, dict[str, Any], int]] = [
    ("thumbnail", {"image": "cat.png"}, 5),
    ("thumbnail", {"image": "beach-2024.jpg"}, 5),
    ("thumbnail", {"image": "scan-corrupt.gif", "corrupt": True}, 5),
    ("ocr", {"document": "invoice-1042.pdf"}, 5),
    ("ocr", {"document": "contract-scan.pdf", "flaky_attempts": 2}, 5),
    ("send_email", {"to": "alice@example.com", "template": "welcome"}, 5),
    ("send_email", {"to": "bob@example.com", "template": "receipt", "greylisted_attempts": 1}, 5),
    (
        "send_email",
        {"to": "carol@example.com", "template": "password-reset", "relay": "mail-eu.internal"},
        3,
    ),
]


def _label(job_type: str, payload: dict[str, Any]) -> str:
    if job_type == "thumbnail":
        return str(payload["image"])
    if job_type == "ocr":
        return str(payload["document"])
    return f"{payload.get('template')} -> {payload.get('to')}"


def _describe_database(dsn: str, source: str) -> str:
    if source == "embedded":
        from pgq_client.embedded import describe_embedded

        return describe_embedded()
    params = conninfo_to_dict(dsn)
    host = params.get("host") or "localhost"
    port = params.get("port") or "5432"
    return f"PostgreSQL {params.get('dbname') or ''} on {host}:{port} (from {source})"


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


def _reset_schema(dsn: str) -> list[str]:
    """Drop the demo's own schema and install jobq into it afresh."""
    with psycopg.connect(dsn, autocommit=True, **_sql.connect_kwargs(dsn)) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(SCHEMA)))
    return migrate(dsn, schema=SCHEMA)


def _all_jobs(q: Queue) -> list[Job]:
    """Every job of the demo queue, via the public jobq_list_jobs function."""
    return q.dead_letters(queue=QUEUE, statuses=STATUSES, limit=1000)


def _drain(dsn: str, q: Queue, handlers: dict[str, Callable[[Job], object]]) -> int:
    """Run burst workers until no demo job is pending or processing; returns how many runs.

    A burst run returns as soon as no job is available *now*; retries wait out their backoff,
    so between runs we sleep until the next one is due (from ``jobq_stats``).
    """
    deadline = time.monotonic() + QUIET_TIMEOUT
    runs = 0
    while True:
        worker = Worker(
            dsn,
            handlers=handlers,
            concurrency=4,
            queues=[QUEUE],
            retry_backoff=BACKOFF,
            poll_interval=0.2,
            shutdown_grace=5.0,
            schema=SCHEMA,
            worker_id=f"demo-worker-{runs + 1}",
        )
        worker.run(burst=True)
        runs += 1
        waiting = [
            row
            for row in q.stats()
            if row.queue == QUEUE and row.status in ("pending", "processing")
        ]
        if not waiting:
            return runs
        if time.monotonic() > deadline:
            raise JobqError(
                f"the demo queue is not quiet after {QUIET_TIMEOUT:.0f}s: "
                + ", ".join(f"{r.jobs} {r.job_type} {r.status}" for r in waiting)
            )
        due = [r.oldest_available_at for r in waiting if r.oldest_available_at is not None]
        pause = 0.1
        if due:
            pause = (min(due) - datetime.now(timezone.utc)).total_seconds()
        time.sleep(min(max(pause, 0.05), 1.0))


def _error_line(error: object) -> str:
    """The exception line of a recorded error (errors.error_summary)."""
    return error_summary(str(error or "")) or "(no message)"


def _print_job(job: Job, label: str, out: Callable[[str], None]) -> None:
    head = f"   {job.job_type:<10}  {label:<40}"
    if job.status == "succeeded":
        tries = "first try" if job.attempts == 1 else f"attempt {job.attempts}"
        result = "" if job.result is None else f", result {json.dumps(job.result)}"
        out(f"{head} succeeded on {tries}{result}")
    elif job.status == "failed":
        out(f"{head} FAILED, not retried (PermanentError)")
    elif job.status == "dead_letter":
        out(f"{head} DEAD LETTER after {job.attempts}/{job.max_attempts} attempts")
    else:
        out(f"{head} {job.status}")
    for entry in job.errors:
        attempt = int(entry.get("attempt", 0))
        outcome = ""
        if job.status != "failed" and attempt < job.max_attempts:
            outcome = f"  -> retried after {attempt * BACKOFF.total_seconds():.1f}s"
        out(f"   {'':<10}    attempt {attempt}: {_error_line(entry.get('error'))}{outcome}")


def _print_stats(q: Queue, out: Callable[[str], None]) -> None:
    rows = [r for r in q.stats() if r.queue == QUEUE]
    by_status: Counter[str] = Counter()
    for row in rows:
        by_status[row.status] += row.jobs
    out("   status        jobs")
    for status in STATUSES:
        if by_status[status]:
            out(f"   {status:<12}  {by_status[status]:>4}")
    out(
        "   by type: "
        + "; ".join(
            f"{row.job_type} {row.status} {row.jobs}"
            for row in sorted(rows, key=lambda r: (r.job_type, STATUSES.index(r.status)))
        )
    )


def _cancel_a_running_job(
    dsn: str,
    q: Queue,
    handlers: dict[str, Callable[[Job], object]],
    world: _World,
    jobq: str,
    out: Callable[[str], None],
) -> None:
    """A long report is cancelled while it runs, another before it starts."""
    worker = Worker(
        dsn,
        handlers=handlers,
        concurrency=2,
        queues=[QUEUE],
        poll_interval=0.2,
        shutdown_grace=5.0,
        schema=SCHEMA,
        worker_id="demo-worker-cancel",
    )
    thread = threading.Thread(target=worker.run, name="demo-worker", daemon=True)
    running = q.enqueue("report", {"month": "2024-05"}, queue=QUEUE)
    later = q.enqueue("report", {"month": "2024-06"}, queue=QUEUE,
                      run_at=datetime.now(timezone.utc) + timedelta(days=1))
    thread.start()
    try:
        if not world.report_started.wait(QUIET_TIMEOUT):
            raise JobqError("the demo's report job did not start")
        out(f"   a report runs (a long job); the user cancels it: Queue.cancel -> "
            f"{q.cancel([running], reason='not needed any more')[running]}")
        statuses = q.wait([running], timeout=QUIET_TIMEOUT)
        out(f"   its handler saw job.cancel_requested() and stopped; Queue.wait -> "
            f"{statuses[running].status}")
        out(f"   a report due tomorrow, cancelled before it starts: Queue.cancel -> "
            f"{q.cancel([later])[later]}")
    finally:
        worker.stop()
        thread.join(QUIET_TIMEOUT)
    try:
        q.result(running, timeout=0)
    except JobFailed as exc:
        out(f"   Queue.result(<the first report>) raises JobFailed: ended {exc.status}")
    out(f"   from a shell: {jobq} cancel <id> --schema {SCHEMA}; "
        f"{jobq} jobs wait <id> --schema {SCHEMA}")


def run_demo(out: Callable[[str], None] = print) -> None:
    """Run the whole story, printing it through ``out``."""
    started = time.monotonic()
    jobq = jobq_command()
    dsn, source = resolve_dsn(None, embedded=True)
    out(f"using {_describe_database(dsn, source)}")
    applied = _reset_schema(dsn)
    out(f"schema {SCHEMA}: dropped and recreated by the migrations ({', '.join(applied)})")
    world = _World()
    handlers = _handlers(world)

    with Queue(dsn, schema=SCHEMA) as q:
        out("")
        out(f"1. The app enqueues {len(_JOBS)} jobs on queue {QUEUE!r}")
        labels: dict[uuid.UUID, str] = {}
        order: list[uuid.UUID] = []
        for job_type, payload, max_attempts in _JOBS:
            label = _label(job_type, payload)
            job_id = q.enqueue(
                job_type,
                payload,
                idempotency_key=f"demo:{job_type}:{label}",
                max_attempts=max_attempts,
                queue=QUEUE,
            )
            labels[job_id] = label
            order.append(job_id)
            out(f"   {job_type:<10}  {label}")
        again = q.enqueue(
            "send_email",
            _JOBS[5][1],
            idempotency_key=f"demo:send_email:{_label('send_email', _JOBS[5][1])}",
            queue=QUEUE,
        )
        out(
            "   (the welcome e-mail enqueued a second time with the same idempotency key: "
            f"{'same job, no duplicate' if again == order[5] else 'A DUPLICATE?!'})"
        )

        out("")
        out(
            "2. A worker runs them (4 threads; failures are retried after attempts x "
            f"{BACKOFF.total_seconds():.1f}s; burst runs until the queue is quiet)"
        )
        _drain(dsn, q, handlers)
        jobs = {job.id: job for job in _all_jobs(q)}
        for job_id in order:
            _print_job(jobs[job_id], labels[job_id], out)

        out("")
        out("3. jobq_stats() for the queue")
        _print_stats(q, out)

        dead = q.dead_letters(queue=QUEUE, statuses=("dead_letter",))
        out("")
        out(f"4. The dead letter{'s' if len(dead) != 1 else ''}, with its error history")
        for job in dead:
            out(f"   id           {job.id}")
            out(f"   job          {job.job_type} {labels.get(job.id, '')}")
            out(f"   attempts     {job.attempts} of {job.max_attempts}")
            out(f"   last_error   {_error_line(job.last_error)}")
            out("   errors       (one entry per failed attempt, kept across requeues)")
            for entry in job.errors:
                out(f"     attempt {entry.get('attempt')}: {_error_line(entry.get('error'))}")
        if not dead:
            out("   (none - unexpected)")
            raise JobqError("the demo expected one dead letter")
        target = dead[0]

        out("")
        out("5. Requeue it once the cause is fixed - any of:")
        out(f"     {jobq} dead-letter requeue {target.id} --schema {SCHEMA}")
        out(f"     psql> SELECT {SCHEMA}.jobq_requeue_dead_letter(job_id => '{target.id}');")
        out(f"     psql> SELECT {SCHEMA}.jobq_requeue_dead_letters(job_type => 'send_email');")
        out(f"     python> Queue(schema={SCHEMA!r}).requeue_dead_letter(job_id)")
        out("   The mail relay is repaired; requeueing now (jobq_requeue_dead_letter) ...")
        world.mail_relay_up = True
        requeued = q.requeue_dead_letter(target.id)
        after = {job.id: job for job in _all_jobs(q)}[target.id]
        out(
            f"   requeued: {requeued}; now {after.status}, attempts {after.attempts}, "
            f"{len(after.errors)} earlier errors kept"
        )
        _drain(dsn, q, handlers)
        final = {job.id: job for job in _all_jobs(q)}[target.id]
        out(
            f"   after another worker run: {final.status} on attempt {final.attempts} "
            f"(e-mail delivered to {', '.join(world.sent[-1:])})"
        )

        out("")
        out("6. A periodic job: a schedule in the database, fired by every worker's tick")
        next_fire = q.schedule(
            "digest",
            "@hourly",
            "send_email",
            {"to": "team@example.com"},
            timezone="Europe/London",
            queue=QUEUE,
            catch_up="latest",
        )
        [digest] = q.schedules()
        out("   jobq schedule set digest @hourly send_email --timezone Europe/London")
        out(
            f"   next fire: {digest.next_run_local.isoformat(sep=' ')} Europe/London "
            f"= {next_fire.astimezone(timezone.utc).isoformat(sep=' ')}"
        )
        # The demo cannot wait for the hour: it pretends the schedule has existed for two
        # hours with nobody ticking (the catch-up policy 'latest' then enqueues the most
        # recent missed fire only), by moving its next fire back directly in the table.
        with psycopg.connect(dsn, autocommit=True, **_sql.connect_kwargs(dsn)) as conn:
            conn.execute(
                sql.SQL(
                    "UPDATE {}.jobq_schedules"
                    " SET next_run_at = pg_catalog.date_trunc('hour', pg_catalog.now())"
                    " - interval '1 hour'"
                ).format(sql.Identifier(SCHEMA))
            )
        fired = q.tick()
        repeated = q.tick()
        out(
            f"   two fires missed, catch_up 'latest': jobq_tick enqueued {len(fired)} job "
            f"(idempotency key jobq:schedule:digest:<fire time>), a second tick {len(repeated)}"
        )
        _drain(dsn, q, handlers)
        job = {j.id: j for j in _all_jobs(q)}[fired[0].job_id]
        out(f"   a worker ran it: {job.status} (e-mail delivered to {', '.join(world.sent[-1:])})")
        q.unschedule("digest")

        out("")
        out("7. Results, waiting and cancels")
        invoice = order[3]
        out(f"   Queue.result(<{labels[invoice]}>) -> {json.dumps(q.result(invoice, timeout=10))}"
            "  (the OCR handler's return value)")
        _cancel_a_running_job(dsn, q, handlers, world, jobq, out)

        out("")
        out("8. Final counts")
        _print_stats(q, out)

    out("")
    out(f"Done in {time.monotonic() - started:.1f}s. Look around:")
    out(f"   {jobq} stats --schema {SCHEMA}")
    out(f"   {jobq} dead-letter list --schema {SCHEMA}")
    out(f"   {jobq} web --schema {SCHEMA}    # the dashboard, at http://127.0.0.1:8080/")
    if source == "embedded":
        table = f"{SCHEMA}.jobq_jobs"
        out(f"   {jobq} embedded psql -c 'SELECT id, job_type, status, attempts FROM {table}'")
        out(f"   {jobq} embedded psql    # then: SET search_path = {SCHEMA}; TABLE jobq_jobs;")
        out(f"   {jobq} embedded stop    # stops the embedded server; jobq starts it when needed")
    out(f"   (each run of the demo drops and recreates schema {SCHEMA})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pgq_client.demo",
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
    except JobqError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except psycopg.Error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
