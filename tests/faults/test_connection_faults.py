"""Lost connections and server restarts: exactly-once effects with transactional completion.

A transactional handler (``handler(job, conn)``) writes its effect in the transaction that
completes the job: the effect and the completion commit together or not at all. These tests cut
that transaction at each point where it can be cut — during the handler, while the completion
waits for the row, after the commit but before its reply reaches the worker — and then at
random (backends terminated every 2 s, the server restarted twice), and check that no effect is
written twice and none is missing.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from pgq_client import JobqError, Queue
from tests.faults.harness import Fx
from tests.faults.proxy import CommitDroppingProxy

LONG_LOCK = "120"


def _waiting_pid(fx: Fx, function: str) -> int | None:
    rows = fx.sql(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND wait_event_type = 'Lock' AND query LIKE %(q)s",
        {"q": f"%{function}%"},
    )
    return rows[0][0] if rows else None


def test_killed_handler_transaction_rolls_back_its_effect_and_the_job_runs_again(fx: Fx) -> None:
    """The handler's backend is terminated after it wrote its effect, before the completion:
    the effect is rolled back, the attempt is failed (fenced by attempt) and retried, and the
    effect of attempt 2 is the only one."""
    fx.gate("cut/1")
    job_id = fx.enqueue_many(
        [{"job_type": "fx", "payload": {"gate": "cut", "gate_after_effect": True}}]
    )[0]
    a = fx.spawn("A", "--lock-timeout", LONG_LOCK)
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


def test_handler_statement_on_a_killed_connection_fails_the_attempt_and_the_job_runs_again(
    fx: Fx,
) -> None:
    """The handler's backend is terminated while the handler is between statements (its
    transaction open, nothing written yet): the handler's next statement raises, the connection
    is gone. The attempt must be failed (fenced) and retried — not left claimed by a live worker
    that keeps renewing the claim of a job it will never finish."""
    fx.gate("cut/1")
    job_id = fx.enqueue_many([{"job_type": "fx", "payload": {"gate": "cut"}}])[0]
    # A lock timeout of 3 s (heartbeat every 1 s): a job the worker forgot without renewing it
    # would be taken over by itself within seconds; one it forgot *and renews* never is.
    a = fx.spawn("A", "--lock-timeout", "3")
    _, _, backend = fx.wait_started(job_id)
    assert fx.one("SELECT pg_terminate_backend(%(p)s)", {"p": backend}) is True
    fx.open_gate("cut/1")
    fx.wait_all_finished(1, timeout=30)
    job = fx.job(job_id)
    assert (job["status"], job["attempts"]) == ("succeeded", 2)
    assert fx.sql("SELECT attempt, worker FROM fx_effects") == [(2, "A")]
    assert a.alive()
    assert fx.stop_all() == {"A": 0}
    fx.check_invariants([job_id])


def test_connection_killed_while_completion_waits_rolls_back_and_the_job_runs_again(
    fx: Fx,
) -> None:
    """The completion statement itself is cut: it waits for a row lock the test holds, and its
    backend is terminated. Nothing of that transaction stays; the retry's effect is the only one."""
    fx.gate("cut")
    job_id = fx.enqueue_many([{"job_type": "fx", "payload": {"gate": "cut"}}])[0]
    a = fx.spawn("A", "--lock-timeout", LONG_LOCK)
    fx.wait_started(job_id)
    with psycopg.connect(fx.dsn) as holder:
        holder.execute("SELECT FROM jobq_jobs WHERE id = %(i)s FOR UPDATE", {"i": job_id})
        fx.sql("DELETE FROM fx_gate")
        pid = fx.wait_for(
            "the completion to wait for the row", lambda: _waiting_pid(fx, "jobq_complete(")
        )
        assert fx.one("SELECT pg_terminate_backend(%(p)s)", {"p": pid}) is True
        # The worker now reports the attempt as failed (fenced, with jobq_fail_many): that
        # call waits for us too.
        fx.wait_for(
            "the worker's fenced failure report", lambda: _waiting_pid(fx, "jobq_fail_many(")
        )
        holder.commit()
    fx.wait_all_finished(1)
    job = fx.job(job_id)
    assert (job["status"], job["attempts"]) == ("succeeded", 2)
    assert "connection" in job["errors"][0]["error"]
    assert fx.sql("SELECT attempt, worker FROM fx_effects") == [(2, "A")]
    assert a.alive()
    assert fx.stop_all() == {"A": 0}
    fx.check_invariants([job_id])


@pytest.fixture
def proxy(fx: Fx) -> Iterator[CommitDroppingProxy]:
    p = CommitDroppingProxy(fx.dsn)
    yield p
    p.close()


def test_lost_commit_reply_neither_repeats_nor_loses_the_effect(
    fx: Fx, proxy: CommitDroppingProxy
) -> None:
    """The server commits the handler's transaction (effect + completion) and the connection
    drops before the worker hears it. The worker cannot know; it reports a fenced failure, which
    finds the job succeeded and changes nothing. The job is not run again, its effect stays."""
    fx.gate("commit")
    job_id = fx.enqueue_many([{"job_type": "fx", "payload": {"gate": "commit"}}])[0]
    a = fx.spawn("A", "--lock-timeout", LONG_LOCK, dsn=proxy.dsn)
    fx.wait_started(job_id)
    proxy.drop_next_commit_reply()
    fx.open_gate("commit")
    fx.wait_for("the proxy to drop the reply to COMMIT", proxy.dropped.is_set)
    job = fx.job(job_id)
    assert (job["status"], job["attempts"]) == ("succeeded", 1), "the commit did not happen"
    # The worker goes on with its next jobs, over new connections.
    more = fx.enqueue_many([{"job_type": "fx"} for _ in range(10)])
    fx.wait_all_finished(11)
    assert a.alive()
    assert fx.stop_all() == {"A": 0}  # flushes the (fenced) failure report, if still pending
    after = fx.job(job_id)
    assert (after["status"], after["attempts"], after["errors"], after["last_error"]) == (
        "succeeded", 1, [], None,
    )
    assert after["finished_at"] == job["finished_at"]
    assert fx.sql("SELECT attempt, worker FROM fx_effects WHERE job_id = %(i)s", {"i": job_id}) == [
        (1, "A")
    ]
    fx.check_invariants([job_id, *more])


# Eight rounds of kills reach every connection a worker holds (pool, listener, handler
# transactions, ledger) in several states each.
KILL_EVERY = 2.0
KILL_FOR = 15.0


@pytest.mark.long(18)
def test_terminating_every_worker_connection_every_2s_loses_and_repeats_no_effect(fx: Fx) -> None:
    """pg_terminate_backend of every worker connection (pool, listener, handler transactions,
    ledger) every 2 s for 15 s while producers keep enqueuing: the worker processes stay up,
    every job finishes, transactional effects are exactly once, and afterwards a fresh batch
    is processed (throughput comes back)."""
    # A short lock timeout: a claim whose reply was cut off (committed, never received) is
    # taken over after 8 s rather than after minutes. Heartbeats (every 8/3 s) keep live ones.
    workers = [fx.spawn(f"w{k}", "--lock-timeout", "8", concurrency=4) for k in range(2)]
    fx.wait_listening(2)  # every round then has connections to terminate
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
                            {"job_type": "fx" if i % 3 else "fx_plain", "max_attempts": 10,
                             "payload": {"n": i, "sleep": 0.03}}
                            for i in range(n, n + 10)
                        ]
                    )
                )
                n += 10
                time.sleep(0.1)
        except BaseException as exc:
            errors.append(exc)

    producer = threading.Thread(target=produce)
    producer.start()
    killed: list[int] = []
    deadline = time.monotonic() + KILL_FOR
    try:
        while time.monotonic() < deadline:
            time.sleep(KILL_EVERY)
            killed.append(fx.terminate())
    finally:
        stop.set()
        producer.join(30)
    assert not errors, f"producer failed: {errors}"
    assert len(killed) >= 7 and all(n > 0 for n in killed), f"terminated per round: {killed}"
    assert all(w.alive() for w in workers), "\n".join(w.log_tail() for w in workers)

    # Throughput comes back: a fresh batch after the last kill is processed in full.
    fresh = fx.enqueue_many([{"job_type": "fx", "payload": {"fresh": True}} for _ in range(500)])
    fx.wait_all_finished(len(ids) + len(fresh), timeout=120)
    assert fx.stop_all() == {"w0": 0, "w1": 0}
    fx.check_invariants([*ids, *fresh])
    # The kills did land inside handlers' transactions (each handler takes 30 ms, 8 run at
    # once): attempts were cut and retried, so the exactly-once check above was exercised.
    cut = fx.one(
        "SELECT count(*) FROM jobq_all_jobs, jsonb_array_elements(errors) AS e"
        " WHERE e ->> 'error' ILIKE '%%connection%%' OR e ->> 'error' ILIKE '%%terminat%%'"
    )
    assert cut > 0, f"no kill hit a running job (terminated per round: {killed})"


def test_one_mass_connection_kill_does_not_stall_the_worker(fx: Fx) -> None:
    """Every connection of an idle worker is terminated once (a failover, a pooler restart):
    its pool is then full of dead connections. A healthy worker notices, reconnects and runs
    the next jobs within a second or two. Bound: 20 s, for 50 short jobs.

    What it catches: a worker that tries its dead pooled connections one by one, sleeping an
    exponential backoff (capped at 5 s) after each, needs about 5 s per pooled connection — a
    minute for this worker's pool of 19 — before it claims again."""
    a = fx.spawn("A", "--lock-timeout", LONG_LOCK, concurrency=16)
    warmup = fx.enqueue_many(
        [{"job_type": "fx", "payload": {"sleep": 0.2}} for _ in range(64)]
    )
    fx.wait_all_finished(len(warmup))
    pooled = fx.one(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'fx-worker'"
    )
    assert pooled >= 10, f"the worker's pool did not grow ({pooled} connections)"
    assert fx.terminate("application_name = 'fx-worker'") >= 10
    time.sleep(0.5)  # the worker is idle: nothing notices until the next job
    fresh = fx.enqueue_many([{"job_type": "fx"} for _ in range(50)])
    fx.wait_all_finished(len(warmup) + len(fresh), timeout=20)
    assert a.alive()
    assert fx.stop_all() == {"A": 0}
    fx.check_invariants([*warmup, *fresh])


def test_two_immediate_restarts_lose_no_job_and_duplicate_no_key(fx: Fx, pg_restart) -> None:  # type: ignore[no-untyped-def]
    """Two producers enqueue the same keys (retrying through errors with the same key) and two
    worker processes run, while the server is restarted twice in immediate mode (a crash):
    exactly one job per key, every producer got that job's id, every job done, effects once."""
    # The harness's cluster runs with synchronous_commit=off for speed: a crash may then lose
    # commits that were already acknowledged, which no queue can survive. Production settings
    # for this database (fsync is off too, but the machine does not crash, only the server).
    fx.sql(
        sql.SQL("ALTER DATABASE {} SET synchronous_commit = on").format(
            sql.Identifier(fx.one("SELECT current_database()"))
        ).as_string(fx.conn)
    )
    workers = [fx.spawn(f"w{k}", "--lock-timeout", "8", concurrency=3) for k in range(2)]
    # A worker still starting when the server crashes fails its startup check and exits (by
    # design); on a loaded machine that can take seconds: crash only once both listen.
    fx.wait_listening(2)
    keys = [f"key-{i}" for i in range(600)]
    got: list[dict[str, uuid.UUID]] = [{}, {}]
    retries = [0, 0]
    errors: list[BaseException] = []

    def produce(p: int) -> None:
        order = keys if p == 0 else keys[::-1]
        try:
            with Queue(fx.dsn) as q:
                for key in order:
                    # a key names one job of one job type: both producers give it the same
                    job_type = "fx" if int(key.removeprefix("key-")) % 2 else "fx_plain"
                    while True:
                        try:
                            got[p][key] = q.enqueue(
                                job_type, {"k": key}, idempotency_key=key,
                                max_attempts=10,
                            )
                            break
                        except JobqError:  # connection lost, server starting: same key again
                            retries[p] += 1
                            time.sleep(0.05)
                    time.sleep(0.015)
        except BaseException as exc:
            errors.append(exc)

    producers = [threading.Thread(target=produce, args=(p,)) for p in (0, 1)]
    for t in producers:
        t.start()
    fx.wait_for("the first jobs to run", lambda: fx.status_counts()["succeeded"] > 50)
    pg_restart("immediate")
    fx.wait_for("more jobs to run", lambda: fx.status_counts()["succeeded"] > 250, timeout=120)
    pg_restart("immediate")
    for t in producers:
        t.join(180)
    assert not errors, f"producer failed: {errors}"
    assert min(retries) > 0, f"a producer never saw the restarts: retries {retries}"

    rows = fx.sql("SELECT idempotency_key, id FROM jobq_all_jobs")
    assert len(rows) == len(keys) and {k for k, _ in rows} == set(keys), "not one job per key"
    by_key = dict(rows)
    assert got[0] == by_key and got[1] == by_key, "a producer got an id that is not its key's job"
    fx.wait_all_finished(len(keys), timeout=120)
    assert all(w.alive() for w in workers), "\n".join(w.log_tail() for w in workers)
    assert fx.stop_all() == {"w0": 0, "w1": 0}
    fx.check_invariants(by_key.values())



def test_a_lost_claim_reply_gives_its_jobs_back_at_the_reconnect_not_after_lock_timeout(
    fx: Fx, proxy: CommitDroppingProxy
) -> None:
    """The server commits a claim and the connection drops before the worker reads its rows:
    the jobs are processing under the worker's id, and the worker never knew them. When it
    reconnects, before claiming again, it releases every job locked by its id that it does not
    hold (jobq_release_orphans): they run at once, as their first attempt. Without that they
    would wait for lock_timeout (120 s here, longer than any wait of this test)."""
    a = fx.spawn("A", "--lock-timeout", LONG_LOCK, "--log-level", "INFO", dsn=proxy.dsn)
    fx.wait_for("worker A to be running", lambda: "running" in a.log_tail())
    proxy.drop_next_reply_with_rows()
    ids = fx.enqueue_many([{"job_type": "fx_plain", "payload": {"n": i}} for i in range(20)])
    fx.wait_for("the proxy to drop the reply to a claim", proxy.dropped.is_set)
    assert proxy.dropped_rows > 0
    fx.wait_all_finished(20, timeout=60)
    assert a.alive()
    released = (
        f"worker A released {proxy.dropped_rows} jobs claimed by a claim whose reply was lost"
    )
    assert released in a.log_tail(200), a.log_tail(200)
    jobs = [fx.job(i) for i in ids]
    # Not taken over after an expired lock: given back, and the lost claim did not count.
    assert [j for j in jobs if j["errors"] or j["attempts"] != 1] == []
    assert sorted(fx.sql("SELECT DISTINCT attempt, worker FROM fx_ledger")) == [(1, "A")]
    assert fx.stop_all() == {"A": 0}
    fx.check_invariants(ids)
