"""Retention: ``python -m bench.retention`` (``make retention``).

Two measurements on a throwaway durable cluster (bench.cluster):

1. The retention step at several sizes (``--rows``, default 1 and 10 million): that many
   succeeded jobs are loaded straight into ten expired day partitions of jobq_jobs_history
   (INSERT ... SELECT generate_series into a table of its own, then ATTACH PARTITION, which
   builds its indexes), and one ``jobq_maintain_history()`` drops them all, in a transaction
   of its own. It prints, per size, the milliseconds of the call, of its commit, and how long
   a session that takes a completion's lock (ROW EXCLUSIVE on the status's table, asked for
   before the commit) waited from the commit on: PostgreSQL removes a dropped table's files
   after it releases the locks, so a completion that arrives during the call waits at most the
   call's time and that wait. For scale, it also times a row-by-row ``DELETE`` of one partition
   of ``--delete-rows`` jobs (what retention would cost without partitions).
2. The hot path beside the DDL: ``--threads`` sessions claim (``jobq_dequeue``, one job) and
   complete (``jobq_complete``) jobs from a backlog, in phases of ``--seconds`` that alternate
   quiet, tick, churn and twin (``--rounds`` of each). During a churn phase (the stress
   cadence) another session keeps creating an expired partition of ``--churn-rows`` succeeded
   jobs (CREATE TABLE, INSERT, ATTACH PARTITION under a 100 ms lock_timeout, as the maintenance
   makes partitions ahead) and calling ``jobq_maintain_history()``, which empties it and drops
   the emptied ones eight at a time, then pausing ``--churn-pause`` seconds (0.2 s: some
   400,000 times the rate of one partition a day). A tick phase (the realistic cadence) does
   the same once every ``--tick-seconds`` (5 s, the Worker's tick): one call of the
   maintenance per tick, as ``jobq_tick`` makes it, each after a day's DDL (one partition made
   and expired), so a drop of eight every eighth tick; at the default settings a status meets
   a drop once every eight days, so even this is 17,000 times the real rate of DDL, but the
   maintenance's calls come at their real rate. A fourth kind of phase, "twin", does the same
   DDL on a copy of the status's partitioned table that the hot path never touches
   (``bench_twin``, with the same indexes and a DEFAULT partition): the same partition made,
   filled and attached, the same maintenance call, the same TRUNCATE and DROP of eight, in
   as many transactions, so that the difference between churn and twin is what the DDL's
   locks and cache invalidations on the hot tables cost the hot path. It prints the claim and
   completion p50/p99 per kind of phase, how many partitions were created, emptied and
   dropped, and, as evidence that does not depend on the machine's load, how often a sampler
   (every few milliseconds) found a hot session waiting for a lock on a relation of the
   history, against all its samples of them.

3. The lock window of a batch (``--window-rounds``): eight empty expired partitions dropped
   as the maintenance drops them (``LOCK TABLE ONLY ... NOWAIT`` of the status's table, its
   DEFAULT partition and the eight, then one ``DROP TABLE``), and, for comparison, detached
   instead (the same ``LOCK``, then ``ALTER TABLE ... DETACH PARTITION`` of each, the detached
   tables dropped in a later transaction), each in a ``DO`` block as in a function, rounds
   alternated. A second session asks for a completion's lock on the status's table during the
   statement: the window is from the ``LOCK`` to that lock granted (what a completion waits
   for at most), printed beside the time to the end of the commit (which includes removing
   the dropped files after the locks are released). Once, the locks each kind holds before
   its commit (``pg_locks``), and those of the later ``DROP`` of detached tables, and the WAL
   each writes between its ``LOCK`` and its commit (its catalogue work, whatever the load).

4. What one DDL costs the next completion of a session (``--invalidation-rounds``): a cached
   plan of the completion does not name the partitions, but each DDL on the history
   invalidates the partitioned table's descriptor, which a session rebuilds at its next
   completion. One session completes two jobs after each kind of DDL (an ATTACH of a new
   partition, its TRUNCATE, a DROP of eight, an ATTACH to the twin, none), each completion's
   statement timed inside its transaction (the commit's flush left out); it prints the median
   of the first minus the second.

The machine is shared during development: ``--rows 1000000`` alone takes a minute or two;
the default (1 and 10 million) several minutes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import threading
import time
from typing import Any

import psycopg

from . import harness
from .cluster import Cluster

JOB_TYPE = "bench"
TWIN = "bench_twin"
BATCH = 8  # empty partitions jobq_maintain_history drops together
PHASES = ("quiet", "tick", "churn", "twin")
COLUMNS = (
    "id, queue, job_type, payload, status, priority, attempts, max_attempts, available_at,"
    " errors, created_at, updated_at, finished_at, scheduled, claimed_at"
)


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def load_partition(
    conn: psycopg.Connection[Any], day: dt.date, rows: int, parent: str = "jobq__history_succeeded"
) -> str:
    """An expired partition of succeeded jobs for ``day`` holding ``rows`` jobs, attached to
    ``parent`` (the status's partitioned table, or the twin)."""
    name = f"{parent}_{day:%Y%m%d}"
    lower = dt.datetime.combine(day, dt.time(), dt.timezone.utc)
    conn.execute(f"CREATE TABLE {name} (LIKE jobq__history_succeeded INCLUDING DEFAULTS)")
    conn.execute(
        f"INSERT INTO {name} ({COLUMNS})"
        " SELECT gen_random_uuid(), 'default', %(t)s, jsonb_build_object('n', g), 'succeeded',"
        "  0, 1, 5, f, '[]', f, f, f, false, f"
        " FROM generate_series(1, %(n)s) AS g,"
        "  LATERAL (SELECT %(lower)s::timestamptz + g * (interval '1 day' / %(n)s)"
        "   - interval '1 microsecond') AS x (f)",
        {"t": JOB_TYPE, "n": rows, "lower": lower},
    )
    upper = lower + dt.timedelta(days=1)
    conn.execute(
        f"ALTER TABLE {parent} ATTACH PARTITION {name}"
        f" FOR VALUES FROM ('{lower.isoformat()}') TO ('{upper.isoformat()}')"
    )
    return name


def retention_step(cluster: Cluster, total: int, days: int) -> dict[str, float]:
    """Load ``total`` jobs over ``days`` expired day partitions; time one maintenance call,
    its commit, and the wait of a completion's lock from the commit on."""
    first = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=10 + days)
    started = time.perf_counter()
    with cluster.connect() as conn:
        for i in range(days):
            load_partition(conn, first + dt.timedelta(days=i), total // days)
        conn.execute("VACUUM ANALYZE jobq__history_succeeded")
        conn.execute("CHECKPOINT")
    loaded = time.perf_counter() - started
    with cluster.connect() as conn, cluster.connect() as probe:
        conn.execute("BEGIN")
        started = time.perf_counter()
        steps = conn.execute("SELECT action FROM jobq_maintain_history()").fetchall()
        in_tx = time.perf_counter() - started
        granted: list[float] = []

        def complete_like() -> None:  # the lock a completion of a succeeded job takes
            probe.execute("BEGIN")
            probe.execute("LOCK TABLE jobq__history_succeeded IN ROW EXCLUSIVE MODE")
            granted.append(time.perf_counter())
            probe.execute("ROLLBACK")

        waiter = threading.Thread(target=complete_like)
        waiter.start()
        pid = probe.info.backend_pid
        waiting = "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s"
        while conn.execute(waiting, (pid,)).fetchone() != (True,):
            time.sleep(0.01)
        committing = time.perf_counter()
        conn.execute("COMMIT")
        committed = time.perf_counter()
        waiter.join(60)
        left = conn.execute("SELECT count(*) FROM jobq_jobs_history").fetchone()
    actions = [a for (a,) in steps]
    assert left == (0,), f"{left} jobs left after the retention step"
    return {
        "rows": total,
        "load_s": loaded,
        "in_tx_ms": in_tx * 1000,
        "commit_ms": (committed - committing) * 1000,
        "waited_ms": (granted[0] - committing) * 1000,
        "truncated": actions.count("truncated"),
        "dropped": actions.count("dropped"),
    }


def delete_rows(cluster: Cluster, rows: int) -> float:
    """Milliseconds of a row-by-row DELETE of one partition of ``rows`` jobs (committed)."""
    day = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=40)
    with cluster.connect() as conn:
        name = load_partition(conn, day, rows)
        conn.execute("CHECKPOINT")
        started = time.perf_counter()
        conn.execute(f"DELETE FROM {name}")
        ms = (time.perf_counter() - started) * 1000
        conn.execute(f"DROP TABLE {name}")
    return ms


def make_twin(conn: psycopg.Connection[Any]) -> None:
    """``bench_twin``: a partitioned table like the succeeded status's, with its indexes and a
    DEFAULT partition, that no claim or completion touches."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {TWIN} (LIKE jobq__history_succeeded INCLUDING DEFAULTS"
        " INCLUDING INDEXES) PARTITION BY RANGE (finished_at)"
    )
    conn.execute(f"CREATE TABLE IF NOT EXISTS {TWIN}_default PARTITION OF {TWIN} DEFAULT")


class Churn(threading.Thread):
    """Creates an expired partition of ``rows`` jobs and runs the maintenance, in a loop,
    while ``on`` is set, pausing as long as ``pauses`` says for the phase of the moment:
    partitions created, emptied and dropped beside the hot path. In a twin phase the
    partitions go to the twin, whose retention it does itself as the
    maintenance would (TRUNCATE, then a DROP of eight together), in the same transaction."""

    def __init__(
        self, cluster: Cluster, rows: int, pauses: dict[str, float], stop: threading.Event,
        phase: list[str],
    ) -> None:
        super().__init__(daemon=True)
        self.cluster, self.rows, self.pauses, self.stop = cluster, rows, pauses, stop
        self.phase = phase
        self.on = threading.Event()
        # Per kind of phase: partitions created (on the twin in twin phases), and the
        # maintenance's steps truncated, dropped and skipped.
        self.counts: dict[str, dict[str, int]] = {}
        self.twin_empty: list[str] = []
        self.day = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=400)

    def twin_retention(self, conn: psycopg.Connection[Any], name: str) -> None:
        with conn.transaction():
            conn.execute(f"TRUNCATE TABLE {name}")
            self.twin_empty.append(name)
            if len(self.twin_empty) >= BATCH:
                names = ", ".join(self.twin_empty)
                conn.execute(
                    f"LOCK TABLE ONLY {TWIN}, {TWIN}_default, {names}"
                    " IN ACCESS EXCLUSIVE MODE NOWAIT"
                )
                conn.execute(f"DROP TABLE {names}")
                self.twin_empty.clear()

    def run(self) -> None:
        with self.cluster.connect() as conn:
            conn.execute("SET lock_timeout = '100ms'")
            while not self.stop.is_set():
                if not self.on.wait(0.1):
                    continue
                kind = self.phase[0]
                counts = self.counts.setdefault(
                    kind, {"created": 0, "truncated": 0, "dropped": 0, "skipped": 0}
                )
                twin = kind == "twin"
                parent = TWIN if twin else "jobq__history_succeeded"
                try:
                    name = load_partition(conn, self.day, self.rows, parent)
                    counts["created"] += 1
                except psycopg.errors.LockNotAvailable:
                    conn.execute(f"DROP TABLE IF EXISTS {parent}_{self.day:%Y%m%d}")
                    name = ""
                    counts["skipped"] += 1
                self.day += dt.timedelta(days=1)
                for (action,) in conn.execute(
                    "SELECT action FROM jobq_maintain_history()"
                ).fetchall():
                    if action in counts:
                        counts[action] += 1
                if twin and name:
                    self.twin_retention(conn, name)
                # The pause of this phase, cut short when the next phase begins.
                until = time.monotonic() + self.pauses.get(kind, 0.2)
                while self.phase[0] == kind and time.monotonic() < until:
                    if self.stop.wait(min(0.05, max(0.0, until - time.monotonic()))):
                        break


def drain(
    cluster: Cluster, worker: str, stop: threading.Event, phase: list[str],
    out: dict[str, list[tuple[float, float]]],
) -> None:
    """Claim one job and complete it, again and again, recording both latencies (ms) under
    the phase of the moment."""
    with cluster.connect() as conn:
        claim = "SELECT id FROM jobq_dequeue(%s, ARRAY[%s])"
        complete = "SELECT jobq_complete(%s, %s)"
        while not stop.is_set():
            t0 = time.perf_counter()
            row = conn.execute(claim, (worker, JOB_TYPE)).fetchone()
            t1 = time.perf_counter()
            if row is None:
                raise RuntimeError("the backlog ran out: raise --backlog")
            conn.execute(complete, (row[0], worker))
            t2 = time.perf_counter()
            out.setdefault(phase[0], []).append(((t1 - t0) * 1000, (t2 - t1) * 1000))


def sample_lock_waits(
    cluster: Cluster, stop: threading.Event, phase: list[str], waits: dict[str, list[int]]
) -> None:
    """Every few milliseconds, the hot sessions (by their statements) and those of them that
    wait for a lock on a relation of the history: ``waits[phase] = [waiting, sampled]``."""
    query = (
        "SELECT count(*), count(*) FILTER (WHERE EXISTS (SELECT FROM pg_locks AS l"
        " WHERE l.pid = a.pid AND NOT l.granted AND l.relation::regclass::text LIKE '%history%'))"
        " FROM pg_stat_activity AS a WHERE a.state = 'active'"
        " AND (a.query LIKE 'SELECT id FROM jobq_dequeue%' OR a.query LIKE 'SELECT jobq_complete%')"
    )
    with cluster.connect() as conn:
        while not stop.is_set():
            row = conn.execute(query).fetchone()
            assert row is not None
            counts = waits.setdefault(phase[0], [0, 0])
            counts[0] += row[1]
            counts[1] += row[0]
            time.sleep(0.005)


def hot_path(cluster: Cluster, args: argparse.Namespace) -> dict[str, Any]:
    harness.fill_jobq(cluster, args.backlog, job_type=JOB_TYPE)
    harness.settle(cluster)
    stop = threading.Event()
    phase = ["warm-up"]
    out: dict[str, list[tuple[float, float]]] = {}
    with cluster.connect() as conn:
        make_twin(conn)
    pauses = {"tick": args.tick_seconds, "churn": args.churn_pause, "twin": args.churn_pause}
    churn = Churn(cluster, args.churn_rows, pauses, stop, phase)
    churn.start()
    threads = [
        threading.Thread(target=drain, args=(cluster, f"w{i}", stop, phase, out), daemon=True)
        for i in range(args.threads)
    ]
    waits: dict[str, list[int]] = {}
    threads.append(threading.Thread(
        target=sample_lock_waits, args=(cluster, stop, phase, waits), daemon=True
    ))
    for t in threads:
        t.start()
    time.sleep(3)
    for _ in range(args.rounds):
        for name in PHASES:
            phase[0] = name
            if name != "quiet":
                churn.on.set()
            log(f"phase {name}, {args.seconds:.0f} s")
            time.sleep(args.seconds)
            churn.on.clear()
    stop.set()
    for t in threads:
        t.join(60)
    churn.join(60)
    result: dict[str, Any] = {"ddl": churn.counts}
    for name in PHASES:
        samples = out.get(name, [])
        claims = harness.percentiles([c for c, _ in samples])
        completes = harness.percentiles([c for _, c in samples])
        result[name] = {
            "jobs_s": len(samples) / (args.seconds * args.rounds),
            "claim_p50": claims["p50"], "claim_p99": claims["p99"],
            "complete_p50": completes["p50"], "complete_p99": completes["p99"],
            "lock_waits": waits.get(name, [0, 0]),
        }
    return result


def empty_batch(conn: psycopg.Connection[Any], first: dt.date) -> list[str]:
    """BATCH empty expired partitions of succeeded jobs, from ``first`` on."""
    names = []
    for i in range(BATCH):
        lower = dt.datetime.combine(first + dt.timedelta(days=i), dt.time(), dt.timezone.utc)
        names.append(f"jobq__history_succeeded_{lower:%Y%m%d}")
        conn.execute(
            f"CREATE TABLE {names[-1]} PARTITION OF jobq__history_succeeded FOR VALUES FROM"
            f" ('{lower.isoformat()}') TO ('{(lower + dt.timedelta(days=1)).isoformat()}')"
        )
    return names


def held_locks(conn: psycopg.Connection[Any]) -> list[str]:
    """The tables of the history this session holds locks on, with the mode, and how many
    relations it holds locks on that its transaction dropped (tables, indexes, TOAST)."""
    rows = conn.execute(
        "SELECT coalesce(c.relname::text, 'dropped'), l.mode, count(*) FROM pg_locks AS l"
        " LEFT JOIN pg_class AS c ON c.oid = l.relation WHERE l.pid = pg_backend_pid()"
        " AND l.locktype = 'relation' AND (c.oid IS NULL OR (c.relkind IN ('r', 'p')"
        " AND c.relname LIKE 'jobq%%history%%')) GROUP BY 1, 2 ORDER BY 1"
    ).fetchall()
    return [
        f"{n} relations it dropped {mode}" if name == "dropped" else f"{name} {mode}"
        for name, mode, n in rows
    ] or ["none"]


def lock_like_a_completion(probe: psycopg.Connection[Any], granted: list[float]) -> None:
    """Takes the lock a completion of a succeeded job takes, noting when it is granted."""
    probe.execute("BEGIN")
    probe.execute("LOCK TABLE jobq__history_succeeded IN ROW EXCLUSIVE MODE")
    granted.append(time.perf_counter())
    probe.execute("ROLLBACK")


def lock_window(cluster: Cluster, rounds: int) -> dict[str, list[Any]]:
    """Per round, a batch dropped as jobq_maintain_history drops it and a batch detached
    instead: ms from the LOCK to a waiting completion's lock granted, and to the commit's end;
    the locks held before the commit, once (see the module's docstring)."""
    out: dict[str, list[Any]] = {}
    parent = "jobq__history_succeeded"
    day = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=2000)
    with cluster.connect() as conn, cluster.connect() as probe:
        for i in range(rounds + 1):
            for kind in ("drop", "detach") if i % 2 else ("detach", "drop"):
                names = empty_batch(conn, day)
                day += dt.timedelta(days=BATCH)
                listed = ", ".join(names)
                body = [f"LOCK TABLE ONLY {parent}, {parent}_default, {listed}"
                        " IN ACCESS EXCLUSIVE MODE NOWAIT"]
                body += [f"DROP TABLE {listed}"] if kind == "drop" else [
                    f"ALTER TABLE {parent} DETACH PARTITION {n}" for n in names
                ]
                block = "DO $do$ BEGIN " + " ".join(f"EXECUTE '{b}';" for b in body) + " END $do$"
                conn.execute("BEGIN")
                if i == 0:  # the locks and the WAL written in the window, once, untimed
                    lsn = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()
                    conn.execute(block)
                    wal = conn.execute(
                        "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)", lsn
                    ).fetchone()
                    out[kind + " wal"] = [int(wal[0]) if wal else 0]
                    out[kind + " locks"] = held_locks(conn)
                    conn.execute("COMMIT")
                    if kind == "detach":
                        conn.execute("BEGIN")
                        conn.execute(f"DROP TABLE {listed}")
                        out["drop detached locks"] = held_locks(conn)
                        conn.execute("COMMIT")
                    continue
                granted: list[float] = []
                started = time.perf_counter()
                conn.execute(block)
                waiter = threading.Thread(target=lock_like_a_completion, args=(probe, granted))
                waiter.start()
                pid = probe.info.backend_pid
                waiting = "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s"
                while conn.execute(waiting, (pid,)).fetchone() != (True,):
                    time.sleep(0.001)
                conn.execute("COMMIT")
                committed = time.perf_counter()
                waiter.join(60)
                out.setdefault(kind + " window", []).append((granted[0] - started) * 1000)
                out.setdefault(kind + " commit", []).append((committed - started) * 1000)
                if kind == "detach":
                    conn.execute(f"DROP TABLE {listed}")
    return out


def invalidation_cost(cluster: Cluster, args: argparse.Namespace) -> dict[str, list[float]]:
    """Per kind of DDL, the first completion's time after it minus the next one's (ms)."""
    harness.fill_jobq(cluster, 2 * 5 * args.invalidation_rounds, job_type=JOB_TYPE)
    out: dict[str, list[float]] = {}
    day = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=800)
    with cluster.connect() as hot, cluster.connect() as ddl:
        make_twin(ddl)

        def complete() -> float:
            row = hot.execute("SELECT id FROM jobq_dequeue('h', ARRAY[%s])", (JOB_TYPE,)).fetchone()
            assert row is not None
            hot.execute("BEGIN")
            started = time.perf_counter()
            hot.execute("SELECT jobq_complete(%s, 'h')", (row[0],))
            ms = (time.perf_counter() - started) * 1000
            hot.execute("COMMIT")
            return ms

        name = ""
        for i in range(args.invalidation_rounds):
            for kind in ("none", "attach", "truncate", "drop of 8", "twin attach"):
                if kind == "attach":
                    name = load_partition(ddl, day, 10)
                    day += dt.timedelta(days=1)
                elif kind == "truncate":
                    ddl.execute(f"TRUNCATE {name}")
                elif kind == "drop of 8":
                    if i % 8 != 7:
                        continue
                    ddl.execute("SELECT * FROM jobq_maintain_history()")
                elif kind == "twin attach":
                    load_partition(ddl, day, 10, TWIN)
                    day += dt.timedelta(days=1)
                first = complete()
                out.setdefault(kind, []).append(first - complete())
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.retention", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000],
                   help="finished jobs loaded before each retention step (default 1M 10M)")
    p.add_argument("--days", type=int, default=10, help="day partitions they span (default 10)")
    p.add_argument("--delete-rows", type=int, default=100_000,
                   help="rows of the row-by-row DELETE timed for scale (0: skip; default 100000)")
    p.add_argument("--threads", type=int, default=4, help="claim/complete sessions (default 4)")
    p.add_argument("--seconds", type=float, default=15.0, help="length of a phase (default 15)")
    p.add_argument("--rounds", type=int, default=2,
                   help="rounds of quiet, tick, churn and twin phases (default 2)")
    p.add_argument("--churn-pause", type=float, default=0.2,
                   help="seconds between two partitions of the churn (default 0.2)")
    p.add_argument("--tick-seconds", type=float, default=5.0,
                   help="seconds between two maintenance calls of a tick phase (default 5)")
    p.add_argument("--window-rounds", type=int, default=16,
                   help="batches dropped and detached for the lock window (0: skip; default 16)")
    p.add_argument("--churn-rows", type=int, default=1000,
                   help="jobs in each partition the churn creates (default 1000)")
    p.add_argument("--backlog", type=int, default=300_000,
                   help="pending jobs the hot path drains (default 300000)")
    p.add_argument("--invalidation-rounds", type=int, default=64,
                   help="DDLs of each kind before a timed completion (0: skip; default 64)")
    p.add_argument("--skip-hot-path", action="store_true", help="only the retention step")
    args = p.parse_args(argv)

    with Cluster() as cluster:
        log(f"cluster: {', '.join(f'{k}={v}' for k, v in sorted(cluster.settings.items()))}")
        steps = []
        for total in args.rows:
            r = retention_step(cluster, total, args.days)
            steps.append(r)
            log(f"loaded {total:,} jobs in {args.days} partitions in {r['load_s']:.0f} s")
            print(f"retention of {total:,} jobs over {args.days} day partitions"
                  f" ({r['truncated']} truncated, {r['dropped']} dropped):"
                  f" {r['in_tx_ms']:.1f} ms in the call, then commit {r['commit_ms']:.1f} ms,"
                  f" of which a completion waiting on the locks waited {r['waited_ms']:.1f} ms"
                  " (the files are removed after the locks are released)")
        if len(steps) > 1:
            small, large = min(steps, key=lambda r: r["rows"]), max(steps, key=lambda r: r["rows"])
            print(f"constant time: {large['rows'] / small['rows']:.0f} times the rows,"
                  f" the call {large['in_tx_ms'] / small['in_tx_ms']:.2f} times as long, a"
                  f" completion's wait {large['waited_ms'] / max(small['waited_ms'], 0.1):.2f}"
                  " times (the commit's removal of the files follows the rows, after the locks)")
        if args.delete_rows:
            ms = delete_rows(cluster, args.delete_rows)
            print(f"for scale, a row-by-row DELETE of {args.delete_rows:,} jobs: {ms:.0f} ms")
        if not args.skip_hot_path:
            hot = hot_path(cluster, args)
            print(f"hot path, {args.threads} sessions, {args.rounds} x {args.seconds:.0f} s"
                  f" per kind of phase; tick: the realistic cadence (a maintenance call every"
                  f" {args.tick_seconds:g} s), churn: the stress cadence (every"
                  f" {args.churn_pause:g} s), twin: the churn's DDL on {TWIN}")
            for name in PHASES:
                m = hot[name]
                ddl = hot["ddl"].get(name)
                print(f"  {name:6} {m['jobs_s']:8.0f} jobs/s   claim p50 {m['claim_p50']:6.2f}"
                      f" p99 {m['claim_p99']:6.2f} ms   complete p50 {m['complete_p50']:6.2f}"
                      f" p99 {m['complete_p99']:6.2f} ms   waiting on a lock of the history"
                      f" {m['lock_waits'][0]} of {m['lock_waits'][1]} samples"
                      + (f"   partitions created {ddl['created']}, emptied {ddl['truncated']},"
                         f" dropped {ddl['dropped']}, steps skipped {ddl['skipped']}"
                         if ddl else ""))
        if args.window_rounds:
            win = lock_window(cluster, args.window_rounds)
            print(f"the lock window of a batch of {BATCH} empty partitions, {args.window_rounds}"
                  " rounds alternated, median (min-max) ms: from the LOCK to a waiting"
                  " completion's lock granted / to the end of the commit")
            for kind in ("drop", "detach"):
                w, c = win[kind + " window"], win[kind + " commit"]
                print(f"  {kind:6} {statistics.median(w):6.1f} ({min(w):.1f}-{max(w):.1f})"
                      f" / {statistics.median(c):6.1f} ({min(c):.1f}-{max(c):.1f});"
                      f" WAL written in the window before the commit, once:"
                      f" {win[kind + ' wal'][0]:,} bytes")
            for kind in ("drop", "detach", "drop detached"):
                print(f"  locks held by the {kind} of {BATCH} before its commit: "
                      + "; ".join(win[kind + " locks"]))
        if args.invalidation_rounds:
            cost = invalidation_cost(cluster, args)
            print("the next completion of a session after a DDL, its statement minus the one"
                  " after it, median ms:")
            for kind, deltas in cost.items():
                print(f"  {kind:10} {statistics.median(deltas):6.3f} ({len(deltas)} DDLs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
