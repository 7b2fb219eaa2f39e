"""The dashboard (jobq_web) over HTTP, against a real database: pages, paging, actions,
CSRF, the role's privileges, the credential, and `jobq web`'s refusals."""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient
from webtools import dead_letter, login_role, status_of

from jobq_cli import cli
from jobq_web import Credentials, create_app, is_loopback, parse_bind
from pgq_client import Queue

_HIDDEN_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture
def client(dsn: str) -> Iterator[TestClient]:
    with TestClient(create_app(dsn), base_url="http://127.0.0.1") as c:
        yield c


def _csrf(client: TestClient, path: str = "/") -> str:
    page = client.get(path)
    assert page.status_code == 200, page.text
    found = _HIDDEN_CSRF.search(page.text)
    if found:
        return found.group(1)
    token = client.cookies.get("jobq_csrf")
    assert token
    return token


def _ids(html: str) -> list[str]:
    return re.findall(r'<tr data-id="([0-9a-f-]+)">', html)


def test_overview_shows_each_queue_with_its_jobs(dsn: str, client: TestClient) -> None:
    """The overview counts each queue's available jobs and links its dead letters, the total sums
    the queues, the live part comes alone with ?partial=1, and every response carries the security
    headers."""
    with Queue(dsn) as q:
        for _ in range(3):
            q.enqueue("email", {"to": "a@example.com"}, queue="mail")
        q.enqueue("report", queue="reports")
    dead_letter(dsn, queue="reports")

    page = client.get("/")
    assert page.status_code == 200
    mail = re.search(r'<tr data-queue="mail">(.*?)</tr>', page.text, re.DOTALL)
    reports = re.search(r'<tr data-queue="reports">(.*?)</tr>', page.text, re.DOTALL)
    assert mail and reports
    assert '<td class="n available">3</td>' in mail.group(1)
    assert '<td class="n available">1</td>' in reports.group(1)
    dead = r'class="n dead"><a href="/dead-letters\?queue=reports">1</a>'
    assert re.search(dead, reports.group(1))
    assert 'id="total-available">4<' in page.text
    # the live part alone, which the page's script fetches
    live = client.get("/?partial=1")
    assert live.status_code == 200 and "<html" not in live.text and 'data-queue="mail"' in live.text
    # every response says what it allows
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


def test_the_chart_draws_the_samples_of_the_overview(dsn: str, client: TestClient) -> None:
    """The chart appears once the overview has two samples a second apart: one polyline for
    available jobs, one for processing ones."""
    with Queue(dsn) as q:
        q.enqueue("email")
    first = client.get("/")
    assert 'id="chart"' not in first.text  # one sample: nothing to draw yet
    board = client.app.state.jobq  # type: ignore[attr-defined]
    board.samples[-1].at -= 5  # the next look comes later than the minimum spacing
    second = client.get("/")
    assert 'id="chart"' in second.text
    drawn = re.search(r'<svg id="chart".*?</svg>', second.text, re.S)
    assert drawn and drawn[0].count("<polyline") == 2


def test_jobs_are_listed_by_status_and_filtered_and_paged_without_repeats(
    dsn: str, conn: psycopg.Connection[tuple[object, ...]], client: TestClient
) -> None:
    """Paging through 130 succeeded jobs shows each once, newest first, in three pages; a queue and
    job type filter shows exactly the matching jobs; a status with no job says so once."""
    conn.execute(
        "INSERT INTO jobq_jobs (job_type, queue, status, finished_at) "
        "SELECT CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END, 'q' || (g % 3), 'succeeded', "
        "now() - g * interval '1 second' FROM generate_series(1, 130) AS g"
    )
    expected = [
        str(r[0])
        for r in conn.execute(
            "SELECT id"
            " FROM jobq_all_jobs WHERE status = 'succeeded' ORDER BY finished_at DESC, id DESC"
        )
    ]
    seen: list[str] = []
    url: str | None = "/jobs?status=succeeded"
    pages = 0
    while url:
        page = client.get(url)
        assert page.status_code == 200, page.text
        seen += _ids(page.text)
        pages += 1
        found = re.search(r'<a href="([^"]+)" id="next-page"', page.text)
        url = found.group(1).replace("&amp;", "&") if found else None
    assert pages == 3
    assert seen == expected  # every job once, newest first

    filtered = client.get("/jobs", params={"status": "succeeded", "queue": "q1", "job_type": "odd"})
    rows = _ids(filtered.text)
    want = [
        str(r[0])
        for r in conn.execute(
            "SELECT id FROM jobq_all_jobs WHERE queue = 'q1' AND job_type = 'odd' "
            "ORDER BY finished_at DESC, id DESC LIMIT 50"
        )
    ]
    assert rows == want and rows
    assert client.get("/jobs", params={"status": "failed"}).text.count('id="no-rows"') == 1


def test_bad_listing_arguments_are_refused_clearly(client: TestClient) -> None:
    """An unknown status or a malformed or naive cursor is a 400 saying what is expected; a job id
    that is not a uuid, or of no job, is a 404."""
    bad = client.get("/jobs", params={"status": "done"})
    assert bad.status_code == 400 and "status must be one of" in bad.text
    cursor = client.get("/jobs", params={"status": "succeeded", "after": "yesterday"})
    assert cursor.status_code == 400 and "after must be" in cursor.text
    naive = client.get(
        "/jobs", params={"status": "succeeded", "after": f"2024-01-01T00:00:00,{uuid.uuid4()}"}
    )
    assert naive.status_code == 400
    assert client.get("/jobs/not-a-uuid").status_code == 404
    missing = client.get(f"/jobs/{uuid.uuid4()}")
    assert missing.status_code == 404 and "no job" in missing.text


def test_job_detail_shows_payload_error_history_and_timeline(dsn: str, client: TestClient) -> None:
    """A dead letter's page shows its status, its payload (escaped), one row per failed attempt and
    a timeline from enqueued to dead_letter."""
    job_id = dead_letter(dsn, errors=("disk full", "still full"))
    page = client.get(f"/jobs/{job_id}")
    assert page.status_code == 200
    assert 'id="job-status">dead_letter' in page.text
    assert "&#34;n&#34;: 1" in page.text or '"n": 1' in page.text  # the payload, escaped
    history = re.search(r'<table id="errors">(.*?)</table>', page.text, re.DOTALL)
    assert history
    assert "disk full" in history.group(1) and "still full" in history.group(1)
    timeline = re.search(r'<ol class="timeline" id="timeline">(.*?)</ol>', page.text, re.DOTALL)
    assert timeline
    steps = re.findall(r"</span> ([^<]+?)(?: — |</li>)", timeline.group(1))
    assert steps[0] == "enqueued"
    assert "attempt 1 failed" in steps and "attempt 2 failed" in steps
    assert steps[-1] == "dead_letter"


def test_requeue_of_a_dead_letter_needs_the_csrf_token(dsn: str, client: TestClient) -> None:
    """A requeue without the form's token, with a wrong one, or from another site's Origin is
    refused (403) and changes nothing; with the token it requeues and returns to the page it
    names."""
    job_id = dead_letter(dsn)
    token = _csrf(client, "/dead-letters")

    no_token = client.post(f"/jobs/{job_id}/requeue", data={"next": "/dead-letters"})
    assert no_token.status_code == 403 and "CSRF" in no_token.text
    wrong = client.post(f"/jobs/{job_id}/requeue", data={"csrf": "x" * 43})
    assert wrong.status_code == 403
    elsewhere = client.post(
        f"/jobs/{job_id}/requeue", data={"csrf": token}, headers={"Origin": "http://evil.example"}
    )
    assert elsewhere.status_code == 403
    assert status_of(dsn, job_id) == "dead_letter"  # nothing was done

    done = client.post(
        f"/jobs/{job_id}/requeue",
        data={"csrf": token, "next": "/dead-letters"},
        headers={"Origin": "http://127.0.0.1"},
        follow_redirects=False,
    )
    assert done.status_code == 303
    assert done.headers["location"].startswith("/dead-letters?notice=requeued")
    assert status_of(dsn, job_id) == "pending"


def test_a_post_never_redirects_to_another_site(dsn: str, client: TestClient) -> None:
    """A form's next pointing to another site (absolute, scheme-relative, backslash) is ignored: the
    action returns to the job's own page."""
    job_id = dead_letter(dsn)
    token = _csrf(client)
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        done = client.post(
            f"/jobs/{job_id}/requeue",
            data={"csrf": token, "next": target},
            follow_redirects=False,
        )
        assert done.status_code == 303
        assert done.headers["location"].startswith(f"/jobs/{job_id}?notice=")
        client.post(f"/jobs/{job_id}/cancel", data={"csrf": token})


def test_cancel_and_requeue_all_from_the_pages(dsn: str, client: TestClient) -> None:
    """Cancel on a pending job cancels it; requeue all with a queue filter requeues that queue's
    dead letters only, and leaves its cancelled job cancelled."""
    with Queue(dsn) as q:
        pending = q.enqueue("email", queue="mail")
    first = dead_letter(dsn, job_type="a", queue="q1")
    second = dead_letter(dsn, job_type="b", queue="q2")
    token = _csrf(client, "/jobs")

    listing = client.get("/jobs", params={"status": "pending"})
    assert f'action="/jobs/{pending}/cancel"' in listing.text
    done = client.post(f"/jobs/{pending}/cancel", data={"csrf": token})
    assert done.status_code == 200  # followed to the job's page
    assert "cancelled" in done.text
    assert status_of(dsn, pending) == "cancelled"

    with Queue(dsn) as q:
        withdrawn = q.enqueue("a", queue="q1")
        q.cancel([withdrawn])
    only_q1 = client.post("/dead-letters/requeue", data={"csrf": token, "queue": "q1"})
    assert "requeued 1 job(s)" in only_q1.text
    assert status_of(dsn, first) == "pending" and status_of(dsn, second) == "dead_letter"
    assert status_of(dsn, withdrawn) == "cancelled"


def test_text_postgresql_cannot_store_is_refused_naming_the_field(
    dsn: str, client: TestClient
) -> None:
    """A NUL in a filter or in a cancel's reason is refused (400, the field named) before
    anything is sent, and the job stays as it was."""
    with Queue(dsn) as q:
        pending = q.enqueue("email", queue="mail")
    listing = client.get("/jobs", params={"status": "pending", "queue": "ma\x00il"})
    assert listing.status_code == 400 and "queue contains a NUL" in listing.text
    token = _csrf(client, "/jobs")
    refused = client.post(f"/jobs/{pending}/cancel", data={"csrf": token, "reason": "a\x00b"})
    assert refused.status_code == 400 and "reason contains a NUL" in refused.text
    assert status_of(dsn, pending) == "pending"


def test_a_monitor_sees_jobs_but_every_action_disabled_and_refused(
    admin_dsn: str, dsn: str
) -> None:
    """A monitor sees the overview and the listings with every button disabled and its reason, gets
    no job page (nor its payload), and a forged POST is refused (403) without changing the job."""
    job_id = dead_letter(dsn, errors=("secret detail in the error",))
    with Queue(dsn) as q:
        pending = q.enqueue("email", {"password": "hunter2"})
    with login_role(admin_dsn, dsn, "monitor") as monitor_dsn, TestClient(
        create_app(monitor_dsn), base_url="http://127.0.0.1"
    ) as c:
        overview = c.get("/")
        assert overview.status_code == 200 and 'data-queue="default"' in overview.text
        dead = c.get("/dead-letters")
        assert job_id.hex[:8] in dead.text.replace("-", "")
        actions = [b for b in re.findall(r"<button[^>]*>", dead.text) if "filter-apply" not in b]
        assert len(actions) == 2 and all(" disabled " in b for b in actions)  # row and bulk
        assert "may not call jobq_act_on_jobs" in dead.text
        pending_page = c.get("/jobs")
        assert re.search(r'<button type="submit" class="" disabled title="role \S+ may not call '
                         r'jobq_cancel">Cancel</button>', pending_page.text)
        detail = c.get(f"/jobs/{pending}")
        # A monitor has neither jobq_get_job nor jobq_job_status (results and error texts).
        assert detail.status_code == 404 and "may call neither jobq_get_job" in detail.text
        assert "hunter2" not in detail.text

        token = _csrf(c)
        refused = c.post(f"/jobs/{job_id}/requeue", data={"csrf": token})
        assert refused.status_code == 403
        assert "may not call jobq_act_on_jobs" in refused.text
        refused = c.post(f"/jobs/{pending}/cancel", data={"csrf": token})
        assert refused.status_code == 403
    assert status_of(dsn, job_id) == "dead_letter" and status_of(dsn, pending) == "pending"


def test_a_monitor_sees_which_queues_are_paused(admin_dsn: str, dsn: str) -> None:
    """The overview marks a paused queue for a monitor too (from jobq_queue_summary), without
    the pause's reason, which only jobq_queues (admin) reads."""
    with Queue(dsn) as q:
        q.enqueue("email", queue="mail")
        q.enqueue("email", queue="other")
        q.pause("mail", "disk full")
    with login_role(admin_dsn, dsn, "monitor") as monitor_dsn, TestClient(
        create_app(monitor_dsn), base_url="http://127.0.0.1"
    ) as c:
        page = c.get("/").text
    rows = dict(re.findall(r'<tr data-queue="([^"]+)">(.*?)</tr>', page, re.S))
    assert '<span class="paused">paused</span>' in rows["mail"]
    assert "paused" not in rows["other"] and "disk full" not in page


def test_a_role_without_privileges_is_told_what_it_cannot_see(admin_dsn: str, dsn: str) -> None:
    """A role without any jobq grant gets every page, each saying what it may not read, and no
    job."""
    with login_role(admin_dsn, dsn, None) as nobody_dsn, TestClient(
        create_app(nobody_dsn), base_url="http://127.0.0.1"
    ) as c:
        assert 'id="summary-denied"' in c.get("/").text
        assert 'id="list-denied"' in c.get("/jobs").text
        assert 'id="schedules-denied"' in c.get("/schedules").text
        limits = c.get("/limits").text
        assert 'id="limits-denied"' in limits and 'id="usage-denied"' in limits
        assert c.get(f"/jobs/{uuid.uuid4()}").status_code == 404


def test_schedules_are_listed(dsn: str, client: TestClient) -> None:
    """A schedule is listed with its cron and its time zone."""
    with Queue(dsn) as q:
        q.schedule("nightly-report", "0 3 * * *", "report", timezone="Europe/Paris")
    page = client.get("/schedules")
    row = re.search(r'<tr data-name="nightly-report"[^>]*>(.*?)</tr>', page.text, re.DOTALL)
    assert row and "<code>0 3 * * *</code>" in row.group(1) and "Europe/Paris" in row.group(1)


def test_limits_are_listed_with_what_each_key_uses(dsn: str, client: TestClient) -> None:
    """The limits page shows each group's caps and window, and per (group, key) the jobs running,
    the starts within the window and the jobs waiting (a job whose run_at is ahead included)."""
    assert 'id="no-limits"' in client.get("/limits").text
    with Queue(dsn) as q:
        q.set_limit("api", max_running=2, max_starts=10, per=60)
        q.set_limit("video", max_running=1)
        for _ in range(3):
            q.enqueue("call", limit_group="api", limit_key="acme")
        q.enqueue("call", limit_group="api", limit_key="globex",
                  run_at=datetime.now(timezone.utc) + timedelta(hours=1))
        q.enqueue("encode", limit_group="video")
        assert len(q.dequeue("w", job_types=["call"], batch_size=5)) == 2  # acme's two
    page = client.get("/limits").text
    row = re.search(r'<tr data-group="api">(.*?)</tr>', page, re.DOTALL)
    assert row and [c.strip() for c in re.findall(r"<td>(.*?)</td>", row.group(1))] == [
        "api", "2", "10", "1m"
    ]
    row = re.search(r'<tr data-group="video">(.*?)</tr>', page, re.DOTALL)
    assert row and "no limit" in row.group(1)

    def usage(group: str, key: str) -> list[str]:
        found = re.search(
            rf'<tr data-group="{group}" data-key="{key}">(.*?)</tr>', page, re.DOTALL
        )
        assert found, (group, key)
        return [c.strip() for c in re.findall(r"<td>(.*?)</td>", found.group(1), re.DOTALL)]

    assert usage("api", "acme") == ["api", "acme", "2 / 2", "2 / 10 per 1m", "1"]
    assert usage("api", "globex") == ["api", "globex", "0 / 2", "0 / 10 per 1m", "1"], (
        "a job whose run_at is ahead waits too"
    )
    assert usage("video", "") == ["video", "(none: the whole group)", "0 / 1", "", "1"]


def test_the_credential_is_required_when_set(dsn: str) -> None:
    """With a credential set, every request without it, or with a wrong or malformed one, gets 401
    and the Basic challenge, static files included; the right one (colons in the password, any case
    of 'Basic') gets the page."""
    app = create_app(dsn, credentials=Credentials("ops", "s3cret:with:colons"))
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert c.get("/").status_code == 401
        assert c.get("/").headers["www-authenticate"].startswith("Basic")
        assert c.get("/static/jobq.css").status_code == 401
        assert c.get("/", auth=("ops", "wrong")).status_code == 401
        assert c.get("/", headers={"Authorization": "Basic !!!"}).status_code == 401
        assert c.get("/", auth=("ops", "s3cret:with:colons")).status_code == 200
        good = base64.b64encode(b"ops:s3cret:with:colons").decode()
        assert c.get("/jobs", headers={"Authorization": f"basic {good}"}).status_code == 200


def test_mounted_in_another_application_its_links_keep_the_prefix(dsn: str) -> None:
    """Mounted under /ops/jobq, its links, static files, CSRF cookie and redirects keep the prefix,
    and its actions work."""
    with Queue(dsn) as q:
        q.enqueue("email", queue="mail")
    job_id = dead_letter(dsn)
    outer = Starlette(routes=[Mount("/ops/jobq", app=create_app(dsn))])
    with TestClient(outer, base_url="http://127.0.0.1") as c:
        page = c.get("/ops/jobq/")
        assert page.status_code == 200
        assert 'href="/ops/jobq/static/jobq.css"' in page.text
        assert 'href="/ops/jobq/jobs?status=pending&amp;queue=mail"' in page.text
        assert c.get("/ops/jobq/static/jobq.js").status_code == 200
        token = c.cookies.get("jobq_csrf")
        assert token
        done = c.post(
            f"/ops/jobq/jobs/{job_id}/requeue",
            data={"csrf": token, "next": "/ops/jobq/dead-letters"},
            follow_redirects=False,
        )
        assert done.headers["location"].startswith("/ops/jobq/dead-letters?notice=")
    assert status_of(dsn, job_id) == "pending"


def test_a_pool_of_the_application_is_used_and_left_open(dsn: str) -> None:
    """Given the application's pool, the dashboard serves from it and leaves it open at its
    shutdown."""
    from psycopg_pool import ConnectionPool

    with ConnectionPool(dsn, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool:
        with TestClient(create_app(pool), base_url="http://127.0.0.1") as c:
            assert c.get("/").status_code == 200
        assert not pool.closed
        with pool.connection() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)


def test_binds_and_credentials_are_parsed_strictly() -> None:
    """--bind takes HOST:PORT with a port in range (IPv6 in brackets), loopback binds are told from
    others, and a credential needs a user and a password."""
    assert parse_bind("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_bind("[::1]:9000") == ("::1", 9000)
    for bad in ("8080", "host:", "host:0", "host:70000", ":80"):
        with pytest.raises(ValueError):
            parse_bind(bad)
    assert is_loopback("localhost") and is_loopback("127.0.0.2") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert not is_loopback("example.com")
    for bad in ("ops", "ops:", ":pw", ""):
        with pytest.raises(ValueError):
            Credentials.parse(bad)
    assert Credentials.parse("ops:a:b") == Credentials("ops", "a:b")


def test_jobq_web_refuses_a_non_local_bind_without_a_credential(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a credential, or with a malformed one or bind, `jobq web` refuses to start
    (usage error, 2) before it connects: the database named here does not exist."""
    dsn = "postgresql://jobq-web-test.invalid/none"
    monkeypatch.delenv("JOBQ_WEB_AUTH", raising=False)
    runner = CliRunner()
    result = runner.invoke(cli, ["web", "--dsn", dsn, "--bind", "0.0.0.0:8080"])
    assert result.exit_code == 2
    assert "--auth USER:PASSWORD" in result.output and "JOBQ_WEB_AUTH" in result.output
    bad = runner.invoke(cli, ["web", "--dsn", dsn, "--bind", "0.0.0.0:8080", "--auth", "ops"])
    assert bad.exit_code == 2 and "USER:PASSWORD" in bad.output
    monkeypatch.setenv("JOBQ_WEB_AUTH", "nocolon")
    env_bad = runner.invoke(cli, ["web", "--dsn", dsn, "--bind", "0.0.0.0:8080"])
    assert env_bad.exit_code == 2 and "JOBQ_WEB_AUTH" in env_bad.output
    wrong_bind = runner.invoke(cli, ["web", "--dsn", dsn, "--bind", "localhost"])
    assert wrong_bind.exit_code == 2 and "HOST:PORT" in wrong_bind.output


def test_a_schema_without_jobq_is_named(dsn: str, empty_dsn: str) -> None:
    """Where jobq is not installed the error page names the schema given, or the connection's
    search_path."""
    with TestClient(create_app(dsn, schema="nowhere"), base_url="http://127.0.0.1") as c:
        page = c.get("/jobs")
        assert page.status_code == 500
        assert "jobq is not installed in schema nowhere" in page.text
    with TestClient(create_app(empty_dsn), base_url="http://127.0.0.1") as c:
        assert "not installed in the connection&#39;s search_path" in c.get("/").text


def test_a_rare_filter_stops_its_search_and_offers_to_search_on(
    dsn: str,
    conn: psycopg.Connection[tuple[object, ...]],
    client: TestClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A filter on finished jobs that matches none of the first scan_limit jobs says how far it
    searched and links to search on from there, which finds the match; the end of the jobs has no
    such link."""
    import jobq_web.views as web_views

    monkeypatch.setattr(web_views, "SCAN_LIMIT", 20)
    # 50 succeeded jobs, newest first: one of queue "rare" at the 35th place
    conn.execute(
        "INSERT INTO jobq_jobs (job_type, queue, status, finished_at) "
        "SELECT 't', CASE WHEN g = 35 THEN 'rare' ELSE 'common' END, 'succeeded', "
        "now() - g * interval '1 second' FROM generate_series(1, 50) AS g"
    )
    first = client.get("/jobs", params={"status": "succeeded", "queue": "rare"})
    assert first.status_code == 200
    assert _ids(first.text) == [] and 'id="no-rows"' not in first.text
    assert "Searched 20 succeeded jobs" in first.text
    further = re.search(r'<a href="([^"]+)" id="search-further"', first.text)
    assert further
    second = client.get(further.group(1).replace("&amp;", "&"))
    (rare,) = conn.execute("SELECT id::text FROM jobq_all_jobs WHERE queue = 'rare'").fetchone()
    assert _ids(second.text) == [rare]
    assert 'id="search-further"' in second.text  # 20 more examined, up to the 40th
    third = client.get(
        re.search(r'<a href="([^"]+)" id="search-further"', second.text)
        .group(1).replace("&amp;", "&")  # type: ignore[union-attr]
    )
    assert _ids(third.text) == [] and 'id="no-rows"' in third.text  # the end: no marker


def test_jobq_web_check_says_what_the_role_may_do_without_serving(
    admin_dsn: str, dsn: str, empty_dsn: str
) -> None:
    """jobq web --check lists, for a monitor, which functions it may call (summary and listing yes,
    requeue and job detail no), and exits 1 where jobq is not installed."""
    runner = CliRunner()
    with login_role(admin_dsn, dsn, "monitor") as monitor_dsn:
        result = runner.invoke(cli, ["web", "--check", "--dsn", monitor_dsn])
    assert result.exit_code == 0, result.output
    lines = dict(line.split() for line in result.output.splitlines()[1:])
    assert lines["jobq_queue_summary"] == "yes" and lines["jobq_jobs_page"] == "yes"
    assert lines["jobq_act_on_jobs"] == "no" and lines["jobq_get_job"] == "no"
    missing = runner.invoke(cli, ["web", "--check", "--dsn", empty_dsn])
    assert missing.exit_code == 1 and "jobq is not installed" in missing.output


# -- the Host and Origin allow-list (DNS rebinding) ---------------------------------------------


def test_a_rebound_host_name_reads_nothing_and_changes_nothing(dsn: str) -> None:
    """A page of evil.example whose name now resolves to 127.0.0.1 sends Host: evil.example
    (and an Origin that matches it): the dashboard refuses it, pages and actions alike, and
    still serves localhost and the names it is given."""
    job_id = dead_letter(dsn)
    app = create_app(dsn, allowed_hosts=["jobq.internal"])
    with TestClient(app, base_url="http://127.0.0.1:8080") as c:
        token = _csrf(c, "/dead-letters")
        rebound = {"Host": "evil.example:8080", "Origin": "http://evil.example:8080"}
        for path in ("/", "/dead-letters", f"/jobs/{job_id}"):
            page = c.get(path, headers={"Host": "evil.example:8080"})
            assert page.status_code == 421, path
            assert str(job_id) not in page.text
        posted = c.post(
            f"/jobs/{job_id}/requeue", data={"csrf": token}, headers=rebound,
            follow_redirects=False,
        )
        assert posted.status_code == 421
        for forged in ("evil.example", "127.0.0.1.evil.example", "localhost.evil", "[::2]:8080",
                       "127.0.0.1:80@evil.example", ""):
            assert c.get("/", headers={"Host": forged}).status_code in (400, 421), forged
        # the right Host but a change asked by another site's page
        for origin in ("http://evil.example:8080", "null", "file://", "http://jobq.internal.evil"):
            refused = c.post(
                f"/jobs/{job_id}/requeue", data={"csrf": token},
                headers={"Origin": origin}, follow_redirects=False,
            )
            assert refused.status_code == 403, origin
        assert status_of(dsn, job_id) == "dead_letter"  # nothing was done

        for host in ("localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST",
                     "jobq.internal"):
            assert c.get("/", headers={"Host": host}).status_code == 200, host
        done = c.post(
            f"/jobs/{job_id}/requeue",
            data={"csrf": token, "next": "/dead-letters"},
            headers={"Host": "jobq.internal", "Origin": "http://jobq.internal"},
            follow_redirects=False,
        )
        assert done.status_code == 303
        assert status_of(dsn, job_id) == "pending"


def test_jobq_web_answers_to_its_bind_address_and_allowed_hosts(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jobq web answers to its --bind address, each --allowed-host and localhost, and refuses any
    other Host (421)."""
    import uvicorn

    import jobq_web.serve as serve

    served: list[Starlette] = []
    monkeypatch.setattr(serve, "_listen", lambda host, port: None)  # 10.1.2.3 is not this host's
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, **_: served.append(self.config.app))
    monkeypatch.setenv("JOBQ_WEB_AUTH", "ops:s3cret")
    result = CliRunner().invoke(cli, [
        "--dsn", dsn, "web", "--bind", "10.1.2.3:8080", "--allowed-host", "jobq.example",
        "--allowed-host", "ops.example",
    ])
    assert result.exit_code == 0, result.output
    auth = {"Authorization": "Basic " + base64.b64encode(b"ops:s3cret").decode()}
    with TestClient(served[0], base_url="http://127.0.0.1") as c:
        for host in ("10.1.2.3:8080", "jobq.example", "ops.example:8080", "localhost"):
            assert c.get("/", headers={**auth, "Host": host}).status_code == 200, host
        assert c.get("/", headers={**auth, "Host": "evil.example"}).status_code == 421
