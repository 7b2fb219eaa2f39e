"""The migration runner: numbered migrations, then one file per function.

``sql/migrations/NNNN_<what>.sql`` hold tables, indexes, types and data changes. They are
applied in order, each once, each in its own transaction, and recorded in
``<schema>.jobq_migrations`` with the SHA-256 of the file; an applied migration whose file
changed afterwards is refused.

``sql/functions/jobq_<name>.sql`` each hold the current definition of one function
(``CREATE OR REPLACE FUNCTION``, its ``COMMENT ON FUNCTION``, its ``REVOKE ... FROM PUBLIC``).
After the migrations, every file whose SHA-256 differs from the one recorded for it (version
``functions/jobq_<name>``) is applied; all of them in one transaction, so that a failure leaves
the previous set of bodies in place, never half of each. Files are applied private helpers
(``jobq__*``) first, then in name order, except that a file runs after the files its
``--! requires:`` line names (a ``LANGUAGE sql`` body is checked against the functions it calls
when it is created). These header lines are understood:

``--! requires: jobq__a, jobq_b``
    apply this file after those (only needed for a ``LANGUAGE sql`` body that calls them).
``--! levels: producer, worker, admin``
    the levels of ``jobq grant`` that get EXECUTE on this function (producer, worker, monitor,
    admin); every public function names admin, a private helper names none. ``jobq grant`` and
    ``jobq revoke`` read them from here.
``--! replaces: jobq_x(uuid, text, integer)``
    an older signature of this file's function (argument types, as in ``DROP FUNCTION``).
    ``CREATE OR REPLACE`` cannot add an argument, and creating the new signature beside the old
    one would make an overload, so when the schema still has that signature it is dropped just
    before the file runs, in the same transaction, and the EXECUTE grants it carried are given
    to the new function, so that roles granted with ``jobq grant`` keep working.
    It may also name a function of another name that has no file any more: the function was
    renamed. The old one is dropped the same way (its grants carried over) and its record
    ``functions/<old name>`` deleted, in the transaction that creates the new one and its
    callers, so that no caller ever runs without the function it calls.

``--! granted-as: jobq_fail``
    when the file creates its function in a schema that did not have it (an upgrade that adds
    a function), every role that may execute ``jobq_fail`` may execute it too: a worker role
    granted before the upgrade keeps every worker call that the new client makes.

After the files, one check (in the same transaction) refuses a schema where a file left no
function of its name, or more than one (an overload: an older signature not named in
``--! replaces:``).

Roles granted before an upgrade keep their level: a role that held, granted to it directly,
EXECUTE on every function of a level of ``jobq grant`` installed before the function files'
transaction (admin: every public function) is granted, at the end of that transaction, the
functions of that level that the transaction added (an admin also SELECT on the jobq tables it
cannot read yet). Each grant is logged (logger ``pgq_client.migrate.grants``, INFO) and raised
as a NOTICE, so that a ``--dry-run`` script applied with psql does and says the same.

Every step runs with ``search_path`` set to the target schema (then ``pg_temp``), so every
object lands in that schema and every function captures it (``SET search_path FROM
CURRENT``). A session-level advisory lock per schema serialises concurrent runs: the second
waits, then finds nothing to do.

Migrations 0002-0005 of jobq's development were folded into ``0001_jobq_core`` and the
function files before the first release. A schema that recorded them (see ``FOLDED``) is
recognised and upgraded in place: its records are rewritten to those of the baseline, and the
function files replace its functions.

Two more rules keep an older jobq from harming a newer schema:

* A migration whose first line is ``--! breaking-change`` (optionally ``: why``) is one that
  clients of an older jobq cannot work with. It is recorded with ``breaking = true``, and the
  runner writes the latest such version into the comment of ``jobq_migrations``, which every
  role can read in the catalogue (the table itself only admins may read). Clients
  (:func:`check_compatible`, called once by each Queue and Worker) refuse a schema whose latest
  breaking change is a migration they do not have.
* ``sql/functions/history.sha256`` lists the SHA-256 of every version of every function file
  that jobq has shipped. A schema whose recorded function file is a version this jobq does not
  know was migrated by a newer jobq: the runner refuses it rather than put older bodies back.

``render_dry_run`` prints the very statements :func:`migrate` would run, as a script for psql.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import logging
import re
import time
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import psycopg
import sqlparse
from psycopg import sql
from psycopg.rows import scalar_row

from . import _sql
from .errors import IncompatibleSchema, JobqError

__all__ = [
    "ADMIN_TABLES",
    "FOLDED",
    "GRANT_LEVELS",
    "HISTORY_FILE",
    "FunctionFile",
    "Migration",
    "MigrationError",
    "Plan",
    "audit",
    "available_migrations",
    "check_compatible",
    "function_drift",
    "function_files",
    "function_history",
    "latest_breaking_change",
    "migrate",
    "pending_migrations",
    "plan",
    "render_dry_run",
]

logger = logging.getLogger(__name__)
# The grants that carry a level over to the functions an upgrade adds, one INFO line each.
grant_logger = logging.getLogger(__name__ + ".grants")

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
_FUNCTION_NAME = re.compile(r"^(jobq_[a-z0-9_]+)\.sql$")
_DIRECTIVE = re.compile(
    r"^--![ \t]*(?P<key>[a-z-]*)[ \t]*(?::[ \t]*(?P<value>.*?))?[ \t]*$", re.MULTILINE
)
# An argument list as DROP FUNCTION takes it: type names, arrays, commas, spaces.
_SIGNATURE = re.compile(r"^(jobq_[a-z0-9_]+)\(\s*([a-z0-9_ \[\],]*?)\s*\)$")
_FUNCTIONS_PREFIX = "functions/"
# The levels of `jobq grant`, which a function file's `--! levels:` line chooses from.
GRANT_LEVELS = ("producer", "worker", "monitor", "admin")
# The tables an admin may read (`jobq grant --as admin`: SELECT on those installed).
ADMIN_TABLES = (
    "jobq_jobs",
    "jobq_settings",
    "jobq_migrations",
    "jobq_schedules",
    "jobq_workers",
    "jobq_limits",
    "jobq_limit_keys",
    "jobq_limit_starts",
    "jobq_metric_counters",
    "jobq_metric_deltas",
    "jobq_awaits",
    "jobq_cancel_requests",
    "jobq_metric_labels",
)
_BREAKING = "breaking-change"
HISTORY_FILE = "history.sha256"
_HISTORY_LINE = re.compile(r"^([0-9a-f]{64})  (jobq_[a-z0-9_]+)\.sql$")
# The line of jobq_migrations' comment that names the latest breaking change (see _DESCRIBE).
_LATEST_BREAKING = re.compile(r"^Latest breaking change: (\d{4}_[a-z0-9_]+)\.", re.MULTILINE)

# The migrations of jobq's development that were folded into the baseline before the first
# release, in order, with the SHA-256 each had when it was applied (main up to commit dcd3357).
# Only 0001 created tables; 0002-0005 replaced or added functions, which the function files
# now define. So a schema whose records are exactly the first N of these (N >= 1), each with
# its checksum, holds the tables of today's 0001_jobq_core: it is recorded as having that
# baseline, and the function files replace its functions. Any other record is refused.
FOLDED_INTO = "0001_jobq_core"
FOLDED: tuple[tuple[str, str], ...] = (
    ("0001_jobq_core", "4adb3e31c6d11142b01266ba01b9aca8e106f55e1087717a30998134303a42e8"),
    ("0002_jobq_operations", "0a665aa5294ce9af4629ee935f26f466ef38c8908688d5ee0d1d4bfe0f4b32af"),
    (
        "0003_jobq_fence_by_primary_key",
        "575522bcc4b993fb9d72547a15fd622e08bd89cd331fd3ed4f3aafde5485d551",
    ),
    (
        "0004_jobq_heartbeat_never_waits",
        "b9bfad63d92931fbcbd4dd41b725e140847022fded97e9503fc3952e1183f0b6",
    ),
    (
        "0005_jobq_dequeue_ordered_index_scan",
        "a07ae8776899c9e6f7873cc33c47130795c1000303702af11059dcc15f3f538b",
    ),
)


class MigrationError(JobqError):
    """A migration cannot be applied (edited after it was applied, unknown, bad file name)."""


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Migration:
    """One migration file: ``version`` is its name without ``.sql`` (``0001_jobq_core``).

    ``breaking``: its first line is ``--! breaking-change``: clients that do not have this
    migration cannot work with a schema that has it.
    """

    version: str
    sql: str

    @property
    def checksum(self) -> str:
        return _sha256(self.sql)

    @property
    def breaking(self) -> bool:
        first = _DIRECTIVE.match(self.sql)
        return first is not None and first.group("key") == _BREAKING


@dataclass(frozen=True)
class FunctionFile:
    """One function file: ``name`` is the function's (``jobq_dequeue``), ``path`` the file's.

    ``requires``, ``replaces``, ``levels`` and ``granted_as`` come from the file's
    ``--! requires:``, ``--! replaces:``, ``--! levels:`` and ``--! granted-as:`` lines.
    ``version`` is what ``jobq_migrations`` records it as (``functions/jobq_dequeue``).
    """

    name: str
    path: Path
    sql: str = field(repr=False)
    requires: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()
    levels: tuple[str, ...] = ()
    granted_as: tuple[str, ...] = ()

    @property
    def checksum(self) -> str:
        return _sha256(self.sql)

    @property
    def version(self) -> str:
        return _FUNCTIONS_PREFIX + self.name

    @property
    def private(self) -> bool:
        """Private helpers (``jobq__*``) are granted to nobody."""
        return self.name.startswith("jobq__")

    @property
    def renamed_from(self) -> tuple[str, ...]:
        """The old names among ``replaces`` (this function was renamed from them)."""
        names = (signature.split("(", 1)[0] for signature in self.replaces)
        return tuple(dict.fromkeys(n for n in names if n != self.name))


@dataclass(frozen=True)
class Plan:
    """What :func:`migrate` would do to a schema, in order.

    ``adopt``: the folded versions recorded in the schema, to be rewritten to the baseline's
    record (empty when there are none); ``migrations`` and ``functions``: what is pending.
    """

    adopt: tuple[str, ...]
    migrations: list[Migration]
    functions: list[FunctionFile]

    @property
    def versions(self) -> list[str]:
        return [m.version for m in self.migrations] + [f.version for f in self.functions]


def _sql_dir(kind: str) -> Path:
    """``migrations`` or ``functions``: shipped in the wheel, else those of the source tree."""
    shipped = Path(str(importlib.resources.files("pgq_client"))) / kind
    if shipped.is_dir():
        return shipped
    source = Path(__file__).resolve().parents[2] / "sql" / kind
    if source.is_dir():
        return source
    raise MigrationError(f"no {kind} found (looked in {shipped} and {source})")


def _migrations_dir() -> Path:
    return _sql_dir("migrations")


def _functions_dir() -> Path:
    return _sql_dir("functions")


def available_migrations(directory: Path | None = None) -> list[Migration]:
    """Every migration file, in order. Refuses files that do not follow ``NNNN_name.sql``."""
    found: list[Migration] = []
    for path in sorted((directory or _migrations_dir()).iterdir()):
        if path.suffix != ".sql":
            continue
        if not _NAME.match(path.name):
            raise MigrationError(
                f"migration file {path.name!r} does not follow NNNN_lowercase_name.sql"
            )
        text = path.read_text(encoding="utf-8")
        for directive in _DIRECTIVE.finditer(text):
            if directive.group("key") != _BREAKING:
                raise MigrationError(
                    f"migration {path.name}: unknown directive `--! {directive.group('key')}` "
                    f"(known: {_BREAKING})"
                )
            if directive.start() != 0:
                raise MigrationError(
                    f"migration {path.name}: `--! {_BREAKING}` must be its first line"
                )
        found.append(Migration(version=path.stem, sql=text))
    numbers = [m.version[:4] for m in found]
    if len(set(numbers)) != len(numbers):
        raise MigrationError(f"two migration files share a number: {numbers}")
    return found


def _read_function_file(path: Path) -> FunctionFile:
    match = _FUNCTION_NAME.match(path.name)
    if not match:
        raise MigrationError(
            f"function file {path.name!r} does not follow jobq_lowercase_name.sql"
        )
    name = match.group(1)
    text = path.read_text(encoding="utf-8")
    if not re.search(
        rf"^CREATE OR REPLACE FUNCTION {re.escape(name)}\(", text, re.MULTILINE | re.IGNORECASE
    ):
        raise MigrationError(
            f"function file {path.name} must define its function with "
            f"`CREATE OR REPLACE FUNCTION {name}(` (it is applied again whenever it changes)"
        )
    requires: list[str] = []
    replaces: list[str] = []
    levels: list[str] = []
    granted_as: list[str] = []
    for directive in _DIRECTIVE.finditer(text):
        key, value = directive.group("key"), directive.group("value")
        if key in ("requires", "replaces", "levels", "granted-as") and not value:
            raise MigrationError(f"function file {path.name}: `--! {key}:` names nothing")
        items = [v.strip() for v in re.split(r",\s*(?![^()]*\))", value or "") if v.strip()]
        if key == "requires":
            requires += items
        elif key == "levels":
            unknown = [v for v in items if v not in GRANT_LEVELS]
            if unknown:
                raise MigrationError(
                    f"function file {path.name}: `--! levels:` names {', '.join(unknown)}; "
                    f"the levels are {', '.join(GRANT_LEVELS)}"
                )
            levels += items
        elif key == "replaces":
            for signature in items:
                sig = _SIGNATURE.match(signature)
                if not sig:
                    raise MigrationError(
                        f"function file {path.name}: `--! replaces: {signature}` must name an "
                        f"older signature of {name}, or the old name of a renamed function, "
                        f"as `jobq_name(type, type, ...)`"
                    )
                replaces.append(signature)
        elif key == "granted-as":
            for source in items:
                if not _FUNCTION_NAME.match(f"{source}.sql") or source == name:
                    raise MigrationError(
                        f"function file {path.name}: `--! granted-as: {source}` must name "
                        "another jobq function"
                    )
                granted_as.append(source)
        else:
            raise MigrationError(
                f"function file {path.name}: unknown directive `--! {key}:` "
                "(known: requires, replaces, levels, granted-as)"
            )
    return FunctionFile(
        name=name,
        path=path,
        sql=text,
        requires=tuple(requires),
        replaces=tuple(replaces),
        levels=tuple(levels),
        granted_as=tuple(granted_as),
    )


def function_files(directory: Path | None = None) -> list[FunctionFile]:
    """Every function file, in the order they are applied.

    Private helpers (``jobq__*``) first, then by name; a file whose ``--! requires:`` line
    names others comes after them. Refuses unknown names in ``requires``, cycles, bad file
    names, and files that do not ``CREATE OR REPLACE`` their own function.
    """
    files = {
        f.name: f
        for f in (
            _read_function_file(path)
            for path in sorted((directory or _functions_dir()).iterdir())
            if path.suffix == ".sql"
        )
    }
    for f in files.values():
        for required in f.requires:
            if required not in files:
                raise MigrationError(
                    f"function file {f.path.name} requires {required}, which has no file"
                )
        for old in f.renamed_from:
            if old in files:
                raise MigrationError(
                    f"function file {f.path.name} replaces {old}, which still has a file: "
                    "a renamed function's old file must be gone"
                )
    order = sorted(files, key=lambda n: (not files[n].private, n))
    done: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            raise MigrationError(f"function files require each other in a cycle: {name}")
        visiting.add(name)
        for required in sorted(files[name].requires, key=order.index):
            visit(required)
        visiting.discard(name)
        done.append(name)

    for name in order:
        visit(name)
    return [files[name] for name in done]


def function_history(directory: Path | None = None) -> dict[str, frozenset[str]]:
    """The SHA-256 of every version of each function file that jobq has shipped, by name.

    Read from ``history.sha256`` beside the files (lines as ``sha256sum`` prints them; ``#``
    starts a comment). A directory without one knows only its files as they are.
    """
    path = (directory or _functions_dir()) / HISTORY_FILE
    if not path.exists():
        return {}
    known: dict[str, set[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _HISTORY_LINE.match(line)
        if not match:
            raise MigrationError(
                f"{path.name}, line {number}: expected `<sha256>  jobq_<name>.sql`, got {line!r}"
            )
        known.setdefault(match.group(2), set()).add(match.group(1))
    return {name: frozenset(checksums) for name, checksums in known.items()}


# -- the SQL that migrate runs (and --dry-run prints) ------------------------------------------

_MIGRATIONS_COMMENT = (
    "jobq migrations (NNNN_name) and function files (functions/jobq_name) applied to this "
    "schema, with the SHA-256 of each file (written by jobq migrate)."
)

# The comment of jobq_migrations, from its records: clients of every role read the latest
# breaking change there (pg_description is readable by all; the table by admins only).
# Runs with search_path set to the schema.
_DESCRIBE = """
DO $jobq$
DECLARE
    v_latest text;
BEGIN
    SELECT pg_catalog.max(m.version) INTO v_latest FROM jobq_migrations AS m WHERE m.breaking;
    EXECUTE pg_catalog.format(
        'COMMENT ON TABLE %I.jobq_migrations IS %L',
        pg_catalog.current_schema(),
        {base} || coalesce(
            E'\\nLatest breaking change: ' || v_latest
            || '. Clients of a jobq that does not have this migration refuse this schema.',
            ''
        )
    );
END
$jobq$;
"""


def _describe() -> sql.SQL:
    return sql.SQL(_DESCRIBE.format(base=sql.Literal(_MIGRATIONS_COMMENT).as_string(None)))


# The lock that serialises concurrent runs of `jobq migrate` on one schema: a session-level
# advisory lock whose key is a random 64-bit number drawn at install and kept in a table that
# only jobq's owner (and superusers) may read. A key computed from public names (the schema's)
# could be taken by any role of the database, which would hold every deploy up; this one no
# other role can compute. The table is made (with the schema) before the lock is taken: on a
# first install nothing else exists to lock, and two first installs that race there fail on
# the catalogue's unique indexes, which _lock retries.
def _lock_table(schema: str) -> sql.Composed:
    return sql.SQL(
        "CREATE TABLE IF NOT EXISTS {s}.jobq__migrate_lock (\n"
        "    singleton boolean NOT NULL DEFAULT true,\n"
        "    key bigint NOT NULL,\n"
        "    CONSTRAINT jobq__migrate_lock_pkey PRIMARY KEY (singleton),\n"
        "    CONSTRAINT jobq__migrate_lock_singleton CHECK (singleton)\n"
        ");\n"
        "REVOKE ALL ON TABLE {s}.jobq__migrate_lock FROM PUBLIC;\n"
        "INSERT INTO {s}.jobq__migrate_lock (key)\n"
        "SELECT ('x' OPERATOR(pg_catalog.||) pg_catalog.left(pg_catalog.md5(\n"
        "    pg_catalog.gen_random_uuid()::pg_catalog.text), 16)\n"
        ")::pg_catalog.bit(64)::pg_catalog.int8\n"
        "ON CONFLICT (singleton) DO NOTHING;\n"
        "COMMENT ON TABLE {s}.jobq__migrate_lock IS {table};\n"
        "COMMENT ON COLUMN {s}.jobq__migrate_lock.singleton IS {singleton};\n"
        "COMMENT ON COLUMN {s}.jobq__migrate_lock.key IS {key};\n"
        "COMMENT ON CONSTRAINT jobq__migrate_lock_pkey ON {s}.jobq__migrate_lock IS {pkey};\n"
        "COMMENT ON INDEX {s}.jobq__migrate_lock_pkey IS {pkey};\n"
        "COMMENT ON CONSTRAINT jobq__migrate_lock_singleton ON {s}.jobq__migrate_lock IS {check};\n"
    ).format(
        s=sql.Identifier(schema),
        table=sql.Literal(
            "Private. The key of the advisory lock that jobq migrate holds while it runs: "
            "random, readable only by jobq's owner, so that no other role can take the lock "
            "and hold deploys up."
        ),
        singleton=sql.Literal("Always true: the table has one row."),
        key=sql.Literal("The advisory lock's key, drawn at random when the table was made."),
        pkey=sql.Literal("One row."),
        check=sql.Literal("One row."),
    )


# Whether the schema's lock table belongs to jobq's owner (the owner of jobq_migrations, or the
# role that runs this before there is one): a table that another role made could hold a key
# that role knows. No row: there is no lock table yet.
_LOCK_OWNER = """
SELECT c.relowner OPERATOR(pg_catalog.=) coalesce(
           (SELECT m.relowner FROM pg_catalog.pg_class AS m
            WHERE m.relnamespace OPERATOR(pg_catalog.=) c.relnamespace
              AND m.relname OPERATOR(pg_catalog.=) 'jobq_migrations'::pg_catalog.name),
           (SELECT r.oid FROM pg_catalog.pg_roles AS r
            WHERE r.rolname OPERATOR(pg_catalog.=) current_user)
       ) AS ours
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name
  AND c.relname OPERATOR(pg_catalog.=) 'jobq__migrate_lock'::pg_catalog.name
"""


def _lock(conn: psycopg.Connection[Any], schema: str) -> None:
    """Take the migrate lock of ``schema`` (see _lock_table), making it first if needed."""

    def check_owner() -> None:
        row = conn.execute(_LOCK_OWNER, {"schema": schema}).fetchone()
        if row is not None and not row[0]:
            raise MigrationError(
                f"{schema}.jobq__migrate_lock does not belong to jobq's owner: another role "
                "made it and may know the key of the migrate lock. Drop it after checking who "
                "made it."
            )

    present = conn.execute(_LOCK_OWNER, {"schema": schema}).fetchone() is not None
    check_owner()
    for attempt in range(1, 6):
        if present:
            break  # made by an earlier run: nothing to write before the lock
        try:
            with conn.transaction():
                _run_script(conn, sql.Composed([
                    _note_existing(schema),
                    sql.SQL("CREATE SCHEMA IF NOT EXISTS {};\n").format(sql.Identifier(schema)),
                    _lock_table(schema),
                    _exact_privileges(schema),
                ]))
            break
        except (psycopg.errors.UniqueViolation, psycopg.errors.InternalError_) as exc:
            # a concurrent first run made the same object, or changed its ACL or comment
            # ("tuple concurrently updated"): the next try finds it made
            if attempt == 5 or (
                isinstance(exc, psycopg.errors.InternalError_)
                and "concurrently" not in str(exc)
            ):
                raise
            time.sleep(0.05 * attempt)
            present = conn.execute(_LOCK_OWNER, {"schema": schema}).fetchone() is not None
    check_owner()
    row = conn.execute(
        sql.SQL("SELECT l.key FROM {}.jobq__migrate_lock AS l").format(sql.Identifier(schema))
    ).fetchone()
    assert row is not None  # the script inserts it
    conn.execute("SELECT pg_catalog.pg_advisory_lock(%(key)s::pg_catalog.int8)", {"key": row[0]})


def _bootstrap(schema: str, *, lock_table: bool = False) -> sql.Composed:
    # ADD COLUMN IF NOT EXISTS: a table made before `breaking` existed gets it. The lock table is
    # made by _lock before the lock is taken, and left alone here: a concurrent run's first
    # step may still be writing its ACL and comment ("tuple concurrently updated");
    # only the dry-run script, which takes no lock, makes it here (lock_table).
    return sql.Composed(
        [
            sql.SQL(
                "{note}"
                "CREATE SCHEMA IF NOT EXISTS {s};\n"
                "CREATE TABLE IF NOT EXISTS {s}.jobq_migrations (\n"
                "    version text NOT NULL,\n"
                "    checksum text NOT NULL,\n"
                "    applied_at timestamptz NOT NULL DEFAULT pg_catalog.now(),\n"
                "    breaking boolean NOT NULL DEFAULT false,\n"
                "    CONSTRAINT jobq_migrations_pkey PRIMARY KEY (version)\n"
                ");\n"
                "ALTER TABLE {s}.jobq_migrations\n"
                "    ADD COLUMN IF NOT EXISTS breaking boolean NOT NULL DEFAULT false;\n"
                "REVOKE ALL ON TABLE {s}.jobq_migrations FROM PUBLIC;\n"
            ).format(s=sql.Identifier(schema), note=_note_existing(schema)),
            _lock_table(schema) if lock_table else sql.SQL(""),
            _search_path(schema),
            _describe(),
            _exact_privileges(schema),
        ]
    )


# Default privileges (ALTER DEFAULT PRIVILEGES of the installing role, for the schema or for
# all schemas) are added to every object when it is created: a stranger could so get SELECT on
# jobq_jobs or EXECUTE on jobq_configure in a new install. Each transaction of the runner
# therefore notes the objects of the schema that exist when it starts, and at its end gives
# every object it created exactly the privileges jobq means: its owner's, and nothing for
# anyone else (its files then REVOKE from PUBLIC what PostgreSQL grants by default, and
# `jobq grant` grants the levels). Objects that existed before keep their grants: a new
# migration never takes back what `jobq grant` gave. Types keep PostgreSQL's default USAGE for
# PUBLIC, without which nobody could name them.
_NOTE_EXISTING = """
-- The objects of schema {schema} before this transaction (see the end of it).
SELECT pg_catalog.set_config(
    'jobq.existing_objects',
    coalesce(pg_catalog.array_agg(o.key)::text, '{{}}'),
    true
)
FROM (
    SELECT 'class:' || c.oid AS key
    FROM pg_catalog.pg_class AS c
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    WHERE n.nspname = {schema}
    UNION ALL
    SELECT 'proc:' || p.oid
    FROM pg_catalog.pg_proc AS p
    JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
    WHERE n.nspname = {schema}
    UNION ALL
    SELECT 'type:' || t.oid
    FROM pg_catalog.pg_type AS t
    JOIN pg_catalog.pg_namespace AS n ON n.oid = t.typnamespace
    WHERE n.nspname = {schema}
    UNION ALL
    SELECT 'namespace:' || n.oid
    FROM pg_catalog.pg_namespace AS n
    WHERE n.nspname = {schema}
) AS o;
"""

_EXACT_PRIVILEGES = """
-- Objects created in this transaction carry their owner's privileges only, whatever default
-- privileges (ALTER DEFAULT PRIVILEGES) the installing role has.
DO $jobq$
DECLARE
    v_existing text[] := pg_catalog.current_setting('jobq.existing_objects')::text[];
    v_object record;
    v_grantee oid;
BEGIN
    FOR v_object IN
        SELECT
            'class:' || c.oid AS key,
            CASE WHEN c.relkind = 'S' THEN 'SEQUENCE' ELSE 'TABLE' END AS kind,
            pg_catalog.format('%I.%I', n.nspname, c.relname) AS name,
            c.relowner AS owner, c.relacl AS acl
        FROM pg_catalog.pg_class AS c
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = {schema} AND c.relacl IS NOT NULL
        UNION ALL
        SELECT 'proc:' || p.oid, 'ROUTINE', p.oid::pg_catalog.regprocedure::text, p.proowner,
               p.proacl
        FROM pg_catalog.pg_proc AS p
        JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
        WHERE n.nspname = {schema} AND p.proacl IS NOT NULL
        UNION ALL
        SELECT 'type:' || t.oid, 'TYPE', pg_catalog.format('%I.%I', n.nspname, t.typname),
               t.typowner, t.typacl
        FROM pg_catalog.pg_type AS t
        JOIN pg_catalog.pg_namespace AS n ON n.oid = t.typnamespace
        WHERE n.nspname = {schema} AND t.typacl IS NOT NULL
        UNION ALL
        SELECT 'namespace:' || n.oid, 'SCHEMA', pg_catalog.quote_ident(n.nspname), n.nspowner,
               n.nspacl
        FROM pg_catalog.pg_namespace AS n
        WHERE n.nspname = {schema} AND n.nspacl IS NOT NULL
    LOOP
        CONTINUE WHEN v_object.key = ANY (v_existing);
        FOR v_grantee IN
            SELECT DISTINCT a.grantee FROM pg_catalog.aclexplode(v_object.acl) AS a
            WHERE a.grantee <> v_object.owner
              AND NOT (v_object.kind = 'TYPE' AND a.grantee = 0)
        LOOP
            EXECUTE pg_catalog.format(
                'REVOKE ALL ON %s %s FROM %s CASCADE', v_object.kind, v_object.name,
                CASE WHEN v_grantee = 0 THEN 'PUBLIC'
                     ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(v_grantee)) END
            );
        END LOOP;
        EXECUTE pg_catalog.format(
            'GRANT ALL ON %s %s TO %I', v_object.kind, v_object.name,
            pg_catalog.pg_get_userbyid(v_object.owner)
        );
    END LOOP;
END
$jobq$;
"""


def _note_existing(schema: str) -> sql.SQL:
    return sql.SQL(_NOTE_EXISTING.format(schema=sql.Literal(schema).as_string(None)))


def _exact_privileges(schema: str) -> sql.SQL:
    return sql.SQL(_EXACT_PRIVILEGES.format(schema=sql.Literal(schema).as_string(None)))


def _search_path(schema: str) -> sql.Composed:
    return sql.SQL("SET LOCAL search_path = {s}, pg_temp;\n").format(s=sql.Identifier(schema))


def _apply(schema: str, migration: Migration) -> sql.Composed:
    """The body of one migration's transaction: search_path, the file, its record (and, for a
    breaking change, the comment that tells clients about it), the privileges of new objects."""
    statement = sql.SQL(
        "{path}{note}{body}\n"
        "INSERT INTO {s}.jobq_migrations (version, checksum{breaking}) VALUES ({v}, {c}{true});\n"
    ).format(
        path=_search_path(schema),
        note=_note_existing(schema),
        s=sql.Identifier(schema),
        body=sql.SQL(migration.sql),  # trusted: our own file
        v=sql.Literal(migration.version),
        c=sql.Literal(migration.checksum),
        breaking=sql.SQL(", breaking" if migration.breaking else ""),
        true=sql.SQL(", true" if migration.breaking else ""),
    )
    return sql.Composed(
        [statement, *([_describe()] if migration.breaking else []), _exact_privileges(schema)]
    )


def _adopt(schema: str, recorded: tuple[str, ...], baseline: Migration) -> sql.Composed:
    """Rewrite the records of the folded versions to the baseline's (only rows that match)."""
    folded = dict(FOLDED)
    others = [v for v in recorded if v != FOLDED_INTO]
    statements = [
        sql.SQL(
            "-- This schema was installed by a development version of jobq ({versions}), "
            "whose migrations\n-- were folded into {baseline} and the function files: it is "
            "recorded as {baseline}.\n"
        ).format(versions=sql.SQL(", ".join(recorded)), baseline=sql.SQL(FOLDED_INTO))
    ]
    if others:
        statements.append(
            sql.SQL(
                "DELETE FROM {s}.jobq_migrations WHERE (version, checksum) IN ({rows});\n"
            ).format(
                s=sql.Identifier(schema),
                rows=sql.SQL(", ").join(
                    sql.SQL("({}, {})").format(sql.Literal(v), sql.Literal(folded[v]))
                    for v in others
                ),
            )
        )
    statements.append(
        sql.SQL(
            "UPDATE {s}.jobq_migrations SET checksum = {new}\n"
            "WHERE version = {v} AND checksum = {old};\n"
        ).format(
            s=sql.Identifier(schema),
            new=sql.Literal(baseline.checksum),
            v=sql.Literal(FOLDED_INTO),
            old=sql.Literal(folded[FOLDED_INTO]),
        )
    )
    return sql.Composed(statements)


# Before a file that names older signatures: drop those that exist, keep their ACL for the end.
_DROP_REPLACED = """
-- {name}: drop the older signature(s) it replaces; their grants are kept for the end.
DO $jobq$
DECLARE
    v_signature text;
    v_old regprocedure;
    v_acl aclitem[] := '{{}}';
BEGIN
    FOREACH v_signature IN ARRAY ARRAY[{signatures}]::text[] LOOP
        v_old := pg_catalog.to_regprocedure(
            pg_catalog.format('%I.%s', pg_catalog.current_schema(), v_signature)
        );
        CONTINUE WHEN v_old IS NULL;
        v_acl := v_acl || coalesce(
            (SELECT p.proacl FROM pg_catalog.pg_proc AS p WHERE p.oid = v_old), '{{}}'
        );
        EXECUTE pg_catalog.format('DROP FUNCTION %s', v_old);
    END LOOP;
    PERFORM pg_catalog.set_config('jobq.replaced_acl_{name}', v_acl::text, true);
END
$jobq$;
"""

# After the files: each left exactly one function of its name; replaced grants carried over.
_CHECK_FUNCTIONS = """
-- Each file left exactly one function of its name (jobq has no overloads); a function
-- that replaced older signatures gets the EXECUTE grants they had.
DO $jobq$
DECLARE
    v_name text;
    v_count integer;
    v_new regprocedure;
    v_acl aclitem[];
    v_grant record;
BEGIN
    FOREACH v_name IN ARRAY ARRAY[
        {names}
    ]::text[] LOOP
        SELECT pg_catalog.count(*)::integer, pg_catalog.min(p.oid)::regprocedure
        INTO v_count, v_new
        FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace = pg_catalog.to_regnamespace(
                pg_catalog.quote_ident(pg_catalog.current_schema()))
          AND p.proname = v_name;
        IF v_count = 0 THEN
            RAISE EXCEPTION 'jobq migrate: function file %.sql defines no function %',
                v_name, v_name
                USING ERRCODE = 'invalid_function_definition';
        ELSIF v_count > 1 THEN
            RAISE EXCEPTION 'jobq migrate: schema % has % functions named % after %.sql',
                pg_catalog.current_schema(), v_count, v_name, v_name
                USING ERRCODE = 'invalid_function_definition',
                      HINT = 'jobq has no overloads: name the older signature in a '
                          || '"--! replaces:" line of the file, so that it is dropped first.';
        END IF;
        v_acl := nullif(nullif(
            pg_catalog.current_setting('jobq.replaced_acl_' || v_name, true), ''
        ), '{{}}')::aclitem[];
        CONTINUE WHEN v_acl IS NULL;
        -- In the order of the old ACL, so that the new function's ACL reads as the old one did.
        FOR v_grant IN
            SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS is_grantable
            FROM pg_catalog.aclexplode(v_acl) WITH ORDINALITY AS a
            WHERE a.privilege_type = 'EXECUTE'
              AND a.grantee <> 0  -- PUBLIC: the file revokes it on purpose
              AND a.grantee <> (SELECT p.proowner FROM pg_catalog.pg_proc AS p
                                WHERE p.oid = v_new)
            GROUP BY a.grantee
            ORDER BY pg_catalog.min(a.ordinality)
        LOOP
            EXECUTE pg_catalog.format(
                'GRANT EXECUTE ON FUNCTION %s TO %I%s', v_new,
                pg_catalog.pg_get_userbyid(v_grant.grantee),
                CASE WHEN v_grant.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END
            );
        END LOOP;
    END LOOP;
END
$jobq$;
"""


# Before a file with `--! granted-as:`: note whether its function is new in this schema.
_NOTE_NEW = """
SELECT pg_catalog.set_config(
    'jobq.new_{name}',
    (pg_catalog.to_regproc(pg_catalog.format('%I.%I', pg_catalog.current_schema(), {literal}))
     IS NULL)::text,
    true
);
"""

# After the privileges of the new objects are set (see _EXACT_PRIVILEGES, which would take
# them back): a function that is new in this schema gets the EXECUTE grants of the functions
# it is granted as.
_GRANT_AS = """
DO $jobq$
DECLARE
    v_grant record;
BEGIN
    IF pg_catalog.current_setting('jobq.new_{name}', true) IS DISTINCT FROM 'true' THEN
        RETURN;  -- it existed: its grants are whatever jobq grant / revoke made them
    END IF;
    FOR v_grant IN
        SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS is_grantable
        FROM pg_catalog.pg_proc AS p
        CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
        WHERE p.pronamespace = pg_catalog.to_regnamespace(
                pg_catalog.quote_ident(pg_catalog.current_schema()))
          AND p.proname = ANY (ARRAY[{sources}]::text[])
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> 0  -- PUBLIC never
          AND a.grantee <> p.proowner
        GROUP BY a.grantee
    LOOP
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION %I.%I TO %I%s', pg_catalog.current_schema(), {literal},
            pg_catalog.pg_get_userbyid(v_grant.grantee),
            CASE WHEN v_grant.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END
        );
    END LOOP;
END
$jobq$;
"""



# A role granted a level before an upgrade must not lose it to the functions the upgrade adds
# (a worker role without jobq_release_orphans would leave a lost claim's jobs stranded). At the
# start of the function files' transaction: the public functions installed, and the roles that
# hold a whole level of them, by EXECUTE granted to the role itself (what `jobq grant` gives;
# a member of a granted group inherits from the group, which gets them). {levels} lists each
# level with its functions (the files' `--! levels:` lines); admin's NULL is every public one.
_NOTE_LEVELS = """
-- The public functions of schema {schema} before this transaction, and the roles that hold
-- every one of a level of `jobq grant` among them (see the end of the transaction).
SELECT pg_catalog.set_config(
    'jobq.functions_before',
    coalesce(pg_catalog.array_agg(p.proname::text)::text, '{{}}'),
    true
)
FROM pg_catalog.pg_proc AS p
JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname = {schema}
  AND p.prokind = 'f'
  AND pg_catalog.left(p.proname, 5) = 'jobq_'
  AND pg_catalog.left(p.proname, 6) <> 'jobq__';

WITH levels (level, functions) AS (
    VALUES {levels}
),

level_functions AS (
    SELECT l.level, p.proname, p.proacl, p.proowner
    FROM levels AS l
    JOIN pg_catalog.pg_proc AS p ON l.functions IS NULL OR p.proname::text = ANY (l.functions)
    JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
    WHERE n.nspname = {schema}
      AND p.prokind = 'f'
      AND pg_catalog.left(p.proname, 5) = 'jobq_'
      AND pg_catalog.left(p.proname, 6) <> 'jobq__'
),

held AS (
    SELECT f.level, a.grantee, pg_catalog.count(DISTINCT f.proname) AS functions
    FROM level_functions AS f
    CROSS JOIN LATERAL pg_catalog.aclexplode(f.proacl) AS a
    WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> f.proowner
    GROUP BY f.level, a.grantee
)

SELECT pg_catalog.set_config(
    'jobq.level_roles',
    coalesce(pg_catalog.array_agg(h.level || ':' || h.grantee::text)::text, '{{}}'),
    true
)
FROM held AS h
WHERE h.functions = (
    SELECT pg_catalog.count(*) FROM level_functions AS f WHERE f.level = h.level
);
"""

# At the end of the transaction (after the exact privileges of new objects): each such role
# gets the functions of its level that were not there at the start, as `jobq grant` would
# give them, and an admin SELECT on the jobq tables ({tables}) it cannot read yet.
_GRANT_LEVELS = """
-- Roles that held a whole level before this transaction get that level's new functions.
DO $jobq$
DECLARE
    v_grant record;
BEGIN
    FOR v_grant IN
        WITH roles AS (
            SELECT
                pg_catalog.split_part(r, ':', 1) AS level,
                pg_catalog.split_part(r, ':', 2)::oid AS grantee
            FROM pg_catalog.unnest(
                pg_catalog.current_setting('jobq.level_roles')::text[]
            ) AS r
        ),
        levels (level, functions) AS (
            VALUES {levels}
        ),
        added AS (
            SELECT p.proname::text AS name, p.proacl
            FROM pg_catalog.pg_proc AS p
            JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
            WHERE n.nspname = {schema}
              AND p.prokind = 'f'
              AND pg_catalog.left(p.proname, 5) = 'jobq_'
              AND pg_catalog.left(p.proname, 6) <> 'jobq__'
              AND NOT p.proname::text = ANY (
                  pg_catalog.current_setting('jobq.functions_before')::text[]
              )
        )
        SELECT g.* FROM (
            -- a function new in several of a role's levels: granted once, for the narrowest
            SELECT DISTINCT ON (r.grantee, a.name)
                'EXECUTE' AS privilege, 'FUNCTION' AS kind, a.name, r.grantee, r.level
            FROM roles AS r
            JOIN levels AS l ON l.level = r.level
            JOIN added AS a ON l.functions IS NULL OR a.name = ANY (l.functions)
            -- not one it got otherwise (a renamed function's grants, --! granted-as)
            WHERE NOT EXISTS (
                SELECT FROM pg_catalog.aclexplode(a.proacl) AS x
                WHERE x.grantee = r.grantee AND x.privilege_type = 'EXECUTE'
            )
            ORDER BY r.grantee, a.name, pg_catalog.array_position(
                ARRAY['producer', 'worker', 'monitor', 'admin'], r.level
            )
        ) AS g
        UNION ALL
        SELECT 'SELECT', 'TABLE', c.relname::text, r.grantee, r.level
        FROM roles AS r
        JOIN pg_catalog.pg_class AS c ON c.relname::text = ANY (ARRAY[{tables}]::text[])
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE r.level = 'admin'
          AND n.nspname = {schema}
          AND NOT EXISTS (
              SELECT FROM pg_catalog.aclexplode(c.relacl) AS a
              WHERE a.grantee = r.grantee AND a.privilege_type = 'SELECT'
          )
        ORDER BY 4, 2, 3
    LOOP
        CONTINUE WHEN NOT EXISTS (
            SELECT FROM pg_catalog.pg_roles AS o WHERE o.oid = v_grant.grantee
        );
        EXECUTE pg_catalog.format(
            'GRANT %s ON %s %I.%I TO %I', v_grant.privilege, v_grant.kind, {schema},
            v_grant.name, pg_catalog.pg_get_userbyid(v_grant.grantee)
        );
        RAISE NOTICE 'jobq migrate: granted % on % to % (it held the % level of schema %)',
            v_grant.privilege, v_grant.name,
            pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(v_grant.grantee)),
            v_grant.level, {schema};
    END LOOP;
END
$jobq$;
"""

_GRANT_NOTICE = "jobq migrate: granted "


def _level_values(files: list[FunctionFile]) -> str:
    """The ``VALUES`` rows of the levels: each with its public functions; admin NULL (all)."""
    rows = []
    for level in GRANT_LEVELS:
        if level == "admin":
            rows.append("('admin', NULL::text[])")
            continue
        names = [f.name for f in files if level in f.levels and not f.private]
        items = ", ".join(sql.Literal(n).as_string(None) for n in names)
        rows.append(f"({sql.Literal(level).as_string(None)}, ARRAY[{items}]::text[])")
    return ",\n        ".join(rows)


def _note_levels(schema: str, files: list[FunctionFile]) -> sql.SQL:
    return sql.SQL(
        _NOTE_LEVELS.format(schema=sql.Literal(schema).as_string(None), levels=_level_values(files))
    )


def _grant_levels(schema: str, files: list[FunctionFile]) -> sql.SQL:
    return sql.SQL(
        _GRANT_LEVELS.format(
            schema=sql.Literal(schema).as_string(None),
            levels=_level_values(files),
            tables=", ".join(sql.Literal(t).as_string(None) for t in ADMIN_TABLES),
        )
    )


def _level_steps(schema: str, files: list[FunctionFile]) -> list[tuple[str, sql.Composed]]:
    """A transaction of its own for the levels, when migrations ran but no function file did
    (an admin gets SELECT on a table a migration added)."""
    return [
        ("the setup of the grants",
         sql.Composed([_search_path(schema), _note_levels(schema, files)])),
        ("the grants of the levels", sql.Composed([_grant_levels(schema, files)])),
    ]


def _function_steps(
    schema: str, files: list[FunctionFile], every_file: list[FunctionFile] | None = None
) -> list[tuple[str, sql.Composed]]:
    """The steps of the function files' transaction, each with what to call it in an error:
    the setup, each file with its record, the privileges of new objects, the check, and the
    grants that carry the levels of roles over to the new functions (the levels are read from
    ``every_file``, by default ``files``)."""
    every = files if every_file is None else every_file
    steps = [
        ("the setup of the function files",
         sql.Composed([_search_path(schema), _note_existing(schema), _note_levels(schema, every)])),
    ]
    for f in files:
        parts: list[sql.Composable] = [sql.SQL(f"-- {f.version} (sha256 {f.checksum})\n")]
        if f.replaces:
            parts.append(
                sql.SQL(
                    _DROP_REPLACED.format(
                        name=f.name,
                        signatures=", ".join(sql.Literal(s).as_string(None) for s in f.replaces),
                    )
                )
            )
        if f.granted_as:
            literal = sql.Literal(f.name).as_string(None)
            parts.append(sql.SQL(_NOTE_NEW.format(name=f.name, literal=literal)))
        parts.append(sql.SQL(f.sql))  # trusted: our own file
        parts.append(
            sql.SQL(
                "\nINSERT INTO {s}.jobq_migrations (version, checksum, applied_at)"
                " VALUES ({v}, {c}, pg_catalog.now())\n"
                "ON CONFLICT (version) DO UPDATE SET checksum = excluded.checksum, "
                "applied_at = excluded.applied_at;\n"
            ).format(
                s=sql.Identifier(schema), v=sql.Literal(f.version), c=sql.Literal(f.checksum)
            )
        )
        if f.renamed_from:
            parts.append(
                sql.SQL("DELETE FROM {s}.jobq_migrations WHERE version IN ({old});\n").format(
                    s=sql.Identifier(schema),
                    old=sql.SQL(", ").join(
                        sql.Literal(_FUNCTIONS_PREFIX + name) for name in f.renamed_from
                    ),
                )
            )
        steps.append((f"function file {f.path.name}", sql.Composed(parts)))
    # before the check, which gives a function the grants of the signatures it replaced
    steps.append(("the privileges of the new functions", sql.Composed([_exact_privileges(schema)])))
    granted_as = [
        sql.SQL(
            _GRANT_AS.format(
                name=f.name,
                literal=sql.Literal(f.name).as_string(None),
                sources=", ".join(sql.Literal(n).as_string(None) for n in f.granted_as),
            )
        )
        for f in files
        if f.granted_as
    ]
    names = ",\n        ".join(sql.Literal(f.name).as_string(None) for f in files)
    steps.append(
        ("the check of the function files",
         sql.Composed([sql.SQL(_CHECK_FUNCTIONS.format(names=names))]))
    )
    # after the check, which gives a function that replaced older signatures their grants: a
    # new function granted as one that this upgrade replaced gets that one's grantees too
    if granted_as:
        steps.append(("the grants of the new functions (--! granted-as)", sql.Composed(granted_as)))
    steps.append(("the grants of the levels", sql.Composed([_grant_levels(schema, every)])))
    return steps


def _apply_functions(
    schema: str, files: list[FunctionFile], every_file: list[FunctionFile] | None = None
) -> sql.Composed:
    """The body of the function files' transaction: each file and its record, the check, the
    grants of the levels."""
    return sql.Composed([step for _, step in _function_steps(schema, files, every_file)])


def _execute(
    conn: psycopg.Connection[tuple[str, str]], step: sql.Composed, what: str, schema: str
) -> None:
    """Run one step of a migration; an error names the step (the file) and the schema."""
    try:
        _run_script(conn, step)
    except psycopg.Error as exc:
        diag = exc.diag
        message = diag.message_primary or str(exc).strip()
        detail = f" ({diag.message_detail})" if diag.message_detail else ""
        context = diag.context.strip().splitlines()[0] if diag.context else ""
        where = "" if not context or "inline_code_block" in context else f"; {context}"
        hint = f" Hint: {diag.message_hint}" if diag.message_hint else ""
        raise MigrationError(
            f"{what} failed in schema {schema!r}: {message}{detail}"
            f" [SQLSTATE {exc.sqlstate}]{where}; nothing of it was applied.{hint}"
        ) from exc


def _run_script(conn: psycopg.Connection[tuple[str, str]], script: sql.Composed) -> None:
    """Run a script of several statements one statement at a time.

    PostgreSQL itself takes a script in one simple query, but Citus propagates some DDL to its
    nodes with the text of the whole query as one prepared statement, which the node refuses
    ("cannot insert multiple commands into a prepared statement"). One statement per query is
    the same for PostgreSQL and works for Citus; sqlparse splits (dollar quotes and comments
    included).
    """
    for statement in sqlparse.split(script.as_string(conn)):
        if statement.strip():
            conn.execute(statement.encode())


# -- what is applied, what is pending ----------------------------------------------------------


def _applied(conn: psycopg.Connection[tuple[str, str]], schema: str) -> dict[str, str]:
    exists = conn.execute(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_class AS c"
        " JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace"
        " WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name"
        " AND c.relname OPERATOR(pg_catalog.=) 'jobq_migrations'::pg_catalog.name)",
        {"schema": schema},
    ).fetchone()
    if not exists or not exists[0]:
        return {}
    rows = conn.execute(
        sql.SQL("SELECT version, checksum FROM {}.jobq_migrations ORDER BY version").format(
            sql.Identifier(schema)
        )
    ).fetchall()
    return {version: checksum for version, checksum in rows}


def _folded_records(applied: dict[str, str], schema: str) -> tuple[str, ...]:
    """The folded versions recorded in ``applied``, when it holds a development install."""
    folded = dict(FOLDED)
    if applied.get(FOLDED_INTO) != folded[FOLDED_INTO]:
        return ()
    recorded = tuple(v for v, _ in FOLDED if v in applied)
    expected = tuple(v for v, _ in FOLDED[: len(recorded)])
    others = sorted(v for v in applied if v not in folded)
    wrong = [v for v in recorded if applied[v] != folded[v]]
    if recorded != expected or others or wrong:
        raise MigrationError(
            f"schema {schema!r} was installed by a development version of jobq "
            f"({', '.join(sorted(v for v in applied if v in folded))}), but its records do not "
            "match one this jobq can upgrade"
            + (f": {', '.join(wrong)} differ from the files that version had" if wrong else "")
            + (f"; it also records {', '.join(others)}" if others else "")
            + (f"; versions are missing before {recorded[-1]}" if recorded != expected else "")
            + ". Recognised: the first N of "
            + ", ".join(v for v, _ in FOLDED)
            + " with the checksums of jobq's main branch at commit dcd3357"
        )
    return recorded


def plan(
    conn: psycopg.Connection[tuple[str, str]],
    schema: str = "public",
    *,
    migrations_dir: Path | None = None,
    functions_dir: Path | None = None,
) -> Plan:
    """Verify what ``schema`` records against the files; return what is to be done.

    ``migrations_dir`` and ``functions_dir`` replace the shipped files (for tests).
    """
    return _plan(
        _applied(conn, schema),
        available_migrations(migrations_dir),
        function_files(functions_dir),
        schema,
        function_history(functions_dir),
    )


def _plan(
    applied: dict[str, str],
    known: list[Migration],
    functions: list[FunctionFile],
    schema: str,
    history: dict[str, frozenset[str]],
) -> Plan:
    adopt = _folded_records(applied, schema)
    if adopt:
        baseline = next((m for m in known if m.version == FOLDED_INTO), None)
        if baseline is None:
            raise MigrationError(f"no migration {FOLDED_INTO} to adopt schema {schema!r} into")
        applied = {FOLDED_INTO: baseline.checksum}
    by_version = {m.version: m for m in known}
    by_file = {f.version: f for f in functions}
    renamed = {_FUNCTIONS_PREFIX + old: f for f in functions for old in f.renamed_from}
    for version, checksum in applied.items():
        if version.startswith(_FUNCTIONS_PREFIX):
            if version not in by_file and version not in renamed:
                raise MigrationError(
                    f"schema {schema!r} has function file {version} applied, which this jobq "
                    "does not know: upgrade the jobq package before migrating (a function "
                    "that jobq no longer has is dropped by a migration that also deletes its "
                    "record)"
                )
            continue
        migration = by_version.get(version)
        if migration is None:
            raise MigrationError(
                f"schema {schema!r} has migration {version} applied, which this jobq does not "
                "know: upgrade the jobq package before migrating"
            )
        if migration.checksum != checksum:
            raise MigrationError(
                f"migration {version} was edited after it was applied to schema {schema!r} "
                f"(recorded sha256 {checksum[:12]}…, file now {migration.checksum[:12]}…): "
                "migrations are forward-only; restore the file and add a new migration"
            )
    # A recorded version of a function file that this jobq never shipped: a newer jobq applied
    # it (or a development build did). Applying ours would put older bodies back.
    unknown = [
        f.version
        for f in functions
        if applied.get(f.version) not in (None, f.checksum, *history.get(f.name, ()))
    ]
    if unknown:
        raise MigrationError(
            f"schema {schema!r} was migrated by a newer jobq: its function file(s) "
            f"{', '.join(unknown)} were applied from versions that this jobq does not know, "
            "and applying its own would put older bodies back. Upgrade the jobq package. "
            "(To install this jobq's functions anyway, as for a development build, delete "
            f"their records first: DELETE FROM {sql.Identifier(schema).as_string(None)}"
            ".jobq_migrations WHERE version LIKE 'functions/%'.)"
        )
    return Plan(
        adopt=adopt,
        migrations=[m for m in known if m.version not in applied],
        functions=[
            f
            for f in functions
            if applied.get(f.version) != f.checksum
            or any(_FUNCTIONS_PREFIX + old in applied for old in f.renamed_from)
        ],
    )


def pending_migrations(
    conn: psycopg.Connection[tuple[str, str]], schema: str = "public"
) -> list[Migration]:
    """The migrations not yet applied to ``schema`` (after verifying the applied ones)."""
    return plan(conn, schema).migrations


def migrate(
    conninfo: str,
    schema: str = "public",
    dry_run: bool = False,
    *,
    force: bool = False,
    migrations_dir: Path | None = None,
    functions_dir: Path | None = None,
) -> list[str]:
    """Apply what is pending in ``schema`` and return the versions applied, in order.

    The versions are those of the numbered migrations, then ``functions/<name>`` for each
    function file applied. Idempotent: a second run applies nothing and returns ``[]``. With
    ``dry_run`` nothing is changed and the versions that would be applied are returned.
    ``migrations_dir`` and ``functions_dir`` replace the shipped files (for tests). It refuses
    a schema that another role controls (:func:`control_findings`) unless ``force``.
    """
    _validate_schema(schema)
    known = available_migrations(migrations_dir)
    functions = function_files(functions_dir)
    history = function_history(functions_dir)
    with psycopg.connect(conninfo, autocommit=True, **_sql.connect_kwargs(conninfo)) as conn:
        if dry_run:
            return _plan(_applied(conn, schema), known, functions, schema, history).versions
        findings = control_findings(conn, schema)
        if findings and not force:
            raise MigrationError(
                f"schema {schema!r} is not under jobq's owner's control alone, so an upgrade "
                "could run what another role planted there: " + "; ".join(findings)
                + ". Fix it (docs/security.md, 'Install safely'), or run with --force"
            )
        for finding in findings:
            logger.warning("%s (migrating anyway: --force)", finding)
        _lock(conn, schema)
        try:
            distribute = _citus_schema_sharding(conn)
            # Verify before the bootstrap writes anything (it rewrites the table's comment).
            _plan(_applied(conn, schema), known, functions, schema, history)
            with conn.transaction():
                _run_script(conn, _bootstrap(schema))
            todo = _plan(_applied(conn, schema), known, functions, schema, history)
            if todo.adopt:
                logger.info(
                    "schema %r: recording %s (development install) as %s",
                    schema,
                    ", ".join(todo.adopt),
                    FOLDED_INTO,
                )
                baseline = next(m for m in known if m.version == FOLDED_INTO)
                with conn.transaction():
                    _run_script(conn, _adopt(schema, todo.adopt, baseline))
            for migration in todo.migrations:
                with conn.transaction():
                    _execute(conn, _apply(schema, migration), f"migration {migration.version}.sql",
                             schema)
            if todo.functions:
                steps = _function_steps(schema, todo.functions, functions)
            elif todo.migrations:
                steps = _level_steps(schema, functions)
            else:
                steps = []
            if steps:
                conn.add_notice_handler(_log_grant)
                try:
                    with conn.transaction():
                        for what, step in steps:
                            _execute(conn, step, what, schema)
                finally:
                    conn.remove_notice_handler(_log_grant)
            if distribute:
                _citus_distribute(conn, schema, functions)
            for finding in _audit(conn, schema):
                logger.warning("%s", finding)
            return todo.versions
        finally:
            conn.execute("SELECT pg_catalog.pg_advisory_unlock_all()")


# The function setting that a Citus install resets (see _citus_distribute); jobq doctor does
# not report it missing there.
_CITUS_RESET = "plan_cache_mode"
# The functions that a Citus install lets run a distributed statement from inside a statement
# on a shard, with the setting that does it and the schema's search_path (see
# _citus_distribute); jobq doctor expects both.
_CITUS_NESTED = ("jobq__metrics_count",)
_CITUS_NESTED_SETTING = "citus.allow_nested_distributed_execution"


def _citus_distributed(conn: psycopg.Connection[Any], schema: str) -> bool:
    """Whether ``schema`` is a Citus distributed schema (False without Citus)."""
    row = conn.execute(
        "SELECT pg_catalog.to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL"
    ).fetchone()
    if not row or not row[0]:
        return False
    row = conn.execute(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_schema"
        " WHERE schemaid = pg_catalog.to_regnamespace(%(s)s::text))",
        {"s": sql.Identifier(schema).as_string(conn)},
    ).fetchone()
    return bool(row and row[0])


def _citus_schema_sharding(conn: psycopg.Connection[tuple[str, str]]) -> bool:
    """On a Citus coordinator with schema-based sharding on, whether to distribute the schema.

    Citus restricts DDL on distributed tables (one ADD CONSTRAINT per ALTER TABLE, ...), and a
    schema becomes distributed as soon as it is created, or touched by CREATE SCHEMA IF NOT
    EXISTS, with the setting on. So the runner turns the setting off for its own session,
    builds or upgrades the schema as on PostgreSQL, and distributes it at the end
    (:func:`_citus_distribute`). Without Citus the setting does not exist: nothing changes.
    """
    setting = conn.execute(
        "SELECT pg_catalog.current_setting('citus.enable_schema_based_sharding', true)"
    ).fetchone()
    if setting is None or setting[0] != "on":
        return False
    conn.execute("SET citus.enable_schema_based_sharding = off")
    return True


def _citus_distribute(
    conn: psycopg.Connection[tuple[str, str]], schema: str, functions: list[FunctionFile]
) -> None:
    """Make ``schema`` a Citus distributed schema and its functions delegated to its node.

    ``citus_schema_distribute`` moves the tables, whole, to one node (a schema is one colocation
    group). Each function is then made a distributed function colocated with ``jobq_jobs``: it
    exists on every node, and a call from the coordinator outside a transaction block
    (``SELECT * FROM s.jobq_dequeue(...)``) runs on the node that holds the schema, where its
    statements are local. Functions are distributed in the order they are applied (private
    helpers first), because a node checks a SQL function's body against the functions it calls.
    Idempotent: what is already distributed is left alone.
    """
    if schema == "public":
        logger.warning("schema 'public' cannot be a Citus distributed schema: jobq stays on "
                       "the coordinator (install it with --schema NAME to distribute it)")
        return
    if not _citus_distributed(conn, schema):
        logger.info("schema %r: distributing it over the Citus cluster", schema)
        conn.execute(
            "SELECT pg_catalog.citus_schema_distribute(%(s)s::text::pg_catalog.regnamespace)",
            {"s": sql.Identifier(schema).as_string(conn)},
        )
    jobs = sql.Identifier(schema, "jobq_jobs").as_string(conn)
    with conn.transaction():
        # A node creates the function with Citus's own search_path, where the helpers that a
        # SQL function's body names are not found: it checks no body (each was checked here).
        conn.execute("SET LOCAL citus.propagate_set_commands TO 'local'")
        conn.execute("SET LOCAL check_function_bodies TO off")
        _citus_distribute_functions(conn, schema, functions, jobs)
        # Citus plans a statement with parameters by forcing a custom plan; a function's own
        # `SET plan_cache_mode = force_generic_plan` defeats that ("could not create
        # distributed plan"). On Citus the functions use the default.
        rows = conn.execute(
            "SELECT p.oid::pg_catalog.regprocedure::text FROM pg_catalog.pg_proc AS p"
            " WHERE p.pronamespace = pg_catalog.to_regnamespace(%(s)s::text)"
            " AND pg_catalog.array_to_string(p.proconfig, ',')"
            "     LIKE '%%' || %(setting)s::text || '=%%'",
            {"s": sql.Identifier(schema).as_string(conn), "setting": _CITUS_RESET},
        ).fetchall()
        for row in rows:
            conn.execute(
                sql.SQL("ALTER FUNCTION {} RESET {}").format(
                    sql.SQL(row[0]), sql.Identifier(_CITUS_RESET)
                )
            )
        # The counters are written by jobq__metrics_count, which the jobq functions call from
        # inside their statements on jobq_jobs (so that a batch is counted from what it
        # returned). Under Citus that statement runs on the schema's shard and the counter
        # table is another distributed table: Citus refuses such a nested statement unless
        # told it may. It is safe here: both tables are colocated on the same node, and the
        # nested statement runs locally, in the same transaction. A call that is not
        # delegated (a claim inside a transaction block on the coordinator) sends that
        # statement to the node, which runs it in a session of Citus's own: the function
        # then needs the schema's search_path of its own to find its tables.
        rows = conn.execute(
            "SELECT p.oid::pg_catalog.regprocedure::text FROM pg_catalog.pg_proc AS p"
            " WHERE p.pronamespace = pg_catalog.to_regnamespace(%(s)s::text)"
            " AND p.proname = ANY (%(names)s::text[])",
            {"s": sql.Identifier(schema).as_string(conn), "names": list(_CITUS_NESTED)},
        ).fetchall()
        for row in rows:
            conn.execute(
                sql.SQL("ALTER FUNCTION {} SET {} = on").format(
                    sql.SQL(row[0]), sql.SQL(_CITUS_NESTED_SETTING)
                )
            )
            conn.execute(
                sql.SQL("ALTER FUNCTION {} SET search_path = {}, pg_temp").format(
                    sql.SQL(row[0]), sql.Identifier(schema)
                )
            )
        # citus_schema_move copies the schema to its new node by logical replication while
        # it stays writable, which needs every table's rows identified: jobq_metric_deltas
        # (appended, then deleted by the fold; no key) gets REPLICA IDENTITY FULL. Its cost:
        # with wal_level = logical, which Citus's moves need, a delete logs the whole row,
        # and these rows are small.
        rows = conn.execute(
            "SELECT c.oid::pg_catalog.regclass::text FROM pg_catalog.pg_class AS c"
            " WHERE c.relnamespace = pg_catalog.to_regnamespace(%(s)s::text)"
            " AND c.relkind = 'r' AND c.relreplident = 'd'"
            " AND NOT EXISTS (SELECT FROM pg_catalog.pg_index AS i"
            "   WHERE i.indrelid = c.oid AND i.indisprimary)",
            {"s": sql.Identifier(schema).as_string(conn)},
        ).fetchall()
        for row in rows:
            conn.execute(sql.SQL("ALTER TABLE {} REPLICA IDENTITY FULL").format(sql.SQL(row[0])))


def _citus_distribute_functions(
    conn: psycopg.Connection[tuple[str, str]], schema: str, functions: list[FunctionFile],
    jobs: str,
) -> None:
    """create_distributed_function for each function of the files not yet colocated."""
    for f in functions:
        rows = conn.execute(
            "SELECT p.oid::pg_catalog.regprocedure::text FROM pg_catalog.pg_proc AS p"
            " WHERE p.pronamespace = pg_catalog.to_regnamespace(%(s)s::text)"
            " AND p.proname = %(n)s::text"
            " AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_object AS o"
            "   WHERE o.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass"
            "   AND o.objid = p.oid AND o.colocationid IS NOT NULL)",
            {"s": sql.Identifier(schema).as_string(conn), "n": f.name},
        ).fetchall()
        for row in rows:
            conn.execute(
                "SELECT pg_catalog.create_distributed_function(%(f)s::pg_catalog.regprocedure,"
                " colocate_with => %(t)s::text)",
                {"f": row[0], "t": jobs},
            )


def _log_grant(diag: psycopg.errors.Diagnostic) -> None:
    """A NOTICE of the grants of the levels, as one INFO line of ``grant_logger``."""
    message = diag.message_primary or ""
    if message.startswith(_GRANT_NOTICE):
        grant_logger.info("%s", message[len("jobq migrate: "):])


def render_dry_run(
    conninfo: str | None,
    schema: str = "public",
    *,
    migrations_dir: Path | None = None,
    functions_dir: Path | None = None,
) -> str:
    """The SQL that :func:`migrate` would run, as a psql script.

    With a connection, only what is pending; without one, everything (for a new database).
    Each migration is one transaction, the function files one more; ``ON_ERROR_STOP`` makes
    psql stop at the first error.
    """
    _validate_schema(schema)
    known = available_migrations(migrations_dir)
    functions = function_files(functions_dir)
    if conninfo is None:
        todo = Plan(adopt=(), migrations=known, functions=functions)
        header = "everything (no database was asked what is applied)"
    else:
        with psycopg.connect(conninfo, autocommit=True, **_sql.connect_kwargs(conninfo)) as conn:
            todo = _plan(
                _applied(conn, schema), known, functions, schema, function_history(functions_dir)
            )
        header = (
            f"{len(todo.migrations)} pending migration(s), "
            f"{len(todo.functions)} function file(s) to apply"
        )
        if todo.adopt:
            header += f", and the records of a development install ({', '.join(todo.adopt)})"
    parts = [
        f"-- jobq migrate --dry-run: {header} for schema {schema!r}.",
        "-- Apply with: psql -v ON_ERROR_STOP=1 -f this_file.sql",
        "\\set ON_ERROR_STOP on",
        "-- Only built-ins, whatever search_path psql has: nothing another role created in a",
        "-- schema on it can be chosen by this script (each transaction then sets its own).",
        "SET search_path = pg_catalog, pg_temp;",
        "BEGIN;",
        _bootstrap(schema, lock_table=True).as_string(None),
        "COMMIT;",
    ]
    if todo.adopt:
        baseline = next(m for m in known if m.version == FOLDED_INTO)
        parts += ["BEGIN;", _adopt(schema, todo.adopt, baseline).as_string(None), "COMMIT;"]
    for migration in todo.migrations:
        parts += [
            f"-- migration {migration.version} (sha256 {migration.checksum})",
            "BEGIN;",
            _apply(schema, migration).as_string(None),
            "COMMIT;",
        ]
    if todo.functions:
        parts += [
            f"-- {len(todo.functions)} function file(s), in one transaction",
            "BEGIN;",
            _apply_functions(schema, todo.functions, functions).as_string(None),
            "COMMIT;",
        ]
    elif todo.migrations:
        parts += [
            "-- the grants of the levels of roles granted before",
            "BEGIN;",
            sql.Composed([step for _, step in _level_steps(schema, functions)]).as_string(None),
            "COMMIT;",
        ]
    return "\n".join(parts) + "\n"


# -- what clients check ------------------------------------------------------------------------


@cache
def _shipped_versions() -> frozenset[str]:
    return frozenset(m.version for m in available_migrations())


def latest_breaking_change(conn: psycopg.Connection[Any], schema: str | None) -> str | None:
    """The version of the latest breaking change applied to ``schema`` (None: the schema the
    search_path finds), or None when it has none (or has no jobq at all).

    Read from the comment of ``jobq_migrations`` in the catalogue, so that any role can ask.
    """
    with conn.cursor(row_factory=scalar_row) as cur:
        description = cur.execute(_sql.MIGRATIONS_COMMENT, {"schema": schema}).fetchone()
    return breaking_change_in(description)


def breaking_change_in(description: str | None) -> str | None:
    """The latest breaking change named in a comment of ``jobq_migrations``
    (``_sql.MIGRATIONS_COMMENT``), or None."""
    match = _LATEST_BREAKING.search(description or "")
    return match.group(1) if match else None


def check_compatible(
    conn: psycopg.Connection[Any], schema: str | None, *, known: Iterable[str] | None = None
) -> None:
    """Raise :class:`~pgq_client.errors.IncompatibleSchema` when ``schema``'s latest breaking
    change is a migration that this jobq (or ``known``, a list of versions) does not have.

    One catalogue query: Queue and Worker call it once, before their first statement.
    """
    error = incompatibility(latest_breaking_change(conn, schema), schema, known=known)
    if error is not None:
        raise error


def incompatibility(
    latest: str | None, schema: str | None, *, known: Iterable[str] | None = None
) -> IncompatibleSchema | None:
    """The error for a schema whose latest breaking change is ``latest``, when this jobq (or
    ``known``) does not have that migration; None when it does (or there is none)."""
    if latest is None or latest in (_shipped_versions() if known is None else set(known)):
        return None
    where = "the jobq schema on the search_path" if schema is None else f"schema {schema!r}"
    try:
        version = importlib.metadata.version("pgq-client")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
        version = "unknown version"
    return IncompatibleSchema(
        f"{where} was migrated by a newer jobq: its migration {latest} is a breaking change "
        f"that this client (pgq-client {version}) does not have, so it cannot work with this "
        "schema. Upgrade the pgq-client package where this runs: every producer and worker of "
        "a schema must have its latest breaking change."
    )


def _validate_schema(schema: str) -> None:
    # PostgreSQL cuts an identifier to 63 bytes (NOTICE only): a longer name would install into
    # a schema of another name than the one given. Bytes, not characters: 'ü' takes two.
    # Control characters (line ends among them) are refused: the name is written into SQL
    # comments and messages, where a line end would end the comment (--dry-run's script).
    size = len(schema.encode("utf-8", errors="surrogatepass"))
    control = any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in schema)
    if not schema or not schema.strip() or size > 63 or control:
        raise MigrationError(
            f"schema must be a non-blank name of at most 63 bytes without control characters, "
            f"got {schema!r}"
            + (f" ({size} bytes in UTF-8)" if size > 63 else "")
        )


# Who else controls a schema, from the catalogue alone (no jobq function is called: one could
# be what another role planted). jobq's owner is the owner of jobq_migrations, or the role that
# runs this before there is one; its members and superusers are trusted as it is. Found:
# objects in the schema that another role owns (a function, operator, type, table... planted
# beside jobq's), and roles that may CREATE there (as the schema's owner, by a grant, or
# through a role they may become; a predefined pg_ role, such as pg_database_owner, through
# its members), or PUBLIC's CREATE. Every operator and function is named in
# pg_catalog, though the connections jobq opens find nothing else (search_path).
_CONTROL = """
WITH s AS (
    SELECT n.oid, n.nspowner, n.nspacl
    FROM pg_catalog.pg_namespace AS n
    WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name
), o AS (
    SELECT coalesce(
        (SELECT c.relowner FROM pg_catalog.pg_class AS c, s
         WHERE c.relnamespace OPERATOR(pg_catalog.=) s.oid
           AND c.relname OPERATOR(pg_catalog.=) 'jobq_migrations'::pg_catalog.name),
        (SELECT r.oid FROM pg_catalog.pg_roles AS r
         WHERE r.rolname OPERATOR(pg_catalog.=) current_user)
    ) AS owner
), objects (kind, name, owner) AS (
    SELECT 'relation', c.relname::pg_catalog.text, c.relowner
    FROM pg_catalog.pg_class AS c, s WHERE c.relnamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'function', p.oid::pg_catalog.regprocedure::pg_catalog.text, p.proowner
    FROM pg_catalog.pg_proc AS p, s WHERE p.pronamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'operator', p.oid::pg_catalog.regoperator::pg_catalog.text, p.oprowner
    FROM pg_catalog.pg_operator AS p, s WHERE p.oprnamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'type', t.oid::pg_catalog.regtype::pg_catalog.text, t.typowner
    FROM pg_catalog.pg_type AS t, s WHERE t.typnamespace OPERATOR(pg_catalog.=) s.oid
        -- a relation's row type and an array type follow their relation and element type
        AND t.typrelid OPERATOR(pg_catalog.=) 0::pg_catalog.oid
        AND t.typcategory OPERATOR(pg_catalog.<>) 'A'::pg_catalog."char"
    UNION ALL
    SELECT 'collation', c.collname::pg_catalog.text, c.collowner
    FROM pg_catalog.pg_collation AS c, s WHERE c.collnamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'conversion', c.conname::pg_catalog.text, c.conowner
    FROM pg_catalog.pg_conversion AS c, s WHERE c.connamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'operator class', c.opcname::pg_catalog.text, c.opcowner
    FROM pg_catalog.pg_opclass AS c, s WHERE c.opcnamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'operator family', f.opfname::pg_catalog.text, f.opfowner
    FROM pg_catalog.pg_opfamily AS f, s WHERE f.opfnamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'text search configuration', c.cfgname::pg_catalog.text, c.cfgowner
    FROM pg_catalog.pg_ts_config AS c, s WHERE c.cfgnamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'text search dictionary', d.dictname::pg_catalog.text, d.dictowner
    FROM pg_catalog.pg_ts_dict AS d, s WHERE d.dictnamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'statistics object', x.stxname::pg_catalog.text, x.stxowner
    FROM pg_catalog.pg_statistic_ext AS x, s WHERE x.stxnamespace OPERATOR(pg_catalog.=) s.oid
)
SELECT 0 AS sort, pg_catalog.format('%%s %%s belongs to %%s, not to jobq''s owner %%s',
    b.kind, b.name, b.owner::pg_catalog.regrole, o.owner::pg_catalog.regrole) AS finding
FROM objects AS b, o
WHERE b.owner OPERATOR(pg_catalog.<>) o.owner
  AND NOT pg_catalog.pg_has_role(b.owner, o.owner, 'MEMBER'::pg_catalog.text)
UNION ALL
SELECT 1, pg_catalog.format(
    'every role (PUBLIC) may CREATE in schema %%s', %(schema)s::pg_catalog.text)
FROM s, pg_catalog.aclexplode(s.nspacl) AS a
WHERE a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'::pg_catalog.text
  AND a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid
UNION ALL
SELECT 2, pg_catalog.format(
    'role %%s may CREATE in schema %%s', r.rolname, %(schema)s::pg_catalog.text)
FROM pg_catalog.pg_roles AS r, s, o
WHERE NOT r.rolsuper
  AND NOT pg_catalog.starts_with(r.rolname::pg_catalog.text, 'pg_'::pg_catalog.text)
  AND r.oid OPERATOR(pg_catalog.<>) o.owner
  AND NOT pg_catalog.pg_has_role(r.oid, o.owner, 'MEMBER'::pg_catalog.text)
  AND (pg_catalog.pg_has_role(r.oid, s.nspowner, 'MEMBER'::pg_catalog.text)
       OR EXISTS (
           SELECT FROM pg_catalog.aclexplode(s.nspacl) AS a
           WHERE a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'::pg_catalog.text
             AND a.grantee OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
             AND pg_catalog.pg_has_role(r.oid, a.grantee, 'MEMBER'::pg_catalog.text)))
ORDER BY 1, 2
"""


def control_findings(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    """Who else controls ``schema`` (see _CONTROL): objects there that jobq's owner does not
    own, and roles other than it (or its members, or superusers) that may CREATE there. Empty
    for a schema that does not exist yet. ``jobq migrate`` refuses such a schema unless forced;
    ``jobq doctor`` reports each finding."""
    return [str(row[1]) for row in conn.execute(_CONTROL, {"schema": schema})]


_AUDIT = """
SELECT h.detail FROM {schema}.jobq_health() AS h
WHERE h.check_name IN ('schema_owner', 'schema_create') AND h.severity <> 'ok'
ORDER BY h.check_name DESC
"""


def _audit(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    present = conn.execute(
        "SELECT pg_catalog.to_regproc(pg_catalog.format('%%I.jobq_health', %(s)s::text))",
        {"s": schema},
    ).fetchone()
    if not present or present[0] is None:
        return []  # an install without jobq_health (a test's own function files)
    findings = conn.execute(
        sql.SQL(_AUDIT).format(schema=sql.Identifier(schema))
    ).fetchall()
    return [
        f"{row[0]}: anyone who controls the schema can run code as jobq's owner (see "
        "docs/security.md, 'Install safely')"
        for row in findings
    ]


def audit(conninfo: str, schema: str = "public") -> list[str]:
    """Warnings about who else controls ``schema``: its owner, when that is not the owner of
    jobq's objects (nor a superuser), and roles other than that owner that may CREATE in it.
    :func:`migrate` logs them as warnings after each run; ``jobq doctor`` reports them too."""
    _validate_schema(schema)
    with psycopg.connect(conninfo, autocommit=True, **_sql.connect_kwargs(conninfo)) as conn:
        return _audit(conn, schema)


# -- does the schema hold what the files define? (jobq doctor) ---------------------------------

# Every jobq function of the schema, by signature (overloads are rows of their own), with what
# doctor compares to the files.
_INSTALLED_FUNCTIONS = """
SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text, p.proname::pg_catalog.text, p.prosrc,
       p.prosecdef, p.provolatile::pg_catalog.text, l.lanname::pg_catalog.text,
       coalesce(p.proconfig, '{}')::pg_catalog.text[]
FROM pg_catalog.pg_proc AS p
JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
JOIN pg_catalog.pg_language AS l ON l.oid OPERATOR(pg_catalog.=) p.prolang
WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name
  AND pg_catalog.starts_with(p.proname::pg_catalog.text, 'jobq_'::pg_catalog.text)
ORDER BY 1
"""

# The signature of each file's function as the schema would spell it (NULL: not installed).
_FILE_SIGNATURES = """
SELECT f.name, pg_catalog.to_regprocedure(pg_catalog.concat(
    pg_catalog.quote_ident(%(schema)s::pg_catalog.text), '.', f.signature
))::pg_catalog.text
FROM ROWS FROM (
    pg_catalog.unnest(%(names)s::pg_catalog.text[]),
    pg_catalog.unnest(%(signatures)s::pg_catalog.text[])
) AS f (name, signature)
"""

_REVOKE = re.compile(
    r"^REVOKE EXECUTE ON FUNCTION\s+(jobq_\w+\s*\(.*?\))\s+FROM PUBLIC;", re.M | re.S
)


def file_signature(f: FunctionFile) -> str:
    """``name(argument types)`` of a file's function, from its ``REVOKE ... FROM PUBLIC``."""
    found = _REVOKE.search(f.sql)
    if found is None:  # pragma: no cover - every file revokes (a test checks it)
        raise MigrationError(f"function file {f.path.name}: no REVOKE EXECUTE ... FROM PUBLIC")
    return " ".join(found.group(1).split()).replace("( ", "(").replace(" )", ")")


_VOLATILITY = {"VOLATILE": "v", "STABLE": "s", "IMMUTABLE": "i"}


@dataclass(frozen=True)
class _Expected:
    body: str
    definer: bool
    volatility: str
    language: str
    settings: frozenset[str]  # "name=value", search_path as "search_path=<schema>, pg_temp"


def _expected(f: FunctionFile) -> _Expected:
    header_match = re.search(r"CREATE OR REPLACE FUNCTION(.*?)\bAS \$\$(.*?)\$\$;", f.sql, re.S)
    if header_match is None:  # pragma: no cover - _read_function_file checked the CREATE
        raise MigrationError(f"function file {f.path.name}: no `AS $$ ... $$;` body")
    header, body = header_match.group(1), header_match.group(2)
    volatility = re.search(r"^(VOLATILE|STABLE|IMMUTABLE)\s*$", header, re.M)
    language = re.search(r"^LANGUAGE (\w+)", header, re.M)
    settings = {
        f"{m.group(1)}={m.group(2).strip()}"
        for m in re.finditer(r"^SET (\w+) = (.+?)\s*$", header, re.M)
    }
    if re.search(r"^SET search_path FROM CURRENT\s*$", header, re.M):
        settings.add("search_path")
    return _Expected(
        body=body,
        definer=re.search(r"^SECURITY DEFINER\s*$", header, re.M) is not None,
        volatility=_VOLATILITY[volatility.group(1)] if volatility else "v",
        language=language.group(1).lower() if language else "sql",
        settings=frozenset(settings),
    )


def _search_path_items(value: str) -> list[str]:
    items = []
    for item in value.split(","):
        item = item.strip()
        if len(item) >= 2 and item[0] == item[-1] == '"':
            item = item[1:-1].replace('""', '"')
        items.append(item)
    return items


def function_drift(
    conn: psycopg.Connection[Any], schema: str, files: list[FunctionFile] | None = None
) -> list[tuple[str, str]]:
    """How the functions installed in ``schema`` differ from this jobq's files, as
    (function, what differs): a body or a setting changed by hand (a ``CREATE OR REPLACE``
    without ``SECURITY DEFINER``, another search_path), a file not applied or half applied, a
    jobq function no file defines. Empty when the schema holds exactly what the files define.
    Reads only the catalogue, and ``jobq_migrations`` when the role may (an admin may)."""
    files = function_files() if files is None else files
    installed = {row[0]: row[2:] for row in conn.execute(_INSTALLED_FUNCTIONS, {"schema": schema})}
    expected = dict(
        conn.execute(
            _FILE_SIGNATURES,
            {
                "schema": schema,
                "names": [f.name for f in files],
                "signatures": [file_signature(f) for f in files],
            },
        ).fetchall()
    )
    citus = _citus_distributed(conn, schema)
    found: list[tuple[str, str]] = []
    for f in files:
        signature = expected.get(f.name)
        if signature is None or signature not in installed:
            found.append((
                f.name,
                f"not installed as {file_signature(f)} (sql/functions/{f.path.name}): run "
                "jobq migrate",
            ))
            continue
        prosrc, definer, volatility, language, config = installed[signature]
        want = _expected(f)
        if prosrc != want.body:
            found.append((f.name, f"its body differs from sql/functions/{f.path.name}"))
        if definer != want.definer:
            found.append((
                f.name,
                "is not SECURITY DEFINER, as its file says it is" if want.definer
                else "is SECURITY DEFINER, which its file does not say",
            ))
        if volatility != want.volatility or language != want.language:
            found.append((f.name, f"is {language} {volatility}, its file says "
                                  f"{want.language} {want.volatility}"))
        have: set[str] = set()
        for item in config:
            name, _, value = item.partition("=")
            if name == "search_path":
                have.add("search_path")
                if _search_path_items(value) != [schema, "pg_temp"]:
                    found.append((f.name, f"runs with search_path {value!r}, not the schema's"))
            else:
                have.add(item)
        wanted = set(want.settings)
        if citus:
            wanted = {item for item in wanted if not item.startswith(_CITUS_RESET + "=")}
            if f.name in _CITUS_NESTED:
                wanted |= {f"{_CITUS_NESTED_SETTING}=on", "search_path"}
        if have != wanted:
            found.append((
                f.name,
                f"its settings differ from its file: {sorted(have)} instead of "
                f"{sorted(want.settings)}",
            ))
    known = {signature for signature in expected.values() if signature is not None}
    found += [
        (signature, "no file of this jobq defines it (made by hand, an overload planted beside "
                    "jobq's, or a function of a newer jobq)")
        for signature in installed
        if signature not in known
    ]
    try:
        with conn.transaction():
            recorded = dict(
                conn.execute(
                    sql.SQL("SELECT version, checksum FROM {}.jobq_migrations").format(
                        sql.Identifier(schema)
                    )
                ).fetchall()
            )
    except psycopg.errors.InsufficientPrivilege:
        return found
    found += [
        (f.name, f"sql/functions/{f.path.name} is not applied in its current version: run "
                 "jobq migrate")
        for f in files
        if expected.get(f.name) in installed and recorded.get(f.version) != f.checksum
    ]
    return found
