"""Worker processes that are killed, stopped, poisoned and shut down, under real load.

Each test runs ``tests.faults.worker_proc`` subprocesses against its own database, holds jobs
where it wants them with gates (rows of ``fx_gate``), moves time by backdating ``locked_at``
instead of waiting for a lock timeout, and ends with the shared invariants
(:meth:`tests.faults.harness.Fx.check_invariants`).
"""

from __future__ import annotations

import itertools
import signal
import threading
import time
import uuid
from functools import partial
from typing import Any

import psycopg
import pytest

from tests.faults.harness import Fx
from tests.faults.worker_proc import EXIT_POISON

# Long enough that no lock expires by itself during a test: takeovers happen only when a test
# backdates locked_at. Heartbeats (every lock_timeout / 3) never fire in a short test either.
LONG_LOCK = "120"


# 20,000 jobs, enough for every fault to land mid-run: about 30 s on 2 cores when the machine
# is otherwise idle.
SCALE_JOBS = 20_000
SCALE_CHUNK = 1_000


@pytest.mark.long(35)
def test_four_processes_of_four_threads_run_20000_jobs_enqueued_while_running(fx: Fx) -> None:
    """4 worker processes x 4 handler threads, 4 queues served by overlapping worker subsets,
    3 priorities, transactional and plain handlers, jobs enqueued while being processed."""
    subsets: list[list[str]] = [["q0", "q1"], ["q1", "q2"], ["q2", "q3"], []]
    for k, queues in enumerate(subsets):
        args = [a for q in queues for a in ("--queue", q)]
        fx.spawn(f"w{k}", *args, "--lock-timeout", LONG_LOCK, concurrency=4)

    ids: list[uuid.UUID] = []
    errors: list[BaseException] = []

    def produce() -> None:
        try:
            for start in range(0, SCALE_JOBS, SCALE_CHUNK):
                ids.extend(
                    fx.enqueue_many(
                        [
                            {
                                "job_type": "fx" if i % 2 else "fx_plain",
                                "queue": f"q{i % 4}",
                                "priority": (i // 4) % 3 - 1,
                                "payload": {"n": i},
                            }
                            for i in range(start, start + SCALE_CHUNK)
                        ]
                    )
                )
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    producer = threading.Thread(target=produce)
    producer.start()
    producer.join(120)
    assert not producer.is_alive() and not errors, f"producer failed: {errors}"
    fx.wait_all_finished(SCALE_JOBS, timeout=200)
    assert fx.stop_all() == {f"w{k}": 0 for k in range(4)}
    fx.check_invariants(ids)

    # Queue filters held: a job of queue q was started only by a worker serving q.
    serving = {f"q{n}": {f"w{k}" for k, qs in enumerate(subsets) if not qs or f"q{n}" in qs}
               for n in range(4)}
    by_queue = fx.sql(
        "SELECT j.queue, array_agg(DISTINCT l.worker) FROM fx_ledger AS l"
        " JOIN jobq_all_jobs AS j ON j.id = l.job_id GROUP BY j.queue"
    )
    for queue, workers in by_queue:
        assert set(workers) <= serving[queue], f"queue {queue} run by {workers}"
    # Nothing was retried: no claim was lost without a fault.
    assert fx.one("SELECT max(attempts) FROM jobq_all_jobs") == 1


def test_sigkilled_worker_job_is_taken_over_after_lock_timeout_with_attempt_2(fx: Fx) -> None:
    """SIGKILL in the middle of a transactional handler (its effect written, not committed):
    the effect vanishes with the transaction; after the lock timeout (backdated) another worker
    takes the job over as attempt 2, the takeover is recorded, the effect happens once."""
    fx.gate("victim/1")
    victim = fx.enqueue_many(
        [{"job_type": "fx", "priority": 10,
          "payload": {"gate": "victim", "gate_after_effect": True}}]
    )[0]
    a = fx.spawn("A", "--lock-timeout", LONG_LOCK)
    fx.wait_started(victim, attempt=1)
    # The effect row is written (uncommitted) before the gate: wait until A is at the gate.
    fx.wait_for(
        "A's handler transaction to write its effect",
        lambda: fx.one(
            "SELECT count(*) FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation"
            " WHERE l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND c.relname = 'fx_effects' AND l.mode = 'RowExclusiveLock'"
        ),
    )
    a.signal(signal.SIGKILL)
    assert a.wait(10) == -signal.SIGKILL
    job = fx.job(victim)
    assert (job["status"], job["locked_by"], job["attempts"]) == ("processing", "A", 1)

    assert fx.backdate_locks("A") == 1
    others = fx.enqueue_many([{"job_type": "fx"} for _ in range(20)])
    fx.spawn("B", "--lock-timeout", LONG_LOCK)
    fx.wait_all_finished(21)
    assert fx.stop_all() == {"A": -signal.SIGKILL, "B": 0}

    job = fx.job(victim)
    assert (job["status"], job["attempts"]) == ("succeeded", 2)
    assert [(s[0], s[1]) for s in fx.starts(victim)] == [(1, "A"), (2, "B")]
    assert [(e["attempt"], e["worker"], e.get("kind")) for e in job["errors"]] == [
        (1, "A", "lock_expired")
    ]
    assert fx.sql("SELECT attempt, worker FROM fx_effects WHERE job_id = %(i)s", {"i": victim}) == [
        (2, "B")
    ]
    fx.check_invariants([victim, *others])


def test_stopped_worker_late_complete_and_fail_change_nothing_and_it_keeps_working(fx: Fx) -> None:
    """SIGSTOP past the lock timeout, takeover by B, then SIGCONT: A's late completion (of a
    transactional and of a plain job) and its late failure are fenced off, B's results stand,
    and A goes on to run new jobs."""
    fx.gate("late/1")
    tx_job, plain_job, failing_job = fx.enqueue_many(
        [
            {"job_type": "fx", "priority": 10, "payload": {"gate": "late"}},
            {"job_type": "fx_plain", "priority": 10, "payload": {"gate": "late"}},
            {"job_type": "fx", "priority": 10, "payload": {"gate": "late", "raise_on": [1]}},
        ]
    )
    a = fx.spawn("A", "--lock-timeout", LONG_LOCK, "--queue", "default", "--queue", "only-a",
                 concurrency=3)
    for j in (tx_job, plain_job, failing_job):
        fx.wait_started(j, attempt=1)
    a.signal(signal.SIGSTOP)
    assert fx.backdate_locks("A") == 3

    b = fx.spawn("B", "--lock-timeout", LONG_LOCK, "--queue", "default")
    for j in (tx_job, plain_job, failing_job):
        fx.wait_for(f"B to finish {j}", partial(_succeeded, fx, j))
    b.signal(signal.SIGTERM)
    assert b.wait(60) == 0
    before = {j: fx.job(j) for j in (tx_job, plain_job, failing_job)}

    # A wakes up: its handlers pass the gate, its transaction's completion, its acknowledgement
    # of the plain job and its failure report are all sent with attempt 1, now fenced off.
    fx.open_gate("late/1")
    a.signal(signal.SIGCONT)
    fx.wait_for(
        "A's plain handler to finish its (late) attempt 1",
        lambda: fx.one(
            "SELECT count(*) FROM fx_effects WHERE job_id = %(i)s AND worker = 'A'",
            {"i": plain_job},
        ),
    )
    # A keeps working: a job only A serves is run by A.
    later = fx.enqueue_many([{"job_type": "fx", "queue": "only-a"}])[0]
    fx.wait_for("A to run a new job", lambda: fx.job(later)["status"] == "succeeded")
    assert a.alive()
    assert fx.starts(later)[0][1] == "A"
    # A's shutdown flushes whatever results it still had to send: they must be fenced too.
    assert fx.stop_all() == {"A": 0, "B": 0}

    for j in (tx_job, plain_job, failing_job):
        after = fx.job(j)
        for column in ("status", "attempts", "finished_at", "last_error", "errors", "updated_at"):
            assert after[column] == before[j][column], f"A's late result changed {column} of {j}"
        assert after["attempts"] == 2
        assert not any("asked to fail attempt 1" in e["error"] for e in after["errors"])
    # The transactional job's effect: B's only. A's was rolled back with its fenced completion.
    assert fx.sql("SELECT attempt, worker FROM fx_effects WHERE job_id = %(i)s", {"i": tx_job}) == [
        (2, "B")
    ]
    fx.check_invariants([tx_job, plain_job, failing_job, later])


def _succeeded(fx: Fx, job_id: uuid.UUID) -> bool:
    return bool(fx.job(job_id)["status"] == "succeeded")


def _blocked_on_lock(fx: Fx, function: str) -> bool:
    return bool(
        fx.one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE %(q)s",
            {"q": f"%{function}%"},
        )
    )


def test_recovery_racing_completion_the_recovery_wins_and_the_late_completion_is_fenced(
    fx: Fx,
) -> None:
    """The recovery's takeover holds the row (uncommitted) while the worker's completion waits
    for it: exactly one wins (the takeover); the completion, re-checked on the new row, fails
    and the worker's transaction (with its effect) rolls back."""
    fx.gate("race/1")
    job_id = fx.enqueue_many([{"job_type": "fx", "payload": {"gate": "race"}}])[0]
    a = fx.spawn("A", "--lock-timeout", LONG_LOCK)
    fx.wait_started(job_id)
    fx.backdate_locks("A")
    with psycopg.connect(fx.dsn) as recovery:  # a transaction, not autocommit
        taken = recovery.execute(
            "SELECT id, attempts FROM jobq_dequeue(worker_id => 'R', lock_timeout => '1 minute')"
        ).fetchall()
        assert taken == [(job_id, 2)]
        fx.open_gate("race/1")
        fx.wait_for("A's completion to wait for the recovery's row lock",
                 lambda: _blocked_on_lock(fx, "jobq_complete"))
        recovery.commit()
    fx.wait_for("A's transaction to end", lambda: not _blocked_on_lock(fx, "jobq_complete"))
    fx.wait_for(
        "A to give up the job",
        lambda: fx.one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name = 'fx-worker' AND state = 'idle in transaction'"
        ) == 0,
    )
    job = fx.job(job_id)
    assert (job["status"], job["locked_by"], job["attempts"]) == ("processing", "R", 2)
    assert fx.one("SELECT count(*) FROM fx_effects") == 0, "the fenced completion's effect stayed"
    # R holds the job now, and finishes it as an ordinary worker would.
    fx.sql("INSERT INTO fx_ledger (job_id, attempt, worker, event) VALUES (%(i)s, 2, 'R', 'start')",
           {"i": job_id})
    fx.sql("INSERT INTO fx_effects (job_id, attempt, worker) VALUES (%(i)s, 2, 'R')", {"i": job_id})
    assert fx.one("SELECT jobq_complete(%(i)s, 'R', 2)", {"i": job_id}) is True
    assert a.alive()
    assert fx.stop_all() == {"A": 0}
    fx.check_invariants([job_id])


def test_recovery_racing_completion_the_completion_wins_and_is_never_revived(fx: Fx) -> None:
    """The test holds the job's row lock; the worker's completion waits for it, a recovery
    (lock expired by backdating) skips the locked row and takes nothing; when the lock goes,
    the completion wins, and a later recovery never revives the succeeded job."""
    fx.gate("race/1")
    tx_job, plain_job = fx.enqueue_many(
        [
            {"job_type": "fx", "payload": {"gate": "race"}},
            {"job_type": "fx_plain", "payload": {"gate": "race"}},
        ]
    )
    # --prefetch 0: with both handler threads busy, A claims nothing more. Otherwise its claims
    # (every poll interval, to fill its buffer) could take over its own backdated jobs before
    # the holder below locks them.
    fx.spawn("A", "--lock-timeout", LONG_LOCK, "--prefetch", "0")
    fx.wait_started(tx_job)
    fx.wait_started(plain_job)
    fx.backdate_locks("A")
    with psycopg.connect(fx.dsn) as holder:
        holder.execute(
            "SELECT id FROM jobq_jobs WHERE id = ANY(%(i)s) FOR UPDATE", {"i": [tx_job, plain_job]}
        )
        fx.open_gate("race/1")
        fx.wait_for("A's transactional completion to wait for the row lock",
                 lambda: _blocked_on_lock(fx, "jobq_complete("))
        fx.wait_for("A's acknowledgement of the plain job to wait for the row lock",
                 lambda: _blocked_on_lock(fx, "jobq_complete_many"))
        # Recovery while the completions wait: SKIP LOCKED, it takes nothing.
        assert fx.sql("SELECT id FROM jobq_dequeue('R', lock_timeout => '1 minute')") == []
        holder.commit()
    fx.wait_for("both completions", lambda: fx.status_counts()["succeeded"] == 2)
    # The lock is long expired by the clock of the backdated claim; nothing is revived.
    assert fx.sql("SELECT id FROM jobq_dequeue('R', lock_timeout => '1 second')") == []
    for j in (tx_job, plain_job):
        job = fx.job(j)
        assert (job["status"], job["attempts"], job["errors"]) == ("succeeded", 1, [])
    assert fx.stop_all() == {"A": 0}
    fx.check_invariants([tx_job, plain_job])


def test_poison_job_that_kills_its_worker_is_dead_lettered_after_max_attempts(fx: Fx) -> None:
    """A job whose handler calls os._exit kills its worker process on every attempt. Workers are
    restarted (as a supervisor would) and the dead one's claims expire (backdated): the poison is
    claimed exactly max_attempts times, then dead-lettered without a further run, while the
    other jobs all finish."""
    poison = fx.enqueue_many(
        [{"job_type": "fx", "max_attempts": 3, "priority": 5, "payload": {"exit": True}}]
    )[0]
    others = fx.enqueue_many(
        [{"job_type": "fx" if i % 2 else "fx_plain", "max_attempts": 5} for i in range(300)]
    )
    generation = 0
    live = {}
    for slot in ("a", "b"):
        live[slot] = fx.spawn(f"{slot}{generation}", "--lock-timeout", LONG_LOCK)
    deaths = 0

    def finished() -> bool:
        return bool(
            fx.one(
                "SELECT count(*) = 0 FROM jobq_all_jobs WHERE status IN ('pending', 'processing')"
            )
        )

    # Supervise: restart a dead worker, expire its claims. Bounded by the number of deaths.
    while not finished():
        assert deaths <= 3, f"more worker deaths than the poison's max_attempts: {deaths}"
        for slot, proc in list(live.items()):
            if proc.alive():
                continue
            assert proc.popen.returncode == EXIT_POISON, proc.log_tail()
            deaths += 1
            generation += 1
            fx.backdate_locks(proc.worker_id)
            live[slot] = fx.spawn(f"{slot}{generation}", "--lock-timeout", LONG_LOCK)
        fx.wait_for(
            "a worker death or the end of the run",
            lambda: finished() or any(not p.alive() for p in live.values()),
            timeout=60,
            interval=0.1,
        )
    codes = fx.stop_all()
    assert deaths == 3
    assert sorted(codes.values()).count(EXIT_POISON) == 3

    job = fx.job(poison)
    assert (job["status"], job["attempts"]) == ("dead_letter", 3)
    assert [s[0] for s in fx.starts(poison)] == [1, 2, 3], "claimed other than max_attempts times"
    assert [e.get("kind") for e in job["errors"]] == ["lock_expired"] * 3
    assert "lock expired" in job["last_error"]
    fx.check_invariants({poison: "dead_letter", **dict.fromkeys(others, "succeeded")})


def test_sigterm_releases_unstarted_jobs_at_once_and_finishes_in_flight_ones(fx: Fx) -> None:
    """SIGTERM with 2 jobs running and 4 claimed but not started: the 4 are released at once
    (pending, attempts back to 0, no error; taken by another worker long before the lock
    timeout), the 2 running finish and are acknowledged, and the process exits with 0."""
    fx.gate("busy")
    running = fx.enqueue_many(
        [{"job_type": jt, "priority": 10, "payload": {"gate": "busy"}} for jt in ("fx", "fx_plain")]
    )
    a = fx.spawn("A", "--lock-timeout", "600", "--batch-size", "2", "--prefetch", "4")
    for j in running:
        fx.wait_started(j)
    # Only now, with both handler threads busy: queued from the start, two of them could be
    # claimed by A's second claimer beside the first claim and started before the gated ones.
    waiting = fx.enqueue_many([{"job_type": "fx" if i % 2 else "fx_plain"} for i in range(4)])
    fx.wait_for(
        "A to prefetch the 4 waiting jobs",
        lambda: fx.one(
            "SELECT count(*) FROM jobq_all_jobs WHERE id = ANY(%(i)s) AND locked_by = 'A'",
            {"i": waiting},
        ) == 4,
    )
    a.signal(signal.SIGTERM)
    # Released at once: a lock timeout of 10 minutes could not explain it within the wait.
    fx.wait_for(
        "the unstarted jobs to be released",
        lambda: fx.one(
            "SELECT count(*) FROM jobq_all_jobs WHERE id = ANY(%(i)s) AND status = 'pending'"
            " AND attempts = 0 AND locked_by IS NULL AND errors = '[]' AND last_error IS NULL",
            {"i": waiting},
        ) == 4,
        timeout=10,
    )
    assert a.alive(), "A must wait for its running handlers"
    b = fx.spawn("B", "--lock-timeout", "600")
    fx.wait_for(
        "B to run the released jobs",
        lambda: fx.one(
            "SELECT count(*) FROM jobq_all_jobs WHERE id = ANY(%(i)s) AND status = 'succeeded'",
            {"i": waiting},
        ) == 4,
        timeout=30,
    )
    fx.open_gate("busy")
    assert a.wait(60) == 0
    b.signal(signal.SIGTERM)
    assert b.wait(60) == 0
    for j in running:
        job = fx.job(j)
        assert (job["status"], job["attempts"]) == ("succeeded", 1)
        assert [s[1] for s in fx.starts(j)] == ["A"]
    for j in waiting:
        assert fx.job(j)["attempts"] == 1
        assert [s[:2] for s in fx.starts(j)] == [(1, "B")], "a released job had been started"
    fx.check_invariants([*running, *waiting])



@pytest.mark.long(30)
def test_serial_keys_under_connection_kills_lose_no_completion_and_never_overlap(
    fx: Fx,
) -> None:
    """Two workers drain 12 keys with max_running 1 (their completions go in the transaction of
    the next claim, on the fetcher's connection) while every worker connection is terminated
    each time ten more jobs have finished, and at least once a second, until the drain ends:
    every job succeeds with its one effect, a completion whose reply was lost is sent again
    without harm, and no key ever runs two jobs at once (the handlers' intervals, from the
    ledger's start to the effect, never overlap within a key)."""
    fx.sql("SELECT jobq_set_limit('fx-serial', max_running => 1)")
    ids = fx.enqueue_many([
        {"job_type": "fx_plain", "limit_group": "fx-serial", "limit_key": f"k{i % 12}",
         "priority": i % 3, "payload": {"n": i}}
        for i in range(3000)
    ])
    for k in range(2):
        fx.spawn(f"w{k}", "--lock-timeout", LONG_LOCK, concurrency=4)
    # Both claiming (their first claim records them in jobq_workers): past their start-up
    # check, which a worker does not retry (a connection killed then fails its start, on
    # purpose). Not "both running jobs": a worker that holds a serial key's slot hands it to
    # the key's next job in its own completion's transaction, so the other may get none.
    fx.wait_for(
        "both workers to claim",
        lambda: fx.one(
            "SELECT count(*) = 2 FROM jobq_workers WHERE worker_id IN ('w0', 'w1')"
        ) or None,
    )
    # Kills paced by the drain: a new connection's first claim compiles the functions it calls
    # (tens of ms, far more beside other tests), so kills at a fixed rate cut nearly every first
    # claim, the worker backs off towards its 5 s ceiling and nothing moves until the kills
    # stop. After ten completions the kill lands on connections in the middle of claims and
    # completions; the kill of every twentieth look (once a second) also reaches connections
    # in their start-up, their LISTEN and their first claim.
    checks = kills = in_flight = killed_at = 0
    deadline = time.monotonic() + 120
    while (done := fx.status_counts()["succeeded"]) < len(ids) and time.monotonic() < deadline:
        if done - killed_at >= 10 or checks % 20 == 0:
            in_flight += fx.terminated("application_name = 'fx-worker'").count("active")
            kills += 1
            killed_at = done
        checks += 1
        time.sleep(0.05)
    assert in_flight >= 50, (
        f"only {in_flight} of {kills} kills cut a statement in flight ({done} jobs done)"
    )
    fx.wait_all_finished(len(ids), timeout=120)
    assert fx.stop_all() == {"w0": 0, "w1": 0}
    fx.check_invariants(ids)
    rows = fx.sql(
        "SELECT j.limit_key, l.at, e.at FROM jobq_all_jobs AS j"
        " JOIN fx_ledger AS l ON l.job_id = j.id AND l.event = 'start'"
        " JOIN fx_effects AS e ON e.job_id = l.job_id AND e.attempt = l.attempt"
        "  AND e.worker = l.worker"
        " ORDER BY j.limit_key, l.at"
    )
    by_key: dict[str, list[tuple[Any, Any]]] = {}
    for key, started, ended in rows:
        by_key.setdefault(key, []).append((started, ended))
    assert len(by_key) == 12
    for key, spans in by_key.items():
        for (_, ended), (started, _) in itertools.pairwise(spans):
            assert started >= ended, f"key {key}: a job started at {started}, before {ended}"
