"""``jobq workers``: the workers page's table on the command line."""

from __future__ import annotations

import json

import psycopg
from tests.helpers import jobq

from pgq_client import Queue


def test_jobq_workers_lists_each_worker_its_jobs_and_stale_claims(dsn: str) -> None:
    assert jobq("--dsn", dsn, "workers").stdout.strip() == "no workers"
    with Queue(dsn) as q:
        q.enqueue("a")
        lost = q.enqueue("b", queue="q2")
        assert len(q.dequeue("w1", job_types=["a"])) == 1
        assert len(q.dequeue("w2", queues=["q2"])) == 1
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("UPDATE jobq_jobs SET locked_until = now() - interval '1 minute' WHERE id = %s",
                  (lost,))
    listed = jobq("--dsn", dsn, "workers", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["worker_id"]: r for r in json.loads(listed.stdout)}
    assert (rows["w1"]["job_types"], rows["w1"]["jobs_held"], rows["w1"]["stale_jobs"]) == (
        ["a"], 1, 0)
    assert (rows["w2"]["queues"], rows["w2"]["stale_jobs"], rows["w2"]["held_job_ids"]) == (
        ["q2"], 1, [str(lost)])
    text = jobq("--dsn", dsn, "workers").stdout.splitlines()
    assert text[0].split() == ["worker_id", "job_types", "queues", "last_claim_at", "jobs_held",
                               "stale_jobs", "last_heartbeat_at", "lock_expires_at"]
    assert text[2].split()[:3] == ["w1", "a", "all"] and text[3].split()[:3] == ["w2", "all", "q2"]
