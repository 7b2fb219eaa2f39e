"""Fixtures shared by tests/python and tests/faults: a clean database for every test.

The server is the one `make test` started (``JOBQ_TEST_DSN``, a superuser DSN). Once per run a
template database is built by the migrations; each test gets a database that is exactly that
template: a copy, or the database of an earlier test of the same process brought back to it
(see ``_Recycler``), so no state survives from one test, or one run, to the next.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "long(seconds): runs for many seconds alone (about `seconds` in a `make test` run);"
        " started first, the longest first (tests/conftest.py)",
    )
    config.pluginmanager.register(_StartLongTestsFirst(config), "jobq-start-long-tests-first")


LONG_SECONDS = 30.0  # a test marked ``long`` without its seconds


def _long_seconds(item: pytest.Item) -> float:
    marker = item.get_closest_marker("long")
    return float(marker.args[0]) if marker and marker.args else LONG_SECONDS


class _StartLongTestsFirst:
    """Tests marked ``long`` start the workers' runs, so that no worker is left running one
    alone at the end. pytest-xdist (``--dist worksteal``) hands the workers contiguous shares
    of the collection, each run in order (an idle worker takes the tail of the longest queue):
    the long tests go to the heads of the shares, the longest first, each to the share whose
    long tests add up to the fewest seconds so far; the rest keep their order (and their
    modules' fixtures their sharing)."""

    def __init__(self, config: pytest.Config) -> None:
        workerinput = getattr(config, "workerinput", None)
        self.workers = int(workerinput["workercount"]) if workerinput else 1

    @pytest.hookimpl(trylast=True)  # after -m and -k have deselected
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        long = sorted(
            (i for i in items if i.get_closest_marker("long")), key=lambda i: -_long_seconds(i)
        )
        rest = [i for i in items if not i.get_closest_marker("long")]
        heads: list[list[pytest.Item]] = [[] for _ in range(self.workers)]
        seconds = [0.0] * self.workers
        for item in long:
            share = seconds.index(min(seconds))
            heads[share].append(item)
            seconds[share] += _long_seconds(item)
        ordered: list[pytest.Item] = []
        left = len(items)
        for share in range(self.workers):  # the sizes pytest-xdist's first hand-out has
            size = left // (self.workers - share)
            left -= size
            taken = max(0, size - len(heads[share]))
            ordered += heads[share] + rest[:taken]
            rest = rest[taken:]
        items[:] = ordered + rest


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


# What a test may have changed in its database besides rows (scripts/pgtap-psql.sh reads it too).
_FINGERPRINT = (Path(__file__).resolve().parent / "fingerprint.sql").read_text()


# The tables of the template and the rows of those that have any (the migrations' records,
# the settings row), to put back after emptying them.
_TABLES = """
SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_(toast_)?temp_' AND c.relispartition IS NOT TRUE
ORDER BY 1
"""


# End every other session of this database; count those left and the prepared transactions
# (which no session ends).
_OTHERS = """
SELECT count(*) FILTER (WHERE NOT pg_catalog.pg_terminate_backend(pid))
       + (SELECT count(*) FROM pg_catalog.pg_prepared_xacts
          WHERE database = pg_catalog.current_database())
       + count(*)
FROM pg_catalog.pg_stat_activity
WHERE datname = pg_catalog.current_database() AND pid <> pg_catalog.pg_backend_pid()
"""


class _Recycler:
    """Gives each test a database equal to the template, copying the template only when the
    database of the previous test of this process cannot be brought back to it.

    Copying a database costs the server about 0.3 s of CPU, more than most tests; bringing one
    back costs a few statements: end its other sessions (and with them their locks, LISTENs,
    temporary objects), check that its catalogue is the template's (``_FINGERPRINT``: any
    object made, dropped, altered, granted or commented marks the database as changed, and it
    is dropped instead), empty every table the test wrote and put the template's rows back,
    drop the planner's statistics and reset the statistics counters. ``JOBQ_TEST_RECYCLE=0`` copies
    the template for every test.
    """

    def __init__(self, admin_dsn: str, template: str) -> None:
        self.admin_dsn = admin_dsn
        self.template = template
        self.spare: str | None = None
        self.enabled = os.environ.get("JOBQ_TEST_RECYCLE", "1") != "0"
        with psycopg.connect(make_conninfo(admin_dsn, dbname=template), autocommit=True) as c:
            row = c.execute(_FINGERPRINT).fetchone()
            assert row is not None
            self.fingerprint = row[0]
            self.tables = [t for (t,) in c.execute(_TABLES).fetchall()]
            self.rows: dict[str, str] = {}
            for table in self.tables:
                data = c.execute(
                    sql.SQL("SELECT pg_catalog.json_agg(t) FROM {} AS t").format(
                        sql.SQL(table)
                    )
                ).fetchone()
                if data is not None and data[0] is not None:
                    self.rows[table] = json.dumps(data[0])
            # What tells that a test wrote a table: its size (the tables a fresh install leaves
            # empty have no page; a partitioned table's is that of its partitions), and for
            # those with rows, what the rows are.
            self.state_query = sql.SQL("SELECT {}").format(
                sql.SQL(", ").join(
                    sql.SQL(
                        "(SELECT pg_catalog.md5(pg_catalog.json_agg(t)::pg_catalog.text)"
                        " FROM {} AS t)"
                        if table in self.rows
                        else "pg_catalog.pg_relation_size({0}::pg_catalog.regclass)"
                        " + (SELECT coalesce(pg_catalog.sum("
                        "pg_catalog.pg_relation_size(p.relid)), 0)::bigint"
                        " FROM pg_catalog.pg_partition_tree({0}::pg_catalog.regclass) AS p)"
                    ).format(sql.SQL(table) if table in self.rows else sql.Literal(table))
                    for table in self.tables
                )
            )
            state = c.execute(self.state_query).fetchone()
            assert state is not None
            self.state = tuple(state)
            paged = [t for t, size in zip(self.tables, state, strict=True)
                     if t not in self.rows and size != 0]
            assert not paged, f"empty tables of {template} with pages (VACUUM it): {paged}"

    def take(self) -> str:
        """The name of a database equal to the template, for one test."""
        if self.spare is not None:
            name, self.spare = self.spare, None
            return name
        name = unique_name("jobq_t")
        _create_db(self.admin_dsn, name, template=self.template)
        return name

    def give_back(self, name: str) -> None:
        """After the test: keep ``name`` for the next test if it can be brought back to the
        template, else drop it."""
        if self.enabled and self.spare is None and self._recycle(name):
            self.spare = name
        else:
            _drop_db(self.admin_dsn, name)

    def _recycle(self, name: str) -> bool:
        try:
            with psycopg.connect(make_conninfo(self.admin_dsn, dbname=name)) as c:
                c.autocommit = True
                deadline = time.monotonic() + 5
                while True:
                    busy = c.execute(_OTHERS).fetchone()
                    if busy is not None and busy[0] == 0:
                        break
                    if time.monotonic() > deadline:
                        return False
                    time.sleep(0.01)
                row = c.execute(_FINGERPRINT).fetchone()
                if row is None or row[0] != self.fingerprint:
                    return False
                state = c.execute(self.state_query).fetchone()
                if state is None:
                    return False
                changed = [
                    t
                    for t, now, then in zip(self.tables, state, self.state, strict=True)
                    if now != then
                ]
                with c.transaction():
                    if changed:
                        c.execute("SET LOCAL lock_timeout = '5s'")
                        c.execute(
                            sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(
                                sql.SQL(", ").join(sql.SQL(t) for t in changed)
                            )
                        )
                    for table in changed:
                        if table in self.rows:
                            c.execute(
                                sql.SQL(
                                    "INSERT INTO {0} OVERRIDING SYSTEM VALUE SELECT * FROM"
                                    " pg_catalog.json_populate_recordset(NULL::{0}, %s::json)"
                                ).format(sql.SQL(table)),
                                [self.rows[table]],
                            )
                    c.execute("DELETE FROM pg_catalog.pg_statistic WHERE starelid >= 16384")
                # An ended session reports its counts as it exits, which may be after it left
                # pg_stat_activity: reset until no function counts are left.
                for _ in range(50):
                    c.execute("SELECT pg_catalog.pg_stat_reset()")
                    c.execute("SELECT pg_catalog.pg_stat_clear_snapshot()")
                    left = c.execute(
                        "SELECT count(*) FROM pg_catalog.pg_stat_user_functions WHERE calls > 0"
                    ).fetchone()
                    if left == (0,):
                        break
                    time.sleep(0.01)
                # A TRUNCATE gives the tables new files, which the fingerprint leaves out.
                return True
        except psycopg.Error:
            return False


@pytest.fixture(scope="session")
def recycler(admin_dsn: str, template_db: str) -> Iterator[_Recycler]:
    r = _Recycler(admin_dsn, template_db)
    yield r
    if r.spare is not None:
        _drop_db(admin_dsn, r.spare)


# The roles a test made with ``make_role`` that are still to be dropped.
_ROLES = pytest.StashKey[list[str]]()


@pytest.fixture
def dsn(request: pytest.FixtureRequest, admin_dsn: str, recycler: _Recycler) -> Iterator[str]:
    """A database equal to a fresh migrated one, for this test alone."""
    name = recycler.take()
    yield make_conninfo(admin_dsn, dbname=name)
    # The test's roles hold grants in this database: dropped first (whichever fixture pytest
    # ends first), the database's ACLs are the template's again and it is recycled, not copied.
    made = request.node.stash.get(_ROLES, [])
    while made:
        drop_role(admin_dsn, made.pop())
    recycler.give_back(name)


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
def make_role(request: pytest.FixtureRequest, admin_dsn: str) -> Iterator[MakeRole]:
    """Make roles for this test: ``make_role("worker", dsn=dsn)`` is a login role granted the
    worker level in that database (``jobq grant``); ``make_role()`` one with no privileges.
    Returns the role's name, unique per test process; every role made is dropped after the
    test, with whatever it owns or was granted, in whichever database.
    """
    made = request.node.stash.setdefault(_ROLES, [])

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
        while made:
            drop_role(admin_dsn, made.pop())


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
