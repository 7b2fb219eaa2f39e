"""Cancels racing claims, completions, failures and takeovers.

1,000 jobs, 16 claimers and a canceller that cancels every job, in random chunks, while they
run. A claimer takes a batch, records each start in a ledger, asks which of its jobs have a
cancel request (what a Worker's heartbeat asks), fails those (jobq_fail must say cancelled) and
completes the others with a result; now and then it "dies" with a job, which another claimer
takes over once the lock has expired. Afterwards:

* none is lost, none is left pending or processing: each ended succeeded or cancelled;
* no job was claimed after its cancel took effect: its attempts are what they were right after
  the cancel (the canceller reads them once it returned; from then on nothing can claim it);
* a job the cancel found pending ended cancelled, with the reason; one it found running ended
  cancelled or (completed first) succeeded; one it found finished kept its status;
* a succeeded job has the result of the claim that completed it, which the ledger recorded;
* every late completion of a dead claimer, after the takeover, was fenced off and changed
  nothing.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pgq_client import Queue
from tests.faults.harness import Fx

JOBS = 1000
CLAIMERS = 16
LOCK_TIMEOUT = "2 seconds"


def test_cancel_racing_claims_completions_and_takeovers(fx: Fx) -> None:
    fx.sql("CREATE TABLE fx_starts (job_id uuid, attempt int, worker text)")
    ids = fx.enqueue_many([{"job_type": "t", "payload": {"n": n}} for n in range(JOBS)])
    after_cancel: dict[uuid.UUID, tuple[str, int]] = {}  # status the cancel left, attempts then
    abandoned: list[tuple[uuid.UUID, int, str]] = []  # (job, attempt, dead claimer)
    problems: list[str] = []
    lock = threading.Lock()
    cancelled_all = threading.Event()
    barrier = threading.Barrier(CLAIMERS + 1)

    def claimer(n: int) -> None:
        rng = random.Random(n)
        worker = f"c{n}"
        with psycopg.connect(fx.dsn, autocommit=True) as c:
            barrier.wait()
            while True:
                rows = c.execute(
                    "SELECT id, attempts FROM jobq_dequeue(worker_id => %s, batch_size => %s,"
                    " lock_timeout => %s)",
                    (worker, rng.randint(1, 10), LOCK_TIMEOUT),
                ).fetchall()
                if not rows:
                    left = c.execute(
                        "SELECT count(*) FROM jobq_all_jobs WHERE finished_at IS NULL"
                    ).fetchone()
                    if cancelled_all.is_set() and left == (0,):
                        return
                    time.sleep(0.05)
                    continue
                c.execute(
                    "INSERT INTO fx_starts SELECT unnest(%s::uuid[]), unnest(%s::int[]), %s",
                    ([r[0] for r in rows], [r[1] for r in rows], worker),
                )
                asked = {r[0] for r in c.execute(
                    "SELECT jobq_cancel_requested(%s::uuid[])", ([r[0] for r in rows],)
                )}
                done: list[tuple[uuid.UUID, int]] = []
                for job_id, attempt in rows:
                    if rng.random() < 0.03:  # this claimer dies with the job
                        with lock:
                            abandoned.append((job_id, attempt, worker))
                    elif job_id in asked:
                        status = c.execute(
                            "SELECT jobq_fail(%s, %s, 'stopped: cancel requested', attempt => %s)",
                            (job_id, worker, attempt),
                        ).fetchone()
                        if status not in (("cancelled",), (None,)):  # None: taken over
                            with lock:
                                problems.append(f"{job_id}: jobq_fail with a request said {status}")
                    else:
                        done.append((job_id, attempt))
                if done:
                    done.sort()  # lock in id order, as jobq_cancel does
                    c.execute(
                        "SELECT jobq_complete_many(%s::uuid[], %s, %s::int[], %s::jsonb[])",
                        ([d[0] for d in done], worker, [d[1] for d in done],
                         [Jsonb({"by": worker, "attempt": d[1]}) for d in done]),
                    )

    def canceller() -> None:
        rng = random.Random(99)
        order = list(ids)
        rng.shuffle(order)
        q = Queue(fx.dsn)
        barrier.wait()
        try:
            for start in range(0, JOBS, 50):
                chunk = order[start:start + 50]
                statuses = q.cancel(chunk, reason="race")  # retries a deadlock (40P01)
                attempts = {i: st.attempts for i, st in q.status(chunk).items()}
                with lock:
                    for job_id, status in statuses.items():
                        after_cancel[job_id] = (status, attempts[job_id])
                time.sleep(rng.random() * 0.02)
        finally:
            q.close()
            cancelled_all.set()

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(CLAIMERS)]
    threads.append(threading.Thread(target=canceller))
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not any(t.is_alive() for t in threads), "the race did not end"
    assert not problems, problems[:5]

    # The dead claimers come back: every late completion is fenced off and changes nothing.
    before = fx.sql("SELECT * FROM jobq_all_jobs ORDER BY id")
    for job_id, attempt, worker in abandoned:
        late = fx.one("SELECT jobq_complete(%(j)s, %(w)s, %(a)s, '{\"late\": true}')",
                      {"j": job_id, "w": worker, "a": attempt})
        assert late is False, f"a late completion of {job_id} (attempt {attempt}) went through"
    assert fx.sql("SELECT * FROM jobq_all_jobs ORDER BY id") == before

    jobs: dict[uuid.UUID, dict[str, Any]] = {
        r[0]: {"status": r[1], "attempts": r[2], "result": r[3], "last_error": r[4],
               "asked": r[5]}
        for r in fx.sql("SELECT id, status, attempts, result, last_error,"
                        " cancel_requested_at IS NOT NULL FROM jobq_all_jobs")
    }
    starts = {(r[0], r[1]): r[2] for r in fx.sql("SELECT job_id, attempt, worker FROM fx_starts")}
    assert len(starts) == fx.one("SELECT count(*) FROM fx_starts"), "a claim was made twice"
    assert set(jobs) == set(ids), "jobs lost"
    assert set(after_cancel) == set(ids), "the cancel did not report every job"

    wrong: list[str] = []
    for job_id, job in jobs.items():
        seen, attempts_then = after_cancel[job_id]
        if job["status"] not in ("succeeded", "cancelled"):
            wrong.append(f"{job_id} ended {job['status']}")
        if job["attempts"] != attempts_then:
            wrong.append(f"{job_id} claimed after its cancel took effect: attempts "
                         f"{attempts_then} then, {job['attempts']} at the end")
        if seen == "cancelled" and (job["status"], job["last_error"]) != ("cancelled", "race"):
            wrong.append(f"{job_id}: cancelled while pending, ended {job['status']}")
        # A request reaches the job's row when the cancel commits: a job that completed in
        # between ends succeeded without it (one whose attempt ended pending is cancelled).
        if seen == "cancel_requested" and not job["asked"] and job["status"] != "succeeded":
            wrong.append(f"{job_id}: a request without cancel_requested_at")
        if seen in ("succeeded", "failed", "dead_letter") and job["status"] != seen:
            wrong.append(f"{job_id}: found {seen}, ended {job['status']}")
        if job["status"] == "succeeded":
            worker = starts.get((job_id, job["attempts"]))
            if job["result"] != {"by": worker, "attempt": job["attempts"]}:
                wrong.append(f"{job_id}: result {job['result']}, claim of the final attempt by "
                             f"{worker}")
        elif job["result"] is not None:
            wrong.append(f"{job_id}: {job['status']} with a result")
    assert not wrong, f"{len(wrong)} problems, e.g. {wrong[:5]}"
    outcomes = sorted({(after_cancel[i][0], j["status"]) for i, j in jobs.items()})
    print(f"(found by the cancel, final status): {outcomes}; {len(abandoned)} claims abandoned")
    # The race covered each kind of cancel (a failure of the sort would make it vacuous).
    assert {s for s, _ in outcomes} >= {"cancelled", "cancel_requested"}, outcomes


def test_a_worker_whose_listener_keeps_dropping_still_sees_the_cancel(fx: Fx) -> None:
    """The worker's listening connection is terminated again and again while the cancel is made,
    so its notification is (most likely) lost: the heartbeat, every second here, still tells the
    running handler, which stops; the job ends cancelled and is not run again."""
    job = fx.enqueue_many([{"job_type": "fx_plain", "payload": {"until_cancelled": True}}])[0]
    fx.spawn("w1", "--lock-timeout", "3", concurrency=1)
    fx.wait_started(job)
    stop = threading.Event()
    cuts = [0]

    def cut_listener() -> None:  # the fetcher's connection: it LISTENs and claims
        while not stop.is_set():
            cuts[0] += fx.terminate(
                "application_name = 'fx-worker'"
                " AND (query LIKE 'LISTEN %%' OR query LIKE '%%jobq_dequeue(%%')"
            )
            time.sleep(0.01)

    cutter = threading.Thread(target=cut_listener)
    cutter.start()
    try:
        time.sleep(0.2)
        assert Queue(fx.dsn).cancel([job]) == {job: "cancel_requested"}
        fx.wait_for("the job to end cancelled",
                    lambda: fx.job(job)["status"] == "cancelled" or None, 60)
    finally:
        stop.set()
        cutter.join(30)
    row = fx.job(job)
    assert "fx: cancel seen" in row["last_error"] and row["attempts"] == 1, row
    assert [s[0] for s in fx.starts(job)] == [1], "run once, never again after the cancel"
    assert fx.stop_all() == {"w1": 0}
    assert cuts[0] >= 1, "the listener was cut"
    fx.check_invariants({job: "cancelled"})
