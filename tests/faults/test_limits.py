"""Concurrency and rate limits under concurrent sessions: an open
transaction holding a key, 32 sessions with backend kills and lock expiries checked against a
ledger, a takeover, a rate over wall-clock time, a saturated top-priority key, and removing a
limit while a Worker waits. Single-session behaviour is in tests/pgtap/limits.sql.

The ledger is kept in this process, on one monotonic clock, and only ever records times that
lie inside a claim's true holding interval: an attempt is counted from the moment its claim
returned (after its commit) until the moment its end was asked for (the completion's call, or
the call of the claim that took it over), so that overlaps the ledger shows are real ones.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import defaultdict
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from pgq_client import Job, Queue, Worker
from tests.faults.harness import wait_for

Conn = psycopg.Connection[Any]

CLAIM = """
SELECT id, attempts, limit_key FROM jobq_dequeue(
    %(worker)s::text, batch_size => %(batch)s::int, lock_timeout => '10 minutes'::interval
)
"""


def session(dsn: str, name: str = "limits-test") -> Conn:
    return psycopg.connect(dsn, autocommit=True, application_name=name)


def claim_ids(conn: Conn, worker: str, batch: int = 10) -> list[uuid.UUID]:
    return [r[0] for r in conn.execute(CLAIM, {"worker": worker, "batch": batch})]


def test_an_open_claim_makes_other_sessions_skip_its_key_before_and_after_commit(
    dsn: str, conn: Conn
) -> None:
    conn.execute("SELECT jobq_set_limit('cust', max_running => 1)")
    acme = [conn.execute("SELECT jobq_enqueue('t', priority => 9, limit_group => 'cust', "
                         "limit_key => 'acme')").fetchone()[0] for _ in range(3)]
    zeta = conn.execute("SELECT jobq_enqueue('t', limit_group => 'cust', "
                        "limit_key => 'zeta')").fetchone()[0]
    with session(dsn) as a, session(dsn) as b:
        a.autocommit = False
        first = claim_ids(a, "a", batch=1)
        assert first == [acme[0]]  # A holds acme's slot, uncommitted
        assert claim_ids(b, "b") == [zeta], "before A commits, B skips acme, takes zeta"
        a.commit()
        assert claim_ids(b, "b") == [], "after A commits, B counts A's job: acme is full"
        assert conn.execute("SELECT jobq_complete(%s, 'a')", (first[0],)).fetchone() == (True,)
        assert claim_ids(b, "b") == [acme[1]], "A's completion frees the slot"
        a.rollback()


def test_an_open_claim_that_rolls_back_frees_its_key(dsn: str, conn: Conn) -> None:
    conn.execute("SELECT jobq_set_limit('cust', max_running => 1)")
    job = conn.execute("SELECT jobq_enqueue('t', limit_group => 'cust')").fetchone()[0]
    with session(dsn) as a, session(dsn) as b:
        a.autocommit = False
        assert claim_ids(a, "a") == [job]
        assert claim_ids(b, "b") == []
        a.rollback()
        assert claim_ids(b, "b") == [job]
        row = conn.execute("SELECT attempts FROM jobq_all_jobs WHERE id = %s", (job,)).fetchone()
        assert row == (1,), "the rolled-back claim spent no attempt"


def test_repeatable_read_claim_that_missed_a_concurrent_start_fails_rather_than_overruns(
    dsn: str, conn: Conn
) -> None:
    conn.execute("SELECT jobq_set_limit('cust', max_running => 1)")
    for _ in range(2):
        conn.execute("SELECT jobq_enqueue('t', limit_group => 'cust')")
    with session(dsn) as a, session(dsn) as b:
        b.autocommit = False
        b.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        b.execute("SELECT count(*) FROM jobq_all_jobs").fetchone()  # B's snapshot, before A's claim
        assert len(claim_ids(a, "a")) == 1  # committed after B's snapshot
        with pytest.raises(psycopg.errors.SerializationFailure):
            claim_ids(b, "b")
        b.rollback()
    row = conn.execute("SELECT count(*) FROM jobq_all_jobs WHERE status = 'processing'").fetchone()
    assert row == (1,)


class Ledger:
    """Claims and ends, on this process's monotonic clock (see the module's docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.start: dict[tuple[uuid.UUID, int], float] = {}
        self.end: dict[tuple[uuid.UUID, int], float] = {}
        self.key: dict[uuid.UUID, str] = {}
        self.claims = 0

    def claimed(self, called: float, rows: list[tuple[uuid.UUID, int, str]]) -> None:
        returned = time.monotonic()
        with self.lock:
            self.claims += 1
            for job_id, attempt, key in rows:
                self.key[job_id] = key
                self.start[(job_id, attempt)] = returned
                # A claim of a later attempt took the earlier one over: that attempt's slot
                # ended no later than this claim's commit, and no earlier than its call.
                for earlier in range(1, attempt):
                    previous = self.end.get((job_id, earlier))
                    if previous is None or previous > called:
                        self.end[(job_id, earlier)] = called

    def ending(self, job_id: uuid.UUID, attempt: int) -> None:
        now = time.monotonic()
        with self.lock:
            self.end.setdefault((job_id, attempt), now)

    def most_overlapping(self) -> dict[str, int]:
        events: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for (job_id, attempt), began in self.start.items():
            ended = self.end.get((job_id, attempt))
            if ended is None or ended <= began:
                continue  # an end the ledger cannot place: left out, never guessed
            events[self.key[job_id]].append((began, 1))
            events[self.key[job_id]].append((ended, -1))
        most: dict[str, int] = {}
        for key, points in events.items():
            running = peak = 0
            for _, step in sorted(points, key=lambda p: (p[0], p[1])):  # ends before starts
                running += step
                peak = max(peak, running)
            most[key] = peak
        return most


def test_32_sessions_with_kills_and_lock_expiries_never_run_more_than_2_per_key(
    dsn: str, conn: Conn
) -> None:
    keys = [f"k{i:02d}" for i in range(50)]
    conn.execute("SELECT jobq_set_limit('cust', max_running => 2)")
    conn.execute(
        "SELECT count(*) FROM jobq_enqueue_many(("
        " SELECT jsonb_agg(jsonb_build_object('job_type', 't', 'max_attempts', 1000,"
        "   'limit_group', 'cust', 'limit_key', k, 'priority', (random() * 10)::int))"
        " FROM unnest(%s::text[]) AS k, generate_series(1, 16)))",
        (keys,),
    )
    total = 50 * 16
    ledger = Ledger()
    stop = threading.Event()
    errors: list[BaseException] = []
    peaks: list[int] = []

    def claimer(n: int) -> None:
        rnd = random.Random(n)
        worker = f"w{n}"
        while not stop.is_set():
            try:
                with session(dsn, f"limits-claimer-{n}") as c:
                    while not stop.is_set():
                        called = time.monotonic()
                        rows = c.execute(CLAIM, {"worker": worker, "batch": rnd.randint(1, 4)})
                        got = [(r[0], r[1], r[2]) for r in rows]
                        ledger.claimed(called, got)
                        if not got:
                            time.sleep(0.002)
                            continue
                        time.sleep(rnd.random() * 0.004)  # the jobs run
                        for job_id, attempt, _ in got:
                            ledger.ending(job_id, attempt)
                            c.execute("SELECT jobq_complete(%s, %s, %s)", (job_id, worker, attempt))
            except psycopg.OperationalError:
                continue  # killed: a new session, as a worker would
            except BaseException as exc:
                errors.append(exc)
                return

    def chaos() -> None:
        rnd = random.Random(99)
        with session(dsn, "limits-chaos") as c:
            while not stop.is_set():
                time.sleep(0.02)
                if rnd.random() < 0.5:
                    c.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name = %s",
                        (f"limits-claimer-{rnd.randrange(32)}",),
                    )
                else:  # a lock expires: the next claim takes it over
                    c.execute(
                        "UPDATE jobq_jobs SET locked_at = locked_at - interval '1 hour',"
                        " locked_until = locked_until - interval '1 hour'"
                        " WHERE id = (SELECT id FROM jobq_all_jobs WHERE status = 'processing'"
                        "             ORDER BY random() LIMIT 1)"
                    )
                row = c.execute(
                    "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM jobq_all_jobs"
                    " WHERE status = 'processing' GROUP BY limit_key) AS p"
                ).fetchone()
                assert row is not None
                peaks.append(row[0])

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(32)]
    threads.append(threading.Thread(target=chaos))
    for t in threads:
        t.start()
    try:
        wait_for(
            "every job to succeed",
            lambda: conn.execute(
                "SELECT count(*) = %s FROM jobq_all_jobs WHERE status = 'succeeded'", (total,)
            ).fetchone()[0],
            timeout=240,
        )
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    most = ledger.most_overlapping()
    assert most, "the ledger placed no attempt"
    assert max(most.values()) <= 2, {k: v for k, v in most.items() if v > 2}
    assert max(peaks, default=0) <= 2
    assert len(most) == 50
    kills_and_takeovers = conn.execute(
        "SELECT count(*) FROM jobq_all_jobs WHERE jsonb_array_length(errors) > 0"
    ).fetchone()[0]
    assert kills_and_takeovers > 0, "no lock expired: the test did not test takeovers"


def test_a_takeover_of_an_expired_claim_lets_no_extra_job_in(dsn: str, conn: Conn) -> None:
    conn.execute("SELECT jobq_set_limit('cust', max_running => 2)")
    ids = [conn.execute("SELECT jobq_enqueue('t', priority => %s, limit_group => 'cust')",
                        (p,)).fetchone()[0] for p in (5, 4, 3, 2)]
    with session(dsn) as a, session(dsn) as b:
        assert claim_ids(a, "a") == ids[:2]
        a.execute("UPDATE jobq_jobs SET locked_at = locked_at - interval '1 hour',"
            " locked_until = locked_until - interval '1 hour' WHERE id = %s",
                  (ids[0],))
        got = b.execute(CLAIM, {"worker": "b", "batch": 10}).fetchall()
        assert [(r[0], r[1]) for r in got] == [(ids[0], 2)], "the expired job again, no other"
        row = conn.execute("SELECT count(*) FROM jobq_jobs WHERE status = 'processing'").fetchone()
        assert row == (2,)
        assert conn.execute("SELECT jobq_complete(%s, 'a', 1)", (ids[0],)).fetchone() == (False,)


def test_rate_20_per_second_over_5_seconds_starts_at_most_120(dsn: str, conn: Conn) -> None:
    conn.execute("SELECT jobq_set_limit('api', max_starts => 20, per => '1 second')")
    conn.execute("SELECT count(*) FROM jobq_enqueue_many((SELECT jsonb_agg("
                 "jsonb_build_object('job_type', 't', 'limit_group', 'api'))"
                 " FROM generate_series(1, 1000)))")
    started: list[float] = []
    lock = threading.Lock()
    begin = time.monotonic()
    barrier = threading.Barrier(8)

    def claimer(n: int) -> None:
        with session(dsn) as c:
            barrier.wait()
            while time.monotonic() - begin < 5.0:
                rows = claim_ids(c, f"w{n}", batch=5)
                with lock:
                    started.extend(time.monotonic() for _ in rows)
                if not rows:
                    time.sleep(0.005)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = conn.execute("SELECT count(*) FROM jobq_jobs WHERE status = 'processing'").fetchone()
    assert claimed is not None and claimed[0] == len(started)
    assert 20 <= len(started) <= 120, len(started)
    # And the database's own record of the window (the rows it still keeps): no window of one
    # second holds more than 20 starts.
    rows = conn.execute(
        "SELECT started_at, started FROM jobq_limit_starts ORDER BY total"
    ).fetchall()
    for at, _ in rows:
        in_window = sum(n for other, n in rows if at - timedelta(seconds=1) < other <= at)
        assert in_window <= 20, (at, in_window)


def test_a_saturated_top_priority_key_does_not_stop_other_keys(dsn: str, conn: Conn) -> None:
    conn.execute("SELECT jobq_set_limit('cust', max_running => 1)")
    conn.execute("SELECT count(*) FROM jobq_enqueue_many((SELECT jsonb_agg(jsonb_build_object("
                 "'job_type', 't', 'priority', 100, 'limit_group', 'cust', 'limit_key', 'big'))"
                 " FROM generate_series(1, 2000)))")
    others = {conn.execute("SELECT jobq_enqueue('t', limit_group => 'cust', limit_key => %s)",
                           (f"small{i}",)).fetchone()[0] for i in range(6)}
    plain = {conn.execute("SELECT jobq_enqueue('t', priority => -5)").fetchone()[0]
             for _ in range(4)}
    with session(dsn) as holder, session(dsn) as a, session(dsn) as b:
        holder.autocommit = False
        assert len(claim_ids(holder, "holder", batch=1)) == 1  # big's slot, held open
        got = set(claim_ids(a, "a", batch=3)) | set(claim_ids(b, "b", batch=3))
        got |= set(claim_ids(a, "a", batch=10))
        holder.commit()
        assert got == others | plain
        row = conn.execute("SELECT count(*) FROM jobq_all_jobs WHERE limit_key = 'big'"
                           " AND status = 'processing'").fetchone()
        assert row == (1,)


def test_removing_a_limit_releases_the_waiting_jobs_at_once(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        q.set_limit("cust", max_running=1)
        q.enqueue_many([{"job_type": "t", "limit_group": "cust"} for _ in range(30)])
    gate = threading.Event()
    started = threading.Event()

    def handle(job: Job) -> None:
        started.set()
        gate.wait(60)

    worker = Worker(dsn, handlers={"t": handle}, concurrency=8, poll_interval=3600)
    runner = threading.Thread(target=worker.run)
    runner.start()
    try:
        assert started.wait(60)
        processing = "SELECT count(*) FROM jobq_all_jobs WHERE status = 'processing'"
        assert conn.execute(processing).fetchone() == (1,)
        with Queue(dsn) as q:
            q.set_limit("cust")  # its NOTIFY wakes the worker, whose next poll is an hour away
        wait_for("the worker to claim the jobs the limit held back",
                 lambda: conn.execute(processing).fetchone()[0] >= 8)
        gate.set()
        wait_for("every job to succeed", lambda: conn.execute(
            "SELECT count(*) = 30 FROM jobq_all_jobs WHERE status = 'succeeded'").fetchone()[0])
    finally:
        gate.set()
        worker.stop()
        runner.join(60)
