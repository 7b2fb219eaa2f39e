"""The function files and how the runner applies them; what is derived from the files."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql
from tests.function_history import missing as function_history_missing
from tests.function_history import update as function_history_update

from jobq_cli import cli
from pgq_client.installer import privileges
from pgq_client.installer.files import (
    HISTORY_FILE,
    FunctionFile,
    MigrationError,
    function_files,
    function_history,
)
from pgq_client.installer.runner import migrate, run_script
from pgq_client.installer.script import render_dry_run

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "sql" / "functions"
MIGRATIONS = ROOT / "sql" / "migrations"

def copy_functions(tmp_path: Path, name: str = "functions") -> Path:
    target = tmp_path / name
    shutil.copytree(FUNCTIONS, target)
    return target


def knows(directory: Path, *older: Path) -> None:
    """Make the files of ``directory`` a jobq that shipped those of ``older`` before: list
    their checksums in its history (and its own), as `make schema-dump` would have."""
    lines = [f"{f.checksum}  {f.name}.sql" for d in older for f in function_files(d)]
    with (directory / HISTORY_FILE).open("a", encoding="utf-8") as history:
        history.write("".join(f"{line}\n" for line in lines))
    function_history_update(directory)


def one(conn: psycopg.Connection[tuple[object, ...]], query: str, *args: object) -> object:
    row = conn.execute(query, args or None).fetchone()
    assert row is not None
    return row[0]


def records(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as c:
        return dict(c.execute("SELECT version, checksum FROM jobq_migrations").fetchall())


# -- the list of files -------------------------------------------------------------------------


def test_function_files_list_every_file_private_helpers_first_with_its_checksum() -> None:
    files = function_files()
    on_disk = sorted(p.stem for p in FUNCTIONS.glob("*.sql"))
    assert sorted(f.name for f in files) == on_disk
    names = [f.name for f in files]
    helpers = [n for n in names if n.startswith("jobq__")]
    assert helpers and names[: len(helpers)] == sorted(helpers)
    assert names[len(helpers) :] == sorted(names[len(helpers) :])
    for f in files:
        assert f.path == FUNCTIONS / f"{f.name}.sql"
        assert f.checksum == hashlib.sha256(f.path.read_bytes()).hexdigest()
        assert f.version == f"functions/{f.name}"
        assert f.private == f.name.startswith("jobq__")


def test_a_fresh_install_records_every_function_file_with_its_checksum(dsn: str) -> None:
    recorded = records(dsn)
    assert {v: c for v, c in recorded.items() if v.startswith("functions/")} == {
        f.version: f.checksum for f in function_files()
    }


def test_every_function_file_has_its_comment_and_revokes_public() -> None:
    for f in function_files():
        assert re.search(rf"^COMMENT ON FUNCTION {f.name}\(", f.sql, re.MULTILINE), f.name
        assert re.search(rf"^REVOKE EXECUTE ON FUNCTION {f.name}\(", f.sql, re.MULTILINE), f.name
        assert f.sql.startswith(f"-- {f.name}"), f"{f.name}.sql starts with what it is for"


def test_the_readme_uninstall_drops_every_function_and_every_table(dsn: str) -> None:
    readme = (ROOT / "sql" / "README.md").read_text()
    section = readme[readme.index("## Uninstall") :]
    block = re.search(r"```sql\n(.*?)```", section, re.DOTALL)
    assert block
    script = block.group(1)
    statements = script[script.index("-- schema public") :]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(statements.encode())
        left = c.execute(
            "SELECT p.proname FROM pg_proc AS p WHERE p.pronamespace = 'public'::regnamespace "
            "UNION ALL SELECT c.relname FROM pg_class AS c "
            "WHERE c.relnamespace = 'public'::regnamespace"
        ).fetchall()
    assert left == []


# -- applying the files --------------------------------------------------------------------------


def test_an_edited_function_file_is_applied_again_alone_then_nothing(
    dsn: str, tmp_path: Path
) -> None:
    functions = copy_functions(tmp_path)
    stats = functions / "jobq_stats.sql"
    stats.write_text(stats.read_text().replace("Errors: none.';", "Errors: none. Edited.';"))
    edited = next(f for f in function_files(functions) if f.name == "jobq_stats")
    before = records(dsn)

    assert migrate(dsn, functions_dir=functions) == ["functions/jobq_stats"]
    after = records(dsn)
    assert after == {**before, "functions/jobq_stats": edited.checksum}
    with psycopg.connect(dsn) as c:
        comment = one(c, "SELECT obj_description('jobq_stats'::regproc, 'pg_proc')")
    assert str(comment).endswith("Edited.")
    assert migrate(dsn, functions_dir=functions) == []
    assert records(dsn) == after

    # A later jobq that knows the edited version puts the shipped text back: that one file.
    later = copy_functions(tmp_path, "later")
    knows(later, functions)
    assert migrate(dsn, functions_dir=later) == ["functions/jobq_stats"]
    assert records(dsn) == before


def test_a_schema_migrated_by_a_newer_jobq_is_refused_and_nothing_changes(
    dsn: str, tmp_path: Path
) -> None:
    """An older jobq would put older bodies back where only function files changed."""
    newer = copy_functions(tmp_path, "newer")
    stats = newer / "jobq_stats.sql"
    stats.write_text(stats.read_text().replace("Errors: none.';", "Errors: none (newer).';"))
    knows(newer, FUNCTIONS)
    assert migrate(dsn, functions_dir=newer) == ["functions/jobq_stats"]
    with psycopg.connect(dsn) as c:
        bodies = c.execute("SELECT pg_get_functiondef('jobq_stats'::regproc)").fetchall()
    applied = records(dsn)

    message = (
        "schema 'public' was migrated by a newer jobq: its function file(s) "
        "functions/jobq_stats were applied from versions that this jobq does not know"
    )
    with pytest.raises(MigrationError, match=re.escape(message)) as refused:
        migrate(dsn)
    assert "Upgrade the jobq package" in str(refused.value)
    with pytest.raises(MigrationError, match=re.escape(message)):
        render_dry_run(dsn)
    assert records(dsn) == applied
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT pg_get_functiondef('jobq_stats'::regproc)").fetchall() == bodies

    # The way out the message gives (a development build): forget the records, migrate.
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("DELETE FROM jobq_migrations WHERE version LIKE 'functions/%'")
    assert migrate(dsn) == [f.version for f in function_files()]
    assert records(dsn) == {**applied, **{f.version: f.checksum for f in function_files()}}


def test_the_history_knows_every_function_file_as_it_is_now() -> None:
    assert function_history_missing() == [], (
        "sql/functions/history.sha256 lacks the current version of these files: run "
        "`make schema-dump` (it adds them) and commit the result"
    )
    history = function_history()
    for f in function_files():
        assert f.checksum in history[f.name]


def test_a_malformed_history_line_is_refused(tmp_path: Path) -> None:
    functions = copy_functions(tmp_path)
    with (functions / HISTORY_FILE).open("a") as history:
        history.write("not-a-checksum  jobq_x.sql\n")
    with pytest.raises(MigrationError, match=r"history.sha256, line \d+: expected"):
        function_history(functions)


def test_an_edited_numbered_migration_is_still_refused_and_nothing_changes(
    dsn: str, tmp_path: Path
) -> None:
    migrations = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, migrations)
    core = migrations / "0001_jobq_baseline.sql"
    core.write_text(core.read_text() + "\n-- an innocent-looking edit\n")
    before = records(dsn)
    with pytest.raises(MigrationError, match="0001_jobq_baseline was edited after it was applied"):
        migrate(dsn, migrations_dir=migrations)
    with pytest.raises(MigrationError, match="edited after it was applied"):
        render_dry_run(dsn, migrations_dir=migrations)
    assert records(dsn) == before


def test_a_recorded_function_file_this_jobq_does_not_know_is_refused(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "INSERT INTO jobq_migrations (version, checksum) VALUES ('functions/jobq_future', 'x')"
        )
    with pytest.raises(MigrationError, match=r"functions/jobq_future .*does not know"):
        migrate(dsn)


def _complete_with_a_note(functions: Path, *, replaces: bool) -> None:
    """jobq_complete.sql with a trailing ``note text DEFAULT NULL``: a new signature."""
    path = functions / "jobq_complete.sql"
    text = path.read_text()
    text = text.replace(
        "    result jsonb DEFAULT NULL\n) RETURNS boolean",
        "    result jsonb DEFAULT NULL,\n    note text DEFAULT NULL\n) RETURNS boolean",
    )
    text = text.replace(
        "jobq_complete(uuid, text, integer, jsonb)",
        "jobq_complete(uuid, text, integer, jsonb, text)",
    )
    text = text.replace(" IS\n'Marks the job", " IS\n'note is ignored. Marks the job")
    if replaces:
        text = text.replace(
            "\nCREATE OR REPLACE FUNCTION",
            "--! replaces: jobq_complete(uuid, text, integer, jsonb)\n\nCREATE OR REPLACE FUNCTION",
            1,
        )
    assert "note text DEFAULT NULL" in text
    path.write_text(text)


def test_a_new_signature_replaces_the_old_one_and_roles_keep_their_grants(
    dsn: str, role: str, tmp_path: Path
) -> None:
    privileges.grant(dsn, role, "worker")
    functions = copy_functions(tmp_path)
    _complete_with_a_note(functions, replaces=True)
    with psycopg.connect(dsn) as c:
        acl_before = one(c, "SELECT proacl::text FROM pg_proc WHERE proname = 'jobq_complete'")
    assert role in str(acl_before)

    assert migrate(dsn, functions_dir=functions) == ["functions/jobq_complete"]
    assert migrate(dsn, functions_dir=functions) == []

    with psycopg.connect(dsn, autocommit=True) as c:
        signatures = c.execute(
            "SELECT pg_get_function_arguments(oid), proacl::text, "
            "obj_description(oid, 'pg_proc') FROM pg_proc WHERE proname = 'jobq_complete'"
        ).fetchall()
        assert len(signatures) == 1, "no overload is left behind"
        arguments, acl, comment = signatures[0]
        assert arguments.endswith(
            "attempt integer DEFAULT NULL::integer, result jsonb DEFAULT NULL::jsonb, "
            "note text DEFAULT NULL::text"
        )
        assert acl == acl_before, "the same grants, PUBLIC still without EXECUTE"
        assert str(comment).startswith("note is ignored.")
        # The role granted with `jobq grant` before the change calls the new function.
        job = one(c, "SELECT jobq_enqueue(job_type => 't')")
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        one(c, "SELECT count(*) FROM jobq_dequeue(worker_id => 'w')")
        done = one(
            c, "SELECT jobq_complete(job_id => %s::uuid, worker_id => 'w', note => 'n')", job
        )
        assert done is True
        c.execute("RESET ROLE")

    # A later jobq puts the older signature back, and the grants with it.
    shipped = copy_functions(tmp_path, "shipped")
    knows(shipped, functions)
    path = shipped / "jobq_complete.sql"
    path.write_text(
        path.read_text().replace(
            "\nCREATE OR REPLACE FUNCTION",
            "--! replaces: jobq_complete(uuid, text, integer, jsonb, text)\n\n"
            "CREATE OR REPLACE FUNCTION",
            1,
        )
    )
    assert migrate(dsn, functions_dir=shipped) == ["functions/jobq_complete"]
    with psycopg.connect(dsn) as c:
        assert one(c, "SELECT proacl::text FROM pg_proc WHERE proname = 'jobq_complete'") == (
            acl_before
        )
        assert one(c, "SELECT count(*) FROM pg_proc WHERE proname = 'jobq_complete'") == 1


def test_a_migration_without_function_files_gives_an_admin_select_on_the_table_it_adds(
    empty_dsn: str, role: str, tmp_path: Path
) -> None:
    """The levels are carried over when only migrations are pending too: an admin granted
    before a migration that adds a jobq table can read it after (functions unchanged)."""
    # An install that lacks one of the tables an admin reads, which the next migration adds.
    migrate(empty_dsn)
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        c.execute("DROP TABLE jobq_metric_labels")
    privileges.grant(empty_dsn, role, "admin")
    migrations = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, migrations)
    (migrations / "0098_jobq_labels_again.sql").write_text(
        "CREATE TABLE jobq_metric_labels (queue text NOT NULL, job_type text NOT NULL);\n"
        "REVOKE ALL ON TABLE jobq_metric_labels FROM PUBLIC;\n"
    )
    script = render_dry_run(empty_dsn, migrations_dir=migrations)
    assert "-- the grants of the levels of roles granted before" in script

    assert migrate(empty_dsn, migrations_dir=migrations) == ["0098_jobq_labels_again"]
    with psycopg.connect(empty_dsn) as c:
        readable = one(c, "SELECT has_table_privilege(%s, 'jobq_metric_labels', 'SELECT')", role)
    assert readable is True


def test_a_new_signature_without_replaces_is_refused_as_an_overload(
    dsn: str, tmp_path: Path
) -> None:
    functions = copy_functions(tmp_path)
    _complete_with_a_note(functions, replaces=False)
    before = records(dsn)
    with pytest.raises(MigrationError, match="2 functions named") as exc:
        migrate(dsn, functions_dir=functions)
    assert str(exc.value).startswith("the check of the function files failed")
    assert "--! replaces:" in str(exc.value)
    assert isinstance(exc.value.__cause__, psycopg.errors.InvalidFunctionDefinition)
    assert records(dsn) == before
    with psycopg.connect(dsn) as c:
        assert one(c, "SELECT count(*) FROM pg_proc WHERE proname = 'jobq_complete'") == 1


SQL_CALLER = """-- jobq_zz_caller: a LANGUAGE sql function that calls another.
{directive}
CREATE OR REPLACE FUNCTION jobq_zz_caller() RETURNS integer
LANGUAGE sql
AS $$ SELECT jobq_zz_helper() + 1 $$;

COMMENT ON FUNCTION jobq_zz_caller() IS 'Test.';

REVOKE EXECUTE ON FUNCTION jobq_zz_caller() FROM PUBLIC;
"""
SQL_CALLEE = """-- jobq_zz_helper: called by jobq_zz_caller.
CREATE OR REPLACE FUNCTION jobq_zz_helper() RETURNS integer
LANGUAGE sql
AS $$ SELECT 41 $$;

COMMENT ON FUNCTION jobq_zz_helper() IS 'Test.';

REVOKE EXECUTE ON FUNCTION jobq_zz_helper() FROM PUBLIC;
"""


def test_requires_applies_a_file_after_the_functions_its_sql_body_calls(
    empty_dsn: str, tmp_path: Path
) -> None:
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "jobq_zz_caller.sql").write_text(SQL_CALLER.format(directive=""))
    (functions / "jobq_zz_helper.sql").write_text(SQL_CALLEE)
    # In name order the caller comes first, and PostgreSQL checks its body against the catalogue.
    with pytest.raises(MigrationError, match=r"function file jobq_zz_caller\.sql failed") as exc:
        migrate(empty_dsn, functions_dir=functions)
    assert isinstance(exc.value.__cause__, psycopg.errors.UndefinedFunction)

    (functions / "jobq_zz_caller.sql").write_text(
        SQL_CALLER.format(directive="--! requires: jobq_zz_helper")
    )
    assert [f.name for f in function_files(functions)] == ["jobq_zz_helper", "jobq_zz_caller"]
    assert migrate(empty_dsn, functions_dir=functions)[-2:] == [
        "functions/jobq_zz_helper",
        "functions/jobq_zz_caller",
    ]
    with psycopg.connect(empty_dsn) as c:
        assert one(c, "SELECT jobq_zz_caller()") == 42


X = "\nCREATE OR REPLACE FUNCTION jobq_x("


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("jobq_x.sql", "CREATE FUNCTION jobq_x() RETURNS int LANGUAGE sql", "CREATE OR REPLACE"),
        ("x.sql", "CREATE OR REPLACE FUNCTION x(", "does not follow"),
        ("jobq_x.sql", "--! breaking: yes" + X, "unknown directive"),
        ("jobq_x.sql", "--! replaces: y(int)" + X, "must name an older signature of jobq_x"),
        ("jobq_x.sql", "--! replaces: jobq_x(int); DROP TABLE t" + X, "must name an older"),
        ("jobq_x.sql", "--! granted-as: jobq_x" + X, "must name another jobq function"),
        ("jobq_x.sql", "--! granted-as: x" + X, "must name another jobq function"),
        ("jobq_x.sql", "--! granted-as:" + X, "names nothing"),
        ("jobq_x.sql", "--! requires: jobq_nowhere" + X, "which has no file"),
        ("jobq_x.sql", "--! requires:" + X, "names nothing"),
        ("jobq_x.sql", "--! levels: producer, root" + X, "names root; the levels are"),
    ],
)
def test_a_malformed_function_file_is_refused_before_anything_runs(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(MigrationError, match=re.escape(message)):
        function_files(tmp_path)


def test_files_that_require_each_other_are_refused(tmp_path: Path) -> None:
    for name, other in (("jobq_a", "jobq_b"), ("jobq_b", "jobq_a")):
        (tmp_path / f"{name}.sql").write_text(
            f"--! requires: {other}\nCREATE OR REPLACE FUNCTION {name}("
        )
    with pytest.raises(MigrationError, match="cycle"):
        function_files(tmp_path)


def test_the_dry_run_prints_every_function_file_and_its_record() -> None:
    script = render_dry_run(None)
    files: list[FunctionFile] = function_files()
    positions = [script.index(f.sql) for f in files]
    assert positions == sorted(positions), "in the order they are applied"
    for f in files:
        assert f"('{f.version}', '{f.checksum}', false)" in script


def test_a_changed_result_type_named_with_the_same_arguments_is_created_again_with_its_grants(
    dsn: str, role: str, tmp_path: Path
) -> None:
    privileges.grant(dsn, role, "worker")
    functions = copy_functions(tmp_path)
    path = functions / "jobq_heartbeat.sql"
    text = path.read_text()
    assert ") RETURNS integer\n" in text
    text = text.replace(") RETURNS integer\n", ") RETURNS bigint\n", 1)
    text = text.replace(
        "\nCREATE OR REPLACE FUNCTION",
        "--! replaces: jobq_heartbeat(text, uuid[])\n\nCREATE OR REPLACE FUNCTION",
        1,
    )
    path.write_text(text)
    with psycopg.connect(dsn) as c:
        acl_before = one(c, "SELECT proacl::text FROM pg_proc WHERE proname = 'jobq_heartbeat'")
    assert role in str(acl_before)

    assert migrate(dsn, functions_dir=functions) == ["functions/jobq_heartbeat"]
    with psycopg.connect(dsn, autocommit=True) as c:
        assert one(c, "SELECT pg_get_function_result('jobq_heartbeat'::regproc)") == "bigint"
        assert one(c, "SELECT proacl::text FROM pg_proc WHERE proname = 'jobq_heartbeat'") == (
            acl_before
        )
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        assert one(c, "SELECT jobq_heartbeat(worker_id => 'w', job_ids => '{}')") == 0


# -- errors name what failed; the schema name in bytes -----------------------------------------


def test_a_failing_migration_names_itself_and_applies_nothing(
    empty_dsn: str, tmp_path: Path
) -> None:
    migrations = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, migrations)
    (migrations / "0099_broken.sql").write_text(
        "CREATE TABLE jobq_extra (x int);\nALTER TABLE jobq_nowhere ADD COLUMN y int;\n"
    )
    with pytest.raises(MigrationError) as exc:
        migrate(empty_dsn, migrations_dir=migrations)
    message = str(exc.value)
    assert message.startswith("migration 0099_broken.sql failed in schema 'public': ")
    assert 'relation "jobq_nowhere" does not exist' in message and "42P01" in message
    assert isinstance(exc.value.__cause__, psycopg.errors.UndefinedTable)
    with psycopg.connect(empty_dsn) as c:
        assert one(c, "SELECT to_regclass('jobq_extra') IS NULL") is True
        assert "0099_broken" not in records(empty_dsn)
        assert "0001_jobq_baseline" in records(empty_dsn)  # the migrations before it stay applied


def test_a_failing_function_file_names_itself_and_leaves_the_previous_bodies(
    dsn: str, tmp_path: Path
) -> None:
    functions = copy_functions(tmp_path)
    stats = functions / "jobq_stats.sql"
    stats.write_text(
        stats.read_text().replace("FROM jobq_all_jobs AS j", "FROM jobq_nowhere AS j")
    )
    before = records(dsn)
    with pytest.raises(MigrationError, match=r"^function file jobq_stats\.sql failed") as exc:
        migrate(dsn, functions_dir=functions)
    assert "jobq_nowhere" in str(exc.value)
    assert records(dsn) == before
    result = CliRunner().invoke(cli, ["--dsn", dsn, "migrate"], env={})
    assert result.exit_code == 0  # the shipped files still apply (nothing to do)


@pytest.mark.parametrize("schema", ["ü" * 32, "x" * 64, "日本" * 11])
def test_a_schema_name_over_63_bytes_is_refused_even_under_63_characters(
    empty_dsn: str, schema: str
) -> None:
    with pytest.raises(MigrationError, match="at most 63 bytes"):
        migrate(empty_dsn, schema=schema)
    with pytest.raises(MigrationError, match="at most 63 bytes"):
        render_dry_run(None, schema=schema)
    result = CliRunner().invoke(cli, ["--dsn", empty_dsn, "migrate", "--schema", schema])
    assert result.exit_code == 1 and "at most 63 bytes" in result.output
    with psycopg.connect(empty_dsn) as c:
        assert one(c, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'ü%' "
                      "OR nspname LIKE 'xxx%' OR nspname LIKE '日%'") == 0


def test_a_schema_name_of_63_bytes_is_that_schema(empty_dsn: str) -> None:
    schema = "ü" * 31 + "x"  # 63 bytes
    migrate(empty_dsn, schema=schema)
    with psycopg.connect(empty_dsn) as c:
        assert one(c, "SELECT count(*) FROM pg_namespace WHERE nspname = %s", schema) == 1


def test_a_script_is_run_one_statement_at_a_time_dollar_quotes_and_comments_included(
    dsn: str,
) -> None:
    """Citus refuses a DDL script sent as one query; the runner splits it. Semicolons inside
    dollar quotes, strings and comments do not split, and a comment-only tail runs as nothing."""
    script = sql.SQL(
        "CREATE TEMP TABLE split_probe (a text);\n"
        "-- a comment; with a semicolon\n"
        "INSERT INTO split_probe VALUES ('x;y');\n"
        "DO $body$ BEGIN INSERT INTO split_probe VALUES ('in; a body'); END $body$;\n"
        "/* a block comment; */\n"
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        run_script(conn, script)
        rows = [r[0] for r in conn.execute("SELECT a FROM split_probe ORDER BY a")]
    assert rows == ["in; a body", "x;y"]


def test_a_development_install_is_refused_before_anything_is_written(empty_dsn: str) -> None:
    """A schema recording a migration this tree does not have (a development build before
    0.1.0, or a newer jobq) is refused with that reason, and neither migrate nor its dry run
    writes anything there: no lock table, no comment, no record."""
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        c.execute("CREATE SCHEMA devbuild")
        c.execute(
            "CREATE TABLE devbuild.jobq_migrations (version text PRIMARY KEY, checksum text"
            " NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        c.execute("INSERT INTO devbuild.jobq_migrations VALUES ('0002_jobq_operations', 'x')")
    catalogue = (
        "SELECT c.relname, obj_description(c.oid, 'pg_class') FROM pg_class AS c"
        " WHERE c.relnamespace = 'devbuild'::regnamespace ORDER BY 1"
    )
    with psycopg.connect(empty_dsn) as c:
        before = c.execute(catalogue).fetchall()
    reason = "installed by a newer jobq or by a development build before 0.1.0"
    with pytest.raises(MigrationError, match=reason) as refused:
        migrate(empty_dsn, schema="devbuild")
    assert "migration 0002_jobq_operations" in str(refused.value)
    with pytest.raises(MigrationError, match=reason):
        render_dry_run(empty_dsn, schema="devbuild")
    with psycopg.connect(empty_dsn) as c:
        assert c.execute(catalogue).fetchall() == before
        rows = c.execute("SELECT version, checksum FROM devbuild.jobq_migrations").fetchall()
    assert rows == [("0002_jobq_operations", "x")]
