"""The statements of each transaction of a run, shared by the runner and ``--dry-run``.

Every step runs with ``search_path`` set to the target schema (then ``pg_temp``), so every
object lands in that schema and every function captures it (``SET search_path FROM CURRENT``).
Each transaction notes the objects that exist when it starts and ends by giving those it
created exactly jobq's privileges (``sql/exact_privileges.sql``).
"""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg import sql

from .. import _sql
from .files import FUNCTIONS_PREFIX, FunctionFile, Migration, literal, statement
from .levels import ADMIN_TABLES, LEVELS
from .plan import Plan, applied, check, load

Step = tuple[str, sql.Composed]


def _setup(schema: str) -> sql.Composed:
    return statement("search_path", schema) + statement("note_existing", schema)


def creating(schema: str, *steps: sql.Composable) -> sql.Composed:
    """``steps`` in ``schema``, created if missing, then what they made given exactly jobq's
    privileges."""
    return sql.Composed([
        statement("note_existing", schema),
        statement("create_schema", schema),
        *steps,
        statement("exact_privileges", schema),
    ])


def bootstrap(schema: str, *, with_lock_table: bool = False) -> sql.Composed:
    """jobq_migrations and its comment. The runner makes the lock table before it takes the
    lock (a concurrent run may still be writing its ACL here); only the dry-run script, which
    takes no lock, makes it here."""
    lock_table = [statement("lock_table", schema)] if with_lock_table else []
    return creating(
        schema, statement("bootstrap", schema), *lock_table, statement("search_path", schema),
        statement("describe"),
    )


def _record(schema: str, version: str, checksum: str, breaking: bool = False) -> sql.Composed:
    return statement("record", schema, version=version, checksum=checksum, breaking=breaking)


def _migration(schema: str, migration: Migration) -> sql.Composed:
    """One migration's transaction: the file, its record (and, for a breaking change, the
    comment that tells clients about it), the privileges of new objects."""
    return sql.Composed([
        _setup(schema),
        sql.SQL(migration.sql),  # trusted: our own file
        _record(schema, migration.version, migration.checksum, migration.breaking),
        *([statement("describe")] if migration.breaking else []),
        statement("exact_privileges", schema),
    ])


def _levels(name: str, schema: str, files: list[FunctionFile]) -> sql.Composed:
    """note_levels.sql or grant_levels.sql, with each level and its public functions (admin:
    NULL, every public function) in the order of :data:`.levels.LEVELS`."""
    rows = sql.SQL(",\n        ").join(
        sql.SQL("({}, NULL::text[])").format(literal(level)) if level == "admin"
        else sql.SQL("({}, ARRAY[{}]::text[])").format(
            literal(level), literal([f.name for f in files if level in f.levels and not f.private])
        )
        for level in LEVELS
    )
    return statement(name, schema, levels=rows, level_order=LEVELS, tables=ADMIN_TABLES)


def _file(schema: str, f: FunctionFile) -> sql.Composed:
    """One function file with its record, after dropping the signatures it replaces."""
    parts: list[sql.Composable] = [sql.SQL(f"-- {f.version} (sha256 {f.checksum})\n")]
    if f.replaces:
        setting = "jobq.replaced_acl_" + f.name
        parts.append(statement("drop_replaced", signatures=f.replaces, setting=setting))
    if f.granted_as:
        parts.append(statement("note_new", name=f.name, setting="jobq.new_" + f.name))
    parts += [sql.SQL(f.sql), _record(schema, f.version, f.checksum)]  # trusted: our own file
    if f.renamed_from:
        versions = [FUNCTIONS_PREFIX + name for name in f.renamed_from]
        parts.append(statement("forget_renamed", schema, versions=versions))
    return sql.Composed(parts)


def transactions(
    schema: str, todo: Plan, every: list[FunctionFile]
) -> list[tuple[str, list[Step]]]:
    """Each transaction of a run after the bootstrap, with the line that heads it in a script,
    as its steps (each named for an error): one per migration, then one for the function
    files, which ends with the grants that carry roles' levels over to new functions (read
    from ``every``) and new tables."""
    done = [
        (f"-- migration {m.version} (sha256 {m.checksum})",
         [(f"migration {m.version}.sql", _migration(schema, m))])
        for m in todo.migrations
    ]
    files = todo.functions
    if not (files or todo.migrations):
        return done
    steps = [
        ("the setup of the transaction", _setup(schema) + _levels("note_levels", schema, every)),
        *((f"function file {f.path.name}", _file(schema, f)) for f in files),
    ]
    if files:
        names = [f.name for f in files]
        steps += [
            ("the privileges of the new functions", statement("exact_privileges", schema)),
            ("the check of the function files", statement("check_functions", names=names)),
            *(
                (f"the grants of {f.name} (--! granted-as)", statement(
                    "grant_as", name=f.name, setting="jobq.new_" + f.name, sources=f.granted_as
                ))
                for f in files
                if f.granted_as
            ),
        ]
    steps.append(("the grants of the levels", _levels("grant_levels", schema, every)))
    heading = (
        f"-- {len(files)} function file(s), in one transaction" if files
        else "-- the grants of the levels of roles granted before"
    )
    return [*done, (heading, steps)]


def render_dry_run(
    conninfo: str | None,
    schema: str = "public",
    *,
    migrations_dir: Path | None = None,
    functions_dir: Path | None = None,
) -> str:
    """The SQL that :func:`~.runner.migrate` would run, as a psql script: with a connection,
    only what is pending; without one, everything (for a new database)."""
    files = load(schema, migrations_dir, functions_dir)
    todo, header = files, "everything (no database was asked what is applied)"
    if conninfo is not None:
        with psycopg.connect(conninfo, autocommit=True, **_sql.connect_kwargs(conninfo)) as conn:
            todo = check(applied(conn, schema), files, schema)
        header = (
            f"{len(todo.migrations)} pending migration(s), "
            f"{len(todo.functions)} function file(s) to apply"
        )
    parts = [
        f"-- jobq migrate --dry-run: {header} for schema {schema!r}.",
        "-- Apply with: psql -v ON_ERROR_STOP=1 -f this_file.sql",
        "\\set ON_ERROR_STOP on",
        "-- Only built-ins, whatever search_path psql has: nothing another role created in a",
        "-- schema on it can be chosen by this script (each transaction then sets its own).",
        "SET search_path = pg_catalog, pg_temp;",
        "BEGIN;",
        bootstrap(schema, with_lock_table=True).as_string(None),
        "COMMIT;",
    ]
    for heading, steps in transactions(schema, todo, files.functions):
        parts += [heading, "BEGIN;", sql.Composed([s for _, s in steps]).as_string(None), "COMMIT;"]
    return "\n".join(parts) + "\n"
