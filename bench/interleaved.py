"""The SQL functions of another revision against this checkout's, interleaved on one cluster.

``python -m bench.interleaved ADMIN_DSN --base REV [--mode pair|chain|empty|worker]``

On a VM whose speed drifts by a third within minutes, two ``make bench`` runs taken one after
the other compare the drift as much as the code. This command runs both versions side by side
instead. It creates two databases on the cluster of ``ADMIN_DSN`` (a throwaway one:
``scripts/testdb.sh start DIR``, with ``fsync=on synchronous_commit=on`` for durable commits):

- ``jobq_ab_head`` has jobq installed from this checkout;
- ``jobq_ab_base`` has the same, then every function file that differs at ``REV`` replaced by
  ``REV``'s version (``git show``). The command refuses a ``REV`` whose migrations differ: the
  functions of another schema would not compare.

One process then alternates between the two in rounds of ``--steps`` steps, the order
swapped each round, so that both sides meet the same drift. It prints each side's client
time per step and, where ``pg_stat_statements`` is in ``shared_preload_libraries``, the
server time and shared buffers of the top-level statements per step.

The modes:
- ``pair``: ``jobq_dequeue`` of ``--batch`` jobs, then ``jobq_complete_many`` of them;
- ``chain``: ``jobq_complete_and_claim`` along a chain, one job per step;
- ``empty``: ``jobq_dequeue`` on an empty queue;
- ``worker``: a ``Worker(concurrency=8).run(burst=True)`` over ``--jobs`` jobs per round,
  printing jobs/s.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgq_client.migrate import migrate

from . import workflows

ROOT = Path(__file__).resolve().parent.parent
SIDES = ("jobq_ab_base", "jobq_ab_head")


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout


def prepare(admin: str, base: str) -> dict[str, str]:
    """The two databases, built afresh; their DSNs by name."""
    try:
        _git("rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    except subprocess.CalledProcessError:
        raise SystemExit(f"--base {base!r} names no commit of this repository") from None
    if _git("diff", "--name-only", base, "--", "sql/migrations").strip():
        raise SystemExit(f"the migrations differ at {base}: its functions would not compare")
    # Files changed on both sides; one added since keeps this checkout's body on both (the
    # base's functions do not call it), one removed since is not put back.
    changed = [f for f in _git("diff", "--name-only", "--diff-filter=M", base, "--",
                               "sql/functions").split() if f.endswith(".sql")]
    dsns = {}
    with psycopg.connect(admin, autocommit=True) as conn:
        for name in SIDES:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            dsns[name] = make_conninfo(admin, dbname=name)
            migrate(dsns[name])
    with psycopg.connect(dsns[SIDES[0]]) as conn:  # one transaction, as the installer's
        conn.execute("SET LOCAL search_path = public, pg_temp")  # what FROM CURRENT keeps
        for path in changed:
            conn.execute(_git("show", f"{base}:{path}").encode())
    for dsn in dsns.values():
        with psycopg.connect(dsn, autocommit=True) as conn:
            if conn.execute("SELECT current_setting('shared_preload_libraries') "
                            "LIKE '%pg_stat_statements%'").fetchone() == (True,):
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    print(f"{len(changed)} function file(s) of {base} in {SIDES[0]}: {', '.join(changed)}")
    return dsns


def _fill(conn: psycopg.Connection[Any], mode: str, jobs: int) -> None:
    conn.execute("DELETE FROM jobq_jobs")
    conn.execute("TRUNCATE jobq_job_dependencies")
    if mode != "empty":
        workflows._enqueue(conn, jobs, (lambda i: [i] if i else []) if mode == "chain"
                           else (lambda i: []))
    conn.execute("VACUUM ANALYZE jobq_jobs")


def _stepper(conn: psycopg.Connection[Any], mode: str, batch: int) -> Callable[[], None]:
    held: list[Any] = []
    if mode == "chain":
        held[:] = [r[0] for r in conn.execute("SELECT id FROM jobq_dequeue('w0')").fetchall()]

    def step() -> None:
        if mode == "pair":
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM jobq_dequeue('w0', NULL, %s)", (batch,)).fetchall()]
            conn.execute("SELECT jobq_complete_many(%s, 'w0')", (ids,))
        elif mode == "chain":
            held[:] = [r[0] for r in conn.execute(
                "SELECT id, status FROM jobq_complete_and_claim(%s, 'w0')", (held,)
            ).fetchall() if r[1] == "processing"]
        else:
            conn.execute("SELECT id FROM jobq_dequeue('w0', NULL, %s)", (batch,)).fetchall()

    return step


def steps(dsns: dict[str, str], mode: str, batch: int, rounds: int, per: int) -> None:
    conns = {name: psycopg.connect(dsn, autocommit=True) for name, dsn in dsns.items()}
    try:
        total = rounds * per + 60
        stepper = {}
        for name, conn in conns.items():
            _fill(conn, mode, total * (batch if mode == "pair" else 1))
            stepper[name] = _stepper(conn, mode, batch)
            for _ in range(50):
                stepper[name]()
            if _has_pgss(conn):
                conn.execute("SELECT pg_stat_statements_reset()")
        wall = dict.fromkeys(conns, 0.0)
        for r in range(rounds):
            for name in SIDES if r % 2 == 0 else SIDES[::-1]:
                start = time.perf_counter()
                for _ in range(per):
                    stepper[name]()
                wall[name] += time.perf_counter() - start
        n = rounds * per
        for name, conn in conns.items():
            what = f"{mode} b{batch}" if mode != "chain" else mode
            line = f"{name}: {what}: client {wall[name] * 1e6 / n:,.0f} µs/step"
            if _has_pgss(conn):
                row = conn.execute(
                    "SELECT sum(s.total_exec_time), sum(s.shared_blks_hit + s.shared_blks_read)"
                    " FROM pg_stat_statements AS s"
                    " WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = %s)"
                    " AND s.toplevel AND s.query NOT LIKE '%%pg_stat%%'", (name,)).fetchone()
                if row and row[0] is not None:
                    line += (f", server {row[0] * 1000 / n:,.0f} µs/step,"
                             f" {row[1] / n:,.0f} buffers/step")
            print(line)
    finally:
        for conn in conns.values():
            conn.close()


def _has_pgss(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT to_regclass('pg_stat_statements') IS NOT NULL").fetchone()
    return bool(row and row[0])


def workers(dsns: dict[str, str], jobs: int, rounds: int) -> None:
    from datetime import timedelta

    from pgq_client.worker import Worker

    rates: dict[str, list[float]] = {name: [] for name in dsns}
    for r in range(rounds):
        for name in SIDES if r % 2 == 0 else SIDES[::-1]:
            with psycopg.connect(dsns[name], autocommit=True) as conn:
                _fill(conn, "pair", jobs)
                conn.execute("TRUNCATE jobq_jobs_history")
                conn.execute("CHECKPOINT")
            worker = Worker(dsns[name], handlers={"step": lambda job: None}, concurrency=8,
                            retry_backoff=timedelta(0), poll_interval=1.0)
            start = time.perf_counter()
            worker.run(burst=True)
            rates[name].append(jobs / (time.perf_counter() - start))
    for name, values in rates.items():
        print(f"{name}: worker: {' / '.join(f'{v:,.0f}' for v in values)} jobs/s,"
              f" mean {sum(values) / len(values):,.0f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("admin_dsn")
    parser.add_argument("--base", required=True, help="the revision to compare with")
    parser.add_argument("--mode", choices=("pair", "chain", "empty", "worker"), default="pair")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=100, help="steps per side and round")
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per Worker round")
    args = parser.parse_args(argv)
    dsns = prepare(args.admin_dsn, args.base)
    if args.mode == "worker":
        workers(dsns, args.jobs, args.rounds)
    else:
        steps(dsns, args.mode, args.batch, args.rounds, args.steps)


if __name__ == "__main__":
    main()
