"""Scenario 21: the Worker on a chain (each job depends on the one before), beside scenario 18's
two chain figures: the bare-SQL ceiling (one session deletes a job and claims the next in one
statement) and jobq's SQL chain (one session completes a job and claims the next, which that
completion hands to it, in one call of ``jobq_complete_and_claim``). The Worker completes a job
that others depend on with its next claim, in the same call, so each step's dependent is
claimed in the transaction that releases it.

Printed: jobs/s, its ratio to the ceiling and to jobq's SQL chain, and the time from a job's
completion to its dependent's claim (p50/p99; 0 when they share a transaction).

``python -m bench.run --only 21`` (``--quick``: 1,000 jobs instead of 10,000).
"""

from __future__ import annotations

import time
from collections.abc import Callable

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
