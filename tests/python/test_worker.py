"""The Worker against a real PostgreSQL: outcomes, fencing, heartbeats, signals, outages."""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool
from tests.helpers import MakeRole, count, job_row, wait_for

from pgq_client import (
    Job,
    JobqError,
    NotMigrated,
    PermanentError,
    PermissionDenied,
    Queue,
    Retry,
    Worker,
)
from pgq_client.migrate import MigrationError
from pgq_client.worker import WorkerConfig
from pgq_client.worker.policy import MAX_CLAIM, PrefetchPolicy

Conn = psycopg.Connection[Any]


LEDGER = """
CREATE TABLE ledger (
    job_id uuid NOT NULL,
    attempt int NOT NULL,
    worker text NOT NULL,
    what text NOT NULL DEFAULT 'ran',
    at timestamptz NOT NULL DEFAULT clock_timestamp()
)
"""


@contextmanager
def running(worker: Worker) -> Iterator[Worker]:
    """Run ``worker`` in a thread; stop it and re-raise its error on exit."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            worker.run()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, name="test-worker")
    thread.start()
    try:
        yield worker
        assert thread.is_alive(), f"worker returned early: {errors}"
    finally:
        worker.stop()
        thread.join(60)
    assert not thread.is_alive(), "worker did not stop"
    if errors:
        raise errors[0]


def steal(dsn: str, job_id: uuid.UUID, thief: str = "thief") -> None:
    """Make the job's claim stale (its 1-hour lock expired an hour ago), and let a thief with a
    1-minute lock timeout take the job over. (The victim runs with a longer lock timeout, so
    that it does not take it back.)"""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "UPDATE jobq_jobs SET locked_at = locked_at - interval '2 hours',"
            " locked_until = locked_until - interval '2 hours' WHERE id = %s",
            (job_id,),
        )
        taken = c.execute(
            "SELECT id FROM jobq_dequeue(worker_id => %s, lock_timeout => '1 minute')", (thief,)
        ).fetchall()
        assert taken == [(job_id,)]


# -- outcomes ----------------------------------------------------------------------------------


def test_burst_runs_every_available_job_once_and_returns(dsn: str, conn: Conn) -> None:
    ids = Queue(dsn).enqueue_many([{"job_type": "t", "payload": {"n": i}} for i in range(300)])
    seen: list[int] = []
    lock = threading.Lock()

    def handler(job: Job) -> None:
        with lock:
            seen.append(job.payload["n"])

    Worker(dsn, {"t": handler}, concurrency=4).run(burst=True)
    assert sorted(seen) == list(range(300))
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == len(ids)
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE attempts <> 1") == 0


def test_default_prefetch_follows_how_fast_jobs_finish() -> None:
    # The policy alone (no database): twice the jobs the handlers finish during one claim
    # round trip, rounded down, at most 16 x concurrency; 4 x concurrency before any job ended.
    policy = PrefetchPolicy(concurrency=4)
    assert policy.prefetch_now() == 16
    policy.claim_seconds = 0.004
    policy.job_seconds = 0.001  # 2 * 4 * 0.004 / 0.001 = 32
    assert policy.prefetch_now() == 32
    policy.job_seconds = 0.000001  # no-op jobs: the ceiling
    assert policy.prefetch_now() == 64
    policy.job_seconds = 0.5  # longer than two round trips: nothing waits here
    assert policy.prefetch_now() == 0
    fixed = PrefetchPolicy(concurrency=4, prefetch=3)
    fixed.job_seconds = 0.000001
    assert fixed.prefetch_now() == 3


def test_moving_averages_follow_the_measured_times() -> None:
    policy = PrefetchPolicy(concurrency=4)
    policy.job_took(0.2)  # the first run time is taken as it is
    assert policy.job_seconds == 0.2
    policy.job_took(0.4)
    assert policy.job_seconds == pytest.approx(0.21)
    policy.claim_took(0.105)
    assert policy.claim_seconds == pytest.approx(0.025)


def test_a_claim_fills_the_free_slots_once_half_of_a_claim_is_free() -> None:
    policy = PrefetchPolicy(concurrency=4, prefetch=4)  # capacity 8, claims of up to 8
    assert policy.claim_size(unfinished=0, waiting=0) == 8
    assert policy.claim_size(unfinished=5, waiting=1) == 0  # 3 free: not worth a round trip
    assert policy.claim_size(unfinished=4, waiting=1) == 4  # half a claim
    assert policy.claim_size(unfinished=5, waiting=0) == 3  # a handler may be idle: claim
    assert policy.claim_size(unfinished=8, waiting=0) == 0  # full
    batched = PrefetchPolicy(concurrency=4, prefetch=16, batch_size=6)
    assert batched.claim_size(unfinished=0, waiting=0) == 6
    assert batched.claim_size(unfinished=16, waiting=12) == 4  # 4 free >= half of 6
    assert batched.claim_size(unfinished=18, waiting=10) == 0
    huge = PrefetchPolicy(concurrency=1000, prefetch=16000)
    assert huge.claim_size(unfinished=0, waiting=0) == MAX_CLAIM  # jobq_dequeue's bound


def test_when_claims_limit_the_worker_a_claim_waits_for_an_empty_buffer() -> None:
    policy = PrefetchPolicy(concurrency=4)  # capacity 4 + 64 once jobs are known to be short
    policy.claim_seconds = 0.01
    policy.job_seconds = 0.0001  # two round trips hold 800 jobs: more than any buffer
    assert policy.claims_limit()
    assert policy.claim_size(unfinished=30, waiting=26) == 0  # 38 free: more than half...
    assert policy.claim_size(unfinished=4, waiting=0) == 64  # ...but it waits for this
    policy.job_seconds = 0.01  # two round trips: 8 jobs, the buffer holds them
    assert not policy.claims_limit()
    assert policy.claim_size(unfinished=4, waiting=2) == 8  # half a claim: worth it again
    fixed = PrefetchPolicy(concurrency=4, prefetch=64)
    fixed.claim_seconds, fixed.job_seconds = 0.01, 0.0001
    assert not fixed.claims_limit()  # a fixed prefetch keeps the half-claim rule


def _noop(job: Job) -> None:
    pass


@pytest.mark.parametrize(
    ("settings", "error", "named"),
    [
        ({"handlers": {}}, ValueError, "at least one handler"),
        ({"handlers": {"t": "not a function"}}, TypeError, "handler for 't'"),
        ({"handlers": {" ": _noop}}, ValueError, "job types"),
        ({"concurrency": 0}, ValueError, "concurrency"),
        ({"queues": "default"}, TypeError, "queues"),
        ({"lock_timeout": timedelta(0)}, ValueError, "lock_timeout"),
        ({"prefetch": -1}, ValueError, "prefetch"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"batch_size": 10_001}, ValueError, "batch_size"),
        ({"poll_interval": 0.0}, ValueError, "poll_interval"),
        ({"heartbeat_interval": 300.0}, ValueError, "heartbeat_interval"),
        ({"shutdown_grace": -1.0}, ValueError, "shutdown_grace"),
        ({"retry_backoff": timedelta(seconds=-1)}, ValueError, "retry_backoff"),
        ({"summary_interval": 0.0}, ValueError, "summary_interval"),
        ({"worker_id": " "}, ValueError, "worker_id"),
        ({"worker_id": "w" * 201}, ValueError, "worker_id"),
    ],
)
def test_worker_config_refuses_bad_settings_naming_them(
    settings: dict[str, Any], error: type[Exception], named: str
) -> None:
    with pytest.raises(error, match=named):
        WorkerConfig(**{"handlers": {"t": _noop}, **settings})


def test_worker_config_is_frozen_and_fills_in_its_defaults() -> None:
    config = WorkerConfig(handlers={"t": _noop}, queues=["a", "b"], lock_timeout=timedelta(60))
    assert config.queues == ("a", "b")
    assert config.heartbeat_seconds == timedelta(60).total_seconds() / 3
    with pytest.raises(AttributeError):
        config.concurrency = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.handlers["u"] = _noop  # type: ignore[index]


def test_worker_arguments_in_seconds_or_timedeltas_are_the_same() -> None:
    a = Worker("dbname=unused", {"t": _noop}, lock_timeout=90, retry_backoff=5, poll_interval=2)
    b = Worker(
        "dbname=unused",
        {"t": _noop},
        lock_timeout=timedelta(seconds=90),
        retry_backoff=timedelta(seconds=5),
        poll_interval=timedelta(seconds=2),
    )
    assert dataclasses.replace(a.config, worker_id="w") == dataclasses.replace(
        b.config, worker_id="w"
    )
    config = WorkerConfig(
        handlers={"t": _noop}, lock_timeout=90, retry_backoff=5, poll_interval=2, worker_id="w"
    )
    assert config == dataclasses.replace(a.config, worker_id="w")
    with pytest.raises(ValueError, match="lock_timeout must not be negative"):
        Worker("dbname=unused", {"t": _noop}, lock_timeout=-1)


class _Handlers:
    def plain(self, job: Job) -> None:
        pass

    def transactional(self, job: Job, conn: Conn) -> None:
        pass


def _with_conn(job: Job, conn: Conn, extra: int = 0) -> None:
    pass


def test_transactional_handlers_are_told_apart_by_their_positional_parameters() -> None:
    methods = _Handlers()
    config = WorkerConfig(
        handlers={
            "function": _noop,
            "lambda": lambda job: None,
            "builtin": print,
            "method": methods.plain,
            "tx_function": _with_conn,
            "tx_lambda": lambda job, conn: None,
            "tx_method": methods.transactional,
            "tx_partial": functools.partial(_with_conn, extra=1),
        }
    )
    assert config.transactional == {"tx_function", "tx_lambda", "tx_method", "tx_partial"}


def test_handler_signals_are_not_database_errors_and_migration_errors_are() -> None:
    assert not issubclass(PermanentError, JobqError)
    assert not issubclass(Retry, JobqError)
    assert issubclass(MigrationError, JobqError)


@pytest.mark.slow  # seconds of waiting
def test_slow_jobs_are_not_prefetched_by_default(dsn: str, conn: Conn) -> None:
    Queue(dsn).enqueue_many([{"job_type": "t", "payload": {"n": i}} for i in range(12)])
    done = threading.Event()
    most_processing = 0

    def watch() -> None:
        nonlocal most_processing
        with psycopg.connect(dsn, autocommit=True) as c:
            while not done.is_set():
                # Once the first claim's jobs (prefetched before any run time was known) ran.
                if count(c, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") >= 6:
                    most_processing = max(
                        most_processing,
                        count(c, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'processing'"),
                    )
                time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        Worker(dsn, {"t": lambda job: time.sleep(0.3)}, concurrency=1).run(burst=True)
    finally:
        done.set()
        watcher.join()
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == 12
    # The running job and one finished but not yet acknowledged; a third only if a claim
    # round trip took over 0.15 s on average. A fixed 4 x concurrency prefetch would hold 5.
    assert 1 <= most_processing <= 3


def test_burst_returns_without_waiting_for_future_jobs(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    now_id = q.enqueue("t")
    later_id = q.enqueue("t", run_at=datetime.now(timezone.utc) + timedelta(hours=1))
    # Not a speed assertion: a burst run that waited for the future job, or for one poll
    # interval, would take 120 s; the bound leaves a loaded machine ample time.
    started = time.monotonic()
    Worker(dsn, {"t": lambda job: None}, poll_interval=120).run(burst=True)
    assert time.monotonic() - started < 60
    assert job_row(conn, now_id)["status"] == "succeeded"
    assert job_row(conn, later_id)["status"] == "pending"


def test_a_burst_run_names_the_jobs_that_no_worker_serves(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    """A producer misspelt a job type: "no job available" is true for this worker only, and
    the run says which available jobs nobody serves (and changes nothing about them)."""
    q = Queue(dsn)
    typo = q.enqueue("send_emial", queue="mail")
    q.enqueue("send_email", queue="mail")
    with caplog.at_level(logging.INFO, logger="pgq_client.worker"):
        Worker(dsn, {"send_email": lambda job: None}, queues=["mail"]).run(burst=True)
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "1 job(s) of type 'send_emial' in queue 'mail'" in warning
    assert "send_email'" not in warning
    assert job_row(conn, typo)["status"] == "pending"
    assert [u.job_type for u in q.unserved_job_types()] == ["send_emial"]


@pytest.mark.slow  # seconds of waiting
def test_a_worker_says_at_start_which_jobs_no_worker_serves(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    Queue(dsn).enqueue("nobody_handles_this")
    worker = Worker(dsn, {"t": lambda job: None})
    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"), running(worker):
        wait_for(
            "the start-up warning",
            lambda: any("nobody_handles_this" in r.getMessage() for r in caplog.records),
        )


def test_a_worker_without_the_right_to_look_says_nothing_and_runs(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture, worker_role: str
) -> None:
    """jobq_unserved_job_types is for admins: a worker role's run is not disturbed."""
    q = Queue(dsn)
    q.enqueue("other")
    done = q.enqueue("t")
    with caplog.at_level(logging.DEBUG, logger="pgq_client.worker"):
        Worker(make_conninfo(dsn, user=worker_role), {"t": lambda job: None}).run(burst=True)
    assert job_row(conn, done)["status"] == "succeeded"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("cannot look for jobs nobody serves" in r.getMessage() for r in caplog.records)


def test_burst_on_an_empty_queue_returns_at_once(dsn: str) -> None:
    started = time.monotonic()  # a run that waited one poll interval would take 120 s
    Worker(dsn, {"t": lambda job: None}, poll_interval=120).run(burst=True)
    assert time.monotonic() - started < 60


def test_handler_exception_retries_later_with_its_error(dsn: str, conn: Conn) -> None:
    job_id = Queue(dsn).enqueue("t")

    def handler(job: Job) -> None:
        raise ValueError("bad input")

    Worker(dsn, {"t": handler}, retry_backoff=60).run(burst=True)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    wait = (row["available_at"] - row["updated_at"]).total_seconds()
    assert 59 <= wait <= 61
    assert row["last_error"].splitlines()[0] == "ValueError: bad input"
    assert row["errors"][0]["attempt"] == 1


def test_stored_error_is_the_exception_then_the_last_frames_cut(dsn: str, conn: Conn) -> None:
    # Producers and monitors read last_error: the exception's type and message first, then
    # the traceback's last 5 frames as file name, line and function, no directory and no
    # source line, at most 2,000 characters.
    job_id = Queue(dsn).enqueue("t")

    def nested(depth: int) -> None:
        if depth:
            nested(depth - 1)
        secret_source_line = "x" * 3000
        raise KeyError(secret_source_line)

    def handler(job: Job) -> None:
        nested(8)

    Worker(dsn, {"t": handler}, retry_backoff=60).run(burst=True)
    row = job_row(conn, job_id)
    error = row["last_error"]
    lines = error.splitlines()
    assert lines[0].startswith("KeyError: 'xxxx") and lines[0].endswith("…")
    assert len(lines[0]) == 1000
    assert lines[1].startswith("Traceback (last 5 of ")
    frames = lines[2:]
    assert len(frames) == 5
    assert all(f.startswith("  test_worker.py:") and f.endswith(" in nested") for f in frames)
    assert os.sep not in error and str(Path(__file__).parent) not in error
    assert "secret_source_line" not in error and "raise KeyError" not in error
    assert len(error) <= 2000
    assert row["errors"][0]["error"] == error


def test_permanent_error_fails_the_job_without_retry(dsn: str, conn: Conn) -> None:
    job_id = Queue(dsn).enqueue("t", max_attempts=5)

    def handler(job: Job) -> None:
        raise PermanentError("document is encrypted")

    Worker(dsn, {"t": handler}).run(burst=True)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("failed", 1)
    assert "document is encrypted" in row["last_error"]
    assert row["finished_at"] is not None


def test_retry_after_waits_that_long_whatever_the_attempt(dsn: str, conn: Conn) -> None:
    job_id = Queue(dsn).enqueue("t")
    attempts: list[int] = []

    def handler(job: Job) -> None:
        attempts.append(job.attempts)
        raise Retry(after=0 if job.attempts == 1 else timedelta(seconds=100))

    Worker(dsn, {"t": handler}).run(burst=True)
    assert attempts == [1, 2]  # after=0: available again at once, even within a burst
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 2)
    wait = (row["available_at"] - row["updated_at"]).total_seconds()
    assert 99 <= wait <= 101  # not 2 x 100: the worker divides by the attempt


def test_exception_text_with_nul_and_surrogates_is_recorded_escaped(dsn: str, conn: Conn) -> None:
    job_id = Queue(dsn).enqueue("t")

    def handler(job: Job) -> None:
        raise PermanentError("bad \x00 byte and \ud800 surrogate")

    Worker(dsn, {"t": handler}).run(burst=True)
    row = job_row(conn, job_id)
    assert row["status"] == "failed"
    assert "bad \\x00 byte and \\ud800 surrogate" in row["last_error"]


def test_failing_the_last_attempt_makes_a_dead_letter(dsn: str, conn: Conn) -> None:
    job_id = Queue(dsn).enqueue("t", max_attempts=1)

    def handler(job: Job) -> None:
        raise RuntimeError("always")

    Worker(dsn, {"t": handler}).run(burst=True)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("dead_letter", 1)
    assert [j.id for j in Queue(dsn).dead_letters()] == [job_id]


def test_worker_serves_only_its_queues(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    a = q.enqueue("t", queue="a")
    b = q.enqueue("t", queue="b")
    Worker(dsn, {"t": lambda job: None}, queues=["a"]).run(burst=True)
    assert job_row(conn, a)["status"] == "succeeded"
    assert job_row(conn, b)["status"] == "pending"


def test_worker_on_a_given_pool_with_its_own_row_factory(dsn: str, conn: Conn) -> None:
    conn.execute("CREATE TABLE results (job_id uuid)")
    ids = Queue(dsn).enqueue_many([{"job_type": t} for t in ("plain", "tx") * 10])

    def tx(job: Job, tx_conn: Conn) -> None:
        tx_conn.execute("INSERT INTO results VALUES (%s)", (job.id,))

    kwargs = {"row_factory": psycopg.rows.dict_row, "autocommit": True}
    with ConnectionPool(dsn, min_size=1, max_size=4, kwargs=kwargs, open=True) as pool:
        Worker(pool, {"plain": _noop, "tx": tx}, concurrency=3).run(burst=True)
        assert not pool.closed  # the caller's pool is left open
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == len(ids)
    assert count(conn, "SELECT count(*) FROM results") == 10


def test_worker_on_a_database_without_jobq_raises_not_migrated(empty_dsn: str) -> None:
    with pytest.raises(NotMigrated, match="jobq migrate"):
        Worker(empty_dsn, {"t": lambda job: None}).run(burst=True)


# -- transactional completion and fencing ------------------------------------------------------


def test_transactional_handler_commits_its_writes_with_the_completion(dsn: str, conn: Conn) -> None:
    conn.execute("CREATE TABLE results (job_id uuid PRIMARY KEY, txid bigint)")
    job_id = Queue(dsn).enqueue("t")

    def handler(job: Job, tx: Conn) -> None:
        assert tx.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        tx.execute("INSERT INTO results VALUES (%s, txid_current())", (job.id,))

    Worker(dsn, {"t": handler}).run(burst=True)
    assert job_row(conn, job_id)["status"] == "succeeded"
    # The completion happened in the handler's transaction: same transaction id.
    assert count(conn, "SELECT count(*) FROM results WHERE job_id = %s", job_id) == 1
    row = conn.execute(
        "SELECT (r.txid % 4294967296)::text::xid = j.xmin "
        "FROM results r JOIN jobq_jobs_history j ON j.id = r.job_id"
    ).fetchone()
    assert row == (True,)


def test_transactional_handler_exception_rolls_back_its_writes(dsn: str, conn: Conn) -> None:
    conn.execute("CREATE TABLE results (job_id uuid)")
    job_id = Queue(dsn).enqueue("t")

    def handler(job: Job, tx: Conn) -> None:
        tx.execute("INSERT INTO results VALUES (%s)", (job.id,))
        raise RuntimeError("after the write")

    Worker(dsn, {"t": handler}, retry_backoff=60).run(burst=True)
    assert count(conn, "SELECT count(*) FROM results") == 0
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert "after the write" in row["last_error"]


def test_transactional_handler_whose_connection_dies_is_retried_not_stranded(
    dsn: str, conn: Conn
) -> None:
    conn.execute("CREATE TABLE results (job_id uuid, attempt int)")
    job_id = Queue(dsn).enqueue("t")

    def handler(job: Job, tx: Conn) -> None:
        tx.execute("INSERT INTO results VALUES (%s, %s)", (job.id, job.attempts))
        if job.attempts == 1:
            tx.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    Worker(dsn, {"t": handler}, retry_backoff=0).run(burst=True)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("succeeded", 2)
    assert conn.execute("SELECT attempt FROM results").fetchall() == [(2,)]
    assert "terminating connection" in row["errors"][0]["error"]


def test_transactional_handler_that_lost_its_claim_has_its_writes_rolled_back(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    conn.execute("CREATE TABLE results (job_id uuid)")
    job_id = Queue(dsn).enqueue("t")

    def handler(job: Job, tx: Conn) -> None:
        tx.execute("INSERT INTO results VALUES (%s)", (job.id,))
        steal(dsn, job.id)  # meanwhile, the lock expired and another worker took the job

    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"):
        Worker(dsn, {"t": handler}, worker_id="slow", lock_timeout=3600).run(burst=True)
    assert count(conn, "SELECT count(*) FROM results") == 0
    row = job_row(conn, job_id)
    assert (row["status"], row["locked_by"], row["attempts"]) == ("processing", "thief", 2)
    assert any(
        "claim lost" in r.getMessage() and str(job_id) in r.getMessage() for r in caplog.records
    )


@pytest.mark.parametrize("limited", [False, True], ids=["unlimited", "limited"])
def test_plain_handler_that_lost_its_claim_is_logged_not_raised(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture, limited: bool
) -> None:
    """Limited: its completion goes with the fetcher's next claim, not the acknowledger."""
    with Queue(dsn) as q:
        if limited:
            q.set_limit("g", max_running=1)
        job_id = q.enqueue("t", limit_group="g" if limited else None)

    def handler(job: Job) -> None:
        steal(dsn, job.id)

    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"):
        Worker(dsn, {"t": handler}, worker_id="slow", lock_timeout=3600).run(burst=True)
    row = job_row(conn, job_id)
    assert (row["status"], row["locked_by"]) == ("processing", "thief")
    assert any(
        "not recorded" in r.getMessage() and str(job_id) in r.getMessage() for r in caplog.records
    )


def test_plain_handler_failure_after_losing_its_claim_changes_nothing(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    job_id = Queue(dsn).enqueue("t")

    def handler(job: Job) -> None:
        steal(dsn, job.id)
        raise RuntimeError("too late")

    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"):
        Worker(dsn, {"t": handler}, worker_id="slow", lock_timeout=3600).run(burst=True)
    row = job_row(conn, job_id)
    assert (row["status"], row["locked_by"]) == ("processing", "thief")
    assert [e["worker"] for e in row["errors"]] == ["slow"]  # only the takeover is recorded
    assert "too late" not in row["last_error"]
    assert any("failure not recorded" in r.getMessage() for r in caplog.records)


# -- liveness ----------------------------------------------------------------------------------


def test_notify_wakes_an_idle_worker_long_before_the_poll_interval(dsn: str, conn: Conn) -> None:
    done = threading.Event()
    with running(Worker(dsn, {"t": lambda job: done.set()}, poll_interval=60)):
        # The fetcher LISTENs on the connection it claims on, before its first claim: once
        # that (empty) claim is over, only a notification can make it claim within a minute.
        wait_for(
            "the worker's first claim",
            lambda: (
                count(
                    conn,
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND state = 'idle' AND query LIKE '%%jobq_dequeue%%'",
                )
                == 1
            ),
        )
        Queue(dsn).enqueue("t")
        assert done.wait(30), "the enqueued job was not picked up on NOTIFY (poll: 60 s)"


@pytest.mark.slow
def test_heartbeats_and_acknowledgements_never_deadlock(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    """A heartbeat (every held job) and an acknowledgement (some of them) sent at once on
    overlapping rows never deadlock (40P01): 20,000 jobs drain with a heartbeat every 10 ms
    and no statement is retried."""
    Queue(dsn).enqueue_many([{"job_type": "t"} for _ in range(20000)])
    with caplog.at_level(logging.DEBUG, logger="pgq_client.worker"):
        Worker(
            dsn, {"t": lambda job: None}, concurrency=8, lock_timeout=3, heartbeat_interval=0.01
        ).run(burst=True)
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == 20000
    trouble = [r.getMessage() for r in caplog.records if "unavailable" in r.getMessage()]
    assert not trouble, trouble[:3]


@pytest.mark.slow
def test_heartbeats_keep_a_long_job_from_being_taken_over(dsn: str, conn: Conn) -> None:
    job_id = Queue(dsn).enqueue("t")
    started = threading.Event()
    release = threading.Event()

    def handler(job: Job) -> None:
        started.set()
        release.wait(30)

    worker = Worker(dsn, {"t": handler}, lock_timeout=2, heartbeat_interval=0.5, worker_id="alive")
    thief = Queue(dsn)
    with running(worker):
        assert started.wait(10)
        deadline = time.monotonic() + 5  # 2.5 lock timeouts
        while time.monotonic() < deadline:
            assert thief.dequeue("thief", lock_timeout=timedelta(seconds=2)) == []
            time.sleep(0.25)
        row = job_row(conn, job_id)
        assert (row["status"], row["locked_by"]) == ("processing", "alive")
        lock_age = conn.execute("SELECT now() - locked_at FROM jobq_all_jobs").fetchone()
        assert lock_age is not None and lock_age[0] < timedelta(seconds=1.5)
        release.set()
        wait_for("completion", lambda: job_row(conn, job_id)["status"] == "succeeded")
    assert job_row(conn, job_id)["attempts"] == 1


def test_concurrent_workers_never_run_a_job_twice(dsn: str, conn: Conn) -> None:
    ids = Queue(dsn).enqueue_many([{"job_type": "t"} for _ in range(600)])
    ran: Counter[uuid.UUID] = Counter()
    lock = threading.Lock()

    def handler(job: Job) -> None:
        with lock:
            ran[job.id] += 1

    workers = [Worker(dsn, {"t": handler}, concurrency=4, batch_size=3) for _ in range(3)]
    barrier = threading.Barrier(3)

    def run(w: Worker) -> None:
        barrier.wait()
        w.run(burst=True)

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert set(ran) == set(ids)
    assert max(ran.values()) == 1
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status <> 'succeeded'") == 0


def test_stop_releases_prefetched_jobs_and_lets_the_running_one_finish(
    dsn: str, conn: Conn
) -> None:
    ids = Queue(dsn).enqueue_many([{"job_type": "t"} for _ in range(3)])
    started = threading.Event()
    release = threading.Event()
    finished: list[uuid.UUID] = []

    def handler(job: Job) -> None:
        started.set()
        release.wait(30)
        finished.append(job.id)

    worker = Worker(dsn, {"t": handler}, concurrency=1, prefetch=1, worker_id="w")
    thread = threading.Thread(target=worker.run)
    thread.start()
    assert started.wait(10)
    wait_for(
        "one running and one prefetched job",
        lambda: count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'processing'") == 2,
    )
    worker.stop()
    wait_for(
        "the prefetched job to be released while the other still runs",
        lambda: count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'processing'") == 1,
    )
    assert thread.is_alive()
    release.set()
    thread.join(30)
    assert not thread.is_alive()
    statuses = {i: job_row(conn, i) for i in ids}
    assert [statuses[i]["status"] for i in finished] == ["succeeded"]
    others = [r for i, r in statuses.items() if i not in finished]
    assert [(r["status"], r["attempts"], r["locked_by"]) for r in others] == [
        ("pending", 0, None)
    ] * 2


# -- processes: SIGTERM, SIGKILL ---------------------------------------------------------------

HANDLER_MODULE = """
import os
import time

import psycopg

DSN = os.environ["JOBQ_DSN"]


def _mark(job, what):
    with psycopg.connect(DSN, autocommit=True) as c:
        c.execute(
            "INSERT INTO ledger (job_id, attempt, worker, what) VALUES (%s, %s, %s, %s)",
            (job.id, job.attempts, job.locked_by, what),
        )


def slow(job):
    _mark(job, "start")
    time.sleep(float(job.payload.get("sleep", 0)))
    _mark(job, "end")


HANDLERS = {"slow": slow}
"""


def start_worker_process(dsn: str, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    (tmp_path / "jobs_for_test.py").write_text(textwrap.dedent(HANDLER_MODULE))
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["JOBQ_DSN"] = dsn
    return subprocess.Popen(
        [sys.executable, "-m", "pgq_client", "worker", "jobs_for_test:HANDLERS", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_sigterm_finishes_the_running_job_releases_the_rest_and_exits_zero(
    dsn: str, conn: Conn, tmp_path: Path
) -> None:
    conn.execute(LEDGER)
    ids = Queue(dsn).enqueue_many([{"job_type": "slow", "payload": {"sleep": 2}} for _ in range(3)])
    proc = start_worker_process(
        dsn, tmp_path, "--concurrency", "1", "--prefetch", "1", "--shutdown-grace", "30"
    )
    try:
        wait_for(
            "the job to start",
            lambda: count(conn, "SELECT count(*) FROM ledger WHERE what = 'start'") == 1,
        )
        wait_for(
            "a running and a prefetched job",
            lambda: count(conn, "SELECT count(*) FROM jobq_jobs WHERE status = 'processing'") == 2,
        )
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    ran = [r[0] for r in conn.execute("SELECT job_id FROM ledger WHERE what = 'end'").fetchall()]
    assert len(ran) == 1  # the running job finished within the grace period...
    assert job_row(conn, ran[0])["status"] == "succeeded"
    for job_id in set(ids) - set(ran):  # ...and the others are free for anyone, unstarted
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"], row["locked_by"]) == ("pending", 0, None)


def test_job_of_a_sigkilled_worker_is_finished_by_another_after_its_lock_expires(
    dsn: str, conn: Conn, tmp_path: Path
) -> None:
    conn.execute(LEDGER)
    job_id = Queue(dsn).enqueue("slow", {"sleep": 600})
    proc = start_worker_process(dsn, tmp_path, "--worker-id", "doomed")
    try:
        wait_for("job start", lambda: count(conn, "SELECT count(*) FROM ledger") == 1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
        proc.communicate()
    row = job_row(conn, job_id)
    assert (row["status"], row["locked_by"]) == ("processing", "doomed")
    # Its lock expires (no more heartbeats): move time instead of waiting five minutes.
    conn.execute("UPDATE jobq_jobs SET locked_at = locked_at - interval '6 minutes',"
        " locked_until = locked_until - interval '6 minutes'")
    Worker(dsn, {"slow": lambda job: None}, worker_id="rescuer").run(burst=True)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("succeeded", 2)
    assert row["errors"][0]["worker"] == "doomed"


# -- outages -----------------------------------------------------------------------------------


def test_worker_keeps_running_through_a_restart_and_terminated_backends(
    dsn: str, conn: Conn, pg_restart: Callable[..., None]
) -> None:
    # The harness runs the server with synchronous_commit=off: an immediate restart would lose
    # commits already acknowledged (a claim, a ledger row), which no client can make up for.
    # This test is about the client, so its sessions commit durably.
    dsn = make_conninfo(dsn, options="-c synchronous_commit=on")
    conn.execute(LEDGER)

    def tx_handler(job: Job, tx: Conn) -> None:
        # Written in the completion's transaction: a row exists only for the claim that completed.
        tx.execute(
            "INSERT INTO ledger (job_id, attempt, worker, what) VALUES (%s, %s, %s, 'tx')",
            (job.id, job.attempts, job.locked_by),
        )
        time.sleep(0.005)

    def plain_handler(job: Job) -> None:
        # Written on its own: at least once per job, and always by the claim that completed it.
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as c:
            c.execute(
                "INSERT INTO ledger (job_id, attempt, worker, what) VALUES (%s, %s, %s, 'plain')",
                (job.id, job.attempts, job.locked_by),
            )

    def enqueue(n: int) -> list[uuid.UUID]:
        jobs = [{"job_type": "tx" if i % 2 else "plain", "max_attempts": 50} for i in range(n)]
        return Queue(dsn).enqueue_many(jobs)

    def succeeded() -> int:
        with psycopg.connect(dsn, autocommit=True) as c:
            return count(c, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'")

    ids = enqueue(400)
    worker = Worker(
        dsn,
        {"tx": tx_handler, "plain": plain_handler},
        concurrency=4,
        lock_timeout=3,
        heartbeat_interval=1,
        poll_interval=0.2,
        retry_backoff=0.2,
        worker_id="survivor",
    )
    with running(worker):
        wait_for("some progress", lambda: succeeded() >= 50)
        pg_restart("immediate")
        wait_for("progress after the restart", lambda: succeeded() >= 200, 60)
        with psycopg.connect(dsn, autocommit=True) as c:
            killed = count(
                c,
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()) t",
            )
        assert killed >= 2  # the listener and at least one pooled connection
        ids += enqueue(100)  # new work is noticed after the reconnect
        wait_for("every job to succeed", lambda: succeeded() == len(ids), 90)

    with psycopg.connect(dsn, autocommit=True) as c:
        assert count(c, "SELECT count(*) FROM jobq_all_jobs WHERE status <> 'succeeded'") == 0
        tx_jobs = count(c, "SELECT count(*) FROM jobq_all_jobs WHERE job_type = 'tx'")
        # Every transactional job ran and committed exactly once, by the claim that completed it.
        per_job = c.execute(
            "SELECT j.id, count(l.job_id), bool_and(l.attempt = j.attempts) "
            "FROM jobq_all_jobs j LEFT JOIN ledger l ON l.job_id = j.id "
            "WHERE j.job_type = 'tx' GROUP BY j.id"
        ).fetchall()
        assert len(per_job) == tx_jobs
        assert [r for r in per_job if r[1] != 1 or not r[2]] == []
        # Every plain job ran, and ran for the claim that completed it.
        missing = c.execute(
            "SELECT j.id FROM jobq_all_jobs j WHERE j.job_type = 'plain' AND NOT EXISTS ("
            "SELECT FROM ledger l WHERE l.job_id = j.id AND l.attempt = j.attempts)"
        ).fetchall()
        assert missing == []
        # Nothing got stuck behind the outage for want of an acknowledgement.
        assert count(c, "SELECT count(*) FROM jobq_all_jobs WHERE locked_by IS NOT NULL") == 0


# -- errors a retry cannot fix -----------------------------------------------------------------


@pytest.fixture
def worker_role(make_role: MakeRole, dsn: str) -> str:
    """A login role granted the worker level in the test's database."""
    return make_role("worker", dsn=dsn, prefix="jobq_worker")


def test_a_role_without_the_worker_grants_is_told_how_to_get_them(
    make_role: MakeRole, dsn: str
) -> None:
    name = make_role("producer", dsn=dsn, prefix="jobq_producer")
    worker = Worker(make_conninfo(dsn, user=name), {"t": _noop})
    with pytest.raises(PermissionDenied, match="jobq grant ROLE --as worker") as raised:
        worker.run(burst=True)
    assert "jobq_heartbeat" in str(raised.value) and raised.value.sqlstate == "42501"


def _first_claim_done(conn: Conn, user: str | None = None) -> bool:
    """The worker's fetchers have claimed once and are idle (listening)."""
    return (
        count(
            conn,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND state = 'idle' AND query LIKE '%%jobq_dequeue%%' "
            "AND (%s::text IS NULL OR usename = %s::text)",
            user,
            user,
        )
        > 0
    )


@pytest.mark.parametrize(
    ("function", "left"),
    [("jobq_dequeue", "pending"), ("jobq_complete_many", "processing")],
)
def test_a_privilege_revoked_while_running_stops_the_worker_with_the_error(
    dsn: str,
    conn: Conn,
    worker_role: str,
    caplog: pytest.LogCaptureFixture,
    function: str,
    left: str,
) -> None:
    worker = Worker(make_conninfo(dsn, user=worker_role), {"t": _noop}, poll_interval=0.05)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            worker.run()
        except BaseException as exc:
            errors.append(exc)

    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"):
        thread = threading.Thread(target=run)
        thread.start()
        try:
            wait_for("the first claim", lambda: _first_claim_done(conn, worker_role))
            conn.execute(
                sql.SQL("REVOKE EXECUTE ON FUNCTION {} FROM {}").format(
                    sql.Identifier(function), sql.Identifier(worker_role)
                )
            )
            job_id = Queue(dsn).enqueue("t")
            thread.join(30)
            ended_by_itself = not thread.is_alive()
        finally:
            worker.stop()
            thread.join(30)
    assert ended_by_itself  # no stop() needed: the failing call ended the run
    assert len(errors) == 1 and isinstance(errors[0], PermissionDenied), errors
    assert function in str(errors[0])
    stopping = [r for r in caplog.records if "failed, stopping" in r.getMessage()]
    assert [r.levelno for r in stopping] == [logging.ERROR], caplog.messages
    assert not any("unavailable" in m for m in caplog.messages)  # not taken for an outage
    assert job_row(conn, job_id)["status"] == left
    if left == "processing":  # run, but its result could not be sent: said so, by job
        assert any(
            "result not recorded" in m and str(job_id) in m for m in caplog.messages
        ), caplog.messages


def test_a_claim_function_dropped_while_running_stops_the_worker_not_retried(
    dsn: str, conn: Conn
) -> None:
    worker = Worker(dsn, {"t": lambda job: None}, poll_interval=0.05)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            worker.run()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_for("the first claim", lambda: _first_claim_done(conn))
        conn.execute("DROP FUNCTION jobq_dequeue")  # 42883 from now on
        thread.join(30)
        ended_by_itself = not thread.is_alive()
    finally:
        worker.stop()
        thread.join(30)
    assert ended_by_itself
    assert len(errors) == 1 and isinstance(errors[0], NotMigrated), errors
    assert errors[0].sqlstate == "42883"


CLAIMS_FAIL = """
CREATE TABLE claim_fault (sqlstate text);
CREATE FUNCTION claim_fault() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_state text := (SELECT sqlstate FROM claim_fault);
BEGIN
    IF v_state IS NOT NULL THEN
        RAISE EXCEPTION 'claim_fault: raising %', v_state USING ERRCODE = v_state;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER claim_fault BEFORE UPDATE ON jobq_jobs FOR EACH ROW EXECUTE FUNCTION claim_fault();
"""


@pytest.mark.parametrize(
    "sqlstate",
    [
        "54000",  # program_limit_exceeded: a psycopg OperationalError, yet never transient
        "22023",  # invalid_parameter_value
        "0A000",  # feature_not_supported
    ],
)
def test_a_claim_that_fails_for_good_stops_the_worker_not_retried_as_an_outage(
    dsn: str, conn: Conn, sqlstate: str, caplog: pytest.LogCaptureFixture
) -> None:
    conn.execute(CLAIMS_FAIL)
    conn.execute("INSERT INTO claim_fault VALUES (%s)", (sqlstate,))
    Queue(dsn).enqueue("t")
    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"), pytest.raises(
        JobqError, match="claim_fault"
    ) as raised:
        Worker(dsn, {"t": _noop}, poll_interval=0.05).run()  # not a burst: it must stop itself
    assert raised.value.sqlstate == sqlstate
    assert any("claiming jobs failed, stopping" in m for m in caplog.messages), caplog.messages
    assert not any("unavailable" in m or "retrying" in m for m in caplog.messages)
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'pending'") == 1


@pytest.mark.parametrize(
    "sqlstate",
    [
        "40P01",  # deadlock_detected
        "57014",  # query_canceled (statement_timeout)
        "53300",  # too_many_connections
    ],
)
def test_a_claim_that_fails_for_a_while_is_retried_until_it_works(
    dsn: str, conn: Conn, sqlstate: str, caplog: pytest.LogCaptureFixture
) -> None:
    conn.execute(CLAIMS_FAIL)
    conn.execute("INSERT INTO claim_fault VALUES (%s)", (sqlstate,))
    job_id = Queue(dsn).enqueue("t")
    worker = Worker(dsn, {"t": _noop}, poll_interval=0.05)
    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"), running(worker):
        wait_for(
            "a failed claim",
            lambda: any("while claiming jobs" in m for m in caplog.messages),
        )
        conn.execute("UPDATE claim_fault SET sqlstate = NULL")
        wait_for("the job", lambda: job_row(conn, job_id)["status"] == "succeeded")
    (warning,) = [m for m in caplog.messages if "while claiming jobs" in m]
    assert f"[{sqlstate}]" in warning and "retrying" in warning


def test_cli_worker_whose_privilege_is_revoked_exits_1_with_one_error_line(
    dsn: str, conn: Conn, worker_role: str, tmp_path: Path
) -> None:
    conn.execute(LEDGER)
    proc = start_worker_process(
        make_conninfo(dsn, user=worker_role), tmp_path, "--poll-interval", "0.05"
    )
    try:
        wait_for("the first claim", lambda: _first_claim_done(conn, worker_role))
        conn.execute(
            sql.SQL("REVOKE EXECUTE ON FUNCTION jobq_dequeue FROM {}").format(
                sql.Identifier(worker_role)
            )
        )
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("jobq: error: ") and "permission denied" in last, stderr


# -- what the worker says ----------------------------------------------------------------------


def test_the_log_says_what_each_failure_did_to_the_job(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    q = Queue(dsn)
    last = q.enqueue("t", {"kind": "error"}, max_attempts=1)
    retried = q.enqueue("t", {"kind": "error"}, max_attempts=3)
    permanent = q.enqueue("t", {"kind": "permanent"})

    def handler(job: Job) -> None:
        if job.payload["kind"] == "permanent":
            raise PermanentError("corrupt input")
        raise RuntimeError("flaky")

    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"):
        Worker(dsn, {"t": handler}, retry_backoff=60).run(burst=True)

    def line(job_id: uuid.UUID) -> str:
        (message,) = [r.getMessage() for r in caplog.records if str(job_id) in r.getMessage()]
        return message

    assert job_row(conn, last)["status"] == "dead_letter"
    assert "attempt 1/1" in line(last) and "now dead_letter" in line(last)
    assert "retried" not in line(last)
    assert job_row(conn, retried)["status"] == "pending"
    assert "attempt 1/3" in line(retried) and "retried in 60s" in line(retried)
    assert "RuntimeError('flaky')" in line(retried)
    assert job_row(conn, permanent)["status"] == "failed"
    assert "now failed" in line(permanent) and "corrupt input" in line(permanent)


def test_at_info_one_line_at_start_and_none_per_job_per_job_lines_at_debug(
    dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    ids = Queue(dsn).enqueue_many([{"job_type": "t"} for _ in range(30)])
    with_password = make_conninfo(dsn, password="s3cret-pw")  # the test server trusts anyone
    with caplog.at_level(logging.INFO, logger="pgq_client.worker"):
        Worker(with_password, {"t": _noop, "u": _noop}, concurrency=3, worker_id="w-1").run(
            burst=True
        )
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    start = info[0]
    database = psycopg.conninfo.conninfo_to_dict(dsn)
    for part in ("w-1", "3 handler threads", "job types t, u", "queues all", database["dbname"]):
        assert str(part) in start, start
    assert not any("s3cret" in r.getMessage() for r in caplog.records)
    assert not any(str(i) in m for i in ids for m in info), info  # no line per job at INFO
    assert len(info) <= 5, info  # start, burst done, stopping, stopped
    caplog.clear()
    Queue(dsn).enqueue("t")
    with caplog.at_level(logging.DEBUG, logger="pgq_client.worker"):
        Worker(dsn, {"t": _noop}).run(burst=True)
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any("started" in m for m in debug) and any("succeeded" in m for m in debug), debug


def test_a_summary_of_the_work_done_is_logged_periodically(
    dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()

    def handler(job: Job) -> None:
        if job.payload.get("wait"):
            release.wait(30)

    Queue(dsn).enqueue_many([{"job_type": "t"} for _ in range(5)])
    worker = Worker(dsn, {"t": handler}, summary_interval=0.05)
    with caplog.at_level(logging.INFO, logger="pgq_client.worker"), running(worker):
        Queue(dsn).enqueue("t", {"wait": True})
        wait_for(
            "a summary of the 5 jobs",
            lambda: any("5 jobs done, 0 failed" in r.getMessage() for r in caplog.records),
        )
        wait_for(
            "a summary with the running job in flight",
            lambda: any("1 in flight" in r.getMessage() for r in caplog.records),
        )
        release.set()


def test_stop_says_what_it_waits_for_and_a_second_stop_aborts(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    job_id = Queue(dsn).enqueue("t")
    started = threading.Event()
    release = threading.Event()

    def handler(job: Job) -> None:
        started.set()
        release.wait(60)

    worker = Worker(dsn, {"t": handler}, shutdown_grace=60, worker_id="w-stop")
    thread = threading.Thread(target=worker.run)
    with caplog.at_level(logging.INFO, logger="pgq_client.worker"):
        thread.start()
        try:
            assert started.wait(10)
            worker.stop()
            wait_for(
                "the stopping message",
                lambda: any("waiting up to 60s" in r.getMessage() for r in caplog.records),
            )
            (stopping,) = [m for m in caplog.messages if "waiting up to" in m]
            assert "for 1 running jobs (stop() again aborts)" in stopping
            assert thread.is_alive() and not worker.aborted
            worker.stop()
            thread.join(30)
        finally:
            release.set()
            thread.join(30)
    assert not thread.is_alive()
    assert worker.aborted
    assert any("aborting" in r.getMessage() for r in caplog.records)
    # The aborted job keeps its claim: its lock expires, and another worker takes it over.
    row = job_row(conn, job_id)
    assert (row["status"], row["locked_by"]) == ("processing", "w-stop")


def test_cli_worker_interrupted_twice_says_so_and_exits_non_zero(
    dsn: str, conn: Conn, tmp_path: Path
) -> None:
    conn.execute(LEDGER)
    Queue(dsn).enqueue("slow", {"sleep": 60})
    proc = start_worker_process(dsn, tmp_path, "--shutdown-grace", "60")
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        lines.extend(proc.stderr)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        wait_for("the job to start", lambda: count(conn, "SELECT count(*) FROM ledger") == 1)
        proc.send_signal(signal.SIGINT)
        wait_for(
            "the worker to say what it waits for",
            lambda: any("waiting up to 60s for 1 running jobs" in line for line in lines),
        )
        assert any("Ctrl-C again aborts" in line for line in lines), lines
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    finally:
        proc.kill()
        reader.join(10)
    assert proc.returncode == 130, lines
    assert not any("Traceback" in line for line in lines), lines
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'processing'") == 1


def test_a_worker_without_any_dsn_says_how_to_give_one_and_starts_no_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no DSN, JOBQ_DSN or DATABASE_URL, a Worker refuses to run with the message naming
    each way to give a database, and never starts the embedded server (the CLI does that)."""
    for name in ("JOBQ_DSN", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    started: list[object] = []
    monkeypatch.setattr("pgq_client.embedded.start", lambda *a, **k: started.append(a) or "")
    with pytest.raises(JobqError) as caught:
        Worker(handlers={"t": lambda job: None}).run(burst=True)
    for fix in ("JOBQ_DSN", "DATABASE_URL", "pgq_client.embedded.start()"):
        assert fix in str(caught.value)
    assert started == []
