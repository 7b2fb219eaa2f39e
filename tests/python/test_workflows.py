"""Dependencies between jobs with real sessions, threads and Workers: what pgTAP cannot see
(concurrent completions of one fan-in's dependencies, a dependent enqueued while its
dependency completes, a handler that grafts work in front of a job that waits for it, a
rolled-back graph, the Python API). The rules themselves are in tests/pgtap/workflows.sql."""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

import psycopg
import psycopg.sql
import psycopg.types.json
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from psycopg.conninfo import make_conninfo
from tests.helpers import MakeRole
from tests.plans import log_plans

from pgq_client import InvalidArgument, Job, Queue, Worker

Conn = psycopg.Connection[Any]


def _status(conn: Conn, job_id: uuid.UUID) -> str:
    row = conn.execute("SELECT status FROM jobq_all_jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    return str(row[0])


def _drain(dsn: str, workers: int, job_type: str, finish: Callable[[Conn, uuid.UUID, str], None],
           barrier: threading.Barrier | None = None) -> list[BaseException]:
    """``workers`` threads, each on its own connection, claim jobs of ``job_type`` one at a
    time and end each with ``finish`` (its own transaction) until none is left."""
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                if barrier is not None:
                    barrier.wait()
                while True:
                    row = c.execute(
                        "SELECT id FROM jobq_dequeue(%s, ARRAY[%s])", (f"w{n}", job_type)
                    ).fetchone()
                    if row is None:
                        return
                    finish(c, row[0], f"w{n}")
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _complete(c: Conn, job_id: uuid.UUID, worker: str) -> None:
    assert c.execute("SELECT jobq_complete(%s, %s)", (job_id, worker)).fetchone() == (True,)


def test_a_fan_in_is_released_once_when_concurrent_workers_complete_its_dependencies(
    dsn: str, conn: Conn
) -> None:
    """32 sessions complete the 2,000 dependencies of one job, each completion its own
    transaction; a watcher reads the job and its succeeded dependencies in one snapshot all
    along: the job is never pending while one of them has not succeeded, and ends pending with
    nothing left to wait for (a second release would take waiting_on below zero)."""
    n = 2000
    q = Queue(dsn)
    parents = q.enqueue_many([{"job_type": "part"}] * n)
    child = q.enqueue("sum", depends_on=parents)
    assert _status(conn, child) == "waiting"
    seen: list[tuple[str, int]] = []
    done = threading.Event()

    def watch() -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            while not done.is_set():
                row = c.execute(
                    "SELECT (SELECT status FROM jobq_all_jobs WHERE id = %s),"
                    " (SELECT count(*)::int FROM jobq_all_jobs"
                    "  WHERE id = ANY(%s) AND status = 'succeeded')",
                    (child, parents),
                ).fetchone()
                assert row is not None
                seen.append((row[0], row[1]))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        errors = _drain(dsn, 32, "part", _complete, threading.Barrier(32))
    finally:
        done.set()
        watcher.join()
    assert errors == []
    assert [s for s in seen if s[0] != "waiting" and s[1] < n] == [], "released early"
    assert conn.execute(
        "SELECT status, waiting_on FROM jobq_jobs WHERE id = %s", (child,)
    ).fetchone() == ("pending", 0)
    claimed = conn.execute("SELECT id FROM jobq_dequeue('w', ARRAY['sum'], 10)").fetchall()
    assert claimed == [(child,)]


def test_a_release_of_many_dependents_decrements_them_in_one_pass_before_any_analyze(
    conn: Conn,
) -> None:
    """A graph enqueued and run before any ANALYZE (no statistics on the jobs or the edges):
    the completion of a job with 2,000 dependents decrements them with a hash join, in one
    pass; planned as a nested loop, each dependent was compared with every count (a fan-out of
    10,000 took 15-24 s)."""
    conn.execute("SELECT jobq_enqueue('p')")
    conn.execute(
        "SELECT count(*) FROM jobq_enqueue_many((SELECT jsonb_agg(jsonb_build_object("
        "'job_type', 'c', 'depends_on', jsonb_build_array(id))) FROM jobq_jobs, "
        "generate_series(1, 2000)))"
    )
    parent = conn.execute("SELECT id FROM jobq_dequeue('w', ARRAY['p'])").fetchone()
    assert parent is not None
    plans = log_plans(conn)
    assert conn.execute("SELECT jobq_complete(%s, 'w')", parent).fetchone() == (True,)
    released = [p for p in plans if "Update on jobq_jobs" in p]
    assert released, "no plan of the release's UPDATE was logged"
    assert not any("Nested Loop" in p for p in released), released[0]
    assert conn.execute(
        "SELECT count(*)::int FROM jobq_jobs WHERE job_type = 'c' AND status = 'pending'"
    ).fetchone() == (2000,)


def test_the_completing_transaction_claims_the_dependent_it_released(dsn: str, conn: Conn) -> None:
    """``jobq_complete`` then ``jobq_dequeue`` in one transaction: the dependent that the
    completion released is claimed by that transaction, and no other session sees it (nor
    the release) before the commit; a rollback undoes the completion, the release and the
    claim together."""
    q = Queue(dsn)
    parent = q.enqueue("chain")
    child = q.enqueue("chain", depends_on=[parent])
    with psycopg.connect(dsn) as tx:  # not autocommit: one transaction until commit
        for outcome in ("rollback", "commit"):
            assert tx.execute("SELECT id FROM jobq_dequeue('w', ARRAY['chain'])").fetchall() == [
                (parent,)
            ]
            tx.commit()
            assert tx.execute("SELECT jobq_complete(%s, 'w')", (parent,)).fetchone() == (True,)
            claimed = tx.execute("SELECT id FROM jobq_dequeue('w', ARRAY['chain'])").fetchall()
            assert claimed == [(child,)]
            # another session: the dependency still running, the dependent still waiting
            assert _status(conn, parent) == "processing"
            assert _status(conn, child) == "waiting"
            assert conn.execute("SELECT id FROM jobq_dequeue('x', ARRAY['chain'])").fetchall() == []
            if outcome == "rollback":
                tx.rollback()
                assert (_status(conn, parent), _status(conn, child)) == ("processing", "waiting")
                # the claim is taken back so that the next round claims the dependency again
                assert conn.execute(
                    "SELECT jobq_release(ARRAY[%s]::uuid[], 'w')", (parent,)
                ).fetchone() == (1,)
            else:
                tx.commit()
    assert (_status(conn, parent), _status(conn, child)) == ("succeeded", "processing")
    assert conn.execute(
        "SELECT locked_by, attempts FROM jobq_jobs WHERE id = %s", (child,)
    ).fetchone() == ("w", 1)


def test_a_chain_step_plans_its_completion_once_per_session(dsn: str) -> None:
    """Each step of a chain completes one job then claims the next in one transaction: after
    the first calls the completion's statement runs a generic plan (its arrays as parameters,
    ``$n``), not a plan made again for the values of every call. A chain of 3,000 analyzed, as
    a bench's: on its statistics a custom plan for one id looks cheaper than the generic one
    (ten ids), so that without a forced generic plan each call plans anew."""
    q = Queue(dsn)
    q.enqueue_many([{"job_type": "link", **({"after": [i]} if i else {})} for i in range(3000)])
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("ANALYZE jobq_jobs")
        ids = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', ARRAY['link'])")]
        for _ in range(6):
            with c.transaction():
                assert c.execute("SELECT jobq_complete_many(%s, 'w')", (ids,)).fetchone() == (1,)
                ids = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', ARRAY['link'])")]
        plans = log_plans(c)
        assert c.execute("SELECT jobq_complete_many(%s, 'w')", (ids,)).fetchone() == (1,)
    moved = [p for p in plans if "Delete on jobq_jobs" in p]
    assert moved, "no plan of the completion's DELETE was logged"
    # One job is found by its key alone (id = $2[1]), many by the array (= ANY ($2)): either
    # way a parameter, never the call's value.
    assert re.search(r"Index Cond: \(id = (ANY \()?\(?\$\d+\)?(\[1\])?\)", moved[0]), moved[0]


# -- jobq_complete_and_claim: the hand-off ----------------------------------------------------


def _hand(c: Conn, ids: list[uuid.UUID], worker: str = "w", **claim: Any) -> list[tuple[Any, ...]]:
    """``jobq_complete_and_claim`` of ``ids``: its rows as (id, status)."""
    named = "".join(f", {name} => %({name})s" for name in claim)
    return c.execute(
        f"SELECT id, status FROM jobq_complete_and_claim(%(ids)s::uuid[], %(worker)s{named})",
        {"ids": ids, "worker": worker, **claim},
    ).fetchall()


def _claim_one(c: Conn, job_type: str, worker: str = "w") -> uuid.UUID:
    row = c.execute("SELECT id FROM jobq_dequeue(%s, ARRAY[%s])", (worker, job_type)).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def _announced(listener: Conn, conn: Conn, channel: str) -> list[str]:
    """The payloads notified on ``channel`` so far: a marker notified now comes after every
    notification of a transaction that committed before (notifications are delivered in
    commit order), so no wait can end too early."""
    conn.execute("SELECT pg_notify(%s, 'marker')", (channel,))
    payloads: list[str] = []
    for note in listener.notifies():
        if note.payload == "marker":
            return payloads
        payloads.append(note.payload)
    return payloads


@pytest.fixture
def listener(dsn: str, conn: Conn) -> Any:
    row = conn.execute("SELECT jobq__channel()").fetchone()
    assert row is not None
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(row[0])))
        yield c, str(row[0])


def test_a_completion_hands_the_dependent_it_releases_to_its_worker(
    dsn: str, conn: Conn, listener: tuple[Conn, str]
) -> None:
    """The dependent goes from waiting to processing for the completing worker in the
    completing call, claimed as jobq_dequeue claims (attempt 1, its lock, claimed at the
    completion's instant), with no notification (no one else needs waking); the completed job
    comes back first, as a row with its id and status succeeded."""
    q = Queue(dsn)
    a = q.enqueue("chain")
    b = q.enqueue("chain", depends_on=[a])
    assert _claim_one(conn, "chain") == a
    _announced(listener[0], conn, listener[1])  # the enqueues'
    assert _hand(conn, [a], job_types=["chain"], lock_timeout="1 minute") == [
        (a, "succeeded"), (b, "processing")
    ]
    assert conn.execute(
        "SELECT status, locked_by, attempts, waiting_on, claimed_at = locked_at,"
        " locked_until - locked_at FROM jobq_jobs WHERE id = %s", (b,)
    ).fetchone() == ("processing", "w", 1, 0, True, timedelta(minutes=1))
    assert conn.execute(
        "SELECT status, finished_at FROM jobq_all_jobs WHERE id = %s", (a,)
    ).fetchone() == ("succeeded", conn.execute(
        "SELECT claimed_at FROM jobq_jobs WHERE id = %s", (b,)).fetchone()[0])  # type: ignore[index]
    assert _announced(listener[0], conn, listener[1]) == []
    # the worker's record and the metrics, as a claim keeps them
    assert conn.execute(
        "SELECT job_types FROM jobq_workers WHERE worker_id = 'w'"
    ).fetchone() == (["chain"],)
    assert _hand(conn, [b], job_types=["chain"]) == [(b, "succeeded")]
    assert _status(conn, b) == "succeeded"


@pytest.mark.parametrize(
    ("child", "claim"),
    [
        ({"job_type": "other"}, {"job_types": ["chain"]}),
        ({"queue": "elsewhere"}, {"job_types": ["chain"], "queues": ["default"]}),
        ({"queue": "elsewhere"}, {"queues": ["default", "elsewhere"]}),  # no job type filter
    ],
    ids=["another-job-type", "another-queue", "queue-filter-alone"],
)
def test_a_dependent_the_worker_does_not_take_is_released_pending_and_announced(
    dsn: str, conn: Conn, listener: tuple[Conn, str], child: dict[str, Any],
    claim: dict[str, Any],
) -> None:
    """Outside the worker's filters (or with a queue filter alone, where nothing is handed
    off) the dependent is released as jobq_complete_many releases it: pending, its queue
    notified, claimed only by a claim whose filters take it."""
    q = Queue(dsn)
    a = q.enqueue("chain")
    b = q.enqueue(
        child.get("job_type", "chain"), depends_on=[a], queue=child.get("queue", "default")
    )
    assert _claim_one(conn, "chain") == a
    _announced(listener[0], conn, listener[1])  # the enqueues'
    rows = _hand(conn, [a], **claim)
    assert rows[0] == (a, "succeeded")
    if "elsewhere" in claim.get("queues", []) and "job_types" not in claim:
        assert rows[1:] == [(b, "processing")]  # the claim took it, from pending
    else:
        assert rows[1:] == []
        assert _status(conn, b) == "pending"
    assert _announced(listener[0], conn, listener[1]) == [child.get("queue", "default")]


def test_a_limited_dependent_is_claimed_under_its_limit(dsn: str, conn: Conn) -> None:
    """A dependent with a limit group is never handed off: released pending, the claim that
    follows takes it only while its key has room."""
    q = Queue(dsn)
    q.set_limit("g", max_running=1)
    a1, a2 = q.enqueue("p"), q.enqueue("p")
    busy = q.enqueue("c", limit_group="g", limit_key="k")
    b1 = q.enqueue("c", depends_on=[a1], limit_group="g", limit_key="k")
    b2 = q.enqueue("c", depends_on=[a2], limit_group="g", limit_key="other")
    assert _claim_one(conn, "c") == busy
    assert {_claim_one(conn, "p"), _claim_one(conn, "p")} == {a1, a2}
    assert _hand(conn, [a1], job_types=["p", "c"]) == [(a1, "succeeded")]
    assert _status(conn, b1) == "pending"  # its key runs one already
    assert _hand(conn, [a2], job_types=["p", "c"]) == [(a2, "succeeded"), (b2, "processing")]


def test_a_dependent_in_a_paused_queue_waits_for_the_resume(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    a = q.enqueue("chain")
    b = q.enqueue("chain", depends_on=[a], queue="held")
    assert _claim_one(conn, "chain") == a
    assert q.pause("held")
    assert _hand(conn, [a], job_types=["chain"]) == [(a, "succeeded")]
    assert _status(conn, b) == "pending"
    assert q.resume("held")
    assert conn.execute(
        "SELECT id FROM jobq_dequeue('w', ARRAY['chain'])").fetchall() == [(b,)]


def test_a_hand_off_never_passes_a_pending_job_the_worker_could_take(
    dsn: str, conn: Conn
) -> None:
    """While a job the worker could claim is pending (here of higher priority), nothing is
    handed off: the dependent is released pending and the claim takes jobs in claim order."""
    q = Queue(dsn)
    a = q.enqueue("chain")
    b = q.enqueue("chain", depends_on=[a])
    assert _claim_one(conn, "chain") == a
    urgent = q.enqueue("other", priority=5)
    assert _hand(conn, [a], job_types=["chain", "other"]) == [
        (a, "succeeded"), (urgent, "processing")
    ]
    assert _status(conn, b) == "pending"


@pytest.mark.parametrize("ahead", ["due-scheduled", "expired-claim"])
def test_a_hand_off_waits_for_what_the_claim_would_promote_or_take_back(
    dsn: str, conn: Conn, ahead: str
) -> None:
    """A scheduled job come due (the claim promotes it) or an expired claim (the claim takes
    it back) is ahead of the released job in claim order: no hand-off, the claim takes it."""
    q = Queue(dsn)
    a = q.enqueue("chain")
    b = q.enqueue("chain", depends_on=[a])
    assert _claim_one(conn, "chain") == a
    if ahead == "due-scheduled":
        first = q.enqueue("chain", run_at=conn.execute(
            "SELECT clock_timestamp() + interval '20 milliseconds'").fetchone()[0])  # type: ignore[index]
    else:
        first = q.enqueue("chain")
        assert conn.execute(
            "SELECT id FROM jobq_dequeue('gone', ARRAY['chain'], lock_timeout => '1 ms')"
        ).fetchall() == [(first,)]
    conn.execute("SELECT pg_sleep(0.05)")  # due, or expired
    assert _hand(conn, [a], job_types=["chain"]) == [(a, "succeeded"), (first, "processing")]
    assert _status(conn, b) == "pending"


def test_a_handed_off_job_is_fenced_like_a_claimed_one(dsn: str, conn: Conn) -> None:
    """Another worker, or the same worker with another attempt, cannot complete a job handed
    off to it; its lock expires and is taken back like any claim's."""
    q = Queue(dsn)
    a = q.enqueue("chain")
    b = q.enqueue("chain", depends_on=[a])
    assert _claim_one(conn, "chain") == a
    assert _hand(conn, [a], job_types=["chain"], lock_timeout="1 millisecond")[1:] == [
        (b, "processing")
    ]
    assert conn.execute("SELECT jobq_complete(%s, 'x')", (b,)).fetchone() == (False,)
    assert _hand(conn, [b], attempts=[2], job_types=["nothing"]) == []
    assert conn.execute("SELECT pg_sleep(0.01)").fetchone()  # past its lock
    # the stale claim is taken back by the next claim, attempt 2 for worker x
    assert conn.execute(
        "SELECT id, attempts FROM jobq_dequeue('x', ARRAY['chain'])").fetchall() == [(b, 2)]
    assert _hand(conn, [b], attempts=[1]) == []  # the first claim's completion counts no more
    assert _hand(conn, [b], "x", attempts=[2]) == [(b, "succeeded")]


def test_a_dependent_still_waiting_for_another_dependency_keeps_waiting(
    dsn: str, conn: Conn
) -> None:
    """A completion that ends one of two dependencies of a job decrements its count and
    leaves it waiting (nothing handed off, nothing claimed); the completion of the other
    hands it off."""
    q = Queue(dsn)
    a1, a2 = q.enqueue("p"), q.enqueue("p")
    b = q.enqueue("c", depends_on=[a1, a2])
    assert {_claim_one(conn, "p"), _claim_one(conn, "p")} == {a1, a2}
    assert _hand(conn, [a1], job_types=["c"]) == [(a1, "succeeded")]
    assert conn.execute(
        "SELECT status, waiting_on, attempts, locked_by FROM jobq_jobs WHERE id = %s", (b,)
    ).fetchone() == ("waiting", 1, 0, None)
    assert _hand(conn, [a2], job_types=["c"]) == [(a2, "succeeded"), (b, "processing")]


def test_a_scheduled_dependent_is_released_for_its_run_at(
    dsn: str, conn: Conn, listener: tuple[Conn, str]
) -> None:
    """A dependent with a run_at still to come is released pending at its run_at: neither
    handed off nor announced (no one can take it yet), and not claimed."""
    q = Queue(dsn)
    a = q.enqueue("chain")
    run_at = conn.execute("SELECT now() + interval '1 hour'").fetchone()[0]  # type: ignore[index]
    b = q.enqueue("chain", depends_on=[a], run_at=run_at)
    assert _claim_one(conn, "chain") == a
    _announced(listener[0], conn, listener[1])  # the enqueues'
    assert _hand(conn, [a], job_types=["chain"]) == [(a, "succeeded")]
    assert conn.execute(
        "SELECT status, scheduled, available_at, waiting_on FROM jobq_jobs WHERE id = %s", (b,)
    ).fetchone() == ("pending", True, run_at, 0)
    assert _announced(listener[0], conn, listener[1]) == []


def test_a_full_hand_off_records_the_worker_as_a_claim_does(dsn: str, conn: Conn) -> None:
    """A hand-off that fills the batch runs no jobq_dequeue, yet the worker's record is kept
    as a claim keeps it: written when it is older than 5 seconds or its filters changed, left
    alone otherwise."""
    q = Queue(dsn)
    ids = q.enqueue_many(
        [{"job_type": "chain", **({"after": [i]} if i else {})} for i in range(4)]
    )
    assert _claim_one(conn, "chain") == ids[0]

    def record(handed: uuid.UUID) -> tuple[Any, ...]:
        """The worker's filters, and whether its record was written by the call that handed
        off ``handed`` (its time is that call's: the transaction's)."""
        row = conn.execute(
            "SELECT w.job_types, w.queues, w.last_claim_at = j.claimed_at"
            " FROM jobq_workers AS w, jobq_jobs AS j WHERE w.worker_id = 'w' AND j.id = %s",
            (handed,),
        ).fetchone()
        assert row is not None
        return tuple(row)

    conn.execute("UPDATE jobq_workers SET last_claim_at = now() - interval '1 hour'")
    assert _hand(conn, [ids[0]], job_types=["chain"])[1:] == [(ids[1], "processing")]
    assert record(ids[1]) == (["chain"], None, True)  # stale: written
    # fresh (a time to come stays fresh however slow the machine), the same filters: left
    conn.execute("UPDATE jobq_workers SET last_claim_at = now() + interval '1 minute'")
    assert _hand(conn, [ids[1]], job_types=["chain"])[1:] == [(ids[2], "processing")]
    assert record(ids[2]) == (["chain"], None, False)
    assert _hand(conn, [ids[2]], job_types=["chain", "other"])[1:] == [(ids[3], "processing")]
    assert record(ids[3]) == (["chain", "other"], None, True)  # new filters: written


def test_a_hand_off_is_counted_as_started(dsn: str, conn: Conn) -> None:
    """With counting on, a handed-off job is counted as started, as a claim counts it;
    with counting off, nothing is."""
    q = Queue(dsn)

    def started() -> float | None:
        found = [s.value for s in q.metrics() if s.metric == "jobq_started_total"
                 and s.labels == {"queue": "default", "job_type": "counted"}]
        return found[0] if found else None

    q.configure(metrics=True)
    ids = q.enqueue_many(
        [{"job_type": "counted", **({"after": [i]} if i else {})} for i in range(3)]
    )
    assert _claim_one(conn, "counted") == ids[0]
    assert started() == 1.0
    assert _hand(conn, [ids[0]], job_types=["counted"])[1:] == [(ids[1], "processing")]
    assert started() == 2.0
    q.configure(metrics=False)
    assert _hand(conn, [ids[1]], job_types=["counted"])[1:] == [(ids[2], "processing")]
    q.configure(metrics=True)
    assert started() == 2.0


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_completion_of_one_job_moves_it_as_one_of_many_does(
    dsn: str, conn: Conn, jobs: int
) -> None:
    """One job is completed by its own statement (found by its key alone), more by the
    statement that joins them to their elements: each fenced by its attempt, with its result,
    moved to the history alike; a NULL id completes nothing."""
    q = Queue(dsn)
    ids = [q.enqueue("one") for _ in range(jobs)]
    claimed = conn.execute(
        "SELECT id FROM jobq_dequeue('w', ARRAY['one'], %s)", (jobs,)
    ).fetchall()
    assert sorted(r[0] for r in claimed) == sorted(ids)
    results = [psycopg.types.json.Jsonb({"n": i}) for i in range(jobs)]
    assert conn.execute(
        "SELECT jobq_complete_many(%s, 'w', %s)", ([None] * jobs, [1] * jobs)
    ).fetchone() == (0,)
    assert conn.execute(
        "SELECT jobq_complete_many(%s, 'w', %s, %s)", (ids, [2] * jobs, results)
    ).fetchone() == (0,)  # another attempt
    assert conn.execute(
        "SELECT jobq_complete_many(%s, 'x', %s, %s)", (ids, [1] * jobs, results)
    ).fetchone() == (0,)  # another worker
    assert {_status(conn, i) for i in ids} == {"processing"}
    assert conn.execute(
        "SELECT jobq_complete_many(%s, 'w', %s, %s)", (ids, [1] * jobs, results)
    ).fetchone() == (jobs,)
    assert conn.execute(
        "SELECT id, status, result, attempts, claimed_at IS NOT NULL, finished_at IS NOT NULL,"
        " locked_by FROM jobq_all_jobs WHERE id = ANY (%s) ORDER BY id", (ids,)
    ).fetchall() == sorted(
        (i, "succeeded", {"n": n}, 1, True, True, None) for n, i in enumerate(ids)
    )


@pytest.mark.parametrize(
    ("args", "sqlstate", "named"),
    [
        ({"worker": ""}, "22023", "worker_id"),
        ({"attempts": [1, 1]}, "22023", "attempts"),
        ({"results": [None, None]}, "22023", "results"),
        ({"batch_size": 0}, "22023", "batch_size"),
        ({"lock_timeout": "0 seconds"}, "22023", "lock_timeout"),
        ({"job_types": [f"t{i}" for i in range(1001)]}, "22023", "job_types"),
        ({"queues": ["q" * 201]}, "22023", "queues"),
        ({"results": [psycopg.types.json.Jsonb({"x": "y" * 200})]}, "54000", "results"),
    ],
    ids=["worker_id", "attempts", "results", "batch_size", "lock_timeout", "job_types",
         "queues", "result-size"],
)
def test_bad_arguments_of_complete_and_claim_change_nothing(
    dsn: str, conn: Conn, args: dict[str, Any], sqlstate: str, named: str
) -> None:
    conn.execute("SELECT jobq_configure(max_payload_bytes => 100)")
    q = Queue(dsn)
    a = q.enqueue("chain")
    b = q.enqueue("chain", depends_on=[a])
    assert _claim_one(conn, "chain") == a
    worker = args.pop("worker", "w")
    with pytest.raises(psycopg.Error) as caught:
        _hand(conn, [a], worker, **args)
    assert caught.value.sqlstate == sqlstate
    assert named in str(caught.value)
    assert (_status(conn, a), _status(conn, b)) == ("processing", "waiting")


def test_a_fan_in_completed_with_claims_by_concurrent_workers_is_released_once(
    dsn: str, conn: Conn
) -> None:
    """16 sessions complete the 400 dependencies of one job with jobq_complete_and_claim,
    each claiming what it may next: the job is claimed exactly once, by one of them, and by
    then every dependency has succeeded."""
    q = Queue(dsn)
    ids = q.enqueue_many(
        [{"job_type": "p"}] * 400 + [{"job_type": "c", "after": list(range(1, 401))}]
    )
    child = ids[-1]
    seen: list[uuid.UUID] = []
    left: list[Any] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(16)

    def work(n: int) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                barrier.wait()
                held = [_claim_one(c, "p", f"w{n}")] if _status(c, child) == "waiting" else []
                while held:
                    rows = _hand(c, held, f"w{n}", job_types=["p", "c"], batch_size=2)
                    taken = [uuid.UUID(str(r[0])) for r in rows if r[1] == "processing"]
                    if child in taken:  # committed: every dependency's completion is too
                        seen.append(child)
                        left.append(c.execute(
                            "SELECT count(*)::int FROM jobq_all_jobs"
                            " WHERE job_type = 'p' AND status <> 'succeeded'"
                        ).fetchone())
                    held = taken
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert seen == [child]
    assert left == [(0,)]
    assert _status(conn, child) == "succeeded"


def test_a_worker_without_the_right_to_hand_off_completes_and_claims_in_two_calls(
    make_role: MakeRole, dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    """A role granted the worker level before jobq_complete_and_claim existed cannot call
    it: the worker says so once and completes a chain's steps with jobq_complete_many then
    jobq_dequeue, each step still claimed in the transaction that completes the one before."""
    role = make_role("worker", dsn=dsn, prefix="jobq_nohand")
    conn.execute(psycopg.sql.SQL(
        "REVOKE EXECUTE ON FUNCTION jobq_complete_and_claim(uuid[], text, integer[], jsonb[],"
        " text[], integer, interval, text[]) FROM {}").format(psycopg.sql.Identifier(role)))
    with Queue(dsn) as q:
        q.enqueue_many([
            {"job_type": "step", "payload": {"n": i}, **({"after": [i]} if i else {})}
            for i in range(6)
        ])
    worker = Worker(make_conninfo(dsn, user=role), handlers={"step": lambda job: None},
                    concurrency=1, poll_interval=3600)
    with caplog.at_level(logging.WARNING, logger="pgq_client"):
        worker.run(burst=True)
    assert sum("complete and claim" in r.getMessage() for r in caplog.records) == 1
    rows = conn.execute(
        "SELECT status, claimed_at, finished_at FROM jobq_all_jobs"
        " ORDER BY (payload ->> 'n')::int"
    ).fetchall()
    assert [r[0] for r in rows] == ["succeeded"] * 6
    assert [r[1] for r in rows[1:]] == [r[2] for r in rows[:-1]]


def test_a_dependent_enqueued_while_its_dependency_completes_is_released(
    dsn: str, conn: Conn
) -> None:
    """The enqueue of a dependent and the completion of its dependency race, in 40 rounds: the
    dependent is pending at the end of each, whichever committed first."""
    q = Queue(dsn)
    for _ in range(40):
        parent = q.enqueue("p")
        assert conn.execute("SELECT count(*) FROM jobq_dequeue('w', ARRAY['p'])").fetchone() == (1,)
        child = _race(partial(_enqueue_after, parent), partial(_complete_as_w, parent), dsn)
        assert _status(conn, child) == "pending"
        conn.execute("SELECT jobq_cancel(ARRAY[%s]::uuid[])", (child,))


def _enqueue_after(parent: uuid.UUID, q: Queue) -> uuid.UUID:
    return q.enqueue("c", depends_on=[parent])


def _complete_as_w(job_id: uuid.UUID, q: Queue) -> bool:
    return q.complete(job_id, "w")


def _race(first: Callable[[Queue], Any], second: Callable[[Queue], Any], dsn: str) -> Any:
    """Run ``first`` and ``second`` at once, each with a Queue of its own; ``first``'s result."""
    barrier = threading.Barrier(2)
    results: list[Any] = [None, None]

    def run(i: int, call: Callable[[Queue], Any]) -> None:
        with Queue(dsn) as own:
            own.status([])  # connected before the start
            barrier.wait()
            results[i] = call(own)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate((first, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results[0]


def test_a_graft_by_a_running_dependency_is_awaited_downstream(dsn: str) -> None:
    """oban#1472's shape: ``stage`` runs, grafts a two-step sub-workflow in front of the job
    that waits for it (found through jobq_job_graph) and returns before the sub-workflow ran;
    ``final`` runs only after the sub-workflow's last step."""
    ran: list[str] = []
    lock = threading.Lock()
    q = Queue(dsn)

    def stage(job: Job) -> None:
        with lock:
            ran.append("stage")
        waiting = [n.id for n in q.job_graph(job.id) if job.id in n.depends_on]
        first = q.enqueue("step", {"n": 1})
        second = q.enqueue("step", {"n": 2}, depends_on=[first])
        assert q.add_dependencies(waiting[0], [second]) == 1

    def step(job: Job) -> None:
        with lock:
            ran.append(f"step{job.payload['n']}")

    def final(job: Job) -> list[str]:
        with lock:
            ran.append("final")
        return sorted(d.job_type for d in job.dependencies())

    stage_id = q.enqueue("stage")
    final_id = q.enqueue("final", depends_on=[stage_id])
    Worker(dsn, {"stage": stage, "step": step, "final": final}, concurrency=2).run(burst=True)
    assert ran == ["stage", "step1", "step2", "final"]
    assert q.result(final_id, timeout=0) == ["stage", "step"]


def test_a_handler_reads_its_dependencies_results(dsn: str) -> None:
    q = Queue(dsn)
    ids = q.enqueue_many([
        {"job_type": "num", "payload": {"n": 1}},
        {"job_type": "num", "payload": {"n": 2}},
        {"job_type": "total", "after": [1, 2]},
    ])
    Worker(
        dsn,
        {
            "num": lambda job: job.payload["n"] * 10,
            "total": lambda job: sum(d.result for d in job.dependencies()),
        },
        concurrency=2,
    ).run(burst=True)
    assert q.result(ids[2], timeout=0) == 30
    deps = q.dependencies(ids[2])
    assert sorted((d.id, d.status, d.result) for d in deps) == sorted(
        [(ids[0], "succeeded", 10), (ids[1], "succeeded", 20)]
    )
    graph = {node.id: node for node in q.job_graph(ids[0])}
    assert set(graph) == {ids[0], ids[2]}
    assert sorted(graph[ids[2]].depends_on) == sorted(ids[:2])


def test_a_rolled_back_graph_leaves_nothing(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    outside = q.enqueue("p")
    with psycopg.connect(dsn) as tx:
        q.enqueue_many(
            [{"job_type": "a", "depends_on": [outside]}, {"job_type": "b", "after": [1]}],
            conn=tx,
        )
        q.enqueue("c", depends_on=[outside], conn=tx)
        tx.rollback()
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (1,)
    assert conn.execute("SELECT count(*) FROM jobq_job_dependencies").fetchone() == (0,)
    assert conn.execute(
        "SELECT has_dependents FROM jobq_jobs WHERE id = %s", (outside,)
    ).fetchone() == (False,)


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda q: q.enqueue("x", depends_on=[uuid.uuid4()]), "depends_on"),
        (lambda q: q.enqueue("x", on_dependency_failure="skip"), "on_dependency_failure"),
        (lambda q: q.enqueue_many([{"job_type": "a", "after": [1]}]), "after"),
        (lambda q: q.enqueue_many([{"job_type": "a", "after": [2]},
                                   {"job_type": "b", "after": [1]}]), "cycle"),
        (lambda q: q.add_dependencies(uuid.uuid4(), [uuid.uuid4()]), "depends_on"),
    ],
)
def test_bad_dependencies_are_refused_with_22023(
    dsn: str, conn: Conn, call: Callable[[Queue], object], argument: str
) -> None:
    with Queue(dsn) as q, pytest.raises(InvalidArgument) as raised:
        call(q)
    assert raised.value.sqlstate == "22023"
    assert argument in str(raised.value)
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (0,)


def test_the_cli_enqueues_after_a_job_and_shows_the_graph(dsn: str, conn: Conn) -> None:
    from click.testing import CliRunner

    from jobq_cli import cli

    first = Queue(dsn).enqueue("a")
    made = CliRunner().invoke(
        cli, ["--dsn", dsn, "enqueue", "b", "--json", "--after", str(first),
              "--on-dependency-failure", "run"],
    )
    assert made.exit_code == 0, made.output
    second = uuid.UUID(json.loads(made.output)["id"])
    assert _status(conn, second) == "waiting"
    shown = CliRunner().invoke(cli, ["--dsn", dsn, "jobs", "graph", str(first)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].split() == ["id", "job_type", "status", "depends_on"]
    assert lines[2].split() == [str(first), "a", "pending"]
    assert lines[3].split() == [str(second), "b", "waiting", str(first)]
    missing = CliRunner().invoke(cli, ["--dsn", dsn, "jobs", "graph", str(uuid.uuid4())])
    assert missing.exit_code == 1 and "no job" in missing.output


@pytest.mark.parametrize("level", ["admin", "producer"])
def test_the_job_page_shows_its_dependencies_and_dependents_linked(
    admin_dsn: str, dsn: str, level: str
) -> None:
    from starlette.testclient import TestClient
    from webtools import login_role

    from jobq_web import create_app

    ids = Queue(dsn).enqueue_many([
        {"job_type": "a"}, {"job_type": "b", "after": [1]}, {"job_type": "c", "after": [2]},
    ])
    with (
        login_role(admin_dsn, dsn, level) as role_dsn,
        TestClient(create_app(role_dsn), base_url="http://127.0.0.1") as client,
    ):
        page = client.get(f"/jobs/{ids[1]}")
        lone = client.get(f"/jobs/{Queue(dsn).enqueue('alone')}")
    assert page.status_code == 200, page.text
    assert "3 jobs in its graph" in page.text
    parents = page.text[page.text.index('id="graph-parents"'):]
    parents = parents[: parents.index("</table>")]
    assert f'href="/jobs/{ids[0]}"' in parents and ">pending<" in parents
    children = page.text[page.text.index('id="graph-children"'):]
    children = children[: children.index("</table>")]
    assert f'href="/jobs/{ids[2]}"' in children and ">waiting<" in children
    assert lone.status_code == 200 and "Workflow" not in lone.text


# -- a model of the rules ---------------------------------------------------------------------

BAD = ("failed", "dead_letter", "cancelled")
UNFINISHED = ("waiting", "pending", "processing")


@dataclass
class Node:
    rule: str
    deps: set[uuid.UUID] = field(default_factory=set)
    status: str = "pending"


class WorkflowModel(RuleBasedStateMachine):
    """Random graphs with random outcomes (success, failure, retry, dead letter, cancel,
    requeue, graft) against a model of the rules; after every step each job's status, and the
    count of dependencies that hold each waiting job back, are the model's. So no job is ever
    waiting without a dependency that holds it back, and none is released before all its
    dependencies succeeded (or finished, under rule run)."""

    conn: Conn

    def __init__(self) -> None:
        super().__init__()
        self.conn.execute("TRUNCATE jobq_jobs, jobq_jobs_history, jobq_job_dependencies")
        self.jobs: dict[uuid.UUID, Node] = {}

    def _holds(self, node: Node, parent: uuid.UUID) -> bool:
        status = self.jobs[parent].status
        return status in UNFINISHED or (status in BAD and node.rule == "wait")

    def _start(self, node: Node) -> str:  # as at an enqueue (or a requeue)
        if node.rule == "cancel" and any(self.jobs[p].status in BAD for p in node.deps):
            return "cancelled"
        return "waiting" if any(self._holds(node, p) for p in node.deps) else "pending"

    def _settle(self) -> None:
        changed = True
        while changed:
            changed = False
            for node in self.jobs.values():
                if node.status == "waiting":
                    new = self._start(node)
                    changed |= new != node.status
                    node.status = new

    def _ids(self, statuses: tuple[str, ...]) -> list[uuid.UUID]:
        return sorted(i for i, n in self.jobs.items() if n.status in statuses)

    @rule(data=st.data(), rule_name=st.sampled_from(["cancel", "run", "wait"]))
    def enqueue(self, data: st.DataObject, rule_name: str) -> None:
        known = sorted(self.jobs)
        deps = data.draw(st.sets(st.sampled_from(known), max_size=3)) if known else set()
        row = self.conn.execute(
            "SELECT jobq_enqueue('m', depends_on => %s::uuid[], on_dependency_failure => %s)",
            (sorted(deps), rule_name),
        ).fetchone()
        assert row is not None
        node = self.jobs[row[0]] = Node(rule_name, set(deps))
        node.status = self._start(node)

    @precondition(lambda self: self._ids(("pending",)))
    @rule(data=st.data(),
          outcome=st.sampled_from(["succeeded", "handed", "failed", "retry", "dead"]))
    def run(self, data: st.DataObject, outcome: str) -> None:
        job = data.draw(st.sampled_from(self._ids(("pending",))))
        c = self.conn
        c.execute(
            "UPDATE jobq_jobs SET available_at = now(), scheduled = false, max_attempts = 1000,"
            " priority = (SELECT max(priority) + 1 FROM jobq_jobs) WHERE id = %s", (job,)
        )
        claimed = c.execute("SELECT id, attempts FROM jobq_dequeue('w')").fetchone()
        assert claimed is not None and claimed[0] == job
        taken: list[uuid.UUID] = []
        if outcome == "succeeded":
            c.execute("SELECT jobq_complete(%s, 'w')", (job,))
        elif outcome == "handed":
            # completed with a claim: what it hands off (or claims) goes back to pending
            rows = c.execute(
                "SELECT id, status FROM jobq_complete_and_claim(ARRAY[%s]::uuid[], 'w',"
                " batch_size => 10)", (job,)
            ).fetchall()
            assert rows[0] == (job, "succeeded")
            taken = [r[0] for r in rows[1:]]
            assert all(r[1] == "processing" for r in rows[1:])
            c.execute("SELECT jobq_release(%s::uuid[], 'w')", (taken,))
        elif outcome == "dead":
            c.execute("UPDATE jobq_jobs SET max_attempts = attempts WHERE id = %s", (job,))
            c.execute("SELECT jobq_fail(%s, 'w', 'x')", (job,))
        else:
            c.execute("SELECT jobq_fail(%s, 'w', 'x', retry => %s)", (job, outcome == "retry"))
        self.jobs[job].status = {
            "dead": "dead_letter", "retry": "pending", "handed": "succeeded"
        }.get(outcome, outcome)
        self._settle()
        # what the completion claimed was pending by the model's rules (none released early)
        assert all(self.jobs[t].status == "pending" for t in taken)

    @precondition(lambda self: self._ids(("pending", "waiting")))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        job = data.draw(st.sampled_from(self._ids(("pending", "waiting"))))
        self.conn.execute("SELECT jobq_cancel(ARRAY[%s]::uuid[])", (job,))
        self.jobs[job].status = "cancelled"
        self._settle()

    @precondition(lambda self: self._ids(BAD))
    @rule(data=st.data())
    def requeue(self, data: st.DataObject) -> None:
        job = data.draw(st.sampled_from(self._ids(BAD)))
        self.conn.execute("SELECT jobq_requeue_dead_letter(%s)", (job,))
        node = self.jobs[job]
        node.status = "pending"
        node.status = self._start(node)
        self._settle()

    @precondition(lambda self: self._ids(("waiting",)) and len(self.jobs) > 1)
    @rule(data=st.data())
    def graft(self, data: st.DataObject) -> None:
        job = data.draw(st.sampled_from(self._ids(("waiting",))))
        parent = data.draw(st.sampled_from(sorted(set(self.jobs) - {job})))
        node = self.jobs[job]
        if job in self._ancestors(parent):
            with pytest.raises(psycopg.errors.InvalidParameterValue):
                self.conn.execute("SELECT jobq_add_dependencies(%s, ARRAY[%s])", (job, parent))
            return
        added = self.conn.execute(
            "SELECT jobq_add_dependencies(%s, ARRAY[%s])", (job, parent)
        ).fetchone()
        assert added == ((0,) if parent in node.deps else (1,))
        node.deps.add(parent)
        node.status = self._start(node)
        self._settle()

    def _ancestors(self, job: uuid.UUID) -> set[uuid.UUID]:
        seen, todo = set(), [job]
        while todo:
            j = todo.pop()
            if j not in seen:
                seen.add(j)
                todo.extend(self.jobs[j].deps)
        return seen

    @invariant()
    def the_database_follows_the_model(self) -> None:
        rows = self.conn.execute(
            "SELECT a.id, a.status, coalesce(j.waiting_on, 0) FROM jobq_all_jobs AS a"
            " LEFT JOIN jobq_jobs AS j ON j.id = a.id"
        ).fetchall()
        got = {r[0]: (r[1], r[2]) for r in rows}
        expected = {
            i: (n.status, sum(self._holds(n, p) for p in n.deps) if n.status == "waiting" else 0)
            for i, n in self.jobs.items()
        }
        assert got == expected


@pytest.mark.timeout(600)
def test_random_workflows_follow_the_model(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SET lock_timeout = '3s'")
        WorkflowModel.conn = c
        run_state_machine_as_test(
            WorkflowModel,
            settings=settings(
                max_examples=int(os.environ.get("JOBQ_MODEL_EXAMPLES", "25")),
                stateful_step_count=40,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            ),
        )
