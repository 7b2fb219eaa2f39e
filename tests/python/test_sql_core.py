"""The SQL queue under real concurrency, and the migration runner, against a real server."""

from __future__ import annotations

import random
import re
import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb
from tests.plans import log_plans
from tests.schema_dump import dump_schema
from tests.sql_reference import BEGIN, END, render, splice

from pgq_client.migrate import (
    MigrationError,
    available_migrations,
    function_files,
    migrate,
    render_dry_run,
)

ROOT = Path(__file__).resolve().parents[2]


def all_versions() -> list[str]:
    """What a fresh install applies, in order: the migrations, then every function file."""
    return [m.version for m in available_migrations()] + [f.version for f in function_files()]


def log_generic_plans(c: psycopg.Connection[Any]) -> list[str]:
    """From now on, collect the plan of every statement ``c`` runs, nested ones included (the
    statements inside jobq's functions), with generic plans forced: auto_explain at NOTICE."""
    return log_plans(c, "plan_cache_mode = force_generic_plan")


def test_eight_threads_drain_3000_jobs_with_no_job_claimed_twice(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "SELECT count(*) FROM jobq_enqueue_many(%(jobs)s::jsonb)",
            {
                "jobs": psycopg.types.json.Jsonb(
                    [{"job_type": "t", "payload": {"n": i}} for i in range(3000)]
                )
            },
        )
    claimed: list[uuid.UUID] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def drain(n: int) -> int:
        done = 0
        with psycopg.connect(dsn, autocommit=True) as c:
            barrier.wait()
            while True:
                rows = c.execute(
                    "SELECT id, attempts"
                    " FROM jobq_dequeue(worker_id => %(w)s::text, batch_size => 7)",
                    {"w": f"w{n}"},
                ).fetchall()
                if not rows:
                    return done
                with lock:
                    claimed.extend(r[0] for r in rows)
                done += c.execute(
                    "SELECT jobq_complete_many("
                    "job_ids => %(ids)s::uuid[], worker_id => %(w)s::text)",
                    {"ids": [r[0] for r in rows], "w": f"w{n}"},
                ).fetchone()[0]  # type: ignore[index]

    with ThreadPoolExecutor(8) as pool:
        completed = sum(pool.map(drain, range(8)))

    assert len(claimed) == 3000
    assert len(set(claimed)) == 3000, "a job was claimed twice"
    assert completed == 3000
    with psycopg.connect(dsn) as c:
        rows = c.execute(
            "SELECT status, count(*), max(attempts) FROM jobq_all_jobs GROUP BY status"
        ).fetchall()
    assert rows == [("succeeded", 3000, 1)]


def test_forty_threads_enqueuing_one_key_make_one_row_and_all_get_its_id(dsn: str) -> None:
    barrier = threading.Barrier(40)

    def enqueue(n: int) -> uuid.UUID:
        with psycopg.connect(dsn, autocommit=True) as c:
            barrier.wait()
            row = c.execute(
                "SELECT jobq_enqueue(job_type => 'x', payload => %(p)s::jsonb,"
                " idempotency_key => 'same')",
                {"p": psycopg.types.json.Jsonb({"caller": n})},
            ).fetchone()
            assert row is not None
            return row[0]  # type: ignore[no-any-return]

    with ThreadPoolExecutor(40) as pool:
        ids = list(pool.map(enqueue, range(40)))
    assert None not in ids
    assert len(set(ids)) == 1
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (1,)


def test_enqueue_many_with_keys_racing_from_many_sessions_makes_one_row_per_key(dsn: str) -> None:
    barrier = threading.Barrier(10)
    jobs = [{"job_type": "x", "idempotency_key": f"k{i % 50}"} for i in range(200)]

    def enqueue(_: int) -> list[uuid.UUID]:
        with psycopg.connect(dsn, autocommit=True) as c:
            barrier.wait()
            return [
                r[0]
                for r in c.execute(
                    "SELECT id FROM jobq_enqueue_many(%(j)s::jsonb) ORDER BY ord",
                    {"j": psycopg.types.json.Jsonb(jobs)},
                )
            ]

    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(enqueue, range(10)))
    assert all(r == results[0] for r in results)
    assert len(set(results[0])) == 50
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT count(*) FROM jobq_jobs").fetchone() == (50,)


def test_migrate_twice_applies_nothing_the_second_time(empty_dsn: str) -> None:
    assert migrate(empty_dsn) == all_versions()
    assert migrate(empty_dsn) == []
    with psycopg.connect(empty_dsn) as c:
        versions = [r[0] for r in c.execute("SELECT version FROM jobq_migrations ORDER BY 1")]
    assert versions == sorted(all_versions())


def test_concurrent_migrate_runs_apply_each_migration_once(empty_dsn: str) -> None:
    barrier = threading.Barrier(6)

    def run(_: int) -> list[str]:
        barrier.wait()
        return migrate(empty_dsn, schema="tenant")

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(run, range(6)))
    applied = Counter(v for r in results for v in r)
    assert applied == Counter({version: 1 for version in all_versions()})


def test_edited_applied_migration_is_refused(empty_dsn: str) -> None:
    migrate(empty_dsn)
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        c.execute(
            "UPDATE jobq_migrations SET checksum = 'deadbeef' WHERE version = '0001_jobq_baseline'"
        )
    with pytest.raises(MigrationError, match="edited after it was applied"):
        migrate(empty_dsn)


def test_unknown_applied_migration_is_refused(empty_dsn: str) -> None:
    migrate(empty_dsn)
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        c.execute("INSERT INTO jobq_migrations (version, checksum) VALUES ('9999_future', 'x')")
    with pytest.raises(MigrationError, match="does not know"):
        migrate(empty_dsn)


def test_two_schemas_are_independent_queues(empty_dsn: str) -> None:
    migrate(empty_dsn, schema="tenant_a")
    migrate(empty_dsn, schema="tenant b")  # a name that needs quoting
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        a = c.execute("SELECT tenant_a.jobq_enqueue(job_type => 'x')").fetchone()
        # A function captures its own schema: a caller's search_path cannot redirect it.
        c.execute("SET search_path = tenant_a")
        c.execute("SELECT \"tenant b\".jobq_enqueue(job_type => 'y')")
        c.execute('SELECT "tenant b".jobq_configure(max_payload_bytes => 100)')
        assert c.execute("SELECT jobq_configure()").fetchone() == (
            {"max_payload_bytes": 1048576, "metrics": False, "metrics_label_sets": 1000},
        )
        assert c.execute("SELECT job_type FROM tenant_a.jobq_jobs").fetchall() == [("x",)]
        assert c.execute('SELECT job_type FROM "tenant b".jobq_jobs').fetchall() == [("y",)]
        claimed = c.execute(
            "SELECT id FROM tenant_a.jobq_dequeue(worker_id => 'w', batch_size => 10)"
        ).fetchall()
        assert claimed == [a]


def test_database_built_by_migrations_matches_committed_schema_dump(empty_dsn: str) -> None:
    migrate(empty_dsn)
    committed = (ROOT / "sql" / "schema.sql").read_text()
    assert dump_schema(empty_dsn) == committed, (
        "the migrations no longer build sql/schema.sql: if the change is intended, run "
        "`make schema-dump` and commit the result"
    )


def test_the_sql_reference_in_the_docs_is_what_the_database_says(dsn: str) -> None:
    committed = (ROOT / "docs" / "sql-api.md").read_text()
    assert splice(committed, render(dsn)) == committed, (
        "docs/sql-api.md's reference no longer matches the COMMENT ON texts and signatures: "
        "run `make docs` and commit the result"
    )


def test_the_reference_is_spliced_between_its_markers_keeping_the_prose() -> None:
    document = f"# Title\n\nProse before.\n\n{BEGIN}\nold\n{END}\n\nProse after.\n"
    assert splice(document, "new\n") == (
        f"# Title\n\nProse before.\n\n{BEGIN}\n\nnew\n\n{END}\n\nProse after.\n"
    )
    with pytest.raises(ValueError, match="markers"):
        splice("# no markers\n", "new\n")


def test_dry_run_changes_nothing_and_its_script_builds_the_same_schema(
    empty_dsn: str, admin_dsn: str
) -> None:
    import subprocess

    assert migrate(empty_dsn, dry_run=True) == all_versions()
    script = render_dry_run(empty_dsn, "public")
    with psycopg.connect(empty_dsn) as c:
        assert c.execute("SELECT to_regclass('jobq_jobs')").fetchone() == (None,)
    subprocess.run(
        ["psql", "--no-psqlrc", "--quiet", "--dbname", empty_dsn],
        input=script,
        text=True,
        check=True,
        capture_output=True,
    )
    assert migrate(empty_dsn) == []  # recorded with the same checksums
    assert dump_schema(empty_dsn) == (ROOT / "sql" / "schema.sql").read_text()


def test_claim_locks_no_more_than_batch_size_rows_under_a_nested_loop_plan(dsn: str) -> None:
    """The MATERIALIZED CTE applies LIMIT once, whatever join plan the UPDATE gets."""
    with psycopg.connect(dsn, autocommit=True) as c, psycopg.connect(dsn, autocommit=True) as other:
        c.execute(
            "SELECT count(*) FROM jobq_enqueue_many(%(j)s::jsonb)",
            {"j": psycopg.types.json.Jsonb([{"job_type": "t"} for _ in range(500)])},
        )
        c.execute("ANALYZE jobq_jobs")
        with c.transaction():
            c.execute("SET LOCAL enable_hashjoin = off")
            c.execute("SET LOCAL enable_mergejoin = off")
            c.execute("SET LOCAL enable_seqscan = off")
            rows = c.execute(
                "SELECT id FROM jobq_dequeue(worker_id => 'w', batch_size => 3)"
            ).fetchall()
            # While the claim's transaction is open, every other row can still be locked.
            lockable = other.execute(
                "SELECT count(*) FROM (SELECT id FROM jobq_jobs FOR UPDATE SKIP LOCKED) AS s"
            ).fetchone()
        assert len(rows) == 3
        assert lockable == (497,)
        processing = c.execute(
            "SELECT count(*) FROM jobq_jobs WHERE status = 'processing'"
        ).fetchone()
        assert processing == (3,)


def test_fenced_calls_find_the_job_by_primary_key_when_statistics_say_nothing_is_processing(
    dsn: str,
) -> None:
    """complete, complete_many, fail, heartbeat and release, with generic plans and statistics
    gathered while no job was processing: no statement of theirs may scan the index of
    processing jobs (jobq_jobs_locked_until_idx), which would visit every claimed job per call
    (in 0001 it did: 4,000 failures reported in one statement took 2.3 s instead of 0.25 s)."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "SELECT count(*) FROM jobq_enqueue_many(%(j)s::jsonb)",
            {"j": psycopg.types.json.Jsonb([{"job_type": "t"} for _ in range(400)])},
        )
        c.execute("ANALYZE jobq_jobs")  # nothing is processing now
        ids = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', batch_size => 300)")]
        assert len(ids) == 300
        plans = log_generic_plans(c)
        calls = [
            ("SELECT jobq_complete(%s, 'w', 1)", (ids[0],)),
            ("SELECT jobq_complete(%s, 'w')", (ids[1],)),
            ("SELECT jobq_complete_many(%s, 'w')", (ids[2:4],)),
            ("SELECT jobq_complete_many(%s, 'w', %s)", (ids[4:6], [1, 1])),
            ("SELECT jobq_fail(%s, 'w', 'boom')", (ids[6],)),
            ("SELECT jobq_fail(%s, 'w', 'boom', false, '0', 1)", (ids[7],)),
            ("SELECT jobq_heartbeat('w', %s)", (ids[8:10],)),
            ("SELECT jobq_release(%s, 'w')", (ids[10:12],)),
        ]
        for query, params in calls:
            for _ in range(3):  # and again, with the cached plan
                c.execute(query, params)
        # A completion finds its row by a DELETE (its move to jobq_jobs_history).
        updates = [p for p in plans if "UPDATE jobq_jobs" in p or "DELETE FROM jobq_jobs" in p]
        assert len(updates) >= len(calls) * 3, plans
        on_locked_idx = [
            p
            for p in updates
            if re.search(r"(Scan using|Index Scan on) jobq_jobs_locked_until_idx", p)
        ]
        assert not on_locked_idx, on_locked_idx[0]
        done = c.execute(
            "SELECT status, count(*) FROM jobq_all_jobs WHERE id = ANY(%s) GROUP BY 1 ORDER BY 1",
            (ids[:12],),
        ).fetchall()
        assert done == [("failed", 1), ("pending", 3), ("processing", 2), ("succeeded", 6)]


def test_fail_many_finds_its_jobs_by_primary_key_whatever_the_statistics_say(dsn: str) -> None:
    """Statistics gathered while no job was processing say `locked_by = 'w'` matches one row:
    planned with the array of ids (a custom plan), the UPDATE of a batch scanned the whole table
    for the worker's rows and joined them to every element (300 failures beside 20,000 jobs:
    395 ms). With sequential scans off inside the function, each element is one probe of the
    primary key, with custom plans and generic ones."""
    with psycopg.connect(dsn, autocommit=True) as c:
        jobs = psycopg.types.json.Jsonb([{"job_type": "t"} for _ in range(3000)])
        c.execute("SELECT count(*) FROM jobq_enqueue_many(%s)", (jobs,))
        c.execute("ANALYZE jobq_jobs")  # nothing is processing now
        ids = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', batch_size => 1200)")]
        plans = log_generic_plans(c)
        c.execute("SET plan_cache_mode = force_custom_plan")
        batches = [ids[i : i + 300] for i in range(0, 1200, 300)]
        for n, batch in enumerate(batches):
            if n == 2:
                c.execute("SET plan_cache_mode = force_generic_plan")
            rows = c.execute(
                "SELECT status FROM jobq_fail_many(%s, 'w', %s, backoffs => %s)",
                (batch, ["boom"] * len(batch), [timedelta(0)] * len(batch)),
            ).fetchall()
            assert rows == [("pending",)] * 300
        updates = [p for p in plans if "UPDATE jobq_jobs" in p]
        assert len(updates) == 4, plans
        for plan in updates:
            assert "Index Scan using jobq_jobs_pkey on jobq_jobs j" in plan, plan
            assert "Seq Scan on jobq_jobs" not in plan, plan
        assert c.execute("SHOW enable_seqscan").fetchone() == ("on",), "the caller's is kept"


def test_the_claim_reads_its_indexes_in_order_when_statistics_say_the_queue_is_empty(
    dsn: str,
) -> None:
    """0005: statistics from an empty queue, 1,500 jobs claimed and completed since (their
    index entries dead, not yet vacuumed), a generic plan. The claim must be an index scan of
    jobq_jobs_claim_idx in its order, stopping at batch_size: the bitmap scan + sort chosen
    before 0005 visited every dead entry and its heap row on every call (28 ms per claim with
    500,000 of them). The probe of expired claims, and the takeover it lets run, likewise read
    jobq_jobs_locked_until_idx."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("ALTER TABLE jobq_jobs SET (autovacuum_enabled = off)")
        c.execute("VACUUM ANALYZE jobq_jobs")  # the statistics of an empty queue
        jobs = psycopg.types.json.Jsonb([{"job_type": "t"} for _ in range(2000)])
        c.execute("SELECT count(*) FROM jobq_enqueue_many(%s)", (jobs,))
        ids = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', batch_size => 1500)")]
        assert c.execute("SELECT jobq_complete_many(%s, 'w')", (ids,)).fetchone() == (1500,)
        plans = log_generic_plans(c)
        claimed = []
        for _ in range(3):  # and again, with the cached plan
            claimed += [
                r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', batch_size => 10)")
            ]
        assert len(set(claimed)) == 30
        # One claim's lock expires: the next claim takes it back, in the statement that the
        # probe of expired claims lets run (each claim probes; none of the first three ran it).
        c.execute("UPDATE jobq_jobs SET locked_until = now() - interval '1 second'"
                  " WHERE id = %s", (claimed[0],))
        again = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', batch_size => 1)")]
        assert again == [claimed[0]]
        claims = [p for p in plans if "WITH candidates AS MATERIALIZED" in p]
        probes = [p for p in plans if "j.locked_until < v_now" in p and "WITH stale" not in p]
        stale = [p for p in plans if "WITH stale AS MATERIALIZED" in p]
        assert len(claims) == 4 and len(probes) == 4 and len(stale) == 1, plans
        for plan in claims:
            assert "Index Scan using jobq_jobs_claim_idx" in plan, plan
            assert "Bitmap" not in plan and "Sort Key: j.priority" not in plan, plan
        for plan in probes + stale:
            assert "Scan using jobq_jobs_locked_until_idx" in plan, plan
            assert "Bitmap" not in plan and "Seq Scan" not in plan, plan
        setting = c.execute("SELECT current_setting('enable_bitmapscan')").fetchone()
        assert setting == ("on",), "the function's setting leaked into the session"


def test_a_limited_claim_never_reads_the_table_when_statistics_come_from_a_backlog(
    dsn: str,
) -> None:
    """Statistics gathered while every row was a pending limited job (a backlog enqueued at
    once), 1,500 of them finished since, a generic plan. Whether limited jobs wait must be a
    probe of jobq_jobs_limited_idx: as an EXISTS, its generic plan here was a sequential scan
    of jobq_jobs, which read every finished job before the first pending one on every claim of
    the session."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("ALTER TABLE jobq_jobs SET (autovacuum_enabled = off)")
        c.execute("SELECT jobq_set_limit('g', max_running => 1000)")
        jobs = psycopg.types.json.Jsonb(
            [{"job_type": "t", "limit_group": "g", "limit_key": f"k{i % 8}"} for i in range(2000)]
        )
        c.execute("SELECT count(*) FROM jobq_enqueue_many(%s)", (jobs,))
        c.execute("VACUUM ANALYZE jobq_jobs")  # the statistics of the backlog
        ids = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', batch_size => 1500)")]
        assert c.execute("SELECT jobq_complete_many(%s, 'w')", (ids,)).fetchone() == (1500,)
        plans = log_generic_plans(c)
        claimed = []
        for job_types, queues in ((None, None), (["t"], None), (None, ["default"]), (["t"], None)):
            claimed += [
                r[0]
                for r in c.execute(
                    "SELECT id FROM jobq_dequeue('w', job_types => %s::text[], batch_size => 10,"
                    " queues => %s::text[])",
                    (job_types, queues),
                )
            ]
        assert len(set(claimed)) == 40
        assert sum("jobq__claim_limited(" in p for p in plans) == 4, plans
        scans = [p for p in plans if "Seq Scan on jobq_jobs" in p]
        assert scans == [], scans[0]


def test_a_claim_reads_its_indexes_when_statistics_come_from_an_empty_queue(dsn: str) -> None:
    """Statistics gathered on an empty jobq_jobs (a drained queue: finished jobs live in the
    history), the session's plans made on them, then a backlog. Every statement of the claim
    must read its index: planned on those statistics, the generic plans of the range search,
    the promotion, the takeover and the claim read the whole table on every claim of the
    session, 16 sequential scans for a claim of 10 from 20,000 pending jobs."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("ALTER TABLE jobq_jobs SET (autovacuum_enabled = off)")
        c.execute("VACUUM ANALYZE jobq_jobs")  # the statistics of an empty queue
        assert c.execute("SELECT count(*) FROM jobq_dequeue('w', ARRAY['t'], 10)").fetchone() == (
            0,
        )
        jobs = Jsonb([{"job_type": "t"} for _ in range(20000)])
        c.execute("SELECT count(*) FROM jobq_enqueue_many(%s)", (jobs,))
        plans = log_generic_plans(c)
        with c.transaction():
            claimed = c.execute("SELECT id FROM jobq_dequeue('w', ARRAY['t'], 10)").fetchall()
            read = c.execute(
                "SELECT seq_scan, seq_tup_read FROM pg_stat_xact_user_tables"
                " WHERE relid = 'jobq_jobs'::regclass"
            ).fetchone()
        assert len(claimed) == 10
        assert read == (0, 0), [p for p in plans if "Seq Scan on jobq_jobs" in p][:1]


def test_a_claim_takes_stale_jobs_back_by_primary_key_whatever_the_statistics_say(
    dsn: str,
) -> None:
    """Statistics gathered while most jobs were processing (a burst claimed on a small table),
    20,000 finished jobs since, a generic plan. The takeover of stale claims must reach its
    rows by primary key: joined to them by id alone, its plan hashed the whole of jobq_jobs on
    every claim that took a stale job back."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("ALTER TABLE jobq_jobs SET (autovacuum_enabled = off)")
        jobs = psycopg.types.json.Jsonb([{"job_type": "t"} for _ in range(2200)])
        c.execute("SELECT count(*) FROM jobq_enqueue_many(%s)", (jobs,))
        burst = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('a', batch_size => 2000)")]
        c.execute("VACUUM ANALYZE jobq_jobs")  # the statistics of the burst
        assert c.execute("SELECT jobq_complete_many(%s, 'a')", (burst,)).fetchone() == (2000,)
        c.execute(
            "INSERT INTO jobq_jobs (job_type, status, attempts, finished_at)"
            " SELECT 't', 'succeeded', 1, now() FROM generate_series(1, 20000)"
        )
        lost = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('b', batch_size => 20)")]
        c.execute(
            "UPDATE jobq_jobs SET locked_at = locked_at - interval '1 hour',"
            " locked_until = locked_until - interval '1 hour' WHERE id = ANY(%s)",
            (lost,),
        )
        plans = log_generic_plans(c)
        taken = [
            r[0]
            for r in c.execute(
                "SELECT id FROM jobq_dequeue('c', batch_size => 20, lock_timeout => '1 minute')"
            )
        ]
        assert sorted(taken) == sorted(lost)  # taken back, then claimed again, in claim order
        kinds = c.execute(
            "SELECT DISTINCT errors -> -1 ->> 'kind' FROM jobq_all_jobs WHERE id = ANY(%s)", (lost,)
        ).fetchall()
        assert kinds == [("lock_expired",)]
        takeovers = [p for p in plans if "WITH stale AS MATERIALIZED" in p]
        assert len(takeovers) == 1, plans
        assert "Seq Scan on jobq_jobs" not in takeovers[0], takeovers[0]
        assert "Index Scan using jobq_jobs_pkey" in takeovers[0], takeovers[0]


def test_no_statement_of_a_claim_is_compiled_even_where_the_session_compiles_everything(
    dsn: str,
) -> None:
    """jobq_dequeue runs with jit = off: a generic plan's estimates passed jit_above_cost in
    jobq__claim_limited (statistics from a backlog of limited jobs) and the claim spent 8 ms
    compiling on every call. Here the session compiles every statement (jit_above_cost = 0);
    neither an unlimited nor a limited claim, nor the statements of the functions they call,
    may be compiled, while the session's own statements are."""
    with psycopg.connect(dsn, autocommit=True) as c:
        if c.execute("SELECT pg_jit_available()").fetchone() != (True,):
            pytest.skip("this server has no JIT provider (llvmjit): nothing can be compiled")
        c.execute("SELECT jobq_set_limit('g', max_running => 2)")
        jobs = [{"job_type": "t"} for _ in range(20)] + [
            {"job_type": "t", "limit_group": "g", "limit_key": f"k{i % 3}"} for i in range(20)
        ]
        c.execute("SELECT count(*) FROM jobq_enqueue_many(%s)", (psycopg.types.json.Jsonb(jobs),))
        plans = log_generic_plans(c)
        for setting in (
            "auto_explain.log_analyze = on",  # the JIT summary is part of an analyzed plan
            "auto_explain.log_timing = off",
            "jit = on",
            "jit_above_cost = 0",
        ):
            c.execute(f"SET {setting}")
        c.execute("SELECT count(*) FROM jobq_jobs")
        assert any("JIT:" in p for p in plans), "the session's own statement was compiled"
        plans.clear()
        # Unlimited jobs only (no limited job of type u), then the limited claim.
        unlimited = psycopg.types.json.Jsonb([{"job_type": "u"}] * 5)
        c.execute("SELECT count(*) FROM jobq_enqueue_many(%s)", (unlimited,))
        plans.clear()
        got = c.execute("SELECT count(*) FROM jobq_dequeue('w', '{u}', batch_size => 5)").fetchone()
        got2 = c.execute("SELECT count(*) FROM jobq_dequeue('w', batch_size => 30)").fetchone()
        assert (got, got2) == ((5,), (26,))  # 20 unlimited, and 3 keys x 2
        assert sum("jobq__claim_limited(" in p for p in plans) == 1, plans
        nested = [p for p in plans if "Query Text: SELECT count(*) FROM jobq_dequeue(" not in p]
        assert len(nested) > 10, plans
        compiled = [p for p in nested if "JIT:" in p]
        assert compiled == [], compiled[0]
        assert c.execute("SHOW jit_above_cost").fetchone() == ("0",), "the caller's is kept"


@pytest.mark.parametrize(
    "first", ["fail_many", "release_orphans", "health", "queue_summary", "limit_usage"]
)
def test_no_later_call_compiles_whichever_function_a_session_calls_first(
    dsn: str, first: str
) -> None:
    """A plan of a function's statement is kept for the session, made under the settings of
    whoever ran it first. jobq_fail_many and jobq_release_orphans run with enable_seqscan =
    off, and the metrics setting read by jobq__metrics_count (called by them and by every
    enqueue, claim and completion) had no plan but a sequential scan: made under that
    setting, its cost passed jit_above_cost, and in a session whose first counted call was a
    failure (a worker whose first job fails) every later enqueue, completion or failure
    compiled it, 20 ms or more each. jobq_health (enable_seqscan = off too) compiled its
    read of jobq_workers on each call. The read now goes by key, and every function that
    turns sequential scans off turns jit off too, so that no plan made under it, a helper's
    included, carries a compilation (either alone passes). With the server's default
    jit_above_cost, no
    statement of those calls may be compiled, while the session's own statement, costed
    past it, is (the control). The dashboard's summaries, which run with enable_seqscan = off
    too, come first in the last two cases."""
    with psycopg.connect(dsn, autocommit=True) as c:
        if c.execute("SELECT pg_jit_available()").fetchone() != (True,):
            pytest.skip("this server has no JIT provider (llvmjit): nothing can be compiled")
        c.execute("SELECT jobq_configure(metrics => true)")
        c.execute("SELECT count(*) FROM jobq_enqueue_arrays(array_fill('t'::text, ARRAY[12]))")
        held = [
            r[0]
            for r in c.execute(
                "SELECT id FROM jobq_dequeue('w', batch_size => 12, lock_timeout => '1 hour')"
                " ORDER BY id"
            )
        ]
        assert len(held) == 12
    calls = {
        "fail_many": ("SELECT count(*) FROM jobq_fail_many(%s, 'w', %s)", ([held[0]], ["x"])),
        "release_orphans": ("SELECT jobq_release_orphans('w', %s)", (held[1:],)),
        "health": ("SELECT count(*) FROM jobq_health()", None),
        "queue_summary": ("SELECT count(*) FROM jobq_queue_summary()", None),
        "limit_usage": ("SELECT count(*) FROM jobq_limit_usage()", None),
    }
    later = [
        ("SELECT jobq_complete(%s, 'w')", (held[2],)),
        ("SELECT jobq_complete_many(%s, 'w')", (held[3:5],)),
        ("SELECT jobq_fail(%s, 'w', 'x')", (held[5],)),
        ("SELECT count(*) FROM jobq_fail_many(%s, 'w', %s)", (held[6:7], ["x"])),
        ("SELECT jobq_release(%s, 'w')", (held[7:8],)),
        ("SELECT jobq_heartbeat('w', %s)", (held[8:],)),
        ("SELECT jobq_enqueue('t', '{}')", None),
        ("SELECT count(*) FROM jobq_enqueue_many(%s)", (Jsonb([{"job_type": "t"}]),)),
        ("SELECT count(*) FROM jobq_unserved_job_types()", None),
        ("SELECT count(*) FROM jobq_health()", None),
        ("SELECT count(*) FROM jobq_metrics()", None),
    ]
    with psycopg.connect(dsn, autocommit=True) as s:
        plans = log_plans(
            s,
            "auto_explain.log_analyze = on",  # the JIT summary is part of an analyzed plan
            "auto_explain.log_timing = off",
            "jit = on",
            "jit_above_cost = 100000",  # the server's default, whatever this one's is
        )
        query, params = calls[first]
        s.execute(query.encode(), params)
        for query, params in later:
            s.execute(query.encode(), params)
        assert len(plans) > 40, plans
        compiled = [p for p in plans if "JIT:" in p]
        assert compiled == [], compiled[0]
        s.execute("SET enable_seqscan = off")  # a sequential scan is then costed past it
        s.execute("SELECT s.metrics FROM jobq_settings AS s")
        assert "JIT:" in plans[-1], "the session's own statement was compiled"
        statuses = s.execute(
            "SELECT status, count(*) FROM jobq_all_jobs WHERE id = ANY(%s) GROUP BY status"
            " ORDER BY status",
            (held,),
        ).fetchall()
    # Every call did its work: 3 completed, 3 failed or released back to pending (and, when a
    # failure or a release of orphans came first, the first job: failed, or released as not
    # named by the worker).
    first_job = "pending" if first in ("fail_many", "release_orphans") else "processing"
    expected = {"pending": 3, "processing": 5, "succeeded": 3}
    expected[first_job] += 1
    assert statuses == sorted(expected.items()), statuses


def test_a_heartbeat_skips_rows_locked_by_another_transaction_instead_of_waiting(
    dsn: str,
) -> None:
    """0004: a job whose row another transaction has locked (here an acknowledgement not yet
    committed) is not renewed and not counted; the others are renewed at once. Before 0004
    the heartbeat waited (here: 55P03 after lock_timeout) and renewed nothing meanwhile."""
    with psycopg.connect(dsn, autocommit=True) as beat, psycopg.connect(dsn) as ack:
        beat.execute(
            "SELECT count(*) FROM jobq_enqueue_many(%s)",
            (psycopg.types.json.Jsonb([{"job_type": "t"}] * 3),),
        )
        ids = [r[0] for r in beat.execute("SELECT id FROM jobq_dequeue('w', batch_size => 3)")]
        beat.execute("UPDATE jobq_jobs SET locked_at = locked_at - interval '1 minute',"
            " locked_until = locked_until - interval '1 minute'")
        assert ack.execute("SELECT jobq_complete(%s, 'w')", (ids[0],)).fetchone() == (True,)
        # ack's transaction is open: it holds ids[0]
        beat.execute("SET lock_timeout = '2s'")
        renewed = beat.execute("SELECT jobq_heartbeat('w', %s)", (ids,)).fetchone()
        assert renewed == (2,)
        rows = beat.execute(
            "SELECT id, now() - locked_at < interval '10 seconds' FROM jobq_jobs"
            " WHERE status = 'processing'"
        ).fetchall()
        ages = {r[0]: r[1] for r in rows}
        assert ages == {ids[0]: False, ids[1]: True, ids[2]: True}
        ack.commit()
        status = beat.execute(
            "SELECT status FROM jobq_all_jobs WHERE id = %s", (ids[0],)
        ).fetchone()
        assert status == ("succeeded",)
        assert beat.execute("SELECT jobq_heartbeat('w', %s)", (ids,)).fetchone() == (2,)


def test_heartbeats_beside_acknowledgements_of_the_same_jobs_never_deadlock(dsn: str) -> None:
    """One connection renews 2,000 held jobs over and over while another completes them in
    shuffled batches of 50: the two lock overlapping rows. Before 0004 this met 34 deadlocks
    (40P01) in three rounds; a heartbeat now skips what it would wait for."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "SELECT count(*) FROM jobq_enqueue_many(%s)",
            (psycopg.types.json.Jsonb([{"job_type": "t"} for _ in range(2000)]),),
        )
        ids = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', batch_size => 2000)")]
    assert len(ids) == 2000
    errors: list[str] = []
    beats = 0
    stop = threading.Event()

    def heartbeat() -> None:
        nonlocal beats
        with psycopg.connect(dsn, autocommit=True) as c:
            while not stop.is_set():
                try:
                    c.execute("SELECT jobq_heartbeat('w', %s)", (ids,))
                    beats += 1
                except psycopg.Error as exc:
                    errors.append(f"heartbeat: {exc.sqlstate} {exc}")

    shuffled = ids[:]
    random.Random(4).shuffle(shuffled)
    completed = 0
    thread = threading.Thread(target=heartbeat)
    thread.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            for i in range(0, len(shuffled), 50):
                try:
                    row = c.execute(
                        "SELECT jobq_complete_many(%s, 'w')", (shuffled[i : i + 50],)
                    ).fetchone()
                    completed += row[0]  # type: ignore[index]
                except psycopg.Error as exc:
                    errors.append(f"complete_many: {exc.sqlstate} {exc}")
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[:3]
    assert completed == 2000
    assert beats > 0


def test_schema_names_are_quoted_everywhere(empty_dsn: str) -> None:
    name = 'we"ird'
    migrate(empty_dsn, schema=name)
    with psycopg.connect(empty_dsn) as c:
        row = c.execute(
            sql.SQL("SELECT {}.jobq_enqueue(job_type => 'x') IS NOT NULL").format(
                sql.Identifier(name)
            )
        ).fetchone()
    assert row == (True,)
