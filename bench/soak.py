"""Soak test: `make soak` (10 minutes), `python -m bench.soak --quick` (2 minutes).

Starts its own throwaway cluster (scripts/testdb.sh) with durable settings (fsync,
synchronous_commit and full_page_writes on), migrates, measures the maximum throughput of one
Worker on a backlog, then runs producers at ~60 % of it and the Worker for the whole run, pruning
succeeded jobs older than 1 minute every 30 s. Prints throughput per minute and the table's
size (heap + indexes + TOAST) over time, then PASS/FAIL per check:

* throughput: completed jobs in the last fifth of the run (minutes 8-10 of 10) >= 90 % of
  those in the baseline window (minutes 2-3 of 10, i.e. 0.1-0.3 of the run), per second, or of
  the offered rate if that is lower (a worker catching up a backlog in the baseline window
  completes more than is offered; at the end it can complete no more than is offered);
* backlog: pending jobs at the end <= 5 seconds of the offered rate (the worker keeps up);
* size: the table (heap) and each of its indexes at the end <= 2 x its largest size in the
  baseline window (sizes under 1 MB count as 1 MB): jobq_jobs holds the live jobs only, so
  neither churn nor a held snapshot may leave it larger for good;
* no error in producers, pruner or worker.

``--snapshot-hold``: a transaction holds a snapshot (REPEATABLE READ and a read) for three
minutes in the middle (0.3-0.6 of the run, at most 3 minutes): the same checks, the end window
(0.8-1.0 of a 10-minute run) starting two minutes after the snapshot's release. It also reports
how long after the release the queue is back to steady state: the first sample from which the
backlog (pending jobs) stays within what it was in the baseline window (at least one second of
the offered rate), with the backlog's peak, the dead rows of jobq_jobs at the release and when
autovacuum first finished with the table after it (samples every 5 s), and the rebuilds of
jobq_maintain_indexes (run by the Worker's ticks) with what they held the writers for.

The samples every 5 s read sizes and statistics only: the backlog is what the producers sent
less what the worker completed (a count of the table, millions of rows during a hold, would
take a core of its own); the last sample counts the pending jobs.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from pgq_client import Job, Queue, Worker
from pgq_client.migrate import migrate

ROOT = Path(__file__).resolve().parents[1]
DURABLE = ["fsync=on", "synchronous_commit=on", "full_page_writes=on"]


@contextmanager
def cluster(settings: Sequence[str] = ()) -> Iterator[str]:
    """A throwaway durable cluster (plus ``settings``, ``name=value`` each); yields a superuser
    DSN to a fresh database `soak`."""
    tmp = Path(tempfile.mkdtemp(prefix="jobq-soak."))
    tmp.chmod(0o755)
    pg = tmp / "pg"
    out = subprocess.run(
        [str(ROOT / "scripts" / "testdb.sh"), "start", str(pg), *DURABLE, *settings],
        check=True, capture_output=True, text=True,
    ).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export "):].partition("=")
            env[name] = shlex.split(value)[0]
    admin = env["JOBQ_TEST_DSN"]
    try:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute("CREATE DATABASE soak")
            shown: dict[str, str] = dict(c.execute(
                "SELECT name, setting FROM pg_settings WHERE name = ANY(%(n)s)",
                {"n": ["fsync", "synchronous_commit", "full_page_writes", "autovacuum_naptime",
                       *(s.partition("=")[0] for s in settings)]},
            ).fetchall())
        print(f"cluster: {pg} ({', '.join(f'{k}={v}' for k, v in sorted(shown.items()))})")
        yield make_conninfo(admin, dbname="soak")
    finally:
        subprocess.run([str(ROOT / "scripts" / "testdb.sh"), "stop", str(pg)], check=False)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


@dataclass
class Stats:
    done: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handler(self, job: Job) -> None:
        with self.lock:
            self.done += 1

    def error(self, where: str, exc: BaseException) -> None:
        with self.lock:
            self.errors.append(f"{where}: {type(exc).__name__}: {exc}")
        print(f"  ERROR {where}: {exc}", flush=True)


def measure_max(dsn: str, jobs: int, concurrency: int) -> float:
    """Jobs per second one Worker completes on a backlog of ``jobs`` no-op jobs."""
    with Queue(dsn) as q:
        for start in range(0, jobs, 5000):
            q.enqueue_many([{"job_type": "soak"} for _ in range(min(5000, jobs - start))])
    stats = Stats()
    w = Worker(dsn, handlers={"soak": stats.handler}, concurrency=concurrency,
               poll_interval=0.2)
    t0 = time.monotonic()
    w.run(burst=True)
    elapsed = time.monotonic() - t0
    with Queue(dsn) as q:
        q.prune(older_than=0)
    return stats.done / elapsed


def run(minutes: float, snapshot_hold: bool, concurrency: int,
        settings: Sequence[str] = ()) -> bool:
    total = minutes * 60.0
    with cluster(settings) as dsn:
        migrate(dsn)
        backlog = 5000 if minutes <= 2 else 20000
        max_rate = measure_max(dsn, backlog, concurrency)
        rate = 0.6 * max_rate
        print(f"maximum throughput {max_rate:.0f} jobs/s; running at 60 %: {rate:.0f} jobs/s "
              f"for {minutes:g} min, pruning succeeded jobs older than 1 min every 30 s")
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("VACUUM ANALYZE jobq_jobs")

        stats = Stats()
        stop = threading.Event()
        worker = Worker(dsn, handlers={"soak": stats.handler}, concurrency=concurrency,
                        poll_interval=0.2)
        hold_from, hold_len = 0.3 * total, min(180.0, 0.3 * total)
        released_at: list[float] = []  # seconds into the run

        def worker_main() -> None:
            try:
                worker.run()
            except BaseException as exc:
                stats.error("worker", exc)

        sent = [0]

        def producer() -> None:
            q = Queue(dsn)
            t0 = time.monotonic()
            while not stop.is_set():
                due = int((time.monotonic() - t0) * rate) - sent[0]
                if due > 0:
                    try:
                        q.enqueue_many([{"job_type": "soak", "payload": {"n": sent[0] + i}}
                                        for i in range(due)])
                        sent[0] += due
                    except Exception as exc:
                        stats.error("producer", exc)
                stop.wait(0.05)
            q.close()

        def pruner() -> None:
            q = Queue(dsn)
            while not stop.wait(30):
                try:
                    q.prune(older_than=60)
                except Exception as exc:
                    stats.error("pruner", exc)
            q.close()

        def holder() -> None:
            if not stop.wait(hold_from):
                try:
                    with psycopg.connect(dsn) as c:
                        c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                        c.execute("SELECT count(*) FROM jobq_jobs").fetchone()
                        print(f"  snapshot held from {hold_from / 60:.1f} min "
                              f"for {hold_len / 60:.1f} min", flush=True)
                        stop.wait(hold_len)
                        c.rollback()
                    released_at.append(time.monotonic() - t0)
                    print("  snapshot released", flush=True)
                except Exception as exc:
                    stats.error("snapshot holder", exc)

        threads = [threading.Thread(target=f, daemon=True) for f in (worker_main, producer, pruner)]
        if snapshot_hold:
            threads.append(threading.Thread(target=holder, daemon=True))
        # (t, done, size bytes, live rows, pending, dead rows, autovacuums of jobq_jobs so far)
        samples: list[tuple[float, int, int, int, int, int, int]] = []
        sizes: list[dict[str, int]] = []  # per sample: the heap and each index, bytes
        t0 = time.monotonic()
        for t in threads:
            t.start()
        mon = psycopg.connect(dsn, autocommit=True)
        report_every = 60.0 if total >= 300 else 30.0
        last_report = (0.0, 0)
        try:
            while (now := time.monotonic() - t0) < total:
                sizes.append(relation_sizes(mon))
                size = sum(sizes[-1].values())
                with stats.lock:
                    live = pending = max(0, sent[0] - stats.done)
                if now + 5 >= total:
                    live, pending = mon.execute(
                        "SELECT count(*), count(*) FILTER (WHERE status = 'pending')"
                        " FROM jobq_jobs"
                    ).fetchone()  # type: ignore[misc]
                dead, vacuums = mon.execute(
                    "SELECT n_dead_tup, autovacuum_count + vacuum_count FROM pg_stat_user_tables"
                    " WHERE relid = 'jobq_jobs'::regclass"
                ).fetchone()  # type: ignore[misc]
                with stats.lock:
                    done = stats.done
                samples.append(
                    (now, done, int(size), int(live), int(pending), int(dead), int(vacuums))
                )
                if now - last_report[0] >= report_every - 1 or now + 5 >= total:
                    per_s = (done - last_report[1]) / max(1e-9, now - last_report[0])
                    print(f"  {now / 60:5.1f} min: {per_s:7.0f} jobs/s since the last line, "
                          f"size {size / 1e6:7.1f} MB, {pending} pending", flush=True)
                    last_report = (now, done)
                time.sleep(max(0.0, min(5.0, total - now)))
        finally:
            stop.set()
            worker.stop()
            for t in threads:
                t.join(60)
            rebuilds = rebuild_report(mon, t0)
            mon.close()

    def window(a: float, b: float) -> tuple[float, dict[str, int], dict[str, int]]:
        """(jobs/s, the largest size of each relation, its size at the end) over [a, b) of
        the run, in seconds."""
        inside = [i for i, s in enumerate(samples) if a <= s[0] <= b]
        if len(inside) < 2:
            return 0.0, {}, {}
        first, last = samples[inside[0]], samples[inside[-1]]
        largest = {k: max(sizes[i].get(k, 0) for i in inside) for k in sizes[inside[-1]]}
        return ((last[1] - first[1]) / max(1e-9, last[0] - first[0]), largest,
                sizes[inside[-1]])

    # The baseline is each relation's largest size in its window: the size churn keeps it at,
    # which a rebuild (jobq_maintain_indexes) may undercut for a moment.
    base_rate, base_sizes, _ = window(0.1 * total, 0.3 * total)
    end_rate, _, end_sizes = window(0.8 * total, total)
    grown = {k: end_sizes.get(k, 0) / max(v, 1 << 20) for k, v in base_sizes.items()}
    worst = max(grown, key=lambda k: grown[k], default="jobq_jobs")
    reference = min(base_rate, rate)
    end_pending = samples[-1][4] if samples else 0
    checks = [
        (f"throughput at the end {end_rate:.0f}/s >= 90 % of {reference:.0f}/s, the lower of "
         f"the baseline ({base_rate:.0f}/s) and the offered rate ({rate:.0f}/s)"
         + (" (from 2 min after the snapshot's release)" if snapshot_hold else ""),
         end_rate >= 0.9 * reference),
        (f"backlog at the end {end_pending} pending <= 5 s of the offered rate "
         f"({5 * rate:.0f})",
         end_pending <= 5 * rate),
        (f"sizes at the end within 2 x the baseline's (largest growth {worst} "
         f"{grown.get(worst, 0):.1f}x: " + ", ".join(
             f"{k} {base_sizes[k] / 1e6:.1f} -> {end_sizes.get(k, 0) / 1e6:.1f} MB"
             for k in sorted(base_sizes)) + ")",
         bool(grown) and grown[worst] <= 2.0),
        (f"no error ({len(stats.errors)})", not stats.errors),
    ]
    if snapshot_hold:
        print(recovery_report(samples, released_at, base_pending(samples, total, rate)))
    print(rebuilds)
    ok = True
    for text, passed in checks:
        print(f"{'PASS' if passed else 'FAIL'}: {text}")
        ok = ok and passed
    return ok


def relation_sizes(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """The heap of jobq_jobs and each of its indexes, in bytes."""
    return dict(conn.execute(
        "SELECT 'jobq_jobs', pg_relation_size('jobq_jobs') UNION ALL"
        " SELECT c.relname::text, pg_relation_size(c.oid) FROM pg_index AS i"
        " JOIN pg_class AS c ON c.oid = i.indexrelid WHERE i.indrelid = 'jobq_jobs'::regclass"
    ).fetchall())


def rebuild_report(conn: psycopg.Connection[Any], t0: float) -> str:
    """The latest rebuild of each index by jobq_maintain_indexes (the Worker's ticks)."""
    rows = conn.execute(
        "SELECT index_name, extract(epoch FROM now() - rebuilt_at), bytes_before, bytes_after,"
        " extract(epoch FROM took) FROM jobq_index_rebuilds ORDER BY rebuilt_at"
    ).fetchall()
    if not rows:
        return "index rebuilds: none"
    now = time.monotonic() - t0
    return "index rebuilds (the latest of each): " + "; ".join(
        f"{name} at {(now - float(ago)) / 60:.1f} min, {before / 1e6:.1f} -> {after / 1e6:.1f} MB"
        f" in {float(took) * 1e3:.0f} ms" for name, ago, before, after, took in rows)


def base_pending(
    samples: Sequence[tuple[float, int, int, int, int, int, int]], total: float, rate: float
) -> int:
    """The backlog of steady state: the most pending jobs seen in the baseline window (0.1-0.3
    of the run), at least one second of the offered rate."""
    inside = [s[4] for s in samples if 0.1 * total <= s[0] <= 0.3 * total]
    return max([int(rate), *inside])


def recovery_report(
    samples: Sequence[tuple[float, int, int, int, int, int, int]],
    released_at: Sequence[float],
    steady: int,
) -> str:
    """How long after the snapshot's release the backlog is back within ``steady`` for good."""
    if not released_at:
        return "recovery: the snapshot was never released"
    release = released_at[0]
    after = [s for s in samples if s[0] >= release]
    if not after:
        return "recovery: no sample after the release"
    back = None
    for i, sample in enumerate(after):
        if all(later[4] <= steady for later in after[i:]):
            back = sample[0]
            break
    at_release = after[0]
    vacuums_before = at_release[6]
    vacuumed = next((s[0] for s in after if s[6] > vacuums_before), None)
    peak = max(s[4] for s in after)
    lines = [
        f"recovery: snapshot released at {release / 60:.1f} min; backlog then "
        f"{at_release[4]} pending, peak {peak}; {at_release[5]:,} dead rows in jobq_jobs",
        "  autovacuum first finished with jobq_jobs "
        + (f"{vacuumed - release:.0f} s after the release" if vacuumed is not None
           else "not before the end of the run"),
        "  back to steady state (backlog <= "
        f"{steady} for good) "
        + (f"{back - release:.0f} s after the release" if back is not None
           else "not before the end of the run"),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="jobq soak test (own throwaway durable cluster)")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--quick", action="store_true", help="2 minutes")
    p.add_argument("--snapshot-hold", action="store_true",
                   help="hold a REPEATABLE READ snapshot for 3 minutes in the middle")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a server setting for the throwaway cluster (repeatable)")
    args = p.parse_args(argv)
    minutes = 2.0 if args.quick else args.minutes
    for setting in args.set:
        if "=" not in setting:
            p.error(f"--set {setting!r}: expected NAME=VALUE")
    ok = run(minutes, args.snapshot_hold, args.concurrency, args.set)
    print("soak: PASS" if ok else "soak: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
