"""Faults with ``async def`` handlers: lost connections and SIGTERM with async jobs in flight.

The worker processes run with ``--with-async``: beside ``fx`` and ``fx_plain`` they serve
``afx`` (transactional, on an ``AsyncConnection``) and ``afx_plain``, the same handlers as
``async def`` on the Worker's event loop. The suite's invariants hold for them as for the plain
ones: no job lost, no effect of a transactional job written twice or missing.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid

import pytest

from tests.faults.harness import Fx

LONG_LOCK = "120"


def test_killed_async_handler_transaction_rolls_back_its_effect_and_the_job_runs_again(
    fx: Fx,
) -> None:
    """The backend of an async handler's transaction is terminated after it wrote its effect,
    before the completion: the effect is rolled back, the attempt failed and retried, and the
    effect of attempt 2 is the only one."""
    fx.gate("cut/1")
    job_id = fx.enqueue_many(
        [{"job_type": "afx", "payload": {"gate": "cut", "gate_after_effect": True}}]
    )[0]
    a = fx.spawn("A", "--lock-timeout", LONG_LOCK, "--with-async")
    _, _, backend = fx.wait_started(job_id)
    assert backend is not None
    fx.wait_for(
        "the handler's effect (uncommitted)",
        lambda: fx.one(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = %(p)s"
            " AND state = 'idle in transaction' AND query LIKE 'INSERT INTO fx_effects%%'",
            {"p": backend},
        ),
    )
    assert fx.one("SELECT pg_terminate_backend(%(p)s)", {"p": backend}) is True
    fx.open_gate("cut/1")
    fx.wait_all_finished(1)
    job = fx.job(job_id)
    assert (job["status"], job["attempts"]) == ("succeeded", 2)
    assert [e["attempt"] for e in job["errors"]] == [1]
    assert fx.sql("SELECT attempt, worker FROM fx_effects") == [(2, "A")]
    assert a.alive()
    assert fx.stop_all() == {"A": 0}
    fx.check_invariants([job_id])


@pytest.mark.long(12)
def test_terminating_every_connection_with_async_jobs_loses_and_repeats_no_effect(fx: Fx) -> None:
    """Every worker connection (listener, acknowledger, both pools, ledgers) is terminated
    every 2 s for 10 s while jobs of the four kinds, sync and async, run and are enqueued: the
    processes stay up, every job finishes, transactional effects are exactly once."""
    workers = [
        fx.spawn(f"w{k}", "--lock-timeout", "8", "--with-async", concurrency=4) for k in range(2)
    ]
    fx.wait_listening(2)
    kinds = ("afx", "afx_plain", "fx", "fx_plain")
    ids: list[uuid.UUID] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    def produce() -> None:
        n = 0
        try:
            while not stop.is_set():
                ids.extend(
                    fx.enqueue_many(
                        [
                            {"job_type": kinds[i % 4], "max_attempts": 10,
                             "payload": {"n": i, "sleep": 0.03}}
                            for i in range(n, n + 12)
                        ]
                    )
                )
                n += 12
                time.sleep(0.1)
        except BaseException as exc:
            errors.append(exc)

    producer = threading.Thread(target=produce)
    producer.start()
    killed: list[int] = []
    deadline = time.monotonic() + 10
    try:
        while time.monotonic() < deadline:
            time.sleep(2)
            killed.append(fx.terminate())
    finally:
        stop.set()
        producer.join(30)
    assert not errors, f"producer failed: {errors}"
    assert all(n > 0 for n in killed), f"terminated per round: {killed}"
    assert all(w.alive() for w in workers), "\n".join(w.log_tail() for w in workers)
    fresh = fx.enqueue_many([{"job_type": k} for k in kinds * 50])
    fx.wait_all_finished(len(ids) + len(fresh), timeout=120)
    assert fx.stop_all() == {"w0": 0, "w1": 0}
    fx.check_invariants([*ids, *fresh])
    ran_async = fx.one(
        "SELECT count(*) FROM jobq_all_jobs WHERE job_type IN ('afx', 'afx_plain')"
        " AND status = 'succeeded'"
    )
    assert ran_async >= 200


def test_sigterm_with_async_jobs_in_flight_releases_the_unstarted_and_finishes_the_running(
    fx: Fx,
) -> None:
    """SIGTERM with 2 async jobs running and 4 claimed but not started: the 4 are released at
    once, the 2 running ones finish within the grace period and are acknowledged, exit 0."""
    fx.gate("busy")
    running = fx.enqueue_many(
        [{"job_type": jt, "priority": 10, "payload": {"gate": "busy"}}
         for jt in ("afx", "afx_plain")]
    )
    a = fx.spawn(
        "A", "--lock-timeout", "600", "--batch-size", "2", "--prefetch", "4", "--with-async"
    )
    for j in running:
        fx.wait_started(j)
    waiting = fx.enqueue_many([{"job_type": "afx" if i % 2 else "fx"} for i in range(4)])
    fx.wait_for(
        "A to prefetch the 4 waiting jobs",
        lambda: fx.one(
            "SELECT count(*) FROM jobq_all_jobs WHERE id = ANY(%(i)s) AND locked_by = 'A'",
            {"i": waiting},
        ) == 4,
    )
    a.signal(signal.SIGTERM)
    fx.wait_for(
        "the unstarted jobs to be released",
        lambda: fx.one(
            "SELECT count(*) FROM jobq_all_jobs WHERE id = ANY(%(i)s) AND status = 'pending'"
            " AND attempts = 0 AND locked_by IS NULL AND errors = '[]'",
            {"i": waiting},
        ) == 4,
        timeout=10,
    )
    assert a.alive(), "A must wait for its running async jobs"
    fx.open_gate("busy")
    assert a.wait(60) == 0
    for j in running:
        job = fx.job(j)
        assert (job["status"], job["attempts"]) == ("succeeded", 1)
    b = fx.spawn("B", "--lock-timeout", "600", "--with-async")
    fx.wait_all_finished(6)
    b.signal(signal.SIGTERM)
    assert b.wait(60) == 0
    for j in waiting:
        assert [s[:2] for s in fx.starts(j)] == [(1, "B")], "a released job had been started"
    fx.check_invariants([*running, *waiting])


def test_an_async_job_past_the_grace_period_is_cancelled_unacknowledged_then_taken_over(
    fx: Fx,
) -> None:
    """SIGTERM with an async transactional job that outlives the grace period: it is cancelled
    (its transaction, effect included, rolls back), not acknowledged, and the process exits 0.
    The job keeps its claim until its lock expires; then another worker runs it, and its effect
    is written once, by that claim."""
    fx.gate("stuck/1")
    job_id = fx.enqueue_many(
        [{"job_type": "afx", "payload": {"gate": "stuck", "gate_after_effect": True}}]
    )[0]
    a = fx.spawn("A", "--lock-timeout", "600", "--shutdown-grace", "1", "--with-async")
    fx.wait_started(job_id)
    a.signal(signal.SIGTERM)
    assert a.wait(60) == 0
    job = fx.job(job_id)
    assert (job["status"], job["locked_by"], job["attempts"]) == ("processing", "A", 1)
    assert fx.sql("SELECT * FROM fx_effects") == []
    fx.backdate_locks("A")  # its lock expires (no more heartbeats): move time, do not wait
    b = fx.spawn("B", "--lock-timeout", "600", "--with-async")
    fx.wait_all_finished(1)
    b.signal(signal.SIGTERM)
    assert b.wait(60) == 0
    job = fx.job(job_id)
    assert (job["status"], job["attempts"]) == ("succeeded", 2)
    assert fx.sql("SELECT attempt, worker FROM fx_effects") == [(2, "B")]
    fx.check_invariants([job_id])
