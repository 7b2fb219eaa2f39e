"""Schemas installed by earlier versions of jobq's main branch upgrade with a plain migrate.

Until commit dcd3357, the functions were created and changed by migrations 0002-0005; they
were then folded into the baseline 0001_jobq_core and the function files. The legacy install
is made here by that commit's own runner, verbatim (tests/fixtures/dcd3357/migrate.py), over
that commit's migration files, verbatim; today's runner must turn it into exactly what a
fresh install builds, keeping its jobs and its grants. Likewise for an install of commit
ad0bb0d, the first with function files (tests/fixtures/ad0bb0d), and of commits a7411e5
(main with the schedules and the hardened bodies) and 8ef85fb (with jobq_workers), before the
status names, the comments and jobq_fail_many (tests/fixtures/a7411e5, tests/fixtures/8ef85fb).
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest
from psycopg import sql
from tests.helpers import MakeRole
from tests.schema_dump import dump_schema

from pgq_client import grants
from pgq_client.migrate import (
    FOLDED,
    FOLDED_INTO,
    MigrationError,
    available_migrations,
    function_files,
    function_history,
    migrate,
    render_dry_run,
)

pytestmark = pytest.mark.slow  # old installs built from tests/fixtures, each upgraded

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "dcd3357"
FIXTURE_AD0 = Path(__file__).resolve().parents[1] / "fixtures" / "ad0bb0d"


def legacy_runner(migrations: Path) -> ModuleType:
    """dcd3357's migrate.py, reading its migrations from ``migrations``."""
    spec = importlib.util.spec_from_file_location("jobq_migrate_dcd3357", FIXTURE / "migrate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    module._migrations_dir = lambda: migrations  # type: ignore[attr-defined]
    return module


def install_legacy(dsn: str, tmp_path: Path, count: int = len(FOLDED)) -> list[str]:
    """Install jobq as main did when it had the first ``count`` migrations."""
    migrations = tmp_path / "legacy_migrations"
    migrations.mkdir()
    for version, _ in FOLDED[:count]:
        shutil.copy(FIXTURE / "migrations" / f"{version}.sql", migrations)
    applied: list[str] = legacy_runner(migrations).migrate(dsn)
    return applied


@pytest.fixture
def level_roles(make_role: MakeRole) -> dict[str, str]:
    """A login role per level of `jobq grant` (granted nothing yet), by level."""
    return {level: make_role(prefix=f"jobq_u{level}") for level in grants.LEVELS}


def executable(dsn: str, role: str) -> set[str]:
    """The jobq functions ``role`` may execute in schema public."""
    with psycopg.connect(dsn) as c:
        rows = c.execute(
            "SELECT p.proname::text FROM pg_proc AS p"
            " WHERE p.pronamespace = 'public'::regnamespace"
            " AND has_function_privilege(%s::text, p.oid, 'EXECUTE')",
            (role,),
        ).fetchall()
    return {r[0] for r in rows}


def add_jobs_in_every_status(dsn: str) -> None:
    """Jobs made by the installed functions themselves: every status, errors, keys, settings."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT jobq_configure(max_payload_bytes => 4096)")
        for i in range(8):
            c.execute(
                "SELECT jobq_enqueue(job_type => 'ocr', payload => %s::jsonb, "
                "idempotency_key => %s::text, max_attempts => %s::int, priority => %s::int)",
                (f'{{"n": {i}}}', f"key-{i}" if i % 2 else None, 1 if i == 3 else 3, 8 - i),
            )
        c.execute(
            "SELECT jobq_enqueue(job_type => 'later', run_at => now() + interval '1 day', "
            "queue => 'slow')"
        )
        c.execute(
            "SELECT count(*) FROM jobq_enqueue_many("
            """'[{"job_type": "bulk", "payload": {"a": 1}}, {"job_type": "bulk"}]'::jsonb)"""
        )
        claimed = [
            r[0]
            for r in c.execute(
                "SELECT id FROM jobq_dequeue(worker_id => 'w1', job_types => '{ocr}', "
                "batch_size => 6)"
            )
        ]
        assert len(claimed) == 6
        c.execute("SELECT jobq_complete(job_id => %s::uuid, worker_id => 'w1')", (claimed[0],))
        c.execute(
            "SELECT jobq_complete_many(job_ids => %s::uuid[], worker_id => 'w1')", (claimed[1:2],)
        )
        c.execute(
            "SELECT jobq_fail(job_id => %s::uuid, worker_id => 'w1', error => 'retry me')",
            (claimed[2],),
        )
        # claimed[3] is the job with max_attempts 1 (priority 5): failing it dead-letters it.
        c.execute(
            "SELECT jobq_fail(job_id => %s::uuid, worker_id => 'w1', error => 'last')",
            (claimed[3],),
        )
        c.execute(
            "SELECT jobq_fail(job_id => %s::uuid, worker_id => 'w1', error => 'bad', "
            "retry => false)",
            (claimed[4],),
        )
        # A stale claim taken over by another worker: recorded in errors, pending again.
        c.execute(
            "UPDATE jobq_jobs SET locked_at = now() - interval '1 hour' WHERE id = %s::uuid",
            (claimed[5],),
        )
        taken = c.execute(
            "SELECT id FROM jobq_dequeue(worker_id => 'w2', job_types => '{ocr}', "
            "lock_timeout => interval '1 minute')"
        ).fetchall()
        assert taken
        statuses = {r[0] for r in c.execute("SELECT DISTINCT status FROM jobq_jobs")}
        assert statuses == {"pending", "processing", "succeeded", "failed", "dead_letter"}


def snapshot(dsn: str) -> dict[str, Any]:
    """Every job (every column), the settings and the migration records."""
    with psycopg.connect(dsn) as c:
        return {
            "jobs": c.execute("SELECT to_jsonb(j) FROM jobq_jobs AS j ORDER BY j.id").fetchall(),
            "settings": c.execute("SELECT to_jsonb(s) FROM jobq_settings AS s").fetchall(),
        }


def without_scheduled(jobs: dict[str, Any]) -> dict[str, Any]:
    """A snapshot without the column that migration 0005 added, which checks it: pending jobs
    whose available_at is still in the future were marked scheduled, no other job was."""
    rows = [row[0] for row in jobs["jobs"]]
    for job in rows:
        future = job["status"] == "pending" and job["available_at"] > job["now"]
        assert job.pop("scheduled") is future, job
        del job["now"]
    return {**jobs, "jobs": [(job,) for job in rows]}


def gauge(dsn: str) -> list[tuple[str, str, int]]:
    """The gauge jobq_jobs of jobq_metrics(): (queue, status, jobs), those above 0."""
    with psycopg.connect(dsn) as c:
        return [
            (str(q), str(s), int(v))
            for q, s, v in c.execute(
                "SELECT labels ->> 'queue', labels ->> 'status', value FROM jobq_metrics() "
                "WHERE metric = 'jobq_jobs' AND value <> 0 ORDER BY 1, 2"
            ).fetchall()
        ]


def counted(dsn: str) -> list[tuple[str, str, int]]:
    """The jobs present by (queue, status), as the gauge should have them."""
    with psycopg.connect(dsn) as c:
        return [
            (str(q), str(s), int(n))
            for q, s, n in c.execute(
                "SELECT queue, status, count(*) FROM jobq_jobs GROUP BY 1, 2 ORDER BY 1, 2"
            ).fetchall()
        ]


def snapshot_with_now(dsn: str) -> dict[str, Any]:
    """``snapshot`` after the upgrade, each job with the time of the snapshot (``now``)."""
    with psycopg.connect(dsn) as c:
        return {
            "jobs": c.execute(
                "SELECT to_jsonb(j) || jsonb_build_object('now', now()) FROM jobq_jobs AS j"
                " ORDER BY j.id"
            ).fetchall(),
            "settings": c.execute("SELECT to_jsonb(s) FROM jobq_settings AS s").fetchall(),
        }


# Columns that migrations 0006, 0009 and 0010 added, with the value every job that existed
# before has.
ADDED_COLUMNS = {"result": None, "cancel_requested_at": None, "cancel_reason": None,
                 "limit_group": None, "limit_key": None, "claimed_at": None}
# Settings that migration 0010 added, with their default.
ADDED_SETTINGS = {"metrics": True, "metrics_label_sets": 1000}


def without_added_columns(jobs: dict[str, Any]) -> dict[str, Any]:
    """A snapshot without the columns added since the legacy install, which checks them: every
    job that existed before has their defaults (no result, no cancel request, no limit)."""
    rows = [row[0] for row in jobs["jobs"]]
    for job in rows:
        for column, value in ADDED_COLUMNS.items():
            assert job.pop(column) == value, (column, job)
    settings = [row[0] for row in jobs["settings"]]
    for setting in settings:
        for column, value in ADDED_SETTINGS.items():
            assert setting.pop(column) == value, (column, setting)
        # the installation's secret (migration 0014): random, made once
        seed = setting.pop("lock_seed")
        assert isinstance(seed, int) and seed != 0, setting
    return {**jobs, "jobs": [(job,) for job in rows], "settings": [(s,) for s in settings]}


def records(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as c:
        return dict(c.execute("SELECT version, checksum FROM jobq_migrations").fetchall())


CATALOGUE = {
    "functions": """
        SELECT p.proname::text, pg_get_functiondef(p.oid), p.proconfig::text, p.proacl::text,
               obj_description(p.oid, 'pg_proc'), p.prosecdef, p.provolatile::text,
               p.proparallel::text, pg_get_userbyid(p.proowner)::text
        FROM pg_proc AS p WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1""",
    "relations": """
        SELECT c.relname::text, c.relkind::text, c.reloptions::text, c.relacl::text,
               obj_description(c.oid, 'pg_class')
        FROM pg_class AS c WHERE c.relnamespace = 'public'::regnamespace ORDER BY 1""",
    "columns": """
        SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod),
               a.attnotnull, pg_get_expr(d.adbin, d.adrelid), col_description(c.oid, a.attnum)
        FROM pg_attribute AS a
        JOIN pg_class AS c ON c.oid = a.attrelid
        LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY 1, a.attnum""",
    "indexes": """
        SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid),
               obj_description(i.indexrelid, 'pg_class')
        FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indrelid
        WHERE c.relnamespace = 'public'::regnamespace ORDER BY 1""",
    "constraints": """
        SELECT conrelid::regclass::text, conname::text, pg_get_constraintdef(oid),
               obj_description(oid, 'pg_constraint')
        FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2""",
    "types": """
        SELECT t.typname::text, t.typtype::text FROM pg_type AS t
        WHERE t.typnamespace = 'public'::regnamespace ORDER BY 1""",
}


def catalogue(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(dsn) as c:
        return {kind: c.execute(query).fetchall() for kind, query in CATALOGUE.items()}


@pytest.mark.parametrize("count", [2, 3, 4, 5], ids=lambda n: f"0001-000{n}")
def test_an_install_of_main_before_the_fold_upgrades_to_a_fresh_install_keeping_its_jobs(
    dsn: str,
    empty_dsn: str,
    level_roles: dict[str, str],
    tmp_path: Path,
    count: int,
) -> None:
    """``dsn`` is a fresh install; ``empty_dsn`` gets the legacy one. Installs were made with
    2 to 5 of the folded migrations (main had 0001-0002 from commit 3a4bde9 on)."""
    names = level_roles
    legacy, fresh = empty_dsn, dsn
    assert install_legacy(legacy, tmp_path, count) == [v for v, _ in FOLDED[:count]]
    add_jobs_in_every_status(legacy)
    # Roles granted by `jobq grant` before the upgrade, one per level; the same on the fresh
    # install.
    for target in (legacy, fresh):
        for level, name in names.items():
            grants.grant(target, name, level)
    jobs = snapshot(legacy)
    before = {level: executable(legacy, name) for level, name in names.items()}
    assert "jobq_release_orphans" not in before["worker"]

    # the baseline's records are rewritten; the migrations after it and every file are applied
    later = [m.version for m in available_migrations() if m.version != FOLDED_INTO]
    assert migrate(legacy) == later + [f.version for f in function_files()]

    # No `jobq grant` again: each role got the functions of its level that the upgrade added
    # (jobq_release_orphans and jobq_tick for the worker, every new one and SELECT on the new
    # tables for the admin), exactly as on the fresh install.
    assert records(legacy) == records(fresh)
    assert catalogue(legacy) == catalogue(fresh)
    for level, name in names.items():
        assert executable(legacy, name) == executable(fresh, name) >= before[level], level
    assert {"jobq_release_orphans", "jobq_tick"} <= executable(legacy, names["worker"])
    assert "jobq_dequeue" not in executable(legacy, names["producer"])
    assert dump_schema(legacy) == dump_schema(fresh)
    assert without_added_columns(without_scheduled(snapshot_with_now(legacy))) == jobs
    assert migrate(legacy) == []

    # The worker role works on the new bodies: claim the available ocr job, complete it, and
    # call the function new since its grant.
    with psycopg.connect(legacy, autocommit=True) as c:
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(names["worker"])))
        job = c.execute(
            "SELECT id FROM jobq_dequeue(worker_id => 'w3', job_types => '{ocr}')"
        ).fetchone()
        assert job is not None
        row = c.execute(
            "SELECT jobq_complete(job_id => %s::uuid, worker_id => 'w3')", (job[0],)
        ).fetchone()
        assert row == (True,)
        released = c.execute(
            "SELECT jobq_release_orphans(worker_id => 'w2', job_ids => '{}'::uuid[])"
        ).fetchone()
        assert released == (1,)  # the stale claim w2 took over in add_jobs_in_every_status


def test_a_role_that_held_part_of_a_level_gets_nothing_new_from_an_upgrade(
    empty_dsn: str, level_roles: dict[str, str], tmp_path: Path
) -> None:
    """Only a whole level is carried over: a role granted one worker function by hand, and a
    worker role whose jobq_heartbeat was revoked, get none of the level's new functions (the
    second still gets those granted to whoever may call a function it kept: jobq_fail_many as
    jobq_fail; jobq_await, jobq_job_status and jobq_cancel as jobq_enqueue; jobq_enqueue_arrays
    as jobq_enqueue_many; not jobq_cancel_requested, granted as jobq_heartbeat)."""
    names = level_roles
    install_legacy(empty_dsn, tmp_path)
    partial, trimmed = names["producer"], names["worker"]
    grants.grant(empty_dsn, trimmed, "worker")
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        c.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(partial)))
        c.execute(
            sql.SQL("GRANT EXECUTE ON FUNCTION jobq_dequeue TO {}").format(sql.Identifier(partial))
        )
        c.execute(
            sql.SQL("REVOKE EXECUTE ON FUNCTION jobq_heartbeat FROM {}").format(
                sql.Identifier(trimmed)
            )
        )
    before = {name: executable(empty_dsn, name) for name in (partial, trimmed)}
    migrate(empty_dsn)
    after = {name: executable(empty_dsn, name) for name in (partial, trimmed)}
    assert after[partial] == before[partial]
    assert after[trimmed] - before[trimmed] == {
        "jobq_fail_many", "jobq_await", "jobq_job_status", "jobq_cancel", "jobq_enqueue_arrays"}


def test_jobq_migrate_says_which_role_it_granted_a_new_function(
    empty_dsn: str, level_roles: dict[str, str], tmp_path: Path
) -> None:
    names = level_roles
    install_legacy(empty_dsn, tmp_path)
    grants.grant(empty_dsn, names["worker"], "worker")
    done = subprocess.run(
        [sys.executable, "-m", "pgq_client", "migrate", "--dsn", empty_dsn],
        capture_output=True, text=True, timeout=120, check=True,
    )
    assert (
        f"jobq: granted EXECUTE on jobq_release_orphans to {names['worker']} "
        "(it held the worker level of schema public)"
    ) in done.stderr.splitlines()
    assert "applied functions/jobq_release_orphans" in done.stdout.splitlines()


def test_the_dry_run_of_an_upgrade_applied_with_psql_does_the_same(
    dsn: str, empty_dsn: str, tmp_path: Path, level_roles: dict[str, str]
) -> None:
    legacy, fresh = empty_dsn, dsn
    names = level_roles
    install_legacy(legacy, tmp_path)
    add_jobs_in_every_status(legacy)
    for target in (legacy, fresh):
        grants.grant(target, names["worker"], "worker")
    jobs = snapshot(legacy)
    script = render_dry_run(legacy)
    assert "development install (0001_jobq_core, 0002_jobq_operations" in script
    assert records(legacy) == dict(FOLDED), "a dry run changes nothing"
    assert "jobq_release_orphans" not in executable(legacy, names["worker"])
    applied = subprocess.run(
        ["psql", "--no-psqlrc", "--quiet", "--dbname", legacy],
        input=script,
        text=True,
        check=True,
        capture_output=True,
    )
    assert migrate(legacy) == []
    assert records(legacy) == records(fresh)
    assert dump_schema(legacy) == dump_schema(fresh)
    assert without_added_columns(without_scheduled(snapshot_with_now(legacy))) == jobs
    # the worker role granted before got the worker functions the upgrade added, and psql
    # showed each grant
    assert executable(legacy, names["worker"]) == executable(fresh, names["worker"])
    assert (
        f"jobq migrate: granted EXECUTE on jobq_release_orphans to {names['worker']} "
        "(it held the worker level of schema public)"
    ) in applied.stderr


def _refused(legacy: str, change: str, message: str) -> None:
    with psycopg.connect(legacy, autocommit=True) as c:
        c.execute(change)
    before = records(legacy)
    with psycopg.connect(legacy) as c:
        functions_before = c.execute(
            "SELECT pg_get_functiondef(oid) FROM pg_proc "
            "WHERE pronamespace = 'public'::regnamespace ORDER BY proname"
        ).fetchall()
    with pytest.raises(MigrationError, match=message):
        migrate(legacy)
    with pytest.raises(MigrationError, match=message):
        render_dry_run(legacy)
    assert records(legacy) == before
    with psycopg.connect(legacy) as c:
        assert (
            c.execute(
                "SELECT pg_get_functiondef(oid) FROM pg_proc "
                "WHERE pronamespace = 'public'::regnamespace ORDER BY proname"
            ).fetchall()
            == functions_before
        )


def test_a_legacy_install_with_an_edited_folded_migration_is_refused(
    empty_dsn: str, tmp_path: Path
) -> None:
    install_legacy(empty_dsn, tmp_path)
    _refused(
        empty_dsn,
        "UPDATE jobq_migrations SET checksum = 'edited' WHERE version = "
        "'0003_jobq_fence_by_primary_key'",
        "0003_jobq_fence_by_primary_key differ from the files that version had",
    )


def test_a_legacy_install_with_a_gap_in_its_records_is_refused(
    empty_dsn: str, tmp_path: Path
) -> None:
    install_legacy(empty_dsn, tmp_path)
    _refused(
        empty_dsn,
        "DELETE FROM jobq_migrations WHERE version = '0002_jobq_operations'",
        "versions are missing before 0005_jobq_dequeue_ordered_index_scan",
    )


def test_a_legacy_install_with_a_version_nobody_knows_is_refused(
    empty_dsn: str, tmp_path: Path
) -> None:
    install_legacy(empty_dsn, tmp_path)
    _refused(
        empty_dsn,
        "INSERT INTO jobq_migrations (version, checksum) VALUES ('0006_local_patch', 'x')",
        "it also records 0006_local_patch",
    )


def test_an_install_whose_0001_matches_neither_version_is_refused_as_edited(
    empty_dsn: str, tmp_path: Path
) -> None:
    install_legacy(empty_dsn, tmp_path, count=1)
    _refused(
        empty_dsn,
        "UPDATE jobq_migrations SET checksum = 'something else'",
        "0001_jobq_core was edited after it was applied",
    )


def test_the_fixture_is_main_at_dcd3357_as_the_runner_recognises_it() -> None:
    for version, checksum in FOLDED:
        text = (FIXTURE / "migrations" / f"{version}.sql").read_text(encoding="utf-8")
        assert hashlib.sha256(text.encode()).hexdigest() == checksum, version


# What ad0bb0d's `jobq grant --as worker` granted (its grants.WORKER_FUNCTIONS).
AD0BB0D_WORKER_FUNCTIONS = (
    "jobq_enqueue",
    "jobq_enqueue_many",
    "jobq_dequeue",
    "jobq_complete",
    "jobq_complete_many",
    "jobq_fail",
    "jobq_heartbeat",
    "jobq_release",
)


def runner_ad0bb0d() -> ModuleType:
    """ad0bb0d's migrate.py, reading that commit's migrations and function files."""
    spec = importlib.util.spec_from_file_location(
        "jobq_migrate_ad0bb0d", FIXTURE_AD0 / "migrate.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    module._migrations_dir = lambda: FIXTURE_AD0 / "migrations"  # type: ignore[attr-defined]
    module._functions_dir = lambda: FIXTURE_AD0 / "functions"  # type: ignore[attr-defined]
    return module


@pytest.mark.parametrize("level", ["worker", "admin"])
def test_an_install_of_main_at_ad0bb0d_upgrades_to_a_fresh_install_and_keeps_its_roles(
    dsn: str, empty_dsn: str, role: str, level: grants.Level
) -> None:
    """New migrations, changed and renamed function files, a new function: the jobs stay, and
    a role granted before the upgrade may make every call of the new client."""
    name = role
    old, fresh = empty_dsn, dsn
    runner = runner_ad0bb0d()
    installed = runner.migrate(old)
    assert installed[0] == "0001_jobq_core" and "functions/jobq__job_error" in installed
    add_jobs_in_every_status(old)
    # The role as ad0bb0d's `jobq grant` made it; today's on the fresh install.
    if level == "worker":
        with psycopg.connect(old, autocommit=True) as c:
            c.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(name)))
            for function in AD0BB0D_WORKER_FUNCTIONS:
                c.execute(
                    sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(
                        sql.Identifier(function), sql.Identifier(name)
                    )
                )
    else:
        grants.grant(old, name, level)
    grants.grant(fresh, name, level)
    jobs = snapshot(old)

    applied = migrate(old)
    assert [v for v in applied if not v.startswith("functions/")] == [
        m.version for m in available_migrations() if m.version != "0001_jobq_core"
    ]
    assert records(old) == records(fresh)
    assert without_added_columns(without_scheduled(snapshot_with_now(old))) == jobs
    assert migrate(old) == []

    # The role calls what the new client calls, jobq_fail_many (new here) included, without a
    # new `jobq grant`: the function is granted as jobq_fail.
    with psycopg.connect(old, autocommit=True) as c:
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(name)))
        job = c.execute(
            "SELECT id FROM jobq_dequeue(worker_id => 'w3', job_types => '{ocr}')"
        ).fetchone()
        assert job is not None
        row = c.execute(
            "SELECT status FROM jobq_fail_many(job_ids => ARRAY[%s]::uuid[], "
            "worker_id => 'w3', errors => '{again}')",
            (job[0],),
        ).fetchone()
        assert row == ("pending",)

    # Functions new since (jobq_tick, the schedules, jobq_release_orphans) reached the role in
    # the upgrade, as its level's (an admin's tables too): without `jobq grant` running again,
    # the upgraded schema is exactly a fresh install.
    assert catalogue(old) == catalogue(fresh), "functions, grants, comments, constraints"
    assert dump_schema(old) == dump_schema(fresh)

    # ad0bb0d's own runner cannot go back: it refuses migrations it does not know.
    with pytest.raises(Exception, match="0002_jobq_schedules applied, which this jobq"):
        runner_ad0bb0d().migrate(old)


# Installs of main after the schedules: (commit, the tables its `jobq grant --as admin` gave
# SELECT on, the migrations today's runner applies to it).
MAIN_INSTALLS = {
    "a7411e5": (
        ("jobq_jobs", "jobq_settings", "jobq_migrations"),
        [
            "0003_jobq_status_names",
            "0004_jobq_comments",
            "0005_jobq_claims_at_volume",
            "0006_jobq_cancel_results",
            "0007_jobq_workers",
            "0008_jobq_workers_comments",
            "0009_jobq_limits",
            "0010_jobq_metrics",
            "0011_jobq_dashboard",
            "0012_jobq_metrics_opt_in",
            "0013_jobq_claim_index_hashes",
            "0014_jobq_hardening",
            "0015_jobq_cancel_requests",
            "0016_jobq_claims_exact",
        ],
    ),
    "8ef85fb": (
        ("jobq_jobs", "jobq_settings", "jobq_migrations", "jobq_schedules", "jobq_workers"),
        [
            "0003_jobq_status_names",
            "0004_jobq_comments",
            "0005_jobq_claims_at_volume",
            "0006_jobq_cancel_results",
            "0008_jobq_workers_comments",
            "0009_jobq_limits",
            "0010_jobq_metrics",
            "0011_jobq_dashboard",
            "0012_jobq_metrics_opt_in",
            "0013_jobq_claim_index_hashes",
            "0014_jobq_hardening",
            "0015_jobq_cancel_requests",
            "0016_jobq_claims_exact",
        ],
    ),
}


def main_runner(commit: str) -> ModuleType:
    """That commit's migrate.py (tests/fixtures/<commit>), reading its migrations and function
    files. It is loaded as a module of pgq_client: its one relative import is
    ``from .errors import JobqError``."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / commit
    spec = importlib.util.spec_from_file_location(
        f"pgq_client._jobq_migrate_{commit}", fixture / "migrate.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    module._migrations_dir = lambda: fixture / "migrations"  # type: ignore[attr-defined]
    module._functions_dir = lambda: fixture / "functions"  # type: ignore[attr-defined]
    return module


@pytest.mark.parametrize("level", ["worker", "admin"])
@pytest.mark.parametrize("commit", sorted(MAIN_INSTALLS))
def test_an_install_of_main_after_the_schedules_upgrades_to_a_fresh_install_with_its_roles(
    dsn: str, empty_dsn: str, role: str, commit: str, level: grants.Level
) -> None:
    """Later migrations (0003, 0004 and 0005 after 0007, for 8ef85fb), changed and renamed function
    files, and jobq_fail_many, which a role granted before the upgrade may call at once (granted
    as jobq_fail): the upgraded schema is a fresh install, a role's grants included without
    `jobq grant` running again (what its level got since, jobq_release_orphans for a worker, the
    new functions and tables for an admin, reached it in the upgrade)."""
    name = role
    admin_tables, later = MAIN_INSTALLS[commit]
    old, fresh = empty_dsn, dsn
    runner = main_runner(commit)
    installed = runner.migrate(old)
    assert installed[0] == "0001_jobq_core"
    assert "functions/jobq__job_error" in installed
    add_jobs_in_every_status(old)
    # The role as that commit's `jobq grant` made it: the functions whose files declared the
    # level, and an admin's tables.
    declared = [f.name for f in runner.function_files() if level in f.levels]
    assert ("jobq_fail" in declared) and ("jobq_fail_many" not in declared)
    with psycopg.connect(old, autocommit=True) as c:
        c.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(name)))
        for function in declared:
            c.execute(
                sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(
                    sql.Identifier(function), sql.Identifier(name)
                )
            )
        if level == "admin":
            c.execute(
                sql.SQL("GRANT SELECT ON TABLE {} TO {}").format(
                    sql.SQL(", ").join(sql.Identifier(t) for t in admin_tables),
                    sql.Identifier(name),
                )
            )
    grants.grant(fresh, name, level)
    jobs = snapshot(old)

    applied = migrate(old)
    assert [m.version for m in available_migrations() if m.version not in installed] == later
    assert [v for v in applied if not v.startswith("functions/")] == later
    assert "functions/jobq__job_error" not in records(old), "the renamed helper's record is gone"
    assert records(old) == records(fresh)
    assert without_added_columns(without_scheduled(snapshot_with_now(old))) == jobs
    assert catalogue(old) == catalogue(fresh), "functions, grants, comments, constraints"
    assert dump_schema(old) == dump_schema(fresh)
    assert migrate(old) == []
    assert gauge(old) == counted(old), "migration 0010 counted the jobs present"

    with psycopg.connect(old, autocommit=True) as c:
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(name)))
        job = c.execute(
            "SELECT id FROM jobq_dequeue(worker_id => 'w3', job_types => '{ocr}')"
        ).fetchone()
        assert job is not None
        row = c.execute(
            "SELECT status FROM jobq_fail_many(job_ids => ARRAY[%s]::uuid[], "
            "worker_id => 'w3', errors => '{again}')",
            (job[0],),
        ).fetchone()
        assert row == ("pending",)

    # That commit's own runner cannot go back: it refuses migrations it does not know.
    with pytest.raises(Exception, match="0003_jobq_status_names applied, which this jobq"):
        main_runner(commit).migrate(old)


@pytest.mark.parametrize("commit", sorted(MAIN_INSTALLS))
def test_the_fixtures_of_main_are_what_main_had_and_the_history_knows_their_files(
    commit: str,
) -> None:
    runner = main_runner(commit)
    shipped = {m.version: m.checksum for m in available_migrations()}
    for m in runner.available_migrations():
        assert m.checksum == shipped[m.version], f"{m.version} was edited after it landed"
    history = function_history()
    for f in runner.function_files():
        assert f.checksum in history.get(f.name, ()), f"{f.name}.sql"
