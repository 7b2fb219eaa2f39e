"""Metrics kept by the database, from the client's side.

What each counter counts, rollbacks, prune, takeovers, cancels and the histograms' shape are in
tests/pgtap/metrics.sql. Here: what one session cannot show (concurrent sessions counting at
once, exactly, without waiting for one another; a read that does not grow with finished
jobs), ``Queue.metrics`` and ``AsyncQueue.metrics``, ``jobq metrics`` and its ``--serve``
endpoint parsed with prometheus_client's own text parser, the monitor level, and the Grafana
dashboard and alert rules shipped in docs/ (every metric they name is one jobq exports).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from click.testing import CliRunner, Result
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb
from tests.helpers import insert_jobs

from jobq_cli import cli
from pgq_client import AsyncQueue, MetricSample, PermissionDenied, Queue, grants
from pgq_client.metrics import HELP, families
from pgq_client.migrate import migrate

ROOT = Path(__file__).resolve().parents[2]
Conn = psycopg.Connection[Any]


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a Prometheus text exposition, parsed by prometheus_client."""
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            assert isinstance(s, Sample)
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return (name, frozenset(labels.items()))


def value(q: Queue, metric: str, **labels: str) -> float | None:
    found = [s.value for s in q.metrics() if s.metric == metric and s.labels == labels]
    return found[0] if found else None


@pytest.fixture
def dsn(dsn: str) -> str:
    """The test database with counting on (a new installation starts with it off)."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT jobq_configure(metrics => true)")
    return dsn


@pytest.fixture
def some_work(dsn: str) -> None:
    """3 jobs of ocr enqueued in queue q: one succeeded, one failed for good, one pending."""
    with Queue(dsn) as q:
        ids = [q.enqueue("ocr", {"n": i}, queue="q") for i in range(3)]
        claimed = {j.id for j in q.dequeue("w", batch_size=2)}
        done, failed = sorted(claimed, key=ids.index)
        assert q.complete(done, "w")
        assert q.fail(failed, "w", "bad input", retry=False) == "failed"


# -- the SQL function under concurrency ---------------------------------------------------------


def test_concurrent_sessions_count_exactly(dsn: str) -> None:
    """8 producers and then 8 workers at once, each its own session: every counter and the
    gauge come out exact."""
    producers, per = 8, 60
    barrier = threading.Barrier(producers)

    def produce(i: int) -> None:
        with Queue(dsn) as q:
            barrier.wait()
            for n in range(per // 2):
                q.enqueue("t", {"i": i, "n": n}, queue="c")
            q.enqueue_many([{"job_type": "t", "queue": "c"}] * (per // 2))

    def consume(i: int) -> None:
        with Queue(dsn) as q:
            barrier.wait()
            while jobs := q.dequeue(f"w{i}", batch_size=7, queues=["c"]):
                q.complete_many([j.id for j in jobs], f"w{i}")

    for work in (produce, consume):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(producers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    total = float(producers * per)
    with Queue(dsn) as q:
        for metric in ("jobq_enqueued_total", "jobq_started_total", "jobq_succeeded_total",
                       "jobq_wait_seconds_count", "jobq_run_seconds_count"):
            assert value(q, metric, queue="c", job_type="t") == total, metric
        assert value(q, "jobq_jobs", queue="c", status="succeeded") == total
        assert value(q, "jobq_jobs", queue="c", status="pending") == 0.0


def test_counting_never_waits_for_another_sessions_transaction(dsn: str, conn: Conn) -> None:
    """A producer that enqueued inside a transaction it keeps open holds its own counter row
    only: another session enqueuing, claiming and completing jobs of the same queue and type
    never waits for it (lock_timeout turns a wait into an error instead of a hang)."""
    with psycopg.connect(dsn) as holder:
        holder.execute("SELECT jobq_enqueue('same', queue => 'x')")  # transaction left open
        conn.execute("SET lock_timeout = '30s'")
        conn.execute("SELECT jobq_enqueue('same', queue => 'x')")
        claimed = conn.execute("SELECT id FROM jobq_dequeue('w', batch_size => 1)").fetchone()
        assert claimed is not None
        job_id = claimed[0]
        assert conn.execute("SELECT jobq_complete(%s, 'w')", (job_id,)).fetchone() == (True,)
        row = conn.execute(
            "SELECT value FROM jobq_metrics() WHERE metric = 'jobq_enqueued_total' "
            "AND labels = '{\"queue\": \"x\", \"job_type\": \"same\"}'"
        ).fetchone()
        assert row == (1.0,), "the open transaction's enqueue is not counted before it commits"
        holder.commit()
    row = conn.execute(
        "SELECT value FROM jobq_metrics() WHERE metric = 'jobq_enqueued_total' "
        "AND labels = '{\"queue\": \"x\", \"job_type\": \"same\"}'"
    ).fetchone()
    assert row == (2.0,)


def _metrics_buffers(c: Conn) -> int:
    """Buffers one read of jobq_metrics() touches (nested statements included), after one
    read to fold and warm up."""
    c.execute("SELECT * FROM jobq_metrics()").fetchall()
    row = c.execute(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM jobq_metrics()"
    ).fetchone()
    assert row is not None
    plan = row[0][0]["Plan"]
    return int(plan["Shared Hit Blocks"]) + int(plan["Shared Read Blocks"])


@pytest.mark.slow
def test_reading_metrics_does_not_grow_with_finished_jobs(dsn: str, conn: Conn) -> None:
    """jobq_metrics() reads the counters and a few index probes, never jobq_jobs or the history
    row by row: once the pending jobs' indexes are a few levels deep (20,000 of them), twice as
    many pending jobs, then 200,000 finished jobs change what it reads by no more than another
    index level costs."""
    with Queue(dsn) as q:
        for queue in ("a", "b", "c"):
            q.enqueue("t", queue=queue)
            q.enqueue("u", queue=queue, priority=5)
    pending = """INSERT INTO jobq_jobs (job_type, queue, available_at)
           SELECT 't', (ARRAY['a', 'b', 'c'])[1 + g % 3], now() - g * interval '1 ms'
           FROM generate_series(1, 20000) AS g"""
    conn.execute(pending)
    conn.execute("VACUUM ANALYZE jobq_jobs")
    before = _metrics_buffers(conn)
    conn.execute(pending)
    insert_jobs(
        conn,
        """INSERT INTO jobq_jobs (job_type, queue, status, attempts, finished_at)
           SELECT 't', (ARRAY['a', 'b', 'c'])[1 + g % 3],
                  (ARRAY['succeeded', 'failed', 'dead_letter', 'cancelled'])[1 + g % 4], 1,
                  now() - g * interval '1 second'
           FROM generate_series(1, 200000) AS g""",
    )
    conn.execute("VACUUM ANALYZE")
    after = _metrics_buffers(conn)
    print(f"jobq_metrics() buffers: {before} before, {after} with 220,000 more rows")
    assert after <= before + 30, (before, after)


# -- Queue.metrics, AsyncQueue.metrics, configure -----------------------------------------------


def test_queue_metrics_returns_the_samples(dsn: str, some_work: None) -> None:
    with Queue(dsn) as q:
        rows = q.metrics()
        assert all(isinstance(r, MetricSample) for r in rows)
        assert value(q, "jobq_enqueued_total", queue="q", job_type="ocr") == 3.0
        assert value(q, "jobq_succeeded_total", queue="q", job_type="ocr") == 1.0
        assert value(q, "jobq_failed_total", queue="q", job_type="ocr") == 1.0
        assert value(q, "jobq_jobs", queue="q", status="failed") == 1.0
        assert value(q, "jobq_run_seconds_bucket", queue="q", job_type="ocr", le="+Inf") == 2.0


async def test_async_queue_metrics_and_configure(dsn: str, some_work: None) -> None:
    async with AsyncQueue(dsn) as q:
        rows = await q.metrics()
        assert MetricSample("jobq_started_total", {"queue": "q", "job_type": "ocr"}, 2.0) in rows
        assert (await q.configure(metrics=False))["metrics"] is False
        await q.enqueue("ocr", queue="q")
        rows = await q.metrics()
        assert MetricSample("jobq_enqueued_total", {"queue": "q", "job_type": "ocr"}, 3.0) in rows
        assert (await q.configure(metrics=True))["metrics"] is True
        rows = await q.metrics()
        assert MetricSample("jobq_jobs", {"queue": "q", "status": "pending"}, 2.0) in rows


def test_configure_metrics_off_and_on_and_bad_values(dsn: str) -> None:
    with Queue(dsn) as q:
        assert q.configure() == {
            "max_payload_bytes": 1048576, "metrics": True, "metrics_label_sets": 1000
        }
        assert q.configure(metrics=False)["metrics"] is False
        q.enqueue("t")
        assert value(q, "jobq_enqueued_total", queue="default", job_type="t") is None
        assert q.configure(metrics=True)["metrics"] is True
        assert value(q, "jobq_jobs", queue="default", status="pending") == 1.0, "recounted"
        assert q.configure(max_payload_bytes=2048) == {
            "max_payload_bytes": 2048, "metrics": True, "metrics_label_sets": 1000
        }
        with pytest.raises(TypeError, match="metrics must be True, False or None"):
            q.configure(metrics="no")  # type: ignore[arg-type]
        assert q.configure()["metrics"] is True


def test_a_new_installation_does_not_count_until_turned_on(empty_dsn: str) -> None:
    """Counting costs a write in every counted call, so it is a choice: off on a new
    installation, which jobq_metrics() and `jobq metrics` say; on after jobq_configure."""
    migrate(empty_dsn)
    with Queue(empty_dsn) as q:
        assert q.configure()["metrics"] is False
        q.enqueue("t")
        assert value(q, "jobq_metrics_counting") == 0.0
        assert value(q, "jobq_enqueued_total", queue="default", job_type="t") is None
        assert value(q, "jobq_jobs", queue="default", status="pending") is None
    result = run("metrics", "--dsn", empty_dsn)
    assert result.exit_code == 0, result.output
    assert samples(result.stdout)[key("jobq_metrics_counting")] == 0.0
    assert "counting is off" in result.stderr and "jobq configure --metrics" in result.stderr
    result = run("configure", "--metrics", "--json", "--dsn", empty_dsn)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["metrics"] is True
    with Queue(empty_dsn) as q:
        assert value(q, "jobq_metrics_counting") == 1.0
        assert value(q, "jobq_jobs", queue="default", status="pending") == 1.0, "recounted"
        q.enqueue("t")
        assert value(q, "jobq_enqueued_total", queue="default", job_type="t") == 1.0
    result = run("metrics", "--dsn", empty_dsn)
    assert result.exit_code == 0 and "counting is off" not in result.stderr


# -- the command line ---------------------------------------------------------------------------


def test_cli_prints_the_prometheus_text_format(dsn: str, some_work: None) -> None:
    result = run("metrics", "--dsn", dsn)
    assert result.exit_code == 0, result.output
    got = samples(result.stdout)
    assert got[key("jobq_up")] == 1.0
    assert got[key("jobq_enqueued_total", queue="q", job_type="ocr")] == 3.0
    assert got[key("jobq_started_total", queue="q", job_type="ocr")] == 2.0
    assert got[key("jobq_jobs", queue="q", status="pending")] == 1.0
    assert got[key("jobq_wait_seconds_count", queue="q", job_type="ocr")] == 2.0
    assert got[key("jobq_run_seconds_bucket", queue="q", job_type="ocr", le="+Inf")] == 2.0
    types = {f.name: f.type for f in text_string_to_metric_families(result.stdout)}
    assert types["jobq_enqueued"] == "counter"
    assert types["jobq_jobs"] == "gauge"
    assert types["jobq_oldest_available_age_seconds"] == "gauge"
    assert types["jobq_wait_seconds"] == "histogram"
    assert types["jobq_run_seconds"] == "histogram"
    assert set(types) <= set(HELP), "every family has its help text"


def test_families_group_every_row_of_the_function(dsn: str, some_work: None) -> None:
    """Nothing jobq_metrics() returns is dropped on the way to the text format."""
    with Queue(dsn) as q:
        rows = q.metrics()
    exposed = {
        (s.name, frozenset(s.labels.items())) for f in families(rows) for s in f.samples
    }
    assert {(r.metric, frozenset(r.labels.items())) for r in rows} == exposed


def _serve(dsn: str, address: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "JOBQ_DSN": dsn}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgq_client", "metrics", "--serve", address],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"serving metrics at (http://\S+/metrics)", line)
        if found:
            return proc, found.group(1)
    proc.wait()
    raise AssertionError(f"no address announced; exit {proc.returncode}")


def _get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.status, response.headers["Content-Type"], response.read().decode()


@pytest.fixture
def served(dsn: str) -> Iterator[str]:
    proc, url = _serve(dsn, "127.0.0.1:0")
    yield url
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0


def test_serve_answers_each_scrape_with_what_the_database_has_now(
    dsn: str, some_work: None, served: str
) -> None:
    status, content_type, body = _get(served)
    assert status == 200
    assert content_type.startswith("text/plain")
    assert samples(body)[key("jobq_enqueued_total", queue="q", job_type="ocr")] == 3.0
    with Queue(dsn) as q:
        q.enqueue("ocr", queue="q")
    _, _, body = _get(served)
    got = samples(body)
    assert got[key("jobq_enqueued_total", queue="q", job_type="ocr")] == 4.0
    assert got[key("jobq_up")] == 1.0


def test_serve_says_jobq_up_0_when_the_database_cannot_be_read(
    dsn: str, admin_dsn: str, role: str
) -> None:
    grants.grant(dsn, role, "monitor")
    proc, url = _serve(make_conninfo(dsn, user=role), "127.0.0.1:0")
    try:
        assert samples(_get(url)[2])[key("jobq_up")] == 1.0
        grants.revoke(dsn, role)
        got = samples(_get(url)[2])
        assert got[key("jobq_up")] == 0.0
        assert not any(name.startswith("jobq_enqueued") for name, _ in got)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert proc.stderr is not None
        assert "permission denied" in proc.stderr.read()


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("localhost", "'localhost' has no port: give HOST:PORT"),
        ("127.0.0.1:http", "the port must be a number, got 'http'"),
        ("127.0.0.1:65536", "the port must be 0..65535, got 65536"),
        ("::1:9187", "write an IPv6 address in brackets"),
        ("127.0.0.1:-1", "the port must be a number, got '-1'"),
    ],
)
def test_serve_refuses_a_bad_address(dsn: str, address: str, message: str) -> None:
    result = run("metrics", "--dsn", dsn, "--serve", address)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_serve_says_why_it_cannot_listen(dsn: str, served: str) -> None:
    busy = re.search(r"//([^/]+)/", served)
    assert busy
    result = run("metrics", "--dsn", dsn, "--serve", busy.group(1))
    assert result.exit_code == 1, result.output
    assert f"cannot listen on {busy.group(1)}" in result.output


# -- the monitor level --------------------------------------------------------------------------


def test_a_monitor_reads_metrics_and_cannot_enqueue_or_claim(
    dsn: str, role: str, some_work: None
) -> None:
    assert run("--dsn", dsn, "grant", role, "--as", "monitor").exit_code == 0
    monitor = make_conninfo(dsn, user=role)
    result = run("metrics", "--dsn", monitor)
    assert result.exit_code == 0, result.output
    assert samples(result.stdout)[key("jobq_enqueued_total", queue="q", job_type="ocr")] == 3.0
    with Queue(monitor) as q:
        for denied in (lambda: q.enqueue("t"), lambda: q.dequeue("w"),
                       lambda: q.configure(metrics=False), lambda: q.prune()):
            with pytest.raises(PermissionDenied) as caught:
                denied()
            assert caught.value.sqlstate == "42501"
    with Queue(dsn) as q:
        assert value(q, "jobq_enqueued_total", queue="q", job_type="ocr") == 3.0
        assert q.configure()["metrics"] is True


# -- what docs/ ships ---------------------------------------------------------------------------

# Every name a PromQL expression may use from jobq: the families and their samples.
EXPORTED = {
    name + suffix
    for name in HELP
    for suffix in ("", "_total", "_bucket", "_sum", "_count")
}
PROMQL_NAME = re.compile(r"\bjobq_[a-z_]+\b")


def test_alert_rules_parse_and_name_only_metrics_jobq_exports() -> None:
    rules = yaml.safe_load((ROOT / "docs" / "prometheus" / "jobq-alerts.yml").read_text())
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    assert {"JobqBacklogGrowing", "JobqOldestJobTooOld", "JobqDeadLetters"} <= {
        a["alert"] for a in alerts
    }
    for alert in alerts:
        assert set(alert) >= {"alert", "expr", "labels", "annotations"}, alert
        names = set(PROMQL_NAME.findall(alert["expr"]))
        assert names, alert["expr"]
        assert names <= EXPORTED, (alert["alert"], names - EXPORTED)


def test_grafana_dashboard_parses_and_names_only_metrics_jobq_exports() -> None:
    dashboard = json.loads((ROOT / "docs" / "grafana" / "jobq.json").read_text())
    exprs = [
        t["expr"] for p in dashboard["panels"] for t in p.get("targets", []) if "expr" in t
    ]
    assert len(exprs) >= 6
    used: set[str] = set()
    for expr in exprs:
        names = set(PROMQL_NAME.findall(expr))
        assert names, expr
        assert names <= EXPORTED, (expr, names - EXPORTED)
        used |= names
    assert {"jobq_jobs", "jobq_oldest_available_age_seconds", "jobq_wait_seconds_bucket",
            "jobq_run_seconds_bucket", "jobq_dead_lettered_total"} <= used


# -- a bounded label space -------------------------------------------------------------------


@pytest.mark.slow
def test_twenty_thousand_queue_names_leave_a_bounded_scrape_until_forgotten(dsn: str) -> None:
    """One enqueue_many of 20,000 queue names (315 MB of scrape before the bound) leaves at
    most 1,000 label sets plus the overflow one, every job counted once; once the jobs are
    gone, jobq_metrics_forget() removes them all."""
    jobs = [{"job_type": "flood", "queue": f"q{i:05}"} for i in range(20_000)]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT jobq_configure(metrics => true)")
        c.execute("SELECT count(*) FROM jobq_enqueue_many(%s)", [Jsonb(jobs)])
        rows = c.execute("SELECT metric, labels, value FROM jobq_metrics()").fetchall()
        per_type = {(lb["queue"], lb["job_type"]) for _, lb, _ in rows if "job_type" in lb}
        assert len(per_type) == 1_001 and ("", "") in per_type
        assert len({lb["queue"] for _, lb, _ in rows if "queue" in lb}) == 1_001
        assert sum(v for m, _, v in rows if m == "jobq_enqueued_total") == 20_000
        overflow = {"queue": "", "job_type": ""}
        assert [v for m, lb, v in rows if m == "jobq_enqueued_total" and lb == overflow] == [
            19_000.0
        ]
    result = run("metrics", "--dsn", dsn)
    assert result.exit_code == 0, result.output
    assert len(result.stdout) < 8_000_000, "a scrape of bounded size"
    assert len(samples(result.stdout)) == len(rows) + 1  # and jobq_up
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("DELETE FROM jobq_jobs")
        assert c.execute("SELECT jobq_metrics_forget()").fetchone() == (1_001,)
        assert c.execute("SELECT metric FROM jobq_metrics()").fetchall() == [
            ("jobq_metrics_counting",)
        ]
        assert c.execute("SELECT count(*) FROM jobq_metric_labels").fetchone() == (0,)
