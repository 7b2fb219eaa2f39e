"""The test harness's own promise: every test starts from a database equal to a fresh install,
whether it was copied from the template or brought back from an earlier test."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from tests.conftest import _drop_db, _Recycler, _StartLongTestsFirst


def _contents(dsn: str) -> tuple[object, ...]:
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute(
            "SELECT (SELECT count(*) FROM jobq_jobs), (SELECT count(*) FROM jobq_workers),"
            " (SELECT count(*) FROM jobq_migrations),"
            " (SELECT row_to_json(s)::text FROM jobq_settings AS s),"
            " (SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions)"
        ).fetchone()
        assert row is not None
        return tuple(row)


def test_a_database_a_test_only_wrote_rows_to_comes_back_equal_to_the_template(
    admin_dsn: str, template_db: str
) -> None:
    """Jobs, workers, changed settings, function call counts and a session left open are gone
    when the database is handed to the next test; the migrations' records and the settings row
    are the template's again."""
    recycler = _Recycler(admin_dsn, template_db)
    name = recycler.take()
    dsn = make_conninfo(admin_dsn, dbname=name)
    fresh = _contents(dsn)
    left_open = psycopg.connect(dsn, autocommit=True)
    try:
        left_open.execute("SET track_functions = 'all'")
        left_open.execute("SELECT jobq_enqueue('t')")
        left_open.execute("SELECT * FROM jobq_dequeue('w1')")
        left_open.execute("SELECT jobq_configure(metrics => true)")
        assert _contents(dsn) != fresh
        recycler.give_back(name)
        assert recycler.spare == name, "a database with only new rows is kept"
        assert left_open.closed or left_open.broken or _ended(left_open)
        assert _contents(dsn) == fresh
        assert recycler.take() == name
    finally:
        left_open.close()
        _drop_db(admin_dsn, name)


def _ended(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    try:
        conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return True
    return False


@pytest.mark.slow  # seconds of waiting
def test_a_database_whose_catalogue_a_test_changed_is_dropped_not_kept(
    admin_dsn: str, template_db: str
) -> None:
    """A planted function, a new schema, a grant or a comment is not undone: the database is
    dropped and the next test gets a copy of the template."""
    recycler = _Recycler(admin_dsn, template_db)
    changes = (
        "CREATE FUNCTION public.lower(text) RETURNS text LANGUAGE sql AS 'SELECT $1'",
        "CREATE SCHEMA tenant_x",
        "GRANT SELECT ON jobq_jobs TO PUBLIC",
        "COMMENT ON TABLE jobq_jobs IS 'changed'",
        "ALTER DATABASE {db} SET work_mem = '1MB'",
    )
    for change in changes:
        name = recycler.take()
        dsn = make_conninfo(admin_dsn, dbname=name)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(change.format(db=f'"{name}"'))  # type: ignore[arg-type]
        recycler.give_back(name)
        assert recycler.spare is None, change
        with psycopg.connect(admin_dsn, autocommit=True) as c:
            gone = c.execute("SELECT NOT EXISTS (SELECT FROM pg_database WHERE datname = %s)",
                             [name]).fetchone()
        assert gone == (True,), change


def test_a_template_whose_empty_table_has_a_page_is_refused(admin_dsn: str, dsn: str) -> None:
    """The recycler tells that a test wrote a table left empty by the table's size: a template
    where such a table holds a page (a row written and deleted, not vacuumed) would hide that
    write, so it is refused, naming the table."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("INSERT INTO jobq_paused_queues (queue, paused_at) VALUES ('q', now())")
        c.execute("DELETE FROM jobq_paused_queues")
        name = c.execute("SELECT current_database()").fetchone()
    assert name is not None
    with pytest.raises(AssertionError, match="jobq_paused_queues"):
        _Recycler(admin_dsn, name[0])


class _Item(SimpleNamespace):
    def get_closest_marker(self, name: str) -> object:
        return self.long if name == "long" else None


def _items(n: int, long: dict[int, tuple[float, ...]]) -> list[Any]:
    """``n`` tests, those in ``long`` marked ``long`` with those arguments."""
    return [
        _Item(name=f"t{i}", long=SimpleNamespace(args=long[i]) if i in long else None)
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("n", "long", "order"),
    [
        # Shares of 3, 3 and 4 in collection order: the two long ones (no seconds: alike)
        # start the first two shares, the others keep their order.
        (10, {5: (), 9: ()}, [5, 0, 1, 9, 2, 3, 4, 6, 7, 8]),
        # Longest first, each to the share with the fewest seconds so far: 40, 25, 20 start
        # the three shares, 10 goes after 20.
        (12, {2: (10,), 4: (40,), 7: (25,), 9: (20,)}, [4, 0, 1, 3, 7, 5, 6, 8, 9, 2, 10, 11]),
    ],
    ids=["alike", "by-seconds"],
)
def test_long_tests_head_the_shares_that_pytest_xdist_hands_out(
    n: int, long: dict[int, tuple[float, ...]], order: list[int]
) -> None:
    """The long tests start the shares that pytest-xdist hands three workers, the longest
    first and spread by their seconds; the others keep their order."""
    config = SimpleNamespace(workerinput={"workercount": 3})
    items = _items(n, long)
    _StartLongTestsFirst(cast(pytest.Config, config)).pytest_collection_modifyitems(items)
    assert [i.name for i in items] == [f"t{k}" for k in order]
