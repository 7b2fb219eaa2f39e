"""A workflow whose dependency's worker process is SIGKILLed mid-job (the fault harness, with
its ledger of starts): the dependent keeps waiting through the kill and the takeover, and runs
once, after the attempt that succeeded."""

from __future__ import annotations

import signal

from tests.faults.harness import Fx

LONG_LOCK = "120"  # no lock expires by itself: the test backdates the killed worker's claim


def test_a_dependent_waits_through_its_dependencys_sigkilled_worker_and_takeover(fx: Fx) -> None:
    fx.gate("parent/1")
    parent = fx.enqueue_many(
        [{"job_type": "fx", "priority": 10, "payload": {"gate": "parent"}}]
    )[0]
    child = fx.enqueue_many([{"job_type": "fx", "depends_on": [str(parent)]}])[0]
    assert fx.job(child)["status"] == "waiting"
    a = fx.spawn("A", "--lock-timeout", LONG_LOCK)
    fx.wait_started(parent, attempt=1)
    a.signal(signal.SIGKILL)
    assert a.wait(10) == -signal.SIGKILL
    assert fx.job(child)["status"] == "waiting", "released by a worker that died"

    assert fx.backdate_locks("A") == 1
    fx.spawn("B", "--lock-timeout", LONG_LOCK)
    fx.wait_for("the dependent to succeed", lambda: fx.job(child)["status"] == "succeeded")
    assert fx.stop_all() == {"A": -signal.SIGKILL, "B": 0}

    assert [(s[0], s[1]) for s in fx.starts(parent)] == [(1, "A"), (2, "B")]
    assert [(s[0], s[1]) for s in fx.starts(child)] == [(1, "B")]
    assert fx.one(
        "SELECT c.at > p.finished_at FROM fx_ledger AS c, jobq_all_jobs AS p"
        " WHERE c.job_id = %(c)s AND p.id = %(p)s", {"c": child, "p": parent}
    ), "the dependent started before its dependency's completion"
    fx.check_invariants([parent, child])
