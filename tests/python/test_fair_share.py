"""Fair share across the keys of a limit group (share round_robin or weighted).

The order of starts is read from the claims themselves: a helper function claims and completes
in SQL (one statement for many starts) and records each start's key, so that tens of thousands
of starts take seconds. Concurrent sessions with kills and lock expiries are checked against
the ledger of tests/faults/test_limits.py.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from tests import helpers
from tests.faults.harness import wait_for
from tests.faults.test_limits import CLAIM, Ledger, session
from tests.helpers import MakeRole

from pgq_client import AsyncQueue, InvalidArgument, Limit, Queue

Conn = psycopg.Connection[Any]

# Claims `claims` times with `batch`, completing what each claim took, and returns the keys of
# the starts in claim order.
STARTS = """
CREATE FUNCTION pg_temp.starts(claims int, batch int DEFAULT 1) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    v_keys text[] := '{}';
    v_got text[];
    v_ids uuid[];
BEGIN
    FOR i IN 1 .. claims LOOP
        SELECT array_agg(coalesce(d.limit_key, '') ORDER BY d.priority DESC, d.available_at, d.id),
               array_agg(d.id)
        INTO v_got, v_ids
        FROM jobq_dequeue('fair-test', NULL, batch) AS d;
        EXIT WHEN v_ids IS NULL;
        PERFORM jobq_complete_many(v_ids, 'fair-test');
        v_keys := v_keys || v_got;
    END LOOP;
    RETURN v_keys;
END;
$$
"""


def starts(conn: Conn, claims: int, batch: int = 1) -> list[str]:
    row = conn.execute("SELECT pg_temp.starts(%s, %s)", (claims, batch)).fetchone()
    assert row is not None
    return list(row[0])


def enqueue(conn: Conn, key: str, n: int, priority: int = 0) -> None:
    conn.execute(
        "SELECT count(*) FROM jobq_enqueue_arrays(array_fill('t'::text, ARRAY[%(n)s]),"
        " priorities => array_fill(%(priority)s, ARRAY[%(n)s]),"
        " limit_groups => array_fill('g'::text, ARRAY[%(n)s]),"
        " limit_keys => array_fill(%(key)s::text, ARRAY[%(n)s]))",
        {"n": n, "priority": priority, "key": key},
    )


@pytest.fixture
def fair(conn: Conn) -> Conn:
    conn.execute(STARTS)
    return conn


def test_round_robin_alternates_tenants_with_one_slot(fair: Conn) -> None:
    # river#1060: tenant A enqueues 3 jobs, then tenant B 3; one worker slot.
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    enqueue(fair, "A", 3)
    enqueue(fair, "B", 3)
    assert starts(fair, 6) == ["A", "B", "A", "B", "A", "B"]
    enqueue(fair, "A", 3)
    enqueue(fair, "B", 3)
    assert starts(fair, 6) == ["A", "B", "A", "B", "A", "B"], "the turns go on from the cursor"


def test_a_round_robin_groups_first_lap_starts_at_its_lowest_key_then_turns_downwards(
    fair: Conn,
) -> None:
    # Without caps the keys take turns in descending key order, and a group's first claim
    # starts at its lowest key: A, then E, D, C, B, wrapping round.
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    for _ in range(2):
        enqueue_keys(fair, ["C", "E", "A", "D", "B"])
    order = starts(fair, 10)
    assert order == ["A", "E", "D", "C", "B"] * 2
    assert sorted(order[:5]) == ["A", "B", "C", "D", "E"], "each key once before any twice"
    # The same within one claim: a batch of 3 from a fresh cursor takes the lowest key and
    # the two last ones.
    fair.execute("UPDATE jobq_limits SET turn_key = NULL")
    enqueue_keys(fair, ["C", "E", "A", "D", "B"])
    assert sorted(starts(fair, 1, batch=3)) == ["A", "D", "E"]


def test_fifo_is_the_default_and_keeps_claim_order(fair: Conn) -> None:
    fair.execute("SELECT jobq_set_limit('g', max_running => 10)")
    enqueue(fair, "A", 3)
    enqueue(fair, "B", 3)
    assert starts(fair, 6) == ["A", "A", "A", "B", "B", "B"]
    assert fair.execute("SELECT share FROM jobq_limits()").fetchone() == ("fifo",)


def test_a_new_keys_jobs_are_not_kept_behind_a_backlog_of_100000(fair: Conn) -> None:
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    enqueue(fair, "big", 100_000)
    assert starts(fair, 5, batch=10) == ["big"] * 50
    enqueue(fair, "small", 10)
    began = time.monotonic()
    order = starts(fair, 20)
    assert time.monotonic() - began < 10
    assert order[0] == "small", "the new key's first job starts within one turn"
    assert order == ["small", "big"] * 10, "then the keys take turns: all 10 within 20 starts"
    row = fair.execute("SELECT count(*) FROM jobq_jobs WHERE limit_key = 'big'").fetchone()
    assert row == (100_000 - 60,)


def test_a_batch_is_shared_between_keys_and_never_short(fair: Conn) -> None:
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    enqueue(fair, "A", 100)
    enqueue(fair, "B", 100)
    first = starts(fair, 1, batch=10)
    assert sorted(first) == ["A"] * 5 + ["B"] * 5
    # One key left with work: a claim goes on turn after turn until its batch is full.
    fair.execute("DELETE FROM jobq_jobs WHERE limit_key = 'B'")
    assert starts(fair, 1, batch=50) == ["A"] * 50


@pytest.mark.slow  # 20,000 jobs, 1,000 claims
def test_weights_3_to_1_over_10000_starts_within_5_percent(fair: Conn) -> None:
    fair.execute("SELECT jobq_set_limit('g', share => 'weighted')")
    fair.execute("SELECT jobq_set_weight('g', 'heavy', 3)")
    enqueue(fair, "heavy", 10_000)
    enqueue(fair, "light", 10_000)
    order = starts(fair, 1000, batch=10)
    assert len(order) == 10_000
    heavy, light = order.count("heavy"), order.count("light")
    assert abs(heavy / light - 3) <= 0.15, (heavy, light)
    # And over any run of 400 starts, not only the total.
    for i in range(0, 10_000, 400):
        window = order[i:i + 400]
        assert abs(window.count("heavy") / window.count("light") - 3) <= 0.15, (i, window)


def test_round_robin_ignores_weights(fair: Conn) -> None:
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    fair.execute("SELECT jobq_set_weight('g', 'A', 5)")
    enqueue(fair, "A", 50)
    enqueue(fair, "B", 50)
    order = starts(fair, 40)
    assert abs(order.count("A") - order.count("B")) <= 1


def test_priority_goes_first_across_keys(fair: Conn) -> None:
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    enqueue(fair, "A", 5)
    assert starts(fair, 3) == ["A"] * 3  # A's pass is now well ahead of B's
    enqueue(fair, "B", 3)
    enqueue(fair, "A", 2, priority=5)
    assert starts(fair, 2) == ["A", "A"], "A's higher priority first, whatever the passes"
    # Then the keys take turns again: B came back one turn before A's pass.
    assert starts(fair, 4) == ["B", "A", "B", "A"]


def enqueue_keys(conn: Conn, keys: list[str], priority: int = 0) -> None:
    """One job per key, in the order given."""
    conn.execute(
        "SELECT count(*) FROM jobq_enqueue_arrays(array_fill('t'::text, ARRAY[%(n)s]),"
        " priorities => array_fill(%(priority)s, ARRAY[%(n)s]),"
        " limit_groups => array_fill('g'::text, ARRAY[%(n)s]), limit_keys => %(keys)s)",
        {"n": len(keys), "priority": priority, "keys": keys},
    )


# What the statements of the current transaction have read so far: pages (buffer accesses) of
# the two indexes of pending limited jobs, and index entries of jobq_jobs.
READS = (
    "SELECT coalesce(sum(pg_stat_get_xact_blocks_fetched(indexrelid)) FILTER (WHERE indexrelid"
    " IN ('jobq_jobs_limited_idx'::regclass, 'jobq_jobs_limited_turn_idx'::regclass)), 0),"
    " coalesce(sum(pg_stat_get_xact_tuples_returned(indexrelid)), 0)"
    " FROM pg_index WHERE indrelid = 'jobq_jobs'::regclass"
)


def claim_reads(conn: Conn, batch: int) -> tuple[list[str], int, int]:
    """Claims `batch` jobs in a transaction of its own; returns their keys, the pages of the two
    limited indexes and the index entries of jobq_jobs that the claim read.

    pg_stat_get_xact_* return the counts the backend has not yet reported, and it reports them
    when idle outside a transaction, at most once a second: at a transaction's start they may
    still hold the reads of the statements before it (101,208 pages after 10,000 starts made
    within that second). Nothing is reported inside a transaction, so the counts are read
    before the claim and after it, in the claim's transaction.
    """
    with conn.transaction():
        before = conn.execute(READS).fetchone()
        got = conn.execute("SELECT limit_key FROM jobq_dequeue('w', NULL, %s)", (batch,))
        keys = [k for (k,) in got.fetchall()]
        after = conn.execute(READS).fetchone()
    assert before is not None and after is not None
    return keys, int(after[0] - before[0]), int(after[1] - before[1])


def test_a_round_robin_claim_without_caps_reads_its_batch_of_keys_not_every_key(
    conn: Conn,
) -> None:
    conn.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    enqueue_keys(conn, [f"k{i:05d}" for i in range(20_000)])
    conn.execute("ANALYZE jobq_jobs")
    # The lowest key first, then downwards from the last.
    batches = [[0, *range(19_991, 20_000)], range(19_981, 19_991), range(19_971, 19_981)]
    for claim, keys in enumerate(batches):
        got, _, entries = claim_reads(conn, 10)
        assert sorted(got) == [f"k{i:05d}" for i in keys]
        assert entries < 200, f"claim {claim} read {entries} index entries"


def test_a_round_robin_claim_without_caps_reads_no_more_as_more_keys_are_served(
    fair: Conn,
) -> None:
    # The jobs a claim started leave dead index entries at their keys until VACUUM; the probes
    # that read the group upwards from its lowest key (whether limited jobs wait, the skip
    # scan, the top priority) must not step over those of the keys the cursor has passed, so
    # a claim reads as many pages after 10,000 keys were served as after 1,000.
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    enqueue_keys(fair, [f"k{i:05d}" for i in range(20_000)])
    fair.execute("ANALYZE jobq_jobs")
    assert len(starts(fair, 10, batch=100)) == 1_000
    got, early, _ = claim_reads(fair, 10)
    assert len(got) == 10
    assert len(starts(fair, 90, batch=100)) == 9_000
    got, late, _ = claim_reads(fair, 10)
    assert len(got) == 10
    assert late < 100, f"the claim read {late} pages of the two indexes"
    assert late <= early + 10, f"{late} pages after 10,010 keys served, {early} after 1,000"


# Index scans begun so far by the statements of the current transaction, per index of jobq_jobs
# (a probe of a nested loop is a scan of its own).
SCANS = (
    "SELECT c.relname::text, pg_stat_get_xact_numscans(i.indexrelid) FROM pg_index AS i"
    " JOIN pg_class AS c ON c.oid = i.indexrelid WHERE i.indrelid = 'jobq_jobs'::regclass"
)


def claim_scans(conn: Conn, batch: int) -> tuple[list[str], dict[str, int]]:
    """Claims `batch` jobs in a transaction of its own; returns their keys and the index scans
    of jobq_jobs the claim began, per index (read before and after it, as claim_reads does)."""
    with conn.transaction():
        before = dict(conn.execute(SCANS).fetchall())
        got = conn.execute("SELECT limit_key FROM jobq_dequeue('w', NULL, %s)", (batch,))
        keys = [k for (k,) in got.fetchall()]
        after = dict(conn.execute(SCANS).fetchall())
    return keys, {name: int(after[name] - before[name]) for name in after}


def test_a_round_robin_claim_without_caps_reads_its_keys_in_one_pass_and_no_row_by_id(
    fair: Conn,
) -> None:
    # Scenario 19 of the benchmark: one job per key. The claim reads the keys below its cursor
    # in one ordered pass of the turn index (not a probe per key), and locks and claims each
    # row where that pass found it (not by a probe of the primary key per row, twice).
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    enqueue_keys(fair, [f"k{i:04d}" for i in range(1_000)])
    fair.execute("ANALYZE jobq_jobs")
    assert len(starts(fair, 1, batch=10)) == 10  # the cursor is set: k0000, k0999 ... k0991
    got, scans = claim_scans(fair, 100)
    assert sorted(got) == [f"k{i:04d}" for i in range(891, 991)]
    # the group's top priority, then one pass (before: 101 scans, one per key)
    assert scans["jobq_jobs_limited_turn_idx"] <= 2, scans
    assert scans["jobq_jobs_pkey"] == 0, scans  # before: 200, to lock and to claim each row


def test_a_round_robin_claim_passes_over_a_row_held_elsewhere_and_still_fills_its_batch(
    dsn: str, fair: Conn
) -> None:
    # The rows a claim by cursor reaches by their place: one that another transaction holds
    # is tried again by its id, passed over, and the claim takes the next key's job instead.
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    enqueue_keys(fair, [f"k{i}" for i in range(6)])
    with psycopg.connect(dsn) as other:
        other.execute("SELECT id FROM jobq_jobs WHERE limit_key = 'k3' FOR UPDATE")
        assert sorted(starts(fair, 1, batch=5)) == ["k0", "k1", "k2", "k4", "k5"]
    assert starts(fair, 1, batch=5) == ["k3"]


def test_a_round_robin_claim_steps_over_backlogs_and_takes_each_key_once_per_turn(
    fair: Conn,
) -> None:
    # The ordered pass meets a key with a backlog: it stops at its LIMIT with fewer keys than
    # it needs, and the keys below are found one probe each, past the backlog.
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    keys = [f"k{i:02d}" for i in range(20)]
    enqueue_keys(fair, keys)
    enqueue(fair, "k15", 50)
    enqueue(fair, "k07", 50)
    enqueue(fair, "k03", 5)
    fair.execute("ANALYZE jobq_jobs")
    assert sorted(starts(fair, 1, batch=20)) == keys, "one turn: each key once"
    # Three keys left with work: five turns, each reading past k15's backlog.
    assert sorted(starts(fair, 1, batch=15)) == ["k03"] * 5 + ["k07"] * 5 + ["k15"] * 5
    assert sorted(starts(fair, 1, batch=100)) == ["k07"] * 45 + ["k15"] * 45


def test_round_robin_over_more_keys_than_a_batch_starts_every_key_before_any_twice(
    fair: Conn,
) -> None:
    fair.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    keys = [f"k{i:02d}" for i in range(40)]
    random.Random(7).shuffle(keys)
    for _ in range(3):
        enqueue_keys(fair, keys)
    counts = dict.fromkeys(keys, 0)
    for _ in range(6):  # 42 starts: one turn of 40 keys and two starts into the next
        for key in starts(fair, 1, batch=7):
            counts[key] += 1
        assert max(counts.values()) - min(counts.values()) <= 1, counts
    # A key that gets work now starts within one turn: before any other key starts again.
    enqueue_keys(fair, ["new"])
    order = starts(fair, 41)
    assert "new" in order, order
    before = order[: order.index("new")]
    assert len(before) <= 40 and len(set(before)) == len(before), order
    # A higher priority goes first, whichever key holds it and wherever the turn is.
    enqueue_keys(fair, ["k00"], priority=5)
    assert starts(fair, 1) == ["k00"]


def test_concurrent_round_robin_claims_without_caps_take_each_job_once(
    make_role: MakeRole, dsn: str, conn: Conn
) -> None:
    # Sessions of a worker role: the claim moves the group's cursor as jobq's owner.
    worker_dsn = make_conninfo(dsn, user=make_role("worker", dsn=dsn, prefix="jobq_fair"))
    conn.execute("SELECT jobq_set_limit('g', share => 'round_robin')")
    keys = [f"k{i:04d}" for i in range(1_000)]
    enqueue_keys(conn, keys)
    enqueue_keys(conn, keys)
    taken: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def claimer(n: int) -> None:
        try:
            with psycopg.connect(worker_dsn, autocommit=True) as c:
                barrier.wait()
                while True:
                    ids = [str(r[0]) for r in c.execute(
                        "SELECT id FROM jobq_dequeue(%s, NULL, %s)", (f"w{n}", 1 + n % 5)
                    )]
                    if not ids:
                        return
                    taken.extend(ids)
                    c.execute("SELECT jobq_complete_many(%s::uuid[], %s)", (ids, f"w{n}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(taken) == len(set(taken)) == 2_000
    assert conn.execute("SELECT turn_key FROM jobq_limits").fetchone() != (None,)
    assert conn.execute(
        "SELECT count(*) FROM jobq_jobs WHERE status IN ('pending', 'processing')"
    ).fetchone() == (0,)


def test_caps_stay_exact_and_a_claim_takes_every_allowed_job(fair: Conn) -> None:
    # One session, random enqueues, claims and completions: after each claim either the batch
    # is full or no key of the group with an available job has room under its cap.
    fair.execute("SELECT jobq_set_limit('g', max_running => 2, share => 'weighted')")
    fair.execute("SELECT jobq_set_weight('g', 'k0', 4)")
    rnd = random.Random(7)
    for step in range(150):
        if rnd.random() < 0.4:
            enqueue(fair, f"k{rnd.randrange(6)}", rnd.randint(1, 6), priority=rnd.randrange(3))
        batch = rnd.randint(1, 8)
        got = fair.execute("SELECT id FROM jobq_dequeue('w', NULL, %s)", (batch,)).fetchall()
        row = fair.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM jobq_jobs WHERE status = 'processing'"
            " GROUP BY limit_key) AS p"
        ).fetchone()
        assert row is not None and (row[0] or 0) <= 2, step
        if len(got) < batch:
            waiting = fair.execute(
                "SELECT count(*) FROM jobq_jobs AS p WHERE p.status = 'pending'"
                " AND (SELECT count(*) FROM jobq_jobs AS r WHERE r.status = 'processing'"
                "      AND r.limit_key = p.limit_key) < 2"
            ).fetchone()
            assert waiting == (0,), (step, batch, len(got))
        done = [r[0] for r in got if rnd.random() < 0.6]
        old = fair.execute(
            "SELECT array_agg(id) FROM jobq_jobs WHERE status = 'processing'"
        ).fetchone()
        if rnd.random() < 0.5 and old is not None and old[0]:
            done += old[0][:2]
        if done:
            fair.execute("SELECT jobq_complete_many(%s, 'w')", (list(set(done)),))


def test_32_sessions_with_kills_and_expiries_share_keys_within_their_caps(
    dsn: str, conn: Conn
) -> None:
    keys = [f"k{i:02d}" for i in range(20)]
    conn.execute("SELECT jobq_set_limit('g', max_running => 2, share => 'round_robin')")
    for i, key in enumerate(keys):
        enqueue(conn, key, 5 + i * 3, priority=i % 3)
    total = sum(5 + i * 3 for i in range(20))
    ledger = Ledger()
    stop = threading.Event()
    errors: list[BaseException] = []

    def claimer(n: int) -> None:
        rnd = random.Random(n)
        worker = f"w{n}"
        while not stop.is_set():
            try:
                with session(dsn, f"fair-claimer-{n}-{id(stop)}") as c:
                    while not stop.is_set():
                        called = time.monotonic()
                        rows = c.execute(CLAIM, {"worker": worker, "batch": rnd.randint(1, 4)})
                        got = [(r[0], r[1], r[2]) for r in rows]
                        ledger.claimed(called, got)
                        if not got:
                            time.sleep(0.002)
                            continue
                        time.sleep(rnd.random() * 0.004)
                        for job_id, attempt, _ in got:
                            ledger.ending(job_id, attempt)
                            c.execute("SELECT jobq_complete(%s, %s, %s)", (job_id, worker, attempt))
            except psycopg.OperationalError:
                continue  # killed: a new session, as a worker would
            except BaseException as exc:
                errors.append(exc)
                return

    def chaos() -> None:
        # A lock expires and the chaos session's own claim takes it back, in one transaction:
        # under fair share the job taken back need not be claimed again by that call, so the
        # ledger ends the lost attempt at that claim's call, where its slot is given back.
        rnd = random.Random(99)
        with session(dsn, f"fair-chaos-{id(stop)}") as c:
            while not stop.is_set():
                time.sleep(0.02)
                if rnd.random() < 0.5:
                    c.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name = %s",
                        (f"fair-claimer-{rnd.randrange(32)}-{id(stop)}",),
                    )
                    continue
                with c.transaction():
                    lost = c.execute(
                        "UPDATE jobq_jobs SET locked_at = locked_at - interval '1 hour',"
                        " locked_until = locked_until - interval '1 hour'"
                        " WHERE id = (SELECT id FROM jobq_jobs WHERE status = 'processing'"
                        "             ORDER BY random() LIMIT 1) RETURNING id, attempts"
                    ).fetchone()
                    called = time.monotonic()
                    rows = c.execute(CLAIM, {"worker": "chaos", "batch": 1})
                    got = [(r[0], r[1], r[2]) for r in rows]
                if lost is not None:
                    with ledger.lock:
                        ledger.end.setdefault((lost[0], lost[1]), called)
                ledger.claimed(called, got)
                for job_id, attempt, _ in got:
                    ledger.ending(job_id, attempt)
                    c.execute("SELECT jobq_complete(%s, 'chaos', %s)", (job_id, attempt))

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
    assert len(most) == 20
    assert max(most.values()) <= 2, {k: v for k, v in most.items() if v > 2}
    row = conn.execute(
        "SELECT count(*) FROM jobq_all_jobs WHERE jsonb_array_length(errors) > 0"
    ).fetchone()
    assert row is not None and row[0] > 0, "no lock expired: the test did not test takeovers"


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        ("SELECT jobq_set_limit('g', share => 'fair')", "share"),
        ("SELECT jobq_set_limit('g', max_running => 2, share => '')", "share"),
        ("SELECT jobq_set_weight('g', 'k', 0)", "weight"),
        ("SELECT jobq_set_weight('g', 'k', -1)", "weight"),
        ("SELECT jobq_set_weight('g', 'k', 'NaN')", "weight"),
        ("SELECT jobq_set_weight('g', 'k', 'Infinity')", "weight"),
        ("SELECT jobq_set_weight('g', 'k', NULL)", "weight"),
        ("SELECT jobq_set_weight(NULL, 'k', 2)", "limit_group"),
        ("SELECT jobq_set_weight('g', ' ', 2)", "limit_key"),
        ("SELECT jobq_set_weight('g', repeat('k', 201), 2)", "limit_key"),
    ],
)
def test_bad_input_is_22023_naming_the_argument_and_changes_nothing(
    conn: Conn, call: str, argument: str
) -> None:
    conn.execute("SELECT jobq_set_limit('g', max_running => 3, share => 'weighted')")
    conn.execute("SELECT jobq_set_weight('g', 'k', 2)")
    before = conn.execute(
        "SELECT (SELECT array_agg(l::text) FROM jobq_limits AS l),"
        " (SELECT array_agg(k::text) FROM jobq_limit_keys AS k)"
    ).fetchone()
    with pytest.raises(psycopg.errors.InvalidParameterValue) as info:
        conn.execute(call)
    assert argument in str(info.value)
    after = conn.execute(
        "SELECT (SELECT array_agg(l::text) FROM jobq_limits AS l),"
        " (SELECT array_agg(k::text) FROM jobq_limit_keys AS k)"
    ).fetchone()
    assert after == before


def test_a_share_needs_no_cap_and_removing_it_all_removes_the_group(conn: Conn) -> None:
    conn.execute("SELECT jobq_set_limit('g', share => 'weighted')")
    conn.execute("SELECT jobq_set_weight('g', 'k', 2)")
    assert conn.execute("SELECT * FROM jobq_limits()").fetchall() == [
        ("g", None, None, None, "weighted")
    ]
    conn.execute("SELECT jobq_set_limit('g', max_running => 1)")  # share NULL: fifo
    assert conn.execute("SELECT share FROM jobq_limits()").fetchall() == [("fifo",)]
    assert conn.execute("SELECT weight FROM jobq_limit_keys").fetchall() == [(2.0,)]
    conn.execute("SELECT jobq_set_limit('g')")
    assert conn.execute("SELECT * FROM jobq_limits()").fetchall() == []
    assert conn.execute("SELECT * FROM jobq_limit_keys").fetchall() == []


def test_queue_sets_a_share_and_weights(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        assert q.set_limit("g", max_running=3, share="weighted") is None
        assert q.set_weight("g", "heavy", 3) is None
        q.set_weight("g", None, 0.5)
        assert q.limits() == [Limit("g", 3, None, None, "weighted")]
        q.enqueue("t", limit_group="g", limit_key="heavy")
        [usage] = q.limit_usage()
        assert (usage.limit_key, usage.pending, usage.weight) == ("heavy", 1, 3.0)
        with pytest.raises(InvalidArgument, match="weight must be a positive finite number"):
            q.set_weight("g", "heavy", 0)
        with pytest.raises(InvalidArgument, match="share must be fifo, round_robin or weighted"):
            q.set_limit("g", share="fair")
    rows = conn.execute("SELECT limit_key, weight FROM jobq_limit_keys ORDER BY 1").fetchall()
    assert rows == [("", 0.5), ("heavy", 3.0)]


async def test_async_queue_sets_a_share_and_weights(dsn: str) -> None:
    async with AsyncQueue(dsn) as q:
        await q.set_limit("g", share="round_robin")
        await q.set_weight("g", "k", 2)
        assert await q.limits() == [Limit("g", None, None, None, "round_robin")]
        await q.set_limit("g")
        assert await q.limits() == []


def test_cli_limit_set_share_weight_and_list(dsn: str, conn: Conn) -> None:
    done = helpers.jobq("--dsn", dsn, "limit", "set", "g", "--share", "round-robin")
    assert done.returncode == 0, done.stderr
    assert "g: shared round-robin per key" in done.stdout
    assert conn.execute("SELECT share FROM jobq_limits").fetchone() == ("round_robin",)
    done = helpers.jobq("--dsn", dsn, "limit", "weight", "g", "acme", "2.5")
    assert done.returncode == 0 and "g: acme weighs 2.5" in done.stdout, done.stderr
    conn.execute("SELECT jobq_enqueue('t', limit_group => 'g', limit_key => 'acme')")
    listed = helpers.jobq("--dsn", dsn, "limit", "list", "--json")
    data = json.loads(listed.stdout)
    assert data["limits"][0]["share"] == "round_robin"
    assert data["usage"][0]["weight"] == 2.5
    text = helpers.jobq("--dsn", dsn, "limit", "list").stdout
    assert "round_robin" in text and "2.5" in text
    assert helpers.jobq("--dsn", dsn, "limits").stdout == text, "jobq limits: the same list"
    refused = helpers.jobq("--dsn", dsn, "limit", "weight", "g", "acme", "0")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    refused = helpers.jobq("--dsn", dsn, "limit", "set", "g", "--share", "fair")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert conn.execute("SELECT weight FROM jobq_limit_keys").fetchone() == (2.5,)


def test_a_monitor_sees_each_groups_share_and_each_keys_weight_on_the_dashboard(
    admin_dsn: str, dsn: str
) -> None:
    from starlette.testclient import TestClient
    from webtools import login_role

    from pgq_client.web import create_app

    with Queue(dsn) as q:
        q.set_limit("tenants", share="round_robin")
        q.set_limit("plans", max_running=2, share="weighted")
        q.set_weight("plans", "gold", 3)
        for key in ("gold", "gold", "tin"):
            q.enqueue("t", limit_group="plans", limit_key=key)
        q.dequeue("w", batch_size=1)
    with login_role(admin_dsn, dsn, "monitor") as monitor_dsn, TestClient(
        create_app(monitor_dsn), base_url="http://127.0.0.1"
    ) as c:
        page = c.get("/limits").text
    shares = dict(re.findall(
        r'<tr data-group="([^"]+)">.*?<td class="share">(.*?)</td>', page, re.DOTALL
    ))
    assert shares == {"plans": "weighted", "tenants": "round robin"}
    keys = {
        key: re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)[2:]
        for key, row in re.findall(
            r'<tr data-group="plans" data-key="([^"]*)">(.*?)</tr>', page, re.DOTALL
        )
    }
    # running / cap, starts in the window (no rate limit: blank), waiting, weight
    assert keys == {"gold": ["0 / 2", "", "2", "3"], "tin": ["1 / 2", "", "0", "1"]}


def test_an_admin_sets_and_removes_a_limit_from_the_dashboard(
    admin_dsn: str, dsn: str, conn: Conn
) -> None:
    from starlette.testclient import TestClient
    from webtools import login_role

    from pgq_client.web import create_app

    hidden = re.compile(r'name="csrf" value="([^"]+)"')
    origin = {"Origin": "http://127.0.0.1"}
    form = {"limit_group": "tenants", "max_running": "2", "max_starts": "",
            "per_seconds": "", "share": "round_robin", "next": "/limits"}

    def limits() -> list[tuple[Any, ...]]:
        return conn.execute("SELECT * FROM jobq_limits()").fetchall()

    with TestClient(create_app(dsn), base_url="http://127.0.0.1") as c:
        found = hidden.search(c.get("/limits").text)
        assert found
        token = found.group(1)
        refused = c.post("/limits/set", data=form, headers=origin)
        assert refused.status_code == 403 and "CSRF" in refused.text
        assert limits() == []
        done = c.post("/limits/set", data={**form, "csrf": token}, headers=origin)
        assert done.status_code == 200 and "set the limit of tenants" in done.text
        assert limits() == [("tenants", 2, None, None, "round_robin")]
        bad = c.post("/limits/set", data={**form, "csrf": token, "max_running": "0"},
                     headers=origin)
        assert "refused: " in bad.text and "max_running must be at least 1" in bad.text
        bad = c.post("/limits/set", data={**form, "csrf": token, "max_starts": "ten"},
                     headers=origin)
        assert "max_starts must be a whole number" in bad.text
        assert limits() == [("tenants", 2, None, None, "round_robin")], "nothing changed"
        page = c.post("/limits/remove", data={"limit_group": "tenants", "csrf": token,
                                              "next": "/limits"}, headers=origin)
        assert "removed the limit of tenants" in page.text
        assert limits() == []

    conn.execute("SELECT jobq_set_limit('kept', max_running => 1)")
    with login_role(admin_dsn, dsn, "monitor") as monitor_dsn, TestClient(
        create_app(monitor_dsn), base_url="http://127.0.0.1"
    ) as c:
        page = c.get("/limits").text
        assert 'id="set-limit"' not in page, "no form for a role that may not set limits"
        found = hidden.search(page)
        assert found
        denied = c.post("/limits/remove", data={"limit_group": "kept", "csrf": found.group(1)},
                        headers=origin)
        assert denied.status_code == 403
    assert limits() == [("kept", 1, None, None, "fifo")]
