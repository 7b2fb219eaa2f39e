"""The SQL functions under hostile plans and crowds: claims bounded by batch_size, one row per
idempotency key with 50 concurrent callers (committing, rolling back, in REPEATABLE READ)."""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from pgq_client import Queue, SerializationFailure
from tests.faults.harness import Fx

# Planner settings that push the claim towards nested loops, generic plans and index-less scans:
# whatever the plan, a call must not lock or return more than batch_size rows.
HOSTILE_SETTINGS = [
    "SET enable_hashjoin = off",
    "SET enable_mergejoin = off",
    "SET enable_seqscan = off",
    "SET enable_bitmapscan = off",
    "SET enable_sort = off",
    "SET enable_material = off",
    "SET plan_cache_mode = force_generic_plan",
    "SET random_page_cost = 0.01",
    "SET cpu_tuple_cost = 1",
    # The disabled plan types cost 1e10 each, far above the JIT thresholds: without this, every
    # call spends a second compiling. JIT changes no plan shape.
    "SET jit = off",
]

# Rows this transaction claimed (new row versions it wrote), and rows it locked without
# writing them (their visible version carries its xid as xmax), pending or not. A locked pending
# row it did not claim would be hidden from every other claimer (SKIP LOCKED) for nothing.
# A locked row that is no longer pending is PostgreSQL's FOR UPDATE at work: a row pending in the
# scan's snapshot but claimed meanwhile by a concurrent caller is locked (its newest version),
# re-checked, found processing and skipped; the lock stays until the end of the transaction.
# pg_current_xact_id() is an xid8; the cluster is fresh, its epoch 0: the low 32 bits are the xid.
MY_ROWS = """
WITH me AS (SELECT (pg_current_xact_id()::text::bigint % 4294967296)::text AS xid)
SELECT
    count(*) FILTER (WHERE j.xmin::text = me.xid),
    count(*) FILTER (WHERE j.xmax::text = me.xid AND j.xmin::text <> me.xid
                       AND j.status = 'pending'),
    count(*) FILTER (WHERE j.xmax::text = me.xid AND j.xmin::text <> me.xid
                       AND j.status <> 'pending')
FROM jobq_jobs AS j, me
"""


@pytest.mark.long(13)
def test_claim_never_locks_or_returns_more_than_batch_size_under_skewed_stats(fx: Fx) -> None:
    """Statistics gathered on a table whose pending part is empty (ANALYZE after 5,000 finished
    jobs), then 6,000 pending jobs the planner does not know about, every enable_* that could
    help turned off, generic plans forced: 16 concurrent claimers with random batch sizes, each
    call checked inside its own transaction for rows returned, claimed and merely locked."""
    old = fx.enqueue_many([{"job_type": "t", "queue": "cold"} for _ in range(5000)])
    fx.sql(
        "UPDATE jobq_jobs SET status = 'succeeded', finished_at = now() - interval '1 day'"
        " WHERE id = ANY(%(i)s)",
        {"i": old},
    )
    fx.sql("ANALYZE jobq_jobs")
    # Skewed: nearly all in one queue and one priority, a few outliers elsewhere.
    jobs: list[dict[str, Any]] = [{"job_type": "t", "queue": "hot"} for _ in range(5900)]
    jobs += [{"job_type": "t", "queue": f"q{i % 7}", "priority": i % 5 - 2} for i in range(100)]
    ids = fx.enqueue_many(jobs)

    claimed: list[uuid.UUID] = []
    problems: list[str] = []
    others_claims = [0]
    lock = threading.Lock()
    barrier = threading.Barrier(16)

    def claimer(n: int) -> None:
        rng = random.Random(n)
        with psycopg.connect(fx.dsn) as c:
            for setting in HOSTILE_SETTINGS:
                c.execute(setting)
            c.commit()
            barrier.wait()
            while True:
                batch = rng.randint(1, 7)
                queues = rng.choice([None, ["hot"], ["hot", "q1"], ["q2", "q3"]])
                rows = c.execute(
                    "SELECT id FROM jobq_dequeue(worker_id => %(w)s, batch_size => %(b)s,"
                    " queues => %(q)s)",
                    {"w": f"c{n}", "b": batch, "q": queues},
                ).fetchall()
                mine, locked_pending, rechecked = c.execute(MY_ROWS).fetchone()  # type: ignore[misc]
                if len(rows) > batch or mine != len(rows) or locked_pending != 0:
                    with lock:
                        problems.append(
                            f"batch_size {batch}: returned {len(rows)}, claimed {mine},"
                            f" locked pending rows without claiming them {locked_pending}"
                        )
                if rechecked:
                    with lock:
                        others_claims[0] += rechecked
                c.execute(
                    "SELECT jobq_complete_many(%(i)s::uuid[], %(w)s)",
                    {"i": [r[0] for r in rows], "w": f"c{n}"},
                )
                c.commit()
                with lock:
                    claimed.extend(r[0] for r in rows)
                if not rows and queues is None:
                    return

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(claimer, range(16)))
    assert not problems, f"{len(problems)} calls over their batch_size, e.g. {problems[:5]}"
    assert len(claimed) == len(set(claimed)) == len(ids), "a job was claimed twice or never"
    print(f"rows claimed by a concurrent caller, locked, skipped on re-check: {others_claims[0]}")
    fx.check_invariants({**dict.fromkeys(old, "succeeded"), **dict.fromkeys(ids, "succeeded")})


ROUNDS = 200
CALLERS = 50


def _rounds(
    fx: Fx, call: Callable[[int, int, str], uuid.UUID | None], rounds: int = ROUNDS
) -> dict[str, list[uuid.UUID]]:
    """``rounds`` rounds of ``CALLERS`` threads calling ``call(caller, round, key)`` at once
    (a barrier per round); the ids each round's committed callers got, by key."""
    got: dict[str, list[uuid.UUID]] = {}
    errors: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(CALLERS)

    def caller(n: int) -> None:
        for r in range(rounds):
            key = f"round-{r}"
            barrier.wait()
            try:
                job_id = call(n, r, key)
            except Exception as exc:
                with lock:
                    errors.append(f"caller {n}, round {r}: {type(exc).__name__}: {exc}")
                continue
            if job_id is not None:
                with lock:
                    got.setdefault(key, []).append(job_id)

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(CALLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, f"{len(errors)} callers got an error, e.g. {errors[:3]}"
    return got


def _one_row_per_key(fx: Fx, got: dict[str, list[uuid.UUID]], rounds: int = ROUNDS) -> None:
    rows = fx.sql("SELECT idempotency_key, id FROM jobq_all_jobs")
    by_key = dict(rows)
    assert len(rows) == len(by_key) == rounds, f"{len(rows)} rows for {rounds} keys"
    wrong = {k: set(ids) - {by_key.get(k)} for k, ids in got.items() if set(ids) != {by_key.get(k)}}
    assert not wrong, f"callers got ids that are not their key's job: {list(wrong.items())[:3]}"
    fx.check_invariants(dict.fromkeys(by_key.values(), "pending"))


def test_fifty_concurrent_enqueues_of_one_key_make_one_row_in_each_of_200_rounds(fx: Fx) -> None:
    queues = [Queue(fx.dsn) for _ in range(CALLERS)]
    try:
        got = _rounds(fx, lambda n, r, key: queues[n].enqueue("t", {"n": n}, idempotency_key=key))
    finally:
        for q in queues:
            q.close()
    assert all(len(ids) == CALLERS for ids in got.values())
    _one_row_per_key(fx, got)


def test_concurrent_enqueues_of_one_key_with_callers_that_roll_back(fx: Fx) -> None:
    """In each round a different fifth of the callers enqueue in their own transaction and roll
    it back — sometimes the first inserter, on whose row the others wait. The committed callers
    still make exactly one row, and all get its id."""
    conns = [psycopg.connect(fx.dsn) for _ in range(CALLERS)]
    q = Queue(fx.dsn)

    def call(n: int, r: int, key: str) -> uuid.UUID | None:
        c = conns[n]
        rolls_back = (n + r) % 5 == 0
        with c.transaction():
            job_id = q.enqueue("t", {"n": n}, idempotency_key=key, conn=c)
            if rolls_back:
                raise psycopg.Rollback()
        return None if rolls_back else job_id

    try:
        got = _rounds(fx, call)
    finally:
        for c in conns:
            c.close()
        q.close()
    assert all(len(ids) == CALLERS * 4 // 5 for ids in got.values())
    _one_row_per_key(fx, got)


def test_concurrent_enqueues_of_one_key_in_repeatable_read_are_retried_by_queue(fx: Fx) -> None:
    """Every caller's session runs REPEATABLE READ by default. A caller whose snapshot predates
    the winner's commit gets a serialization failure from ON CONFLICT; Queue, owning the
    transaction, retries it and returns the winner's id: no caller sees an error."""
    rr = make_conninfo(fx.dsn, options="-c default_transaction_isolation=repeatable\\ read")
    with psycopg.connect(rr) as c:
        assert c.execute("SHOW transaction_isolation").fetchone() == ("repeatable read",)
    queues = [Queue(rr) for _ in range(CALLERS)]
    try:
        got = _rounds(fx, lambda n, r, key: queues[n].enqueue("t", {"n": n}, idempotency_key=key),
                      rounds=100)
    finally:
        for q in queues:
            q.close()
    assert all(len(ids) == CALLERS for ids in got.values())
    _one_row_per_key(fx, got, rounds=100)


def test_repeatable_read_caller_transaction_gets_a_typed_serialization_failure_to_retry(
    fx: Fx,
) -> None:
    """With ``conn=`` the transaction is the caller's, so is the retry: the failure it gets is
    ``SerializationFailure`` (SQLSTATE 40001), and retrying its transaction returns the row."""
    q = Queue(fx.dsn)
    conns = [psycopg.connect(fx.dsn) for _ in range(CALLERS)]
    failures = [0]
    lock = threading.Lock()

    def call(n: int, r: int, key: str) -> uuid.UUID | None:
        c = conns[n]
        for _ in range(10):
            try:
                with c.transaction():
                    c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    c.execute("SELECT 1")  # take the snapshot before the others commit
                    return q.enqueue("t", {"n": n}, idempotency_key=key, conn=c)
            except SerializationFailure as exc:
                assert exc.sqlstate == "40001"
                with lock:
                    failures[0] += 1
        raise AssertionError("still failing after 10 tries")

    try:
        got = _rounds(fx, call, rounds=50)
    finally:
        for c in conns:
            c.close()
        q.close()
    _one_row_per_key(fx, got, rounds=50)
    assert failures[0] > 0, "no serialization failure happened: the race was not exercised"
