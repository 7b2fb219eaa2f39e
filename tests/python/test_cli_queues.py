"""``jobq queue pause|resume|list``: a paused queue is not claimed, its jobs wait pending with no
attempt spent, other queues run, and resuming wakes a listening worker at once; ``jobq stats``
marks a paused queue's rows."""

from __future__ import annotations

import json

import psycopg
from psycopg.conninfo import make_conninfo
from tests.helpers import MakeRole, channel, jobq

from pgq_client import Queue


def test_a_paused_queue_waits_while_others_run_and_resume_wakes_the_workers(dsn: str) -> None:
    with Queue(dsn) as q:
        mail = q.enqueue("send", queue="mail")
        other = q.enqueue("send", queue="other")
        paused = jobq("--dsn", dsn, "queue", "pause", "mail", "--reason", "smtp relay down")
        assert (paused.returncode, paused.stdout.strip()) == (0, "paused mail")
        assert jobq("--dsn", dsn, "queue", "pause", "mail").stdout.strip() == "mail was paused"
        assert [j.id for j in q.dequeue("w", batch_size=10)] == [other]
        assert q.dequeue("w", queues=["mail"]) == []
        listed = jobq("--dsn", dsn, "queue", "list", "--json")
        rows = {r["queue"]: r for r in json.loads(listed.stdout)}
        assert (rows["mail"]["paused"], rows["mail"]["reason"], rows["mail"]["pending"]) == (
            True, "smtp relay down", 1,
        )
        assert (rows["other"]["paused"], rows["other"]["processing"]) == (False, 1)
        assert "smtp relay down" in jobq("--dsn", dsn, "queue", "list").stdout

        with psycopg.connect(dsn, autocommit=True) as listener:
            listener.execute(f'LISTEN "{channel("public")}"')
            resumed = jobq("--dsn", dsn, "queue", "resume", "mail")
            assert (resumed.returncode, resumed.stdout.strip()) == (0, "resumed mail")
            woken = next(listener.notifies(timeout=5, stop_after=1))
        assert woken.payload == "mail"
        job = q.dequeue("w", queues=["mail"])[0]
        assert (job.id, job.attempts) == (mail, 1)  # no attempt was spent while it waited


def test_queue_commands_refuse_bad_input_and_say_when_nothing_changed(dsn: str) -> None:
    not_paused = jobq("--dsn", dsn, "queue", "resume", "nope", "--json")
    assert (not_paused.returncode, json.loads(not_paused.stdout)) == (
        0, {"queue": "nope", "resumed": False},
    )
    blank = jobq("--dsn", dsn, "queue", "pause", " ")
    assert blank.returncode != 0 and "queue must be a non-blank string" in blank.stderr
    assert "Traceback" not in blank.stderr
    assert jobq("--dsn", dsn, "queue", "list").stdout.strip() == "no queues"


def test_stats_marks_the_rows_of_a_paused_queue_for_a_monitor_too(
    dsn: str, make_role: MakeRole
) -> None:
    with Queue(dsn) as q:
        q.enqueue("send", queue="mail")
        q.enqueue("send", queue="other")
        q.pause("mail", "smtp relay down")
        q.pause("idle")  # no job at all
    monitor = make_conninfo(dsn, user=make_role("monitor", dsn=dsn))
    rows = json.loads(jobq("--dsn", monitor, "stats", "--json").stdout)
    assert [(r["queue"], r["paused"]) for r in rows] == [("mail", True), ("other", False)]
    text = jobq("--dsn", monitor, "stats")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].split()[-1] == "paused"
    assert lines[2].split()[0] == "mail" and lines[2].split()[-1] == "paused"
    assert lines[3].split()[0] == "other" and "paused" not in lines[3]
    assert lines[-1] == "paused, without jobs: idle"
