"""``make screenshots``: the pictures of docs/dashboard.md, taken by Debian's chromium (headless,
through Playwright) of the dashboard over a throwaway PostgreSQL seeded with a few queues, a
running worker's claim, failures with tracebacks, a schedule and a selection of jobs.

Writes docs/img/dashboard-overview.png, dashboard-jobs.png, dashboard-job.png,
dashboard-workers.png, dashboard-find.png and dashboard-bulk.png. Needs /usr/bin/chromium
(`make deps` installs it) and the web extra.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import uvicorn
from playwright.sync_api import sync_playwright

from pgq_client import Queue
from pgq_client.migrate import migrate
from pgq_client.web import create_app

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "img"
CHROMIUM = "/usr/bin/chromium"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "handlers.py", line 41, in send_email\n'
    "    relay.send(message)\n"
    "TimeoutError: smtp relay did not answer within 30 s"
)


@contextmanager
def throwaway_database() -> Iterator[str]:
    """A PostgreSQL of its own (scripts/testdb.sh), stopped at the end; yields a DSN."""
    home = tempfile.mkdtemp(prefix="jobq-screenshots.")
    started = subprocess.run([str(ROOT / "scripts" / "testdb.sh"), "start", home],
                             check=True, capture_output=True, text=True).stdout
    exports = dict(line.removeprefix("export ").split("=", 1) for line in started.splitlines()
                   if line.startswith("export "))
    try:
        yield shlex.split(exports["JOBQ_TEST_DSN"])[0]
    finally:
        subprocess.run([str(ROOT / "scripts" / "testdb.sh"), "stop", home], check=False)


# The hour behind the overview's chart of finished jobs and failed attempts (jobq_throughput
# reads finished_at and each job's error history): a varying rate of successes, a retry in
# every tenth job, a dead letter in every hundredth.
PAST_HOUR = """
INSERT INTO jobq_jobs_history (
    id, queue, job_type, payload, status, priority, attempts, max_attempts, available_at,
    errors, created_at, updated_at, finished_at, scheduled
)
SELECT gen_random_uuid(), 'mail', 'send_email', '{}',
       CASE WHEN n % 97 = 0 THEN 'dead_letter' ELSE 'succeeded' END, 0, 1, 5, f.at,
       CASE WHEN n % 13 = 0 THEN jsonb_build_array(jsonb_build_object(
           'attempt', 1, 'at', f.at - interval '5 seconds', 'worker', 'worker-2.example:977',
           'error', 'TimeoutError: smtp relay')) ELSE '[]' END,
       f.at, f.at, f.at, false
FROM generate_series(1, 3000) AS n,
     LATERAL (SELECT (n * 7919) % 59 + 1 AS minute) AS m,
     LATERAL (SELECT now() - m.minute * interval '1 minute' - (n % 7) * interval '3 seconds'
                     AS at) AS f
WHERE n % (1 + m.minute % 4) = 0
"""


def seed(dsn: str) -> uuid.UUID:
    """Jobs in every status, failures with tracebacks, a claim, a paused queue, a schedule, an
    audited action; returns a dead letter's id (the job page's subject)."""
    now = datetime.now(timezone.utc)
    with Queue(dsn) as q:
        for i in range(40):
            q.enqueue("send_email", {"to": f"user{i}@example.com"}, queue="mail")
        for i in range(12):
            q.enqueue("thumbnail", {"image": f"img/{i}.jpg"}, queue="media", priority=i % 3)
        for i in range(5):
            q.enqueue("report", {"month": f"2026-{i + 1:02d}"}, queue="reports",
                      run_at=now + timedelta(hours=i + 1))
        q.schedule("nightly-report", "0 3 * * *", "report", {"kind": "daily"},
                   timezone="Europe/Paris", queue="reports")
        q.pause("reports", "month-end close")
        claimed = q.dequeue("web-1.example:4242", ["thumbnail"], batch_size=3)
        for job in claimed[:1]:
            q.complete(job.id, "web-1.example:4242")
        dead = None
        for i in range(3):
            job_id = q.enqueue("send_email", {"to": f"bounce{i}@example.com"}, queue="mail",
                               max_attempts=1, priority=9)
            (job,) = q.dequeue("worker-2.example:977", ["send_email"], queues=["mail"])
            q.fail(job.id, "worker-2.example:977", TRACEBACK if i < 2 else "ValueError: bad "
                   "address 'bounce2@example'")
            dead = dead or job_id
        assert dead is not None
        q.act_on_jobs("requeue", [dead], "smtp relay back")
        (job,) = q.dequeue("worker-2.example:977", ["send_email"], queues=["mail"])
        q.fail(job.id, "worker-2.example:977", TRACEBACK)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(PAST_HOUR)
    return dead


@contextmanager
def serving(dsn: str) -> Iterator[str]:
    server = uvicorn.Server(uvicorn.Config(create_app(dsn, refresh_seconds=60), host="127.0.0.1",
                                           port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def shoot(url: str, dead: uuid.UUID) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{url}/")
        page.screenshot(path=IMAGES / "dashboard-overview.png", full_page=True)
        page.goto(f"{url}/jobs?status=dead_letter")
        page.screenshot(path=IMAGES / "dashboard-jobs.png", full_page=True)
        page.goto(f"{url}/jobs/{dead}")
        page.screenshot(path=IMAGES / "dashboard-job.png", full_page=True)
        page.goto(f"{url}/workers")
        page.screenshot(path=IMAGES / "dashboard-workers.png", full_page=True)
        page.goto(f"{url}/find?queue=mail&status=pending")
        page.screenshot(path=IMAGES / "dashboard-find.png")
        # a bulk action about to be taken: rows selected, the cancel's reason typed
        for box in page.locator("input.select").all()[:3]:
            box.check()
        page.fill("#bulk-reason", "campaign withdrawn")
        page.screenshot(path=IMAGES / "dashboard-bulk.png")
        browser.close()


def main() -> int:
    if not Path(CHROMIUM).exists():
        print(f"screenshots: {CHROMIUM} is missing (make deps installs it)", file=sys.stderr)
        return 1
    with throwaway_database() as admin:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute("CREATE DATABASE jobq_screenshots")
        dsn = psycopg.conninfo.make_conninfo(admin, dbname="jobq_screenshots")
        migrate(dsn)
        dead = seed(dsn)
        with serving(dsn) as url:
            shoot(url, dead)
    print(f"screenshots: wrote {', '.join(sorted(p.name for p in IMAGES.glob('dashboard-*.png')))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
