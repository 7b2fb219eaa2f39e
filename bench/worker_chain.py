"""Scenario 21: the Worker on a chain (each job depends on the one before), beside scenario 18's
two chain figures: the bare-SQL ceiling (one session deletes a job and claims the next in one
statement) and jobq's SQL chain (one session completes a job and claims the next, which that
completion hands to it, in one call of ``jobq_complete_and_claim``). The Worker completes a job
that others depend on with its next claim, in the same call, so each step's dependent is
claimed in the transaction that releases it.

Printed: jobs/s, its ratio to the ceiling and to jobq's SQL chain, and the time from a job's
completion to its dependent's claim (p50/p99; 0 when they share a transaction).

``python -m bench.run --only 21`` (``--quick``: 1,000 jobs instead of 10,000).

``python -m bench.worker_chain DSN [--steps N] [--profile]``: where a step of the Worker's
chain goes (docs/workflows.md, "The Worker's step"), on a throwaway database with jobq
installed (its jobs are deleted). It wraps the Worker's private methods at each hand-over and
prints, per step, the median time of each segment: the fetcher's call
(``jobq_complete_and_claim``, sent to its rows read), the claim's bookkeeping until the job is
in the handlers' buffer, the hop to a handler thread, the handler, the hop back to the fetcher
(the completion taken for the next call), and what the fetcher does before sending it; with
``pg_stat_statements`` in the database, the statements, buffers and server time per step.
``--profile`` instead counts Python calls per step on every thread (cProfile), without the
wrappers. Wall times depend on the machine's load; compare runs made side by side.
"""

from __future__ import annotations

import argparse
import bisect
import cProfile
import pstats
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from . import harness, workflows
from .cluster import Cluster
from .harness import Measurement, Run


def _worker_chain(cluster: Cluster, total: int, concurrency: int) -> Run:
    from pgq_client import Worker

    worker = Worker(cluster.dsn, handlers={"step": lambda job: None}, concurrency=concurrency,
                    poll_interval=1.0)
    start = time.perf_counter()
    worker.run(burst=True)
    seconds = time.perf_counter() - start
    with cluster.connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'").fetchone()
    done = int(row[0]) if row else 0
    if done != total:
        raise RuntimeError(f"the Worker finished {done} of {total} jobs of the chain")
    return Run(done, seconds)


def scenario(cluster: Cluster, quick: bool, concurrency: int,
             log: Callable[[str], None]) -> list[Measurement]:
    n = 1000 if quick else 10_000
    after = {s[0]: s[3] for s in workflows.shapes(quick)}["chain"]

    def fresh() -> None:
        harness.reset(cluster)
        with cluster.connect() as conn:
            conn.execute("TRUNCATE jobq_job_dependencies")
            workflows._enqueue(conn, n, after)
        harness.settle(cluster)

    workflows._fill_raw(cluster, n)
    ceiling = workflows._chain_raw(cluster)
    fresh()
    sql_chain = workflows._chain_jobq(cluster, n)
    fresh()
    run = _worker_chain(cluster, n, concurrency)
    with cluster.connect() as conn:
        lat = workflows._latencies(conn)
    log(f"  chain of {n:,}: bare SQL {ceiling.rate:,.0f} jobs/s, jobq SQL {sql_chain.rate:,.0f}, "
        f"Worker {run.rate:,.0f} ({run.rate / ceiling.rate:.2f}x the ceiling, "
        f"{run.rate / sql_chain.rate:.2f}x jobq SQL); completion to the dependent's claim "
        f"p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms")
    return [
        Measurement("21", "s21.raw.chain", f"chain of {n:,}: bare SQL, delete one, claim next",
                    "ceiling", "jobs/s", ceiling.rate, [ceiling.rate], ceiling.jobs,
                    ceiling.seconds),
        Measurement("21", "s21.jobq.sql.chain",
                    f"chain of {n:,}: jobq_complete_and_claim, one call a step",
                    "jobq", "jobs/s", sql_chain.rate, [sql_chain.rate], sql_chain.jobs,
                    sql_chain.seconds, ceiling="s21.raw.chain"),
        Measurement("21", "s21.jobq.worker.chain",
                    f"chain of {n:,}: Worker(concurrency={concurrency})", "jobq", "jobs/s",
                    run.rate, [run.rate], run.jobs, run.seconds, ceiling="s21.raw.chain",
                    extra={"release_to_claim_ms": lat,
                           "ratio_to_sql_chain": run.rate / sql_chain.rate}),
    ]


# -- the per-step timeline (python -m bench.worker_chain) -------------------------------------

SEGMENTS = (
    ("call", "send", "received"),
    ("claim's bookkeeping", "received", "queued"),
    ("to a handler thread", "queued", "started"),
    ("handler", "started", "finished"),
    ("back to the fetcher", "finished", "taken"),
    ("to the next call", "taken", "next send"),
    ("step", "send", "next send"),
)


def _wrap(events: list[tuple[str, int, Any]]) -> Callable[[], None]:
    """Record the hand-overs of each step in ``events`` (name, ns, job id); returns what undoes
    it. Private methods: this follows the Worker's code, not its interface."""
    from pgq_client.worker import fetcher, handlers, state

    now, add = time.perf_counter_ns, events.append
    saved = [
        (fetcher.Fetcher, "_complete_and_claim"), (state.Shared, "claimed"),
        (handlers.HandlerPool, "_run_one"), (state.Shared, "finished"),
        (state.Shared, "take_key_acks"),
    ]
    originals = [getattr(cls, name) for cls, name in saved]
    call, claimed, run_one, finished, take = originals

    def complete_and_claim(self: Any, conn: Any, completion: Any) -> Any:
        add(("send", now(), None))
        rows = call(self, conn, completion)
        add(("received", now(), None))
        return rows

    def claimed_(self: Any, jobs: Any, seconds: float, hand_on: Any = ()) -> None:
        claimed(self, jobs, seconds, hand_on)
        t = now()
        events.extend(("queued", t, job.id) for job in jobs)

    def run_one_(self: Any, index: int, job: Any) -> None:
        add(("started", now(), job.id))
        run_one(self, index, job)

    def finished_(self: Any, job: Any, seconds: float, outcome: Any) -> None:
        add(("finished", now(), job.id))
        finished(self, job, seconds, outcome)

    def take_(self: Any) -> Any:
        acks = take(self)
        t = now()
        events.extend(("taken", t, state.job_id(ack)) for ack in acks)
        return acks

    for (cls, name), new in zip(
        saved, (complete_and_claim, claimed_, run_one_, finished_, take_), strict=True
    ):
        setattr(cls, name, new)

    def undo() -> None:
        for (cls, name), old in zip(saved, originals, strict=True):
            setattr(cls, name, old)

    return undo


def _segments(events: list[tuple[str, int, Any]], skip: int = 100) -> dict[str, list[int]]:
    """Each step's segments (ns), from the job a call brought to the call that completed it;
    the first and last ``skip`` steps are left out."""
    sends = [t for name, t, _ in events if name == "send"]
    received = [t for name, t, _ in events if name == "received"]
    jobs: dict[Any, dict[str, int]] = {}
    for name, t, job in events:
        if job is not None:
            jobs.setdefault(job, {})[name] = t
    out: dict[str, list[int]] = {name: [] for name, _, _ in SEGMENTS}
    for marks in list(jobs.values())[skip:-skip]:
        if len(marks) < 4:
            continue
        i = bisect.bisect_left(received, marks["queued"]) - 1
        j = bisect.bisect_left(sends, marks["taken"])
        if i < 0 or j >= len(sends):
            continue
        marks.update({"send": sends[i], "received": received[i], "next send": sends[j]})
        for name, start, end in SEGMENTS:
            out[name].append(marks[end] - marks[start])
    return out


def _chain(dsn: str, steps: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM jobq_jobs")
        conn.execute("TRUNCATE jobq_job_dependencies")
        conn.execute("TRUNCATE jobq_jobs_history")
        workflows._enqueue(conn, steps, lambda i: [i] if i else [])
        conn.execute("VACUUM ANALYZE jobq_jobs")


def _statements(dsn: str, reset: bool = False) -> tuple[float, float, float, float] | None:
    """Top-level statements, nested ones, shared buffers and server µs so far (None without
    pg_stat_statements); ``reset`` empties its counters."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('pg_stat_statements') IS NULL").fetchone() != (
            False,
        ):
            return None
        if reset:
            conn.execute("SELECT pg_stat_statements_reset()")
            return None
        row = conn.execute(
            "SELECT sum(calls) FILTER (WHERE toplevel), sum(calls) FILTER (WHERE NOT toplevel),"
            " sum(shared_blks_hit + shared_blks_read) FILTER (WHERE toplevel),"
            " sum(total_exec_time) FILTER (WHERE toplevel) * 1000 FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND query NOT LIKE '%%pg_stat_statements%%'"
        ).fetchone()
    assert row is not None
    return tuple(float(v or 0) for v in row)  # type: ignore[return-value]


def timeline(dsn: str, steps: int = 3000, profile: bool = False) -> str:
    """Run a chain of ``steps`` with ``Worker(concurrency=8)`` and say where each step went."""
    from pgq_client import Worker

    _chain(dsn, steps)
    _statements(dsn, reset=True)
    events: list[tuple[str, int, Any]] = []
    profiles: list[tuple[str, cProfile.Profile]] = []
    run = threading.Thread.run
    if profile:
        def profiled(self: threading.Thread) -> None:
            prof = cProfile.Profile()
            profiles.append((self.name, prof))
            prof.runcall(run, self)

        threading.Thread.run = profiled  # type: ignore[method-assign]
        undo = lambda: None  # noqa: E731
    else:
        undo = _wrap(events)
    worker = Worker(dsn, handlers={"step": lambda job: None}, concurrency=8, poll_interval=1.0)
    try:
        start = time.perf_counter()
        worker.run(burst=True)
        seconds = time.perf_counter() - start
    finally:
        threading.Thread.run = run  # type: ignore[method-assign]
        undo()
    lines = [f"chain of {steps:,}, Worker(concurrency=8): {steps / seconds:,.0f} jobs/s"]
    counts = _statements(dsn)
    if counts is not None:
        top, nested, buffers, micros = (v / steps for v in counts)
        lines.append(f"per step: {top:.2f} top-level + {nested:.1f} nested statements, "
                     f"{buffers:.1f} shared buffers, {micros:,.0f} us of server time")
    if profile:
        per_thread: dict[str, int] = {}
        for name, prof in profiles:
            kind = name.rstrip("0123456789").rstrip("-")
            per_thread[kind] = per_thread.get(kind, 0) + pstats.Stats(prof).total_calls
        lines.append(f"Python calls per step: {sum(per_thread.values()) / steps:.1f} ("
                     + ", ".join(f"{k} {v / steps:.1f}" for k, v in per_thread.items()) + ")")
        return "\n".join(lines)
    for name, values in _segments(events).items():
        values.sort()
        lines.append(f"  {name:<20} median {statistics.median(values) / 1000:8.1f} us, "
                     f"p90 {values[len(values) * 9 // 10] / 1000:8.1f} us")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=timeline.__doc__)
    parser.add_argument("dsn")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--profile", action="store_true",
                        help="Python calls per step on every thread instead of the timeline")
    args = parser.parse_args()
    print(timeline(args.dsn, args.steps, args.profile))
