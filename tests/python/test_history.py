"""Finished jobs in jobq_jobs_history, with real sessions: what pgTAP cannot show in one
transaction (an enqueue racing the move of its key's job, a lock held by another session
against the maintenance) and the Queue/Worker paths that read results after the move."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import psycopg
import pytest
from tests.helpers import count, wait_for

from pgq_client import Queue, Worker

Conn = psycopg.Connection[Any]


def claim_one(conn: Conn, job_type: str) -> uuid.UUID:
    row = conn.execute(
        "SELECT id FROM jobq_dequeue(worker_id => 'w1', job_types => ARRAY[%s])", (job_type,)
    ).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def waiting_on_lock(conn: Conn, pid: int) -> bool:
    row = conn.execute(
        "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", (pid,)
    ).fetchone()
    return bool(row and row[0])


def test_an_enqueue_racing_the_move_of_its_keys_job_returns_that_job(dsn: str, conn: Conn) -> None:
    """A completion moves a keyed job to the history in a transaction left open; an enqueue
    of the same key in another session waits for it, and after the commit returns the
    finished job's id, adding no job: the key stays on one job across both tables."""
    job_id = conn.execute("SELECT jobq_enqueue('race', idempotency_key => 'k')").fetchone()
    assert job_id is not None
    assert claim_one(conn, "race") == job_id[0]
    with psycopg.connect(dsn) as mover, psycopg.connect(dsn, autocommit=True) as enqueuer:
        mover.execute("SELECT jobq_complete(%s, 'w1')", (job_id[0],))  # not committed yet
        pid = enqueuer.info.backend_pid
        out: list[Any] = []

        def enqueue() -> None:
            try:
                row = enqueuer.execute(
                    "SELECT jobq_enqueue('race', idempotency_key => 'k')"
                ).fetchone()
                out.append(row[0] if row else None)
            except psycopg.Error as exc:
                out.append(exc)

        thread = threading.Thread(target=enqueue)
        thread.start()
        wait_for(
            "the enqueue to wait for the moving transaction", lambda: waiting_on_lock(conn, pid)
        )
        mover.commit()
        thread.join(30)
    assert out == [job_id[0]]
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE idempotency_key = 'k'") == 1
    assert count(conn, "SELECT count(*) FROM jobq_jobs") == 0


def test_many_enqueues_racing_the_move_get_one_id(dsn: str, conn: Conn) -> None:
    """Eight sessions enqueue one key while the completion of its job commits: every one gets
    the job's id, and one job has the key."""
    row = conn.execute("SELECT jobq_enqueue('race', idempotency_key => 'many')").fetchone()
    assert row is not None
    job_id = row[0]
    claim_one(conn, "race")
    barrier = threading.Barrier(9)
    ids: list[Any] = []

    def enqueue() -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            barrier.wait()
            got = c.execute("SELECT jobq_enqueue('race', idempotency_key => 'many')").fetchone()
            ids.append(got[0] if got else None)

    threads = [threading.Thread(target=enqueue) for _ in range(8)]
    for t in threads:
        t.start()
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait()
        c.execute("SELECT jobq_complete(%s, 'w1')", (job_id,))
    for t in threads:
        t.join(30)
    assert ids == [job_id] * 8
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE idempotency_key = 'many'") == 1


def test_a_repeatable_read_enqueue_racing_the_move_is_a_serialization_failure(
    dsn: str, conn: Conn
) -> None:
    """Under REPEATABLE READ an enqueue whose snapshot still sees the key's job live, moved
    since, fails with 40001 (as ON CONFLICT does for a key it cannot see) rather than adding a
    second job; retried, it returns that job's id."""
    row = conn.execute("SELECT jobq_enqueue('race', idempotency_key => 'rr')").fetchone()
    assert row is not None
    job_id = row[0]
    claim_one(conn, "race")
    with psycopg.connect(dsn) as producer:
        producer.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        producer.execute("SELECT 1")  # the snapshot
        conn.execute("SELECT jobq_complete(%s, 'w1')", (job_id,))
        with pytest.raises(psycopg.errors.SerializationFailure):
            producer.execute("SELECT jobq_enqueue('race', idempotency_key => 'rr')")
        producer.rollback()
        again = producer.execute("SELECT jobq_enqueue('race', idempotency_key => 'rr')").fetchone()
        producer.commit()
    assert again == (job_id,)
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE idempotency_key = 'rr'") == 1


def old_partition(conn: Conn, status: str = "succeeded", days: int = 1) -> str:
    """An expired partition of ``status`` (2000-01-01, ``days`` long), its retention 1 day."""
    name = f"jobq__history_{status}_20000101"
    conn.execute(
        f"CREATE TABLE {name} PARTITION OF jobq__history_{status}"
        f" FOR VALUES FROM ('2000-01-01 00:00+00') TO ('2000-01-{1 + days:02d} 00:00+00')"
    )
    conn.execute("SELECT * FROM jobq_set_retention(%s, interval '1 day')", (status,))
    return name


def finish_in(conn: Conn, job_type: str, status: str = "succeeded") -> Any:
    """A job of ``job_type`` finished with ``status``, its finished_at moved to 2000-01-01."""
    row = conn.execute("SELECT jobq_enqueue(%s, max_attempts => 1)", (job_type,)).fetchone()
    assert row is not None
    claim_one(conn, job_type)
    if status == "succeeded":
        conn.execute("SELECT jobq_complete(%s, 'w1')", (row[0],))
    else:
        conn.execute("SELECT jobq_fail(%s, 'w1', 'boom')", (row[0],))
    conn.execute(
        "UPDATE jobq_jobs_history SET finished_at = '2000-01-01 12:00+00' WHERE id = %s", (row[0],)
    )
    return row[0]


def maintain(conn: Conn, lock_timeout: str = "100 ms") -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT action, partition_name FROM jobq_maintain_history(lock_timeout => %s)",
        (lock_timeout,),
    ).fetchall()


def test_maintenance_gives_up_on_a_held_lock_and_never_blocks_the_hot_path(
    dsn: str, conn: Conn
) -> None:
    """An expired partition that another session reads in an open transaction: the
    maintenance waits at most its lock_timeout for it (2 s here) and reports the step skipped;
    meanwhile an enqueue, a claim and a completion in a third session go through at once,
    not after the maintenance; once the reader commits, the next call empties it."""
    old = old_partition(conn)
    finish_in(conn, "gone")
    with psycopg.connect(dsn) as reader, psycopg.connect(dsn, autocommit=True) as admin:
        reader.execute(f"SELECT count(*) FROM {old}")  # holds ACCESS SHARE until it commits
        pid = admin.info.backend_pid
        out: list[Any] = []

        def run() -> None:
            started = time.monotonic()
            out.append(maintain(admin, "2 s"))
            out.append(time.monotonic() - started)

        thread = threading.Thread(target=run)
        thread.start()
        wait_for("the maintenance to wait for its lock", lambda: waiting_on_lock(conn, pid))
        started = time.monotonic()
        job = conn.execute("SELECT jobq_enqueue('hot')").fetchone()
        assert job is not None
        claim_one(conn, "hot")
        assert conn.execute("SELECT jobq_complete(%s, 'w1')", (job[0],)).fetchone() == (True,)
        hot = time.monotonic() - started
        assert thread.is_alive(), "the hot path finished while the maintenance still waited"
        thread.join(30)
        assert hot < 1.5, f"enqueue, claim and complete took {hot:.2f} s behind the maintenance"
        assert out[0] == [("skipped", old)]
        assert out[1] < 10, "the maintenance waits about lock_timeout, not for the reader"
        assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE job_type = 'gone'") == 1
        reader.commit()
    assert maintain(conn) == [("truncated", old)]
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE job_type = 'gone'") == 0
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE job_type = 'hot'") == 1


def empty_partitions(conn: Conn, days: range, status: str = "succeeded") -> list[str]:
    """Empty partitions of ``status`` jobs for the given days of March 2000."""
    names = []
    for day in days:
        names.append(f"jobq__history_{status}_200003{day:02d}")
        conn.execute(
            f"CREATE TABLE {names[-1]} PARTITION OF jobq__history_{status} FOR VALUES"
            f" FROM ('2000-03-{day:02d} 00:00+00') TO ('2000-03-{day + 1:02d} 00:00+00')"
        )
    return names


def test_a_completion_never_waits_for_the_retention_of_its_status(dsn: str, conn: Conn) -> None:
    """A maintenance whose transaction is still open has emptied an expired partition of
    succeeded jobs: a completion of a succeeded job in another session goes through at once
    (the TRUNCATE locks the expired partition alone, and no DROP holds the status's table
    while fewer than eight empty partitions wait)."""
    old = old_partition(conn)
    finish_in(conn, "gone")
    job = conn.execute("SELECT jobq_enqueue('hot')").fetchone()
    assert job is not None
    claim_one(conn, "hot")
    with psycopg.connect(dsn) as admin, psycopg.connect(dsn, autocommit=True) as worker:
        steps = maintain(admin)  # not committed yet
        worker.execute("SET lock_timeout = '3s'")
        started = time.monotonic()
        done = worker.execute("SELECT jobq_complete(%s, 'w1')", (job[0],)).fetchone()
        assert time.monotonic() - started < 1.5, "the completion waited for the maintenance"
        assert done == (True,)
        assert steps == [("truncated", old)]
        admin.commit()
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE job_type = 'gone'") == 0
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE job_type = 'hot'") == 1


def test_the_drop_never_waits_for_a_completion(dsn: str, conn: Conn) -> None:
    """Eight empty partitions of the past are dropped together, but a completion of a
    succeeded job in an open transaction holds the status's partitioned table: the maintenance
    leaves the DROP at once, without waiting its lock_timeout, and reports each partition
    skipped; after the commit, the next call drops them all."""
    names = empty_partitions(conn, range(1, 9))
    conn.execute("SELECT * FROM jobq_set_retention('succeeded', interval '1 day')")
    job = conn.execute("SELECT jobq_enqueue('hot')").fetchone()
    assert job is not None
    claim_one(conn, "hot")
    with psycopg.connect(dsn) as completer:
        completer.execute("SELECT jobq_complete(%s, 'w1')", (job[0],))  # not committed yet
        started = time.monotonic()
        assert maintain(conn, "5 s") == [("skipped", name) for name in names]
        assert time.monotonic() - started < 2.5, "the DROP waited for the completion"
        completer.commit()
    assert maintain(conn) == [("dropped", name) for name in names]
    assert count(conn, "SELECT count(*) FROM pg_class WHERE relname LIKE '%%\\_200003%%'") == 0
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE job_type = 'hot'") == 1


def test_a_drop_holds_the_tables_of_its_own_status_alone(dsn: str, conn: Conn) -> None:
    """A batch of eight empty dead-letter partitions dropped by a maintenance whose
    transaction is still open: of the history, it holds ACCESS EXCLUSIVE on
    jobq__history_dead_letter and its DEFAULT partition only (and on the dropped tables, gone
    from the catalogue). A completion of a succeeded job goes through without waiting; the
    move of a job into the dead letters is the one that waits, until the maintenance commits."""
    names = empty_partitions(conn, range(1, 9), "dead_letter")
    done = conn.execute("SELECT jobq_enqueue('hot')").fetchone()
    dead = conn.execute("SELECT jobq_enqueue('doomed', max_attempts => 1)").fetchone()
    assert done is not None and dead is not None
    claim_one(conn, "hot")
    claim_one(conn, "doomed")
    with psycopg.connect(dsn) as admin, psycopg.connect(dsn, autocommit=True) as worker:
        assert maintain(admin) == [("dropped", name) for name in names]  # not committed yet
        held = admin.execute(
            "SELECT c.relname::text FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation"
            " WHERE l.pid = pg_backend_pid() AND l.mode = 'AccessExclusiveLock'"
            " AND c.relname LIKE 'jobq%%history%%' ORDER BY 1"
        ).fetchall()
        assert held == [("jobq__history_dead_letter",), ("jobq__history_dead_letter_default",)]
        worker.execute("SET lock_timeout = '5s'")  # a completion that waited would fail
        assert worker.execute("SELECT jobq_complete(%s, 'w1')", (done[0],)).fetchone() == (True,)
        worker.execute("SET lock_timeout = '50ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            worker.execute("SELECT jobq_fail(%s, 'w1', 'last')", (dead[0],))
        admin.commit()
        row = worker.execute("SELECT jobq_fail(%s, 'w1', 'last')", (dead[0],)).fetchone()
        assert row == ("dead_letter",)
    assert count(conn, "SELECT count(*) FROM pg_class WHERE relname LIKE '%%\\_200003%%'") == 0
    assert count(conn, "SELECT count(*) FROM jobq_jobs_history WHERE job_type = 'hot'") == 1


def test_seven_empty_partitions_wait_for_an_eighth(conn: Conn) -> None:
    """Each DROP holds the status's partitioned table until the commit, so the empty
    partitions of the past are dropped only eight or more at a time, all in one statement."""
    names = empty_partitions(conn, range(1, 8))
    conn.execute("SELECT * FROM jobq_set_retention('succeeded', interval '1 day')")
    assert maintain(conn) == []
    names += empty_partitions(conn, range(8, 10))
    assert maintain(conn) == [("dropped", name) for name in names]


def test_a_dead_letter_requeued_from_an_expiring_partition_is_never_lost(
    dsn: str, conn: Conn
) -> None:
    """A requeue of a dead letter whose partition has expired, in a transaction still open:
    the maintenance cannot empty that partition meanwhile (skipped, no error), and after the
    commit the job is live; the next call empties the partition and the job stays.
    The other order: a maintenance not yet committed makes the requeue wait, which then finds
    the job gone and returns false, without an error."""
    old = old_partition(conn, "dead_letter", days=7)
    kept = finish_in(conn, "kept", "dead_letter")
    lost = finish_in(conn, "lost", "dead_letter")
    assert count(conn, f"SELECT count(*) FROM {old}") == 2
    with psycopg.connect(dsn) as operator:
        row = operator.execute("SELECT jobq_requeue_dead_letter(%s)", (kept,)).fetchone()
        assert row == (True,)
        assert maintain(conn, "50 ms") == [("skipped", old)]
        operator.commit()
    assert count(conn, "SELECT count(*) FROM jobq_jobs WHERE id = %s AND status = 'pending'", kept)
    with psycopg.connect(dsn) as admin, psycopg.connect(dsn, autocommit=True) as operator:
        rows = admin.execute("SELECT action, partition_name FROM jobq_maintain_history()")
        assert rows.fetchall() == [("truncated", old)]
        pid = operator.info.backend_pid
        out: list[Any] = []

        def requeue() -> None:
            try:
                got = operator.execute("SELECT jobq_requeue_dead_letter(%s)", (lost,)).fetchone()
                out.append(got)
            except psycopg.Error as exc:
                out.append(exc)

        thread = threading.Thread(target=requeue)
        thread.start()
        wait_for("the requeue to wait for the maintenance", lambda: waiting_on_lock(conn, pid))
        admin.commit()
        thread.join(30)
    assert out == [(False,)]
    assert count(conn, "SELECT count(*) FROM jobq_jobs WHERE id = %s AND status = 'pending'", kept)
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE id = %s", lost) == 0


def test_results_and_waits_read_the_history(dsn: str, conn: Conn) -> None:
    """A Worker completes jobs (one transactionally) and fails one for good: Queue.status,
    Queue.wait and Queue.result read them from the history, where they are, not jobq_jobs."""
    conn.execute("CREATE TABLE side_effects (job_id uuid PRIMARY KEY)")
    queue = Queue(dsn)
    plain = queue.enqueue("plain", {"n": 2})
    tx = queue.enqueue("tx", {"n": 3})
    bad = queue.enqueue("bad", {}, max_attempts=1)

    def plain_handler(job: Any) -> Any:
        return {"double": job.payload["n"] * 2}

    def tx_handler(job: Any, c: Conn) -> Any:
        c.execute("INSERT INTO side_effects VALUES (%s)", (job.id,))
        return {"triple": job.payload["n"] * 3}

    def bad_handler(job: Any) -> Any:
        raise RuntimeError("no")

    worker = Worker(dsn, handlers={"plain": plain_handler, "tx": tx_handler, "bad": bad_handler})
    worker.run(burst=True)
    statuses = queue.wait([plain, tx, bad], timeout=10)
    assert {i: s.status for i, s in statuses.items()} == {
        plain: "succeeded",
        tx: "succeeded",
        bad: "dead_letter",
    }
    assert queue.result(plain, timeout=1) == {"double": 4}
    assert queue.result(tx, timeout=1) == {"triple": 9}
    assert count(conn, "SELECT count(*) FROM side_effects") == 1
    assert count(conn, "SELECT count(*) FROM jobq_jobs") == 0
    assert count(conn, "SELECT count(*) FROM jobq_jobs_history") == 3
    queue.close()


def test_no_read_of_finished_jobs_would_use_the_dropped_finished_indexes(conn: Conn) -> None:
    """Migration 0004 dropped jobq_jobs_succeeded_idx and jobq_jobs_failed_idx (finished jobs
    live in the history). Put back, with live and finished jobs present and analysed, no plan
    of the functions that read finished jobs (the dashboard's pages, listings, stats, summary,
    health, status, prune) uses them: auto_explain reports every nested statement's plan."""
    conn.execute(
        "CREATE INDEX jobq_jobs_succeeded_idx ON jobq_jobs (finished_at) WHERE status = 'succeeded'"
    )
    conn.execute(
        "CREATE INDEX jobq_jobs_failed_idx ON jobq_jobs (status, finished_at)"
        " WHERE status IN ('failed', 'dead_letter', 'cancelled')"
    )
    conn.execute(
        "SELECT jobq_enqueue_many(jsonb_agg(jsonb_build_object('job_type', 'p')))"
        " FROM generate_series(1, 2000)"
    )
    conn.execute("SELECT jobq_enqueue('f', max_attempts => 1) FROM generate_series(1, 200)")
    conn.execute("SELECT jobq_enqueue('s') FROM generate_series(1, 200)")
    for job_id, job_type in conn.execute(
        "SELECT id, job_type FROM jobq_dequeue('w1', '{f,s}', batch_size => 400)"
    ).fetchall():
        call = "jobq_complete(%s, 'w1')" if job_type == "s" else "jobq_fail(%s, 'w1', 'x')"
        conn.execute(f"SELECT {call}", (job_id,))
    conn.execute("ANALYZE")
    plans: list[str] = []
    conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    conn.execute("SET auto_explain.log_min_duration = 0")
    conn.execute("SET auto_explain.log_nested_statements = on")
    conn.execute("SET auto_explain.log_level = notice")
    one = conn.execute("SELECT id FROM jobq_jobs_history LIMIT 1").fetchone()
    assert one is not None
    for status in ("succeeded", "failed", "dead_letter", "cancelled"):
        conn.execute("SELECT * FROM jobq_jobs_page(%s)", (status,)).fetchall()
        conn.execute("SELECT * FROM jobq_list_jobs(ARRAY[%s])", (status,)).fetchall()
    for call in (
        "jobq_stats()",
        "jobq_queue_summary()",
        "jobq_health()",
        "jobq_prune('1 hour', '{succeeded,failed,dead_letter,cancelled}')",
    ):
        conn.execute(f"SELECT * FROM {call}").fetchall()
    conn.execute("SELECT * FROM jobq_job_status(ARRAY[%s]::uuid[])", (one[0],)).fetchall()
    text = "\n".join(plans)
    assert text.count("Query Text:") >= 10 and "jobq_jobs_history" in text
    assert "jobq_jobs_succeeded_idx" not in text
    assert "jobq_jobs_failed_idx" not in text


def test_the_citus_layout_keeps_every_finished_job_and_retention_deletes_in_batches(
    conn: Conn,
) -> None:
    """What `jobq migrate` does to a schema before Citus distributes it (installer/citus.py),
    here on PostgreSQL and rolled back: each status's history becomes one plain table with
    every finished job kept; a second run finds nothing to do; the functions then see no
    partition, retention deletes expired jobs and a completion lands in the table."""
    from pgq_client.installer import citus

    expired = finish_in(conn, "s")
    dead = finish_in(conn, "d", "dead_letter")
    recent = conn.execute("SELECT jobq_enqueue('r')").fetchone()
    assert recent is not None
    claim_one(conn, "r")
    conn.execute("SELECT jobq_complete(%s, 'w1')", (recent[0],))
    before = conn.execute(
        "SELECT id, status, finished_at FROM jobq_jobs_history ORDER BY id"
    ).fetchall()
    with conn.transaction(force_rollback=True):
        citus._one_level_history(conn, "public")
        kinds = conn.execute(
            "SELECT c.relname, c.relkind::text FROM pg_inherits AS i"
            " JOIN pg_class AS c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = 'jobq_jobs_history'::regclass ORDER BY 1"
        ).fetchall()
        assert kinds == [(f"jobq__history_{s}", "r")
                         for s in ("cancelled", "dead_letter", "failed", "succeeded")]
        assert conn.execute(
            "SELECT id, status, finished_at FROM jobq_jobs_history ORDER BY id"
        ).fetchall() == before, "every finished job kept, as it was"
        assert count(conn, "SELECT count(*) FROM pg_class WHERE relname LIKE"
                           " 'jobq\\_\\_history\\_%%\\_default'") == 0, "no partition left"
        citus._one_level_history(conn, "public")  # nothing to do a second time
        assert count(conn, "SELECT count(*) FROM jobq__history_partitions('succeeded')") == 0
        conn.execute("SELECT * FROM jobq_set_retention('succeeded', interval '1 day')")
        assert maintain(conn) == [("deleted", "jobq__history_succeeded")]
        left = {r[0] for r in conn.execute("SELECT id FROM jobq_jobs_history")}
        assert expired not in left, "the expired succeeded job is deleted"
        assert left == {dead, recent[0]}, "the recent one and the dead letter (kept) stay"
