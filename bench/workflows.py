"""Scenario 18: workflow shapes (docs/workflows.md): fan-out 1→N, fan-in N→1, layers, a chain.

Each shape is enqueued in one ``jobq_enqueue_many`` (``after``), then drained by SQL workers,
beside a bare-SQL ceiling that does the same work on ``raw_jobs`` without the graph:

* the wide shapes, 8 sessions: jobq claims up to 10 jobs with ``jobq_dequeue`` and completes
  them with ``jobq_complete_many``, two transactions; the ceiling claims up to 10 with
  scenario 3's ``UPDATE ... SKIP LOCKED`` and deletes them, two transactions. A second,
  cheaper reference is printed beside it (``.raw.delete``: each batch deleted in one
  transaction), which compares with no ratio;
* the chain, one session (its jobs run one after the other anyway): jobq completes a job and
  claims the next in one call (``jobq_complete_and_claim``: the completion hands the job it
  releases to the session); the ceiling deletes a job and claims the next in one statement.
  A reference beside it (``.two_calls``, its ratio printed, no target): ``jobq_complete_many`` then
  ``jobq_dequeue`` in one transaction, sent in one round trip in pipeline mode.

Each prints its jobs/s and the time from the completion of a job's last dependency to the
job's claim (``finished_at`` of the dependency to ``claimed_at`` of the job, p50/p99).

``python -m bench.run --only 18`` (``--quick``: a tenth of the sizes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from . import harness
from .cluster import Cluster
from .harness import Measurement, Run
from .scenarios import RAW_CLAIM, RAW_DELETE

BATCH = 10

# key, name, jobs, how element i (from 0) names the elements it waits for (1-based ords)
Shape = tuple[str, str, int, Callable[[int], list[int]]]


def shapes(quick: bool) -> list[Shape]:
    n = 1000 if quick else 10_000
    width, layers = (50, 20) if quick else (500, 20)
    return [
        ("fan_out", f"fan-out 1→{n:,}", n + 1, lambda i: [1] if i else []),
        ("fan_in", f"fan-in {n:,}→1", n + 1, lambda i: list(range(1, n + 1)) if i == n else []),
        ("layers", f"{layers} layers of {width}", width * layers,
         lambda i: _two_above(i, width)),
        ("chain", f"chain of {n:,}", n, lambda i: [i] if i else []),
    ]


def _two_above(i: int, width: int) -> list[int]:
    """The ords of the jobs that job ``i`` of a layered graph waits for: the one above it and
    the next one of the layer before (none in the first layer)."""
    layer, k = divmod(i, width)
    if layer == 0:
        return []
    above = (layer - 1) * width
    return sorted({above + k + 1, above + (k + 1) % width + 1})


def _enqueue(conn: psycopg.Connection[Any], jobs: int, after: Callable[[int], list[int]]) -> None:
    elements = [{"job_type": "step", **({"after": a} if (a := after(i)) else {})}
                for i in range(jobs)]
    conn.execute("SELECT count(*) FROM jobq_enqueue_many(%s::jsonb)",
                 (psycopg.types.json.Jsonb(elements),))


def _drain_jobq(cluster: Cluster, sessions: int, total: int) -> Run:
    """The wide shapes: claim up to 10, then complete them, in two transactions."""
    done = [0]
    lock = threading.Lock()

    def body(conn: psycopg.Connection[Any], i: int) -> int:
        mine = 0
        while True:
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM jobq_dequeue(%s, NULL, %s)", (f"w{i}", BATCH)).fetchall()]
            if ids:
                conn.execute("SELECT jobq_complete_many(%s, %s)", (ids, f"w{i}"))
                mine += len(ids)
                with lock:
                    done[0] += len(ids)
            else:
                with lock:
                    if done[0] >= total:
                        return mine
                time.sleep(0.002)  # a dependent is released by another session's commit

    return harness.run_threads(cluster, sessions, body)


def _chain_jobq(cluster: Cluster, total: int, two_calls: bool = False) -> Run:
    """One session: each call completes the job it ran and claims the next, which that
    completion released and hands to it (``jobq_complete_and_claim``); with ``two_calls``,
    ``jobq_complete_many`` then ``jobq_dequeue`` in one transaction (one round trip)."""

    def body(conn: psycopg.Connection[Any], _: int) -> int:
        ids = [r[0] for r in conn.execute("SELECT id FROM jobq_dequeue('w0')").fetchall()]
        n = 0
        while ids:
            if two_calls:
                # One round trip (pipeline mode) per transaction, as the ceiling's statement.
                with conn.pipeline(), conn.transaction():
                    conn.execute("SELECT jobq_complete_many(%s, 'w0')", (ids,))
                    claimed = conn.execute("SELECT id FROM jobq_dequeue('w0')")
                ids = [r[0] for r in claimed.fetchall()]
            else:
                ids = [r[0] for r in conn.execute(
                    "SELECT id, status FROM jobq_complete_and_claim(%s, 'w0')", (ids,)
                ).fetchall() if r[1] == "processing"]
            n += 1
        if n != total:
            raise RuntimeError(f"the chain stopped after {n} of {total} jobs")
        return n

    return harness.run_threads(cluster, 1, body)


def _drain_raw(cluster: Cluster, sessions: int) -> Run:
    """Scenario 3's raw queue: claim up to 10, then delete them, in two transactions."""

    def body(conn: psycopg.Connection[Any], _: int) -> int:
        mine = 0
        while True:
            ids = [r[0] for r in conn.execute(RAW_CLAIM, (BATCH,)).fetchall()]
            if not ids:
                return mine
            conn.execute(RAW_DELETE, (ids,))
            mine += len(ids)

    return harness.run_threads(cluster, sessions, body)


def _drain_raw_delete(cluster: Cluster, sessions: int) -> Run:
    """Each batch of 10 deleted in one transaction: no claim at all."""

    def body(conn: psycopg.Connection[Any], _: int) -> int:
        mine = 0
        while True:
            rows = conn.execute(
                "DELETE FROM raw_jobs WHERE id = ANY (ARRAY(SELECT id FROM raw_jobs"
                " ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED)) RETURNING id", (BATCH,)
            ).fetchall()
            if not rows:
                return mine
            mine += len(rows)

    return harness.run_threads(cluster, sessions, body)


def _chain_raw(cluster: Cluster) -> Run:
    """One session: each transaction deletes the job it ran and claims the next."""

    def body(conn: psycopg.Connection[Any], _: int) -> int:
        row = conn.execute("UPDATE raw_jobs SET status = 'processing' WHERE id = "
                           "(SELECT min(id) FROM raw_jobs) RETURNING id").fetchone()
        n = 0
        while row is not None:
            row = conn.execute(
                "WITH gone AS (DELETE FROM raw_jobs WHERE id = %s)"
                " UPDATE raw_jobs SET status = 'processing' WHERE id = %s + 1 RETURNING id",
                (row[0], row[0]),
            ).fetchone()
            n += 1
        return n

    return harness.run_threads(cluster, 1, body)


def _latencies(conn: psycopg.Connection[Any]) -> dict[str, float]:
    rows = conn.execute(
        "SELECT extract(epoch FROM c.claimed_at - max(p.finished_at)) * 1000"
        " FROM jobq_job_dependencies AS e"
        " JOIN jobq_all_jobs AS c ON c.id = e.job_id"
        " JOIN jobq_all_jobs AS p ON p.id = e.depends_on"
        " GROUP BY c.id, c.claimed_at"
    ).fetchall()
    samples = [max(float(r[0]), 0.0) for r in rows]
    if len(samples) < 2:
        samples = samples * 2 or [0.0, 0.0]
    return harness.percentiles(samples)


def _fill_raw(cluster: Cluster, jobs: int) -> None:
    with cluster.connect() as conn:
        conn.execute("TRUNCATE raw_jobs RESTART IDENTITY")
        conn.execute("INSERT INTO raw_jobs (payload) SELECT '{}' FROM generate_series(1, %s)",
                     (jobs,))
    harness.settle(cluster)


def scenario(cluster: Cluster, quick: bool, log: Callable[[str], None]) -> list[Measurement]:
    results: list[Measurement] = []
    for short, name, jobs, after in shapes(quick):
        chain = short == "chain"
        sessions = 1 if chain else 8
        key = f"s18.{short}"
        harness.reset(cluster)
        with cluster.connect() as conn:
            conn.execute("TRUNCATE jobq_job_dependencies")
        _fill_raw(cluster, jobs)
        ceiling = _chain_raw(cluster) if chain else _drain_raw(cluster, sessions)
        how = "delete one, claim the next" if chain else "claim, then delete"
        results.append(Measurement("18", key + ".raw", f"{name}: bare SQL, {how} ({sessions})",
                                   "ceiling", "jobs/s", ceiling.rate, [ceiling.rate],
                                   ceiling.jobs, ceiling.seconds))
        line = f"  {name}: bare SQL {ceiling.rate:,.0f} jobs/s"
        if not chain:
            _fill_raw(cluster, jobs)
            deleted = _drain_raw_delete(cluster, sessions)
            results.append(Measurement(
                "18", key + ".raw.delete", f"{name}: bare SQL, delete in one ({sessions})",
                "ceiling", "jobs/s", deleted.rate, [deleted.rate], deleted.jobs, deleted.seconds))
            line += f" (deleting each batch in one: {deleted.rate:,.0f})"
        with cluster.connect() as conn:
            _enqueue(conn, jobs, after)
        harness.settle(cluster)
        run = _chain_jobq(cluster, jobs) if chain else _drain_jobq(cluster, sessions, jobs)
        with cluster.connect() as conn:
            lat = _latencies(conn)
        log(f"{line}, jobq {run.rate:,.0f} jobs/s ({run.rate / ceiling.rate:.2f}x); "
            f"last dependency to claim p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms")
        jobq_how = ("jobq_complete_and_claim" if chain
                    else "jobq_dequeue, then jobq_complete_many")
        results.append(Measurement("18", key, f"{name}: {jobq_how} ({sessions})",
                                   "jobq", "jobs/s", run.rate, [run.rate], run.jobs, run.seconds,
                                   ceiling=key + ".raw",
                                   extra={"release_to_claim_ms": lat}))
        if chain:
            # The same chain in two calls a step, as before jobq_complete_and_claim: a
            # reference beside it, with its ratio but no target.
            harness.reset(cluster)
            with cluster.connect() as conn:
                conn.execute("TRUNCATE jobq_job_dependencies")
                _enqueue(conn, jobs, after)
            harness.settle(cluster)
            two = _chain_jobq(cluster, jobs, two_calls=True)
            log(f"  {name}: jobq_complete_many + jobq_dequeue in one transaction "
                f"{two.rate:,.0f} jobs/s ({two.rate / ceiling.rate:.2f}x)")
            results.append(Measurement(
                "18", key + ".two_calls",
                f"{name}: jobq_complete_many + jobq_dequeue in one transaction ({sessions})",
                "jobq", "jobs/s", two.rate, [two.rate], two.jobs, two.seconds,
                ceiling=key + ".raw"))
    return results


def profile_chain_step(
    dsn: str, steps: int = 2000, two_calls: bool = False, plain: bool = False
) -> str:
    """Statements, shared buffers and server time per step of a chain, from
    ``pg_stat_statements`` (``track = all``: the statements inside the functions too) on the
    database ``dsn`` (a throwaway one, jobq installed: its jobs are deleted). The chain is
    enqueued, vacuumed and analyzed, run for 50 steps, then the counters are reset and read
    after ``steps`` more. Statement counts and buffers do not depend on the machine's load;
    server time does (docs/workflows.md, "Where a chain's step goes"). With ``track_functions
    = all``, each function's time in all and its own follow. ``plain``: the same steps (two
    calls) over jobs without dependencies, what a job outside any workflow pays."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("DELETE FROM jobq_jobs")
        conn.execute("TRUNCATE jobq_job_dependencies")
        _enqueue(conn, steps + 60, (lambda i: []) if plain else (lambda i: [i] if i else []))
        conn.execute("VACUUM ANALYZE jobq_jobs")
        ids = [r[0] for r in conn.execute("SELECT id FROM jobq_dequeue('w0')").fetchall()]

        def step(ids: list[Any]) -> list[Any]:
            if two_calls or plain:
                with conn.pipeline(), conn.transaction():
                    conn.execute("SELECT jobq_complete_many(%s, 'w0')", (ids,))
                    claimed = conn.execute("SELECT id FROM jobq_dequeue('w0')")
                return [r[0] for r in claimed.fetchall()]
            return [r[0] for r in conn.execute(
                "SELECT id, status FROM jobq_complete_and_claim(%s, 'w0')", (ids,)
            ).fetchall() if r[1] == "processing"]

        for _ in range(50):
            ids = step(ids)
        conn.execute("SELECT pg_stat_statements_reset()")
        conn.execute("SELECT pg_stat_reset()")
        for _ in range(steps):
            ids = step(ids)
        # Each function's own time (with track_functions = all; none without): what its
        # statements' times leave out, the set-up and end of their plans, the entry and SET
        # clauses, PL/pgSQL's expressions. (Counts of the session's calls before the reset may
        # reach the counters after it: only functions called every tenth step or more show.)
        conn.execute("SELECT pg_stat_force_next_flush()")
        functions = conn.execute(
            "SELECT funcname, calls, total_time, self_time FROM pg_stat_user_functions"
            " WHERE calls >= %s ORDER BY total_time DESC", (steps // 10,)
        ).fetchall()
        rows = conn.execute(
            "SELECT calls, total_exec_time, shared_blks_hit + shared_blks_read, toplevel,"
            " regexp_replace(left(query, 60), '\\s+', ' ', 'g'), wal_records, wal_bytes,"
            " wal_fpi FROM pg_stat_statements"
            " WHERE query NOT LIKE '%%pg_stat%%'"
            " ORDER BY toplevel DESC, total_exec_time DESC"
        ).fetchall()
    top = [r for r in rows if r[3]]
    what = ("plain jobs, two calls" if plain else "two calls" if two_calls
            else "jobq_complete_and_claim")
    lines = [
        f"{what}: {steps} steps; per step "
        f"{sum(r[0] for r in rows if not r[3]) / steps:.1f} nested + "
        f"{sum(r[0] for r in top) / steps:.1f} top-level statements, "
        f"{sum(r[2] for r in top) / steps:.1f} shared buffers, "
        f"{sum(r[5] for r in top) / steps:.1f} WAL records ({sum(r[6] for r in top) / steps:,.0f}"
        f" bytes, {sum(r[7] for r in top) / steps:.2f} full pages), "
        f"{sum(r[1] for r in top) * 1000 / steps:.0f} µs of server time"
    ]
    lines += [f"  {'top ' if r[3] else '    '}{r[0] / steps:5.2f}/step {r[1] * 1000 / r[0]:7.1f} µs"
              f" {r[2] / r[0]:6.1f} buffers  {r[4]}" for r in rows[:25]]
    lines += [f"  fn   {r[1] / steps:5.2f}/step {r[2] * 1000 / r[1]:7.1f} µs in all,"
              f" {r[3] * 1000 / r[1]:7.1f} µs its own  {r[0]}" for r in functions]
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=profile_chain_step.__doc__)
    parser.add_argument("dsn")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--two-calls", action="store_true",
                        help="jobq_complete_many + jobq_dequeue, as before the hand-off")
    parser.add_argument("--plain", action="store_true",
                        help="the two calls over jobs without dependencies")
    args = parser.parse_args()
    print(profile_chain_step(args.dsn, args.steps, args.two_calls, args.plain))
