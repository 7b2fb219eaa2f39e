"""Schedules where one session is not enough: concurrent ticks, a
definition racing a tick, a failing enqueue, and the client and CLI. The parser, daylight
saving and catch-up policies are in tests/pgtap/schedules.sql."""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import psycopg.conninfo
import pytest
from tests import helpers
from tests.helpers import MakeRole

from pgq_client import InvalidArgument, Queue, Worker

Conn = psycopg.Connection[Any]
T0 = datetime(2026, 3, 7, 12, 0, tzinfo=timezone.utc)


def jobq(dsn: str, *args: str) -> helpers.Ran:
    return helpers.jobq("--dsn", dsn, *args)


def backdate(conn: Conn, name: str, next_run_at: datetime) -> None:
    """Move a schedule's next fire to a chosen instant (the clock is moved with jobq__tick)."""
    conn.execute("UPDATE jobq_schedules SET next_run_at = %s WHERE name = %s", (next_run_at, name))


def keys(conn: Conn) -> list[str]:
    return [r[0] for r in conn.execute("SELECT idempotency_key FROM jobq_all_jobs ORDER BY 1")]


def test_32_sessions_ticking_at_once_enqueue_each_fire_exactly_once(conn: Conn, dsn: str) -> None:
    for i in range(4):
        conn.execute("SELECT jobq_schedule(%s, '*/5 * * * *', 'report', catch_up => 'all')",
                     (f"s{i}",))
        backdate(conn, f"s{i}", T0)
    now = T0 + timedelta(hours=1)  # 13 fires each: 12:00, 12:05, ..., 13:00
    barrier = threading.Barrier(32)
    returned: list[int] = []
    errors: list[BaseException] = []

    def tick() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                barrier.wait()
                rows = c.execute("SELECT * FROM jobq__tick(%s)", (now,)).fetchall()
                returned.append(len(rows))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=tick) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    expected = sorted(
        f"jobq:schedule:s{i}:{(T0 + timedelta(minutes=5 * k)).strftime('%Y-%m-%dT%H:%M:%SZ')}"
        for i in range(4) for k in range(13)
    )
    assert keys(conn) == expected
    assert sum(returned) == 4 * 13  # each schedule was fired by exactly one session
    nexts = {r[0] for r in conn.execute("SELECT next_run_at FROM jobq_schedules")}
    assert nexts == {now + timedelta(minutes=5)}
    # and ticking again, at the same time, adds nothing
    assert conn.execute("SELECT count(*) FROM jobq__tick(%s)", (now,)).fetchone() == (0,)


def test_schedule_waiting_for_a_tick_applies_from_the_next_tick(conn: Conn, dsn: str) -> None:
    conn.execute("SELECT jobq_schedule('r', '@hourly', 'report', '{\"v\": 1}')")
    backdate(conn, "r", T0)
    with psycopg.connect(dsn) as ticker:
        # the tick holds the due row in its open transaction
        fired = ticker.execute("SELECT * FROM jobq__tick(%s)", (T0 + timedelta(minutes=1),))
        assert len(fired.fetchall()) == 1
        done = threading.Event()

        def redefine() -> None:
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("SELECT jobq_schedule('r', '@hourly', 'report', '{\"v\": 2}')")
            done.set()

        t = threading.Thread(target=redefine)
        t.start()
        # jobq_schedule waits for the row lock the tick holds (seen in pg_stat_activity)
        while conn.execute(
            "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE '%%jobq_schedule(%%')"
        ).fetchone() != (True,):
            assert not done.is_set(), "jobq_schedule must wait for the tick holding the schedule"
        ticker.commit()
        t.join()
    assert done.is_set()
    conn.execute("SELECT * FROM jobq__tick(%s)", (T0 + timedelta(hours=1, minutes=1),))
    payloads = [r[0] for r in conn.execute("SELECT payload"
                                           " FROM jobq_all_jobs ORDER BY available_at")]
    assert payloads == [{"v": 1}, {"v": 2}]


def test_tick_passes_over_a_schedule_being_redefined_and_the_next_uses_it(
    conn: Conn, dsn: str
) -> None:
    conn.execute("SELECT jobq_schedule('r', '@hourly', 'report', '{\"v\": 1}')")
    backdate(conn, "r", T0)
    with psycopg.connect(dsn) as editor:
        editor.execute("SELECT jobq_schedule('r', '@hourly', 'report', '{\"v\": 2}')")
        # the tick does not wait for the uncommitted definition: it skips the row
        skipped = conn.execute("SELECT * FROM jobq__tick(%s)", (T0 + timedelta(minutes=1),))
        assert skipped.fetchall() == []
        editor.commit()
    conn.execute("SELECT * FROM jobq__tick(%s)", (T0 + timedelta(minutes=1),))
    assert [r[0] for r in conn.execute("SELECT payload FROM jobq_all_jobs")] == [{"v": 2}]


def test_an_error_while_enqueuing_rolls_back_the_advance_and_others_still_fire(
    conn: Conn,
) -> None:
    conn.execute("SELECT jobq_schedule('big', '@hourly', 'report', %s::jsonb, catch_up => 'all')",
                 (json.dumps({"blob": base64.b64encode(os.urandom(3000)).decode()}),))
    conn.execute("SELECT jobq_schedule('small', '@hourly', 'report')")
    backdate(conn, "big", T0)
    backdate(conn, "small", T0)
    conn.execute("SELECT jobq_configure(max_payload_bytes => 1000)")
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    now = T0 + timedelta(hours=2, minutes=1)
    fired = conn.execute("SELECT schedule FROM jobq__tick(%s)", (now,)).fetchall()
    assert fired == [("small",)]
    assert any("'big' not fired" in n and "54000" in n for n in notices), notices
    # big: no job (not even the fires before the failing one), next_run_at where it was
    assert keys(conn) == ["jobq:schedule:small:2026-03-07T14:00:00Z"]
    row = conn.execute("SELECT next_run_at FROM jobq_schedules WHERE name = 'big'").fetchone()
    assert row == (T0,)
    # once the limit allows it again, the next tick fires it (all: each missed fire)
    conn.execute("SELECT jobq_configure(max_payload_bytes => 1048576)")
    again = conn.execute("SELECT schedule FROM jobq__tick(%s)", (now,)).fetchall()
    assert again == [("big",)] * 3


def test_queue_schedule_list_and_unschedule(dsn: str) -> None:
    with Queue(dsn) as q:
        nxt = q.schedule("nightly", "30 2 * * *", "backup", {"full": True},
                         timezone="America/New_York", catch_up="skip", priority=3)
        [s] = q.schedules()
        assert s.name == "nightly" and s.next_run_at == nxt and s.payload == {"full": True}
        assert (s.next_run_local.hour, s.next_run_local.minute) == (2, 30)
        assert s.timezone == "America/New_York" and s.catch_up == "skip" and s.priority == 3
        with pytest.raises(InvalidArgument, match="timezone 'Nowhere/Town'"):
            q.schedule("nightly", "30 2 * * *", "backup", timezone="Nowhere/Town")
        with pytest.raises(InvalidArgument, match="cron hour field '25'"):
            q.schedule("nightly", "0 25 * * *", "backup")
        assert q.schedules()[0].cron == "30 2 * * *"  # the bad calls changed nothing
        assert q.tick() == []
        assert q.unschedule("nightly") is True
        assert q.unschedule("nightly") is False
        assert q.schedules() == []


def test_cli_schedule_set_list_delete_and_tick(dsn: str, conn: Conn) -> None:
    r = jobq(dsn, "schedule", "set", "every", "@yearly", "ping", '{"a": 1}',
             "--timezone", "Europe/London", "--catch-up", "all", "--priority", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("every: next fire ")
    listed = jobq(dsn, "schedule", "list")
    assert "every" in listed.stdout and "Europe/London" in listed.stdout
    assert "next (local)" in listed.stdout and "next (UTC)" in listed.stdout
    [row] = json.loads(jobq(dsn, "schedule", "list", "--json").stdout)
    assert row["name"] == "every" and row["catch_up"] == "all" and row["payload"] == {"a": 1}
    assert row["next_run_utc"].endswith("+00:00")
    bad = jobq(dsn, "schedule", "set", "every", "* * *", "ping")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "cron must have 5 fields" in bad.stderr
    # this year's fire (1 January, 00:00 in London) is due and was never ticked
    conn.execute(
        "UPDATE jobq_schedules SET next_run_at = date_trunc('year', now() AT TIME ZONE"
        " 'Europe/London') AT TIME ZONE 'Europe/London'"
    )
    ticked = jobq(dsn, "tick")
    assert ticked.returncode == 0, ticked.stderr
    assert "1 fire enqueued" in ticked.stdout
    assert conn.execute("SELECT job_type, payload, priority FROM jobq_all_jobs").fetchall() == [
        ("ping", {"a": 1}, 2)
    ]
    assert jobq(dsn, "schedule", "delete", "every").returncode == 0
    gone = jobq(dsn, "schedule", "delete", "every")
    assert gone.returncode != 0 and "no schedule named 'every'" in gone.stderr


def test_worker_ticks_by_itself_and_runs_the_fired_job(dsn: str, conn: Conn) -> None:
    conn.execute("SELECT jobq_schedule('yearly', '@yearly', 'report', '{\"n\": 7}')")
    conn.execute(
        "UPDATE jobq_schedules SET next_run_at = date_trunc('year', now() AT TIME ZONE 'UTC')"
        " AT TIME ZONE 'UTC'"
    )
    ran = threading.Event()
    seen: list[Any] = []

    def report(job: Any) -> None:
        seen.append(job.payload)
        ran.set()

    w = Worker(dsn, {"report": report}, concurrency=1, tick_interval=0.2)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        assert ran.wait(60), "the worker's tick did not fire the due schedule"
    finally:
        w.stop()
        t.join(30)
    assert seen == [{"n": 7}]
    row = conn.execute("SELECT next_run_at > now() FROM jobq_schedules").fetchone()
    assert row == (True,)


def test_a_fire_that_is_due_when_ticked_is_claimable_at_once(conn: Conn) -> None:
    """Every tick on the server's clock enqueues fires at or before now(): none of them waits
    among the scheduled jobs (jobq_jobs.scheduled), the next claim takes it."""
    conn.execute("SELECT jobq_schedule('minutely', '* * * * *', 'report')")
    conn.execute("UPDATE jobq_schedules SET next_run_at = date_trunc('minute', now())")
    [(job_id,)] = conn.execute("SELECT job_id FROM jobq_tick()").fetchall()
    row = conn.execute(
        "SELECT status, scheduled, available_at <= now()"
        " FROM jobq_all_jobs WHERE id = %s", (job_id,)
    ).fetchone()
    assert row == ("pending", False, True)
    claimed = conn.execute("SELECT id FROM jobq_dequeue('w', '{report}')").fetchall()
    assert claimed == [(job_id,)]


def test_a_fire_ahead_of_the_server_clock_waits_as_scheduled_and_is_claimed_once_due(
    conn: Conn,
) -> None:
    """A tick at a later time (jobq__tick(at), or a clock ahead of the server's) enqueues the
    fire with run_at in the future: it waits outside the claim index like any job enqueued for
    later, and the first claim after its time promotes it and takes it in priority order."""
    conn.execute("SELECT jobq_schedule('soon', '* * * * *', 'report', priority => 5)")
    [(fire,)] = conn.execute("SELECT date_trunc('minute', now()) + interval '2 minutes'")
    backdate(conn, "soon", fire)
    [(job_id, fire_at)] = conn.execute(
        "SELECT job_id, fire_at FROM jobq__tick(%s)", (fire,)
    ).fetchall()
    assert fire_at == fire

    def state() -> tuple[Any, ...] | None:
        return conn.execute(
            "SELECT status, scheduled, available_at FROM jobq_all_jobs WHERE id = %s", (job_id,)
        ).fetchone()

    assert state() == ("pending", True, fire)
    [(now_id,)] = conn.execute("SELECT jobq_enqueue('report')")
    early = conn.execute("SELECT id FROM jobq_dequeue('w', '{report}', batch_size => 10)")
    assert early.fetchall() == [(now_id,)], "a fire is not claimed before its time"
    assert state() == ("pending", True, fire)

    # The server's clock reaches the fire: its available_at is brought to now() (a claim
    # compares the two), as a test cannot move now() itself.
    conn.execute(
        "UPDATE jobq_jobs SET available_at = now() - interval '1 millisecond' WHERE id = %s",
        (job_id,),
    )
    conn.execute("SELECT jobq_enqueue('report')")  # priority 0, available now: claimed after it
    claimed = conn.execute("SELECT id, scheduled FROM jobq_dequeue('w', '{report}')").fetchall()
    assert claimed == [(job_id, False)]


def test_worker_without_tick_privilege_logs_once_and_keeps_running_jobs(
    dsn: str, conn: Conn, caplog: pytest.LogCaptureFixture, make_role: MakeRole
) -> None:
    role = make_role(prefix="jobq_sched_w")
    conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
    conn.execute(
        f"GRANT EXECUTE ON FUNCTION jobq_dequeue, jobq_complete, jobq_complete_many, jobq_fail,"
        f" jobq_heartbeat, jobq_release TO {role}"
    )
    role_dsn = psycopg.conninfo.make_conninfo(dsn, user=role)
    conn.execute("SELECT jobq_enqueue('t')")
    done = threading.Event()
    w = Worker(role_dsn, {"t": lambda job: done.set()}, concurrency=1, tick_interval=0.05)
    t = threading.Thread(target=w.run)
    with caplog.at_level(logging.WARNING, logger="pgq_client.worker"):
        t.start()
        try:
            assert done.wait(60)
            # jobs keep running while ten more tick intervals pass
            for _ in range(5):
                conn.execute("SELECT jobq_enqueue('t')")
                time.sleep(0.1)
            while conn.execute(
                "SELECT count(*) FROM jobq_all_jobs WHERE status <> 'succeeded'"
            ).fetchone() != (0,):
                time.sleep(0.05)
        finally:
            w.stop()
            t.join(30)
    warnings = [r for r in caplog.records if "cannot fire schedules" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
    assert "42501" in warnings[0].getMessage() or "permission" in warnings[0].getMessage()
