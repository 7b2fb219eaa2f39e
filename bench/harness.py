"""Measuring: results, thread runners, pgbench, table preparation."""

from __future__ import annotations

import re
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from .cluster import Cluster, pgbench_env

# A small JSON payload, the same for every scenario (the job number varies).
PAYLOAD_SQL = "jsonb_build_object('n', g, 'user', 'bench', 'action', 'noop')"
STATIC_PAYLOAD = '{"n": 1, "user": "bench", "action": "noop"}'


def payload(n: int) -> dict[str, Any]:
    return {"n": n, "user": "bench", "action": "noop"}


@dataclass
class Measurement:
    """One line of the results table: a throughput (jobs/s) or a latency (ms, p50 as value)."""

    scenario: str
    key: str
    label: str
    kind: str  # "ceiling" or "jobq"
    unit: str  # "jobs/s" or "ms"
    value: float  # median over the runs (throughput), or p50 (latency)
    runs: list[float] = field(default_factory=list)
    jobs: int = 0
    seconds: float = 0.0
    ceiling: str | None = None  # key of the measurement this one is compared with
    ratio: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Target:
    name: str
    measured: float | None
    op: str  # ">=" or "<="
    threshold: float
    detail: str = ""

    @property
    def status(self) -> str:
        if self.measured is None:
            return "N/A"
        ok = self.measured >= self.threshold if self.op == ">=" else self.measured <= self.threshold
        return "PASS" if ok else "MISS"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status}


@dataclass
class Run:
    """A throughput run: how many jobs were done in how many seconds."""

    jobs: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds if self.seconds > 0 else 0.0


def median_run(runs: Sequence[Run]) -> Run:
    ordered = sorted(runs, key=lambda r: r.rate)
    return ordered[(len(ordered) - 1) // 2]


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    q = statistics.quantiles(samples_ms, n=100, method="inclusive")
    return {
        "p50": statistics.median(samples_ms),
        "p95": q[94],
        "p99": q[98],
        "max": max(samples_ms),
        "n": float(len(samples_ms)),
    }


# -- threads -----------------------------------------------------------------------------------

ThreadBody = Callable[[psycopg.Connection[Any], int], int]


def run_threads(cluster: Cluster, concurrency: int, body: ThreadBody) -> Run:
    """Run ``body(conn, thread_index)`` on ``concurrency`` threads, one connection each.

    Connections are opened before the clock starts; the clock runs from the release of a
    barrier to the end of the last thread. Returns the total of the bodies' counts.
    """
    conns = [cluster.connect(prepare_threshold=0) for _ in range(concurrency)]
    barrier = threading.Barrier(concurrency + 1)
    counts = [0] * concurrency
    errors: list[BaseException] = []

    def target(i: int) -> None:
        try:
            barrier.wait(timeout=60)
            counts[i] = body(conns[i], i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(concurrency)]
    try:
        for t in threads:
            t.start()
        barrier.wait(timeout=60)
        start = time.perf_counter()
        for t in threads:
            t.join(timeout=3600)
        seconds = time.perf_counter() - start
    finally:
        for c in conns:
            c.close()
    if errors:
        raise errors[0]
    return Run(sum(counts), seconds)


# -- pgbench -----------------------------------------------------------------------------------

_TXNS = re.compile(r"number of transactions actually processed: (\d+)")
_TPS = re.compile(r"tps = ([0-9.]+) \(without initial connection time\)")
_FAILED = re.compile(r"number of failed transactions: (\d+)")


@dataclass
class PgbenchResult:
    transactions: int
    tps: float
    output: str

    @property
    def seconds(self) -> float:
        return self.transactions / self.tps if self.tps else 0.0


def pgbench(
    cluster: Cluster, scriptdir: Path, name: str, script: str, clients: int, transactions: int
) -> PgbenchResult:
    """Run a custom script: ``-c clients -j clients -t transactions``, prepared statements,
    no vacuum of pgbench's own tables. The time is pgbench's, without connection setup."""
    path = scriptdir / f"{name}.sql"
    path.write_text(script)
    cmd = [
        str(cluster.bindir / "pgbench"),
        "-n",
        "-M",
        "prepared",
        "-c",
        str(clients),
        "-j",
        str(clients),
        "-t",
        str(transactions),
        "-f",
        str(path),
    ]
    proc = subprocess.run(
        cmd, env=pgbench_env(cluster), capture_output=True, text=True, timeout=3600
    )
    out = proc.stdout + proc.stderr
    txns, tps, failed = _TXNS.search(out), _TPS.search(out), _FAILED.search(out)
    if proc.returncode != 0 or not txns or not tps or (failed and int(failed.group(1))):
        raise RuntimeError(f"pgbench {name} failed (exit {proc.returncode}):\n{out[-3000:]}")
    return PgbenchResult(int(txns.group(1)), float(tps.group(1)), out)


# -- tables ------------------------------------------------------------------------------------


def reset(cluster: Cluster) -> None:
    """Empty both queues (a clean table for each measurement), jobq's finished jobs too."""
    with cluster.connect() as conn:
        reset_tables(conn)


def reset_tables(conn: psycopg.Connection[Any]) -> None:
    conn.execute("TRUNCATE jobq_jobs, raw_jobs RESTART IDENTITY")
    row = conn.execute("SELECT to_regclass('jobq_jobs_history') IS NOT NULL").fetchone()
    if row and row[0]:
        conn.execute("TRUNCATE jobq_jobs_history")


def settle(cluster: Cluster) -> None:
    """Vacuum, analyze and checkpoint, so that each measurement starts from the same state."""
    with cluster.connect() as conn:
        conn.execute("VACUUM ANALYZE jobq_jobs")
        conn.execute("VACUUM ANALYZE raw_jobs")
        conn.execute("CHECKPOINT")


def has_scheduled_column(cluster: Cluster) -> bool:
    """Whether jobq_jobs has the ``scheduled`` mark of migration 0005 (the benchmark also runs
    against older installs, to compare)."""
    with cluster.connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'jobq_jobs'::regclass"
            " AND attname = 'scheduled' AND NOT attisdropped"
        ).fetchone()
        return bool(row and row[0])


def fill_jobq(
    cluster: Cluster,
    n: int,
    *,
    status: str = "pending",
    available: str = "past",
    job_type: str = "noop",
    queue: str = "default",
    priority: int = 0,
    finished_ago: str = "1 hour",
) -> None:
    """Insert ``n`` jobs directly, in one set-based INSERT (bench setup only).

    ``status``: pending (available now, in FIFO order; ``available="future"``: in a day;
    ``available="year"``: a year ahead) or succeeded (finished ``finished_ago`` ago). Future
    jobs carry the ``scheduled`` mark that jobq_enqueue gives them, where the schema has it.
    """
    scheduled = available != "past" and status == "pending" and has_scheduled_column(cluster)
    params: dict[str, Any] = {
        "n": n, "job_type": job_type, "queue": queue, "priority": priority,
        "finished_ago": finished_ago,
    }
    if status == "succeeded":
        query = f"""
            INSERT INTO jobq_jobs (job_type, queue, priority, payload, status, attempts,
                                   available_at, finished_at, created_at, updated_at)
            SELECT %(job_type)s, %(queue)s, %(priority)s, {PAYLOAD_SQL}, 'succeeded', 1,
                   now() - %(finished_ago)s::interval - interval '1 hour',
                   now() - %(finished_ago)s::interval - g * interval '1 microsecond',
                   now() - %(finished_ago)s::interval - interval '1 hour', now()
            FROM generate_series(1, %(n)s) AS g
        """
    else:
        at = {
            "past": "now() - interval '1 hour' + g * interval '1 microsecond'",
            "future": "now() + interval '1 day' + g * interval '1 ms'",
            "year": "now() + interval '1 year' + g * interval '1 ms'",
        }[available]
        query = f"""
            INSERT INTO jobq_jobs (job_type, queue, priority, payload, available_at
                                   {", scheduled" if scheduled else ""})
            SELECT %(job_type)s, %(queue)s, %(priority)s, {PAYLOAD_SQL}, {at}
                   {", true" if scheduled else ""}
            FROM generate_series(1, %(n)s) AS g
        """
    with cluster.connect() as conn:
        conn.execute(query.encode(), params)


def fill_raw(cluster: Cluster, n: int) -> None:
    with cluster.connect() as conn:
        conn.execute(
            f"INSERT INTO raw_jobs (payload) SELECT {PAYLOAD_SQL} FROM generate_series(1, %s) g"
            .encode(),
            (n,),
        )


def count(cluster: Cluster, query: str) -> int:
    with cluster.connect() as conn:
        row = conn.execute(query.encode()).fetchone()
        return int(row[0]) if row else 0
