"""What an operator meets at the command line: bulk loads that say what they added and where
to resume, refusals that name what to do, one line for bad input, counts in plain words."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from tests.helpers import wait_for
from tests.python.test_cli import assert_user_error, jobq

from pgq_client import Queue
from pgq_client.models import UnservedJobType
from pgq_client.worker.joblog import report_unserved

Conn = psycopg.Connection[Any]
MakeRole = Any


def _lines(*jobs: dict[str, Any]) -> str:
    return "".join(json.dumps(job) + "\n" for job in jobs)


# -- enqueue --from ----------------------------------------------------------------------------


def test_enqueue_from_says_what_it_added_and_what_was_already_there(
    dsn: str, conn: Conn, make_role: MakeRole
) -> None:
    """A key that has a job adds nothing: the summary says so, under a producer's grants, and
    the job stays in its own queue whatever --queue says."""
    producer = make_conninfo(dsn, user=make_role("producer", dsn=dsn))
    with Queue(dsn) as q:
        first = q.enqueue("mail", idempotency_key="k0")
    keyed = _lines(*({"job_type": "mail", "idempotency_key": f"k{i}"} for i in range(5)))
    repeated = keyed + _lines({"job_type": "mail", "idempotency_key": "k1"})
    result = jobq("enqueue", "--from", "-", "--queue", "bulk", "--batch-size", "2",
                  dsn=producer, input=repeated)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert ": 4 added, 2 already there (a job of the same job type and idempotency key" in (
        result.stdout
    )
    assert "left as it is, in its own queue" in result.stdout
    rows = conn.execute(
        "SELECT idempotency_key, queue FROM jobq_jobs ORDER BY idempotency_key"
    ).fetchall()
    assert rows == [("k0", "default"), *((f"k{i}", "bulk") for i in range(1, 5))]
    assert conn.execute("SELECT id FROM jobq_jobs WHERE idempotency_key = 'k0'").fetchone() == (
        first,
    )
    again = jobq("enqueue", "--from", "-", "--json", dsn=producer, input=keyed)
    summary = json.loads(again.stdout)
    assert (summary["jobs"], summary["added"], summary["existing"]) == (5, 0, 5)


def test_enqueue_from_skips_a_refused_line_alone_and_names_it(dsn: str, conn: Conn) -> None:
    """A line the database refuses (a blank job type) or the client refuses (a NUL in the
    payload) costs only itself: the rest of its batch goes in."""
    text = _lines(
        {"job_type": "a", "payload": {"n": 1}},
        {"job_type": " "},
        {"job_type": "a", "payload": {"n": 3}},
        {"job_type": "a", "payload": {"bad": "\u0000"}},
        {"job_type": "a", "payload": {"n": 5}},
    )
    result = jobq("enqueue", "--from", "-", "--batch-size", "5", dsn=dsn, input=text)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    reported = [line for line in result.stderr.splitlines() if line.startswith("line ")]
    assert reported == [
        "line 2: jobq_enqueue_arrays: job_type must be a non-blank string; skipped",
        "line 4: payload contains a NUL (0x00) character, which jsonb cannot store; skipped",
    ]
    assert result.stdout.startswith("enqueued 3 jobs in 1 batch, ")
    assert result.stdout.rstrip().endswith(": 3 added; 2 lines not enqueued")
    assert [r[0] for r in conn.execute("SELECT payload FROM jobq_jobs ORDER BY id")] == [
        {"n": 1}, {"n": 3}, {"n": 5},
    ]  # fmt: skip
    as_json = jobq("enqueue", "--from", "-", "--batch-size", "5", "--json", dsn=dsn, input=text)
    refused = json.loads(as_json.stdout)["refused"]
    assert [(r["lines"], r["line"], r["jobs"]) for r in refused] == [([2, 2], 2, 1), ([4, 4], 4, 1)]


def test_enqueue_from_interrupted_says_up_to_which_line_it_committed(dsn: str, conn: Conn) -> None:
    """Ctrl-C in a load from a pipe that is still open: the message names the last line
    committed, and exactly the lines up to it are in the database."""
    environ = {k: v for k, v in os.environ.items() if k not in ("JOBQ_DSN", "DATABASE_URL")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgq_client", "enqueue", "t", "--from", "-", "--batch-size", "10"],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**environ, "JOBQ_DSN": dsn},
        # A run started in the background (nohup, `&`) ignores SIGINT, and its children inherit
        # that: then no Ctrl-C can stop the load. The test wants a terminal's Ctrl-C.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(_lines(*({"payload": {"n": i}} for i in range(35))))
    proc.stdin.flush()
    count = lambda: conn.execute("SELECT count(*) FROM jobq_jobs").fetchone()[0]  # noqa: E731
    wait_for("three batches", lambda: count() == 30)
    time.sleep(0.3)  # the 5 lines left wait for a batch of 10: the load waits on stdin
    proc.send_signal(signal.SIGINT)
    # Its stdin stays open until it exits, as a terminal's would: communicate() closes it, and
    # the end of input, if it came before a loaded machine delivered the signal, would end the
    # load normally (exit 0, 35 jobs).
    proc.wait(timeout=60)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert (
        "jobq: stopped after line 30: every line up to it is committed (or reported as not "
        "enqueued), none after it; resume from line 31" in stderr
    ), stderr
    assert "Traceback" not in stderr
    assert count() == 30


# -- migrate as a role that cannot -------------------------------------------------------------


def test_migrate_as_a_non_owner_names_the_owner_not_jobq_grant(
    dsn: str, make_role: MakeRole
) -> None:
    other = make_role("admin", dsn=dsn)
    result = jobq("migrate", dsn=make_conninfo(dsn, user=other))
    assert_user_error(result, 1, "permission denied")
    assert "jobq in schema 'public' belongs to the role" in result.stderr
    assert "run `jobq migrate` as that role" in result.stderr
    assert "`jobq migrate --schema NAME`" in result.stderr
    assert "jobq grant" not in result.stderr


def test_migrate_of_a_new_schema_without_create_says_who_may(dsn: str, role: str) -> None:
    result = jobq("migrate", "--schema", "mine", dsn=make_conninfo(dsn, user=role))
    assert_user_error(result, 1, "permission denied for database")
    assert f"`CREATE SCHEMA mine AUTHORIZATION {role}`, then `jobq migrate --schema mine`" in (
        result.stderr
    )
    assert "jobq grant" not in result.stderr


# -- limits, schedules, bad input --------------------------------------------------------------


def test_limit_delete_of_an_unknown_group_exits_1_and_per_takes_a_duration(dsn: str) -> None:
    result = jobq("limit", "delete", "per-customr", dsn=dsn)
    assert_user_error(result, 1, "no limit for group 'per-customr'; nothing changed")
    set_ = jobq("limit", "set", "api", "--max-starts", "100", "--per", "1h", dsn=dsn)
    assert set_.returncode == 0, set_.stderr
    assert set_.stdout.strip() == "api: at most 100 starts per 3600 s per key"
    with Queue(dsn) as q:
        assert [(lim.limit_group, lim.per.total_seconds()) for lim in q.limits() if lim.per] == [
            ("api", 3600.0)
        ]
    assert jobq("limit", "delete", "api", dsn=dsn).stdout.strip() == "removed the limit of api"
    assert_user_error(jobq("limit", "set", "api", "--max-starts", "1", "--per", "0", dsn=dsn),
                      2, "the window must be longer than 0 s")  # fmt: skip


def test_bad_input_is_one_line_that_says_what_to_do(dsn: str, conn: Conn, tmp_path: Path) -> None:
    nul = jobq("enqueue", "t", '{"note": "a\\u0000b"}', dsn=dsn)
    assert_user_error(nul, 2, "PAYLOAD_JSON: it contains a NUL (0x00) character")
    scheduled = jobq("schedule", "set", "nul", "@daily", "t", '{"k": "\\u0000"}', dsn=dsn)
    assert_user_error(scheduled, 2, "contains a NUL (0x00) character")
    url = "postgresql+psycopg://app:s3cret@db.example/app"
    sqlalchemy = jobq("stats", "--dsn", url)
    assert_user_error(sqlalchemy, 1, "(drop '+psycopg': libpq takes postgresql://...)")
    assert "s3cret" not in sqlalchemy.stderr
    # `jobq schedule set x 30 2 * * * t` with files beside: what the shell passes on.
    (tmp_path / "notes.txt").write_text("")
    split = jobq("schedule", "set", "x", "30", "2", "notes.txt", "notes.txt", "notes.txt", "t",
                 dsn=dsn, cwd=tmp_path)  # fmt: skip
    assert_user_error(split, 2, "'30' is not a cron expression: quote all five fields")
    assert "notes.txt" not in split.stderr
    assert conn.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM jobq_schedules").fetchone() == (0,)


# -- words and exit codes ----------------------------------------------------------------------


def test_counts_of_one_are_singular(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        job = q.enqueue("t")
    conn.execute(
        "UPDATE jobq_jobs SET status = 'dead_letter', finished_at = now() - '1 day'::interval"
    )
    assert jobq("dead-letter", "requeue", "--all", dsn=dsn).stdout.strip() == "requeued 1 job"
    conn.execute(
        "UPDATE jobq_jobs SET status = 'succeeded', finished_at = now() - '2 days'::interval"
    )
    assert jobq("prune", "--older-than", "1d", dsn=dsn).stdout.strip() == "pruned 1 job"
    assert jobq("jobs", "status", str(job), dsn=dsn).returncode == 1  # pruned: unknown now


def test_embedded_status_exits_3_when_it_does_not_run(tmp_path: Path) -> None:
    result = jobq("embedded", "status", "--home", str(tmp_path / "none"))
    assert result.returncode == 3, result.stderr
    assert result.stdout.rstrip().endswith(": not created")


def test_the_unserved_warning_says_no_worker_asked_not_that_jobs_waited(
    caplog: pytest.LogCaptureFixture,
) -> None:
    since = datetime(2030, 1, 1, tzinfo=timezone.utc)
    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"):
        report_unserved("w1", [UnservedJobType("mail", "send_emial", 1, since)])
    [message] = [r.getMessage() for r in caplog.records]
    assert message.startswith(
        "w1: jobs waiting for a queue and job type that no worker has asked for in the last "
        "15 minutes"
    )
    assert "claimed within" not in message
