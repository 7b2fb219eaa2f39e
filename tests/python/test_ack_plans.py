"""The Worker's acknowledgements (jobq_complete_many, jobq_complete, jobq_heartbeat) read the
primary key for the given ids whatever the statistics say. Since finished jobs leave
jobq_jobs, a drained queue's statistics say the table is empty; the generic plans that a
session made on them were sequential scans (a hash join for jobq_complete_many), so that once
a backlog arrived every completion and heartbeat read the whole table: beside a held
snapshot's hundreds of MB, the acknowledgements of the pressure run took seconds each. With
sequential scans off, the batch completion's plan became a nested loop that read every element
for each row (K x K), until its join was hashed."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from tests.plans import log_plans


def test_acknowledgements_read_the_primary_key_when_statistics_come_from_an_empty_queue(
    dsn: str,
) -> None:
    """Statistics of an empty jobq_jobs, the session's generic plans made on them, then 20,000
    pending jobs: a heartbeat and the completions of 3,000 claimed jobs make no sequential scan
    of jobq_jobs, and the batch completion joins its elements to the rows in one pass."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("ALTER TABLE jobq_jobs SET (autovacuum_enabled = off)")
        c.execute("VACUUM ANALYZE jobq_jobs")  # the statistics of a drained queue
        c.execute("SET plan_cache_mode = force_generic_plan")  # planned on those, and kept
        nobody: list[Any] = ["00000000-0000-0000-0000-000000000001"]
        for _ in range(2):
            c.execute("SELECT jobq_complete_many(%s::uuid[], 'w')", (nobody,))
            c.execute("SELECT jobq_complete(%s::uuid, 'w')", (nobody[0],))
            c.execute("SELECT jobq_heartbeat('w', %s::uuid[])", (nobody,))
        jobs = Jsonb([{"job_type": "t"} for _ in range(20000)])
        c.execute("SELECT count(*) FROM jobq_enqueue_many(%s)", (jobs,))
        claimed = [r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', ARRAY['t'], 3000)")]
        plans = log_plans(c, "auto_explain.log_analyze = on")
        with c.transaction():
            assert c.execute("SELECT jobq_heartbeat('w', %s)", (claimed,)).fetchone() == (3000,)
            assert c.execute("SELECT jobq_complete_many(%s, 'w')", (claimed[1:],)).fetchone() \
                == (2999,)
            assert c.execute("SELECT jobq_complete(%s, 'w')", (claimed[0],)).fetchone() == (True,)
            read = c.execute(
                "SELECT seq_scan, seq_tup_read FROM pg_stat_xact_user_tables"
                " WHERE relid = 'jobq_jobs'::regclass"
            ).fetchone()
        assert read == (0, 0), [p for p in plans if "Seq Scan on jobq_jobs" in p][:1]
        # and no element is read once per row: a nested loop over the 2,999 elements made
        # 9 million comparisons (15 s for 5,000 jobs)
        rescanned = [line for p in plans for line in p.splitlines()
                     if "Function Scan on d " in line and "loops=2999" in line]
        assert not rescanned, rescanned
