"""The dashboard's operator pages over HTTP, against a real database: the search form, actions on
the selected jobs and the audit log, the errors and health findings on the overview, the
schedules' buttons, and what a monitor may not do."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from starlette.testclient import TestClient
from webtools import dead_letter, login_role, status_of

from pgq_client import Queue
from pgq_client.web import create_app

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture
def client(dsn: str) -> Iterator[TestClient]:
    with TestClient(create_app(dsn), base_url="http://127.0.0.1") as c:
        yield c


def _ids(html: str) -> list[str]:
    return re.findall(r'<tr data-id="([0-9a-f-]+)">', html)


def _token(client: TestClient, path: str) -> str:
    page = client.get(path)
    assert page.status_code == 200, page.text
    found = _CSRF.search(page.text)
    assert found, page.text
    return found.group(1)


def test_the_search_form_finds_jobs_by_key_type_status_time_and_payload(
    dsn: str, client: TestClient
) -> None:
    dead = dead_letter(dsn, job_type="send_email", queue="mail")
    with Queue(dsn) as q:
        keyed = q.enqueue("send_email", {"customer": 42}, idempotency_key="order-7", queue="mail")
        other = q.enqueue("report", {"customer": 9}, queue="reports")
        q.schedule("nightly", "0 3 * * *", "cleanup", queue="maintenance")

    form = client.get("/find")
    assert form.status_code == 200 and 'id="search"' in form.text and _ids(form.text) == []
    # the dropdowns offer the queues and job types that exist
    queues = re.search(r'<datalist id="queues">(.*?)</datalist>', form.text, re.S)
    types = re.search(r'<datalist id="job-types">(.*?)</datalist>', form.text, re.S)
    assert queues and types
    assert {"mail", "reports", "maintenance"} <= set(re.findall(r'value="([^"]+)"', queues[1]))
    assert "cleanup" in types[1]
    assert 'id="find-payload"' in form.text  # an admin may search payloads

    assert _ids(client.get("/find?idempotency_key=order-7").text) == [str(keyed)]
    assert _ids(client.get(f"/find?job_id={dead}").text) == [str(dead)]
    assert _ids(client.get("/find?job_type=send_email&status=dead_letter&finished_after=1h").text
                ) == [str(dead)]
    assert set(_ids(client.get("/find?search=1&status=pending&created_after=10m").text)) == {
        str(keyed), str(other)}
    found = client.get("/find", params={"payload_contains": '{"customer": 9}'})
    assert _ids(found.text) == [str(other)]
    assert _ids(client.get("/find?queue=none").text) == []
    # paging: the next page link continues after the last row shown
    page = client.get("/find?search=1").text
    assert len(_ids(page)) == 3 and 'id="next-page"' not in page


def test_the_search_form_refuses_bad_input_naming_the_field(client: TestClient) -> None:
    for query, said in [
        ("created_after=tomorrow", "created_after: &#39;tomorrow&#39; is neither"),
        ("payload_contains={x", "payload_contains: not valid JSON"),
        ("status=done", "status must be one of"),
        ("job_id=nope", "job_id: &#39;nope&#39; is not a job id"),
        ("queue=" + "q" * 201, "queue is 201 characters long"),
    ]:
        page = client.get(f"/find?{query}")
        assert page.status_code == 400, (query, page.status_code)
        assert said in page.text, (query, page.text)


def test_actions_on_the_selected_jobs_are_done_and_shown_in_the_audit_log(
    dsn: str, client: TestClient
) -> None:
    with Queue(dsn) as q:
        a = q.enqueue("t", run_at=datetime.now(timezone.utc) + timedelta(hours=1))
        b = q.enqueue("t", run_at=datetime.now(timezone.utc) + timedelta(hours=1))
    dead = dead_letter(dsn)

    page = client.get("/jobs?status=pending")
    assert 'id="bulk"' in page.text and f'name="job_id" value="{a}" form="bulk"' in page.text
    token = _token(client, "/jobs?status=pending")
    ran = client.post("/jobs/act", data={"csrf": token, "next": "/jobs?status=pending",
                                         "action": "run_now", "job_id": [str(a), str(b)]})
    assert ran.status_code == 200
    assert re.search(r'id="notice">run now: 2 of 2 job\(s\)<', ran.text)
    cancelled = client.post("/jobs/act", data={"csrf": token, "action": "cancel",
                                               "job_id": [str(a), str(dead)],
                                               "reason": "customer withdrew"})
    assert "cancel: 1 of 2 job(s) (1 left alone or unknown)" in cancelled.text
    assert status_of(dsn, a) == "cancelled" and status_of(dsn, dead) == "dead_letter"
    client.post("/jobs/act", data={"csrf": token, "action": "requeue", "job_id": str(dead)})
    assert status_of(dsn, dead) == "pending"
    deleted = client.post("/jobs/act", data={"csrf": token, "action": "delete", "job_id": str(a)})
    assert "delete: 1 of 1 job(s)" in deleted.text
    with psycopg.connect(dsn, autocommit=True) as c:
        assert c.execute("SELECT count(*) FROM jobq_all_jobs WHERE id = %s", (a,)
                         ).fetchone() == (0,)

    audit = client.get("/audit").text
    rows = re.findall(r'<tr data-audit="\d+">(.*?)</tr>', audit, re.S)
    assert [re.findall(r"<td>(\w+)</td>", r)[1] for r in rows] == [
        "delete", "requeue", "cancel", "run_now"]
    assert "customer withdrew" in rows[2] and "1 of 2" in rows[2]
    assert f'href="/jobs/{dead}"' in rows[1]

    # refused before anything is called: no token, an unknown action, nothing selected
    assert client.post("/jobs/act", data={"action": "cancel", "job_id": str(b)}).status_code == 403
    for data, said in [({"action": "zap", "job_id": str(b)}, "action must be one of"),
                       ({"action": "cancel"}, "job_id: select at least one job"),
                       ({"action": "cancel", "job_id": "nope"}, "is not a job id")]:
        refused = client.post("/jobs/act", data={"csrf": token, **data})
        assert refused.status_code == 400 and said in refused.text, refused.text
    assert status_of(dsn, b) == "pending"


def test_a_monitor_gets_no_action_no_payload_search_and_no_audit(
    admin_dsn: str, dsn: str
) -> None:
    with Queue(dsn) as q:
        job = q.enqueue("t", {"secret": "hunter2"})
    with login_role(admin_dsn, dsn, "monitor") as monitor_dsn, TestClient(
        create_app(monitor_dsn), base_url="http://127.0.0.1"
    ) as c:
        found = c.get("/find?search=1")
        assert found.status_code == 200 and _ids(found.text) == [str(job)]
        assert 'id="bulk"' not in found.text and 'form="bulk"' not in found.text
        assert 'id="find-payload"' not in found.text
        assert 'id="bulk"' not in c.get("/jobs").text
        searched = c.get("/find", params={"payload_contains": '{"secret": "hunter2"}'})
        assert searched.status_code == 403
        audit = c.get("/audit")
        assert audit.status_code == 200 and "may not call jobq_audit_log" in audit.text
        overview = c.get("/").text
        assert "Errors of the last hour" not in overview
        token = c.cookies.get("jobq_csrf")
        assert token
        refused = c.post("/jobs/act", data={"csrf": token, "action": "cancel",
                                            "job_id": str(job)})
        assert refused.status_code == 403 and "may not call jobq_act_on_jobs" in refused.text
        schedules = c.post("/schedules/act", data={"csrf": token, "name": "x",
                                                   "action": "pause"})
        assert schedules.status_code == 403
    assert status_of(dsn, job) == "pending"


def test_the_overview_shows_the_errors_of_the_last_hour_and_the_health_findings(
    dsn: str, client: TestClient
) -> None:
    traceback = "Traceback (most recent call last):\n  File \"h.py\"\nTimeoutError: smtp relay"
    for _ in range(2):
        dead_letter(dsn, job_type="send_email", errors=(traceback,))
    with psycopg.connect(dsn, autocommit=True) as c:  # a claim stuck for an hour
        c.execute("SELECT jobq_enqueue('stuck')")
        c.execute("SELECT * FROM jobq_dequeue('w-stuck', ARRAY['stuck'])")
        c.execute("UPDATE jobq_jobs SET locked_at = now() - interval '1 hour', "
                  "locked_until = now() + interval '1 hour' WHERE job_type = 'stuck'")
    page = client.get("/").text
    errors = re.search(r'<table id="errors">(.*?)</table>', page, re.S)
    assert errors, page
    assert re.search(r'<td class="n">2</td><td class="n">2</td>.*TimeoutError: smtp relay',
                     errors[1], re.S)
    assert "Traceback" not in errors[1]
    findings = re.search(r'<table id="findings">(.*?)</table>', page, re.S)
    assert findings and "stuck" in findings[1]
    assert "Errors of the last hour" not in client.get("/?partial=1").text


def test_schedules_are_paused_resumed_run_now_and_deleted_from_the_dashboard(
    dsn: str, client: TestClient
) -> None:
    with Queue(dsn) as q:
        q.schedule("nightly", "0 3 * * *", "report", {"kind": "daily"}, timezone="Europe/Paris",
                   queue="reports", priority=3)
    token = _token(client, "/schedules")

    def act(action: str) -> str:
        done = client.post("/schedules/act", data={"csrf": token, "name": "nightly",
                                                   "action": action})
        assert done.status_code == 200, done.text
        notice = re.search(r'id="notice">([^<]*)<', done.text)
        assert notice
        return notice[1]

    assert act("pause") == "paused schedule nightly"
    with Queue(dsn) as q:
        (s,) = q.schedules()
    assert s.paused and (s.timezone, s.queue, s.priority, s.payload) == (
        "Europe/Paris", "reports", 3, {"kind": "daily"})
    assert "Resume</button>" in client.get("/schedules").text
    assert act("resume") == "resumed schedule nightly"
    ran = client.post("/schedules/run", data={"csrf": token, "name": "nightly"})
    notice = re.search(r'id="notice">([^<]*)<', ran.text)
    assert ran.status_code == 200 and notice, ran.text
    job_id = uuid.UUID(notice[1].rsplit(" ", 1)[1])
    with Queue(dsn) as q:
        (s,) = q.schedules()
        job = q.get_job(job_id)
    assert not s.paused and job
    assert (job.job_type, job.queue, job.payload) == ("report", "reports", {"kind": "daily"})
    # a fire as a tick's: its key, and the schedule's last fire is this one
    assert s.last_job_id == job_id and s.last_fired_at
    assert job.idempotency_key == "jobq:schedule:nightly:" + s.last_fired_at.astimezone(
        timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert abs(s.last_fired_at - datetime.now(timezone.utc)) < timedelta(minutes=1)
    its_jobs = client.get("/schedules").text
    assert f'<a href="/jobs/{job_id}"' in its_jobs
    link = re.search(r'<a href="(/find\?[^"]+)">its jobs</a>', its_jobs)
    assert link and str(job_id) in client.get(link[1].replace("&amp;", "&")).text
    deleted = client.post("/schedules/delete", data={"csrf": token, "name": "nightly"})
    assert "deleted schedule nightly" in deleted.text
    with Queue(dsn) as q:
        assert q.schedules() == []
    unknown = client.post("/schedules/act", data={"csrf": token, "name": "nope",
                                                  "action": "pause"})
    assert "no schedule nope" in unknown.text
    assert "no schedule nope" in client.post("/schedules/run", data={
        "csrf": token, "name": "nope"}).text


def test_the_overview_shows_what_jobq_doctor_warns_of_beyond_health(
    dsn: str, client: TestClient
) -> None:
    """A function changed by hand and another role's object in the schema are on the overview,
    as `jobq doctor` reports them."""
    assert 'id="findings"' not in client.get("/").text
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("ALTER FUNCTION jobq_stats() SET work_mem = '8MB'")
    page = client.get("/").text
    findings = re.search(r'<table id="findings">(.*?)</table>', page, re.S)
    assert findings and "function_definition" in findings[1] and "jobq_stats" in findings[1]


def test_the_overview_charts_the_last_hour_from_the_database_for_a_monitor_too(
    dsn: str, admin_dsn: str
) -> None:
    """The chart of finished jobs and failed attempts per minute comes from jobq_throughput,
    whoever watched: a fresh dashboard draws what happened before it started, with the numbers
    as each bar's title and in a table. A role without the function sees no chart."""
    dead_letter(dsn, errors=("ValueError: a", "ValueError: b"))
    with Queue(dsn) as q:
        q.cancel([q.enqueue("t")])
    with login_role(admin_dsn, dsn, "monitor") as monitor, \
            TestClient(create_app(monitor), base_url="http://127.0.0.1") as c:
        page = c.get("/")
    assert page.status_code == 200, page.text
    chart = re.search(r'<figure class="chart" id="throughput">(.*?)</figure>', page.text, re.S)
    assert chart, page.text
    assert chart[1].count('<g class="bucket">') == 61
    assert chart[1].count('class="bar dead_letter"') == 1
    assert chart[1].count('class="bar cancelled"') == 1
    # the bar of the dead letter's minute says its numbers (its last failure is the same
    # transaction; the first may be a minute earlier)
    assert re.search(r"1 dead letter, [01] cancelled, [12] failed attempts</title>", chart[1])
    totals = re.search(r'<table id="throughput-totals">(.*?)</table>', page.text, re.S)
    assert totals
    assert re.findall(r'<td class="n">(\d+)</td>', totals[1]) == ["0", "0", "1", "1", "2"]
    assert "ValueError" not in page.text  # a monitor reads no error text
    with login_role(admin_dsn, dsn, "producer") as producer, \
            TestClient(create_app(producer), base_url="http://127.0.0.1") as c:
        assert 'id="throughput"' not in c.get("/").text


def test_a_single_cancel_or_requeue_button_writes_one_audit_row(
    dsn: str, client: TestClient
) -> None:
    """A job's own Cancel and Requeue buttons act through jobq_act_on_jobs: each writes one
    audit row (the cancel's reason included), and the notice says what became of the job, a
    waiting job's cancel too."""
    dead = dead_letter(dsn)
    with Queue(dsn) as q:
        pending = q.enqueue("t")
        waiting = q.enqueue("t", depends_on=[pending])
    token = _token(client, "/jobs")
    first = client.post(f"/jobs/{waiting}/cancel", data={"csrf": token}, follow_redirects=False)
    assert f"{waiting}%3A+cancelled" in first.headers["location"]
    assert status_of(dsn, waiting) == "cancelled"
    done = client.post(f"/jobs/{pending}/cancel", data={"csrf": token, "reason": "withdrawn"},
                       follow_redirects=False)
    assert f"{pending}%3A+cancelled" in done.headers["location"]
    assert status_of(dsn, pending) == "cancelled"
    requeued = client.post(f"/jobs/{dead}/requeue", data={"csrf": token}, follow_redirects=False)
    assert f"requeued+{dead}" in requeued.headers["location"]
    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute("SELECT action, job_ids, changed, reason FROM jobq_audit ORDER BY id"
                         ).fetchall()
    assert rows == [
        ("cancel", [waiting], [waiting], "cancelled from jobq web"),
        ("cancel", [pending], [pending], "withdrawn"),
        ("requeue", [dead], [dead], None),
    ]
    assert client.get("/audit").text.count("<tr data-audit") == 3


def test_a_producer_cancels_from_a_job_page_unrecorded(dsn: str, admin_dsn: str) -> None:
    """A producer may cancel (jobq_cancel) but not call jobq_act_on_jobs: the job page's Cancel
    still works for it, and writes no audit row."""
    with Queue(dsn) as q:
        job = q.enqueue("t")
    with login_role(admin_dsn, dsn, "producer") as producer, \
            TestClient(create_app(producer), base_url="http://127.0.0.1") as c:
        page = c.get(f"/jobs/{job}")
        assert re.search(r'<button type="submit" class="">Cancel</button>', page.text)
        token = _CSRF.search(page.text)
        assert token
        done = c.post(f"/jobs/{job}/cancel", data={"csrf": token[1]}, follow_redirects=False)
    assert f"{job}%3A+cancelled" in done.headers["location"]
    assert status_of(dsn, job) == "cancelled"
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM jobq_audit").fetchone() == (0,)


def _fired(dsn: str, name: str) -> tuple[uuid.UUID, datetime]:
    """Schedule ``name`` every minute, make its last minute due and tick: its fire's job."""
    with Queue(dsn) as q:
        q.schedule(name, "* * * * *", "cleanup", queue="maintenance")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("UPDATE jobq_schedules SET next_run_at = date_trunc('minute', now())"
                  " - interval '1 minute' WHERE name = %s", (name,))
    with Queue(dsn) as q:
        fired = q.tick()
    assert [f.schedule for f in fired] == [name]
    return fired[0].job_id, fired[0].fire_at


def test_each_schedule_links_to_the_job_its_latest_fire_enqueued(
    dsn: str, client: TestClient
) -> None:
    job_id, _ = _fired(dsn, "minutely")
    with Queue(dsn) as q:
        q.schedule("never-fired", "0 3 * * *", "report")
    page = client.get("/schedules")
    rows = dict(re.findall(r'<tr data-name="([^"]+)"[^>]*>(.*?)</tr>', page.text, re.S))
    assert f'<a href="/jobs/{job_id}"' in rows["minutely"]
    assert '<td class="last-fire">-</td>' in rows["never-fired"]
    detail = client.get(f"/jobs/{job_id}")
    assert re.search(r'id="job-schedule"><a href="/schedules#schedule-minutely">minutely</a>',
                     detail.text)
    with Queue(dsn) as q:
        other = q.enqueue("cleanup", idempotency_key="jobq:schedule:")
    assert 'id="job-schedule"' not in client.get(f"/jobs/{other}").text


def test_the_search_form_offers_the_names_jobq_names_lists(dsn: str, client: TestClient) -> None:
    """The queue and job type choices come from jobq_names: a queue that is only paused, the
    names of a finished job with a key and of one without, and of a job that waits for its
    run_at are offered too."""
    with Queue(dsn) as q:
        done = q.enqueue("archive", idempotency_key="a-1", queue="cold")
        unkeyed = q.enqueue("purge", queue="bin")
        q.enqueue("later", queue="tomorrow", run_at=datetime.now(timezone.utc) + timedelta(days=1))
        q.pause("held")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT * FROM jobq_act_on_jobs('cancel', ARRAY[%s::uuid, %s::uuid])",
                  (done, unkeyed))
    form = client.get("/find").text
    queues = re.search(r'<datalist id="queues">(.*?)</datalist>', form, re.S)
    types = re.search(r'<datalist id="job-types">(.*?)</datalist>', form, re.S)
    assert queues and types
    assert re.findall(r'value="([^"]+)"', queues[1]) == ["bin", "cold", "held", "tomorrow"]
    assert re.findall(r'value="([^"]+)"', types[1]) == ["archive", "later", "purge"]


def test_requeue_all_records_itself_in_the_audit_log_with_the_reason(
    dsn: str, client: TestClient
) -> None:
    """The dead-letter page's Requeue all (with the page's filters and a reason field) goes
    through jobq_requeue_dead_letters, which writes one audit row; the audit page shows it
    with its filters and reason."""
    mail = [dead_letter(dsn, job_type="send_email", queue="mail") for _ in range(2)]
    other = dead_letter(dsn, job_type="report", queue="reports")
    page = client.get("/dead-letters", params={"queue": "mail"}).text
    form = re.search(r'<form method="post" action="/dead-letters/requeue".*?</form>', page, re.S)
    assert form and 'id="requeue-all-reason"' in form[0] and 'value="mail"' in form[0]
    token = _token(client, "/dead-letters")
    done = client.post("/dead-letters/requeue", data={
        "csrf": token, "queue": "mail", "job_type": "", "reason": "smtp relay fixed"})
    assert done.status_code == 200 and "requeued 2 job(s)" in done.text
    assert [status_of(dsn, j) for j in (*mail, other)] == ["pending", "pending", "dead_letter"]
    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute("SELECT action, job_ids, changed, reason, filters FROM jobq_audit"
                         ).fetchall()
    assert [(a, sorted(i), sorted(ch), r, f) for a, i, ch, r, f in rows] == [
        ("requeue_dead_letters", sorted(mail), sorted(mail), "smtp relay fixed",
         {"job_type": None, "queue": "mail", "include_cancelled": False})]
    audit = client.get("/audit").text
    row = re.search(r'<tr data-audit="\d+">(.*?)</tr>', audit, re.S)
    assert row and "requeue_dead_letters" in row[1] and "queue mail" in row[1]
    assert "smtp relay fixed" in row[1] and "2 of 2" in row[1]
