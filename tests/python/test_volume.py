"""Claims and pruning at volume, against a real server.

What a claim reads is counted in buffers: ``EXPLAIN (ANALYZE, BUFFERS)`` of the function call
(its Function Scan node counts what the statements inside the function read). It must not grow
with rows the claim cannot claim: finished jobs, jobs of other job types or queues, jobs
scheduled for later at the highest priority. 200,000 of each are inserted straight into the
table (set-based, as the benchmark does; a scheduled job carries the mark ``jobq_enqueue`` gives
it, see tests/pgtap/dequeue.sql); the count may grow only by what the deeper indexes cost (one
more level per index probe), never with the rows.

Plans are kept per session, made under the statistics of the moment: whatever shape those
describe, no statement of the calls a worker or a producer makes may read the table
sequentially (the last test here).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from tests.helpers import insert_jobs
from tests.plans import log_plans

from pgq_client import Queue

pytestmark = pytest.mark.slow  # hundreds of thousands of rows

ROWS = 200_000

# A claim of one job makes up to about fifteen index probes (promotion, stale claims, finding
# the ranges, reading them, locking, the update); each may read two more levels of an index
# that grew from one page to 200,000 entries (+3 to +23 buffers): the bound leaves room for
# that, and is far below what a claim that scanned the rows it cannot claim would read
# (thousands of buffers beside the scheduled jobs, hundreds of thousands beside other types).
DEEPER_INDEXES = 30

# Rows a claim for type b in queue q2 cannot claim, and the claims (filters) that cannot.
KINDS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "finished": (
        f"""INSERT INTO jobq_jobs (job_type, queue, status, attempts, finished_at, errors)
            SELECT 'b', 'q2', (ARRAY['succeeded', 'failed', 'dead_letter'])[1 + g % 3], 1,
                   now() - g * interval '1 second', '[]'
            FROM generate_series(1, {ROWS}) AS g""",
        [{}, {"job_types": ["b"]}, {"queues": ["q2"]}, {"job_types": ["b"], "queues": ["q2"]}],
    ),
    "other job types": (
        f"""INSERT INTO jobq_jobs (job_type, queue, priority, available_at)
            SELECT 'a', 'q2', 1000000, now() - interval '1 day'
            FROM generate_series(1, {ROWS})""",
        [{"job_types": ["b"]}, {"job_types": ["b", "c"]}, {"job_types": ["b"], "queues": ["q2"]}],
    ),
    "other queues": (
        f"""INSERT INTO jobq_jobs (job_type, queue, priority, available_at)
            SELECT 'b', 'q1', 1000000, now() - interval '1 day'
            FROM generate_series(1, {ROWS})""",
        [{"queues": ["q2"]}, {"job_types": ["b"], "queues": ["q2"]}],
    ),
    "scheduled a year ahead at the highest priority": (
        f"""INSERT INTO jobq_jobs (job_type, queue, priority, available_at, scheduled)
            SELECT 'b', 'q2', 1000000, now() + interval '1 year' + g * interval '1 ms', true
            FROM generate_series(1, {ROWS}) AS g""",
        [{}, {"job_types": ["b"]}, {"queues": ["q2"]}, {"job_types": ["b"], "queues": ["q2"]}],
    ),
}


def claim_buffers(c: psycopg.Connection[Any], filters: dict[str, Any]) -> int:
    """Buffers read by one claim of one job with ``filters``, after one claim to warm up (plans
    made, catalogue cached): shared hits plus reads, nested statements included."""
    query = (
        "SELECT * FROM jobq_dequeue(worker_id => 'w', job_types => %(job_types)s::text[],"
        " batch_size => 1, queues => %(queues)s::text[])"
    )
    params = {"job_types": filters.get("job_types"), "queues": filters.get("queues")}
    assert len(c.execute(query, params).fetchall()) == 1
    row = c.execute(
        ("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query).encode(), params
    ).fetchone()
    assert row is not None
    plan = row[0][0]["Plan"]
    assert plan["Node Type"] == "Function Scan" and plan["Actual Rows"] == 1, plan
    return int(plan["Shared Hit Blocks"]) + int(plan["Shared Read Blocks"])


def enqueue(c: psycopg.Connection[Any], jobs: list[dict[str, Any]]) -> list[uuid.UUID]:
    rows = c.execute("SELECT id FROM jobq_enqueue_many(%s) ORDER BY ord", (Jsonb(jobs),))
    return [r[0] for r in rows]


@pytest.fixture
def quiet(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """An autocommit connection to this test's database, with autovacuum off for jobq_jobs (a
    vacuum in the middle of a count would change what the claim reads)."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("ALTER TABLE jobq_jobs SET (autovacuum_enabled = off)")
        yield c


@pytest.mark.parametrize("kind", list(KINDS))
def test_what_a_claim_reads_does_not_grow_with_200000_rows_it_cannot_claim(
    quiet: psycopg.Connection[Any], kind: str
) -> None:
    fill, claims = KINDS[kind]
    c = quiet
    enqueue(c, [{"job_type": "b", "queue": "q2"} for _ in range(20)])
    enqueue(c, [{"job_type": "c", "queue": "q2"} for _ in range(20)])
    c.execute("VACUUM ANALYZE jobq_jobs")
    before = [claim_buffers(c, f) for f in claims]

    insert_jobs(c, fill)
    c.execute("VACUUM ANALYZE jobq_jobs")
    after = [claim_buffers(c, f) for f in claims]

    for filters, b, a in zip(claims, before, after, strict=True):
        assert a <= b + DEEPER_INDEXES, (
            f"{kind}: a claim with {filters or 'no filter'} read {a} buffers beside {ROWS} rows it "
            f"cannot claim, {b} without them"
        )
    # The rows are still there, untouched, and the claims took only jobs of type b or c in q2.
    taken = c.execute(
        "SELECT DISTINCT job_type, queue FROM jobq_all_jobs WHERE status = 'processing'"
    ).fetchall()
    assert set(taken) <= {("b", "q2"), ("c", "q2")}


def test_a_claim_of_several_ranges_looks_past_rows_that_other_claims_hold(dsn: str) -> None:
    """Session A holds the first 8 jobs of the merged order (its claim not committed); B asks
    for 4 over the same three job types: B's first round reads exactly A's 8 and may lock none,
    so it must look further, and return the next 4, in claim order."""
    with psycopg.connect(dsn, autocommit=True) as c, psycopg.connect(dsn) as a:
        for t, base in (("x", 0), ("y", 1), ("z", 2)):
            enqueue(
                c,
                [
                    {"job_type": t, "priority": 100 - (3 * i + base)}
                    for i in range(10)
                ],
            )
        order = [
            r[0]
            for r in c.execute("SELECT id"
                               " FROM jobq_all_jobs ORDER BY priority DESC, available_at, id")
        ]
        held = [
            r[0]
            for r in a.execute(
                "SELECT id FROM jobq_dequeue('a', job_types => '{x,y,z}', batch_size => 8)"
            )
        ]
        assert held == order[:8]
        got = [
            r[0]
            for r in c.execute(
                "SELECT id FROM jobq_dequeue('b', job_types => '{x,y,z}', batch_size => 4)"
            )
        ]
        assert got == order[8:12]
        a.rollback()
        # A gave its jobs back: they are first again.
        again = [
            r[0]
            for r in c.execute(
                "SELECT id FROM jobq_dequeue('c', job_types => '{x,y,z}', batch_size => 10)"
            )
        ]
        assert again == order[:8] + order[12:14]


def test_eight_threads_claiming_from_six_ranges_never_share_a_job_and_drain_them_all(
    dsn: str,
) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        enqueue(
            c,
            [
                {"job_type": t, "queue": q, "priority": i % 5, "payload": {"n": i}}
                for i in range(500)
                for t in ("a", "b", "c")
                for q in ("q1", "q2")
            ],
        )
    claimed: list[uuid.UUID] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)
    filters = [
        {"job_types": ["a", "b", "c"], "queues": None},
        {"job_types": None, "queues": ["q1", "q2"]},
        {"job_types": None, "queues": None},
        {"job_types": ["a", "b", "c"], "queues": ["q1", "q2"]},
    ]

    def drain(n: int) -> int:
        done = 0
        with psycopg.connect(dsn, autocommit=True) as c:
            barrier.wait()
            while True:
                rows = c.execute(
                    "SELECT id FROM jobq_dequeue(worker_id => %(w)s, job_types => %(t)s::text[],"
                    " batch_size => 7, queues => %(q)s::text[])",
                    {"w": f"w{n}", "t": filters[n % 4]["job_types"], "q": filters[n % 4]["queues"]},
                ).fetchall()
                if not rows:
                    return done
                with lock:
                    claimed.extend(r[0] for r in rows)
                row = c.execute(
                    "SELECT jobq_complete_many(%s, %s)", ([r[0] for r in rows], f"w{n}")
                ).fetchone()
                assert row is not None
                done += row[0]

    with ThreadPoolExecutor(8) as pool:
        completed = sum(pool.map(drain, range(8)))
    assert len(claimed) == 3000
    assert len(set(claimed)) == 3000, "a job was claimed twice"
    assert completed == 3000


def test_prune_in_batches_reads_the_indexes_of_finished_jobs_never_the_table(dsn: str) -> None:
    """With generic plans and 20,000 unfinished jobs, each batch finds its rows in
    jobq_jobs_history through the partitions' indexes (auto_explain of the nested
    statements)."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            """INSERT INTO jobq_jobs (job_type, status, attempts, finished_at)
               SELECT 't', (ARRAY['succeeded', 'failed', 'dead_letter'])[1 + g % 3], 1,
                      now() - interval '8 days' - g * interval '1 second'
               FROM generate_series(1, 3000) AS g"""
        )
        c.execute("INSERT INTO jobq_jobs (job_type) SELECT 'p' FROM generate_series(1, 20000)")
        c.execute("VACUUM ANALYZE jobq_jobs")
        c.execute("VACUUM ANALYZE jobq_jobs_history")  # autovacuum analyzes each partition
        plans = log_plans(c, "plan_cache_mode = force_generic_plan")
        total = 0
        for _ in range(20):
            row = c.execute(
                "SELECT jobq_prune('7 days', '{succeeded,failed,dead_letter}', batch_size => 400)"
            ).fetchone()
            assert row is not None
            total += row[0]
            if row[0] < 400:
                break
        assert total == 3000
        deletes = [p for p in plans if "DELETE FROM jobq_jobs_history" in p]
        assert deletes, plans
        for plan in deletes:
            # an empty partition (no page: cost 0) may be "scanned"; no partition with rows is
            seqs = [ln for ln in plan.splitlines() if "Seq Scan" in ln]
            assert all("cost=0.00..0.00 " in ln for ln in seqs), plan
            assert "_id_idx" in plan, plan
        assert c.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (20000,)


def test_prune_skips_a_row_another_transaction_holds_and_takes_it_next_time(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c, psycopg.connect(dsn) as other:
        c.execute(
            """INSERT INTO jobq_jobs (job_type, status, attempts, finished_at)
               SELECT 't' || g, 'succeeded', 1, now() - interval '8 days'
               FROM generate_series(1, 5) AS g"""
        )
        other.execute("SELECT 1 FROM jobq_jobs_history WHERE job_type = 't3' FOR UPDATE")
        c.execute("SET lock_timeout = '5s'")  # waiting would fail the test, not hang it
        assert c.execute("SELECT jobq_prune('7 days', batch_size => 10)").fetchone() == (4,)
        other.rollback()
        assert c.execute("SELECT jobq_prune('7 days', batch_size => 10)").fetchone() == (1,)


def test_queue_prune_deletes_in_batches_of_short_transactions_and_returns_the_total(
    dsn: str,
) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            """INSERT INTO jobq_jobs (job_type, status, attempts, finished_at)
               SELECT 't', 'succeeded', 1, now() - interval '8 days' - g * interval '1 second'
               FROM generate_series(1, 2500) AS g"""
        )
        c.execute(
            "INSERT INTO jobq_jobs (job_type, status, attempts, finished_at)"
            " VALUES ('recent', 'succeeded', 1, now())"
        )
        # Which transaction deleted each job: a trigger of this test's own database.
        c.execute("CREATE TABLE deleted_by (xid bigint, finished_at timestamptz)")
        c.execute(
            """CREATE FUNCTION note_delete() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN
                   INSERT INTO deleted_by VALUES (txid_current(), OLD.finished_at);
                   RETURN OLD;
               END $$"""
        )
        c.execute(
            "CREATE TRIGGER note_delete AFTER DELETE ON jobq_jobs_history"
            " FOR EACH ROW EXECUTE FUNCTION note_delete()"
        )
        with Queue(dsn) as q:
            assert q.prune(batch_size=1000) == 2500
            assert q.prune(batch_size=1000) == 0
            with pytest.raises(ValueError, match="batch_size"):
                q.prune(batch_size=0)
            assert q.prune(older_than=0, batch_size=None) == 1
        batches = c.execute(
            "SELECT count(*), min(finished_at), max(finished_at) FROM deleted_by"
            " GROUP BY xid ORDER BY min(xid)"
        ).fetchall()
        assert [b[0] for b in batches] == [1000, 1000, 500, 1], "one transaction per batch"
        assert batches[0][2] < batches[1][1] and batches[1][2] < batches[2][1], "oldest first"
        assert c.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (0,)


# Statistics of a table in one shape (2,000 rows, analyzed), for the generic plans that jobq's
# functions keep for a session: each shape once made some statement read the whole table.
SHAPES: dict[str, str] = {
    "empty": "",
    "pending": "INSERT INTO jobq_jobs (job_type) SELECT 't' FROM generate_series(1, 2000)",
    "processing": """
        INSERT INTO jobq_jobs (job_type, status, attempts, locked_at, locked_by, claimed_at,
                               locked_until)
        SELECT 't', 'processing', 1, now(), 'x', now(), now() + interval '5 minutes'
        FROM generate_series(1, 2000)""",
    "pending limited": """
        INSERT INTO jobq_jobs (job_type, limit_group, limit_key)
        SELECT 't', 'g', 'k' || g % 3 FROM generate_series(1, 2000) AS g""",
    "processing limited": """
        INSERT INTO jobq_jobs (job_type, limit_group, limit_key, status, attempts, locked_at,
                               locked_by, claimed_at, locked_until)
        SELECT 't', 'g', 'k' || g % 3, 'processing', 1, now(), 'x', now(),
               now() + interval '5 minutes'
        FROM generate_series(1, 2000) AS g""",
    "scheduled": """
        INSERT INTO jobq_jobs (job_type, available_at, scheduled)
        SELECT 't', now() + interval '1 day', true FROM generate_series(1, 2000)""",
    "dead letters": """
        INSERT INTO jobq_jobs (job_type, status, attempts, finished_at)
        SELECT 't', 'dead_letter', 5, now() FROM generate_series(1, 2000)""",
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_no_call_of_a_worker_producer_or_dashboard_reads_the_whole_table_whatever_the_stats(
    quiet: psycopg.Connection[Any], dsn: str, shape: str
) -> None:
    """Statistics gathered while the table had one shape; then those rows finished, 30,000
    finished jobs more, and live work of every kind (pending, limited, due scheduled, stale
    claims). In a new session (plans made under those statistics, generic ones kept), no
    statement of an enqueue, a claim (each filter, with a takeover of stale claims), what a
    worker sends about its jobs, the dashboard's summaries of queues and limits, or what
    monitoring polls (jobq_metrics, jobq_health, and jobq_unserved_job_types, which a worker
    calls as it starts) may read jobq_jobs sequentially: its cost would grow with the finished
    jobs. Found so: the probe for limited jobs (pending limited), the takeover's join
    (processing), jobq_release_orphans (processing), jobq_queue_summary (pending, pending
    limited, dead letters), jobq_limit_usage (pending limited), jobq_metrics (pending
    limited), jobq_health (every shape: no index holds all pending jobs; dead letters),
    jobq_unserved_job_types (every shape). jobq_stats is left out: it counts every row, and
    says so."""
    c = quiet
    c.execute("SELECT jobq_set_limit('g', max_running => 1000)")
    if SHAPES[shape]:
        c.execute(SHAPES[shape])
    c.execute("VACUUM ANALYZE jobq_jobs")
    c.execute(
        "UPDATE jobq_jobs SET status = 'succeeded', finished_at = now(), locked_at = NULL,"
        " locked_by = NULL, scheduled = false"
    )
    insert_jobs(
        c,
        "INSERT INTO jobq_jobs (job_type, status, attempts, finished_at)"
        " SELECT 't', 'succeeded', 1, now() FROM generate_series(1, 30000)",
    )
    enqueue(
        c,
        [{"job_type": "t"}] * 50
        + [{"job_type": "t", "limit_group": "g", "limit_key": "k1"}] * 50
        + [{"job_type": "t", "run_at": "2000-01-01T00:00:00Z"}] * 5,
    )
    c.execute(
        "UPDATE jobq_jobs SET scheduled = true, available_at = now() - interval '1 minute'"
        " WHERE id IN (SELECT id FROM jobq_all_jobs WHERE status = 'pending' LIMIT 5)"
    )
    with psycopg.connect(dsn, autocommit=True) as s:
        plans = log_plans(s)
        stale = [r[0] for r in s.execute("SELECT id FROM jobq_dequeue('s', batch_size => 4)")]
        s.execute(
            "UPDATE jobq_jobs SET locked_at = locked_at - interval '1 hour',"
            " locked_until = locked_until - interval '1 hour' WHERE id = ANY(%s)",
            (stale,),
        )
        claimed = 0
        for query, params in (
            ("SELECT jobq_enqueue('t', '{}')", None),
            ("SELECT jobq_enqueue('t', '{}', idempotency_key => gen_random_uuid()::text)", None),
            ("SELECT count(*) FROM jobq_enqueue_many(%s)", (Jsonb([{"job_type": "t"}] * 10),)),
            ("SELECT count(*) FROM jobq_enqueue_arrays(array_fill('t'::text, ARRAY[10]))", None),
            ("SELECT count(*) FROM jobq_dequeue('w', batch_size => 20, lock_timeout => '1 min')",
             None),
            ("SELECT count(*) FROM jobq_dequeue('w', '{t}', batch_size => 20)", None),
            ("SELECT count(*) FROM jobq_dequeue('w', batch_size => 20, queues => '{default}')",
             None),
            ("SELECT count(*) FROM jobq_dequeue('w', '{t}', batch_size => 20,"
             " queues => '{default}')", None),
        ):
            row = s.execute(query.encode(), params).fetchone()
            if "jobq_dequeue" in query:
                assert row is not None
                claimed += row[0]
        assert claimed == 80
        errors = s.execute(
            "SELECT errors -> -1 ->> 'kind' FROM jobq_all_jobs WHERE id = ANY(%s)", (stale,)
        ).fetchall()
        assert errors == [("lock_expired",)] * 4, "the stale claims were taken back"
        held = [
            r[0]
            for r in s.execute(
                "SELECT id FROM jobq_all_jobs WHERE status = 'processing' AND locked_by = 'w'"
                " ORDER BY id"
            )
        ]
        assert len(held) == 80
        for query, params in (
            ("SELECT jobq_heartbeat('w', %s)", (held[:5],)),
            ("SELECT jobq_complete(%s, 'w')", (held[0],)),
            ("SELECT jobq_complete_many(%s, 'w')", (held[1:6],)),
            ("SELECT jobq_fail(%s, 'w', 'x')", (held[6],)),
            ("SELECT count(*) FROM jobq_fail_many(%s, 'w', %s)", (held[7:10], ["x"] * 3)),
            ("SELECT jobq_release(%s, 'w')", (held[10:12],)),
            ("SELECT jobq_release_orphans('w', %s)", (held[12:70],)),
            ("SELECT count(*) FROM jobq_cancel(%s)", (held[70:72],)),
            ("SELECT count(*) FROM jobq_job_status(%s)", (held[72:74],)),
            ("SELECT count(*) FROM jobq_await(%s, timeout => '0')", (held[72:74],)),
            ("SELECT count(*) FROM jobq_queue_summary()", None),
            ("SELECT count(*) FROM jobq_limit_usage()", None),
            ("SELECT count(*) FROM jobq_metrics()", None),
            ("SELECT count(*) FROM jobq_health()", None),
            ("SELECT count(*) FROM jobq_unserved_job_types()", None),
        ):
            s.execute(query.encode(), params)
        released = s.execute(
            "SELECT count(*) FROM jobq_all_jobs WHERE id = ANY(%s) AND status = 'pending'",
            (held[70:],),
        ).fetchone()
        assert released == (8,), "jobq_release_orphans gave back the jobs not named"
    scans = [p for p in plans if "Seq Scan on jobq_jobs" in p]
    assert len(plans) > 50, plans
    assert scans == [], scans[0]
