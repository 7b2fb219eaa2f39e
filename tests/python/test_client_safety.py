"""What another role of the database can do to jobq's client, and cannot: the migrate lock it
cannot take, the schema it cannot hijack unseen (`jobq migrate` refuses, `jobq doctor` fails),
grant and revoke by signature and past a failure, `--dry-run`'s refusal of control characters,
the warning about a password in `--dsn`, and the connections' search_path."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from jobq_cli import cli
from pgq_client import JobqError, Queue, grants
from pgq_client.migrate import MigrationError, migrate, render_dry_run

Conn = psycopg.Connection[Any]
_roles = itertools.count()


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def intruder(admin_dsn: str) -> Iterator[str]:
    """A login role of the cluster without any jobq grant (unique per process)."""
    name = f"jobq_intruder_{os.getpid()}_{next(_roles)}"
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as c:
            for db in c.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'jobq%%' AND datallowconn"
            ).fetchall():
                try:
                    with psycopg.connect(
                        make_conninfo(admin_dsn, dbname=db[0]), autocommit=True
                    ) as d:
                        d.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
                except psycopg.Error:
                    pass
            c.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


def _as(dsn: str, role: str) -> str:
    return make_conninfo(dsn, user=role)


# -- every connection jobq opens runs with search_path = pg_catalog, pg_temp ----------------------


def test_the_connections_jobq_opens_find_nothing_but_pg_catalog(dsn: str) -> None:
    with Queue(dsn) as q:
        q.enqueue("t")
        assert q._owned is not None
        path = q._owned.execute("SHOW search_path").fetchone()
        assert path == ("pg_catalog,pg_temp",)
        assert q.schema == "public"  # found once, on the DSN's own search_path
    # the DSN's own options still apply, the search_path among them overridden
    with_options = make_conninfo(dsn, options="-c application_name=x -c search_path=public")
    with Queue(with_options) as q:
        q.enqueue("t")
        assert q._owned is not None
        row = q._owned.execute(
            "SELECT current_setting('search_path'), current_setting('application_name')"
        ).fetchone()
        assert row == ("pg_catalog,pg_temp", "x")


def test_a_queue_without_schema_calls_the_schema_the_search_path_finds(empty_dsn: str) -> None:
    migrate(empty_dsn, schema="tenant")
    tenant = make_conninfo(empty_dsn, options="-c search_path=tenant")
    with Queue(tenant) as q:
        job_id = q.enqueue("t")
        assert q.schema == "tenant"
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        row = c.execute("SELECT job_type FROM tenant.jobq_jobs WHERE id = %s", (job_id,))
        assert row.fetchone() == ("t",)


def test_a_schema_not_found_is_asked_again(empty_dsn: str) -> None:
    tenant = make_conninfo(empty_dsn, options="-c search_path=tenant")
    with Queue(tenant) as q, pytest.raises(JobqError):
        q.enqueue("t")  # not installed yet
    migrate(empty_dsn, schema="tenant")
    with Queue(tenant) as q:
        q.enqueue("t")
        assert q.schema == "tenant"


def test_a_queue_used_only_with_conn_finds_the_schema_on_that_connection(
    empty_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queue() with neither DSN nor environment, used with conn= only: the schema comes from
    the caller's connection (no embedded server is started for it)."""
    migrate(empty_dsn, schema="tenant")
    for name in ("JOBQ_DSN", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with psycopg.connect(empty_dsn, options="-c search_path=tenant") as app_conn:
        q = Queue()
        job_id = q.enqueue("t", conn=app_conn)
        app_conn.commit()
        assert q.schema == "tenant"
        assert q._dsn is None  # never resolved: nothing embedded was asked for
    with psycopg.connect(empty_dsn) as c:
        row = c.execute("SELECT job_type FROM tenant.jobq_jobs WHERE id = %s", (job_id,))
        assert row.fetchone() == ("t",)


# -- the migrate lock: no other role can compute it ----------------------------------------------


def test_a_role_without_grants_cannot_hold_migrate_up(
    dsn: str, admin_dsn: str, intruder: str
) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
            sql.Identifier(str(conninfo_to_dict(dsn)["dbname"])), sql.Identifier(intruder)))
    with psycopg.connect(_as(dsn, intruder), autocommit=True) as evil:
        # every key computable from public names: the one jobq used to take, and the like
        for text in ("jobq.migrate:public", "jobq migrate public", "public"):
            evil.execute("SELECT pg_advisory_lock(hashtext(%s))", (text,))
        evil.execute("SELECT pg_advisory_lock(%s::regnamespace::oid::bigint)", ("public",))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            evil.execute("SELECT key FROM public.jobq__migrate_lock")
        done: list[object] = []
        t = threading.Thread(target=lambda: done.append(migrate(dsn)), daemon=True)
        t.start()
        t.join(60)
        assert done == [[]], "migrate waited on a lock another role holds"


def test_two_migrates_of_one_schema_still_take_turns(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as holder:
        key = holder.execute("SELECT key FROM jobq__migrate_lock").fetchone()
        assert key is not None
        holder.execute("SELECT pg_advisory_lock(%s)", key)
        done: list[object] = []
        t = threading.Thread(target=lambda: done.append(migrate(dsn)), daemon=True)
        t.start()
        t.join(2)
        assert done == [], "migrate ran while another run held the lock"
        holder.execute("SELECT pg_advisory_unlock_all()")
        t.join(60)
        assert done == [[]]


def test_a_lock_table_that_another_role_made_is_refused(
    empty_dsn: str, intruder: str
) -> None:
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE SCHEMA tenant AUTHORIZATION {}").format(
            sql.Identifier(intruder)))
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(intruder)))
        c.execute("CREATE TABLE tenant.jobq__migrate_lock (singleton boolean PRIMARY KEY "
                  "DEFAULT true, key bigint NOT NULL)")
        c.execute("INSERT INTO tenant.jobq__migrate_lock VALUES (true, 42)")
        c.execute("RESET ROLE")
    with pytest.raises(MigrationError, match="jobq__migrate_lock does not belong"):
        migrate(empty_dsn, schema="tenant", force=True)


# -- migrate refuses, doctor fails: a schema another role controls -------------------------------


def test_a_planted_overload_makes_migrate_refuse_and_doctor_fail(
    dsn: str, intruder: str
) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(intruder)))
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(intruder)))
        c.execute(
            "CREATE FUNCTION public.jobq__metrics_count(text, text[], text[], text, float8[]) "
            "RETURNS void LANGUAGE sql AS ''"
        )
        c.execute("RESET ROLE")
    refused = run("--dsn", dsn, "migrate")
    assert refused.exit_code == 1
    assert f"belongs to {intruder}" in refused.stderr
    assert f"role {intruder} may CREATE in schema public" in refused.stderr
    doctor = run("--dsn", dsn, "doctor")
    assert doctor.exit_code == 1
    assert "schema_control" in doctor.stdout
    # by signature: the overload is a function no file defines, beside jobq's own
    assert "public.jobq__metrics_count(text,text[],text[],text,double precision[]) no file" in (
        doctor.stdout
    )
    forced = run("--dsn", dsn, "migrate", "--force")
    assert forced.exit_code == 0, forced.output
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM {}").format(
            sql.Identifier(intruder)))
        c.execute("DROP FUNCTION public.jobq__metrics_count(text, text[], text[], text, float8[])")
    assert run("--dsn", dsn, "migrate").exit_code == 0
    assert run("--dsn", dsn, "doctor").exit_code == 0


def test_an_overload_owned_by_jobqs_owner_is_drift_by_signature(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE FUNCTION jobq_stats(x int) RETURNS int LANGUAGE sql AS 'SELECT 1'")
    doctor = run("--dsn", dsn, "doctor")
    assert doctor.exit_code == 1
    assert "public.jobq_stats(integer) no file of this jobq defines it" in doctor.stdout
    assert "jobq_stats its body differs" not in doctor.stdout  # jobq_stats() itself is intact


# -- grant and revoke: by signature, owned objects only, past a failure ---------------------------


def test_grant_and_revoke_never_name_a_planted_function(
    dsn: str, admin_dsn: str, intruder: str
) -> None:
    app = f"jobq_app_{os.getpid()}_{next(_roles)}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(app)))
        c.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(intruder)))
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(intruder)))
        c.execute("CREATE FUNCTION public.jobq_enqueue(text) RETURNS int LANGUAGE sql "
                  "AS 'SELECT 1'")
        c.execute("REVOKE EXECUTE ON FUNCTION public.jobq_enqueue(text) FROM PUBLIC")
        c.execute("RESET ROLE")
    try:
        done = grants.grant(dsn, app, "producer")
        assert not [s for s in done if "jobq_enqueue(text)" in s], done
        assert any("public.jobq_enqueue(text,jsonb," in s for s in done), done
        with psycopg.connect(dsn, autocommit=True) as c:
            planted = c.execute(
                "SELECT has_function_privilege(%s, 'public.jobq_enqueue(text)', 'EXECUTE')",
                (app,),
            ).fetchone()
            assert planted == (False,)
        undone = grants.revoke(dsn, app)
        assert not [s for s in undone if "jobq_enqueue(text)" in s], undone
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("DROP FUNCTION public.jobq_enqueue(text)")
            c.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(app)))
            c.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(app)))


def test_revoke_goes_on_past_a_failing_statement_and_reports_it(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = f"jobq_app_{os.getpid()}_{next(_roles)}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(app)))
    try:
        grants.grant(dsn, app, "admin")
        planned = grants.revoke_plan

        def with_a_failure(
            role: str, schema: str = "public", conn: Conn | None = None
        ) -> list[sql.Composed]:
            statements = planned(role, schema, conn)
            bogus = sql.SQL("REVOKE ALL ON FUNCTION public.jobq_gone(uuid) FROM {}").format(
                sql.Identifier(role))
            return [statements[0], sql.Composed([bogus]), *statements[1:]]

        monkeypatch.setattr(grants, "revoke_plan", with_a_failure)
        with pytest.raises(grants.RevokeIncomplete, match="jobq_gone"):
            grants.revoke(dsn, app)
        with psycopg.connect(dsn, autocommit=True) as c:
            left = c.execute(
                "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace "
                "AND has_function_privilege(%s, p.oid, 'EXECUTE')", (app,)
            ).fetchone()
            assert left == (0,), "the statements after the failing one were not run"
        result = CliRunner().invoke(cli, ["--dsn", dsn, "revoke", app])
        assert result.exit_code == 1 and "jobq_gone" in result.stderr
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(app)))
            c.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(app)))


# -- --dry-run and --dsn --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a\nDROP TABLE x; --", "a\rb", "tab\there", "a\x1bb", "a\u2028b"])
def test_dry_run_refuses_control_characters_in_the_schema(name: str) -> None:
    with pytest.raises(MigrationError, match="control characters"):
        render_dry_run(None, name)
    result = run("migrate", "--dry-run", "--schema", name)
    assert result.exit_code == 1
    assert "DROP TABLE" not in result.stdout


def test_a_password_in_dsn_is_warned_about_and_never_shown(dsn: str) -> None:
    with_password = make_conninfo(dsn, password="s3cret-pw")
    result = run("--dsn", with_password, "stats")
    assert result.exit_code == 0, result.output
    assert "the password in --dsn is visible to other users" in result.stderr
    assert "PGPASSFILE" in result.stderr and "JOBQ_DSN" in result.stderr
    assert "s3cret-pw" not in result.output
    quiet = run("--dsn", dsn, "stats")
    assert "password in --dsn" not in quiet.stderr
