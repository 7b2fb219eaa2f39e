"""Breaking changes: a marked migration, and clients that refuse a schema they cannot work with.

A migration whose first line is ``--! breaking-change`` is recorded with ``breaking = true``,
and the runner names the latest one in the comment of ``jobq_migrations`` (the catalogue, which
every role may read). A Queue or Worker whose package does not have that migration refuses the
schema, once, before its first statement. The future migration here is a fake one, added to a
copy of the shipped migrations: the client under test (this package) does not have it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool
from tests.helpers import MakeRole

from pgq_client import Queue, Worker
from pgq_client.errors import IncompatibleSchema
from pgq_client.installer.compat import check_compatible, latest_breaking_change
from pgq_client.installer.files import MigrationError, available_migrations
from pgq_client.installer.runner import migrate
from pgq_client.installer.script import render_dry_run

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = ROOT / "sql" / "migrations"
FUTURE = "0099_jobq_future"

BREAKING = f"""--! breaking-change: workers of older jobq releases cannot run against this
-- {FUTURE}: a fake migration from a future release.
CREATE TABLE jobq_future (x integer);
COMMENT ON TABLE jobq_future IS 'Test.';
"""
ADDITIVE = """-- 0098_jobq_additive: a fake migration that older clients can live with.
CREATE TABLE jobq_additive (x integer);
"""


def with_migration(tmp_path: Path, version: str, text: str) -> Path:
    migrations = tmp_path / "migrations"
    if not migrations.exists():
        shutil.copytree(MIGRATIONS, migrations)
    (migrations / f"{version}.sql").write_text(text)
    return migrations


def jobs(dsn: str) -> int:
    with psycopg.connect(dsn) as c:
        row = c.execute("SELECT count(*) FROM jobq_jobs").fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def future(dsn: str, tmp_path: Path) -> str:
    """``dsn`` migrated by a future jobq whose latest migration is a breaking change."""
    assert migrate(dsn, migrations_dir=with_migration(tmp_path, FUTURE, BREAKING)) == [FUTURE]
    return dsn


# -- the runner ---------------------------------------------------------------------------------


def test_a_marked_migration_is_recorded_as_breaking_and_named_where_every_role_can_read(
    future: str,
) -> None:
    with psycopg.connect(future) as c:
        breaking = c.execute(
            "SELECT version FROM jobq_migrations WHERE breaking ORDER BY version"
        ).fetchall()
        comment = c.execute("SELECT obj_description('jobq_migrations'::regclass)").fetchone()
        assert latest_breaking_change(c, "public") == FUTURE
        assert latest_breaking_change(c, None) == FUTURE, "found on the search_path too"
    assert breaking == [(FUTURE,)]
    assert comment is not None
    assert f"\nLatest breaking change: {FUTURE}. Clients of a jobq" in str(comment[0])


def test_no_breaking_change_no_line(dsn: str, tmp_path: Path) -> None:
    assert migrate(dsn, migrations_dir=with_migration(tmp_path, "0098_jobq_additive", ADDITIVE))
    with psycopg.connect(dsn) as c:
        assert latest_breaking_change(c, "public") is None
        assert c.execute("SELECT count(*) FROM jobq_migrations WHERE breaking").fetchone() == (0,)
    assert [m.breaking for m in available_migrations()] == [False] * len(available_migrations())


def test_the_comment_is_written_again_from_the_records_by_each_migrate(
    future: str, tmp_path: Path
) -> None:
    with psycopg.connect(future, autocommit=True) as c:
        c.execute("COMMENT ON TABLE jobq_migrations IS 'edited by hand'")
    migrate(future, migrations_dir=with_migration(tmp_path, FUTURE, BREAKING))
    with psycopg.connect(future) as c:
        assert latest_breaking_change(c, "public") == FUTURE


def test_the_dry_run_of_a_marked_migration_records_it_and_names_it(tmp_path: Path) -> None:
    script = render_dry_run(None, migrations_dir=with_migration(tmp_path, FUTURE, BREAKING))
    record = '"public".jobq_migrations (version, checksum, breaking) VALUES'
    assert f"{record} ('{FUTURE}', " in script
    after = script[script.index(f"{record} ('{FUTURE}', ") :]
    assert "Latest breaking change: " in after, "the comment is written again after it"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-- first\n--! breaking-change\nSELECT 1;\n", "must be its first line"),
        ("--! breaking: yes\nSELECT 1;\n", "unknown directive `--! breaking`"),
    ],
)
def test_a_misplaced_or_unknown_migration_directive_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    migrations = with_migration(tmp_path, "0098_jobq_odd", text)
    with pytest.raises(MigrationError, match=re.escape(message)):
        available_migrations(migrations)


# -- the clients --------------------------------------------------------------------------------


def test_a_queue_refuses_a_schema_with_a_breaking_change_it_does_not_have(future: str) -> None:
    with Queue(future) as q, pytest.raises(IncompatibleSchema) as refused:
        q.enqueue("t")
    message = str(refused.value)
    assert f"its migration {FUTURE} is a breaking change" in message
    assert "Upgrade the pgq-client package" in message
    assert jobs(future) == 0, "refused before its first statement"


def test_every_way_of_giving_a_queue_a_database_is_checked(future: str) -> None:
    with psycopg.connect(future, autocommit=True) as conn:
        with pytest.raises(IncompatibleSchema):
            Queue(conn).stats()
        with pytest.raises(IncompatibleSchema):
            Queue(future).enqueue("t", conn=conn)
    with (
        ConnectionPool(future, min_size=1, max_size=1, open=True) as pool,
        pytest.raises(IncompatibleSchema),
    ):
        Queue(pool).stats()
    with pytest.raises(IncompatibleSchema):
        Queue(future, schema="public").stats()
    assert jobs(future) == 0


def test_a_worker_refuses_it_at_start_and_claims_nothing(future: str) -> None:
    with psycopg.connect(future, autocommit=True) as c:
        c.execute("SELECT jobq_enqueue(job_type => 't')")
    ran: list[object] = []
    with pytest.raises(IncompatibleSchema, match=FUTURE):
        Worker(future, {"t": ran.append}).run(burst=True)
    assert ran == []
    with psycopg.connect(future) as c:
        assert c.execute("SELECT status FROM jobq_jobs").fetchall() == [("pending",)]


def test_a_producer_role_without_any_table_privilege_sees_it_too(
    dsn: str, tmp_path: Path, make_role: MakeRole
) -> None:
    name = make_role("producer", dsn=dsn)
    as_producer = make_conninfo(dsn, user=name)
    with Queue(as_producer) as q:
        assert q.enqueue("t") is not None, "no breaking change: the producer works"
    migrate(dsn, migrations_dir=with_migration(tmp_path, FUTURE, BREAKING))
    with Queue(as_producer) as q, pytest.raises(IncompatibleSchema, match=FUTURE):
        q.enqueue("t")
    assert jobs(dsn) == 1


def test_a_client_that_has_the_migration_works_and_an_additive_one_is_not_refused(
    dsn: str, tmp_path: Path
) -> None:
    migrations = with_migration(tmp_path, "0098_jobq_additive", ADDITIVE)
    migrate(dsn, migrations_dir=migrations)
    with Queue(dsn) as q:
        assert q.enqueue("t") is not None, "an unmarked newer migration: older clients work"
    migrate(dsn, migrations_dir=with_migration(tmp_path, FUTURE, BREAKING))
    known = [m.version for m in available_migrations(migrations)]
    with psycopg.connect(dsn) as c:
        check_compatible(c, "public", known=known)  # the future client has it: no error
        with pytest.raises(IncompatibleSchema):
            check_compatible(c, "public", known=[v for v in known if v != FUTURE])


def test_the_check_is_made_once_per_queue_not_per_call(dsn: str, tmp_path: Path) -> None:
    with Queue(dsn) as q:
        q.enqueue("t")
        # Marked after the Queue checked: it keeps working (no catalogue query per call) ...
        migrate(dsn, migrations_dir=with_migration(tmp_path, FUTURE, BREAKING))
        q.enqueue("t")
    # ... and the next Queue, or a restarted worker, refuses.
    with Queue(dsn) as q, pytest.raises(IncompatibleSchema):
        q.enqueue("t")
    assert jobs(dsn) == 2


def test_importing_the_client_loads_the_compatibility_check_alone_of_the_installer() -> None:
    """Queue, AsyncQueue and Worker need only the compatibility check: importing them loads
    neither sqlparse nor the runner, the dry run, the planner, grants or drift."""
    probe = (
        "import sys, pgq_client\n"
        "from pgq_client import AsyncQueue, Queue, Worker\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout.split()
    assert "pgq_client.installer.compat" in loaded
    heavy = {"sqlparse"} | {
        f"pgq_client.installer.{m}" for m in ("runner", "script", "plan", "privileges", "drift")
    }
    assert heavy.isdisjoint(loaded), sorted(heavy.intersection(loaded))
