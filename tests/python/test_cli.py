"""The `jobq` command line against a real PostgreSQL: in-process through click's runner, and
as a real process where the process is what is tested (the entry points, exit codes, signals,
a worker running handlers)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click
import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql
from psycopg.conninfo import make_conninfo
from tests.conftest import _create_db, _drop_db, _Recycler
from tests.helpers import count, unique_name, wait_for

from jobq_cli import cli
from pgq_client import PermissionDenied, Queue

Conn = psycopg.Connection[Any]
Ran = subprocess.CompletedProcess[str]
UNREACHABLE = "postgresql://127.0.0.1:1/x?connect_timeout=3"


def jobq(
    *args: str,
    dsn: str | None = None,
    cwd: Path | None = None,
    input: str | None = None,
    **env: str,
) -> Ran:
    """Run ``jobq ARGS`` in this process, in ``cwd``, with JOBQ_DSN=dsn and no other database
    setting; a traceback (an exception the CLI let through) fails the test."""
    environ: dict[str, str | None] = {"JOBQ_DSN": dsn, "DATABASE_URL": None, **env}
    here = os.getcwd()
    os.chdir(cwd or here)
    try:
        result = CliRunner().invoke(cli, list(args), env=environ, input=input, prog_name="jobq")
    finally:
        os.chdir(here)
    if not isinstance(result.exception, SystemExit | None):
        raise AssertionError(f"jobq {shlex.join(args)} raised") from result.exception
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


def jobq_process(
    *args: str, dsn: str | None = None, cwd: Path | None = None, **env: str
) -> Ran:
    """Run ``python -m pgq_client ARGS`` as a process with JOBQ_DSN=dsn and no other database
    setting."""
    environ = {k: v for k, v in os.environ.items() if k not in ("JOBQ_DSN", "DATABASE_URL")}
    if dsn is not None:
        environ["JOBQ_DSN"] = dsn
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pgq_client", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        timeout=120,
    )


def assert_user_error(result: Ran, code: int, fragment: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("jobq: error: ")]
    assert len(errors) == 1, result.stderr
    assert fragment in errors[0], errors[0]


# -- general -----------------------------------------------------------------------------------


def test_help_lists_every_command() -> None:
    result = jobq("--help")
    assert result.returncode == 0
    for command in (
        "migrate",
        "grant",
        "worker",
        "enqueue",
        "stats",
        "dead-letter",
        "prune",
        "doctor",
        "cancel",
    ):
        assert command in result.stdout


def test_jobq_script_is_the_same_as_python_m() -> None:
    script = Path(sys.executable).with_name("jobq")
    if not script.exists():
        pytest.skip("the jobq script is not installed next to this interpreter")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert result.stdout == jobq_process("--help").stdout


def test_a_process_exits_1_on_an_error_and_2_on_a_usage_error_with_one_line() -> None:
    """The exit status and the single stderr line are those of a real process."""
    assert_user_error(jobq_process("--dsn", UNREACHABLE, "stats"), 1, "connection failed")
    assert_user_error(jobq_process("prune", "--older-than", "soon"), 2, "--older-than")


def test_unreachable_server_is_one_error_line_and_exit_1() -> None:
    assert_user_error(jobq("--dsn", UNREACHABLE, "stats"), 1, "connection failed")


def test_database_url_is_used_when_jobq_dsn_is_not_set(dsn: str) -> None:
    result = jobq("stats", DATABASE_URL=dsn)
    assert result.returncode == 0, result.stderr
    assert "jobq: using DATABASE_URL" in result.stderr


def test_explicit_dsn_wins_over_the_environment(dsn: str) -> None:
    result = jobq("--dsn", dsn, "stats", JOBQ_DSN=UNREACHABLE)
    assert result.returncode == 0, result.stderr


def test_database_without_migrations_says_to_run_migrate(empty_dsn: str) -> None:
    assert_user_error(jobq("enqueue", "t", dsn=empty_dsn), 1, "jobq migrate")
    assert_user_error(jobq("stats", dsn=empty_dsn), 1, "jobq migrate")


def test_cli_runner_in_process_enqueue(dsn: str, conn: Conn) -> None:
    result = CliRunner().invoke(cli, ["--dsn", dsn, "enqueue", "t", '{"k": 1}'])
    assert result.exit_code == 0, result.output
    job_id = uuid.UUID(result.stdout.strip())
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE id = %s", job_id) == 1


def test_the_embedded_server_is_resolved_once_and_passed_to_every_client(
    dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no database configured, the CLI resolves the embedded server itself and hands its
    DSN to Queue and Worker: no library constructor is left to start a server."""
    import jobq_cli.base
    import pgq_client._conn
    import pgq_client.worker

    def refuse(given: str | None = None, **_: object) -> tuple[str, str]:
        raise AssertionError(f"a client resolved the DSN itself (given {given!r})")

    monkeypatch.setattr(jobq_cli.base, "resolve_dsn", lambda _: (dsn, "embedded"))
    monkeypatch.setattr(pgq_client._conn, "resolve_dsn", refuse)
    monkeypatch.setattr(pgq_client.worker, "resolve_dsn", refuse)
    (tmp_path / "embedded_jobs.py").write_text("HANDLERS = {'t': lambda job: None}\n")
    for argv in (["enqueue", "t"], ["stats"], ["jobs", "list"], ["migrate"], ["doctor"],
                 ["worker", "embedded_jobs:HANDLERS", "--burst"]):  # fmt: skip
        result = jobq(*argv, cwd=tmp_path)
        assert result.returncode in (0, 1), (argv, result.stderr)
        assert "jobq: error" not in result.stderr, (argv, result.stderr)
        assert "jobq: using embedded PostgreSQL at " in result.stderr, argv
    with Queue(dsn) as q:
        assert q.stats()[0].status == "succeeded"


# -- migrate -----------------------------------------------------------------------------------


def test_migrate_applies_then_has_nothing_to_do(empty_dsn: str) -> None:
    first = jobq("migrate", dsn=empty_dsn)
    assert first.returncode == 0, first.stderr
    assert "applied 0001_" in first.stdout
    second = jobq("migrate", dsn=empty_dsn)
    assert second.returncode == 0, second.stderr
    assert second.stdout == ""
    assert "up to date" in second.stderr
    assert jobq("stats", dsn=empty_dsn).returncode == 0


def test_migrate_into_a_schema_and_use_it(empty_dsn: str) -> None:
    assert jobq("migrate", "--schema", "tenant_a", dsn=empty_dsn).returncode == 0
    enq = jobq("enqueue", "t", "--schema", "tenant_a", dsn=empty_dsn)
    assert enq.returncode == 0, enq.stderr
    with psycopg.connect(empty_dsn) as c:
        assert count(c, "SELECT count(*) FROM tenant_a.jobq_jobs") == 1
    stats = jobq("stats", "--schema", "tenant_a", dsn=empty_dsn)
    assert "pending" in stats.stdout
    assert_user_error(jobq("stats", dsn=empty_dsn), 1, "jobq migrate")  # nothing in public


def test_migrate_dry_run_prints_sql_and_applies_nothing(empty_dsn: str) -> None:
    result = jobq("migrate", "--dry-run", dsn=empty_dsn)
    assert result.returncode == 0, result.stderr
    assert "CREATE TABLE" in result.stdout and "jobq_enqueue" in result.stdout
    with psycopg.connect(empty_dsn) as c:
        assert count(c, "SELECT count(*) FROM pg_class WHERE relname = 'jobq_jobs'") == 0


def test_migrate_dry_run_needs_no_database() -> None:
    result = jobq("migrate", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "CREATE TABLE" in result.stdout
    assert "embedded" not in result.stderr


def test_migrate_on_an_unreachable_server_fails_cleanly() -> None:
    assert_user_error(jobq("--dsn", UNREACHABLE, "migrate"), 1, "")


# -- enqueue -----------------------------------------------------------------------------------


def test_enqueue_prints_the_id_of_the_stored_job(dsn: str, conn: Conn) -> None:
    result = jobq(
        "enqueue", "ocr", '{"rev": 2}', "--priority", "7", "--max-attempts", "3",
        "--queue", "scans", "--run-at", "2030-01-31T09:00:00+01:00", dsn=dsn,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    job_id = uuid.UUID(result.stdout.strip())
    row = conn.execute(
        "SELECT job_type, payload, priority, max_attempts, queue, available_at FROM jobq_all_jobs "
        "WHERE id = %s",
        (job_id,),
    ).fetchone()
    assert row == ("ocr", {"rev": 2}, 7, 3, "scans", datetime(2030, 1, 31, 8, tzinfo=timezone.utc))


def test_enqueue_with_the_same_idempotency_key_prints_the_same_id(dsn: str, conn: Conn) -> None:
    a = jobq("enqueue", "t", "--idempotency-key", "k1", dsn=dsn)
    b = jobq("enqueue", "t", '{"other": true}', "--idempotency-key", "k1", dsn=dsn)
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs") == 1


def test_enqueue_bad_json_is_a_usage_error(dsn: str, conn: Conn) -> None:
    assert_user_error(jobq("enqueue", "t", "{not json", dsn=dsn), 2, "not valid JSON")
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs") == 0


def test_enqueue_payload_that_is_not_an_object_is_a_usage_error(dsn: str, conn: Conn) -> None:
    for payload in ("null", "[1]", '"s"', "3"):
        assert_user_error(jobq("enqueue", "t", payload, dsn=dsn), 2, "must be a JSON object")
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs") == 0


def test_enqueue_naive_run_at_is_a_usage_error(dsn: str, conn: Conn) -> None:
    result = jobq("enqueue", "t", "--run-at", "2030-01-01T00:00:00", dsn=dsn)
    assert_user_error(result, 2, "offset")
    assert_user_error(jobq("enqueue", "t", "--run-at", "tomorrow", dsn=dsn), 2, "ISO 8601")
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs") == 0


def test_enqueue_refused_by_sql_reports_the_argument(dsn: str) -> None:
    assert_user_error(jobq("enqueue", "t", "--max-attempts", "0", dsn=dsn), 1, "max_attempts")


# -- operating ---------------------------------------------------------------------------------


def test_stats_prints_a_table(dsn: str) -> None:
    assert jobq("stats", dsn=dsn).stdout.strip() == "no jobs"
    Queue(dsn).enqueue_many([{"job_type": "ocr"}, {"job_type": "ocr"}, {"job_type": "mail"}])
    lines = jobq("stats", dsn=dsn).stdout.splitlines()
    assert lines[0].split() == [
        "queue", "job_type", "status", "jobs", "oldest_available_at", "paused"]
    rows = [line.split()[:4] for line in lines[2:]]
    assert rows == [["default", "mail", "pending", "1"], ["default", "ocr", "pending", "2"]]


def _dead_jobs(dsn: str) -> tuple[uuid.UUID, uuid.UUID]:
    q = Queue(dsn)
    dead = q.enqueue("ocr", max_attempts=1)
    failed = q.enqueue("mail")
    for job in q.dequeue("w", batch_size=2):
        q.fail(
            job.id, "w", f"Traceback...\nRuntimeError: {job.job_type} broke", retry=job.id == dead
        )
    return dead, failed


def test_doctor_on_a_healthy_queue_exits_zero(dsn: str, conn: Conn) -> None:
    conn.execute("SELECT jobq_enqueue(job_type => 'x')")
    # a worker of type x is running (recorded as its claims record it; a claim would take the
    # job that the pending-age check looks at)
    conn.execute("SELECT jobq__worker_seen('w', '{x}', NULL)")
    result = jobq("doctor", dsn=dsn)
    assert result.returncode == 0, result.stderr
    for check in ("stuck_processing", "oldest_pending_age", "dead_letters", "oldest_transaction"):
        assert check in result.stdout
    assert "warning" not in result.stdout


def test_doctor_names_the_job_types_that_no_worker_serves(dsn: str, conn: Conn) -> None:
    """A misspelt job type: a worker of send_email runs, the send_emial job waits; the doctor
    says so at once, naming the type and the queue, and `--json` has it too."""
    conn.execute("SELECT jobq_enqueue(job_type => 'send_emial', queue => 'mail')")
    conn.execute("SELECT jobq_enqueue(job_type => 'send_email', queue => 'mail')")
    conn.execute("SELECT * FROM jobq_dequeue(worker_id => 'w', job_types => '{send_email}')")
    result = jobq("doctor", dsn=dsn)
    assert result.returncode == 1, (result.stdout, result.stderr)
    [line] = [line for line in result.stdout.splitlines() if line.startswith("unserved_job_types")]
    assert "warning" in line and "mail" in line and "'send_emial'" in line, line
    assert "send_email'" not in line
    result = jobq("doctor", "--json", dsn=dsn)
    checks = json.loads(result.stdout)["checks"]
    [check] = [c for c in checks if c["check_name"] == "unserved_job_types"]
    assert (check["queue"], check["severity"], check["value"]) == ("mail", "warning", 1)
    # a worker of that type claims (here: takes the job), and the warning goes
    conn.execute("SELECT * FROM jobq_dequeue(worker_id => 'w2', job_types => '{send_emial}')")
    result = jobq("doctor", dsn=dsn)
    [line] = [line for line in result.stdout.splitlines() if line.startswith("unserved_job_types")]
    assert " ok " in f" {line} ", line


def test_doctor_exits_one_when_a_check_warns(dsn: str, conn: Conn) -> None:
    conn.execute("SELECT jobq_enqueue(job_type => 'x', max_attempts => 1)")
    conn.execute("SELECT * FROM jobq_dequeue(worker_id => 'w')")
    conn.execute("SELECT jobq_fail(job_id => id, worker_id => 'w', error => 'boom')"
                 " FROM jobq_all_jobs")
    # A claim not renewed for two hours: its worker is gone.
    conn.execute("SELECT jobq_enqueue(job_type => 'y')")
    conn.execute("SELECT * FROM jobq_dequeue(worker_id => 'w2', job_types => '{y}')")
    conn.execute("UPDATE jobq_jobs SET locked_at = locked_at - interval '2 hours',"
        " locked_until = locked_until - interval '2 hours' WHERE job_type = 'y'")
    for command in ("doctor", "health"):
        result = jobq(command, dsn=dsn)
        assert result.returncode == 1, (result.stdout, result.stderr)
        lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
        assert "warning" in lines["dead_letters"]
        assert "warning" in lines["stuck_processing"]
        assert "Traceback" not in result.stderr


def test_doctor_on_an_unreachable_server_is_one_error_line() -> None:
    assert_user_error(jobq("doctor", dsn=UNREACHABLE), 1, "")


def test_dead_letter_list_shows_dead_and_failed_jobs(dsn: str) -> None:
    assert jobq("dead-letter", "list", dsn=dsn).stdout.strip() == "no dead-letter or failed jobs"
    dead, failed = _dead_jobs(dsn)
    out = jobq("dead-letter", "list", dsn=dsn).stdout
    assert str(dead) in out and str(failed) in out
    assert "RuntimeError: ocr broke" in out  # the last line of the error
    only = jobq("dead-letter", "list", "--job-type", "mail", dsn=dsn).stdout
    assert str(failed) in only and str(dead) not in only


def test_dead_letter_requeue_one_by_id(dsn: str, conn: Conn) -> None:
    dead, _ = _dead_jobs(dsn)
    result = jobq("dead-letter", "requeue", str(dead), dsn=dsn)
    assert result.returncode == 0, result.stderr
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'pending'") == 1
    again = jobq("dead-letter", "requeue", str(dead), dsn=dsn)
    assert_user_error(again, 1, "not dead_letter, failed or cancelled")
    assert_user_error(jobq("dead-letter", "requeue", "nope", dsn=dsn), 2, "UUID")
    assert_user_error(jobq("dead-letter", "requeue", dsn=dsn), 2, "--all")


def test_dead_letter_requeue_all_of_a_type(dsn: str, conn: Conn) -> None:
    _dead_jobs(dsn)
    result = jobq("dead-letter", "requeue", "--all", "--job-type", "mail", dsn=dsn)
    assert result.stdout.strip() == "requeued 1 job"
    assert jobq("dead-letter", "requeue", "--all", dsn=dsn).stdout.strip() == "requeued 1 job"
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'pending'") == 2


def test_dead_letter_requeue_all_leaves_cancelled_jobs_unless_asked(dsn: str, conn: Conn) -> None:
    """`--all` requeues the failed job of a type and not its cancelled one, whose reason
    stays; `--include-cancelled` brings that one back too."""
    _dead_jobs(dsn)
    withdrawn = Queue(dsn).enqueue("mail")
    assert jobq("cancel", str(withdrawn), "--reason", "customer withdrew", dsn=dsn).returncode == 0
    result = jobq("dead-letter", "requeue", "--all", "--job-type", "mail", dsn=dsn)
    assert result.stdout.strip() == "requeued 1 job"
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'cancelled'") == 1
    again = jobq("dead-letter", "requeue", "--all", "--include-cancelled", dsn=dsn)
    assert again.stdout.strip() == "requeued 2 jobs"  # the dead letter and the cancelled one
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'pending'") == 3
    mixed = jobq("dead-letter", "requeue", str(withdrawn), "--include-cancelled", dsn=dsn)
    assert_user_error(mixed, 2, "go with --all")


def test_prune_deletes_old_finished_jobs_only(dsn: str, conn: Conn) -> None:
    _, failed = _dead_jobs(dsn)
    conn.execute("UPDATE jobq_jobs_history SET finished_at = now() - interval '2 hours'")
    assert jobq("prune", dsn=dsn).stdout.strip() == "pruned 0 jobs"  # default: succeeded, 7 days
    result = jobq("prune", "--older-than", "3600", "--status", "failed", dsn=dsn)
    assert result.stdout.strip() == "pruned 1 job"
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE id = %s", failed) == 0
    assert_user_error(jobq("prune", "--status", "pending", dsn=dsn), 2, "pending")


# -- worker ------------------------------------------------------------------------------------


def test_worker_burst_runs_the_jobs_and_exits_zero(dsn: str, conn: Conn, tmp_path: Path) -> None:
    conn.execute("CREATE TABLE done (n int)")
    (tmp_path / "cli_jobs.py").write_text(
        textwrap.dedent(
            """
            import os
            import psycopg

            def add(job, conn):
                conn.execute("INSERT INTO done VALUES (%s)", (job.payload["n"],))

            HANDLERS = {"add": add}
            """
        )
    )
    Queue(dsn).enqueue_many([{"job_type": "add", "payload": {"n": i}} for i in range(20)])
    result = jobq_process(
        "worker", "cli_jobs:HANDLERS", "--burst", "--concurrency", "3", dsn=dsn, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert count(conn, "SELECT count(DISTINCT n) FROM done") == 20
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'") == 20


@pytest.mark.slow  # a worker process runs until it is signalled
def test_worker_process_stops_on_sigterm_and_exits_zero(
    dsn: str, conn: Conn, tmp_path: Path
) -> None:
    """A worker serving (not --burst) finishes and exits 0 on SIGTERM, as a service manager
    expects."""
    (tmp_path / "sig_jobs.py").write_text("HANDLERS = {'t': lambda job: {'ok': True}}\n")
    job_id = Queue(dsn).enqueue("t")
    environ = {k: v for k, v in os.environ.items() if k not in ("JOBQ_DSN", "DATABASE_URL")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgq_client", "worker", "sig_jobs:HANDLERS"],
        cwd=tmp_path, env={**environ, "JOBQ_DSN": dsn}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for("the job to succeed", lambda: Queue(dsn).status([job_id])[job_id].finished)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr


def test_worker_with_an_unknown_module_is_an_error(dsn: str, tmp_path: Path) -> None:
    result = jobq("worker", "no_such_module_xyz:HANDLERS", "--burst", dsn=dsn, cwd=tmp_path)
    assert_user_error(result, 1, "no_such_module_xyz")


def test_worker_with_a_missing_attribute_is_an_error(dsn: str, tmp_path: Path) -> None:
    (tmp_path / "empty_jobs.py").write_text("OTHER = {}\n")
    result = jobq("worker", "empty_jobs:HANDLERS", "--burst", dsn=dsn, cwd=tmp_path)
    assert_user_error(result, 1, "no attribute 'HANDLERS'")


def test_worker_spec_without_colon_is_a_usage_error(dsn: str) -> None:
    assert_user_error(jobq("worker", "just_a_module", dsn=dsn), 2, "MODULE:HANDLERS")


def test_worker_on_a_database_without_migrations_is_an_error(
    empty_dsn: str, tmp_path: Path
) -> None:
    (tmp_path / "some_jobs.py").write_text("HANDLERS = {'t': print}\n")
    result = jobq("worker", "some_jobs:HANDLERS", "--burst", dsn=empty_dsn, cwd=tmp_path)
    assert_user_error(result, 1, "jobq migrate")


# -- grant -------------------------------------------------------------------------------------


def test_grant_dry_run_without_a_database_prints_the_statements() -> None:
    result = jobq("grant", "app", "--as", "producer", "--dry-run")
    assert result.returncode == 0, result.stderr
    # functions by signature, as their files declare them (an overload is never named)
    from pgq_client.migrate import file_signature, function_files

    signatures = {f.name: file_signature(f) for f in function_files()}
    assert signatures["jobq_await"] == "jobq_await(uuid[], interval)"
    assert result.stdout.splitlines() == [
        'GRANT USAGE ON SCHEMA "public" TO "app";',
        *(f'GRANT EXECUTE ON FUNCTION "public".{signatures[name]} TO "app";'
          for name in ("jobq_add_dependencies", "jobq_await", "jobq_cancel",
                       "jobq_dependencies", "jobq_enqueue", "jobq_enqueue_arrays",
                       "jobq_enqueue_many", "jobq_inserted", "jobq_job_graph",
                       "jobq_job_status")),
    ]
    assert "embedded" not in result.stderr


def test_grant_admin_dry_run_lists_installed_public_functions_only(dsn: str, role: str) -> None:
    result = jobq("grant", role, "--as", "admin", "--dry-run", dsn=dsn)
    assert result.returncode == 0, result.stderr
    assert "jobq_list_jobs" in result.stdout and "jobq_prune" in result.stdout
    assert "jobq__" not in result.stdout
    assert '"public"."jobq_migrations"' in result.stdout
    with psycopg.connect(dsn) as c:  # dry run: nothing granted
        assert not c.execute(
            "SELECT has_function_privilege(%s, 'jobq_stats()', 'EXECUTE')", (role,)
        ).fetchone()[0]  # type: ignore[index]


def test_granted_producer_can_enqueue_but_not_claim(dsn: str, role: str) -> None:
    result = jobq("grant", role, "--as", "producer", dsn=dsn)
    assert result.returncode == 0, result.stderr
    with Queue(make_conninfo(dsn, user=role)) as q:
        q.enqueue("t", {"secret": 1})
        with pytest.raises(PermissionDenied) as denied:
            q.dequeue("w")
        assert denied.value.sqlstate == "42501"
        with pytest.raises(PermissionDenied):
            q.stats()


def test_granted_worker_can_claim_and_complete_but_not_list(dsn: str, role: str) -> None:
    assert jobq("grant", role, "--as", "worker", dsn=dsn).returncode == 0
    with Queue(make_conninfo(dsn, user=role)) as q:
        job_id = q.enqueue("t")
        assert [j.id for j in q.dequeue("w")] == [job_id]
        assert q.complete_many([job_id], "w", attempts=[1]) == 1
        with pytest.raises(PermissionDenied):
            q.dead_letters()


def test_granted_admin_reads_every_table_and_no_private_helper(dsn: str, role: str) -> None:
    assert jobq("grant", role, "--as", "admin", dsn=dsn).returncode == 0
    with Queue(make_conninfo(dsn, user=role)) as q:
        q.enqueue("t")
        assert q.stats()[0].jobs == 1
        assert q.dead_letters() == []
    with psycopg.connect(make_conninfo(dsn, user=role)) as c:
        assert count(c, "SELECT count(*) FROM jobq_migrations") >= 1
        assert count(c, "SELECT count(*) FROM jobq_settings") == 1
        private = c.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p "
            "WHERE p.proname LIKE 'jobq\\_\\_%%' AND has_function_privilege(p.oid, 'EXECUTE')"
        ).fetchall()
        assert private == []


def test_grant_to_an_unknown_role_is_an_error(dsn: str) -> None:
    assert_user_error(
        jobq("grant", "no_such_role_xyz", "--as", "worker", dsn=dsn), 1, "does not exist"
    )


def test_grant_in_a_schema_without_jobq_says_to_migrate(dsn: str, role: str) -> None:
    result = jobq("grant", role, "--as", "worker", "--schema", "nowhere", dsn=dsn)
    assert_user_error(result, 1, "jobq migrate --schema nowhere")


# -- --dsn and --schema before and after the command -------------------------------------------


# `jobq embedded ...` manages the embedded server itself, the one used when no database is
# given: it takes --home (where that server lives), and a --dsn or --schema would mean nothing.
EMBEDDED_GROUP = "embedded"


def _leaf_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> dict[str, click.Command]:
    """The commands that talk to a jobq database (the embedded server's own group aside)."""
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        if not prefix and name == EMBEDDED_GROUP:
            continue
        path = (*prefix, name)
        if isinstance(command, click.Group):
            found |= _leaf_commands(command, path)
        else:
            found[" ".join(path)] = command
    return found


def test_every_command_and_group_takes_dsn_and_schema() -> None:
    groups: list[click.Command] = [
        cli,
        *(
            c
            for name, c in cli.commands.items()
            if isinstance(c, click.Group) and name != EMBEDDED_GROUP
        ),
    ]
    for command in [*groups, *_leaf_commands(cli).values()]:
        options = {opt for p in command.params for opt in p.opts}
        assert {"--dsn", "--schema"} <= options, command.name


@pytest.fixture(scope="module")
def tenant_databases(admin_dsn: str) -> Iterator[_Recycler]:
    """Databases where jobq lives only in schema tenant_x (migrated once per test process), with
    one dead_letter job, one schedule and one limit, each test's brought back to that state for
    the next (tests/conftest.py, ``_Recycler``, puts the template's rows back)."""
    from pgq_client.migrate import migrate

    name = unique_name("jobq_tenant_tpl")
    dsn = _create_db(admin_dsn, name)
    migrate(dsn, schema="tenant_x")
    with Queue(dsn, schema="tenant_x") as q:
        q.schedule("nightly", "30 2 * * *", "report")  # for `schedule delete`
        q.set_limit("per-customer", max_running=2)  # for `limit delete`
        q.enqueue("ocr", {"n": 1}, max_attempts=1)
        (job,) = q.dequeue("w")
        q.fail(job.id, "w", "boom")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("VACUUM")  # the tables left empty have no page again (as _Recycler asks)
    recycler = _Recycler(admin_dsn, name)
    yield recycler
    if recycler.spare is not None:
        _drop_db(admin_dsn, recycler.spare)
    _drop_db(admin_dsn, name)


@pytest.fixture
def tenant_dsn(admin_dsn: str, tenant_databases: _Recycler) -> Iterator[str]:
    """The tenant_x database for this test, with one dead_letter job, one schedule and one
    limit."""
    name = tenant_databases.take()
    yield make_conninfo(admin_dsn, dbname=name)
    tenant_databases.give_back(name)


def _dead_id(dsn: str, schema: str = "tenant_x") -> str:
    with psycopg.connect(dsn) as c:
        row = c.execute(
            sql.SQL("SELECT id FROM {}.jobq_all_jobs WHERE status = 'dead_letter'").format(
                sql.Identifier(schema)
            )
        ).fetchone()
    assert row is not None
    return str(row[0])


# Arguments that make each command do its work on tenant_dsn (every command must be listed).
COMMAND_ARGS: dict[str, list[str]] = {
    "migrate": [],
    "grant": ["postgres", "--as", "producer", "--dry-run"],
    "enqueue": ["t", '{"k": 1}'],
    "stats": [],
    "doctor": [],
    "health": [],
    "jobs list": [],
    "jobs show": ["{dead}"],
    "jobs graph": ["{dead}"],
    "jobs retry": ["{dead}"],
    "jobs status": ["{dead}"],
    "jobs wait": ["{dead}"],
    "jobs find": [],
    "jobs cancel": ["{dead}", "--reason", "x"],
    "jobs requeue": ["{dead}"],
    "jobs delete": ["{dead}"],
    "jobs run-now": ["{dead}"],
    "audit": [],
    "errors": [],
    "throughput": [],
    "names": [],
    "cancel": ["{dead}"],
    "dead-letter list": [],
    "dead-letter requeue": ["--all"],
    "prune": ["--older-than", "0"],
    "configure": [],
    "metrics": [],
    "revoke": ["postgres", "--dry-run"],
    "schedule set": ["nightly", "30 2 * * *", "report"],
    "schedule list": [],
    "schedule delete": ["nightly"],
    "tick": [],
    "limit set": ["per-customer", "--max-running", "2"],
    "limit list": [],
    "limit weight": ["per-customer", "acme", "2"],
    "limits": [],
    "limit delete": ["per-customer"],
    "queue pause": ["mail"],
    "queue resume": ["mail"],
    "queue list": [],
    "workers": [],
    "worker": ["cli_tenant_jobs:HANDLERS", "--burst"],
    "web": ["--check"],
}


def test_command_args_cover_every_command() -> None:
    assert set(COMMAND_ARGS) == set(_leaf_commands(cli))


# "both" is also the proof that the options work after the command: were they ignored there,
# the wrong ones before it would be used.
@pytest.mark.parametrize("where", ["before", "both"])
@pytest.mark.parametrize("name", sorted(COMMAND_ARGS))
def test_dsn_and_schema_work_before_and_after_the_command(
    tenant_dsn: str, tmp_path: Path, name: str, where: str
) -> None:
    (tmp_path / "cli_tenant_jobs.py").write_text("HANDLERS = {'ocr': lambda job: None}\n")
    words = name.split()
    args = [a.replace("{dead}", _dead_id(tenant_dsn)) for a in COMMAND_ARGS[name]]
    right = ["--dsn", tenant_dsn, "--schema", "tenant_x"]
    # Were an option ignored, the command would use JOBQ_DSN (unreachable) or the search_path
    # (public, where jobq is not installed) and fail.
    wrong = ["--dsn", UNREACHABLE, "--schema", "public"]
    # given in both places, the one after the command wins
    argv = [*right, *words, *args] if where == "before" else [*wrong, *words, *args, *right]
    result = jobq(*argv, dsn=UNREACHABLE, cwd=tmp_path)
    expected = 1 if name in ("doctor", "health") else 0  # doctor warns: a dead_letter job
    assert result.returncode == expected, (argv, result.stdout, result.stderr)
    assert "jobq: error" not in result.stderr
    if name == "migrate":
        assert "up to date" in result.stderr
    if name == "grant":
        assert '"tenant_x"' in result.stdout


def test_dsn_and_schema_on_a_group_reach_its_subcommands(tenant_dsn: str) -> None:
    result = jobq("dead-letter", "--dsn", tenant_dsn, "--schema", "tenant_x", "list")
    assert result.returncode == 0, result.stderr
    assert _dead_id(tenant_dsn) in result.stdout


def test_migrate_defaults_to_schema_public_wherever_the_dsn_is(empty_dsn: str) -> None:
    assert jobq("migrate", "--dsn", empty_dsn, dsn=UNREACHABLE).returncode == 0
    with psycopg.connect(empty_dsn) as c:
        assert count(c, "SELECT count(*) FROM public.jobq_migrations") >= 1


# -- --run-at ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["2030-01-31", "2030-01-31T09:30", "2030-01-31 09:30:00"])
def test_run_at_without_offset_is_refused_with_examples_that_work(
    dsn: str, conn: Conn, value: str
) -> None:
    result = jobq("enqueue", "t", "--run-at", value, dsn=dsn)
    assert_user_error(result, 2, "has no UTC offset")
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs") == 0
    message = result.stderr.split("e.g. ", 1)[1].strip()
    examples = message.split(" or ")
    assert len(examples) == 2
    naive = datetime.fromisoformat(value)
    for example in examples:
        ok = jobq("enqueue", "t", "--run-at", example, dsn=dsn)
        assert ok.returncode == 0, (example, ok.stderr)
        stored = conn.execute(
            "SELECT available_at FROM jobq_all_jobs WHERE id = %s", (uuid.UUID(ok.stdout.strip()),)
        ).fetchone()
        assert stored == (naive.replace(tzinfo=timezone.utc),)


@pytest.mark.parametrize(
    ("value", "utc"),
    [
        ("2030-01-31T09:00:00Z", datetime(2030, 1, 31, 9, tzinfo=timezone.utc)),
        ("2030-01-31T09:00:00z", datetime(2030, 1, 31, 9, tzinfo=timezone.utc)),
        ("2030-01-31T09:00:00+01:00", datetime(2030, 1, 31, 8, tzinfo=timezone.utc)),
        ("2030-01-31 09:00-05:30", datetime(2030, 1, 31, 14, 30, tzinfo=timezone.utc)),
    ],
)
def test_run_at_takes_iso_8601_with_an_offset_or_z(value: str, utc: datetime) -> None:
    from jobq_cli import parse_run_at

    assert parse_run_at(value) == utc


def test_run_at_that_is_not_a_time_names_working_examples(dsn: str) -> None:
    result = jobq("enqueue", "t", "--run-at", "2030-01-31ZZ", dsn=dsn)
    assert_user_error(result, 2, "not an ISO 8601 time")
    for example in ("2030-01-31T09:00:00+01:00", "2030-01-31T08:00:00Z"):
        assert example in result.stderr
        assert jobq("enqueue", "t", "--run-at", example, dsn=dsn).returncode == 0


# -- payloads ----------------------------------------------------------------------------------

BIG = {"blob": "x" * 2_500_000, "n": 1}


def test_large_payload_from_stdin_and_from_a_file(dsn: str, conn: Conn, tmp_path: Path) -> None:
    assert jobq("configure", "--max-payload-bytes", str(4 << 20), dsn=dsn).returncode == 0
    text = json.dumps(BIG)
    piped = jobq("enqueue", "big", "-", dsn=dsn, input=text)
    assert piped.returncode == 0, piped.stderr
    (tmp_path / "big.json").write_text(text)
    filed = jobq("enqueue", "big", "@big.json", dsn=dsn, cwd=tmp_path)
    assert filed.returncode == 0, filed.stderr
    for out in (piped.stdout, filed.stdout):
        row = conn.execute(
            "SELECT payload FROM jobq_all_jobs WHERE id = %s", (uuid.UUID(out.strip()),)
        ).fetchone()
        assert row == (BIG,)


def test_payload_over_the_limit_shows_the_database_hint(
    dsn: str, conn: Conn, tmp_path: Path
) -> None:
    (tmp_path / "big.json").write_text(json.dumps(BIG))
    result = jobq("enqueue", "big", "@big.json", dsn=dsn, cwd=tmp_path)
    assert_user_error(result, 1, "the limit is 1048576 bytes")
    assert "hint: Store large data elsewhere" in result.stderr
    assert "jobq_configure(max_payload_bytes" in result.stderr
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs") == 0


@pytest.mark.parametrize(
    ("payload", "kind"),
    [("null", "null"), ("[1, 2]", "an array"), ('"s"', "a string"), ("3", "a number"),
     ("true", "a boolean")],
)  # fmt: skip
def test_payload_must_be_a_json_object(
    dsn: str, conn: Conn, tmp_path: Path, payload: str, kind: str
) -> None:
    assert_user_error(jobq("enqueue", "t", payload, dsn=dsn), 2, "must be a JSON object")
    (tmp_path / "p.json").write_text(payload)
    result = jobq("enqueue", "t", "@p.json", dsn=dsn, cwd=tmp_path)
    assert_user_error(result, 2, f"got {kind}")
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs") == 0


def test_payload_file_that_cannot_be_read_is_a_usage_error(dsn: str, tmp_path: Path) -> None:
    result = jobq("enqueue", "t", "@missing.json", dsn=dsn, cwd=tmp_path)
    assert_user_error(result, 2, "cannot read 'missing.json'")


def test_payload_from_stdin_in_process(dsn: str, conn: Conn) -> None:
    result = CliRunner().invoke(cli, ["--dsn", dsn, "enqueue", "t", "-"], input='{"a": [1]}')
    assert result.exit_code == 0, result.output
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE payload = '{\"a\": [1]}'") == 1


# -- --version, durations, hints ----------------------------------------------------------------


def test_version_names_the_installed_distribution() -> None:
    from importlib.metadata import version

    result = jobq("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"jobq {version('pgq-client')} (pgq-client)"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("30m", 1800), ("12h", 43200), ("7d", 604800), ("1w", 604800),
     ("1h30m", 5400), ("1.5h", 5400), ("0", 0), ("2D", 172800)],
)  # fmt: skip
def test_prune_durations(text: str, seconds: float) -> None:
    from jobq_cli import parse_duration

    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "1x", "-5", "nan", "inf", "h", "1h 30", "7 days", "1e999"])
def test_prune_refuses_what_is_not_a_duration(dsn: str, text: str) -> None:
    assert_user_error(jobq("prune", "--older-than", text, dsn=dsn), 2, "--older-than")


def test_prune_older_than_in_hours_and_days(dsn: str, conn: Conn) -> None:
    _dead_jobs(dsn)
    conn.execute("UPDATE jobq_jobs_history SET finished_at = now() - interval '2 hours'")
    args = ("--status", "failed", "--status", "dead_letter")
    assert jobq("prune", "--older-than", "1d", *args, dsn=dsn).stdout.strip() == "pruned 0 jobs"
    assert jobq("prune", "--older-than", "3h", *args, dsn=dsn).stdout.strip() == "pruned 0 jobs"
    assert jobq("prune", "--older-than", "90m", *args, dsn=dsn).stdout.strip() == "pruned 2 jobs"


def test_a_producer_running_a_worker_is_told_to_grant_worker(
    dsn: str, role: str, tmp_path: Path
) -> None:
    assert jobq("grant", role, "--as", "producer", dsn=dsn).returncode == 0
    (tmp_path / "p_jobs.py").write_text("HANDLERS = {'t': print}\n")
    result = jobq("worker", "p_jobs:HANDLERS", "--burst", dsn=make_conninfo(dsn, user=role),
                  cwd=tmp_path)  # fmt: skip
    assert_user_error(result, 1, "permission denied for function jobq_")
    assert f"`jobq grant {role} --as worker`" in result.stderr
    # The client's own exception stays typed.
    with pytest.raises(PermissionDenied), Queue(make_conninfo(dsn, user=role)) as q:
        q.heartbeat("w", [])


def test_a_producer_reading_stats_is_told_to_grant_monitor(dsn: str, role: str) -> None:
    # monitor is the narrowest level that may read jobq_stats (the function file declares it)
    assert jobq("grant", role, "--as", "producer", dsn=dsn).returncode == 0
    result = jobq("stats", "--schema", "public", dsn=make_conninfo(dsn, user=role))
    assert_user_error(result, 1, f"`jobq grant {role} --as monitor --schema public`")


def test_not_installed_suggests_migrate_with_the_given_dsn_and_schema(empty_dsn: str) -> None:
    secret = "hunter2-Secret"
    with_password = make_conninfo(empty_dsn, password=secret)  # trust auth: any password works
    result = jobq("stats", "--dsn", with_password, "--schema", "tenant q", dsn=UNREACHABLE)
    assert_user_error(result, 1, "run `jobq migrate --dsn ")
    assert secret not in result.stderr
    assert "password=****" in result.stderr
    suggested = result.stderr.split("run `", 1)[1].rsplit("`", 1)[0]
    assert suggested.endswith("--schema 'tenant q'")
    # The suggestion works once the password is put back.
    argv = shlex.split(suggested.replace("****", secret))
    assert argv[:2] == ["jobq", "migrate"]
    assert jobq(*argv[1:], dsn=UNREACHABLE).returncode == 0
    assert jobq("stats", "--dsn", with_password, "--schema", "tenant q").returncode == 0


def test_not_installed_from_the_environment_suggests_plain_migrate(empty_dsn: str) -> None:
    result = jobq("stats", dsn=empty_dsn)
    assert_user_error(result, 1, "run `jobq migrate`")


# -- no password in any message ----------------------------------------------------------------

# DSNs that libpq cannot parse, each of which makes it quote part of the password.
BAD_DSNS = [
    "postgresql://app:Sup%ZZerSecret@db.example/app",
    "postgresql://app@db.example/app?password=Sup%ZZerSecret",
    "host=db.example password=Sup SuperSecretTail dbname=app",
    "host=db.example password='SuperSecret dbname=app",
]
SECRET_PARTS = ("Sup%ZZ", "ZZerSecret", "SuperSecret", "Secret")


def _no_secret(text: str) -> None:
    for part in SECRET_PARTS:
        assert part not in text, text


@pytest.mark.parametrize("source", ["--dsn before", "--dsn after", "JOBQ_DSN", "DATABASE_URL"])
@pytest.mark.parametrize("bad", BAD_DSNS)
def test_no_command_shows_the_password_of_an_unparsable_dsn(source: str, bad: str) -> None:
    for name, args in COMMAND_ARGS.items():
        if name == "worker":
            continue  # see the next test
        words = name.split()
        args = [a.replace("{dead}", str(uuid.uuid4())) for a in args]
        if name == "migrate":
            args = [*args, "--dry-run"]  # the path that reads the DSN without connecting
        if source == "--dsn before":
            argv = ["--dsn", bad, *words, *args]
        elif source == "--dsn after":
            argv = [*words, *args, "--dsn", bad]
        else:
            argv = [*words, *args]
        if name == "grant":
            argv = [a for a in argv if a != "--dry-run"] + ["--dry-run"]
        if source == "DATABASE_URL":
            result = jobq(*argv, DATABASE_URL=bad)
        else:
            result = jobq(*argv, dsn=bad if source == "JOBQ_DSN" else None)
        output = result.stdout + result.stderr
        assert result.returncode == 1, (name, output)
        assert "jobq: error: the connection string from " in output, (name, output)
        _no_secret(output)


@pytest.mark.parametrize("bad", BAD_DSNS)
def test_worker_does_not_show_the_password_of_an_unparsable_dsn(bad: str, tmp_path: Path) -> None:
    (tmp_path / "w_jobs.py").write_text("HANDLERS = {'t': print}\n")
    for result in (
        jobq("worker", "w_jobs:HANDLERS", "--burst", "--dsn", bad, cwd=tmp_path),
        jobq("worker", "w_jobs:HANDLERS", "--burst", cwd=tmp_path, JOBQ_DSN=bad),
        jobq("--dsn", bad, "worker", "w_jobs:HANDLERS", cwd=tmp_path, DATABASE_URL=bad),
    ):
        assert_user_error(result, 1, "is not valid")
        _no_secret(result.stdout + result.stderr)


def test_no_message_shows_the_password_of_an_unreachable_server() -> None:
    dsn = "postgresql://app:SuperSecret@127.0.0.1:1/app?connect_timeout=3"
    for argv in (["stats"], ["migrate"], ["grant", "x", "--as", "worker"], ["jobs", "list"]):
        result = jobq("--dsn", dsn, *argv)
        output = result.stdout + result.stderr
        assert result.returncode == 1 and "connection failed" in output, output
        _no_secret(output)


def test_the_client_does_not_show_the_password_of_an_unparsable_dsn() -> None:
    import traceback

    from pgq_client import JobqError

    for bad in BAD_DSNS:
        with pytest.raises(JobqError) as raised, Queue(bad) as q:
            q.stats()
        assert "invalid connection string" in str(raised.value)
        _no_secret("".join(traceback.format_exception(raised.value)))


# -- jobs one by one ---------------------------------------------------------------------------


def test_jobs_list_filters_by_status_queue_and_type(dsn: str) -> None:
    dead, failed = _dead_jobs(dsn)
    q = Queue(dsn)
    pending = q.enqueue("ocr", {"p": 1}, queue="scans")
    out = jobq("jobs", "list", dsn=dsn).stdout
    assert all(str(i) in out for i in (dead, failed, pending))
    only = jobq("jobs", "list", "--status", "pending", dsn=dsn).stdout
    assert str(pending) in only and str(dead) not in only
    both = jobq("jobs", "list", "--status", "failed", "--status", "dead_letter", dsn=dsn).stdout
    assert str(dead) in both and str(failed) in both and str(pending) not in both
    typed = jobq("jobs", "list", "--type", "ocr", "--queue", "scans", dsn=dsn).stdout
    assert str(pending) in typed and str(dead) not in typed
    limited = jobq("jobs", "list", "--limit", "1", "--json", dsn=dsn)
    assert len(json.loads(limited.stdout)) == 1
    assert jobq("jobs", "list", "--type", "nothing", dsn=dsn).stdout.strip() == "no jobs"


def test_jobs_list_refuses_an_unknown_status_naming_the_known_ones(dsn: str) -> None:
    result = jobq("jobs", "list", "--status", "done", dsn=dsn)
    assert_user_error(result, 1, "statuses contains 'done'")
    assert "hint: Statuses: waiting, pending" in result.stderr


def test_jobs_show_prints_payload_attempts_errors_and_times(dsn: str) -> None:
    q = Queue(dsn)
    job_id = q.enqueue("mail", {"to": "a@example.com"}, max_attempts=2, idempotency_key="k-1")
    for attempt in (1, 2):
        (job,) = q.dequeue("w1")
        q.fail(job.id, "w1", f"Traceback...\nSMTPError: attempt {attempt}", backoff=0)
    result = jobq("jobs", "show", str(job_id), dsn=dsn)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for expected in (str(job_id), "dead_letter", "2/2", "k-1", '"to": "a@example.com"',
                     "errors (2):", "attempt 1 at ", "SMTPError: attempt 2", "by w1",
                     "created_at", "finished_at"):  # fmt: skip
        assert expected in out, expected
    as_json = json.loads(jobq("jobs", "show", str(job_id), "--json", dsn=dsn).stdout)
    assert as_json["id"] == str(job_id)
    assert as_json["payload"] == {"to": "a@example.com"}
    assert [e["attempt"] for e in as_json["errors"]] == [1, 2]
    assert as_json["status"] == "dead_letter" and as_json["attempts"] == 2
    assert datetime.fromisoformat(as_json["finished_at"]).tzinfo is not None


def test_jobs_show_of_an_unknown_or_malformed_id(dsn: str) -> None:
    unknown = uuid.uuid4()
    assert_user_error(jobq("jobs", "show", str(unknown), dsn=dsn), 1, f"no job {unknown}")
    assert_user_error(jobq("jobs", "show", "42", dsn=dsn), 2, "not a job id")


def test_jobs_retry_requeues_each_and_reports_the_others(dsn: str, conn: Conn) -> None:
    dead, failed = _dead_jobs(dsn)
    pending = Queue(dsn).enqueue("t")
    result = jobq("jobs", "retry", str(dead), str(failed), dsn=dsn)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"requeued {dead}", f"requeued {failed}"]
    rows = conn.execute(
        "SELECT status, attempts, jsonb_array_length(errors) FROM jobq_all_jobs WHERE id = ANY(%s)",
        ([dead, failed],),
    ).fetchall()
    assert rows == [("pending", 0, 1), ("pending", 0, 1)]  # history kept
    again = jobq("jobs", "retry", str(dead), str(pending), "--json", dsn=dsn)
    assert_user_error(again, 1, "not requeued")
    assert str(pending) in again.stderr
    assert json.loads(again.stdout) == {"requeued": [], "not_requeued": [str(dead), str(pending)]}


def test_cancel_says_what_became_of_each_job(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    dead, _ = _dead_jobs(dsn)
    running = q.enqueue("t")
    (claimed,) = q.dequeue("w1")
    pending = q.enqueue("t")
    result = jobq("cancel", str(pending), str(running), str(dead), "--reason", "not needed",
                  dsn=dsn)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"cancelled {pending}",
        f"cancel requested {running} (running: it stops when its handler sees the request, "
        "or ends succeeded if it completes first)",
        f"left alone {dead} (already dead_letter)",
    ]
    st = q.status([pending, running])
    assert st[pending].status == "cancelled" and st[pending].last_error == "not needed"
    assert st[running].cancel_requested and claimed.id == running
    unknown = uuid.uuid4()
    again = jobq("cancel", str(pending), str(unknown), "--json", dsn=dsn)
    assert_user_error(again, 1, f"no job {unknown}")
    assert json.loads(again.stdout) == {
        "jobs": [{"id": str(pending), "status": "cancelled"}], "unknown": [str(unknown)]}
    assert_user_error(jobq("cancel", "nope", dsn=dsn), 2, "'nope'")
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'cancelled'") == 1


def test_jobs_status_and_wait_show_results_and_cancel_requests(dsn: str) -> None:
    q = Queue(dsn)
    done = q.enqueue("t")
    (claimed,) = q.dequeue("w1")
    q.complete(done, "w1", result={"pages": 12})
    running = q.enqueue("t")
    q.dequeue("w1")
    q.cancel([running])
    result = jobq("jobs", "status", str(done), str(running), dsn=dsn)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["id", "status", "attempts", "finished_at", "cancel_requested",
                                "result", "last_error"]
    assert str(done) in lines[2] and "succeeded" in lines[2] and '{"pages":12}' in lines[2]
    assert str(running) in lines[3] and "processing" in lines[3] and "yes" in lines[3]
    as_json = json.loads(jobq("jobs", "status", str(done), "--json", dsn=dsn).stdout)
    assert as_json["unknown"] == [] and set(as_json["jobs"][0]) == STATUS_KEYS
    assert as_json["jobs"][0]["result"] == {"pages": 12}
    # wait: 0 when every job finished, 1 when one has not finished in time
    assert jobq("jobs", "wait", str(done), dsn=dsn).returncode == 0
    late = jobq("jobs", "wait", str(done), str(running), "--timeout", "0.3", "--json", dsn=dsn)
    assert late.returncode == 1
    assert [j["status"] for j in json.loads(late.stdout)["jobs"]] == ["succeeded", "processing"]
    unknown = uuid.uuid4()
    missing = jobq("jobs", "status", str(unknown), dsn=dsn)
    assert missing.returncode == 1 and f"no job {unknown}" in missing.stderr
    assert claimed.id == done


def test_jobs_show_prints_the_result_and_the_cancel_request(dsn: str) -> None:
    q = Queue(dsn)
    job = q.enqueue("t")
    q.dequeue("w1")
    q.cancel([job], reason="operator said so")
    q.complete(job, "w1", result=["a", 1])
    out = jobq("jobs", "show", str(job), dsn=dsn).stdout
    for expected in ("succeeded", "result:", '"a"', "cancel_requested_at", "operator said so"):
        assert expected in out, (expected, out)
    as_json = json.loads(jobq("jobs", "show", str(job), "--json", dsn=dsn).stdout)
    assert as_json["result"] == ["a", 1] and as_json["cancel_reason"] == "operator said so"


def test_jobs_list_and_prune_know_cancelled_jobs(dsn: str, conn: Conn) -> None:
    q = Queue(dsn)
    job = q.enqueue("t")
    q.cancel([job])
    listed = json.loads(jobq("jobs", "list", "--status", "cancelled", "--json", dsn=dsn).stdout)
    assert [j["id"] for j in listed] == [str(job)]
    assert jobq("jobs", "retry", str(job), dsn=dsn).returncode == 0
    q.cancel([job])
    conn.execute("UPDATE jobq_jobs_history SET finished_at = now() - interval '8 days'")
    assert jobq("prune", "--status", "cancelled", dsn=dsn).stdout.strip() == "pruned 1 job"


def test_jobs_retry_with_a_malformed_id_changes_nothing(dsn: str, conn: Conn) -> None:
    dead, _ = _dead_jobs(dsn)
    assert_user_error(jobq("jobs", "retry", str(dead), "nope", dsn=dsn), 2, "'nope'")
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'pending'") == 0


# -- --json -------------------------------------------------------------------------------------

JOB_KEYS = {
    "id", "queue", "job_type", "payload", "idempotency_key", "status", "priority", "attempts",
    "max_attempts", "available_at", "locked_at", "locked_by", "last_error", "errors",
    "created_at", "updated_at", "finished_at", "result", "cancel_requested_at", "cancel_reason",
}  # fmt: skip
STATUS_KEYS = {
    "id", "status", "attempts", "result", "last_error", "finished_at", "cancel_requested",
}  # fmt: skip


def _json(*args: str, dsn: str, code: int = 0) -> Any:
    result = jobq(*args, "--json", dsn=dsn)
    assert result.returncode == code, result.stderr
    return json.loads(result.stdout)


def test_json_output_has_the_documented_keys(dsn: str) -> None:
    dead, _ = _dead_jobs(dsn)
    added = _json("enqueue", "ocr", '{"n": 1}', dsn=dsn)
    assert set(added) == {"id"}
    stats_rows = _json("stats", dsn=dsn)
    assert {tuple(sorted(r)) for r in stats_rows} == {
        ("job_type", "jobs", "oldest_available_at", "paused", "queue", "status")
    }
    assert [(r["job_type"], r["status"], r["jobs"]) for r in stats_rows] == [
        ("mail", "failed", 1),
        ("ocr", "dead_letter", 1),
        ("ocr", "pending", 1),
    ]
    for listing in (_json("jobs", "list", dsn=dsn), _json("dead-letter", "list", dsn=dsn)):
        assert listing and all(set(j) >= JOB_KEYS for j in listing)
    assert set(_json("jobs", "show", str(dead), dsn=dsn)) >= JOB_KEYS
    health = _json("doctor", dsn=dsn, code=1)  # a dead_letter job: the check warns
    assert health["ok"] is False
    assert {tuple(sorted(c)) for c in health["checks"]} == {
        ("check_name", "detail", "queue", "severity", "value")
    }
    assert _json("configure", dsn=dsn) == {
        "max_payload_bytes": 1048576, "metrics": False, "metrics_label_sets": 1000
    }
    assert _json("prune", dsn=dsn) == {"pruned": 0}
    assert _json("dead-letter", "requeue", "--all", dsn=dsn) == {"requeued": 2}
    assert _json("migrate", dsn=dsn) == {"schema": "public", "applied": []}


def test_configure_prints_a_table_without_json(dsn: str) -> None:
    lines = jobq("configure", dsn=dsn).stdout.splitlines()
    assert lines[0].split() == ["setting", "value"]
    assert lines[2].split() == ["max_payload_bytes", "1048576"]


# -- help and completion -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [[], ["migrate"], ["grant"], ["enqueue"], ["worker"], ["stats"], ["doctor"], ["jobs"],
     ["dead-letter"], ["prune"], ["configure"], ["cancel"]],
)  # fmt: skip
def test_help_of_the_main_commands_shows_examples(command: list[str]) -> None:
    result = CliRunner().invoke(cli, [*command, "--help"], prog_name="jobq")
    assert result.exit_code == 0
    assert re.search(r"Examples:\n +jobq ", result.stdout), result.stdout


def test_bash_completion_script_and_completions() -> None:
    script = jobq(_JOBQ_COMPLETE="bash_source")
    assert script.returncode == 0
    assert "_jobq_completion" in script.stdout and "complete " in script.stdout
    words = jobq(_JOBQ_COMPLETE="bash_complete", COMP_WORDS="jobq dea", COMP_CWORD="1")
    assert words.stdout.split() == ["plain,dead-letter"]
    sub = jobq(_JOBQ_COMPLETE="bash_complete", COMP_WORDS="jobq jobs ", COMP_CWORD="2")
    assert set(sub.stdout.split()) == {
        "plain,list", "plain,show", "plain,retry", "plain,status", "plain,wait", "plain,graph",
        "plain,find", "plain,cancel", "plain,requeue", "plain,delete", "plain,run-now"}


# -- one command per action, one JSON style ------------------------------------------------------


def test_health_is_doctor_under_a_name_left_out_of_help(dsn: str) -> None:
    """`jobq health` runs doctor's checks and says the same; `--help` lists only doctor."""
    listed = re.findall(r"^  (\S+)", jobq("--help").stdout, re.MULTILINE)
    assert "doctor" in listed and "health" not in listed
    doctor, health = (json.loads(jobq(c, "--json", dsn=dsn).stdout) for c in ("doctor", "health"))
    assert [(c["check_name"], c["severity"]) for c in health["checks"]] == [
        (c["check_name"], c["severity"]) for c in doctor["checks"]
    ]
    assert jobq("health", "--help").stdout == jobq("doctor", "--help").stdout.replace(
        "jobq doctor [", "jobq health ["
    )


def test_dead_letter_requeue_of_ids_is_jobs_retry(dsn: str, conn: Conn) -> None:
    """`dead-letter requeue ID...` and `jobs retry ID...` requeue, print, refuse and exit alike."""
    dead, failed = _dead_jobs(dsn)
    requeued = jobq("dead-letter", "requeue", str(dead), str(failed), "--json", dsn=dsn)
    assert requeued.returncode == 0, requeued.stderr
    assert json.loads(requeued.stdout) == {
        "requeued": [str(dead), str(failed)], "not_requeued": []}  # fmt: skip
    assert count(conn, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'pending'") == 2
    for args in ([str(dead)], [str(dead), "--json"]):  # pending now: not requeued
        by_requeue = jobq("dead-letter", "requeue", *args, dsn=dsn)
        by_retry = jobq("jobs", "retry", *args, dsn=dsn)
        assert by_requeue.returncode == by_retry.returncode == 1
        assert (by_requeue.stdout, by_requeue.stderr) == (by_retry.stdout, by_retry.stderr)
    for command in (["dead-letter", "requeue"], ["jobs", "retry"]):
        assert_user_error(jobq(*command, "nope", dsn=dsn), 2, "'nope' is not a job id")
    assert_user_error(
        jobq("dead-letter", "requeue", str(dead), "--queue", "q", dsn=dsn), 2, "with --all"
    )


def _json_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> set[str]:
    """Every command that takes --json, aliases left out."""
    found: set[str] = set()
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found |= _json_commands(command, (*prefix, name))
        elif not command.hidden and any("--json" in p.opts for p in command.params):
            found.add(" ".join((*prefix, name)))
    return found


# Arguments that make each command with --json print something on a database with a dead_letter
# job, a failed job, a schedule and a limit; and the exit status expected.
JSON_ARGS: dict[str, tuple[list[str], int]] = {
    "migrate": ([], 0),
    "enqueue": (["t", '{"text": "caf\u00e9"}'], 0),
    "stats": ([], 0),
    "doctor": ([], 1),  # a dead_letter job: the check warns
    "jobs list": ([], 0),
    "jobs show": (["{dead}"], 0),
    "jobs graph": (["{dead}"], 0),
    "jobs retry": (["{dead}"], 0),
    "jobs status": (["{dead}"], 0),
    "jobs wait": (["{dead}"], 0),
    "jobs find": ([], 0),
    "jobs cancel": (["{dead}"], 0),  # a dead letter is left alone
    "jobs requeue": (["{dead}"], 0),
    "jobs delete": (["{dead}"], 0),
    "jobs run-now": (["{dead}"], 0),  # not pending: left alone
    "audit": ([], 0),
    "errors": ([], 0),
    "throughput": ([], 0),
    "names": ([], 0),
    "cancel": (["{dead}"], 0),
    "dead-letter list": ([], 0),
    "dead-letter requeue": (["--all"], 0),
    "prune": ([], 0),
    "configure": ([], 0),
    "schedule list": ([], 0),
    "limit list": ([], 0),
    "queue pause": (["mail", "--reason", "caf\u00e9"], 0),
    "queue resume": (["mail"], 0),
    "queue list": ([], 0),
    "workers": ([], 0),
}


def test_json_args_cover_every_json_command() -> None:
    assert set(JSON_ARGS) == _json_commands(cli)


@pytest.mark.parametrize("name", sorted(JSON_ARGS))
def test_every_json_output_is_one_compact_line(dsn: str, name: str) -> None:
    """Every --json prints the same way: one line of JSON, keys sorted, text as UTF-8."""
    dead, _ = _dead_jobs(dsn)
    with Queue(dsn) as q:
        q.schedule("nightly", "30 2 * * *", "report", {"note": "caf\u00e9"})
        q.set_limit("per-customer", max_running=2)
        q.enqueue("t", limit_group="per-customer", limit_key="acme")
    args, code = JSON_ARGS[name]
    argv = [*name.split(), *(a.replace("{dead}", str(dead)) for a in args), "--json"]
    result = jobq(*argv, dsn=dsn)
    assert result.returncode == code, result.stderr
    assert result.stdout.count("\n") == 1 and result.stdout.endswith("\n"), result.stdout
    value = json.loads(result.stdout)
    assert result.stdout == json.dumps(value, ensure_ascii=False, sort_keys=True) + "\n"
