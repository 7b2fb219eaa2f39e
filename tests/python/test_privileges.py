"""Privileges: what `jobq migrate` leaves on the objects it creates, and `jobq grant`/`revoke`.

The objects jobq creates carry exactly the contract's privileges (their owner's; levels come
from `jobq grant`), whatever ALTER DEFAULT PRIVILEGES the installing role has.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from pgq_client.migrate import migrate, render_dry_run

Conn = psycopg.Connection[Any]
_roles = itertools.count()


@pytest.fixture
def stranger(admin_dsn: str, empty_dsn: str) -> Iterator[str]:
    """A role of the cluster with no grant of its own (dropped, with its objects, after)."""
    role = f"jobq_stranger_{os.getpid()}_{next(_roles)}"
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
    try:
        yield role
    finally:
        with psycopg.connect(empty_dsn, autocommit=True) as c:
            c.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        with psycopg.connect(admin_dsn, autocommit=True) as c:
            c.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


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
