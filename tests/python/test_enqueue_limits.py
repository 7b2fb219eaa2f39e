"""Queue.enqueue_many sends jobs with a limit_group and limit_key as arrays (jobq_enqueue_arrays),
as it sends every other batch whose values it can type, and the rows are those that
jobq_enqueue_many makes of the same jobs."""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg
import psycopg.types.json
import pytest

from pgq_client import InvalidArgument, Queue

Conn = psycopg.Connection[Any]

LIMITED: list[dict[str, Any]] = [
    {"job_type": "t", "limit_group": "cust", "limit_key": "acme", "payload": {"n": 1}},
    {"job_type": "t", "limit_group": "cust", "payload": {"n": 2}},
    {"job_type": "t", "payload": {"n": 3}},
    {"job_type": "t", "limit_group": "api", "limit_key": "k", "idempotency_key": "x"},
    {"job_type": "t", "limit_group": "other", "idempotency_key": "x"},
]
ROW = "job_type, payload, idempotency_key, limit_group, limit_key"


def _rows(conn: Conn, ids: list[uuid.UUID]) -> list[tuple[Any, ...]]:
    return [
        tuple(conn.execute(f"SELECT {ROW} FROM jobq_all_jobs WHERE id = %s", (i,)).fetchone() or ())
        for i in ids
    ]


def _calls(conn: Conn) -> dict[str, int]:
    """The jobq functions this transaction has called, with how often (track_functions)."""
    return {
        str(name): int(calls)
        for name, calls in conn.execute(
            "SELECT funcname, calls FROM pg_stat_xact_user_functions "
            "WHERE funcname IN ('jobq_enqueue_arrays', 'jobq_enqueue_many')"
        )
    }


def test_limited_jobs_go_as_arrays_and_make_jobq_enqueue_many_rows(dsn: str, conn: Conn) -> None:
    """A batch with limits takes the array path (no JSON fallback), once, and stores each
    job's limit as jobq_enqueue_many stores it, keyed jobs included (a repeated key keeps the
    first job's limit)."""
    with Queue(dsn) as q, conn.transaction():
        conn.execute("SET LOCAL track_functions = 'all'")
        ids = q.enqueue_many(LIMITED, conn=conn)
        assert _calls(conn) == {"jobq_enqueue_arrays": 1}
        assert ids[4] == ids[3] and len(set(ids)) == 4
        mine = _rows(conn, ids)
        assert [r[3:] for r in mine] == [
            ("cust", "acme"), ("cust", None), (None, None), ("api", "k"), ("api", "k"),
        ]
        conn.execute("DELETE FROM jobq_jobs")
        reference = [
            r[0] for r in conn.execute(
                "SELECT id FROM jobq_enqueue_many(%s::jsonb) ORDER BY ord",
                (psycopg.types.json.Jsonb(LIMITED),),
            )
        ]
        assert mine == _rows(conn, reference)


def test_a_bad_limit_on_the_array_path_names_the_job(dsn: str, conn: Conn) -> None:
    """The server's check of the limit arrays names the job and the argument, the client's
    check of the text names the job by its index, and a refused batch adds nothing."""
    jobs: list[dict[str, Any]] = [
        {"job_type": "t", "limit_group": "g"},
        {"job_type": "t", "limit_key": "k"},
    ]
    with Queue(dsn) as q:
        with pytest.raises(InvalidArgument, match=re.escape(
            "element 2 (counting from 1): limit_key needs a limit_group"
        )):
            q.enqueue_many(jobs)
        with pytest.raises(ValueError, match=re.escape("jobs[1] contains a NUL")):
            q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "limit_group": "a\x00b"}])
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (0,)
