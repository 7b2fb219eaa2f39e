"""jobq_maintain_indexes with real sessions: a bloated index of jobq_jobs is rebuilt by the
ticks, a claim waits behind the rebuild's lock request at most its lock_timeout, and claims
that run while the indexes are rebuilt take every job exactly once. Bad arguments are in
tests/pgtap/maintain_indexes.sql."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
from tests.helpers import count, wait_for

Conn = psycopg.Connection[Any]
BLOATED = ("jobq_jobs_pkey", "jobq_jobs_claim_idx")


def sizes(conn: Conn) -> dict[str, int]:
    return dict(conn.execute(
        "SELECT c.relname::text, pg_relation_size(c.oid) FROM pg_index AS i"
        " JOIN pg_class AS c ON c.oid = i.indexrelid WHERE i.indrelid = 'jobq_jobs'::regclass"
    ).fetchall())


def bloat(dsn: str, jobs: int, left: int) -> None:
    """Enqueue ``jobs``, claim and complete all but the last ``left``, then VACUUM: the
    indexes keep the pages of every job, with only ``left`` entries in them. In a session of
    its own, which keeps no claim marks of the test's session."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        _bloat(conn, jobs, left)


def _bloat(conn: Conn, jobs: int, left: int) -> None:
    for _ in range(0, jobs, 10000):
        conn.execute(
            "SELECT count(*) FROM jobq_enqueue_many((SELECT jsonb_agg(jsonb_build_object("
            "'job_type', 'bloat', 'payload', jsonb_build_object('n', g)))"
            " FROM generate_series(1, 10000) AS g))"
        )
    claim_all_but = (
        "DO $$ DECLARE ids uuid[]; n bigint; BEGIN LOOP"
        " n := least(1000, (SELECT count(*) FROM jobq_jobs WHERE status = 'pending') - {left});"
        " EXIT WHEN n <= 0;"
        " SELECT array_agg(d.id) INTO ids FROM jobq_dequeue('bloater', NULL, n::int) AS d;"
        " IF jobq_complete_many(ids, 'bloater') IS DISTINCT FROM n::int THEN"
        " RAISE 'claimed fewer than the % asked for', n; END IF; END LOOP; END $$"
    )
    conn.execute(claim_all_but.format(left=int(left)))
    conn.execute("VACUUM jobq_jobs")


def maintain(conn: Conn, lock_timeout: str = "50 ms") -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in conn.execute(
        "SELECT action, index_name FROM jobq_maintain_indexes(lock_timeout => %s)",
        (lock_timeout,),
    ).fetchall()]


def test_ticks_rebuild_bloated_indexes_to_what_their_live_jobs_need(dsn: str, conn: Conn) -> None:
    """30,000 jobs through the queue, 1,000 left: each jobq_tick rebuilds the most bloated
    index, one per tick, until each is a fraction of its size and under 1 MB; the jobs left
    are untouched, and an index just rebuilt is left alone for 2 minutes."""
    bloat(dsn, 30000, 1000)
    before = sizes(conn)
    assert all(before[name] >= 1 << 20 for name in BLOATED), before
    pending = conn.execute("SELECT id, status, attempts FROM jobq_jobs ORDER BY id").fetchall()
    for _ in range(len(before)):
        conn.execute("SELECT * FROM jobq_tick()")
    after = sizes(conn)
    for name in BLOATED:
        assert after[name] < before[name] / 4 and after[name] < 1 << 20, (name, before, after)
    rebuilt = dict(conn.execute(
        "SELECT index_name, bytes_before FROM jobq_index_rebuilds").fetchall())
    assert {rebuilt[name] for name in BLOATED} == {before[name] for name in BLOATED}
    assert conn.execute("SELECT id, status, attempts FROM jobq_jobs ORDER BY id").fetchall() \
        == pending
    assert count(conn, "SELECT count(*) FROM jobq_dequeue('w', NULL, 2000)") == 1000
    # Bloated again at once: not rebuilt again within 2 minutes of its rebuild.
    bloat(dsn, 30000, 0)
    assert sizes(conn)["jobq_jobs_pkey"] >= 1 << 20
    assert "jobq_jobs_pkey" not in [name for _, name in maintain(conn)]
    conn.execute("UPDATE jobq_index_rebuilds SET rebuilt_at = now() - interval '3 minutes'")
    assert ("rebuilt", "jobq_jobs_pkey") in [row for _ in before for row in maintain(conn)]


def test_a_claim_waits_behind_the_rebuild_at_most_its_lock_timeout(dsn: str, conn: Conn) -> None:
    """A reader keeps jobq_jobs and its indexes open in a transaction: the rebuild's request
    waits for it, and a claim that comes meanwhile queues behind that request, for at most the
    rebuild's lock_timeout (1 s here), not for the reader; the rebuild is skipped, changes
    nothing, and the next call after the reader's commit does it."""
    bloat(dsn, 30000, 10)
    before = sizes(conn)
    with psycopg.connect(dsn) as reader, psycopg.connect(dsn, autocommit=True) as admin:
        reader.execute("SELECT count(*) FROM jobq_jobs WHERE id = gen_random_uuid()")
        pid = admin.info.backend_pid
        out: list[Any] = []

        def run() -> None:
            started = time.monotonic()
            out.append(maintain(admin, "1 s"))
            out.append(time.monotonic() - started)

        thread = threading.Thread(target=run)
        thread.start()
        wait_for("the rebuild to wait for its lock", lambda: bool(conn.execute(
            "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()[0]))  # type: ignore[index]
        started = time.monotonic()
        claimed = count(conn, "SELECT count(*) FROM jobq_dequeue('hot', NULL, 5)")
        hot = time.monotonic() - started
        thread.join(30)
        assert claimed == 5
        assert hot < 2.0, f"the claim waited {hot:.2f} s behind a rebuild with a 1-s lock_timeout"
        assert [action for action, _ in out[0]] == ["skipped"]
        assert 0.9 < out[1] < 10, "the rebuild waits about lock_timeout, not for the reader"
        assert sizes(conn) == before
        assert count(conn, "SELECT count(*) FROM jobq_index_rebuilds") == 0
        reader.commit()
    assert maintain(conn)[0][0] == "rebuilt"


def test_claims_running_through_the_rebuilds_take_every_job_once(dsn: str, conn: Conn) -> None:
    """Four sessions drain 4,000 jobs (claim, complete, commit) while another rebuilds the
    bloated indexes as fast as it may: every job is claimed once and succeeds, none is lost."""
    bloat(dsn, 30000, 0)
    ids = {r[0] for r in conn.execute(
        "SELECT id FROM jobq_enqueue_many((SELECT jsonb_agg(jsonb_build_object('job_type',"
        " 'drain')) FROM generate_series(1, 4000)))").fetchall()}
    done = threading.Event()
    claimed: list[Any] = []
    lock = threading.Lock()
    rebuilds: list[tuple[str, str, int]] = []  # (action, index, jobs claimed by then)

    def drain(n: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            while True:
                got = [r[0] for r in c.execute(
                    "SELECT id FROM jobq_dequeue(%s, ARRAY['drain'], 20)", (f"w{n}",)
                ).fetchall()]
                if not got:
                    return
                assert c.execute("SELECT jobq_complete_many(%s, %s)",
                                 (got, f"w{n}")).fetchone() == (len(got),)
                with lock:
                    claimed.extend(got)

    def rebuild() -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            while not done.is_set():
                c.execute("DELETE FROM jobq_index_rebuilds")
                rebuilds.extend((action, name, len(claimed)) for action, name in maintain(c))

    workers = [threading.Thread(target=drain, args=(n,)) for n in range(4)]
    for t in workers:
        t.start()
    wait_for("the drain to begin", lambda: len(claimed) >= 100)
    keeper = threading.Thread(target=rebuild)
    keeper.start()
    for t in workers:
        t.join(120)
    done.set()
    keeper.join(30)
    assert [r for r in rebuilds if r[:2] == ("rebuilt", "jobq_jobs_pkey") and r[2] < 4000]
    assert len(claimed) == len(set(claimed)) == 4000
    assert set(claimed) == ids
    assert count(conn, "SELECT count(*) FROM jobq_jobs") == 0
    assert count(conn, "SELECT count(*) FROM jobq_jobs_history WHERE job_type = 'drain'"
                 " AND status = 'succeeded' AND attempts = 1") == 4000
