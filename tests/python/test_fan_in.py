"""A fan-in's completions do not wait for each other (jobq__dependents_probe): with real
sessions, the two behaviours of PostgreSQL the probe rests on, a completion that leaves while
another of the same job's dependencies is still open, the end game of the last two, and a
stress test of random graphs drained by many sessions with a ledger of every release."""

from __future__ import annotations

import random
import threading
import uuid
from typing import Any

import psycopg
import pytest
from tests.plans import log_plans

from pgq_client import Queue

Conn = psycopg.Connection[Any]


def _waiting_for_a_lock(conn: Conn, pid: int) -> None:
    """Returns once the backend ``pid`` waits for a lock (pg_locks), however long that takes:
    no timing is asserted, a test that never gets there is stopped by its timeout."""
    while conn.execute(
        "SELECT EXISTS (SELECT FROM pg_locks WHERE pid = %s AND NOT granted)", (pid,)
    ).fetchone() != (True,):
        conn.execute("SELECT pg_sleep(0.01)")


def _claim(c: Conn, worker: str, job_type: str, n: int = 1) -> list[uuid.UUID]:
    rows = c.execute(
        "SELECT id FROM jobq_dequeue(%s, ARRAY[%s]::text[], %s)", (worker, job_type, n)
    ).fetchall()
    return [r[0] for r in rows]


def _row(conn: Conn, job_id: uuid.UUID) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT status, coalesce((SELECT waiting_on FROM jobq_jobs WHERE id = a.id), 0)"
        " FROM jobq_all_jobs AS a WHERE a.id = %s", (job_id,)
    ).fetchone()
    assert row is not None
    return tuple(row)


def test_a_key_share_skips_a_row_being_deleted_and_drops_one_deleted_meanwhile(
    dsn: str, conn: Conn
) -> None:
    """What the probe relies on, under READ COMMITTED: FOR KEY SHARE SKIP LOCKED passes over
    a row that an open transaction deletes, and locks one that it updates (a claim's lock
    included) without waiting; a row whose DELETE commits while the lock waits is dropped,
    not returned; one updated meanwhile is locked in its new version and returned."""
    q = Queue(dsn)
    a, b, c = q.enqueue("x"), q.enqueue("x"), q.enqueue("x")
    probe = "SELECT id FROM jobq_jobs WHERE id = ANY(%s) ORDER BY id FOR KEY SHARE"
    with psycopg.connect(dsn) as x, psycopg.connect(dsn) as y:
        x.execute("DELETE FROM jobq_jobs WHERE id = %s", (a,))
        x.execute("UPDATE jobq_jobs SET priority = 7 WHERE id = %s", (b,))
        x.execute("SELECT FROM jobq_jobs WHERE id = %s FOR NO KEY UPDATE", (c,))
        y.execute("SET lock_timeout = '1ms'")  # a wait would be an error
        assert y.execute(probe + " SKIP LOCKED", ([a, b, c],)).fetchall() == [(b,), (c,)]
        y.rollback()
        x.rollback()
        # now the lock waits: for a's DELETE, then for b (held FOR UPDATE as it is updated)
        x.execute("DELETE FROM jobq_jobs WHERE id = %s", (a,))
        x.execute("UPDATE jobq_jobs SET priority = 7 WHERE id = %s", (b,))
        x.execute("SELECT FROM jobq_jobs WHERE id = %s FOR UPDATE", (b,))
        got: list[Any] = []
        pid = y.info.backend_pid
        waiter = threading.Thread(target=lambda: got.extend(y.execute(probe, ([a, b],)).fetchall()))
        waiter.start()
        _waiting_for_a_lock(conn, pid)
        x.commit()
        waiter.join()
        y.rollback()
    assert got == [(b,)]


def test_a_probe_that_would_wait_on_a_newer_version_ends_in_the_end_game(
    dsn: str, conn: Conn
) -> None:
    """FOR KEY SHARE SKIP LOCKED still waits when the row has a newer version, made by an
    open transaction, that this transaction then locks (PostgreSQL locks the newer versions
    too): the probe gives up after 1 ms instead, and the completion ends in the end game (the
    job locked and recounted: the other dependency still holds it), without an error."""
    q = Queue(dsn)
    p1, p2 = q.enqueue_many([{"job_type": "p"}] * 2)
    child = q.enqueue("c", depends_on=[p1, p2])
    with psycopg.connect(dsn, autocommit=True) as w:
        _claim(w, "w", "p", 2)
    with psycopg.connect(dsn) as x, psycopg.connect(dsn, autocommit=True) as a:
        x.execute("UPDATE jobq_jobs SET priority = priority WHERE id = %s", (p2,))
        x.execute("SELECT FROM jobq_jobs WHERE id = %s FOR UPDATE", (p2,))
        a.execute("SET lock_timeout = '30s'")
        assert a.execute("SELECT jobq_complete(%s, 'w')", (p1,)).fetchone() == (True,)
        assert a.execute("SHOW lock_timeout").fetchone() == ("30s",)
        assert _row(conn, child) == ("waiting", 1)
        x.rollback()
    with psycopg.connect(dsn, autocommit=True) as b:
        assert b.execute("SELECT jobq_complete(%s, 'w')", (p2,)).fetchone() == (True,)
    assert _row(conn, child) == ("pending", 0)


def test_a_fan_in_completion_does_not_wait_for_another_open_one(dsn: str, conn: Conn) -> None:
    """Two sessions each complete one of the three dependencies of a job, in transactions left
    open: the second completes at once (lock_timeout turns a wait into an error), leaving a
    share lock on the third; that third's completion waits for them, and releases the job."""
    q = Queue(dsn)
    p1, p2, p3 = q.enqueue_many([{"job_type": "p"}] * 3)
    child = q.enqueue("c", depends_on=[p1, p2, p3])
    with psycopg.connect(dsn, autocommit=True) as w:
        assert sorted(_claim(w, "w", "p", 3)) == sorted([p1, p2, p3])
    with psycopg.connect(dsn) as a, psycopg.connect(dsn) as b:
        for s in (a, b):
            s.execute("SET lock_timeout = '30s'")
        assert a.execute("SELECT jobq_complete(%s, 'w')", (p1,)).fetchone() == (True,)
        b.execute("SET lock_timeout = '1ms'")
        assert b.execute("SELECT jobq_complete(%s, 'w')", (p2,)).fetchone() == (True,)
        # p3, the one left, is held FOR KEY SHARE by both: its completion waits for them
        assert conn.execute(
            "SELECT count(*)::int FROM pg_locks WHERE locktype = 'transactionid'"
            " AND NOT granted"
        ).fetchone() == (0,)
        a.commit()
        b.commit()
    assert _row(conn, child)[0] == "waiting"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SET lock_timeout = '30s'")
        assert c.execute("SELECT jobq_complete(%s, 'w')", (p3,)).fetchone() == (True,)
    assert _row(conn, child) == ("pending", 0)


def test_the_third_completion_waits_for_the_share_lock_of_an_open_one(
    dsn: str, conn: Conn
) -> None:
    """A completion that leaves on a probe holds the dependency it found until it commits:
    that dependency's completion waits for it, then reads its work and releases the job."""
    q = Queue(dsn)
    p1, p2 = q.enqueue_many([{"job_type": "p"}] * 2)
    child = q.enqueue("c", depends_on=[p1, p2])
    with psycopg.connect(dsn, autocommit=True) as w:
        _claim(w, "w", "p", 2)
    with psycopg.connect(dsn) as a, psycopg.connect(dsn, autocommit=True) as b:
        a.execute("SELECT jobq_complete(%s, 'w')", (p1,))
        done: list[Any] = []
        pid = b.info.backend_pid
        t = threading.Thread(
            target=lambda: done.append(
                b.execute("SELECT jobq_complete(%s, 'w')", (p2,)).fetchone()
            )
        )
        t.start()
        _waiting_for_a_lock(conn, pid)
        assert _row(conn, child) == ("waiting", 2)
        a.commit()
        t.join()
    assert done == [(True,)]
    assert _row(conn, child) == ("pending", 0)


def test_the_last_two_completing_at_once_release_the_job_once(dsn: str, conn: Conn) -> None:
    """The end game: the last two dependencies are being finished at once, so each one's
    probe finds the other locked. The first locks the job and recounts (the other still
    holds it); the second waits for that lock, recounts after the first's commit and
    releases the job, once."""
    q = Queue(dsn)
    p1, p2, p3 = q.enqueue_many([{"job_type": "p"}] * 3)
    child = q.enqueue("c", depends_on=[p1, p2, p3])
    with psycopg.connect(dsn, autocommit=True) as w:
        _claim(w, "w", "p", 3)
        w.execute("SELECT jobq_complete(%s, 'w')", (p1,))
    assert _row(conn, child) == ("waiting", 2)
    with psycopg.connect(dsn) as a, psycopg.connect(dsn) as b:
        # each holds its own dependency as its completion would (the DELETE's lock) first
        a.execute("SELECT FROM jobq_jobs WHERE id = %s FOR UPDATE", (p2,))
        b.execute("SELECT FROM jobq_jobs WHERE id = %s FOR UPDATE", (p3,))
        a.execute("SELECT jobq_complete(%s, 'w')", (p2,))
        got: list[Any] = []
        pid = b.info.backend_pid
        t = threading.Thread(
            target=lambda: got.append(b.execute("SELECT jobq_complete(%s, 'w')", (p3,)).fetchone())
        )
        t.start()
        _waiting_for_a_lock(conn, pid)  # for the job's row, which a holds
        a.commit()
        t.join()
        b.commit()
    assert got == [(True,)]
    assert _row(conn, child) == ("pending", 0)
    assert conn.execute(
        "SELECT array_agg(id) FROM jobq_dequeue('w2', ARRAY['c'], 10)"
    ).fetchone() == ([child],)


def test_a_probe_reads_its_jobs_edges_by_key_beside_a_larger_graph(conn: Conn) -> None:
    """Before any ANALYZE, a fan-in of 50 beside a fan-in of 2,000 enqueued after it (whose
    edges come later in jobq_job_dependencies_depends_on_idx): the completions of the small
    one's dependencies probe its edges through the primary key, a range of its own edges,
    and its end game probes the dependencies one by one; no plan reads the depends_on index
    backwards or hashes the jobs."""
    small = conn.execute(
        "SELECT array_agg(id ORDER BY ord) FROM jobq_enqueue_many((SELECT jsonb_agg("
        "CASE WHEN i <= 50 THEN '{\"job_type\": \"s\"}'::jsonb ELSE jsonb_build_object("
        "'job_type', 'c', 'after', (SELECT jsonb_agg(k) FROM generate_series(1, 50) AS k)) END)"
        " FROM generate_series(1, 51) AS i))"
    ).fetchone()
    conn.execute(
        "SELECT count(*) FROM jobq_enqueue_many((SELECT jsonb_agg("
        "CASE WHEN i <= 2000 THEN '{\"job_type\": \"b\"}'::jsonb ELSE jsonb_build_object("
        "'job_type', 'c', 'after', (SELECT jsonb_agg(k) FROM generate_series(1, 2000) AS k)) END)"
        " FROM generate_series(1, 2001) AS i))"
    )
    assert small is not None
    child = small[0][-1]
    plans = log_plans(conn, "auto_explain.log_analyze = on")
    while claimed := _claim(conn, "w", "s", 10):
        conn.execute("SELECT jobq_complete_many(%s::uuid[], 'w')", (claimed,))
    probes = [p for p in plans if "FOR KEY SHARE OF p SKIP LOCKED" in p]
    assert probes, "no plan of the probe was logged"
    for p in probes:
        assert "Scan Backward using jobq_job_dependencies_pkey" in p, p
        assert "using jobq_job_dependencies_depends_on_idx" not in p, p
        assert "Bitmap" not in p, p
    recounts = [p for p in plans if "unnest(v_end) AS g" in p]
    assert recounts, "no plan of the end game's recount was logged"
    assert not any("hashed SubPlan" in p for p in recounts), recounts[0]
    assert _row(conn, child) == ("pending", 0)


LEDGER = """
CREATE TABLE fan_in_ledger (id uuid, held integer);
CREATE FUNCTION fan_in_ledger_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- the edges that still hold the job, seen by the releasing transaction after its locks
    INSERT INTO fan_in_ledger
    SELECT new.id, count(*)::int
    FROM jobq_job_dependencies AS e
    WHERE e.job_id = new.id
      AND (EXISTS (SELECT FROM jobq_jobs AS p WHERE p.id = e.depends_on)
           OR (e.on_failure = 'wait' AND NOT EXISTS (
               SELECT FROM jobq_jobs_history AS h
               WHERE h.id = e.depends_on AND h.status = 'succeeded')));
    RETURN NULL;
END $$;
CREATE TRIGGER fan_in_ledger AFTER UPDATE ON jobq_jobs FOR EACH ROW
    WHEN (old.status = 'waiting' AND new.status IN ('pending', 'processing'))
    EXECUTE FUNCTION fan_in_ledger_note();
"""

HELD = """
SELECT j.id, j.waiting_on, (
    SELECT count(*)::int FROM jobq_job_dependencies AS e
    WHERE e.job_id = j.id
      AND (EXISTS (SELECT FROM jobq_jobs AS p WHERE p.id = e.depends_on)
           OR (e.on_failure = 'wait' AND NOT EXISTS (
               SELECT FROM jobq_jobs_history AS h
               WHERE h.id = e.depends_on AND h.status = 'succeeded'))))
FROM jobq_jobs AS j WHERE j.status = 'waiting'
"""


def _graph(q: Queue, rng: random.Random) -> list[uuid.UUID]:
    """Three levels: 600 roots, 60 jobs with 2-50 roots each, 20 with 2-10 of the jobs above
    them; rules cancel, run and wait at random."""
    roots = q.enqueue_many([{"job_type": "p", "max_attempts": 2}] * 600)
    middle = [
        q.enqueue("c", depends_on=rng.sample(roots, rng.randint(2, 50)), max_attempts=1,
                  on_dependency_failure=rng.choice(["cancel", "run", "wait"]))
        for _ in range(60)
    ]
    last = [
        q.enqueue("g", depends_on=rng.sample(middle + roots, rng.randint(2, 10)),
                  on_dependency_failure=rng.choice(["cancel", "run", "wait"]))
        for _ in range(20)
    ]
    return middle + last


@pytest.mark.timeout(300)
def test_random_fan_ins_drained_by_many_sessions_release_each_job_once(
    dsn: str, conn: Conn
) -> None:
    """24 sessions drain random graphs in batches of 1-10, each batch ended by
    jobq_complete_many, jobq_complete_and_claim or jobq_fail (with and without a retry) at
    random, while another session requeues failed roots. A trigger writes a ledger row for
    every release with the edges still holding the job in the releasing transaction's view.
    Every job is released at most once and with nothing holding it; no session gets an error
    (a deadlock among them); at the end a job still waiting has a dependency that holds it,
    and its waiting_on is at least the edges that do."""
    conn.execute(LEDGER)
    rng = random.Random(20261207)
    dependents = _graph(Queue(dsn), rng)
    errors: list[BaseException] = []
    running = threading.Event()
    running.set()
    barrier = threading.Barrier(25)

    def work(n: int) -> None:
        r = random.Random(n)
        worker = f"w{n}"
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                barrier.wait()
                held: list[uuid.UUID] = []
                idle = 0
                while idle < 3:
                    if not held:
                        held = [row[0] for row in c.execute(
                            "SELECT id FROM jobq_dequeue(%s, ARRAY['p', 'c'], %s)",
                            (worker, r.randint(1, 10)),
                        ).fetchall()]
                        idle = 0 if held else idle + (0 if running.is_set() else 1)
                        continue
                    failing = [i for i in held if r.random() < 0.03]
                    ok = [i for i in held if i not in failing]
                    held = []
                    for job in failing:
                        c.execute("SELECT jobq_fail(%s, %s, 'x', retry => %s)",
                                  (job, worker, r.random() < 0.5))
                    if ok and r.random() < 0.5:
                        rows = c.execute(
                            "SELECT id, status FROM jobq_complete_and_claim(%s::uuid[], %s,"
                            " job_types => ARRAY['p', 'c'], batch_size => %s)",
                            (ok, worker, r.randint(1, 10)),
                        ).fetchall()
                        held = [row[0] for row in rows if row[1] == "processing"]
                    elif ok:
                        c.execute("SELECT jobq_complete_many(%s::uuid[], %s)", (ok, worker))
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    def requeue() -> None:
        r = random.Random(99)
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                barrier.wait()
                for _ in range(40):
                    row = c.execute(
                        "SELECT id FROM jobq_jobs_history WHERE job_type = 'p'"
                        " AND status IN ('failed', 'dead_letter') ORDER BY random() LIMIT 1"
                    ).fetchone()
                    if row is not None and r.random() < 0.8:
                        c.execute("SELECT jobq_requeue_dead_letter(%s)", (row[0],))
                    c.execute("SELECT pg_sleep(0.05)")
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            running.clear()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(24)]
    threads.append(threading.Thread(target=requeue))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    # what a release committed after the last empty claim left pending is drained here
    while True:
        left = conn.execute(
            "SELECT array_agg(id) FROM jobq_dequeue('last', ARRAY['p', 'c'], 100)"
        ).fetchone()
        if left is None or left[0] is None:
            break
        conn.execute("SELECT jobq_complete_many(%s::uuid[], 'last')", (left[0],))

    ledger = conn.execute("SELECT id, held FROM fan_in_ledger").fetchall()
    assert [r for r in ledger if r[1] != 0] == [], "released while an edge held it"
    ids = [r[0] for r in ledger]
    assert len(ids) == len(set(ids)), "released twice"
    statuses = dict(conn.execute(
        "SELECT id, status FROM jobq_all_jobs WHERE id = ANY(%s)", (dependents,)
    ).fetchall())
    released = set(ids)
    for job in dependents:
        assert (statuses[job] not in ("waiting", "cancelled")) == (job in released), job
    waiting = conn.execute(HELD).fetchall()
    assert [w for w in waiting if w[2] == 0 or w[1] < w[2]] == []
    # the run exercised every outcome
    outcomes = dict(conn.execute(
        "SELECT status, count(*)::int FROM jobq_all_jobs WHERE id = ANY(%s) GROUP BY status",
        (dependents,),
    ).fetchall())
    assert outcomes.get("cancelled", 0) > 0 and len(released) > 0
