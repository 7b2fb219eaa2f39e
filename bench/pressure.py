"""Pressure: ``python -m bench.pressure`` (scenario 17 of ``make bench``).

The same run for jobq's Worker and for the raw-SQL ceiling table: each side's maximum is
measured on a backlog, then producers offer a fixed 60 % of it through three phases: before,
during and after a disturbance that holds the xmin horizon back. The disturbance is a
REPEATABLE READ snapshot held ``--hold-minutes`` (3 by default), or with ``--reader`` a reader
that keeps long queries running back to back for as long. Per phase it prints completions per
second as a ratio of the offered rate, the pickup time (enqueue to claim) p50/p99, the dead
tuples of the table, the size of the table and of each index, and how many entries of the claim
index each index scan read (what a claim walks over). At the end, PASS/MISS for: completions
during the disturbance >= 70 % of the offered rate, no backlog at the end (at most 5 s of the
offered rate), table and indexes within 2x their size before the disturbance (sizes under
1 MB count as 1 MB). The Worker's ticks run jobq_maintain_indexes, which rebuilds an index that
the disturbance left bloated; its rebuilds are listed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from pgq_client import Job, Queue, Worker

from . import harness
from .cluster import Cluster
from .harness import Measurement
from .scenarios import RAW_CLAIM, RAW_DELETE

JOB_TYPE = "pressure"
BATCH = 10  # the raw side's claim size, as pgbench's b10 ceiling
PHASES = ("before", "during", "after")


@dataclass
class Side:
    """One queue under test: how to fill it, offer jobs to it and consume them."""

    name: str
    table: str
    claim_index: str
    enqueue: Callable[[psycopg.Connection[Any], int], None]
    consume: Callable[[str, threading.Event, Callable[[float], None]], None]


def _jobq_enqueue(conn: psycopg.Connection[Any], n: int) -> None:
    Queue(conn).enqueue_many(
        [{"job_type": JOB_TYPE, "payload": {"t": time.time()}} for _ in range(n)]
    )


def _raw_enqueue(conn: psycopg.Connection[Any], n: int) -> None:
    conn.execute(
        "INSERT INTO raw_jobs (payload) SELECT jsonb_build_object('t', %s::float8)"
        " FROM generate_series(1, %s)",
        (time.time(), n),
    )


def _jobq_consume(dsn: str, stop: threading.Event, done: Callable[[float], None],
                  concurrency: int = 8) -> None:
    def handler(job: Job) -> None:
        done(time.time() - float(job.payload["t"]))

    worker = Worker(dsn, handlers={JOB_TYPE: handler}, concurrency=concurrency,
                    poll_interval=0.2, summary_interval=None)
    if stop.is_set():  # a burst: drain what is there, then return
        worker.run(burst=True)
        return
    threading.Thread(target=lambda: (stop.wait(), worker.stop()), daemon=True).start()
    worker.run()


def _raw_consume(dsn: str, stop: threading.Event, done: Callable[[float], None],
                 concurrency: int = 8) -> None:
    burst = stop.is_set()

    def loop() -> None:
        # The claim is an index scan in id order whatever the statistics say: planned while
        # the table was empty (after the maximum's drain), it was a sequential scan and a sort,
        # which slowed as the backlog grew until the raw side stopped.
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SET enable_seqscan = off")
            while burst or not stop.is_set():
                rows = conn.execute(RAW_CLAIM, (BATCH,)).fetchall()
                if not rows:
                    if burst or stop.wait(0.02):
                        return
                    continue
                now = time.time()
                for _, body in rows:
                    done(now - float(body["t"]))
                conn.execute(RAW_DELETE, ([r[0] for r in rows],))

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


SIDES = {
    "jobq": Side("jobq", "jobq_jobs", "jobq_jobs_claim_idx", _jobq_enqueue, _jobq_consume),
    "raw": Side("raw", "raw_jobs", "raw_jobs_pkey", _raw_enqueue, _raw_consume),
}


@dataclass
class Sample:
    """The table's state at a phase boundary."""

    at: float
    dead: int
    pending: int
    sizes: dict[str, int]  # the table (heap) and each index, bytes
    claim_scans: int
    claim_read: int


def sample(conn: psycopg.Connection[Any], side: Side, t0: float) -> Sample:
    table = side.table
    dead, = conn.execute(  # type: ignore[misc]
        "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = %s::regclass", (table,)
    ).fetchone()
    pending, = conn.execute(  # type: ignore[misc]
        f"SELECT count(*) FROM {table} WHERE status = 'pending'"
    ).fetchone()
    sizes = dict(conn.execute(
        "SELECT %s, pg_relation_size(%s::regclass) UNION ALL"
        " SELECT c.relname::text, pg_relation_size(c.oid) FROM pg_index AS i"
        " JOIN pg_class AS c ON c.oid = i.indexrelid WHERE i.indrelid = %s::regclass",
        (table, table, table),
    ).fetchall())
    scans, read = conn.execute(  # type: ignore[misc]
        "SELECT idx_scan, idx_tup_read FROM pg_stat_user_indexes WHERE indexrelid = %s::regclass",
        (side.claim_index,),
    ).fetchone()
    return Sample(time.monotonic() - t0, int(dead), int(pending),
                  {k: int(v) for k, v in sizes.items()}, int(scans), int(read))


@dataclass
class Result:
    side: str
    maximum: float
    offered: float
    disturbance: str
    phases: dict[str, tuple[float, float]] = field(default_factory=dict)  # name: (from, to)
    done: list[tuple[float, float]] = field(default_factory=list)  # (at, pickup s)
    samples: list[Sample] = field(default_factory=list)  # start, then the end of each phase
    rebuilds: list[str] = field(default_factory=list)  # jobq_maintain_indexes' latest, per index

    def rate(self, phase: str) -> float:
        a, b = self.phases[phase]
        return sum(1 for t, _ in self.done if a <= t < b) / max(1e-9, b - a)

    def pickups(self, phase: str) -> tuple[float, float]:
        a, b = self.phases[phase]
        got = sorted(p for t, p in self.done if a <= t < b)
        if len(got) < 2:
            return float("nan"), float("nan")
        return statistics.median(got) * 1e3, got[int(0.99 * (len(got) - 1))] * 1e3

    def checks(self) -> list[tuple[str, bool]]:
        during = self.rate("during") / self.offered
        base, end = self.samples[1], self.samples[-1]
        grown = {k: end.sizes[k] / max(1 << 20, v) for k, v in base.sizes.items()}
        worst = max(grown, key=lambda k: grown[k])
        return [
            (f"{self.side}: completions during the {self.disturbance} {during:.0%} of the "
             "offered rate >= 70 %", during >= 0.7),
            (f"{self.side}: backlog at the end {end.pending} <= 5 s of the offered rate "
             f"({5 * self.offered:.0f})", end.pending <= 5 * self.offered),
            (f"{self.side}: relations at the end within 2x their size before the "
             f"{self.disturbance} (largest growth {worst} {grown[worst]:.1f}x)",
             grown[worst] <= 2.0),
        ]

    def render(self) -> str:
        lines = [f"{self.side}: maximum {self.maximum:,.0f} jobs/s, offered {self.offered:,.0f} "
                 f"jobs/s (60 %), {self.disturbance} during the middle phase"]
        head = (f"  {'phase':<7}{'s':>5}{'jobs/s':>9}{'ratio':>7}{'p50 ms':>9}{'p99 ms':>10}"
                f"{'dead':>10}{'pending':>9}{'claim idx read/scan':>21}")
        lines.append(head)
        for i, name in enumerate(PHASES):
            a, b = self.phases[name]
            p50, p99 = self.pickups(name)
            s0, s1 = self.samples[i], self.samples[i + 1]
            per_scan = (s1.claim_read - s0.claim_read) / max(1, s1.claim_scans - s0.claim_scans)
            lines.append(f"  {name:<7}{b - a:>5.0f}{self.rate(name):>9,.0f}"
                         f"{self.rate(name) / self.offered:>7.2f}{p50:>9.1f}{p99:>10.1f}"
                         f"{s1.dead:>10,}{s1.pending:>9,}{per_scan:>21,.0f}")
        a, b = self.phases["after"]
        steps = range(int(a), int(b), 10)
        lines.append("  after, jobs/s per 10 s: " + " ".join(
            f"{sum(1 for t, _ in self.done if s <= t < s + 10) / 10:,.0f}" for s in steps))
        if self.rebuilds:
            lines.append("  index rebuilds: " + "; ".join(self.rebuilds))
        names = list(self.samples[0].sizes)
        lines.append("  sizes (MB) at the start / end of each phase: "
                     + ", ".join(f"{n} " + " / ".join(f"{s.sizes.get(n, 0) / 1e6:.1f}"
                                                      for s in self.samples) for n in names))
        return "\n".join(lines)


def measure_max(dsn: str, side: Side, jobs: int) -> float:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for start in range(0, jobs, 5000):
            side.enqueue(conn, min(5000, jobs - start))
    count = [0]
    burst = threading.Event()
    burst.set()
    t0 = time.monotonic()
    side.consume(dsn, burst, lambda _: count.__setitem__(0, count[0] + 1))
    return count[0] / (time.monotonic() - t0)


def disturb(dsn: str, side: Side, stop: threading.Event, reader: bool,
            query_seconds: float) -> None:
    """Holds the horizon back until ``stop``: one REPEATABLE READ snapshot, or long queries
    back to back (each a fresh snapshot that lives ``query_seconds``)."""
    with psycopg.connect(dsn) as conn:
        if not reader:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            conn.execute(f"SELECT count(*) FROM {side.table}").fetchone()
            stop.wait()
            conn.rollback()
            return
        conn.autocommit = True
        while not stop.is_set():
            conn.execute(
                f"SELECT pg_sleep(%s) FROM (SELECT count(*) FROM {side.table}) AS c",
                (query_seconds,),
            )


def run_side(dsn: str, side: Side, phase_seconds: tuple[float, float, float], reader: bool,
             backlog: int, log: Callable[[str], None], explain: bool = False) -> Result:
    maximum = measure_max(dsn, side, backlog)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {side.table}")
    kind = "long reader" if reader else "held snapshot"
    result = Result(side.name, maximum, 0.6 * maximum, kind)
    log(f"pressure {side.name}: maximum {maximum:,.0f} jobs/s; offering "
        f"{result.offered:,.0f} jobs/s, phases of {'/'.join(f'{s:g}' for s in phase_seconds)} s"
        f" with a {kind} in the middle")
    stop, calm = threading.Event(), threading.Event()
    lock = threading.Lock()
    t0 = time.monotonic()
    start = time.time()  # t0 on the server's clock (same machine), for the rebuilds' times

    def done(pickup: float) -> None:
        with lock:
            result.done.append((time.monotonic() - t0, pickup))

    def produce() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            sent = 0
            while not stop.is_set():
                due = int((time.monotonic() - t0) * result.offered) - sent
                if due > 0:
                    side.enqueue(conn, due)
                    sent += due
                stop.wait(0.05)

    def prune() -> None:  # jobq keeps finished jobs; the raw side deletes them at once
        with Queue(dsn) as q:
            while side.name == "jobq" and not stop.wait(5):
                q.prune(older_than=5)

    threads = [threading.Thread(target=f, daemon=True) for f in (
        produce, prune, lambda: side.consume(dsn, stop, done))]
    with psycopg.connect(dsn, autocommit=True) as mon:
        result.samples.append(sample(mon, side, t0))
        for t in threads:
            t.start()
        edge = 0.0
        for name, seconds in zip(PHASES, phase_seconds, strict=True):
            result.phases[name] = (edge, edge + seconds)
            holder = None
            if name == "during":
                holder = threading.Thread(
                    target=disturb, args=(dsn, side, calm, reader, min(30.0, seconds)),
                    daemon=True)
                holder.start()
            time.sleep(max(0.0, t0 + edge + seconds - time.monotonic()))
            if holder is not None:
                if explain:
                    log(explain_claim(mon, side))
                calm.set()
                holder.join(60)
            edge += seconds
            result.samples.append(sample(mon, side, t0))
            log(f"  {side.name} {name}: {result.rate(name):,.0f} jobs/s "
                f"({result.rate(name) / result.offered:.2f} of the offered rate), "
                f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        stop.set()
        for t in threads:
            t.join(60)
        if side.name == "jobq":
            result.rebuilds = [
                f"{name} at {float(at) - start:.0f} s, {before / 1e6:.1f} -> {after / 1e6:.1f} MB"
                f" in {float(took) * 1e3:.0f} ms"
                for name, at, before, after, took in mon.execute(
                    "SELECT index_name, extract(epoch FROM rebuilt_at), bytes_before,"
                    " bytes_after, extract(epoch FROM took) FROM jobq_index_rebuilds"
                    " ORDER BY rebuilt_at"
                ).fetchall()
            ]
    return result


def explain_claim(conn: psycopg.Connection[Any], side: Side) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the statement that picks a claim's rows, rolled back."""
    if side.name == "raw":
        query = ("SELECT id FROM raw_jobs WHERE status = 'pending' ORDER BY id LIMIT 10"
                 " FOR UPDATE SKIP LOCKED")
    else:
        query = ("SELECT j.id FROM jobq_jobs AS j"
                 f" WHERE hashtextextended(j.job_type, 0) = hashtextextended('{JOB_TYPE}', 0)"
                 " AND hashtextextended(j.queue, 0) = hashtextextended('default', 0)"
                 " AND j.status = 'pending' AND NOT j.scheduled AND j.limit_group IS NULL"
                 " AND j.available_at <= now()"
                 " ORDER BY j.priority DESC, j.available_at, j.id LIMIT 10 FOR UPDATE SKIP LOCKED")
    passed = "SELECT pg_stat_get_xact_tuples_returned(%s::regclass)"
    lines = [f"{side.name} claim at the end of the disturbance:"]
    with conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL enable_bitmapscan = off")
        before, = conn.execute(passed, (side.claim_index,)).fetchone()  # type: ignore[misc]
        plan = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {query}").fetchall()
        after, = conn.execute(passed, (side.claim_index,)).fetchone()  # type: ignore[misc]
        lines += [f"    {r[0]}" for r in plan]
        lines.append(f"  entries of {side.claim_index} passed: {after - before:,}")
        # jobq_dequeue twice: a full scan (this session has no marks), then what follows it.
        for call in ("first", "second") if side.name == "jobq" else ():
            start = time.perf_counter()
            conn.execute("SELECT count(*) FROM jobq_dequeue('explain', %s, 10)", ([JOB_TYPE],))
            ms = (time.perf_counter() - start) * 1e3
            before, after = after, conn.execute(  # type: ignore[index]
                passed, (side.claim_index,)).fetchone()[0]
            lines.append(f"  jobq_dequeue, {call} call of a session: {ms:.1f} ms, "
                         f"{after - before:,} index entries passed")
    return "\n".join(lines)


def measurements(results: list[Result]) -> list[Measurement]:
    """Scenario 17's lines for bench.run: completions during the disturbance per side, the raw
    side being jobq's ceiling."""
    out = []
    for r in results:
        p50, p99 = r.pickups("during")
        kind = "reader" if "reader" in r.disturbance else "hold"
        out.append(Measurement(
            "17", f"s17.{r.side}.{kind}",
            f"{r.side}: {r.disturbance}, completions during it", r.side if r.side == "jobq"
            else "ceiling", "jobs/s", r.rate("during"),
            ceiling=None if r.side == "raw" else f"s17.raw.{kind}",
            extra={"offered": r.offered, "ratio_to_offered": r.rate("during") / r.offered,
                   "p50_ms": p50, "p99_ms": p99, "before": r.rate("before"),
                   "after": r.rate("after")},
            note=f"{r.rate('during') / r.offered:.0%} of the offered {r.offered:,.0f}/s; "
                 f"pickup p50 {p50:.0f} p99 {p99:.0f} ms",
        ))
    return out


def scenario(cluster: Cluster, quick: bool, log: Callable[[str], None]) -> list[Measurement]:
    """``make bench``'s run: jobq then raw, a held snapshot (0.5 minutes in --quick, else 3)."""
    minutes = 0.5 if quick else 3.0
    phases = (minutes * 20, minutes * 60, minutes * 40)
    results = []
    for side in ("jobq", "raw"):
        with cluster.connect() as conn:
            harness.reset_tables(conn)
        r = run_side(cluster.dsn, SIDES[side], phases, False, 5000 if quick else 20000, log)
        log(r.render())
        results.append(r)
    return measurements(results)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.pressure", description=__doc__)
    p.add_argument("--hold-minutes", type=float, default=3.0,
                   help="how long the horizon is held (default 3)")
    p.add_argument("--before", type=float, default=60.0, help="seconds before (default 60)")
    p.add_argument("--after", type=float, default=120.0, help="seconds after (default 120)")
    p.add_argument("--reader", action="store_true",
                   help="long queries back to back instead of one held snapshot")
    p.add_argument("--side", choices=("jobq", "raw", "both"), default="both")
    p.add_argument("--backlog", type=int, default=20000,
                   help="jobs drained to measure each side's maximum (default 20000)")
    p.add_argument("--explain", action="store_true",
                   help="EXPLAIN (ANALYZE, BUFFERS) of the claim at the end of the disturbance")
    args = p.parse_args(argv)
    phases = (args.before, args.hold_minutes * 60, args.after)

    def log(message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)

    ok = True
    with Cluster() as cluster:
        log(f"cluster: {', '.join(f'{k}={v}' for k, v in sorted(cluster.settings.items()))}")
        for side in (("jobq", "raw") if args.side == "both" else (args.side,)):
            with cluster.connect() as conn:
                harness.reset_tables(conn)
            r = run_side(cluster.dsn, SIDES[side], phases, args.reader, args.backlog, log,
                         args.explain)
            print(r.render())
            for text, passed in r.checks():
                print(f"{'PASS' if passed else 'MISS'}: {text}")
                ok = ok and passed
    print("pressure: PASS" if ok else "pressure: MISS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
