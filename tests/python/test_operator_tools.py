"""What an operator does from the command line: find jobs (``jobq jobs find``), act on many with
a record (``jobq jobs cancel|requeue|delete|run-now``, ``jobq audit``), read the errors per
job type (``jobq errors``) and the throughput of the last hour (``jobq throughput``), each
through one SQL function under the connected role's grants."""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime, timedelta, timezone

import psycopg
from tests.helpers import MakeRole, jobq
from webtools import dead_letter, status_of

from pgq_client import Queue


def _ids(ran_stdout: str) -> list[str]:
    return [row["id"] for row in json.loads(ran_stdout)["jobs"]]


def test_find_jobs_by_key_type_status_time_and_payload_live_and_finished(dsn: str) -> None:
    dead = dead_letter(dsn, job_type="send_email", queue="mail")
    with Queue(dsn) as q:
        keyed = q.enqueue("send_email", {"customer": 42}, idempotency_key="order-7", queue="mail")
        report = q.enqueue("report", {"customer": 42}, idempotency_key="order-7")
        other = q.enqueue("send_email", {"customer": 9}, queue="mail")

    by_key = jobq("--dsn", dsn, "jobs", "find", "--key", "order-7", "--json")
    assert by_key.returncode == 0, by_key.stderr
    assert set(_ids(by_key.stdout)) == {str(keyed), str(report)}  # under every job type
    by_key_and_type = jobq("--dsn", dsn, "jobs", "find", "--key", "order-7", "--type", "report",
                           "--json")
    assert _ids(by_key_and_type.stdout) == [str(report)]
    by_id = jobq("--dsn", dsn, "jobs", "find", "--id", str(dead), "--json")
    assert [(j["id"], j["status"]) for j in json.loads(by_id.stdout)["jobs"]] == [
        (str(dead), "dead_letter")]
    finished = jobq("--dsn", dsn, "jobs", "find", "--queue", "mail", "--status", "dead_letter",
                    "--status", "failed", "--finished-after", "1h", "--json")
    assert _ids(finished.stdout) == [str(dead)]
    pending = jobq("--dsn", dsn, "jobs", "find", "--type", "send_email", "--status", "pending",
                   "--created-after", "5m", "--json")
    assert set(_ids(pending.stdout)) == {str(keyed), str(other)}
    assert _ids(jobq("--dsn", dsn, "jobs", "find", "--created-before", "1h", "--json").stdout) == []
    payload = jobq("--dsn", dsn, "jobs", "find", "--payload", '{"customer": 42}', "--json")
    assert set(_ids(payload.stdout)) == {str(keyed), str(report)}

    # paging: --after the last id shown, until none is left; every job once
    seen: list[str] = []
    after: list[str] = []
    while True:
        ran = jobq("--dsn", dsn, "jobs", "find", "--limit", "1", *after, "--json")
        page = json.loads(ran.stdout)
        seen += [j["id"] for j in page["jobs"]]
        if not page["next_after"]:
            break
        after = ["--after", page["next_after"]]
    assert sorted(seen) == sorted(map(str, [keyed, report, other, dead]))
    # a search stopped by --scan-limit says where to go on
    stopped = jobq("--dsn", dsn, "jobs", "find", "--queue", "none", "--scan-limit", "2")
    assert stopped.returncode == 0
    assert re.search(r"searched 2 jobs back to .*: search older ones with --after [0-9a-f-]{36}",
                     stopped.stdout)


def test_find_refuses_bad_input_naming_it(dsn: str) -> None:
    for args, said in [
        (["--created-after", "yesterday"], "Invalid value for '--created-after'"),
        (["--payload", "{nope"], "Invalid value for '--payload': not valid JSON"),
        (["--id", "nope"], "is not a job id"),
        (["--status", "done"], "Invalid value for '--status'"),
        (["--limit", "1001"], "max_rows must be between 1 and 1000, got 1002"),
        (["--created-after", "1h", "--created-before", "2h"],
         "created_after (.*) must be before created_before"),
    ]:
        ran = jobq("--dsn", dsn, "jobs", "find", *args)
        assert ran.returncode != 0, args
        assert re.search(said, ran.stderr), (args, ran.stderr)
        assert "Traceback" not in ran.stderr


def test_a_key_or_id_lookup_reads_indexes_only(dsn: str) -> None:
    """With 20,000 live and 20,000 finished jobs, finding by id or by idempotency key (with or
    without its job type) reads the primary key, the id and key indexes: no table scan."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("INSERT INTO jobq_jobs (job_type, queue, idempotency_key) "
                  "SELECT 't' || (g % 7), 'q', 'key' || g FROM generate_series(1, 20000) AS g")
        c.execute("ALTER TABLE jobq_jobs DISABLE TRIGGER jobq_jobs_retire")
        c.execute("INSERT INTO jobq_jobs (job_type, queue, idempotency_key, status, attempts, "
                  "finished_at) SELECT 't' || (g % 7), 'q', 'key' || g, 'succeeded', 1, now() "
                  "FROM generate_series(20001, 40000) AS g")
        c.execute("ALTER TABLE jobq_jobs ENABLE TRIGGER jobq_jobs_retire")
        c.execute("SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs "
                  "WHERE finished_at IS NOT NULL))")
        c.execute("VACUUM ANALYZE jobq_jobs")
        c.execute("ANALYZE jobq_jobs_history")
        full = c.execute("SELECT DISTINCT tableoid::regclass::text FROM jobq_jobs_history"
                         ).fetchall()
        assert len(full) == 1
        wanted = c.execute("SELECT id FROM jobq_all_jobs WHERE idempotency_key = 'key20078'"
                           ).fetchone()
        assert wanted is not None
        plans: list[str] = []
        c.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
        for statement in ("LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                          "SET auto_explain.log_nested_statements = on",
                          "SET auto_explain.log_level = 'notice'",
                          "SET client_min_messages = 'notice'"):
            c.execute(statement)
        for _ in range(7):  # past PL/pgSQL's switch to generic plans
            for call, args in [
                ("jobq_find_jobs(job_id => %s)", (wanted[0],)),
                ("jobq_find_jobs(idempotency_key => %s)", ("key20078",)),
                ("jobq_find_jobs(idempotency_key => %s)", ("key77",)),
                ("jobq_find_jobs(idempotency_key => %s, job_type => %s)", ("key77", "t0")),
            ]:
                rows = c.execute(f"SELECT id FROM {call}", args).fetchall()
                assert len(rows) == 1, (call, args)
    assert any("jobq_jobs_pkey" in p for p in plans)
    assert any("jobq_jobs_idempotency_key_key" in p for p in plans)
    assert any(re.search(r"jobq__history_succeeded_\d+_job_type_idempotency_key_idx", p)
               for p in plans)
    assert any(re.search(r"jobq__history_succeeded_\d+_id_idx", p) for p in plans)
    # (the empty partitions may be read whole: they hold nothing)
    scans = [p for p in plans if re.search(rf"Seq Scan on (jobq_jobs|{full[0][0]})\b", p)]
    assert scans == [], scans[0]


def test_actions_on_many_jobs_are_done_and_recorded(dsn: str, make_role: MakeRole) -> None:
    with Queue(dsn) as q:
        later = q.enqueue("t", run_at=datetime.now(timezone.utc) + timedelta(days=1))
        pending = q.enqueue("t")
    dead = dead_letter(dsn)
    unknown = uuid.uuid4()

    run = jobq("--dsn", dsn, "jobs", "run-now", str(later), str(pending), "--json")
    assert run.returncode == 0, run.stderr  # one left alone: said, not an error
    assert json.loads(run.stdout)["jobs"] == [
        {"id": str(later), "outcome": "available now"},
        {"id": str(pending), "outcome": "left alone: available already"},
    ]
    requeued = jobq("--dsn", dsn, "jobs", "requeue", str(dead), "--reason", "fixed the relay")
    assert (requeued.returncode, requeued.stdout.strip()) == (0, f"{dead}  requeued")
    cancelled = jobq("--dsn", dsn, "jobs", "cancel", str(pending), str(unknown),
                     "--reason", "customer withdrew")
    assert cancelled.returncode == 1  # an unknown id
    assert f"{pending}  cancelled" in cancelled.stdout and f"{unknown}  unknown" in cancelled.stdout
    assert f"no job {unknown} (nothing changed for it)" in cancelled.stderr
    deleted = jobq("--dsn", dsn, "jobs", "delete", str(pending))
    assert (deleted.returncode, deleted.stdout.strip()) == (0, f"{pending}  deleted")
    with psycopg.connect(dsn, autocommit=True) as c:
        assert c.execute("SELECT count(*) FROM jobq_all_jobs WHERE id = %s", (pending,)
                         ).fetchone() == (0,)
    assert status_of(dsn, dead) == "pending"

    # psql users are recorded too, as the role they act as
    admin = make_role("admin", dsn=dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'SET ROLE "{admin}"')
        c.execute("SELECT * FROM jobq_act_on_jobs('cancel', ARRAY[%s::uuid], 'by hand')", (later,))

    audit = jobq("--dsn", dsn, "audit", "--json")
    assert audit.returncode == 0, audit.stderr
    entries = json.loads(audit.stdout)
    assert [(e["action"], e["reason"]) for e in entries] == [
        ("cancel", "by hand"), ("delete", None), ("cancel", "customer withdrew"),
        ("requeue", "fixed the relay"), ("run_now", None),
    ]
    assert entries[0]["acting_role"] == admin and entries[0]["login_role"] != admin
    assert entries[2]["job_ids"] == [str(pending), str(unknown)]
    assert entries[2]["changed"] == [str(pending)]
    assert "customer withdrew" in jobq("--dsn", dsn, "audit").stdout
    page = json.loads(jobq("--dsn", dsn, "audit", "--before", str(entries[1]["id"]), "--limit",
                           "1", "--json").stdout)
    assert [e["action"] for e in page] == ["cancel"]


def test_a_monitor_may_neither_act_nor_search_payloads_nor_read_the_audit(
    dsn: str, make_role: MakeRole
) -> None:
    with Queue(dsn) as q:
        job = q.enqueue("t", {"secret": 1})
    monitor = psycopg.conninfo.make_conninfo(dsn, user=make_role("monitor", dsn=dsn))
    found = jobq("--dsn", monitor, "jobs", "find", "--json")
    assert found.returncode == 0 and _ids(found.stdout) == [str(job)]  # metadata it may see
    for args in (["jobs", "find", "--payload", '{"secret": 1}'], ["jobs", "cancel", str(job)],
                 ["audit"], ["errors"]):
        ran = jobq("--dsn", monitor, *args)
        assert ran.returncode != 0, args
        assert re.search("permission denied|may read payloads", ran.stderr), (args, ran.stderr)
    assert status_of(dsn, job) == "pending"


def test_errors_per_job_type_show_the_exception_line_most_frequent_first(dsn: str) -> None:
    traceback = ("Traceback (most recent call last):\n  File \"handlers.py\", line 9\n"
                 "TimeoutError: smtp relay")
    for _ in range(2):
        dead_letter(dsn, job_type="send_email", errors=(traceback,))
    dead_letter(dsn, job_type="send_email", errors=("ValueError: bad address",))
    dead_letter(dsn, job_type="report", errors=("OSError: disk full",))
    ran = jobq("--dsn", dsn, "errors", "--json")
    assert ran.returncode == 0, ran.stderr
    assert [(r["job_type"], r["error"], r["failures"]) for r in json.loads(ran.stdout)] == [
        ("report", "OSError: disk full", 1),
        ("send_email", "TimeoutError: smtp relay", 2),
        ("send_email", "ValueError: bad address", 1),
    ]
    text = jobq("--dsn", dsn, "errors", "--per-type", "1").stdout
    assert "TimeoutError: smtp relay" in text and "ValueError" not in text
    assert "Traceback" not in text
    refused = jobq("--dsn", dsn, "errors", "--since", "40d")
    assert refused.returncode != 0
    assert "since must be more than 0 and at most 31 days" in refused.stderr


def test_throughput_counts_what_finished_and_failed_per_minute_from_the_database(
    dsn: str, make_role: MakeRole
) -> None:
    dead_letter(dsn, errors=("ValueError: a", "ValueError: b"))  # 2 failed attempts, 1 dead
    with Queue(dsn) as q:
        done = [q.enqueue("t") for _ in range(3)]
        q.cancel([q.enqueue("t")])
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT count(*) FROM jobq_dequeue('w', job_types => '{t}', batch_size => 10)")
        for job in done:
            c.execute("SELECT jobq_complete(%s, 'w')", (job,))
        c.execute("UPDATE jobq_jobs_history SET finished_at = now() - interval '2 hours'"
                  " WHERE id = %s", (done[0],))  # outside the hour
    monitor = psycopg.conninfo.make_conninfo(dsn, user=make_role("monitor", dsn=dsn))

    ran = jobq("--dsn", monitor, "throughput", "--json")
    assert ran.returncode == 0, ran.stderr
    rows = json.loads(ran.stdout)
    assert len(rows) == 61  # the minute holding an hour ago to the one holding now
    names = ("succeeded", "failed", "dead_letter", "cancelled", "failed_attempts")
    assert {n: sum(r[n] for r in rows) for n in names} == {
        "succeeded": 2, "failed": 0, "dead_letter": 1, "cancelled": 1, "failed_attempts": 2}
    hours = jobq("--dsn", monitor, "throughput", "--since", "3h", "--bucket", "1h")
    assert hours.returncode == 0, hours.stderr
    assert re.search(r"^total\s+3\s+0\s+1\s+1\s+2$", hours.stdout, re.M), hours.stdout
    with Queue(monitor) as q:
        assert sum(r["succeeded"] for r in q.throughput(3 * 3600, 3600)) == 3
    refused = jobq("--dsn", monitor, "throughput", "--bucket", "2d")
    assert refused.returncode != 0
    assert "bucket must be between 1 second and 1 day" in refused.stderr


def _audit_rows(dsn: str) -> list[tuple[str, list[uuid.UUID], list[uuid.UUID], str | None]]:
    with psycopg.connect(dsn, autocommit=True) as c:
        return c.execute("SELECT action, job_ids, changed, reason FROM jobq_audit ORDER BY id"
                         ).fetchall()  # type: ignore[return-value]


def test_single_job_cancel_and_requeue_from_the_cli_are_audited(
    dsn: str, make_role: MakeRole
) -> None:
    """`jobq cancel ID` and `jobq jobs retry ID` (and `dead-letter requeue ID`) by an admin
    write one audit row each, with the same output as before; a producer's `jobq cancel`
    (it may not call jobq_act_on_jobs) still cancels, unrecorded."""
    dead = dead_letter(dsn)
    with Queue(dsn) as q:
        pending, mine = q.enqueue("t"), q.enqueue("t")
    cancelled = jobq("--dsn", dsn, "cancel", str(pending), "--reason", "withdrawn")
    assert (cancelled.returncode, cancelled.stdout.strip()) == (0, f"cancelled {pending}")
    again = jobq("--dsn", dsn, "cancel", str(pending), "--json")
    assert json.loads(again.stdout)["jobs"] == [{"id": str(pending), "status": "cancelled"}]
    retried = jobq("--dsn", dsn, "jobs", "retry", str(dead))
    assert (retried.returncode, retried.stdout.strip()) == (0, f"requeued {dead}")
    assert status_of(dsn, dead) == "pending"
    assert _audit_rows(dsn) == [
        ("cancel", [pending], [pending], "withdrawn"),
        ("cancel", [pending], [], None),
        ("requeue", [dead], [dead], None),
    ]
    refused = jobq("--dsn", dsn, "dead-letter", "requeue", str(mine))
    assert refused.returncode == 1 and "not requeued" in refused.stderr
    assert _audit_rows(dsn)[-1] == ("requeue", [mine], [], None)

    producer = psycopg.conninfo.make_conninfo(dsn, user=make_role("producer", dsn=dsn))
    own = jobq("--dsn", producer, "cancel", str(mine))
    assert (own.returncode, own.stdout.strip()) == (0, f"cancelled {mine}")
    assert status_of(dsn, mine) == "cancelled" and len(_audit_rows(dsn)) == 4


def test_schedule_list_shows_the_job_of_the_latest_fire(dsn: str) -> None:
    with Queue(dsn) as q:
        q.schedule("minutely", "* * * * *", "cleanup")
        q.schedule("nightly", "0 3 * * *", "report")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("UPDATE jobq_schedules SET next_run_at = date_trunc('minute', now())"
                  " - interval '1 minute' WHERE name = 'minutely'")
    with Queue(dsn) as q:
        (fire,) = q.tick()
    listed = jobq("--dsn", dsn, "schedule", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["minutely"]["last_job_id"] == str(fire.job_id)
    assert datetime.fromisoformat(rows["minutely"]["last_fired_at"]) == fire.fire_at
    assert rows["nightly"]["last_job_id"] is None and rows["nightly"]["last_fired_at"] is None
    text = jobq("--dsn", dsn, "schedule", "list").stdout
    assert "last job" in text and str(fire.job_id) in text


def test_names_lists_the_queues_and_job_types_that_exist_for_a_monitor(
    dsn: str, make_role: MakeRole
) -> None:
    with Queue(dsn) as q:
        q.enqueue("send_email", queue="mail")
        q.enqueue("report", queue="reports")
        q.schedule("nightly", "0 3 * * *", "cleanup", queue="maintenance")
    monitor = psycopg.conninfo.make_conninfo(dsn, user=make_role("monitor", dsn=dsn))
    ran = jobq("--dsn", monitor, "names", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"queue": ["mail", "maintenance", "reports"],
                                      "job_type": ["cleanup", "report", "send_email"]}
    assert "queue  mail" in jobq("--dsn", monitor, "names").stdout
    with Queue(monitor) as q:
        assert q.names()["queue"] == ["mail", "maintenance", "reports"]


def test_dead_letter_requeue_all_is_audited_with_its_filters_and_reason(dsn: str) -> None:
    """`jobq dead-letter requeue --all` records itself as the single requeue does: who, the
    filters, the jobs matched and requeued, and the reason (`--reason`), read by `jobq audit`;
    `--reason` with an ID is refused, changing and recording nothing."""
    mail = [dead_letter(dsn, job_type="send_email", queue="mail") for _ in range(2)]
    other = dead_letter(dsn, job_type="report")
    refused = jobq("--dsn", dsn, "dead-letter", "requeue", str(other), "--reason", "why")
    assert refused.returncode == 2 and "--reason go with --all" in refused.stderr
    assert status_of(dsn, other) == "dead_letter" and _audit_rows(dsn) == []

    ran = jobq("--dsn", dsn, "dead-letter", "requeue", "--all", "--job-type", "send_email",
               "--reason", "smtp relay fixed")
    assert (ran.returncode, ran.stdout.strip()) == (0, "requeued 2 jobs")
    assert [status_of(dsn, j) for j in (*mail, other)] == ["pending", "pending", "dead_letter"]
    ((action, job_ids, changed, reason),) = _audit_rows(dsn)
    assert (action, sorted(job_ids), sorted(changed), reason) == (
        "requeue_dead_letters", sorted(mail), sorted(mail), "smtp relay fixed")
    audit = jobq("--dsn", dsn, "audit", "--json")
    assert audit.returncode == 0, audit.stderr
    (row,) = json.loads(audit.stdout)
    assert row["filters"] == {"job_type": "send_email", "queue": None, "include_cancelled": False}
    assert (row["action"], row["reason"], len(row["changed"])) == (
        "requeue_dead_letters", "smtp relay fixed", 2)
    with psycopg.connect(dsn, autocommit=True) as c:
        assert c.execute("SELECT login_role = session_user FROM jobq_audit").fetchone() == (True,)
    table = jobq("--dsn", dsn, "audit").stdout
    assert "requeue_dead_letters" in table and "job_type=send_email" in table
    assert "include_cancelled" not in table  # False: not a filter


def test_names_lists_the_names_of_jobs_without_a_key_that_wait_or_have_finished(
    dsn: str, make_role: MakeRole
) -> None:
    """`jobq names` (a monitor) names what only a finished job without a key, a job waiting
    for its run_at or one waiting for its dependency has: no other source names them."""
    with Queue(dsn) as q:
        parent = q.enqueue("parent", queue="first")
        q.enqueue("child", queue="after", depends_on=[parent])
        q.enqueue("later", queue="tomorrow", run_at=datetime.now(timezone.utc) + timedelta(days=1))
        q.cancel([q.enqueue("withdrawn", queue="gone")])
    monitor = psycopg.conninfo.make_conninfo(dsn, user=make_role("monitor", dsn=dsn))
    ran = jobq("--dsn", monitor, "names", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {
        "queue": ["after", "first", "gone", "tomorrow"],
        "job_type": ["child", "later", "parent", "withdrawn"],
    }
