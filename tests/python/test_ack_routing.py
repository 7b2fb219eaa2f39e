"""Which path the Worker completes a job by: with its fetcher's next claim, in one transaction,
when the completion frees something that claim can take at once (a slot of a group with a
``max_running`` cap, a dependent it releases), else by the acknowledger on its own connection.

A job completed with a claim has ``finished_at`` equal to the ``claimed_at`` of the jobs that
claim took (one transaction, one ``now()``); one the acknowledger completes shares its
``finished_at`` with no claim. The serial-key case (a capped group) is in test_limits.py
(``test_a_serial_keys_next_job_is_claimed_by_the_completion_of_the_one_before``)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from tests.helpers import MakeRole, count, wait_for

from pgq_client import Job, Queue, Worker
from pgq_client.models import job_row as models_job_row

Conn = psycopg.Connection[Any]


@contextlib.contextmanager
def _running(worker: Worker) -> Iterator[Worker]:
    thread = threading.Thread(target=worker.run, name="test-routing-worker")
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(60)
    assert not thread.is_alive(), "worker did not stop"


def _fetcher(dsn: str) -> Any:
    from pgq_client.worker.fetcher import Fetcher
    from pgq_client.worker.retry import Link
    from pgq_client.worker.state import Shared

    worker = Worker(dsn, handlers={"t": lambda job: None})
    return Fetcher(
        Shared(worker.config, False, "test", threading.Event(), lambda: None),
        Link(lambda: psycopg.connect(dsn, autocommit=True)),
    )


def _claim_times(conn: Conn) -> set[object]:
    return {r[0] for r in conn.execute("SELECT claimed_at FROM jobq_all_jobs").fetchall()}


@pytest.mark.parametrize(
    "limit",
    [{"share": "round_robin"}, {"max_starts": 1000, "per": 60}],
    ids=["share-alone", "rate-alone"],
)
def test_a_group_without_a_cap_is_completed_by_the_acknowledger_not_with_a_claim(
    dsn: str, conn: Conn, limit: dict[str, Any]
) -> None:
    """A group with no max_running has no slot to hand on: its jobs' completions go through
    the acknowledger, in parallel with the claims, and none shares a claim's transaction. A
    capped group's beside it still goes with the claims."""
    with Queue(dsn) as q:
        q.set_limit("open", **limit)
        q.set_limit("capped", max_running=1)
        q.enqueue_many([
            {"job_type": "t", "limit_group": "open", "limit_key": f"k{i % 5}", "priority": 1}
            for i in range(30)
        ])
        q.enqueue_many([
            {"job_type": "t", "limit_group": "capped", "limit_key": "a"} for _ in range(5)
        ])
    worker = Worker(dsn, handlers={"t": lambda job: None}, concurrency=2, poll_interval=3600)
    worker.run(burst=True)
    claims = _claim_times(conn)
    rows = conn.execute(
        "SELECT limit_group, status, finished_at FROM jobq_all_jobs ORDER BY finished_at"
    ).fetchall()
    assert {r[1] for r in rows} == {"succeeded"}
    with_a_claim = [r[0] for r in rows if r[2] in claims]
    assert "open" not in with_a_claim
    assert with_a_claim.count("capped") >= 4  # each but the last hands its slot to the next


@pytest.mark.parametrize("result", [None, {"step": "done"}], ids=["none", "a-result"])
def test_a_chains_next_step_is_claimed_in_the_transaction_that_completes_the_one_before(
    dsn: str, conn: Conn, result: dict[str, str] | None
) -> None:
    """A job that others depend on is completed with the fetcher's next claim: the dependent
    its completion releases is claimed in the same transaction (no commit, notification and
    new claim in between), whether the handler returned a result or not."""
    with Queue(dsn) as q:
        q.enqueue_many([
            {"job_type": "step", "payload": {"n": i}, **({"after": [i]} if i else {})}
            for i in range(10)
        ])
    worker = Worker(
        dsn, handlers={"step": lambda job: result}, concurrency=2, poll_interval=3600
    )
    worker.run(burst=True)
    rows = conn.execute(
        "SELECT status, claimed_at, finished_at, result FROM jobq_all_jobs"
        " ORDER BY (payload ->> 'n')::int"
    ).fetchall()
    assert [r[0] for r in rows] == ["succeeded"] * 10
    assert [r[3] for r in rows] == [result] * 10
    assert [r[1] for r in rows[1:]] == [r[2] for r in rows[:-1]]


def _function_calls(conn: Conn, *names: str) -> list[int]:
    """Calls of these functions by every session so far, nested ones included (the database
    has track_functions = 'pl'), once the Worker's sessions have ended and flushed them."""
    wait_for("the worker's sessions to end",
             lambda: count(conn, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                           "current_database() AND pid <> pg_backend_pid()") == 0, 30)
    conn.execute("SELECT pg_stat_clear_snapshot()")
    return [count(conn, "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions"
                        " WHERE funcname = %s", name) for name in names]


@contextlib.contextmanager
def _tracking_functions(admin_dsn: str, conn: Conn) -> Iterator[None]:
    name = sql.Identifier(conn.info.dbname)
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(sql.SQL("ALTER DATABASE {} SET track_functions = 'pl'").format(name))
    try:
        yield
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as c:
            c.execute(sql.SQL("ALTER DATABASE {} RESET track_functions").format(name))


def test_a_chains_steps_are_handed_off_without_a_claim_that_searches_for_more(
    admin_dsn: str, dsn: str, conn: Conn
) -> None:
    """When the worker's last claim found fewer jobs than it asked for, a completion of a job
    with dependents goes with a claim of as many jobs as it completes: the dependent it
    releases fills it, and jobq_complete_and_claim runs no jobq_dequeue to top it up (which
    finds nothing in a chain). The server counts the calls: the first claim and the burst
    run's last, empty ones (one more when the last job is still being acknowledged) are the
    only jobq_dequeue calls for a chain of 20, against one a step before."""
    with _tracking_functions(admin_dsn, conn):
        with Queue(dsn) as q:
            q.enqueue_many([
                {"job_type": "step", "payload": {"n": i}, **({"after": [i]} if i else {})}
                for i in range(20)
            ])
        Worker(dsn, handlers={"step": lambda job: None}, concurrency=4,
               poll_interval=3600).run(burst=True)
        handed, dequeued = _function_calls(conn, "jobq_complete_and_claim", "jobq_dequeue")
    rows = conn.execute(
        "SELECT status, claimed_at, finished_at FROM jobq_all_jobs"
        " ORDER BY (payload ->> 'n')::int"
    ).fetchall()
    assert [r[0] for r in rows] == ["succeeded"] * 20
    assert [r[1] for r in rows[1:]] == [r[2] for r in rows[:-1]]
    assert handed == 19  # every job but the last has a dependent
    assert dequeued <= 5, f"{dequeued} calls of jobq_dequeue for a chain of 20"


def test_what_a_completion_releases_beyond_its_hand_off_is_claimed_as_announced(
    admin_dsn: str, dsn: str, conn: Conn
) -> None:
    """A job with 12 dependents, completed with a claim of one job: one dependent is handed
    off in the completing call, the other 11 are released pending and announced, and the
    worker claims them on that notification (its poll is an hour away; a Worker that is not
    in a burst run is woken by nothing else)."""
    with Queue(dsn) as q:
        parent = q.enqueue("fan", payload={"n": 0})
        for i in range(1, 13):
            q.enqueue("fan", payload={"n": i}, depends_on=[parent])
    with _running(Worker(dsn, handlers={"fan": lambda job: None}, concurrency=4,
                         poll_interval=3600)):
        wait_for("every dependent to be done", lambda: count(
            conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == 13, 60)
    finished = conn.execute(
        "SELECT finished_at FROM jobq_all_jobs WHERE id = %s", (parent,)
    ).fetchone()
    assert finished is not None
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE claimed_at = %s",
                 finished[0]) == 1


def test_a_result_too_large_for_the_claims_transaction_fails_its_job_and_the_worker_goes_on(
    dsn: str, conn: Conn
) -> None:
    """A result over max_payload_bytes, sent with a claim, would fail that claim's whole
    transaction: the fetcher hands those completions to the acknowledger, which fails the
    job whose result it cannot store, and the claim goes alone."""
    conn.execute("SELECT jobq_configure(max_payload_bytes => 100)")
    with Queue(dsn) as q:
        q.enqueue_many([
            {"job_type": "big", "payload": {"n": 0}},
            {"job_type": "big", "payload": {"n": 1}, "after": [1],
             "on_dependency_failure": "run"},
        ])

    def handle(job: Job) -> dict[str, str]:
        return {"text": "x" * 200} if job.payload["n"] == 0 else {}

    worker = Worker(dsn, handlers={"big": handle}, concurrency=2, poll_interval=3600)
    worker.run(burst=True)
    rows = conn.execute(
        "SELECT status, last_error FROM jobq_all_jobs ORDER BY (payload ->> 'n')::int"
    ).fetchall()
    assert rows[0][0] == "failed" and "cannot be stored" in rows[0][1]
    assert rows[1] == ("succeeded", None)


def test_a_worker_that_cannot_read_the_capped_groups_hands_every_limited_slot_on(
    make_role: MakeRole, dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    """A role granted the worker level before jobq_capped_groups existed cannot call it: the
    worker says so once and completes every limited job with its next claim, as if each group
    had a cap (the claim enforces the caps either way)."""
    role = make_role("worker", dsn=dsn, prefix="jobq_nocaps")
    conn.execute(
        sql.SQL("REVOKE EXECUTE ON FUNCTION jobq_capped_groups() FROM {}").format(
            sql.Identifier(role)
        )
    )
    with Queue(dsn) as q:
        q.set_limit("open", share="round_robin")
        q.enqueue_many([
            {"job_type": "t", "limit_group": "open", "payload": {"n": i}, "priority": 10 - i}
            for i in range(6)
        ])
    seen: list[int] = []
    lock = threading.Lock()

    def handle(job: Job) -> None:
        with lock:
            seen.append(job.payload["n"])

    worker = Worker(
        make_conninfo(dsn, user=role), handlers={"t": handle}, concurrency=1, prefetch=0,
        poll_interval=3600,
    )
    with caplog.at_level(logging.WARNING, logger="pgq_client"):
        worker.run(burst=True)
    assert sorted(seen) == list(range(6))
    assert sum("jobq_capped_groups" in r.getMessage() for r in caplog.records) == 1
    claims = _claim_times(conn)
    finished = [r[0] for r in conn.execute(
        "SELECT finished_at FROM jobq_all_jobs WHERE status = 'succeeded'"
    ).fetchall()]
    assert len(finished) == 6
    assert sum(f in claims for f in finished) >= 4


def test_the_claims_rows_are_read_by_their_columns_names_whatever_their_order(
    dsn: str, conn: Conn
) -> None:
    """The fetcher works out how a claim's rows become Jobs once, and again when the names of
    the columns change (a migration that adds one while the worker runs): rows of the same
    jobs with their columns in another order give the same Jobs, and those with dependents
    are still the ones completed with a claim."""
    with Queue(dsn) as q:
        first = q.enqueue("t", payload={"n": 1})
        q.enqueue("t", payload={"n": 2}, depends_on=[first])
        alone = q.enqueue("t", payload={"n": 3})
    fetcher = _fetcher(dsn)
    names = [c.name for c in conn.execute("SELECT * FROM jobq_jobs LIMIT 0").description or ()]
    reordered = sql.SQL("SELECT {} FROM jobq_jobs WHERE id = ANY(%s) ORDER BY id").format(
        sql.SQL(", ").join(map(sql.Identifier, reversed(names))))
    read: list[list[Job]] = []
    for query in (
        sql.SQL("SELECT * FROM jobq_jobs WHERE id = ANY(%s) ORDER BY id"), reordered, reordered
    ):
        hand_on = fetcher._hand_on = []
        with conn.cursor(row_factory=fetcher._claim_row) as cur:
            read.append(cur.execute(query, ([first, alone],)).fetchall())
        assert hand_on == [first]
    assert read[0] == read[1] == read[2]
    assert [job.payload for job in read[0]] == [{"n": 1}, {"n": 3}]


def test_a_claim_sized_for_hand_offs_widens_when_completions_release_more(
    dsn: str, conn: Conn
) -> None:
    """How many jobs a claim that carries completions of jobs with dependents asks for: one
    per completion at first; twice as many after such a claim was filled and more was
    announced (the completions released more than it took); one again after one the hand-off
    did not fill. The whole claim when the worker may have other jobs to take (not quiet) or
    a completion is of a limited job."""
    with Queue(dsn) as q:
        q.set_limit("capped", max_running=1)
        ids = [q.enqueue("t"), q.enqueue("t"), q.enqueue("t", limit_group="capped")]
    with conn.cursor(row_factory=models_job_row) as cur:
        # By id, not by ORDER BY id: ids made in one millisecond need not sort in the order
        # they were made.
        rows = {job.id: job for job in cur.execute(
            "SELECT * FROM jobq_jobs WHERE id = ANY(%s)", (ids,)).fetchall()}
    plain, other, limited = (rows[i] for i in ids)
    fetcher = _fetcher(dsn)
    fetcher._key_acks = [plain, other]
    sizes = [fetcher._batch(40, True)]
    for filled, announced in [(True, True), (True, False), (True, True), (False, True)]:
        fetcher._learn_width(filled, announced)
        sizes.append(fetcher._batch(40, True))
    assert sizes == [2, 4, 4, 8, 2]
    fetcher._learn_width(True, True)
    assert fetcher._batch(3, True) == 3  # never more than the policy wants
    assert fetcher._batch(40, False) == 40
    fetcher._key_acks = [plain, limited]
    assert fetcher._batch(40, True) == 40


def test_a_tree_drained_by_a_worker_is_done_by_hand_offs_and_announcements(
    dsn: str, conn: Conn
) -> None:
    """A tree (each job releases 4, three levels) drained by a Worker whose poll is an hour
    away: every job runs once its parent succeeded, whether a completion's call handed it off
    or its announcement made the next claim take it."""
    with Queue(dsn) as q:
        level = [q.enqueue("t", payload={"depth": 0})]
        for depth in (1, 2):
            level = [q.enqueue("t", payload={"depth": depth}, depends_on=[parent])
                     for parent in level for _ in range(4)]
    with _running(Worker(dsn, handlers={"t": lambda job: None}, concurrency=8,
                         poll_interval=3600)):
        wait_for("the whole tree to be done", lambda: count(
            conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == 21, 60)
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs c"
                       " JOIN jobq_job_dependencies e ON e.job_id = c.id"
                       " JOIN jobq_all_jobs p ON p.id = e.depends_on"
                       " WHERE c.claimed_at < p.finished_at") == 0
    assert count(conn, "SELECT count(*) FROM jobq_job_dependencies") == 20  # edges kept
