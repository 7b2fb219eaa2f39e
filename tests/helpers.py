"""What tests share besides fixtures: names unique per test process, roles, waits, rows.

pytest-xdist runs tests in several processes against one server: what a test makes outside its
own database (a role, a database, a file) carries a name from :func:`unique_name`.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgq_client import grants

T = TypeVar("T")
Conn = psycopg.Connection[Any]

_names = itertools.count()


def unique_name(prefix: str) -> str:
    """``prefix`` made unique among every test process on the server and within this one."""
    return f"{prefix}_{os.getpid()}_{next(_names)}"


# -- roles ---------------------------------------------------------------------------------------


class MakeRole(Protocol):
    """The ``make_role`` fixture (tests/conftest.py)."""

    def __call__(
        self,
        level: grants.Level | None = None,
        *,
        dsn: str | None = None,
        schema: str = "public",
        login: bool = True,
        prefix: str = "jobq_role",
    ) -> str: ...


def create_role(
    admin_dsn: str,
    level: grants.Level | None = None,
    *,
    dsn: str | None = None,
    schema: str = "public",
    login: bool = True,
    prefix: str = "jobq_role",
) -> str:
    """A new role named from ``prefix``, granted ``level`` in ``dsn`` (``jobq grant``) if given.
    The caller drops it with :func:`drop_role`."""
    if level is not None and dsn is None:
        raise ValueError("create_role: a level is granted in a database: pass dsn")
    name = unique_name(prefix)
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(
            sql.SQL("CREATE ROLE {} {}").format(
                sql.Identifier(name), sql.SQL("LOGIN" if login else "NOLOGIN")
            )
        )
    if level is not None and dsn is not None:
        grants.grant(dsn, name, level, schema)
    return name


def drop_role(admin_dsn: str, name: str) -> None:
    """Drop ``name`` and, first, what it owns or was granted in every database of the cluster.

    A role belongs to the cluster; its grants and objects belong to databases. The shared
    catalogue pg_shdepend says which databases hold them, so no caller has to remember where it
    granted what (a database already dropped holds nothing).
    """
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        databases = [
            row[0]
            for row in c.execute(
                # dbid 0: a grant on a shared object (a database), revoked from any database
                "SELECT DISTINCT coalesce(d.datname, current_database()) FROM pg_shdepend s"
                " JOIN pg_roles r ON r.oid = s.refobjid"
                " LEFT JOIN pg_database d ON d.oid = s.dbid"
                " WHERE r.rolname = %s AND (d.oid IS NULL OR d.datallowconn)",
                (name,),
            )
        ]
    for database in databases:
        with psycopg.connect(make_conninfo(admin_dsn, dbname=database), autocommit=True) as c:
            c.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


# -- waiting -------------------------------------------------------------------------------------


def wait_for(
    what: str,
    probe: Callable[[], T | None],
    timeout: float = 60.0,
    interval: float = 0.05,
    details: Callable[[], str] | None = None,
) -> T:
    """Poll ``probe`` until it returns something truthy, and return that; fail with ``what``
    after ``timeout`` seconds (and ``details()``, e.g. the workers' logs, read at that moment).

    A bound, not a speed assertion: timeouts are generous and only catch a hang.
    """
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    more = details() if details else ""
    raise AssertionError(
        f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r}){more}"
    )


# -- rows ----------------------------------------------------------------------------------------


def count(conn: Conn, query: str, *params: object) -> int:
    """The integer a one-row, one-column ``query`` returns (a ``SELECT count(*) ...``)."""
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])


def job_row(conn: Conn, job_id: uuid.UUID) -> dict[str, Any]:
    """The job's row of ``jobq_all_jobs`` (live or finished) as a dict of columns (an assertion
    error if it is gone)."""
    cur = conn.execute("SELECT * FROM jobq_all_jobs WHERE id = %s", (job_id,))
    assert cur.description is not None
    names = [d.name for d in cur.description]
    row = cur.fetchone()
    assert row is not None, f"job {job_id} not found"
    return dict(zip(names, row, strict=True))


def insert_jobs(conn: Conn, insert: str) -> None:
    """Run ``insert`` (an INSERT of many rows into jobq_jobs, on an autocommit connection): the
    finished rows among them move to the history in one statement (jobq__retire, as the jobq
    functions move what they finish), not one by one through the trigger that catches any
    other write of a finished row, which takes ten times as long for 200,000 rows."""
    conn.execute("ALTER TABLE jobq_jobs DISABLE TRIGGER jobq_jobs_retire")
    try:
        conn.execute(insert.encode())
    finally:
        conn.execute("ALTER TABLE jobq_jobs ENABLE TRIGGER jobq_jobs_retire")
    conn.execute(
        "SELECT jobq__retire(ARRAY(SELECT id FROM jobq_jobs WHERE finished_at IS NOT NULL))"
    )


# -- the jobq command ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    """What a ``jobq`` command did: its exit status and what it wrote."""

    returncode: int
    stdout: str
    stderr: str


def jobq(*args: str, input: str | None = None) -> Ran:
    """``jobq ARGS...`` run in this process (click's CliRunner), as the ``jobq`` script runs
    it, without starting an interpreter for each command. An exception that the command does
    not turn into a message fails the test (no traceback is ever the user's answer)."""
    from click.testing import CliRunner

    from jobq_cli import cli

    result = CliRunner().invoke(
        cli, list(args), input=input, prog_name="jobq", catch_exceptions=False
    )
    return Ran(result.exit_code, result.stdout, result.stderr)


# The NOTIFY channel names, as the client's statements ask the server for them (jobq__channel,
# jobq__event_channel): what a test listens on.


def channel(schema: str) -> str:
    """The NOTIFY channel of the installation in ``schema`` (in a UTF-8 database): ``jobq``
    for public, ``jobq.<schema>`` up to 58 bytes, else ``jobq#`` and its SHA-224."""
    if schema == "public":
        return "jobq"
    raw = schema.encode("utf-8")
    if len(raw) <= 58:
        return f"jobq.{schema}"
    return "jobq#" + hashlib.sha224(raw).hexdigest()


def event_channel(schema: str, kind: str) -> str:
    """The NOTIFY channel of ``kind`` events of the installation in ``schema`` (UTF-8):
    ``jobq-<kind>:<schema>`` up to 63 bytes, else ``jobq-<kind>#`` and its SHA-224 cut to fit."""
    raw = f"jobq-{kind}:{schema}".encode()
    if len(raw) <= 63:
        return f"jobq-{kind}:{schema}"
    prefix = f"jobq-{kind}#"
    return prefix + hashlib.sha224(schema.encode("utf-8")).hexdigest()[: 63 - len(prefix)]
