"""jobq on a real Citus cluster: a coordinator and two worker nodes (`make test-citus`).

Eight tenants, each installed by `jobq migrate --schema tenant_N` on the coordinator, each a
distributed schema that lives whole on one node. The pgTAP suite of the SQL API runs for every
tenant on its node; a Python Worker per tenant drains 20,000 jobs; a node restarted mid-drain
loses no job; a tenant moved to the other node while producers and workers run loses no job
and runs none twice. The features on a tenant: concurrency and rate limits under a Worker, the
bulk enqueues (arrays, enqueue_many, enqueue_iter), jobq_metrics(), the dashboard's functions
and pages, and an older single-node install upgraded and distributed. Figures are printed
(`-s`), never asserted (docs/scaling.md has them).
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgq_client import Job, Queue, Worker
from pgq_client.migrate import function_drift, migrate

ROOT = Path(__file__).resolve().parents[2]
TENANTS = [f"tenant_{i}" for i in range(1, 9)]
DRAIN_JOBS = int(os.environ.get("JOBQ_CITUS_DRAIN_JOBS", "20000"))

# pgTAP files that check the install in schema public itself (lookalikes.sql plants its
# look-alikes there), create roles or functions (which Citus allows only on the coordinator),
# or run plpgsql_check over public: they run in `make test`. Every other file tests the
# functions' documented behaviour and runs for every tenant.
INSTALL_ONLY = {"api_surface.sql", "comments.sql", "privileges.sql", "shadowing.sql",
                "plpgsql_check.sql", "lookalikes.sql"}
# Files whose subject Citus does not have as PostgreSQL has it (docs/scaling.md, "Limits on
# Citus"): the claim's marks under a held horizon count the entries a scan passed in the
# statistics of jobq_jobs_claim_idx, which on a node are the shard index's, never the one the
# function names (the marks stay off: claims stay right, not that optimisation); and Citus
# makes the NOT VALID CHECK constraints of jobq_jobs valid on the node's tables.
NOT_ON_CITUS = {"dequeue_marks.sql", "statuses.sql"}


@dataclass(frozen=True)
class Cluster:
    dsn: str
    worker_ports: list[int]
    directory: str

    def node_dsn(self, port: int) -> str:
        return psycopg.conninfo.make_conninfo(self.dsn, port=str(port))

    def restart(self, node: str) -> None:
        subprocess.run([str(ROOT / "scripts" / "citus.sh"), "restart", self.directory, node],
                       check=True)


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    dsn = os.environ.get("JOBQ_CITUS_DSN")
    if not dsn:
        pytest.exit("JOBQ_CITUS_DSN is not set: run these tests with `make test-citus`, which "
                    "builds Citus and starts a cluster", returncode=2)
    ports = [int(p) for p in os.environ["JOBQ_CITUS_WORKER_PORTS"].split()]
    return Cluster(dsn, ports, os.environ["JOBQ_CITUS_DIR"])


def placement(conn: psycopg.Connection[Any], schema: str) -> int:
    """The port of the node that holds ``schema``'s jobq_jobs."""
    row = conn.execute(
        "SELECT n.nodeport FROM pg_dist_shard AS s JOIN pg_dist_placement AS p USING (shardid)"
        " JOIN pg_dist_node AS n USING (groupid)"
        " WHERE s.logicalrelid = pg_catalog.to_regclass(%(t)s::text)",
        {"t": f"{schema}.jobq_jobs"},
    ).fetchone()
    assert row is not None, f"{schema}.jobq_jobs has no placement"
    return int(row[0])


@pytest.fixture(scope="session")
def tenants(cluster: Cluster) -> list[str]:
    """tenant_1 .. tenant_8, freshly installed (a schema left by an earlier run is dropped)."""
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        for schema in TENANTS:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        # pgTAP for the suite, in a schema of the coordinator (not distributed): CREATE
        # EXTENSION is propagated to the nodes.
        conn.execute("SET citus.enable_schema_based_sharding = off")
        conn.execute("CREATE SCHEMA IF NOT EXISTS tap")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgtap SCHEMA tap")
    for schema in TENANTS:
        migrate(cluster.dsn, schema)
    return TENANTS


def needs_two_nodes(cluster: Cluster) -> None:
    if len(cluster.worker_ports) < 2:
        pytest.skip("needs two worker nodes (JOBQ_CITUS_NODES=1 started one)")


def test_every_tenant_is_a_distributed_schema_on_one_node_spread_over_both_nodes(
    cluster: Cluster, tenants: list[str]
) -> None:
    needs_two_nodes(cluster)
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        distributed = {
            r[0] for r in conn.execute("SELECT schemaid::regnamespace::text FROM pg_dist_schema")
        }
        assert set(tenants) <= distributed
        nodes = set()
        for schema in tenants:
            ports = {
                r[0] for r in conn.execute(
                    "SELECT DISTINCT n.nodeport FROM pg_dist_shard AS s"
                    " JOIN pg_dist_placement AS p USING (shardid)"
                    " JOIN pg_dist_node AS n USING (groupid)"
                    " WHERE s.logicalrelid::regclass::text LIKE %(p)s",
                    {"p": f"{schema}.%"},
                )
            }
            assert len(ports) == 1, f"{schema}'s tables are on one node, not {ports}"
            nodes |= ports
            functions, colocated = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE o.colocationid IS NOT NULL)"
                " FROM pg_proc AS p LEFT JOIN pg_dist_object AS o"
                "   ON o.classid = 'pg_proc'::regclass AND o.objid = p.oid"
                " WHERE p.pronamespace = %(s)s::text::regnamespace",
                {"s": schema},
            ).fetchone() or (0, 0)
            assert functions > 40 and colocated == functions, (
                f"{schema}: every function is delegated to the schema's node"
            )
        assert nodes == set(cluster.worker_ports), "the tenants spread over both nodes"


def pgtap_files() -> list[Path]:
    return sorted(p for p in (ROOT / "tests" / "pgtap").glob("*.sql")
                  if p.name not in INSTALL_ONLY | NOT_ON_CITUS)


@pytest.mark.parametrize("schema", TENANTS)
def test_the_pgtap_suite_passes_for_every_tenant_on_its_node(
    cluster: Cluster, tenants: list[str], schema: str
) -> None:
    """On the node, where the functions run when called from the coordinator: each statement
    is planned by Citus there (its rules on distributed tables apply) and executed locally, so
    pgTAP's own session state is seen by its assertions."""
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        port = placement(conn, schema)
    node = cluster.node_dsn(port)
    env = dict(os.environ)
    # A test that calls a jobq function from a query over jobq_jobs nests a distributed
    # query in one that runs on the shard (allowed here: the shard is this node's); tests that
    # create a temporary function or trigger do so on this node only.
    env["PGOPTIONS"] = (f"-c search_path={schema},tap"
                        " -c citus.allow_nested_distributed_execution=on"
                        " -c citus.enable_ddl_propagation=off")
    result = subprocess.run(
        ["pg_prove", "--failures", "--dbname", node.replace("=", "\\="),
         *map(str, pgtap_files())],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "Result: PASS" in result.stdout


@dataclass
class Ledger:
    """Every start of a handler, per job id (a second start of one job shows here)."""

    starts: Counter[str]
    lock: threading.Lock

    @classmethod
    def new(cls) -> Ledger:
        return cls(Counter(), threading.Lock())

    def handler(self) -> Callable[[Job], None]:
        def run(job: Job) -> None:
            with self.lock:
                self.starts[str(job.id)] += 1
        return run


def enqueue(dsn: str, schema: str, n: int, job_type: str = "t") -> list[str]:
    q = Queue(dsn, schema=schema)
    ids: list[str] = []
    for start in range(0, n, 1000):
        batch = range(start, min(n, start + 1000))
        jobs = [{"job_type": job_type, "payload": {"i": i}} for i in batch]
        ids += map(str, q.enqueue_many(jobs))
    return ids


def counts(dsn: str, schema: str) -> dict[str, int]:
    """Jobs per status, live and finished (finished ones are in the history)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return dict(conn.execute(
            f"SELECT status, count(*)::int FROM {schema}.jobq_all_jobs GROUP BY status"
        ).fetchall())


def reset(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DELETE FROM {schema}.jobq_jobs")
        conn.execute(f"DELETE FROM {schema}.jobq_jobs_history")


def test_a_worker_per_tenant_drains_20000_jobs_each_once(
    cluster: Cluster, tenants: list[str]
) -> None:
    ledgers = {schema: Ledger.new() for schema in tenants}
    ids = {}
    for schema in tenants:
        reset(cluster.dsn, schema)
        ids[schema] = enqueue(cluster.dsn, schema, DRAIN_JOBS)
    workers = [
        Worker(cluster.dsn, handlers={"t": ledgers[s].handler()}, concurrency=4, schema=s)
        for s in tenants
    ]
    threads = [threading.Thread(target=w.run, kwargs={"burst": True}) for w in workers]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    elapsed = time.perf_counter() - started
    total = sum(len(v) for v in ids.values())
    print(f"\n{len(tenants)} tenants x {DRAIN_JOBS} jobs drained on "
          f"{len(cluster.worker_ports)} worker node(s) in {elapsed:.1f} s: "
          f"{total / elapsed:,.0f} jobs/s in total, {DRAIN_JOBS / elapsed:,.0f} per tenant")
    for schema in tenants:
        assert counts(cluster.dsn, schema) == {"succeeded": DRAIN_JOBS}, schema
        starts = ledgers[schema].starts
        assert set(starts) == set(ids[schema]), f"{schema}: every job ran"
        assert max(starts.values()) == 1, f"{schema}: no job ran twice"


def run_until_all_succeeded(worker: Worker, dsn: str, schema: str, n: int,
                            during: Callable[[], None], timeout: float = 300) -> float:
    """Runs ``worker`` in a thread, calls ``during()`` in this one, and stops the worker when
    all ``n`` jobs of ``schema`` have succeeded (or after ``timeout``); returns the time."""
    thread = threading.Thread(target=worker.run)
    started = time.perf_counter()
    thread.start()
    try:
        during()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if counts(dsn, schema).get("succeeded", 0) == n:
                    break
            except psycopg.OperationalError:
                pass  # a node restarting
            time.sleep(0.5)
    finally:
        worker.stop()
        thread.join(60)
    return time.perf_counter() - started


def wait_for(condition: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_worker_node_restarted_mid_drain_loses_no_job(
    cluster: Cluster, tenants: list[str]
) -> None:
    schema = tenants[0]
    reset(cluster.dsn, schema)
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        port = placement(conn, schema)
    node = f"worker{cluster.worker_ports.index(port) + 1}"
    ids = enqueue(cluster.dsn, schema, DRAIN_JOBS)
    ledger = Ledger.new()
    # A claim whose completion was lost with the node comes back after lock_timeout.
    worker = Worker(cluster.dsn, handlers={"t": ledger.handler()}, concurrency=4, schema=schema,
                    lock_timeout=timedelta(seconds=5))

    def restart_mid_drain() -> None:
        wait_for(lambda: len(ledger.starts) >= DRAIN_JOBS // 4)
        cluster.restart(node)

    elapsed = run_until_all_succeeded(worker, cluster.dsn, schema, DRAIN_JOBS, restart_mid_drain)
    print(f"\nnode {node} restarted mid-drain: {DRAIN_JOBS} jobs in {elapsed:.1f} s, "
          f"{sum(ledger.starts.values()) - len(ledger.starts)} ran again after the restart")
    assert counts(cluster.dsn, schema) == {"succeeded": DRAIN_JOBS}
    assert set(ledger.starts) == set(ids), "every job ran"


def test_a_tenant_moved_to_the_other_node_under_load_loses_nothing_and_runs_nothing_twice(
    cluster: Cluster, tenants: list[str]
) -> None:
    needs_two_nodes(cluster)
    schema = tenants[1]
    reset(cluster.dsn, schema)
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        source = placement(conn, schema)
    target = next(p for p in cluster.worker_ports if p != source)
    ledger = Ledger.new()
    worker = Worker(cluster.dsn, handlers={"t": ledger.handler()}, concurrency=4, schema=schema)
    produced: list[str] = []
    batches = DRAIN_JOBS // 500

    def produce() -> None:
        q = Queue(cluster.dsn, schema=schema)
        for b in range(batches):
            produced.extend(map(str, q.enqueue_many(
                [{"job_type": "t", "payload": {"b": b, "i": i}} for i in range(500)]
            )))
            time.sleep(0.02)

    def move_while_producing() -> None:
        producer = threading.Thread(target=produce)
        producer.start()
        wait_for(lambda: len(ledger.starts) >= DRAIN_JOBS // 10)
        with psycopg.connect(cluster.dsn, autocommit=True) as conn:
            conn.execute("SELECT citus_schema_move(%(s)s::text::regnamespace, '127.0.0.1',"
                         " %(p)s::int)", {"s": schema, "p": target})
        producer.join(300)

    elapsed = run_until_all_succeeded(worker, cluster.dsn, schema, batches * 500,
                                      move_while_producing)
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        assert placement(conn, schema) == target, "the schema moved"
    print(f"\n{schema} moved from :{source} to :{target} while {batches * 500} jobs were "
          f"produced and run: {elapsed:.1f} s")
    assert len(produced) == batches * 500
    assert counts(cluster.dsn, schema) == {"succeeded": batches * 500}
    assert set(ledger.starts) == set(produced), "every job ran"
    assert max(ledger.starts.values()) == 1, "no job ran twice"


def test_an_existing_install_is_distributed_by_the_next_migrate_jobs_included(
    cluster: Cluster,
) -> None:
    """A single-node install (here: migrated with schema-based sharding off) becomes a
    distributed schema at the next `jobq migrate` on the coordinator, its jobs with it, and a
    Worker then runs them on its node."""
    schema = "tenant_existing"
    local = psycopg.conninfo.make_conninfo(
        cluster.dsn, options="-c citus.enable_schema_based_sharding=off")
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    migrate(local, schema)
    ids = set(enqueue(local, schema, 2000))
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_dist_schema"
                           " WHERE schemaid = %(s)s::text::regnamespace", {"s": schema}).fetchone()
        assert row == (0,), "installed on the coordinator, not distributed"
    migrate(cluster.dsn, schema)
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        assert placement(conn, schema) in cluster.worker_ports, "moved to a worker node"
    assert counts(cluster.dsn, schema) == {"pending": 2000}, "its jobs came along"
    ledger = Ledger.new()
    Worker(cluster.dsn, handlers={"t": ledger.handler()}, schema=schema).run(burst=True)
    assert set(ledger.starts) == ids
    assert counts(cluster.dsn, schema) == {"succeeded": 2000}


def fresh(cluster: Cluster, schema: str) -> None:
    """``schema`` installed anew by `jobq migrate` on the coordinator (a distributed schema)."""
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    migrate(cluster.dsn, schema)


def test_limits_hold_on_a_distributed_schema_while_a_worker_drains_it(
    cluster: Cluster, tenants: list[str]
) -> None:
    """jobq_set_limit and jobs enqueued with a limit group (one by one and in a batch); a
    Worker of the tenant drains them on its node: no key ever has more than max_running
    processing (counted in the database as each handler starts), a rate-limited group starts
    max_starts and leaves the rest pending, and unlimited jobs run beside them."""
    schema = tenants[2]
    reset(cluster.dsn, schema)
    q = Queue(cluster.dsn, schema=schema)
    q.set_limit("customer", max_running=2)
    q.set_limit("api", max_starts=5, per=timedelta(hours=1))
    assert [(lim.limit_group, lim.max_running, lim.max_starts) for lim in q.limits()] == [
        ("api", None, 5), ("customer", 2, None)
    ]
    limited = {str(q.enqueue("t", {"i": i}, limit_group="customer", limit_key=f"k{i % 3}"))
               for i in range(30)}
    limited |= set(map(str, q.enqueue_many([
        {"job_type": "t", "payload": {"i": i}, "limit_group": "customer",
         "limit_key": f"k{i % 3}"} for i in range(30, 60)
    ])))
    rated = set(map(str, q.enqueue_many(
        [{"job_type": "t", "payload": {"r": i}, "limit_group": "api"} for i in range(12)]
    )))
    free = set(enqueue(cluster.dsn, schema, 60))
    ledger = Ledger.new()
    running: Counter[str] = Counter()  # the most processing jobs of each key seen at a start
    with psycopg.connect(cluster.dsn, autocommit=True) as look:

        def handle(job: Job) -> None:
            ledger.handler()(job)
            if job.limit_group != "customer":
                return
            with ledger.lock:
                row = look.execute(
                    f"SELECT count(*)::int FROM {schema}.jobq_jobs WHERE limit_group = 'customer'"
                    " AND limit_key = %(k)s::text AND status = 'processing'",
                    {"k": job.limit_key},
                ).fetchone()
                assert row is not None
                running[str(job.limit_key)] = max(running[str(job.limit_key)], row[0])

        Worker(cluster.dsn, handlers={"t": handle}, concurrency=8, schema=schema,
               poll_interval=3600).run(burst=True)
    assert set(running) == {"k0", "k1", "k2"}
    assert max(running.values()) <= 2, f"max_running 2 held per key: {dict(running)}"
    assert max(ledger.starts.values()) == 1, "no job ran twice"
    assert limited | free <= set(ledger.starts), "every customer job and unlimited job ran"
    assert len(rated & set(ledger.starts)) == 5, "5 starts per hour of the rate-limited group"
    assert counts(cluster.dsn, schema) == {"succeeded": 125, "pending": 7}
    usage = {(u.limit_group, u.limit_key): u for u in q.limit_usage()}
    assert usage[("api", None)].starts_in_window == 5 and usage[("api", None)].pending == 7
    assert all(u.running == 0 for u in usage.values()), "every slot was freed"


def test_bulk_enqueue_on_a_distributed_schema_arrays_many_and_iter(
    cluster: Cluster, tenants: list[str]
) -> None:
    """jobq_enqueue_arrays called on the coordinator, Queue.enqueue_many (which sends the
    arrays) and Queue.enqueue_iter (batches, a refused one skipped): every job lands once on
    the tenant's node, idempotency keys keep their job, a refused batch adds nothing."""
    schema = tenants[3]
    reset(cluster.dsn, schema)
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        rows = conn.execute(
            f"SELECT * FROM {schema}.jobq_enqueue_arrays("
            " job_types => %(t)s::text[], payloads => %(p)s::jsonb[],"
            " idempotency_keys => %(k)s::text[])",
            {"t": ["a", "a", "b"], "p": ['{"n": 1}', '{"n": 2}', '{"n": 3}'],
             "k": ["x", "x", None]},
        ).fetchall()
        assert [r[0] for r in rows] == [1, 2, 3]
        assert rows[0][1] == rows[1][1] and rows[2][1] != rows[0][1], (
            "a key repeated in the batch gives one job"
        )
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"element 2 .*job_type"):
            conn.execute(f"SELECT * FROM {schema}.jobq_enqueue_arrays("
                         " job_types => %(t)s::text[], payloads => %(p)s::jsonb[])",
                         {"t": ["a", " "], "p": ["{}", "{}"]})
    assert counts(cluster.dsn, schema) == {"pending": 2}, "the refused call added nothing"

    q = Queue(cluster.dsn, schema=schema)
    many = q.enqueue_many([{"job_type": "m", "idempotency_key": f"m{i}"} for i in range(1000)])
    assert q.enqueue_many([{"job_type": "m", "idempotency_key": f"m{i}"} for i in range(1000)]) \
        == many, "known keys give their jobs back"

    def jobs() -> Any:
        for i in range(12_000):
            # the 7,001st job is bad: its batch (the second) is refused whole
            yield {"job_type": " " if i == 7000 else "it", "payload": {"i": i}}

    seen: list[int] = []
    summary = q.enqueue_iter(jobs(), batch_size=5000, skip_refused=True, progress=seen.append)
    assert (summary.jobs, summary.batches, len(summary.refused)) == (7000, 2, 1)
    assert (summary.refused[0].first, summary.refused[0].job) == (5000, 7000)
    assert seen == [5000, 7000]
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        got = conn.execute(
            f"SELECT job_type, count(*)::int, count(DISTINCT payload)::int"
            f" FROM {schema}.jobq_jobs GROUP BY job_type ORDER BY job_type"
        ).fetchall()
    assert got == [("a", 1, 1), ("b", 1, 1), ("it", 7000, 7000), ("m", 1000, 1)]


def sample(metrics: list[Any], name: str, **labels: str) -> float:
    return sum(m.value for m in metrics
               if m.metric == name and all(m.labels.get(k) == v for k, v in labels.items()))


def test_metrics_count_the_jobs_of_a_distributed_schema(cluster: Cluster) -> None:
    """jobq_metrics() of a tenant read from the coordinator, once jobq_configure turned the
    counting on: the enqueues (one by one, arrays, jobq_enqueue_many), the claims, completions
    and failures of a Worker on the node are each counted once, and the status gauges match
    the jobs."""
    schema = "tenant_metrics"
    fresh(cluster, schema)
    q = Queue(cluster.dsn, schema=schema)
    assert sample(q.metrics(), "jobq_metrics_counting") == 0, "off on a new installation"
    q.configure(metrics=True)
    assert sample(q.metrics(), "jobq_metrics_counting") == 1
    assert sample(q.metrics(), "jobq_enqueued_total") == 0
    q.enqueue("ok", queue="m")
    q.enqueue_many([{"job_type": "ok", "queue": "m"} for _ in range(99)])
    q.enqueue_many([{"job_type": "ok", "queue": "m", "limit_group": "g"} for _ in range(50)])
    q.enqueue_many([{"job_type": "bad", "queue": "m", "max_attempts": 1} for _ in range(10)])

    def fail(job: Job) -> None:
        raise RuntimeError("refused")

    Worker(cluster.dsn, handlers={"ok": lambda job: None, "bad": fail}, concurrency=4,
           schema=schema).run(burst=True)
    metrics = q.metrics()
    assert sample(metrics, "jobq_enqueued_total", queue="m", job_type="ok") == 150
    assert sample(metrics, "jobq_enqueued_total", queue="m", job_type="bad") == 10
    assert sample(metrics, "jobq_started_total", queue="m") == 160
    assert sample(metrics, "jobq_succeeded_total", queue="m", job_type="ok") == 150
    assert sample(metrics, "jobq_failed_total", queue="m", job_type="bad") == 10
    assert sample(metrics, "jobq_dead_lettered_total", queue="m", job_type="bad") == 10
    assert sample(metrics, "jobq_jobs", queue="m", status="succeeded") == 150
    assert sample(metrics, "jobq_jobs", queue="m", status="dead_letter") == 10
    assert sample(metrics, "jobq_jobs", queue="m", status="pending") == 0
    assert sample(metrics, "jobq_wait_seconds_count", queue="m") == 160
    assert sample(metrics, "jobq_run_seconds_count", queue="m") == 160


def test_the_dashboard_reads_a_distributed_schema(cluster: Cluster) -> None:
    """jobq_queue_summary and jobq_jobs_page of a tenant, called on the coordinator and
    through the dashboard (create_app with the tenant's schema): the counts per queue, every
    pending job once over the pages, and the Limits page's usage of a key."""
    from starlette.testclient import TestClient  # the dashboard's extra, installed for tests

    from jobq_web import create_app

    schema = "tenant_web"
    fresh(cluster, schema)
    q = Queue(cluster.dsn, schema=schema)
    mail = q.enqueue_many([{"job_type": "email", "queue": "mail"} for _ in range(120)])
    reports = [
        q.enqueue("report", queue="reports"),
        q.enqueue("report", queue="reports",
                  run_at=datetime.now(timezone.utc) + timedelta(hours=1)),
    ]
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        summary = {
            r[0]: r[1:] for r in conn.execute(
                f"SELECT queue, available, scheduled, processing FROM {schema}.jobq_queue_summary()"
            )
        }
        assert summary == {"mail": (120, 0, 0), "reports": (1, 1, 0)}
        ids: list[str] = []
        after: tuple[Any, Any] = (None, None)
        while True:
            page = conn.execute(
                f"SELECT id, sort_at FROM {schema}.jobq_jobs_page('pending', queue => 'mail',"
                " after_at => %(a)s::timestamptz, after_id => %(i)s::uuid, max_rows => 50)",
                {"a": after[0], "i": after[1]},
            ).fetchall()
            if not page:
                break
            ids += [str(r[0]) for r in page]
            after = (page[-1][1], page[-1][0])
        assert ids == [str(i) for i in mail], "every pending job once, in claim order"
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="status"):
            conn.execute(f"SELECT * FROM {schema}.jobq_jobs_page('nonsense')")

    with TestClient(create_app(cluster.dsn, schema=schema), base_url="http://127.0.0.1") as web:
        overview = web.get("/")
        assert overview.status_code == 200, overview.text
        row = re.search(r'<tr data-queue="mail">(.*?)</tr>', overview.text, re.DOTALL)
        assert row and '<td class="n available">120</td>' in row.group(1)
        listed = web.get("/jobs", params={"status": "pending", "queue": "reports"})
        assert listed.status_code == 200, listed.text
        listed_ids = set(re.findall(r'<tr data-id="([0-9a-f-]+)">', listed.text))
        assert listed_ids == {str(r) for r in reports}, "pending: available and scheduled"
        q.set_limit("api", max_running=2)
        for _ in range(3):
            q.enqueue("call", limit_group="api", limit_key="acme")
        assert len(q.dequeue("w", job_types=["call"], batch_size=5)) == 2, "max_running 2"
        limits = web.get("/limits")
        assert limits.status_code == 200, limits.text
        usage = re.search(r'<tr data-group="api" data-key="acme">(.*?)</tr>', limits.text,
                          re.DOTALL)
        assert usage and [c.strip() for c in re.findall(r"<td>(.*?)</td>", usage.group(1),
                                                          re.DOTALL)][2] == "2 / 2"


def test_the_newest_migration_applies_to_a_schema_already_distributed(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A tenant distributed at the release before the newest migration (installed from the
    migrations without it) is upgraded in place by `jobq migrate`: the migration's DDL runs
    on its distributed tables, which Citus restricts (one ADD CONSTRAINT per ALTER TABLE, ...).
    Every new migration must pass this."""
    schema = "tenant_previous"
    shipped = sorted((ROOT / "sql" / "migrations").glob("*.sql"))
    if len(shipped) < 2:
        pytest.skip("no migration after the baseline yet: nothing to upgrade in place")
    older = tmp_path / "migrations"
    older.mkdir()
    for path in shipped[:-1]:
        (older / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    migrate(cluster.dsn, schema, migrations_dir=older)
    ids = set(enqueue(cluster.dsn, schema, 100))
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        before = placement(conn, schema)
    migrate(cluster.dsn, schema)
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        assert placement(conn, schema) == before, "upgraded where it lives"
        row = conn.execute(f"SELECT max(version) FROM {schema}.jobq_migrations"
                           " WHERE version NOT LIKE 'functions/%%'").fetchone()
        assert row == (shipped[-1].stem,)
    ledger = Ledger.new()
    Worker(cluster.dsn, handlers={"t": ledger.handler()}, schema=schema).run(burst=True)
    assert set(ledger.starts) == ids
    assert counts(cluster.dsn, schema) == {"succeeded": 100}


def test_calls_inside_a_transaction_block_on_the_coordinator_run_there_and_count(
    cluster: Cluster,
) -> None:
    """Not delegated (inside a transaction block), a function runs on the coordinator and
    Citus sends each of its statements to the node: an enqueue in the application's
    transaction, a claim of limited and unlimited jobs and their completion give the same
    results as delegated calls, and are counted (jobq__metrics_count, nested in a statement
    that the node runs in a session of Citus's own, has the schema's search_path). jobq
    doctor finds the install as jobq made it."""
    schema = "tenant_txn"
    fresh(cluster, schema)
    q = Queue(cluster.dsn, schema=schema)
    q.configure(metrics=True)
    q.set_limit("g", max_running=1)
    with psycopg.connect(cluster.dsn) as conn:
        with conn.transaction():
            free = q.enqueue("t", conn=conn)
            limited = [q.enqueue("t", limit_group="g", limit_key="k", conn=conn)
                       for _ in range(2)]
        with conn.transaction():
            claimed = [r[0] for r in conn.execute(
                f"SELECT id FROM {schema}.jobq_dequeue('w', ARRAY['t'], 10)")]
        assert set(claimed) == {free, limited[0]}, "one of the key, max_running 1"
        with conn.transaction():
            done = conn.execute(f"SELECT {schema}.jobq_complete_many(%(ids)s::uuid[], 'w')",
                                {"ids": claimed}).fetchone()
        assert done == (2,)
        with conn.transaction():
            again = [r[0] for r in conn.execute(
                f"SELECT id FROM {schema}.jobq_dequeue('w', ARRAY['t'], 10)")]
        assert again == [limited[1]], "the key's slot was freed"
        assert function_drift(conn, schema) == []
    metrics = q.metrics()
    assert sample(metrics, "jobq_enqueued_total") == 3
    assert sample(metrics, "jobq_started_total") == 3
    assert sample(metrics, "jobq_succeeded_total") == 2
    assert sample(metrics, "jobq_jobs", status="processing") == 1
