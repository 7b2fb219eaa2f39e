"""Privileges: what `jobq migrate` leaves on the objects it creates, and `jobq grant`/`revoke`.

The objects jobq creates carry exactly the documented privileges (their owner's; levels come
from `jobq grant`), whatever ALTER DEFAULT PRIVILEGES the installing role has.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result
from psycopg import sql
from psycopg.conninfo import make_conninfo
from tests.helpers import MakeRole

from jobq_cli import cli
from pgq_client import InvalidArgument, PermissionDenied, Queue
from pgq_client.installer import privileges
from pgq_client.installer.drift import audit
from pgq_client.installer.files import function_files
from pgq_client.installer.privileges import declared_functions
from pgq_client.installer.runner import migrate
from pgq_client.installer.script import render_dry_run

ROOT = Path(__file__).resolve().parents[2]
Conn = psycopg.Connection[Any]


@pytest.fixture
def stranger(make_role: MakeRole) -> str:
    """A role of the cluster with no grant of its own (dropped, with its objects, after)."""
    return make_role(login=False, prefix="jobq_stranger")


def _default_privileges_for(conn: Conn, role: str, schema: str | None = None) -> None:
    """The installing role's default privileges give ``role`` everything, as a careless (or
    hostile) DBA might have set them: for all schemas, or for one."""
    where = sql.SQL("") if schema is None else sql.SQL("IN SCHEMA {} ").format(
        sql.Identifier(schema))
    r = sql.Identifier(role)
    for what in ("ALL ON TABLES", "ALL ON SEQUENCES", "EXECUTE ON FUNCTIONS", "USAGE ON TYPES"):
        conn.execute(sql.SQL("ALTER DEFAULT PRIVILEGES {}GRANT {} TO {} WITH GRANT OPTION").format(
            where, sql.SQL(what), r))
    if schema is None:
        conn.execute(sql.SQL("ALTER DEFAULT PRIVILEGES GRANT ALL ON SCHEMAS TO {}").format(r))


def _grants_to(conn: Conn, role: str, schema: str) -> list[tuple[str, str]]:
    """Every privilege ``role`` holds on an object of ``schema`` (and on the schema)."""
    return conn.execute(
        """
        SELECT c.relname::text, a.privilege_type
        FROM pg_class AS c CROSS JOIN LATERAL aclexplode(c.relacl) AS a
        WHERE c.relnamespace = %(s)s::regnamespace AND a.grantee = %(r)s::regrole
        UNION ALL
        SELECT p.oid::regprocedure::text, a.privilege_type
        FROM pg_proc AS p CROSS JOIN LATERAL aclexplode(p.proacl) AS a
        WHERE p.pronamespace = %(s)s::regnamespace AND a.grantee = %(r)s::regrole
        UNION ALL
        SELECT 'schema ' || n.nspname, a.privilege_type
        FROM pg_namespace AS n CROSS JOIN LATERAL aclexplode(n.nspacl) AS a
        WHERE n.nspname = %(s)s::text AND a.grantee = %(r)s::regrole
        ORDER BY 1, 2
        """,
        {"s": schema, "r": role},
    ).fetchall()


def test_default_privileges_of_the_installer_give_a_stranger_nothing(
    empty_dsn: str, stranger: str
) -> None:
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        _default_privileges_for(conn, stranger)
        _default_privileges_for(conn, stranger, "public")
        # the default privileges do work on what else the installer creates
        conn.execute("CREATE TABLE unrelated (x int)")
        assert _grants_to(conn, stranger, "public") != []
        conn.execute("DROP TABLE unrelated")

    migrate(empty_dsn)
    migrate(empty_dsn, schema="tenant")

    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        assert _grants_to(conn, stranger, "public") == []
        assert _grants_to(conn, stranger, "tenant") == []
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(stranger)))
        for statement, what in [
            ("SELECT * FROM public.jobq_jobs", "table jobq_jobs"),
            ("SELECT * FROM public.jobq_settings", "table jobq_settings"),
            ("SELECT * FROM public.jobq_migrations", "table jobq_migrations"),
            ("SELECT public.jobq_configure(max_payload_bytes => 100000000)",
             "function jobq_configure"),
            ("SELECT * FROM public.jobq_dequeue('w')", "function jobq_dequeue"),
            ("SELECT * FROM tenant.jobq_jobs", "schema tenant"),
            ("SELECT tenant.jobq_enqueue('x')", "schema tenant"),
        ]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match=what) as denied:
                conn.execute(statement)
            assert denied.value.sqlstate == "42501"
        conn.execute("RESET ROLE")
        # the owner (whose default privileges these are) keeps its own
        assert conn.execute("SELECT count(*) FROM tenant.jobq_jobs").fetchone() == (0,)


def test_a_second_migrate_keeps_what_jobq_grant_gave(empty_dsn: str, stranger: str) -> None:
    """Only objects created by the run lose what default privileges gave them."""
    migrate(empty_dsn)
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION jobq_stats() TO {}").format(
            sql.Identifier(stranger)))
        _default_privileges_for(conn, stranger)
    assert migrate(empty_dsn) == []
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        assert _grants_to(conn, stranger, "public") == [("jobq_stats()", "EXECUTE")]


def test_dry_run_script_strips_default_privileges_too(
    admin_dsn: str, empty_dsn: str, stranger: str, tmp_path: Any
) -> None:
    import subprocess

    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        _default_privileges_for(conn, stranger)
    script = tmp_path / "install.sql"
    script.write_text(render_dry_run(None, schema="tenant"))
    subprocess.run(["psql", "-X", "-q", "-d", empty_dsn, "-f", str(script)], check=True,
                   capture_output=True)
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM tenant.jobq_migrations").fetchone()[0] > 0  # type: ignore[index]
        assert _grants_to(conn, stranger, "tenant") == []


# -- jobq grant / jobq revoke ------------------------------------------------------------------


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _executable(conn: Conn, role: str, schema: str = "public") -> set[str]:
    rows = conn.execute(
        "SELECT p.proname::text FROM pg_proc AS p WHERE p.pronamespace = %s::regnamespace "
        "AND has_function_privilege(%s, p.oid, 'EXECUTE')",
        (schema, role),
    ).fetchall()
    return {r[0] for r in rows}


# The levels of docs/security.md, for the functions installed today.
EXPECTED = {
    "producer": {"jobq_enqueue", "jobq_enqueue_many", "jobq_enqueue_arrays", "jobq_job_status",
                 "jobq_await", "jobq_cancel", "jobq_add_dependencies", "jobq_dependencies",
                 "jobq_job_graph", "jobq_inserted"},
    "worker": {"jobq_enqueue", "jobq_enqueue_many", "jobq_enqueue_arrays", "jobq_inserted",
               "jobq_dequeue",
               "jobq_complete",
               "jobq_complete_many", "jobq_fail", "jobq_fail_many", "jobq_heartbeat",
               "jobq_release", "jobq_release_orphans", "jobq_tick", "jobq_job_status",
               "jobq_await", "jobq_cancel", "jobq_cancel_requested", "jobq_add_dependencies",
               "jobq_dependencies", "jobq_job_graph", "jobq_capped_groups",
               "jobq_complete_and_claim"},
    "monitor": {
        "jobq_stats", "jobq_health", "jobq_metrics", "jobq_queue_summary", "jobq_jobs_page",
        "jobq_workers_summary", "jobq_job_graph", "jobq_find_jobs", "jobq_limits",
        "jobq_limit_usage", "jobq_throughput", "jobq_names",
    },
}


def test_each_public_function_file_declares_its_levels_and_admin_gets_all() -> None:
    files = function_files()
    for f in files:
        if f.private:
            assert f.levels == (), f"{f.name} is private: granted to nobody"
        else:
            assert "admin" in f.levels, f"{f.name}.sql: `--! levels:` must name admin"
    assert set(declared_functions("admin")) == {f.name for f in files if not f.private}
    for level, names in EXPECTED.items():
        assert set(declared_functions(level)) == names, level  # type: ignore[arg-type]


@pytest.mark.parametrize("level", ["producer", "worker", "monitor", "admin"])
def test_each_level_gets_exactly_its_functions_and_revoke_takes_all_back(
    dsn: str, conn: Conn, role: str, level: str
) -> None:
    result = run("--dsn", dsn, "grant", role, "--as", level)
    assert result.exit_code == 0, result.output
    installed = {f.name for f in function_files() if not f.private}
    assert _executable(conn, role) == (installed if level == "admin" else EXPECTED[level])
    reads = conn.execute(
        "SELECT c.relname::text FROM pg_class AS c WHERE c.relnamespace = 'public'::regnamespace "
        "AND c.relkind = 'r' AND has_table_privilege(%s, c.oid, 'SELECT') ORDER BY 1", (role,)
    ).fetchall()
    every_table = [("jobq_audit",), ("jobq_awaits",), ("jobq_cancel_requests",),
                   ("jobq_index_rebuilds",), ("jobq_job_dependencies",), ("jobq_jobs",),
                   ("jobq_limit_keys",), ("jobq_limit_starts",), ("jobq_limits",),
                   ("jobq_metric_counters",), ("jobq_metric_deltas",), ("jobq_metric_labels",),
                   ("jobq_migrations",), ("jobq_paused_queues",), ("jobq_retention",),
                   ("jobq_schedules",), ("jobq_settings",), ("jobq_workers",)]
    assert reads == (every_table if level == "admin" else [])

    result = run("--dsn", dsn, "revoke", role)
    assert result.exit_code == 0, result.output
    assert _executable(conn, role) == set()
    assert _grants_to(conn, role, "public") == []
    call = "SELECT jobq_stats()" if level == "monitor" else "SELECT jobq_enqueue('x')"
    with (
        psycopg.connect(make_conninfo(dsn, user=role), autocommit=True) as c,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        c.execute(call)


def test_monitor_can_look_but_not_touch(dsn: str, role: str) -> None:
    assert run("--dsn", dsn, "grant", role, "--as", "monitor").exit_code == 0
    with Queue(dsn) as q:
        q.enqueue("t", {"secret": 1})
    with Queue(make_conninfo(dsn, user=role)) as q:
        assert q.stats()[0].jobs == 1
        assert len(q.health()) >= 5
        for denied in (lambda: q.enqueue("t"), lambda: q.dequeue("w"), q.dead_letters,
                       lambda: q.prune()):
            with pytest.raises(PermissionDenied):
                denied()


def test_grant_to_public_is_refused_in_any_case(dsn: str, conn: Conn) -> None:
    for spelling in ("public", "PUBLIC", "Public", " public "):
        result = run("--dsn", dsn, "grant", spelling, "--as", "worker")
        assert result.exit_code == 2, result.output
        assert "PUBLIC is every role" in result.output
        dry = run("grant", spelling, "--as", "worker", "--dry-run")
        assert dry.exit_code == 2, dry.output
    with pytest.raises(InvalidArgument):
        privileges.grant(dsn, "PUBLIC", "producer")
    assert _executable(conn, "public") == set()  # nothing for PUBLIC


def test_revoke_public_takes_back_what_an_older_jobq_granted_to_public(
    dsn: str, conn: Conn
) -> None:
    conn.execute("GRANT EXECUTE ON FUNCTION jobq_dequeue, jobq_enqueue TO PUBLIC")
    conn.execute("GRANT SELECT ON jobq_jobs TO PUBLIC")
    assert run("--dsn", dsn, "revoke", "PUBLIC").exit_code == 0
    assert _executable(conn, "public") == set()
    assert conn.execute(
        "SELECT has_table_privilege('public', 'jobq_jobs', 'SELECT')").fetchone() == (False,)


def test_revoke_takes_schema_usage_back_only_where_jobq_lives_alone(
    empty_dsn: str, stranger: str
) -> None:
    migrate(empty_dsn, schema="alone")
    migrate(empty_dsn, schema="shared")
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE shared.app_table (x int)")
        for schema in ("alone", "shared"):
            privileges.grant(empty_dsn, stranger, "worker", schema)
            privileges.revoke(empty_dsn, stranger, schema)
            assert _executable(conn, stranger, schema) == set()
        usage = conn.execute(
            "SELECT n.nspname::text, has_schema_privilege(%s, n.oid, 'USAGE') FROM pg_namespace n "
            "WHERE n.nspname IN ('alone', 'shared') ORDER BY 1", (stranger,)).fetchall()
        assert usage == [("alone", False), ("shared", True)]


def test_revoke_dry_run_prints_the_statements(dsn: str, role: str) -> None:
    offline = run("revoke", role, "--schema", "tenant", "--dry-run")
    assert offline.exit_code == 0, offline.output
    lines = offline.stdout.splitlines()
    # functions by signature, as the files declare them
    assert f'REVOKE ALL ON FUNCTION "tenant".jobq_dequeue(text, text[], integer, interval, ' \
        f'text[]) FROM "{role}";' in lines
    assert lines[-1] == f'REVOKE USAGE ON SCHEMA "tenant" FROM "{role}";'
    online = run("--dsn", dsn, "revoke", role, "--dry-run")
    assert online.exit_code == 0, online.output
    tables = ('"public"."jobq_all_jobs", "public"."jobq_audit", "public"."jobq_audit_id_seq", '
              '"public"."jobq_awaits", '
              '"public"."jobq_cancel_requests", "public"."jobq_index_rebuilds", '
              '"public"."jobq_job_dependencies", '
              '"public"."jobq_jobs", "public"."jobq_jobs_history", "public"."jobq_limit_keys", '
              '"public"."jobq_limit_starts", "public"."jobq_limits", '
              '"public"."jobq_metric_counters", "public"."jobq_metric_deltas", '
              '"public"."jobq_metric_labels", '
              '"public"."jobq_migrations", "public"."jobq_paused_queues", '
              '"public"."jobq_retention", '
              '"public"."jobq_schedules", "public"."jobq_settings", "public"."jobq_workers"')
    assert f'REVOKE ALL ON TABLE {tables} FROM "{role}";' in online.stdout
    # nothing but jobq in this database's schema public: its USAGE is taken back too
    assert online.stdout.splitlines()[-1] == f'REVOKE USAGE ON SCHEMA "public" FROM "{role}";'


def test_grant_in_a_schema_gives_only_installed_functions(dsn: str, conn: Conn, role: str) -> None:
    """A level gets what its files declare and the schema has (an older install lacks some)."""
    conn.execute("DROP FUNCTION jobq_health")
    result = run("--dsn", dsn, "grant", role, "--as", "monitor", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "jobq_stats" in result.stdout and "jobq_health" not in result.stdout


# -- who else controls the schema: jobq migrate warns, jobq doctor reports -----------------------


def _warnings(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("jobq: warning: ")]


def test_migrate_and_doctor_warn_when_the_schema_belongs_to_another_role(
    empty_dsn: str, stranger: str
) -> None:
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA tenant AUTHORIZATION {}").format(
            sql.Identifier(stranger)))
    refused = run("--dsn", empty_dsn, "migrate", "--schema", "tenant")
    assert refused.exit_code == 1, refused.output
    assert f"role {stranger} may CREATE in schema tenant" in refused.stderr
    assert "--force" in refused.stderr
    result = run("--dsn", empty_dsn, "migrate", "--schema", "tenant", "--force")
    assert result.exit_code == 0, result.output
    warnings = _warnings(result)
    assert any(f"schema tenant belongs to {stranger}" in w for w in warnings), result.stderr
    assert any("may CREATE in schema tenant" in w and stranger in w for w in warnings)

    doctor = run("--dsn", empty_dsn, "doctor", "--schema", "tenant")
    assert doctor.exit_code == 1, doctor.output
    lines = doctor.stdout.splitlines()
    assert any(line.startswith("schema_owner") and "warning" in line for line in lines)
    assert any(line.startswith("schema_create") and "warning" in line for line in lines)
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute("DROP SCHEMA tenant CASCADE")  # before the stranger who owns it is dropped


def test_migrate_and_doctor_warn_when_others_may_create_in_the_schema(
    empty_dsn: str, stranger: str
) -> None:
    migrate(empty_dsn)
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")  # PostgreSQL 13/14's default
    refused = run("--dsn", empty_dsn, "migrate")
    assert refused.exit_code == 1, refused.output
    assert "every role (PUBLIC) may CREATE in schema public" in refused.stderr
    result = run("--dsn", empty_dsn, "migrate", "--force")
    assert result.exit_code == 0, result.output
    assert [w for w in _warnings(result) if "every role (PUBLIC) may CREATE in schema public" in w]
    assert run("--dsn", empty_dsn, "doctor").exit_code == 1

    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(
            sql.Identifier(stranger)))
    assert migrate_audit(empty_dsn) == [
        f"roles other than jobq's owner may CREATE in schema public: {stranger}"
    ]
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM {}").format(
            sql.Identifier(stranger)))
    quiet = run("--dsn", empty_dsn, "migrate")
    assert quiet.exit_code == 0 and _warnings(quiet) == [], quiet.stderr
    assert run("--dsn", empty_dsn, "doctor").exit_code == 0


def migrate_audit(dsn: str) -> list[str]:
    return [w.split(": anyone who controls")[0] for w in audit(dsn)]


# -- jobq doctor: the installed functions are those of the files --------------------------------


def _doctor_findings(dsn: str) -> tuple[int, list[str]]:
    result = run("--dsn", dsn, "doctor")
    return result.exit_code, [
        line for line in result.stdout.splitlines()
        if line.startswith("function_definition") and "warning" in line
    ]


def test_doctor_finds_a_function_replaced_by_hand_without_security_definer(
    dsn: str, conn: Conn
) -> None:
    assert _doctor_findings(dsn) == (0, [])
    body = conn.execute("SELECT prosrc FROM pg_proc WHERE proname = 'jobq_stats'").fetchone()[0]  # type: ignore[index]
    conn.execute(
        "CREATE OR REPLACE FUNCTION jobq_stats() RETURNS TABLE (queue text, job_type text, "
        "status text, jobs bigint, oldest_available_at timestamptz) LANGUAGE sql STABLE AS "
        + sql.quote(body)
    )
    code, findings = _doctor_findings(dsn)
    assert code == 1
    assert len(findings) == 2, findings
    assert "jobq_stats is not SECURITY DEFINER, as its file says it is" in findings[0] + findings[1]
    assert any("jobq_stats its settings differ" in f for f in findings)


def test_doctor_finds_an_edited_body_a_half_applied_upgrade_and_a_stranger_function(
    dsn: str, conn: Conn
) -> None:
    src = conn.execute("SELECT prosrc FROM pg_proc WHERE proname = 'jobq_prune'").fetchone()[0]  # type: ignore[index]
    conn.execute(
        "UPDATE pg_proc SET prosrc = %s WHERE proname = 'jobq_prune'",
        (src.replace("interval '1000 years'", "interval '1 second'"),),
    )
    conn.execute(
        "UPDATE jobq_migrations SET checksum = 'old' WHERE version = 'functions/jobq_fail'"
    )
    conn.execute("CREATE FUNCTION jobq_backdoor() RETURNS int LANGUAGE sql AS 'SELECT 1'")
    conn.execute("DROP FUNCTION jobq_release")
    code, findings = _doctor_findings(dsn)
    assert code == 1
    text = "\n".join(findings)
    assert "jobq_prune its body differs from sql/functions/jobq_prune.sql" in text
    assert "jobq_fail sql/functions/jobq_fail.sql is not applied in its current version" in text
    assert "public.jobq_backdoor() no file of this jobq defines it" in text
    assert "jobq_release not installed as jobq_release(uuid[], text) " \
        "(sql/functions/jobq_release.sql)" in text
    assert len(findings) == 4, findings


# -- the monitor level sees no payload, result or error text ----------------------------------

SECRET = "secret-7f3a"
# Every function of the monitor level, called as a dashboard or an exporter would.
MONITOR_CALLS = {
    "jobq_stats": ["SELECT s::text FROM jobq_stats() AS s"],
    "jobq_health": ["SELECT h::text FROM jobq_health() AS h"],
    "jobq_metrics": ["SELECT m::text FROM jobq_metrics() AS m"],
    "jobq_queue_summary": ["SELECT q::text FROM jobq_queue_summary() AS q"],
    "jobq_workers_summary": ["SELECT w::text FROM jobq_workers_summary() AS w"],
    "jobq_find_jobs": ["SELECT f::text FROM jobq_find_jobs() AS f"],
    "jobq_limits": ["SELECT l::text FROM jobq_limits() AS l"],
    "jobq_limit_usage": ["SELECT u::text FROM jobq_limit_usage() AS u"],
    "jobq_throughput": ["SELECT t::text FROM jobq_throughput() AS t"],
    "jobq_names": ["SELECT n::text FROM jobq_names() AS n"],
    "jobq_jobs_page": [
        f"SELECT p::text FROM jobq_jobs_page('{status}') AS p"
        for status in ("pending", "processing", "succeeded", "failed", "dead_letter", "cancelled")
    ],
    "jobq_job_graph": [
        "SELECT g::text FROM jobq_jobs_page('succeeded') AS p, jobq_job_graph(p.id) AS g"
    ],
}


def _secret_jobs(dsn: str) -> dict[str, Any]:
    """One job in each state that can carry a secret: payload, result, last error, errors."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT jobq_configure(metrics => true)")
        ids: dict[str, Any] = {}
        for name in ("dead", "done", "retry", "pending"):
            row = c.execute(
                "SELECT jobq_enqueue('mon', jsonb_build_object('k', %s::text),"
                " max_attempts => %s)",
                (SECRET, 1 if name == "dead" else 5),
            ).fetchone()
            assert row is not None
            ids[name] = row[0]
        claimed = c.execute(
            "SELECT id FROM jobq_dequeue('w', job_types => '{mon}', batch_size => 3)"
        ).fetchall()
        assert {r[0] for r in claimed} == {ids["dead"], ids["done"], ids["retry"]}
        c.execute("SELECT jobq_fail(%s, 'w', %s)", (ids["dead"], f"{SECRET} error"))
        c.execute("SELECT jobq_fail(%s, 'w', %s)", (ids["retry"], f"{SECRET} error"))
        c.execute(
            "SELECT jobq_complete(%s, 'w', result => jsonb_build_object('r', %s::text))",
            (ids["done"], SECRET),
        )
    return ids


def test_a_monitor_gets_no_payload_result_or_error_from_any_function_it_may_call(
    dsn: str, role: str
) -> None:
    assert set(MONITOR_CALLS) == set(declared_functions("monitor")), "a call for each"
    ids = _secret_jobs(dsn)
    assert run("--dsn", dsn, "grant", role, "--as", "monitor").exit_code == 0
    with psycopg.connect(make_conninfo(dsn, user=role), autocommit=True) as c:
        seen = 0
        for name, calls in MONITOR_CALLS.items():
            for call in calls:
                rows = c.execute(call).fetchall()
                seen += len(rows)
                assert not [r for r in rows if SECRET in r[0]], (name, call)
        assert seen > 0
        page = c.execute(
            "SELECT id, status, last_error FROM jobq_jobs_page('dead_letter')"
        ).fetchall()
        assert page == [(ids["dead"], "dead_letter", None)], "listed, without its error"
        for denied in (
            "SELECT * FROM jobq_job_status(ARRAY[%s]::uuid[])",
            "SELECT * FROM jobq_get_job(%s)",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(denied, (ids["dead"],))
    with Queue(make_conninfo(dsn, user=role)) as q, pytest.raises(PermissionDenied):
        q.status([ids["done"]])


def test_the_level_that_sees_errors_is_the_role_set_by_set_role(dsn: str, role: str) -> None:
    """Inside jobq_jobs_page (SECURITY DEFINER) current_user is jobq's owner: the error text
    goes to the role the session acts as, the one SET ROLE chose, else the login role."""
    ids = _secret_jobs(dsn)
    assert run("--dsn", dsn, "grant", role, "--as", "monitor").exit_code == 0
    query = "SELECT last_error FROM jobq_jobs_page('dead_letter') WHERE id = %s"
    with psycopg.connect(dsn, autocommit=True) as c:  # a superuser login
        assert c.execute(query, (ids["dead"],)).fetchone() == (f"{SECRET} error",)
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        assert c.execute(query, (ids["dead"],)).fetchone() == (None,)
        c.execute("RESET ROLE")
        assert c.execute(query, (ids["dead"],)).fetchone() == (f"{SECRET} error",)


def test_the_dashboard_shows_a_monitor_no_payload_result_or_error(
    admin_dsn: str, dsn: str, role: str
) -> None:
    from starlette.testclient import TestClient

    from jobq_web import create_app

    ids = _secret_jobs(dsn)
    assert run("--dsn", dsn, "grant", role, "--as", "monitor").exit_code == 0
    pages = ["/", "/jobs", "/dead-letters"] + [
        f"/jobs?status={s}" for s in ("processing", "succeeded", "failed", "cancelled")
    ] + [f"/jobs/{i}" for i in ids.values()]
    with TestClient(create_app(make_conninfo(dsn, user=role)), base_url="http://127.0.0.1") as c:
        listed = c.get("/dead-letters").text
        assert str(ids["dead"]) in listed, "the dead letter is listed"
        for path in pages:
            assert SECRET not in c.get(path).text, path
    with TestClient(create_app(dsn), base_url="http://127.0.0.1") as c:
        assert SECRET in c.get("/dead-letters").text, "an admin sees the error text"
