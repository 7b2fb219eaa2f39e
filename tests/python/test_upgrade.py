"""Upgrades: a schema installed by any release from 0.1.0 on becomes, with a plain `jobq
migrate`, exactly a fresh install of this tree, keeping its jobs and its roles' levels.

Each release is installed by its own runner and files (``git archive`` of its tag). The rules
that make an upgrade keep its roles working (a level carried over to the functions an upgrade
adds, ``--! granted-as``, the grants announced, the ``--dry-run`` script applied with psql)
are tested on a synthetic older jobq: this tree's files without some function files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from tests.helpers import MakeRole
from tests.schema_dump import dump_schema

from pgq_client import grants
from pgq_client.migrate import MigrationError, migrate, render_dry_run

ROOT = Path(__file__).resolve().parents[2]

# Every release from the first on, oldest first, with the commit its tag names: a new release
# adds its line. The commit is recorded because a clone of main need not carry the tags.
RELEASES = {"0.1.0": "fa24289c41762921dac473553e2484d2d79ca7d3"}

# Function files that the synthetic older jobq lacks: one that only its levels grant
# (jobq_release_orphans), and two granted as a function a role already holds (jobq_fail_many
# as jobq_fail, jobq_cancel_requested as jobq_heartbeat).
ADDED = ("jobq_release_orphans", "jobq_fail_many", "jobq_cancel_requested")


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


def records(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as c:
        return dict(c.execute("SELECT version, checksum FROM jobq_migrations").fetchall())


def add_jobs(dsn: str) -> None:
    """Jobs in every status but cancelled, made through the installed functions."""
    with psycopg.connect(dsn, autocommit=True) as c:
        for i in range(6):
            c.execute(
                "SELECT jobq_enqueue(job_type => 'ocr', payload => %s::jsonb, "
                "idempotency_key => %s::text, max_attempts => %s::int, priority => %s::int)",
                (f'{{"n": {i}}}', f"key-{i}" if i % 2 else None, 1 if i == 3 else 3, 6 - i),
            )
        c.execute("SELECT jobq_enqueue(job_type => 'later', run_at => now() + interval '1 day')")
        claimed = [
            r[0]
            for r in c.execute(
                "SELECT id FROM jobq_dequeue(worker_id => 'w1', job_types => '{ocr}', "
                "batch_size => 5)"
            )
        ]
        assert len(claimed) == 5
        c.execute("SELECT jobq_complete(job_id => %s::uuid, worker_id => 'w1')", (claimed[0],))
        c.execute(
            "SELECT jobq_fail(job_id => %s::uuid, worker_id => 'w1', error => 'retry me')",
            (claimed[1],),
        )
        # claimed[3] is the job with max_attempts 1: failing it dead-letters it.
        c.execute(
            "SELECT jobq_fail(job_id => %s::uuid, worker_id => 'w1', error => 'last')",
            (claimed[3],),
        )
        c.execute(
            "SELECT jobq_fail(job_id => %s::uuid, worker_id => 'w1', error => 'bad', "
            "retry => false)",
            (claimed[4],),
        )
    statuses = {job["status"] for job in jobs(dsn).values()}
    assert statuses == {"pending", "processing", "succeeded", "failed", "dead_letter"}


def jobs(dsn: str) -> dict[str, dict[str, Any]]:
    """Every job, every column, by id: jobq_all_jobs where finished jobs live apart."""
    with psycopg.connect(dsn) as c:
        row = c.execute("SELECT to_regclass('jobq_all_jobs') IS NOT NULL").fetchone()
        table = "jobq_all_jobs" if row and row[0] else "jobq_jobs"
        rows = c.execute(
            sql.SQL("SELECT id::text, to_jsonb(j) FROM {} AS j").format(sql.Identifier(table))
        ).fetchall()
    return {str(i): dict(row) for i, row in rows}


def claim_and_complete(dsn: str, role: str) -> str:
    """As ``role``: claim the ocr job that is available and complete it; its id."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        row = c.execute(
            "SELECT id::text FROM jobq_dequeue(worker_id => 'w2', job_types => '{ocr}')"
        ).fetchone()
        assert row is not None, "a job enqueued before the upgrade is claimable after it"
        done = c.execute(
            "SELECT jobq_complete(job_id => %s::uuid, worker_id => 'w2')", (row[0],)
        ).fetchone()
        assert done == (True,)
        return str(row[0])


def release_tree(release: str, tmp_path: Path) -> Path:
    """The python and sql directories of release ``release``: its git tag where the clone has
    it (which must name the recorded commit), else the recorded commit; a skip only where this
    tree is not a git clone holding that commit."""
    commit = RELEASES[release]
    tag = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "-q", "--verify", f"refs/tags/v{release}^{{commit}}"],
        capture_output=True, text=True, check=False,
    )
    if tag.returncode == 0:
        assert tag.stdout.strip() == commit, f"tag v{release} must name {commit}"
    found = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True, text=True, check=False,
    )
    if found.returncode != 0:
        pytest.skip(f"{ROOT} holds no commit {commit} (release {release}): not a full git clone")
    tree = tmp_path / f"v{release}"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "python", "sql"],
        capture_output=True, check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def run_release(tree: Path, *args: str) -> None:
    """``python -m pgq_client ARGS`` as that release: its own package, runner and files."""
    subprocess.run(
        [sys.executable, "-m", "pgq_client", *args],
        env={**os.environ, "PYTHONPATH": str(tree / "python")},
        cwd=tree, capture_output=True, text=True, timeout=300, check=True,
    )


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_an_install_of_a_release_upgrades_to_a_fresh_install_keeping_its_jobs(
    release: str, dsn: str, empty_dsn: str, make_role: MakeRole, tmp_path: Path
) -> None:
    """A schema installed by the release's own `jobq migrate`, with jobs in every status and
    a worker role granted by its `jobq grant`, is after this tree's `jobq migrate` the same
    schema as a fresh install (dump, records, the role's grants), keeps every job as it was,
    and the role claims and completes a job enqueued before the upgrade; a second run does
    nothing."""
    tree = release_tree(release, tmp_path)
    old, fresh = empty_dsn, dsn
    worker = make_role()
    run_release(tree, "migrate", "--dsn", old)
    run_release(tree, "grant", worker, "--as", "worker", "--dsn", old)
    grants.grant(fresh, worker, "worker")
    add_jobs(old)
    before = jobs(old)

    migrate(old)

    assert dump_schema(old) == dump_schema(fresh)
    assert records(old) == records(fresh)
    assert executable(old, worker) == executable(fresh, worker)
    after = jobs(old)
    assert after.keys() == before.keys()
    for job_id, job in before.items():
        # columns a later release adds are new keys; the release's own keep their values
        assert {k: after[job_id][k] for k in job} == job
    assert migrate(old) == []
    claimed = claim_and_complete(old, worker)
    assert before[claimed]["status"] == "pending"


def test_a_schema_recording_a_migration_this_jobq_does_not_know_is_refused(dsn: str) -> None:
    """A development install from before 0.1.0 (its jobq_migrations records
    0002_jobq_schedules, a file this tree does not have) is refused by `jobq migrate` and its
    --dry-run, naming that migration, and nothing changes."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "INSERT INTO jobq_migrations (version, checksum) VALUES ('0002_jobq_schedules', %s)",
            ("0" * 64,),
        )
    before = records(dsn)
    with pytest.raises(MigrationError, match="0002_jobq_schedules"):
        migrate(dsn)
    with pytest.raises(MigrationError, match="0002_jobq_schedules"):
        render_dry_run(dsn)
    assert records(dsn) == before


# -- the rules that keep roles working across an upgrade, on a synthetic older jobq ------------


@pytest.fixture
def older(empty_dsn: str, tmp_path: Path) -> str:
    """``empty_dsn`` installed by an older jobq: this tree's files without those of ADDED."""
    functions = tmp_path / "older_functions"
    shutil.copytree(ROOT / "sql" / "functions", functions)
    for name in ADDED:
        (functions / f"{name}.sql").unlink()
    migrate(empty_dsn, functions_dir=functions)
    with psycopg.connect(empty_dsn) as c:
        present = c.execute(
            "SELECT count(*) FROM pg_proc WHERE proname = ANY(%s::text[])", (list(ADDED),)
        ).fetchone()
    assert present == (0,)
    return empty_dsn


def test_an_upgrade_grants_the_functions_it_adds_to_the_roles_of_their_level(
    older: str, dsn: str, make_role: MakeRole
) -> None:
    """A role granted a level before the upgrade gets the functions of that level the upgrade
    adds, without `jobq grant` running again: its grants are those of a fresh install."""
    roles = {level: make_role(prefix=f"jobq_u{level}") for level in grants.LEVELS}
    for target in (older, dsn):
        for level, name in roles.items():
            grants.grant(target, name, level)
    before = {level: executable(older, name) for level, name in roles.items()}
    assert not before["worker"] & set(ADDED)

    assert migrate(older) == [f"functions/{name}" for name in sorted(ADDED)]

    for level, name in roles.items():
        assert executable(older, name) == executable(dsn, name) >= before[level], level
    assert set(ADDED) <= executable(older, roles["worker"])
    assert dump_schema(older) == dump_schema(dsn)
    assert migrate(older) == []


def test_a_role_that_held_part_of_a_level_gets_nothing_new_from_an_upgrade(
    older: str, make_role: MakeRole
) -> None:
    """Only a whole level is carried over: a role granted one worker function by hand gets
    nothing, and a worker whose jobq_heartbeat was revoked gets only what is granted as a
    function it kept (jobq_fail_many as jobq_fail), not jobq_cancel_requested (granted as
    jobq_heartbeat) nor jobq_release_orphans (its level's)."""
    partial, trimmed = make_role(), make_role()
    grants.grant(older, trimmed, "worker")
    with psycopg.connect(older, autocommit=True) as c:
        c.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(partial)))
        c.execute(
            sql.SQL("GRANT EXECUTE ON FUNCTION jobq_dequeue TO {}").format(sql.Identifier(partial))
        )
        c.execute(
            sql.SQL("REVOKE EXECUTE ON FUNCTION jobq_heartbeat FROM {}").format(
                sql.Identifier(trimmed)
            )
        )
    before = {name: executable(older, name) for name in (partial, trimmed)}
    migrate(older)
    assert executable(older, partial) == before[partial]
    assert executable(older, trimmed) - before[trimmed] == {"jobq_fail_many"}


def test_jobq_migrate_says_which_role_it_granted_a_new_function(
    older: str, make_role: MakeRole
) -> None:
    worker = make_role("worker", dsn=older)
    done = subprocess.run(
        [sys.executable, "-m", "pgq_client", "migrate", "--dsn", older],
        capture_output=True, text=True, timeout=120, check=True,
    )
    assert (
        f"jobq: granted EXECUTE on jobq_release_orphans to {worker} "
        "(it held the worker level of schema public)"
    ) in done.stderr.splitlines()
    assert "applied functions/jobq_release_orphans" in done.stdout.splitlines()


def test_the_dry_run_of_an_upgrade_applied_with_psql_does_the_same(
    older: str, dsn: str, make_role: MakeRole
) -> None:
    """The --dry-run script of an upgrade, applied with psql, adds the functions, grants them
    to the roles of their level (a NOTICE names each grant), keeps the jobs and records what
    it applied: `jobq migrate` then has nothing to do, and the schema is a fresh install."""
    worker = make_role()
    for target in (older, dsn):
        grants.grant(target, worker, "worker")
    add_jobs(older)
    before = jobs(older)
    recorded = records(older)
    script = render_dry_run(older)
    assert records(older) == recorded, "a dry run changes nothing"
    applied = subprocess.run(
        ["psql", "--no-psqlrc", "--quiet", "-v", "ON_ERROR_STOP=1", "--dbname", older],
        input=script, text=True, check=True, capture_output=True,
    )
    assert migrate(older) == []
    assert records(older) == records(dsn)
    assert dump_schema(older) == dump_schema(dsn)
    assert jobs(older) == before
    assert executable(older, worker) == executable(dsn, worker)
    assert (
        f"jobq migrate: granted EXECUTE on jobq_release_orphans to {worker} "
        "(it held the worker level of schema public)"
    ) in applied.stderr
