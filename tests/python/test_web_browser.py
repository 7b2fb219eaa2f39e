"""The dashboard in a real browser: Debian's chromium, driven by Playwright (never a downloaded
browser), against a real database with a running worker.

`make deps` installs chromium when it is missing (as root, or with a password-less sudo); where
it cannot, these tests skip and say so.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from webtools import dead_letter, free_port, login_role, serving, status_of

from jobq_web import create_app
from pgq_client import Queue, Worker

pytestmark = pytest.mark.slow  # a browser

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# How long a page may take to show what it must (a wait for a condition, not a measurement).
WAIT_MS = 20_000

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is not installed, and `make deps` could not install it (it needs root or a "
        "password-less sudo: apt-get install --no-install-recommends chromium)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright's Python package is not installed (make venv)"
)
expect = sync_api.expect


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    p = context.new_page()
    p.set_default_timeout(WAIT_MS)
    try:
        yield p
    finally:
        context.close()


@pytest.fixture
def board(dsn: str) -> Iterator[str]:
    """The dashboard of this test's database, served on a free local port; its base URL."""
    with serving(create_app(dsn, refresh_seconds=0.5)) as url:
        yield url


class _Running:
    """A worker in a thread whose "slow" jobs wait until ``release`` is set."""

    def __init__(self, dsn: str) -> None:
        self.release = threading.Event()
        self.worker = Worker(
            dsn,
            {"slow": self._slow, "flaky": lambda job: {"ok": True}},
            concurrency=4,
            poll_interval=0.2,
            summary_interval=None,
        )
        self.thread = threading.Thread(target=self.worker.run, name="web-test-worker")

    def _slow(self, job: Any) -> None:
        self.release.wait(60)

    def __enter__(self) -> _Running:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.worker.stop()
        self.thread.join(60)


def test_the_overview_shows_the_jobs_and_updates_as_they_finish(
    dsn: str, board: str, page: Any
) -> None:
    """In the browser the overview's table follows a worker without a reload: jobs go from available
    to processing to done, the throughput counts them, and the chart draws."""
    with Queue(dsn) as q:
        for n in range(3):
            q.enqueue("slow", {"n": n}, queue="web")
        q.enqueue("other", queue="idle")
    page.goto(f"{board}/")
    idle = page.locator('tr[data-queue="idle"]')
    expect(idle.locator("td.available")).to_have_text("1")
    web = page.locator('tr[data-queue="web"]')
    expect(web.locator("td.available")).to_have_text("3")

    with _Running(dsn) as running:
        # no reload: the page's script refreshes the table
        expect(web.locator("td.processing")).to_have_text("3")
        expect(web.locator("td.available")).to_have_text("0")
        running.release.set()
        expect(web.locator("td.processing")).to_have_text("0")
        # the three successes count in the throughput (per minute over the last 5 minutes)
        expect(web.locator("td").nth(5)).to_have_text("0.6")
    expect(page.locator("#chart polyline.available")).to_have_count(1)


def test_jobs_filters_and_paging(
    dsn: str, conn: psycopg.Connection[tuple[object, ...]], board: str, page: Any
) -> None:
    """In the browser the status tabs, the queue filter and the next and first page links show 50
    jobs a page, the filtered ones only, and no job on two pages."""
    conn.execute(
        "INSERT INTO jobq_jobs (job_type, queue, status, finished_at) "
        "SELECT CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END, 'q' || (g % 2), 'succeeded', "
        "now() - g * interval '1 second' FROM generate_series(1, 120) AS g"
    )
    page.goto(f"{board}/jobs")
    page.click('#status-tabs a[data-status="succeeded"]')
    expect(page.locator("#jobs tbody tr")).to_have_count(50)
    page.fill("#filter-queue", "q1")
    page.click("#filter-apply")
    expect(page).to_have_url(re.compile(r"status=succeeded&queue=q1"))
    rows = page.locator("#jobs tbody tr")
    expect(rows).to_have_count(50)
    first_page = rows.evaluate_all("rs => rs.map(r => r.dataset.id)")
    assert all(t == "q1" for t in rows.locator("td.queue").all_inner_texts())
    page.click("#next-page")
    expect(rows).to_have_count(10)  # 60 jobs in q1
    second_page = rows.evaluate_all("rs => rs.map(r => r.dataset.id)")
    assert not set(first_page) & set(second_page)
    expect(page.locator("#next-page")).to_have_count(0)
    page.click("#first-page")
    expect(rows).to_have_count(50)


def test_job_detail_shows_the_error_history(dsn: str, board: str, page: Any) -> None:
    """From the dead-letter list a click opens the job's page, with one history row per failed
    attempt, the timeline and the payload."""
    job_id = dead_letter(dsn, errors=("ConnectionError: mail server down", "Timeout after 30s"))
    page.goto(f"{board}/dead-letters")
    page.click(f'a[href="/jobs/{job_id}"]')
    expect(page.locator("#job-status")).to_have_text("dead_letter")
    history = page.locator("#errors tbody tr")
    expect(history).to_have_count(2)
    expect(history.nth(0)).to_contain_text("ConnectionError: mail server down")
    expect(history.nth(1)).to_contain_text("Timeout after 30s")
    expect(page.locator("#timeline li")).to_contain_text(["enqueued", "attempt 1 failed"])
    expect(page.locator("#payload")).to_contain_text('"n": 1')


def test_a_requeued_dead_letter_runs(dsn: str, board: str, page: Any) -> None:
    """Requeue on the dead-letter page makes a running worker run the job: its page then shows
    succeeded, the result, and the earlier failures kept."""
    job_id = dead_letter(dsn)
    with _Running(dsn):
        page.goto(f"{board}/dead-letters")
        row = page.locator(f'tr[data-id="{job_id}"]')
        row.get_by_role("button", name="Requeue").click()
        expect(page.locator("#notice")).to_have_text(f"requeued {job_id}")
        deadline = time.monotonic() + WAIT_MS / 1000
        while status_of(dsn, job_id) != "succeeded" and time.monotonic() < deadline:
            time.sleep(0.1)
        page.goto(f"{board}/jobs/{job_id}")
        expect(page.locator("#job-status")).to_have_text("succeeded")
        expect(page.locator("#result")).to_contain_text('"ok": true')
        # its earlier failures stay in its history
        expect(page.locator("#errors tbody tr")).to_have_count(2)


def test_a_monitor_sees_every_action_disabled(
    admin_dsn: str, dsn: str, page: Any
) -> None:
    """A monitor's browser shows every Requeue and Cancel button disabled with the reason as its
    title, and no job page; nothing changes."""
    job_id = dead_letter(dsn)
    with Queue(dsn) as q:
        pending = q.enqueue("email", queue="mail")
    with login_role(admin_dsn, dsn, "monitor") as monitor_dsn, serving(
        create_app(monitor_dsn)
    ) as url:
        page.goto(f"{url}/dead-letters")
        expect(page.locator("#role")).to_contain_text("jobq_web_")
        requeue = page.locator(f'tr[data-id="{job_id}"]').get_by_role("button", name="Requeue")
        expect(requeue).to_be_disabled()
        denied = re.compile("may not call jobq_act_on_jobs")
        expect(requeue).to_have_attribute("title", denied)
        expect(page.locator(".bulk button")).to_be_disabled()
        page.goto(f"{url}/jobs?status=pending")
        cancel = page.locator(f'tr[data-id="{pending}"]').get_by_role("button", name="Cancel")
        expect(cancel).to_be_disabled()
        # A monitor sees no payload, result or error text: a job's own page is refused (it
        # has neither jobq_get_job nor jobq_job_status), with nothing to act on.
        page.goto(f"{url}/jobs/{pending}")
        expect(page.locator("body")).to_contain_text("may call neither jobq_get_job")
        expect(page.get_by_role("button", name="Cancel")).to_have_count(0)
    assert status_of(dsn, job_id) == "dead_letter" and status_of(dsn, pending) == "pending"


def test_an_admin_pauses_and_resumes_a_queue_from_the_overview(
    admin_dsn: str, dsn: str, page: Any
) -> None:
    """Pause on a queue's row of the overview (confirmed) marks the queue paused and stops its
    claims; Resume lets them go on; a monitor's overview shows the queue with no button."""
    with Queue(dsn) as q:
        job_id = q.enqueue("email", queue="mail")
    page.on("dialog", lambda dialog: dialog.accept())
    with serving(create_app(dsn, refresh_seconds=60)) as url:
        page.goto(f"{url}/")
        page.locator('tr[data-queue="mail"]').get_by_role("button", name="Pause").click()
        expect(page.locator("#notice")).to_have_text("paused mail")
        expect(page.locator('tr[data-queue="mail"] .paused')).to_have_text("paused")
        with Queue(dsn) as q:
            assert q.dequeue("w", queues=["mail"]) == []
        page.locator('tr[data-queue="mail"]').get_by_role("button", name="Resume").click()
        expect(page.locator("#notice")).to_have_text("resumed mail")
        expect(page.locator('tr[data-queue="mail"] .paused')).to_have_count(0)
    with Queue(dsn) as q:
        q.pause("mail")
    with login_role(admin_dsn, dsn, "monitor") as monitor_dsn, serving(
        create_app(monitor_dsn)
    ) as url:
        page.goto(f"{url}/")
        expect(page.locator('tr[data-queue="mail"]')).to_be_visible()
        expect(page.get_by_role("button", name=re.compile("Pause|Resume"))).to_have_count(0)
    assert status_of(dsn, job_id) == "pending"


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_non_local_bind_requires_the_credential(dsn: str, browser: Any) -> None:
    """`jobq web` bound to 0.0.0.0 with JOBQ_WEB_AUTH: a browser without the credential gets
    the challenge and no page, a wrong one 401, the right one the page. (That it refuses to
    start without a credential is test_web's CLI test.)"""
    with Queue(dsn) as q:
        q.enqueue("email", queue="mail")
    port = free_port()
    env = {**os.environ, "JOBQ_DSN": dsn, "JOBQ_WEB_AUTH": "ops:correct horse"}
    server = subprocess.Popen(
        [sys.executable, "-m", "pgq_client", "web", "--bind", f"0.0.0.0:{port}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not _listening(port):
            assert server.poll() is None, server.communicate()
            assert time.monotonic() < deadline, "jobq web did not listen within 60 s"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/"
        anonymous = browser.new_context()
        # the browser gets the challenge and no page
        with pytest.raises(sync_api.Error, match="ERR_INVALID_AUTH_CREDENTIALS"):
            anonymous.new_page().goto(url)
        assert anonymous.request.get(url).status == 401
        anonymous.close()
        wrong = browser.new_context(http_credentials={"username": "ops", "password": "nope"})
        response = wrong.new_page().goto(url)
        assert response is not None and response.status == 401
        assert "needs its credential" in response.text()
        wrong.close()

        allowed = browser.new_context(
            http_credentials={"username": "ops", "password": "correct horse"}
        )
        p = allowed.new_page()
        assert p.goto(f"http://127.0.0.1:{port}/").status == 200
        expect(p.locator('tr[data-queue="mail"] td.available')).to_have_text("1")
        allowed.close()
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)
