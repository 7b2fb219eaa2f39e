"""jobq on a real Citus cluster: a coordinator and two worker nodes (`make test-citus`).

Eight tenants, each installed by `jobq migrate --schema tenant_N` on the coordinator, each a
distributed schema that lives whole on one node. The contract's pgTAP suite runs for every
tenant on its node; a Python Worker per tenant drains 20,000 jobs; a node restarted mid-drain
loses no job; a tenant moved to the other node while producers and workers run loses no job
and runs none twice. Figures are printed (`-s`), never asserted (docs/scaling.md has them).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgq_client import Job, Queue, Worker
from pgq_client.migrate import migrate

ROOT = Path(__file__).resolve().parents[2]
TENANTS = [f"tenant_{i}" for i in range(1, 9)]
DRAIN_JOBS = int(os.environ.get("JOBQ_CITUS_DRAIN_JOBS", "20000"))

# pgTAP files that check the install in schema public itself, create roles or functions
# (which Citus allows only on the coordinator), or run plpgsql_check over public: they run in
# `make test`. Every other file is the contract of the functions, and runs for every tenant.
INSTALL_ONLY = {"api_surface.sql", "comments.sql", "privileges.sql", "shadowing.sql",
                "plpgsql_check.sql"}


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
                  if p.name not in INSTALL_ONLY)


@pytest.mark.parametrize("schema", TENANTS)
def test_the_contract_pgtap_suite_passes_for_every_tenant_on_its_node(
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
    with psycopg.connect(dsn, autocommit=True) as conn:
        return dict(conn.execute(
            f"SELECT status, count(*)::int FROM {schema}.jobq_jobs GROUP BY status"
        ).fetchall())


def reset(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DELETE FROM {schema}.jobq_jobs")


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
