"""The `jobq` command line, run as a real process against a real PostgreSQL."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgq_client import PermissionDenied, Queue
from pgq_client.cli import cli

Conn = psycopg.Connection[Any]
UNREACHABLE = "postgresql://127.0.0.1:1/x?connect_timeout=3"
_roles = itertools.count()


def jobq(
    *args: str, dsn: str | None = None, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pgq_client ARGS`` with JOBQ_DSN=dsn and no other database setting."""
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


def assert_user_error(result: subprocess.CompletedProcess[str], code: int, fragment: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("jobq: error: ")]
    assert len(errors) == 1, result.stderr
    assert fragment in errors[0], errors[0]


def count(conn: Conn, query: str, *params: object) -> int:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])


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
    ):
        assert command in result.stdout


def test_jobq_script_is_the_same_as_python_m() -> None:
    script = Path(sys.executable).with_name("jobq")
    if not script.exists():
        pytest.skip("the jobq script is not installed next to this interpreter")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert result.stdout == jobq("--help").stdout


def test_unreachable_server_is_one_error_line_and_exit_1() -> None:
    result = jobq("--dsn", UNREACHABLE, "stats")
    assert_user_error(result, 1, "connection failed")


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
    assert count(conn, "SELECT count(*) FROM jobq_jobs WHERE id = %s", job_id) == 1


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
        "SELECT job_type, payload, priority, max_attempts, queue, available_at FROM jobq_jobs "
        "WHERE id = %s",
        (job_id,),
    ).fetchone()
    assert row == ("ocr", {"rev": 2}, 7, 3, "scans", datetime(2030, 1, 31, 8, tzinfo=timezone.utc))


def test_enqueue_with_the_same_idempotency_key_prints_the_same_id(dsn: str, conn: Conn) -> None:
    a = jobq("enqueue", "t", "--idempotency-key", "k1", dsn=dsn)
    b = jobq("enqueue", "t", '{"other": true}', "--idempotency-key", "k1", dsn=dsn)
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout
    assert count(conn, "SELECT count(*) FROM jobq_jobs") == 1


def test_enqueue_bad_json_is_a_usage_error(dsn: str, conn: Conn) -> None:
    assert_user_error(jobq("enqueue", "t", "{not json", dsn=dsn), 2, "not valid JSON")
    assert count(conn, "SELECT count(*) FROM jobq_jobs") == 0


def test_enqueue_payload_that_is_not_an_object_is_a_usage_error(dsn: str, conn: Conn) -> None:
    for payload in ("null", "[1]", '"s"', "3"):
        assert_user_error(jobq("enqueue", "t", payload, dsn=dsn), 2, "must be a JSON object")
    assert count(conn, "SELECT count(*) FROM jobq_jobs") == 0


def test_enqueue_naive_run_at_is_a_usage_error(dsn: str, conn: Conn) -> None:
    result = jobq("enqueue", "t", "--run-at", "2030-01-01T00:00:00", dsn=dsn)
    assert_user_error(result, 2, "offset")
    assert_user_error(jobq("enqueue", "t", "--run-at", "tomorrow", dsn=dsn), 2, "ISO 8601")
    assert count(conn, "SELECT count(*) FROM jobq_jobs") == 0


def test_enqueue_refused_by_sql_reports_the_argument(dsn: str) -> None:
    assert_user_error(jobq("enqueue", "t", "--max-attempts", "0", dsn=dsn), 1, "max_attempts")


# -- operating ---------------------------------------------------------------------------------


def test_stats_prints_a_table(dsn: str) -> None:
    assert jobq("stats", dsn=dsn).stdout.strip() == "no jobs"
    Queue(dsn).enqueue_many([{"job_type": "ocr"}, {"job_type": "ocr"}, {"job_type": "mail"}])
    lines = jobq("stats", dsn=dsn).stdout.splitlines()
    assert lines[0].split() == ["queue", "job_type", "status", "jobs", "oldest_available_at"]
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
    result = jobq("doctor", dsn=dsn)
    assert result.returncode == 0, result.stderr
    for check in ("stuck_processing", "oldest_pending_age", "dead_letters", "oldest_transaction"):
        assert check in result.stdout
    assert "warning" not in result.stdout


def test_doctor_exits_one_when_a_check_warns(dsn: str, conn: Conn) -> None:
    conn.execute("SELECT jobq_enqueue(job_type => 'x', max_attempts => 1)")
    conn.execute("SELECT * FROM jobq_dequeue(worker_id => 'w')")
    conn.execute("SELECT jobq_fail(job_id => id, worker_id => 'w', error => 'boom') FROM jobq_jobs")
    # A claim not renewed for two hours: its worker is gone.
    conn.execute("SELECT jobq_enqueue(job_type => 'y')")
    conn.execute("SELECT * FROM jobq_dequeue(worker_id => 'w2', job_types => '{y}')")
    conn.execute("UPDATE jobq_jobs SET locked_at = now() - interval '2 hours' WHERE job_type = 'y'")
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
    assert count(conn, "SELECT count(*) FROM jobq_jobs WHERE status = 'pending'") == 1
    again = jobq("dead-letter", "requeue", str(dead), dsn=dsn)
    assert_user_error(again, 1, "not dead_letter or failed")
    assert_user_error(jobq("dead-letter", "requeue", "nope", dsn=dsn), 2, "UUID")
    assert_user_error(jobq("dead-letter", "requeue", dsn=dsn), 2, "--all")


def test_dead_letter_requeue_all_of_a_type(dsn: str, conn: Conn) -> None:
    _dead_jobs(dsn)
    result = jobq("dead-letter", "requeue", "--all", "--job-type", "mail", dsn=dsn)
    assert result.stdout.strip() == "requeued 1 jobs"
    assert jobq("dead-letter", "requeue", "--all", dsn=dsn).stdout.strip() == "requeued 1 jobs"
    assert count(conn, "SELECT count(*) FROM jobq_jobs WHERE status = 'pending'") == 2


def test_prune_deletes_old_finished_jobs_only(dsn: str, conn: Conn) -> None:
    _, failed = _dead_jobs(dsn)
    conn.execute("UPDATE jobq_jobs SET finished_at = now() - interval '2 hours'")
    assert jobq("prune", dsn=dsn).stdout.strip() == "pruned 0 jobs"  # default: succeeded, 7 days
    result = jobq("prune", "--older-than", "3600", "--status", "failed", dsn=dsn)
    assert result.stdout.strip() == "pruned 1 jobs"
    assert count(conn, "SELECT count(*) FROM jobq_jobs WHERE id = %s", failed) == 0
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
    result = jobq(
        "worker", "cli_jobs:HANDLERS", "--burst", "--concurrency", "3", dsn=dsn, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert count(conn, "SELECT count(DISTINCT n) FROM done") == 20
    assert count(conn, "SELECT count(*) FROM jobq_jobs WHERE status = 'succeeded'") == 20


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


@pytest.fixture
def role(admin_dsn: str, dsn: str) -> Iterator[str]:
    """A login role with no privileges, dropped afterwards."""
    name = f"jobq_role_{os.getpid()}_{next(_roles)}"
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    yield name
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_grant_dry_run_without_a_database_prints_the_statements() -> None:
    result = jobq("grant", "app", "--as", "producer", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        'GRANT USAGE ON SCHEMA "public" TO "app";',
        'GRANT EXECUTE ON FUNCTION "public"."jobq_enqueue" TO "app";',
        'GRANT EXECUTE ON FUNCTION "public"."jobq_enqueue_many" TO "app";',
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
