"""Claims beside a snapshot that another session holds (the xmin horizon stays where it was):
the claim index keeps the entries of every job claimed since, the claims switch to their
session marks (jobq.claim_marks), and concurrent sessions still take each job once, in claim
order. The one-session cases of the marks are in tests/pgtap/dequeue_marks.sql."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import psycopg

Conn = psycopg.Connection[Any]

JOBS = 15_000


def test_four_sessions_drain_beside_a_held_snapshot_each_job_once_in_claim_order(
    dsn: str, conn: Conn
) -> None:
    conn.execute(
        "SELECT count(*) FROM jobq_enqueue_many((SELECT jsonb_agg(jsonb_build_object("
        "'job_type', 't', 'priority', g %% 3)) FROM generate_series(1, %s) AS g))",
        (JOBS,),
    )
    got: list[list[tuple[Any, ...]]] = [[] for _ in range(4)]
    marked = [False] * 4
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def drain(i: int) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                barrier.wait(30)
                while True:
                    rows = c.execute(
                        "SELECT id, priority, available_at FROM jobq_dequeue("
                        "%s, job_types => ARRAY['t'], batch_size => 100)", (f"w{i}",)
                    ).fetchall()
                    if not rows:
                        return
                    got[i].append(rows)
                    setting = c.execute(
                        "SELECT current_setting('jobq.claim_marks', true)").fetchone()
                    marked[i] = marked[i] or bool(setting and setting[0])
                    c.execute("SELECT jobq_complete_many(%s, %s)", ([r[0] for r in rows], f"w{i}"))
        except BaseException as exc:
            errors.append(exc)

    with psycopg.connect(dsn) as holder:
        holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM jobq_jobs").fetchone()
        threads = [threading.Thread(target=drain, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        holder.rollback()
    assert not errors, errors
    ids = [r[0] for session in got for claim in session for r in claim]
    assert len(ids) == JOBS and len(set(ids)) == JOBS  # every job, each once
    assert any(marked), "no session used marks beside the held snapshot"

    def key(r: tuple[Any, ...]) -> tuple[Any, ...]:
        return (-r[1], r[2], r[0])

    for session in got:
        for claim in session:  # each claim returns its rows in claim order
            assert [key(r) for r in claim] == sorted(key(r) for r in claim)
        # and a session's claims follow each other in claim order: with every job enqueued
        # before the drain, no claim can find a job before one the session already had
        ends = [(key(c[0]), key(c[-1])) for c in session]
        assert all(prev[1] < nxt[0] for prev, nxt in itertools.pairwise(ends))
    row = conn.execute("SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'").fetchone()
    assert row is not None and row[0] == JOBS
