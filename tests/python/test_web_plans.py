"""No page of the dashboard scans jobq_jobs: with a million finished jobs, the plan of every
statement its pages run (the jobq functions' own statements included, logged by auto_explain)
reads indexes only. Plans, not timings: the timings with ten million rows are measured by hand
(docs/dashboard.md)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg_pool import ConnectionPool
from starlette.testclient import TestClient
from tests.helpers import insert_jobs

from jobq_web import create_app

pytestmark = pytest.mark.slow  # a million finished jobs

FINISHED_ROWS = 1_000_000


@pytest.fixture
def big_dsn(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as c:
        insert_jobs(
            c,
            "INSERT INTO jobq_jobs (job_type, queue, status, attempts, finished_at, created_at, "
            "updated_at, available_at) "
            "SELECT 't' || (g % 7), 'q' || (g % 5), 'succeeded', 1, "
            "now() - g * interval '1 second', now() - g * interval '1 second', "
            "now() - g * interval '1 second', now() - g * interval '1 second' "
            f"FROM generate_series(1, {FINISHED_ROWS}) AS g",
        )
        insert_jobs(
            c,
            "INSERT INTO jobq_jobs (job_type, queue, status, attempts, finished_at, last_error) "
            "SELECT 't' || (g % 7), 'q' || (g % 5), s, 5, now() - g * interval '1 second', 'boom' "
            "FROM generate_series(1, 1000) AS g, "
            "unnest(ARRAY['failed', 'dead_letter', 'cancelled']) AS s",
        )
        c.execute(
            "INSERT INTO jobq_jobs (job_type, queue, available_at, scheduled) "
            "SELECT 't' || (g % 7), 'q' || (g % 5), now() + (g % 2) * interval '1 hour', g % 2 = 1 "
            "FROM generate_series(1, 600) AS g"
        )
        c.execute(
            "INSERT INTO jobq_jobs (job_type, queue, limit_group) "
            "SELECT 't2', 'q2', 'api' FROM generate_series(1, 100)"
        )
        c.execute(
            "INSERT INTO jobq_jobs (job_type, queue, status, attempts, locked_at, locked_by, "
            "locked_until) "
            "SELECT 't1', 'q1', 'processing', 1, now(), 'w', now() + interval '5 min' "
            "FROM generate_series(1, 50)"
        )
        c.execute("SELECT jobq_schedule('nightly', '0 3 * * *', 't1')")
        c.execute("VACUUM ANALYZE jobq_jobs")
        c.execute("VACUUM ANALYZE jobq_jobs_history")
    return dsn


@pytest.fixture
def explained(
    big_dsn: str,
) -> Iterator[tuple[TestClient, list[str], Callable[[], None]]]:
    """A dashboard whose connections log the plan of every statement (nested ones too) as a
    notice, collected in the list; and a call that makes every connection from then on plan
    generically (plan_cache_mode = force_generic_plan)."""
    plans: list[str] = []
    generic = False

    def configure(conn: psycopg.Connection[tuple[object, ...]]) -> None:
        conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
        for statement in (
            "LOAD 'auto_explain'",
            "SET auto_explain.log_min_duration = 0",
            "SET auto_explain.log_nested_statements = on",
            "SET auto_explain.log_level = 'notice'",
            "SET client_min_messages = 'notice'",
        ):
            conn.execute(statement)
        if generic:
            conn.execute("SET plan_cache_mode = force_generic_plan")

    with ConnectionPool(
        big_dsn, min_size=1, max_size=2, kwargs={"autocommit": True}, configure=configure
    ) as pool, TestClient(create_app(pool), base_url="http://127.0.0.1") as client:

        def plan_generically() -> None:
            nonlocal generic
            generic = True
            pool.drain()  # the connections made from now on are configured so
            with pool.connection() as conn:
                assert conn.execute("SHOW plan_cache_mode").fetchone() == ("force_generic_plan",)

        yield client, plans, plan_generically


@pytest.mark.long(60)  # a million rows to write and analyze
def test_no_page_scans_jobq_jobs_with_a_million_finished_jobs(
    explained: tuple[TestClient, list[str], Callable[[], None]],
) -> None:
    """With a million finished jobs, every page (filters, next pages and job pages included, with
    custom plans and with generic ones) reads jobq_jobs through the index of each status and
    never with a sequential scan, the functions' own statements included."""
    client, plans, plan_generically = explained
    pages = ["/", "/?partial=1", "/dead-letters", "/dead-letters?queue=q1", "/schedules",
             "/limits", "/workers", "/audit", "/find?search=1", "/find?queue=q3&job_type=t3",
             "/find?idempotency_key=k1", "/find?status=failed&finished_after=1h"]
    for status in ("pending", "processing", "succeeded", "failed", "dead_letter", "cancelled"):
        pages += [
            f"/jobs?status={status}",
            f"/jobs?status={status}&queue=q2",
            f"/jobs?status={status}&queue=q3&job_type=t3",
        ]
    visited = 0
    # First with the plans PostgreSQL chooses, then with generic plans forced: PL/pgSQL may
    # switch a statement to its generic plan after five calls, and forcing it checks every
    # statement's generic plan whatever the costs decide.
    for generic in (False, True):
        if generic:
            plan_generically()
        for page in pages:
            response = client.get(page)
            assert response.status_code == 200, (page, response.text)
            visited += 1
            found = re.search(r'<a href="([^"]+)" id="next-page"', response.text)
            if found:  # the next page, as the link gives it
                deeper = client.get(found.group(1).replace("&amp;", "&"))
                assert deeper.status_code == 200
                ids = re.findall(r'<tr data-id="([0-9a-f-]+)">', deeper.text)
                assert ids
                detail = client.get(f"/jobs/{ids[0]}")
                assert detail.status_code == 200 and 'id="job-status"' in detail.text
    assert visited == 2 * len(pages)

    plan_texts = [p for p in plans if "Query Text:" in p or "plan:" in p or "Scan" in p]
    assert plan_texts, "auto_explain logged no plan"
    # the functions' inner statements were explained, through the indexes of each status
    joined = "\n".join(plans)
    for index in (
        "finished_at_id_idx",  # the partitions of jobq_jobs_history, for finished jobs
        "jobq_jobs_claim_idx",
        "jobq_jobs_limited_idx",
        "jobq_jobs_locked_until_idx",
        "jobq_jobs_pkey",
    ):
        assert index in joined, f"no plan used {index}"
    scans = [p for p in plans if re.search(r"Seq Scan on jobq_jobs\b", p)]
    assert scans == [], scans[0]
