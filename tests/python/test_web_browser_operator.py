"""The operator's pages in a real browser (Debian's chromium through Playwright, as
test_web_browser.py): the search form, an action on the selected jobs with the cancel's reason
asked for, the audit log, Requeue all with its reason, the overview's errors, the schedules'
buttons and the list pages' auto-refresh."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from test_web_browser import board, browser, expect, page  # noqa: F401  (fixtures)
from webtools import dead_letter, status_of

from pgq_client import Queue

pytestmark = pytest.mark.slow  # a browser


def test_find_select_and_cancel_with_a_reason_then_read_the_audit_log(
    dsn: str, board: str, page: Any  # noqa: F811
) -> None:
    with Queue(dsn) as q:
        later = [q.enqueue("send_email", {"n": i}, queue="mail",
                           run_at=datetime.now(timezone.utc) + timedelta(hours=1))
                 for i in range(2)]
        keyed = q.enqueue("report", idempotency_key="order-7")
    page.goto(f"{board}/find")
    page.fill("#find-key", "order-7")
    page.click("#find-apply")
    expect(page.locator("tr[data-id]")).to_have_count(1)
    expect(page.locator(f'tr[data-id="{keyed}"]')).to_be_visible()

    page.fill("#find-key", "")
    page.fill("#find-queue", "mail")
    page.check('#find-statuses input[value="pending"]')
    page.click("#find-apply")
    expect(page.locator("tr[data-id]")).to_have_count(2)
    page.check("#select-all")
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept("customer withdrew")

    page.on("dialog", answer)
    page.click("#bulk-cancel")
    expect(page.locator("#notice")).to_have_text("cancel: 2 of 2 job(s)")
    assert asked == ["Why cancel the selected jobs?"]
    assert [status_of(dsn, i) for i in later] == ["cancelled", "cancelled"]

    page.click("#nav-audit")
    first = page.locator("tr[data-audit]").first
    expect(first).to_contain_text("cancel")
    expect(first).to_contain_text("customer withdrew")
    expect(first).to_contain_text("2 of 2")


def test_run_now_from_the_jobs_page_and_errors_on_the_overview(
    dsn: str, board: str, page: Any  # noqa: F811
) -> None:
    dead_letter(dsn, job_type="send_email",
                errors=("Traceback (most recent call last):\n  File \"h.py\"\nTimeoutError: smtp",))
    with Queue(dsn) as q:
        later = q.enqueue("report", run_at=datetime.now(timezone.utc) + timedelta(days=1))
    page.goto(f"{board}/")
    expect(page.locator("#errors")).to_contain_text("TimeoutError: smtp")
    expect(page.locator("#errors")).not_to_contain_text("Traceback")
    page.goto(f"{board}/jobs?status=pending")
    page.check(f'input.select[value="{later}"]')
    page.click("#bulk-run-now")
    expect(page.locator("#notice")).to_have_text("run now: 1 of 1 job(s)")
    with Queue(dsn) as q:
        job = q.get_job(later)
    assert job and job.available_at <= datetime.now(timezone.utc)


def test_the_overview_charts_the_last_hour_from_the_database(
    dsn: str, board: str, page: Any  # noqa: F811
) -> None:
    dead_letter(dsn, errors=("ValueError: a", "ValueError: b"))
    page.goto(f"{board}/")
    expect(page.locator("#throughput svg g.bucket")).to_have_count(61)
    bar = page.locator("#throughput rect.bar.dead_letter")
    expect(bar).to_have_count(1)
    expect(bar).to_be_visible()
    expect(page.locator("#throughput-totals")).to_contain_text("total")
    page.click("#throughput-minutes summary")
    expect(page.locator("#throughput-minutes tbody tr").first).to_contain_text("UTC")


def test_schedules_buttons_and_the_list_pages_refresh(
    dsn: str, board: str, page: Any  # noqa: F811
) -> None:
    with Queue(dsn) as q:
        q.schedule("nightly", "0 3 * * *", "report")
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"{board}/schedules")
    row = page.locator('tr[data-name="nightly"]')
    row.get_by_role("button", name="Pause").click()
    expect(page.locator("#notice")).to_have_text("paused schedule nightly")
    row.get_by_role("button", name="Resume").click()
    expect(page.locator("#notice")).to_have_text("resumed schedule nightly")
    row.get_by_role("button", name="Run now").click()
    expect(page.locator("#notice")).to_contain_text("ran schedule nightly now: job ")
    ran = (page.locator("#notice").text_content() or "").rsplit(" ", 1)[1]
    # the run is the schedule's last fire, as a tick's: its cell links to the job
    expect(row.locator("td.last-fire a")).to_have_attribute("href", re.compile(f"/jobs/{ran}$"))
    row.get_by_role("button", name="Delete").click()
    expect(page.locator("#notice")).to_have_text("deleted schedule nightly")
    with Queue(dsn) as q:
        assert q.schedules() == []
        assert [j.job_type for j in q.list_jobs()] == ["report"]

    # the jobs page reloads itself while its box is ticked, and shows a job enqueued meanwhile
    page.goto(f"{board}/jobs?status=pending")
    page.check("#auto-refresh")
    with Queue(dsn) as q:
        fresh = q.enqueue("fresh")
    expect(page.locator(f'tr[data-id="{fresh}"]')).to_be_visible(timeout=30_000)
    assert re.search(r"refresh every 10 s", page.content())


def test_requeue_all_with_a_reason_is_in_the_audit_log(
    dsn: str, board: str, page: Any  # noqa: F811
) -> None:
    mail = [dead_letter(dsn, job_type="send_email", queue="mail") for _ in range(2)]
    other = dead_letter(dsn, job_type="report")
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"{board}/dead-letters?queue=mail")
    page.fill("#requeue-all-reason", "smtp relay fixed")
    page.get_by_role("button", name="Requeue all failed and dead-letter jobs of queue mail").click()
    expect(page.locator("#notice")).to_have_text("requeued 2 job(s)")
    assert [status_of(dsn, j) for j in (*mail, other)] == ["pending", "pending", "dead_letter"]
    page.goto(f"{board}/audit")
    row = page.locator("#audit tbody tr").first
    expect(row).to_contain_text("requeue_dead_letters")
    expect(row).to_contain_text("queue mail")
    expect(row).to_contain_text("smtp relay fixed")
    expect(row).to_contain_text("2 of 2")
