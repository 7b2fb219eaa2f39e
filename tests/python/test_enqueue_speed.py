"""The producer's fast paths: a single enqueue that sends only the arguments it needs, the
array-per-column batch (jobq_enqueue_arrays), and the bulk load (Queue.enqueue_iter,
`jobq enqueue --from`), each against a real PostgreSQL."""

from __future__ import annotations

import inspect
import itertools
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any

import psycopg
import psycopg.types.json
import pytest

from pgq_client import AsyncQueue, BulkSummary, InvalidArgument, Queue

pytestmark = pytest.mark.slow  # bulk enqueues timed at volume

Conn = psycopg.Connection[Any]

RUN_AT = datetime(2031, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
# Each optional argument of Queue.enqueue with a value that differs from jobq_enqueue's default.
NON_DEFAULTS: dict[str, Any] = {
    "idempotency_key": "k",
    "max_attempts": 2,
    "run_at": RUN_AT,
    "priority": -7,
    "queue": "q2",
}
COLUMNS = "job_type, payload, idempotency_key, max_attempts, available_at, priority, queue"


def _columns(conn: Conn, job_id: uuid.UUID) -> tuple[Any, ...]:
    row = conn.execute(f"SELECT {COLUMNS} FROM jobq_all_jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    return tuple(row)


def _expected(args: dict[str, Any], now: datetime) -> tuple[Any, ...]:
    return (
        "t",
        {"i": 1},
        args.get("idempotency_key"),
        args.get("max_attempts", 5),
        args.get("run_at", now),
        args.get("priority", 0),
        args.get("queue", "default"),
    )


def _subsets() -> list[tuple[str, ...]]:
    names = list(NON_DEFAULTS)
    return [c for r in range(len(names) + 1) for c in itertools.combinations(names, r)]


def test_every_combination_of_optional_arguments_is_stored_as_given(
    dsn: str, conn: Conn
) -> None:
    with Queue(dsn) as q:
        for names in _subsets():
            args = {name: NON_DEFAULTS[name] for name in names}
            if "idempotency_key" in args:
                args["idempotency_key"] = "k:" + ",".join(names)
            with conn.transaction():
                job_id = q.enqueue("t", {"i": 1}, conn=conn, **args)
                now = conn.execute("SELECT now()").fetchone()
                assert now is not None
                assert _columns(conn, job_id) == _expected(args, now[0]), names


def test_arguments_equal_to_the_defaults_give_the_same_job_as_leaving_them_out(
    dsn: str, conn: Conn
) -> None:
    with Queue(dsn) as q, conn.transaction():
        explicit = q.enqueue("t", {"i": 1}, max_attempts=5, priority=0, queue="default",
                             idempotency_key=None, run_at=None, conn=conn)
        implicit = q.enqueue("t", {"i": 1}, conn=conn)
        assert _columns(conn, explicit) == _columns(conn, implicit)


def test_values_that_only_compare_equal_to_a_default_are_still_checked_by_the_server(
    dsn: str, conn: Conn
) -> None:
    # True == 1 and 5.0 == 5 in Python: they are sent, not mistaken for the defaults.
    with Queue(dsn) as q:
        job_id = q.enqueue("t", {"i": 1}, priority=True, max_attempts=5.0)  # type: ignore[arg-type]
        assert _columns(conn, job_id)[3:6:2] == (5, 1)


async def test_async_enqueue_sends_the_same_combinations(dsn: str, conn: Conn) -> None:
    async with AsyncQueue(dsn) as q:
        for names in _subsets():
            args = {name: NON_DEFAULTS[name] for name in names}
            if "idempotency_key" in args:
                args["idempotency_key"] = "ak:" + ",".join(names)
            job_id = await q.enqueue("t", {"i": 1}, **args)
            got = _columns(conn, job_id)
            created = conn.execute(
                "SELECT created_at FROM jobq_all_jobs WHERE id = %s", (job_id,)
            ).fetchone()
            assert created is not None
            assert got == _expected(args, created[0]), names


def test_a_schema_with_a_quote_in_its_name_is_quoted_in_every_statement(
    empty_dsn: str,
) -> None:
    from pgq_client.migrate import migrate

    schema = 'ten"ant'
    migrate(empty_dsn, schema=schema)
    with Queue(empty_dsn, schema=schema) as q:
        job_id = q.enqueue("t", {"i": 1}, priority=2)
        assert list(q.status([job_id])) == [job_id]
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        n = c.execute('SELECT count(*) FROM "ten""ant".jobq_jobs').fetchone()
        assert n == (1,)



# -- batches: Queue.enqueue_many on jobq_enqueue_arrays ------------------------------------------

MIXED: list[dict[str, Any]] = [
    {"job_type": "a"},
    {"job_type": "b", "payload": {"n": 2}, "idempotency_key": "b:2", "max_attempts": 3,
     "run_at": RUN_AT, "priority": 9, "queue": "q"},
    {"job_type": "c", "payload": {"n": [3]}, "idempotency_key": None, "run_at": None},
    {"job_type": "b", "idempotency_key": "b:2", "payload": {"ignored": True}},
]
ROW = "job_type, queue, payload, idempotency_key, max_attempts, available_at, priority, scheduled"


def _rows(conn: Conn, ids: list[uuid.UUID]) -> list[tuple[Any, ...]]:
    return [
        tuple(conn.execute(f"SELECT {ROW} FROM jobq_all_jobs WHERE id = %s", (i,)).fetchone() or ())
        for i in ids
    ]


def test_enqueue_many_makes_the_rows_jobq_enqueue_many_makes(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q, conn.transaction():
        ids = q.enqueue_many(MIXED, conn=conn)
        assert ids[3] == ids[1] and len(set(ids)) == 3
        mine = _rows(conn, ids)
        conn.execute("DELETE FROM jobq_jobs")
        as_json = [{**j, "run_at": j["run_at"].isoformat()} if j.get("run_at") else j
                   for j in MIXED]
        reference = [
            r[0] for r in conn.execute(
                "SELECT id FROM jobq_enqueue_many(%s::jsonb) ORDER BY ord",
                (psycopg.types.json.Jsonb(as_json),),
            )
        ]
        assert mine == _rows(conn, reference)


@pytest.mark.parametrize(
    "jobs",
    [
        [{"job_type": "one", "queue": "q1", "payload": {"i": i}} for i in range(5)],
        [{"job_type": "one", "queue": "q1"}, {"job_type": "two", "queue": "q1"}],
        [{"job_type": "one", "queue": "q1"}, {"job_type": "one", "queue": "q2"}],
        [{"job_type": "one", "queue": "q1"}, {"job_type": "one"}],
        [{"job_type": "one"}],
    ],
    ids=["one type one queue", "two types", "two queues", "a queue and the default", "single"],
)
def test_a_column_every_job_shares_is_sent_once_and_stored_for_each(
    dsn: str, conn: Conn, jobs: list[dict[str, Any]]
) -> None:
    with Queue(dsn) as q, conn.transaction():
        ids = q.enqueue_many(jobs, conn=conn)
        mine = _rows(conn, ids)
        conn.execute("DELETE FROM jobq_jobs")
        reference = [
            r[0] for r in conn.execute(
                "SELECT id FROM jobq_enqueue_many(%s::jsonb) ORDER BY ord",
                (psycopg.types.json.Jsonb(jobs),),
            )
        ]
        assert mine == _rows(conn, reference)


def test_a_column_every_job_shares_is_checked_as_a_list_is(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        with pytest.raises(ValueError, match=re.escape("jobs[0] contains a NUL")):
            q.enqueue_many([{"job_type": "t\x00"}] * 3)
        with pytest.raises(ValueError, match=re.escape("jobs[0] contains a NUL")):
            q.enqueue_many([{"job_type": "t", "queue": "q\x00"}] * 3)
        with pytest.raises(InvalidArgument, match=r"element 1 .*queue must be a non-blank"):
            q.enqueue_many([{"job_type": "t", "queue": None}] * 3)
        with pytest.raises(InvalidArgument, match=r"element 1 .*job_type must be a non-blank"):
            q.enqueue_many([{"job_type": " "}] * 3)
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (0,)


def test_enqueue_many_of_odd_values_still_names_the_job_and_the_key(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        with pytest.raises(InvalidArgument, match=r"element 2 .*priority must be an integer"):
            q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "priority": "high"}])
        with pytest.raises(InvalidArgument, match=r"element 2 .*priority must be an integer"):
            q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "priority": 2**40}])
        with pytest.raises(InvalidArgument, match=r"element 1 .*job_type must be a non-blank"):
            q.enqueue_many([{"job_type": 7}])
        with pytest.raises(InvalidArgument, match=r"element 2 .*payload must be a JSON object"):
            q.enqueue_many([{"job_type": "t", "payload": {}}, {"job_type": "t", "payload": None}])
        with pytest.raises(InvalidArgument, match=r"element 2 .*job_type must be a non-blank"):
            q.enqueue_many([{"job_type": "t"}, {"job_type": "\u200b"}])
        with pytest.raises(ValueError, match=re.escape("jobs[1] contains a NUL")):
            q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "queue": "q\x00"}])
        with pytest.raises(ValueError, match=re.escape("jobs[0] contains a lone surrogate")):
            q.enqueue_many([{"job_type": "t", "idempotency_key": "k\ud800"}])
        with pytest.raises(ValueError, match=re.escape("jobs[1].run_at must be timezone-aware")):
            q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "run_at": datetime(2030, 1, 1)}])
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (0,)


def test_arrays_racing_on_the_same_keys_make_one_row_per_key(dsn: str) -> None:
    sessions, keys = 8, [f"race:{i}" for i in range(200)]
    barrier = threading.Barrier(sessions)
    results: list[list[uuid.UUID]] = []
    errors: list[BaseException] = []

    def enqueue() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                barrier.wait(timeout=30)
                rows = c.execute(
                    "SELECT id FROM jobq_enqueue_arrays(job_types => %s::text[], "
                    "idempotency_keys => %s::text[]) ORDER BY ord",
                    (["t"] * len(keys), keys),
                ).fetchall()
                results.append([r[0] for r in rows])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=enqueue) for _ in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert len(results) == sessions and all(r == results[0] for r in results)
    with psycopg.connect(dsn, autocommit=True) as c:
        n = c.execute("SELECT count(*), count(DISTINCT idempotency_key)"
                      " FROM jobq_all_jobs").fetchone()
        assert n == (len(keys), len(keys))
        stored = dict(c.execute("SELECT idempotency_key, id FROM jobq_all_jobs").fetchall())
    assert results[0] == [stored[k] for k in keys]


def test_arrays_wake_and_count_the_queues_of_what_they_insert(dsn: str, conn: Conn) -> None:
    """jobq_enqueue_arrays without keys takes the queues to wake and the counts for
    jobq_metrics() from its arguments: a job due later wakes nobody but is counted, a NULL
    run_at is now, NULL arrays are all 'default' and due now."""
    conn.execute("SELECT jobq_configure(metrics => true)")
    listener = psycopg.connect(dsn, autocommit=True)
    try:
        listener.execute("LISTEN jobq")
        conn.execute(
            "SELECT count(*) FROM jobq_enqueue_arrays("
            " job_types => %s::text[], queues => %s::text[], run_ats => %s::timestamptz[])",
            (["a", "a", "b", "a", "a"], ["q1", "default", "q2", "q3", "q1"],
             [None, datetime(2001, 1, 1, tzinfo=timezone.utc), RUN_AT, None, RUN_AT]),
        )
        got = sorted(n.payload for n in listener.notifies(timeout=1, stop_after=3))
        assert got == ["default", "q1", "q3"], "q2 has only a job due later"
        assert list(listener.notifies(timeout=0.2)) == []
        conn.execute("SELECT count(*) FROM jobq_enqueue_arrays(job_types => %s::text[])",
                     (["c", "c"],))
        assert [n.payload for n in listener.notifies(timeout=1, stop_after=1)] == ["default"]
    finally:
        listener.close()
    rows = conn.execute(
        "SELECT labels ->> 'queue', labels ->> 'job_type', value FROM jobq_metrics()"
        " WHERE metric = 'jobq_enqueued_total' AND value > 0 ORDER BY 1, 2"
    ).fetchall()
    assert rows == [("default", "a", 1), ("default", "c", 2), ("q1", "a", 2), ("q2", "b", 1),
                    ("q3", "a", 1)]
    stored = conn.execute(
        "SELECT queue, job_type, scheduled, count(*) FROM jobq_all_jobs"
        " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    ).fetchall()
    assert stored == [("default", "a", False, 1), ("default", "c", False, 2),
                      ("q1", "a", False, 1), ("q1", "a", True, 1), ("q2", "b", True, 1),
                      ("q3", "a", False, 1)]


def test_one_batch_wakes_each_queue_once_at_commit(dsn: str, conn: Conn) -> None:
    conn.execute("LISTEN jobq")
    with Queue(dsn) as q:
        q.enqueue_many([{"job_type": "t", "queue": f"q{i % 3}"} for i in range(300)]
                       + [{"job_type": "t", "queue": "later", "run_at": RUN_AT}])
    got = sorted(n.payload for n in conn.notifies(timeout=1, stop_after=3))
    assert got == ["q0", "q1", "q2"]


# -- bulk load: Queue.enqueue_iter -----------------------------------------------------------------


def _jobs(n: int, start: int = 0) -> Iterator[dict[str, Any]]:
    for i in range(start, start + n):
        yield {"job_type": "bulk", "payload": {"n": i}}


def test_enqueue_iter_loads_a_generator_in_batches(dsn: str, conn: Conn) -> None:
    seen: list[int] = []
    with Queue(dsn) as q:
        summary = q.enqueue_iter(_jobs(12_345), batch_size=1000, progress=seen.append)
    assert summary == BulkSummary(jobs=12_345, batches=13, refused=())
    assert seen == [*range(1000, 12_001, 1000), 12_345]
    got = conn.execute(
        "SELECT count(*), count(DISTINCT payload ->> 'n'), min((payload ->> 'n')::int), "
        "max((payload ->> 'n')::int) FROM jobq_all_jobs"
    ).fetchone()
    assert got == (12_345, 12_345, 0, 12_344)


def test_enqueue_iter_honours_idempotency_keys_across_batches(dsn: str, conn: Conn) -> None:
    jobs = [{"job_type": "k", "idempotency_key": f"k{i % 700}", "payload": {"n": i}}
            for i in range(2000)]
    with Queue(dsn) as q:
        summary = q.enqueue_iter(jobs, batch_size=300)
        assert summary.jobs == 2000 and summary.batches == 7
        assert summary.existing == 1300, "each key added once, by its first job"
        again = q.enqueue_iter(jobs, batch_size=1000)
        assert (again.jobs, again.existing) == (2000, 2000)
        graph = [{"job_type": "k", "idempotency_key": "k1", "after": [2]}, {"job_type": "g"}]
        assert q.enqueue_iter(graph).existing == 1, "the JSON path counts the same"
        with conn.transaction():
            in_caller = q.enqueue_iter([{"job_type": "k", "idempotency_key": "n"}] * 3, conn=conn)
        assert (in_caller.jobs, in_caller.existing) == (3, 2)
    rows = conn.execute("SELECT count(*), min((payload ->> 'n')::int), max((payload ->> 'n')::int) "
                        "FROM jobq_all_jobs").fetchone()
    assert rows == (702, 0, 699), "the first job of each key is the one stored"


def test_a_refused_batch_raises_naming_the_job_and_keeps_the_batches_before(
    dsn: str, conn: Conn
) -> None:
    jobs = [*_jobs(250), {"job_type": " "}, *_jobs(100, 250)]
    with Queue(dsn) as q, pytest.raises(InvalidArgument) as refused:
        q.enqueue_iter(jobs, batch_size=100)
    message = str(refused.value)
    assert "job_type must be a non-blank string" in message
    assert "the batch of jobs 200 to 299 (counting from 0) was refused at job 250" in message
    assert "the 200 jobs before it are enqueued" in message
    assert refused.value.sqlstate == "22023"
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (200,)


def test_enqueue_iter_reads_at_most_one_batch_ahead_and_raises_a_source_error_in_turn(
    dsn: str, conn: Conn
) -> None:
    """The next batch is read while the server inserts the current one: never more than one
    batch ahead, and an error of the source itself comes after the batches before it."""
    taken: list[int] = []

    def source() -> Iterator[dict[str, Any]]:
        for i in range(1000):
            taken.append(i)
            if i == 350:
                raise OSError("the file went away")
            yield {"job_type": "t" if i != 120 else " ", "payload": {"n": i}}

    with Queue(dsn) as q, pytest.raises(InvalidArgument, match="refused at job 120"):
        q.enqueue_iter(source(), batch_size=100)
    assert len(taken) <= 300, "at most the refused batch and the one after it were read"
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (100,)
    taken.clear()
    with Queue(dsn) as q, pytest.raises(OSError, match="went away"):
        q.enqueue_iter(source(), batch_size=100, skip_refused=True)
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (100 + 200,), (
        "batches 0 and 2 enqueued (1 refused), then the source failed while batch 3 was read"
    )


def test_enqueue_iter_stops_reading_ahead_before_it_raises(dsn: str, conn: Conn) -> None:
    """When a batch is refused, the batch after it (being read in the read-ahead thread, slowly
    here) is read to its end before the error reaches the caller: the source is never still
    being read in another thread once enqueue_iter has returned or raised."""
    taken: list[int] = []

    def source() -> Iterator[dict[str, Any]]:
        for i in range(1000):
            taken.append(i)
            if i == 250:
                time.sleep(0.5)  # the read ahead is still here when batch 1 is refused
            yield {"job_type": "t" if i != 120 else " ", "payload": {"n": i}}

    jobs = source()
    with Queue(dsn) as q, pytest.raises(InvalidArgument, match="refused at job 120"):
        q.enqueue_iter(jobs, batch_size=100)
    assert inspect.getgeneratorstate(jobs) == inspect.GEN_SUSPENDED, "no thread reads it now"
    assert taken[-1] == 299, "the batch read ahead was read whole, and nothing after it"
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (100,)


def test_skip_refused_goes_on_and_reports_each_refused_batch(dsn: str, conn: Conn) -> None:
    jobs = [*_jobs(150), {"job_type": "t", "payload": [1]}, *_jobs(120, 150),
            {"job_type": "t", "run_at": "tomorrow"}]
    with Queue(dsn) as q:
        summary = q.enqueue_iter(jobs, batch_size=100, skip_refused=True)
    assert (summary.jobs, summary.batches) == (100, 1)
    assert [(r.first, r.count, r.job) for r in summary.refused] == [(100, 100, 150), (200, 72, 271)]
    assert isinstance(summary.refused[0].error, InvalidArgument)
    assert isinstance(summary.refused[1].error, TypeError)
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (100,)


def test_enqueue_iter_refuses_bad_arguments_before_sending_anything(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q:
        for size in (0, 100_001, 10.0):
            with pytest.raises(ValueError, match="batch_size"):
                q.enqueue_iter(_jobs(3), batch_size=size)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="iterable of job dicts"):
            q.enqueue_iter({"job_type": "t"})
        with pytest.raises(ValueError, match="skip_refused"), conn.transaction():
            q.enqueue_iter(_jobs(3), skip_refused=True, conn=conn)
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (0,)


def test_enqueue_iter_in_the_callers_transaction_rolls_back_with_it(dsn: str, conn: Conn) -> None:
    with Queue(dsn) as q, pytest.raises(RuntimeError), conn.transaction():
        assert q.enqueue_iter(_jobs(500), batch_size=200, conn=conn).jobs == 500
        raise RuntimeError("roll back")
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (0,)


async def test_async_enqueue_iter_is_the_same_operation(dsn: str, conn: Conn) -> None:
    seen: list[int] = []
    async with AsyncQueue(dsn) as q:
        summary = await q.enqueue_iter(_jobs(2500), batch_size=1000, progress=seen.append)
        assert summary == BulkSummary(jobs=2500, batches=3)
        assert seen == [1000, 2000, 2500]
        ids = await q.enqueue_many(MIXED)
        assert ids[3] == ids[1]
        with pytest.raises(InvalidArgument, match="refused at job 1"):
            await q.enqueue_iter([{"job_type": "t"}, {"job_type": ""}])
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (2503,)


# -- bulk load from the command line: jobq enqueue --from ----------------------------------------


def _jobq(*args: str, dsn: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("JOBQ_DSN", "DATABASE_URL")}
    environ["JOBQ_DSN"] = dsn
    return subprocess.run(
        [sys.executable, "-m", "pgq_client", *args],
        input=stdin, capture_output=True, text=True, env=environ, timeout=300,
    )


NDJSON = "\n".join([
    '{"job_type": "a", "payload": {"n": 1}}',
    "",
    "not json",
    "[1]",
    '{"payload": {"n": 2}}',
    '{"job_type": "b", "idempotency_key": "k1", "priority": 3}',
    '{"job_type": "b", "idempotency_key": "k1"}',
    '{"job_type": "x", "payload": {"lost": true}}',
    '{"job_type": " "}',
    '{"job_type": "c", "run_at": "2031-01-02T03:04:05Z", "queue": "later"}',
    '{"job_type": "d", "run_at": "2031-01-02"}',
]) + "\n"


def test_enqueue_from_a_file_reports_bad_and_refused_lines_by_number(
    dsn: str, conn: Conn, tmp_path: Path
) -> None:
    path = tmp_path / "jobs.ndjson"
    path.write_text(NDJSON)
    result = _jobq("enqueue", "t", "--from", str(path), "--batch-size", "2", dsn=dsn)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    reported = [line for line in result.stderr.splitlines() if line.startswith("line ")]
    assert reported == [
        "line 3: not valid JSON: Expecting value: line 1 column 1 (char 0); skipped",
        "line 4: must be a JSON object, got an array; skipped",
        "line 9: jobq_enqueue_arrays: job_type must be a non-blank string; skipped",
        "line 11: run_at '2031-01-02' has no UTC offset; give one, e.g. 2031-01-02T00:00:00+00:00 "
        "or 2031-01-02T00:00:00Z; skipped",
    ]
    assert re.fullmatch(
        r"enqueued 6 jobs in 4 batches, [0-9.]+ s \([0-9,]+ jobs/s\): 5 added, 1 already there "
        r"\(.*\); 4 lines not enqueued\n",
        result.stdout,
    )
    rows = conn.execute(
        "SELECT job_type, payload, idempotency_key, priority, queue, available_at "
        "FROM jobq_all_jobs ORDER BY id"
    ).fetchall()
    assert [r[:5] for r in rows] == [
        ("a", {"n": 1}, None, 0, "default"),
        ("t", {"n": 2}, None, 0, "default"),  # TYPE is the default job type
        ("b", {}, "k1", 3, "default"),
        ("x", {"lost": True}, None, 0, "default"),  # the refused line 9 costs only itself
        ("c", {}, None, 0, "later"),
    ]
    assert rows[4][5] == datetime(2031, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_enqueue_from_stdin_with_json_output_and_options_as_defaults(
    dsn: str, conn: Conn
) -> None:
    lines = "".join(
        json.dumps({"job_type": "s", "payload": {"n": i}, "idempotency_key": f"s{i % 40}"}) + "\n"
        for i in range(100)
    )
    result = _jobq("enqueue", "--from", "-", "--queue", "bulk", "--priority", "2", "--json",
                   dsn=dsn, stdin=lines)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert {k: summary[k] for k in ("jobs", "batches", "bad_lines", "refused")} == {
        "jobs": 100, "batches": 1, "bad_lines": [], "refused": []
    }
    assert conn.execute(
        "SELECT count(*), min(queue), max(queue), min(priority), max(priority) FROM jobq_all_jobs"
    ).fetchone() == (40, "bulk", "bulk", 2, 2)
    assert "enqueueing" not in result.stderr and "\r" not in result.stderr, (
        "no progress bar when stderr is not a terminal"
    )


def test_enqueue_from_refuses_arguments_that_do_not_apply(dsn: str, conn: Conn) -> None:
    for args, fragment in (
        (("t", "{}", "--from", "-"), "PAYLOAD_JSON and --idempotency-key do not apply"),
        (("--from", "-", "--idempotency-key", "k"), "do not apply"),
        (("--from", "/nonexistent/jobs.ndjson"), "cannot read '/nonexistent/jobs.ndjson'"),
        ((), "Missing argument 'TYPE'"),
    ):
        result = _jobq("enqueue", *args, dsn=dsn, stdin="")
        assert result.returncode == 2, (args, result.stderr)
        assert fragment in result.stderr and "Traceback" not in result.stderr
    assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (0,)


def test_batches_and_bulk_loads_are_counted_in_the_metrics(dsn: str, conn: Conn) -> None:
    def enqueued() -> float:
        row = conn.execute(
            "SELECT coalesce(sum(value), 0) FROM jobq_metrics() "
            "WHERE metric = 'jobq_enqueued_total' AND labels ->> 'job_type' = 'm'"
        ).fetchone()
        assert row is not None
        return float(row[0])

    with Queue(dsn) as q:
        q.configure(metrics=True)  # off on a new installation
        q.enqueue_many([{"job_type": "m", "idempotency_key": f"m{i % 3}"} for i in range(5)])
        assert enqueued() == 3, "a repeated key is one job, counted once"
        q.enqueue_iter(({"job_type": "m"} for _ in range(250)), batch_size=100)
        assert enqueued() == 253
        with pytest.raises(RuntimeError), conn.transaction():
            q.enqueue_many([{"job_type": "m"}] * 4, conn=conn)
            raise RuntimeError("roll back")
        assert enqueued() == 253, "a rolled-back batch is not counted"


def test_an_element_that_is_not_a_mapping_is_named_and_nothing_of_its_batch_is_sent(
    dsn: str, conn: Conn
) -> None:
    """A list where a job dict belongs: TypeError naming its index, before anything of its
    batch is sent. A mapping other than a dict (a read-only view, say) is a job like a dict."""
    with Queue(dsn) as q:
        with pytest.raises(TypeError, match=r"element 1 is not a dict: \['t'\]"):
            q.enqueue_many([{"job_type": "t"}, ["t"]])  # type: ignore[list-item]
        assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (0,)
        jobs: list[Any] = [*_jobs(3), ("t",)]
        with pytest.raises(TypeError, match=r"jobs\[3\] is not a dict: \('t',\)"):
            q.enqueue_iter(jobs, batch_size=2)
        assert conn.execute("SELECT count(*) FROM jobq_all_jobs").fetchone() == (2,)
        view = MappingProxyType({"job_type": "v", "payload": {"n": 1}})
        [job_id] = q.enqueue_many([view])
    row = conn.execute("SELECT job_type, payload FROM jobq_all_jobs WHERE id = %s", (job_id,))
    assert row.fetchone() == ("v", {"n": 1})
