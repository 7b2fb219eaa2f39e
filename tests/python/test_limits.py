"""Concurrency and rate limits through the client: Queue and AsyncQueue
(limit_group / limit_key on enqueue and enqueue_many, set_limit, limits, limit_usage), the CLI
(``jobq limit set|list|delete``, ``jobq enqueue --limit-group``), and a Worker draining limited
jobs. The SQL behaviour in one session is in tests/pgtap/limits.sql; concurrent sessions in
tests/faults/test_limits.py."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from tests import helpers
from tests.helpers import MakeRole

from pgq_client import (
    AsyncQueue,
    InvalidArgument,
    Job,
    Limit,
    LimitUsage,
    PermissionDenied,
    Queue,
    Worker,
)
from pgq_client.worker import fetcher

Conn = psycopg.Connection[Any]


def jobq(dsn: str, *args: str) -> helpers.Ran:
    return helpers.jobq(*args, "--dsn", dsn)


def test_queue_enqueues_with_limits_and_the_claim_returns_them(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        q.set_limit("cust", max_running=1)
        a = q.enqueue("t", {"n": 1}, limit_group="cust", limit_key="acme", priority=2)
        b = q.enqueue("t", {"n": 2}, limit_group="cust", limit_key="acme", priority=1)
        ids = q.enqueue_many([
            {"job_type": "t", "limit_group": "cust", "limit_key": "zeta"},
            {"job_type": "t", "limit_group": "cust"},
        ])
        claimed = q.dequeue("w", batch_size=10)
        assert [j.id for j in claimed[:1]] == [a]
        assert {j.id for j in claimed[1:]} == set(ids)  # same priority and time: by id
        assert [j.id for j in claimed[1:]] == sorted(ids)
        assert {(j.limit_group, j.limit_key) for j in claimed} == {
            ("cust", "acme"), ("cust", "zeta"), ("cust", None)
        }
        assert conn.execute("SELECT status, attempts FROM jobq_all_jobs WHERE id = %s",
                            (b,)).fetchone() == ("pending", 0)
        usage = {u.limit_key: u for u in q.limit_usage()}
        assert usage["acme"] == LimitUsage("cust", "acme", 1, 1, None, None, None, 1)
        assert q.limits() == [Limit("cust", 1, None, None)]
        q.set_limit("cust")
        assert q.limits() == []
        assert [j.id for j in q.dequeue("w", batch_size=10)] == [b]


def test_a_keys_first_job_held_elsewhere_gives_way_to_its_next(dsn: str, conn: Conn) -> None:
    """A key that may start one job is given the first job its skip scan read, without another
    read; when another session holds that row, the claim passes it over and takes the key's
    next job in the same call, and leaves the held one pending."""
    with Queue(make_conninfo(dsn, options="-c statement_timeout=20000")) as q:
        q.set_limit("one", max_running=1)
        a1 = q.enqueue("t", {}, limit_group="one", limit_key="a", priority=2)
        a2 = q.enqueue("t", {}, limit_group="one", limit_key="a", priority=1)
        b1 = q.enqueue("t", {}, limit_group="one", limit_key="b", priority=1)
        with psycopg.connect(dsn) as holder:
            holder.execute("SELECT 1 FROM jobq_jobs WHERE id = %s FOR UPDATE", (a1,))
            claimed = q.dequeue("w", batch_size=5)
        assert [j.id for j in claimed] == [a2, b1]
    assert conn.execute("SELECT status, attempts FROM jobq_all_jobs WHERE id = %s",
                        (a1,)).fetchone() == ("pending", 0)


def test_set_limit_takes_per_as_seconds_or_timedelta(dsn: str) -> None:
    with Queue(dsn) as q:
        q.set_limit("a", max_starts=10, per=1.5)
        q.set_limit("b", max_running=3, max_starts=100, per=timedelta(minutes=1))
        assert q.limits() == [
            Limit("a", None, 10, timedelta(seconds=1.5)),
            Limit("b", 3, 100, timedelta(minutes=1)),
        ]


def test_bad_limit_arguments_raise_invalid_argument_naming_them(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        with pytest.raises(InvalidArgument, match="limit_key needs a limit_group"):
            q.enqueue("t", limit_key="k")
        with pytest.raises(InvalidArgument, match=r"element 1 .* limit_group must be NULL or a "
                                                  r"non-blank string"):
            q.enqueue_many([{"job_type": "t", "limit_group": " "}])
        with pytest.raises(InvalidArgument, match="max_starts and per go together"):
            q.set_limit("g", max_starts=5)
        with pytest.raises(InvalidArgument, match="max_running must be at least 1"):
            q.set_limit("g", max_running=0)
        with pytest.raises(ValueError, match="limit_group contains a NUL"):
            q.enqueue("t", limit_group="a\x00b")
        assert q.limits() == []
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (0,)


async def test_async_queue_has_the_limit_operations(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        await q.set_limit("cust", max_running=2, max_starts=5, per=60)
        job_id = await q.enqueue("t", limit_group="cust", limit_key="k")
        [other] = await q.enqueue_many([{"job_type": "t", "limit_group": "cust", "limit_key": "k"}])
        assert await q.limits() == [Limit("cust", 2, 5, timedelta(minutes=1))]
        claimed = await q.dequeue("w", batch_size=10)
        assert {j.id for j in claimed} == {job_id, other}
        [usage] = await q.limit_usage()
        assert (usage.running, usage.starts_in_window, usage.pending) == (2, 2, 0)
        with pytest.raises(InvalidArgument, match="limit_key needs a limit_group"):
            await q.enqueue("t", limit_key="k")
        await q.set_limit("cust")
        assert await q.limits() == []


def test_cli_limit_set_list_delete_with_options_before_or_after(dsn: str, conn: Conn) -> None:
    done = jobq(dsn, "limit", "set", "cust", "--max-running", "2")
    assert done.returncode == 0, done.stderr
    assert "cust: at most 2 running per key" in done.stdout
    done = helpers.jobq("--dsn", dsn, "limit", "set", "api", "--max-starts", "100", "--per", "60")
    assert done.returncode == 0, done.stderr
    done = jobq(dsn, "enqueue", "t", "--limit-group", "cust", "--limit-key", "acme")
    assert done.returncode == 0, done.stderr
    row = conn.execute("SELECT limit_group, limit_key FROM jobq_all_jobs").fetchone()
    assert row == ("cust", "acme")

    listed = jobq(dsn, "limit", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert data["limits"] == [
        {"limit_group": "api", "max_running": None, "max_starts": 100, "per_seconds": 60.0,
         "share": "fifo"},
        {"limit_group": "cust", "max_running": 2, "max_starts": None, "per_seconds": None,
         "share": "fifo"},
    ]
    assert data["usage"] == [{
        "limit_group": "cust", "limit_key": "acme", "running": 0, "max_running": 2,
        "starts_in_window": None, "max_starts": None, "per_seconds": None, "pending": 1,
        "weight": 1.0,
    }]
    text = jobq(dsn, "limit", "list").stdout
    assert "cust" in text and "acme" in text and "0/2" in text

    refused = jobq(dsn, "limit", "set", "api", "--max-starts", "5")
    assert refused.returncode == 2 and "--max-starts and --per go together" in refused.stderr
    refused = jobq(dsn, "limit", "set", "api", "--max-running", "0")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    refused = jobq(dsn, "enqueue", "t", "--limit-key", "k")
    assert refused.returncode == 1
    assert "limit_key needs a limit_group" in refused.stderr and "Traceback" not in refused.stderr

    removed = jobq(dsn, "limit", "delete", "cust")
    assert removed.returncode == 0 and "removed the limit of cust" in removed.stdout
    assert [r[0] for r in conn.execute("SELECT limit_group FROM jobq_limits")] == ["api"]


def test_worker_runs_a_serial_key_one_job_at_a_time_in_priority_order(
    dsn: str, conn: Conn
) -> None:
    """max_running 1 on a key: never two of its jobs at once, in priority order; the worker
    claims again as each ends (it does not wait for its poll interval, an hour here)."""
    with Queue(dsn) as q:
        q.set_limit("serial", max_running=1)
        q.enqueue_many([
            {"job_type": "s", "priority": p, "limit_group": "serial", "payload": {"p": p}}
            for p in range(20)
        ])
        q.enqueue_many([{"job_type": "s", "payload": {"p": -1}} for _ in range(20)])
    lock = threading.Lock()
    seen: list[int] = []  # processing jobs of the key, as each of its handlers runs
    order: list[int] = []

    with psycopg.connect(dsn, autocommit=True) as look:

        def handle(job: Job) -> None:
            if job.limit_group is None:
                return
            with lock:
                row = look.execute(
                    "SELECT count(*) FROM jobq_all_jobs"
                    " WHERE limit_group = 'serial' AND status = 'processing'"
                ).fetchone()
                assert row is not None
                seen.append(row[0])
                order.append(job.payload["p"])

        worker = Worker(dsn, handlers={"s": handle}, concurrency=8, poll_interval=3600)
        worker.run(burst=True)
    assert seen == [1] * 20
    assert order == list(range(19, -1, -1))
    done = conn.execute("SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'").fetchone()
    assert done == (40,)


@pytest.mark.parametrize("pipeline", [True, False], ids=["pipeline", "no-pipeline"])
def test_a_serial_keys_next_job_is_claimed_by_the_completion_of_the_one_before(
    dsn: str, conn: Conn, monkeypatch: pytest.MonkeyPatch, pipeline: bool
) -> None:
    """The worker's fetcher sends a limited job's completion with its next claim, in one
    transaction: each job of a max_running 1 key is claimed by the transaction that completed
    the key's job before it (the same now()), not by a later claim. In a pipeline, or, with a
    libpq older than 14 (no pipeline mode, simulated here), in an explicit transaction. (One
    key: with nothing else in the worker, the claim is always worth its round trip; see the
    next test.)"""
    if pipeline and not psycopg.Pipeline.is_supported():
        pytest.skip("this libpq has no pipeline mode")
    monkeypatch.setattr(fetcher, "PIPELINE", pipeline)
    with Queue(dsn) as q:
        q.set_limit("serial", max_running=1)
        q.enqueue_many([
            {"job_type": "s", "priority": p, "limit_group": "serial", "limit_key": "a"}
            for p in range(10)
        ])
    worker = Worker(dsn, handlers={"s": lambda job: None}, concurrency=4, poll_interval=3600)
    worker.run(burst=True)
    rows = conn.execute(
        "SELECT status, claimed_at, finished_at FROM jobq_all_jobs ORDER BY priority DESC"
    ).fetchall()
    assert [r[0] for r in rows] == ["succeeded"] * 10
    assert [r[1] for r in rows[1:]] == [r[2] for r in rows[:-1]]


def test_a_limited_completion_sent_without_a_claim_still_frees_its_slot(
    dsn: str, conn: Conn
) -> None:
    """When a claim is not worth its round trip (the buffer still holds jobs), the fetcher
    sends a limited job's completion on its own; the slot it frees then makes a claim due, as
    soon as one is worth it (not at the next poll, an hour here)."""
    with Queue(dsn) as q:
        q.set_limit("serial", max_running=1)
        q.enqueue_many([
            {"job_type": "s", "priority": 10 - p, "limit_group": "serial", "payload": {"p": p}}
            for p in range(3)
        ])
        q.enqueue_many([{"job_type": "u", "payload": {"p": p}} for p in range(5)])

    def unlimited(job: Job) -> None:
        threading.Event().wait(0.2)

    # Two handler threads and room for 8 jobs: the first claim brings the first serial job and
    # the 5 others (not a full claim: no claim is due for that); when the serial job ends, 4
    # wait and a claim of 3 is not worth its round trip (half the largest claim, 4), so its
    # completion goes alone.
    worker = Worker(
        dsn, handlers={"s": lambda job: None, "u": unlimited}, concurrency=2, prefetch=6,
        poll_interval=3600,
    )
    # Not a burst run: there every settled job wakes the fetcher anyway.
    runner = threading.Thread(target=worker.run)
    runner.start()
    try:
        for _ in range(300):
            done = conn.execute(
                "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'"
            ).fetchone()
            if done == (8,):
                break
            threading.Event().wait(0.05)
        else:
            pytest.fail("the freed slot made no claim due: the worker waits for its poll")
    finally:
        worker.stop()
        runner.join(30)
    rows = conn.execute(
        "SELECT status, claimed_at, finished_at FROM jobq_all_jobs WHERE job_type = 's'"
        " ORDER BY priority DESC"
    ).fetchall()
    assert [r[0] for r in rows] == ["succeeded"] * 3
    assert rows[1][1] > rows[0][2]  # claimed after the first one's completion, not with it


def _fetcher_alive() -> bool:
    return any(t.name == "jobq-fetcher" and t.is_alive() for t in threading.enumerate())


def test_a_limited_job_that_ends_after_the_fetcher_stopped_is_completed(
    dsn: str, conn: Conn
) -> None:
    """The fetcher completes limited jobs with its claims; one that a handler finishes after
    the fetcher has stopped (a shutdown) is completed by the acknowledger instead."""
    with Queue(dsn) as q:
        q.set_limit("g", max_running=1)
        q.enqueue("t", {}, limit_group="g", limit_key="a")
    stopped = threading.Event()

    def handle(job: Job) -> None:
        worker.stop()
        for _ in range(500):
            if not _fetcher_alive():
                stopped.set()
                return
            threading.Event().wait(0.01)

    worker = Worker(dsn, handlers={"t": handle}, concurrency=2, poll_interval=3600)
    worker.run()
    assert stopped.is_set()
    assert conn.execute("SELECT status FROM jobq_all_jobs").fetchall() == [("succeeded",)]


def test_a_limited_completion_survives_a_claim_that_fails_for_good(
    make_role: MakeRole, dsn: str, conn: Conn
) -> None:
    """The completion of a limited job goes in the transaction of the fetcher's next claim; when
    that claim fails for good (here: EXECUTE on jobq_dequeue revoked while the job runs), the
    worker stops with the error and the acknowledger still records the completion."""
    role = make_role("worker", dsn=dsn, prefix="jobq_keyacks")
    with Queue(dsn) as q:
        q.set_limit("g", max_running=1)
        q.enqueue("t", {"n": 1}, limit_group="g", limit_key="a")

    def handle(job: Job) -> None:
        # (jobq_complete_and_claim too: it claims as jobq_dequeue does, as its owner)
        conn.execute(
            sql.SQL(
                "REVOKE EXECUTE ON FUNCTION jobq_dequeue(text, text[], integer, interval,"
                " text[]), jobq_complete_and_claim(uuid[], text, integer[], jsonb[], text[],"
                " integer, interval, text[]) FROM {}"
            ).format(sql.Identifier(role))
        )

    worker = Worker(
        make_conninfo(dsn, user=role), handlers={"t": handle}, concurrency=2,
        poll_interval=3600,
    )
    with pytest.raises(PermissionDenied):
        worker.run()
    assert conn.execute("SELECT status, attempts FROM jobq_all_jobs").fetchall() == [
        ("succeeded", 1)
    ]
