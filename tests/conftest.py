"""Fixtures shared by tests/python and tests/faults: a clean database for every test.

The server is the one `make test` started (``JOBQ_TEST_DSN``, a superuser DSN). Once per run a
template database is built by the migrations; each test gets its own copy and drops it after,
so no state survives from one test, or one run, to the next.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgq_client import grants
from pgq_client.migrate import migrate
from tests.helpers import MakeRole, create_role, drop_role, unique_name

FAULTS = Path(__file__).resolve().parent / "faults"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that restarts the server breaks every test running beside it: mark it serial
    (scripts/run-tests.sh runs those alone, after the parallel run). The fault suite runs
    worker processes for seconds in each test: all of it is slow (not in `make check`)."""
    for item in items:
        if "pg_restart" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.serial)
        if item.path.is_relative_to(FAULTS):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """pytest-xdist sends each report to the controller as UTF-8: a lone surrogate in captured
    output (tests of error texts log one) cannot cross, so it travels escaped."""
    report.sections = [
        (title, text.encode("utf-8", "backslashreplace").decode("utf-8"))
        for title, text in report.sections
    ]


@pytest.fixture(scope="session")
def admin_dsn() -> str:
    dsn = os.environ.get("JOBQ_TEST_DSN")
    if not dsn:
        pytest.exit(
            "JOBQ_TEST_DSN is not set: run the tests with `make test`, which starts a "
            "throwaway PostgreSQL, or point JOBQ_TEST_DSN at a superuser DSN",
            returncode=2,
        )
    return dsn


def _create_db(admin_dsn: str, name: str, template: str | None = None) -> str:
    """A copy of ``template`` (template1 by default). Most tests cost their server less than
    the copy of their database: FILE_COPY copies the files and makes a checkpoint, which a
    server without fsync (scripts/testdb.sh) makes at once; WAL_LOG, the default since
    PostgreSQL 15, also writes every block of the copy to the WAL, for replicas the test server
    does not have."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        strategy = " STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else ""
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}" + strategy).format(
                sql.Identifier(name), sql.Identifier(template or "template1")
            )
        )
    return make_conninfo(admin_dsn, dbname=name)


def _drop_db(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture(scope="session")
def template_db(admin_dsn: str) -> Iterator[str]:
    """Name of a database built by the migrations (schema public), used as a template."""
    name = unique_name("jobq_tpl")
    dsn = _create_db(admin_dsn, name)
    migrate(dsn)
    yield name
    _drop_db(admin_dsn, name)


@pytest.fixture
def dsn(admin_dsn: str, template_db: str) -> Iterator[str]:
    """A fresh database, migrated, for this test alone (dropped afterwards)."""
    name = unique_name("jobq_t")
    yield _create_db(admin_dsn, name, template=template_db)
    _drop_db(admin_dsn, name)


@pytest.fixture
def empty_dsn(admin_dsn: str) -> Iterator[str]:
    """A fresh database with nothing of jobq in it (for migration tests)."""
    name = unique_name("jobq_e")
    yield _create_db(admin_dsn, name)
    _drop_db(admin_dsn, name)


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """An autocommit connection to this test's database."""
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


@pytest.fixture
def make_role(admin_dsn: str) -> Iterator[MakeRole]:
    """Make roles for this test: ``make_role("worker", dsn=dsn)`` is a login role granted the
    worker level in that database (``jobq grant``); ``make_role()`` one with no privileges.
    Returns the role's name, unique per test process; every role made is dropped after the
    test, with whatever it owns or was granted, in whichever database.
    """
    made: list[str] = []

    def make(
        level: grants.Level | None = None,
        *,
        dsn: str | None = None,
        schema: str = "public",
        login: bool = True,
        prefix: str = "jobq_role",
    ) -> str:
        name = create_role(admin_dsn, level, dsn=dsn, schema=schema, login=login, prefix=prefix)
        made.append(name)
        return name

    try:
        yield make
    finally:
        for name in reversed(made):
            drop_role(admin_dsn, name)


@pytest.fixture
def role(make_role: MakeRole) -> str:
    """A login role with no privileges, dropped (with its grants) after the test."""
    return make_role()


@pytest.fixture
def pg_restart() -> Callable[..., None]:
    """Restart the server under test: ``pg_restart(mode="immediate")``.

    Only for the harness's own throwaway server (the one scripts/testdb.sh started).
    """
    pgdata = os.environ.get("JOBQ_TEST_PGDATA")
    pg_ctl = os.environ.get("JOBQ_TEST_PGCTL")
    owner = os.environ.get("JOBQ_TEST_PGOWNER")
    if not (pgdata and pg_ctl and owner):
        pytest.skip("restarts only the harness's own server (scripts/testdb.sh)")

    def restart(mode: str = "immediate") -> None:
        log = os.path.join(os.path.dirname(pgdata), "server.log")
        cmd = [pg_ctl, "-D", pgdata, "-l", log, "-m", mode, "-w", "-t", "60", "restart"]
        if os.geteuid() == 0 and owner != "root":
            cmd = ["runuser", "-u", owner, "--", *cmd]
        # pg_ctl restart keeps the options the server was started with (postmaster.opts).
        subprocess.run(
            cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120
        )

    return restart
