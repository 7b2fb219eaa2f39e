"""The scenarios of docs/performance.md, each beside its raw-SQL ceiling (1-6) or beside
scenario 3 of the same run (5, 7, 8, 9: scenario 3 among rows the claim cannot claim);
scenario 11, asyncio, beside the synchronous client; 12 and 13, limits, beside the unlimited
drain and the turnover of their keys in bare SQL; 15 and 16, the producer side: the client
beside the same call from bare psycopg, the array batch beside a multi-row INSERT, a bulk load
of a million jobs; 20, the SQL drain while another queue is paused, beside the same drain with
no pause.

Naming of measurement keys: ``s<scenario>.<raw|jobq>.<py|pgbench|queue|worker|chain>[.b<batch>]``.
"py" is the psycopg client running plain SQL (threads, one connection each); "pgbench" the
same statements as a pgbench custom script (no Python at all); "queue"/"worker" the
pgq_client classes; "chain" one session handing each finished job's slot to its key's next
job in bare SQL (scenarios 12 and 13).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .cluster import Cluster
from .harness import (
    STATIC_PAYLOAD,
    Measurement,
    Run,
    count,
    fill_jobq,
    fill_raw,
    median_run,
    payload,
    percentiles,
    pgbench,
    reset,
    run_threads,
    settle,
)

# -- the raw-SQL ceiling: the statements -----------------------------------------------------

RAW_INSERT = "INSERT INTO raw_jobs (payload) VALUES (%s)"
RAW_CLAIM = """
UPDATE raw_jobs SET status = 'processing'
WHERE id IN (
    SELECT id FROM raw_jobs WHERE status = 'pending' ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED
)
RETURNING id, payload
"""
RAW_DELETE = "DELETE FROM raw_jobs WHERE id = ANY (%s::bigint[])"
RAW_RETRY = (
    "UPDATE raw_jobs SET status = 'pending', payload = payload || '{\"failed\": true}' "
    "WHERE id = ANY (%s::bigint[])"
)
RAW_ENQUEUE_NOTIFY = """
WITH ins AS (INSERT INTO raw_jobs (payload) VALUES (%s) RETURNING id)
SELECT pg_notify('raw_jobs', 'default') FROM ins
"""

# -- jobq at the SQL level -----------------------------------------------------------------------

JOBQ_ENQUEUE = "SELECT jobq_enqueue(job_type => %s::text, payload => %s::jsonb)"
JOBQ_ENQUEUE_MANY = "SELECT ord, id FROM jobq_enqueue_many(jobs => %s::jsonb)"
# Scenario 15: single enqueues per turn (25-40 ms of them on the durable bench cluster).
SINGLE_TURN = 50
# The array batch as a hand-written client would send it: each column in binary (%b), the
# payloads as one JSON array split in the server (as pgq_client sends them).
JOBQ_ENQUEUE_ARRAYS = """
SELECT ord, id FROM jobq_enqueue_arrays(
    job_types => %b::text[],
    payloads => ARRAY(SELECT e.p FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS e (p, n)
                      ORDER BY e.n))
"""
JOBQ_DEQUEUE = (
    "SELECT id, payload, attempts FROM jobq_dequeue(worker_id => %s::text, batch_size => %s::int)"
)
JOBQ_COMPLETE_MANY = "SELECT jobq_complete_many(job_ids => %s::uuid[], worker_id => %s::text)"
JOBQ_FAIL_MANY = """
SELECT count(status) FROM jobq_fail_many(
    job_ids => %(ids)s::uuid[], worker_id => %(worker)s::text,
    errors => array_fill('boom'::text, ARRAY[cardinality(%(ids)s::uuid[])]),
    backoffs => array_fill(interval '0', ARRAY[cardinality(%(ids)s::uuid[])]))
"""

# -- pgbench scripts (-M prepared; :client_id is pgbench's own variable) ------------------------

PGB_RAW_INSERT = f"INSERT INTO raw_jobs (payload) VALUES ('{STATIC_PAYLOAD}');\n"
PGB_JOBQ_ENQUEUE = f"SELECT jobq_enqueue(job_type => 'noop', payload => '{STATIC_PAYLOAD}');\n"
PGB_RAW_CLAIM = (
    "WITH c AS (UPDATE raw_jobs SET status = 'processing' WHERE id IN ("
    "SELECT id FROM raw_jobs WHERE status = 'pending' ORDER BY id LIMIT {batch} "
    "FOR UPDATE SKIP LOCKED) RETURNING id, payload) "
)
PGB_RAW_DRAIN = (
    PGB_RAW_CLAIM + "SELECT coalesce(array_agg(id), '{{}}')::text AS ids FROM c \\gset\n"
    "DELETE FROM raw_jobs WHERE id = ANY (:ids::bigint[]);\n"
)
PGB_JOBQ_DRAIN = (
    "SELECT coalesce(array_agg(id), '{{}}')::text AS ids FROM jobq_dequeue("
    "worker_id => 'pgb' || :client_id::text, batch_size => {batch}) \\gset\n"
    "SELECT jobq_complete_many(job_ids => :ids::uuid[], worker_id => 'pgb' || :client_id::text);\n"
)
PGB_RAW_RETRY = (
    PGB_RAW_CLAIM + "SELECT "
    "coalesce(array_agg(id) FILTER (WHERE payload ->> 'failed' IS NULL), '{{}}')::text AS fids, "
    "coalesce(array_agg(id) FILTER (WHERE payload ->> 'failed' IS NOT NULL), '{{}}')::text AS cids "
    "FROM c \\gset\n"
    "UPDATE raw_jobs SET status = 'pending', payload = payload || '{{\"failed\": true}}' "
    "WHERE id = ANY (:fids::bigint[]);\n"
    "DELETE FROM raw_jobs WHERE id = ANY (:cids::bigint[]);\n"
)
PGB_JOBQ_RETRY = (
    "SELECT coalesce(array_agg(id) FILTER (WHERE attempts = 1), '{{}}')::text AS fids, "
    "coalesce(array_agg(id) FILTER (WHERE attempts > 1), '{{}}')::text AS cids "
    "FROM jobq_dequeue(worker_id => 'pgb' || :client_id::text, batch_size => {batch}) \\gset\n"
    "SELECT count(status) FROM jobq_fail_many(job_ids => :fids::uuid[], "
    "worker_id => 'pgb' || :client_id::text, "
    "errors => array_fill('boom'::text, ARRAY[cardinality(:fids::uuid[])]), "
    "backoffs => array_fill(interval '0', ARRAY[cardinality(:fids::uuid[])]));\n"
    "SELECT jobq_complete_many(job_ids => :cids::uuid[], worker_id => 'pgb' || :client_id::text);\n"
)


@dataclass(frozen=True)
class Config:
    quick: bool
    repeat: int
    single_jobs: int
    many_batches: int
    drain_jobs: int
    latency_jobs: int
    finished_rows: int
    future_rows: int
    retry_jobs: int
    volume_rows: int  # scenarios 7, 8, 9: the rows beside the drain
    many_size: int = 1000
    drain_batches: tuple[int, ...] = (10, 100)
    concurrency: int = 8  # threads (SQL level), pgbench -c/-j, Worker(concurrency=...)
    latency_gap: float = 0.010
    retry_batch: int = 10
    prune_batch: int = 10_000
    bulk_jobs: int = 1_000_000  # scenario 16
    bulk_batch: int = 5000

    @classmethod
    def make(cls, quick: bool, repeat: int | None = None) -> Config:
        if quick:
            return cls(
                quick=True,
                repeat=repeat or 1,
                single_jobs=1000,
                many_batches=10,
                drain_jobs=10_000,
                latency_jobs=100,
                finished_rows=200_000,
                future_rows=20_000,
                retry_jobs=3000,
                volume_rows=200_000,
                bulk_jobs=100_000,
            )
        return cls(
            quick=False,
            repeat=repeat or 3,
            single_jobs=5000,
            many_batches=50,
            drain_jobs=20_000,
            latency_jobs=300,
            finished_rows=1_000_000,
            future_rows=100_000,
            retry_jobs=10_000,
            volume_rows=1_000_000,
        )


# Scenarios 12 and 13's turnover ceiling (Bench._chain_run): the least SQL that keeps keys
# with max_running slots busy, on jobq's table and indexes, with no limit check. The first
# statement claims the first per_key jobs of each key; each step completes the jobs it is
# given and claims, per (job_type, queue, group, key), as many next jobs as it completed.
CHAIN_FIRST = """
    UPDATE jobq_jobs AS j
    SET status = 'processing', attempts = j.attempts + 1, locked_at = now(),
        locked_by = 'chain', claimed_at = now(), updated_at = now()
    WHERE j.id = ANY (ARRAY(
        SELECT f.id
        FROM generate_series(0, %(keys)s::int - 1) AS k (n)
        CROSS JOIN LATERAL (
            SELECT x.id FROM jobq_jobs AS x
            WHERE x.job_type = 'noop' AND x.queue = 'default' AND x.limit_group = 'bench'
              AND coalesce(x.limit_key, '') = 'k' || k.n
              AND x.status = 'pending' AND NOT x.scheduled AND x.limit_group IS NOT NULL
            ORDER BY x.priority DESC, x.available_at, x.id
            LIMIT %(per_key)s::int
        ) AS f
    ))
    RETURNING j.id
"""
CHAIN_STEP = """
    WITH done AS (
        UPDATE jobq_jobs AS j
        SET status = 'succeeded', finished_at = now(), locked_at = NULL, locked_by = NULL,
            updated_at = now()
        WHERE j.id = ANY (%(ids)s::uuid[]) AND j.status = 'processing'
        RETURNING j.job_type, j.queue, j.limit_group, coalesce(j.limit_key, '') AS lk
    ),
    slots AS (
        SELECT d.job_type, d.queue, d.limit_group, d.lk, count(*) AS n
        FROM done AS d
        GROUP BY d.job_type, d.queue, d.limit_group, d.lk
    ),
    next AS MATERIALIZED (
        SELECT f.id
        FROM slots AS s
        CROSS JOIN LATERAL (
            SELECT x.id FROM jobq_jobs AS x
            WHERE x.job_type = s.job_type AND x.queue = s.queue
              AND x.limit_group = s.limit_group AND coalesce(x.limit_key, '') = s.lk
              AND x.status = 'pending' AND NOT x.scheduled AND x.limit_group IS NOT NULL
              AND x.available_at <= now()
            ORDER BY x.priority DESC, x.available_at, x.id
            LIMIT s.n
            FOR UPDATE SKIP LOCKED
        ) AS f
    )
    UPDATE jobq_jobs AS j
    SET status = 'processing', attempts = j.attempts + 1, locked_at = now(),
        locked_by = 'chain', claimed_at = now(), updated_at = now()
    WHERE j.id = ANY (ARRAY(SELECT next.id FROM next))
    RETURNING j.id
"""


@dataclass
class Variant:
    """One throughput measurement: ``prepare()`` (not timed), then ``run()`` -> Run."""

    key: str
    label: str
    kind: str
    run: Callable[[], Run]
    prepare: Callable[[], None]
    ceiling: str | None = None
    check: Callable[[], str] | None = None  # a note after the run (e.g. jobs left over)
    notes: list[str] = field(default_factory=list)


@dataclass
class Turns:
    """One variant of an interleaved measurement (:meth:`Bench.measure_turns`):
    ``start(conn)`` (not timed) returns ``turn``, and ``turn(r)`` does the variant's share of
    round ``r`` on ``conn`` and returns how many jobs it did."""

    key: str
    label: str
    kind: str
    start: Callable[[psycopg.Connection[Any]], Callable[[int], int]]
    ceiling: str | None = None


class Bench:
    """Runs the scenarios against one cluster and collects the measurements."""

    def __init__(
        self, cluster: Cluster, config: Config, scriptdir: Path, log: Callable[[str], None]
    ) -> None:
        self.cluster = cluster
        self.config = config
        self.scriptdir = scriptdir
        self.log = log
        self.results: list[Measurement] = []

    # -- plumbing ----------------------------------------------------------------------------

    def measure(self, scenario: str, variants: list[Variant]) -> None:
        """Each variant ``repeat`` times, interleaved (noise hits all alike); median kept."""
        runs: dict[str, list[Run]] = {v.key: [] for v in variants}
        for rep in range(self.config.repeat):
            for v in variants:
                v.prepare()
                run = v.run()
                runs[v.key].append(run)
                if v.check is not None:
                    note = v.check()
                    if note:
                        v.notes.append(note)
                self.log(
                    f"  [{rep + 1}/{self.config.repeat}] {v.label}: "
                    f"{run.rate:,.0f} jobs/s ({run.jobs} jobs, {run.seconds:.2f} s)"
                )
        for v in variants:
            self.record(scenario, v, median_run(runs[v.key]), runs[v.key],
                        "; ".join(sorted(set(v.notes))))

    def record(self, scenario: str, v: Variant | Turns, kept: Run, runs: list[Run],
               note: str) -> None:
        """Add the measurement of ``v``: the figure ``kept`` of its ``runs``."""
        self.results.append(
            Measurement(
                scenario=scenario,
                key=v.key,
                label=v.label,
                kind=v.kind,
                unit="jobs/s",
                value=kept.rate,
                runs=[r.rate for r in runs],
                jobs=kept.jobs,
                seconds=kept.seconds,
                ceiling=v.ceiling,
                note=note,
            )
        )

    def measure_turns(self, scenario: str, variants: list[Turns], rounds: int) -> None:
        """Each variant ``repeat`` times, taking turns within each repeat: ``rounds`` rounds in
        which every variant does one turn (the order rotated each round), so that the
        machine's drift during a repeat (a durable cluster's fsync latency above all) falls on
        all of them alike, all on one connection (a new one per repeat), so that they are
        served by the same server process: two connections running the same statements
        differed by up to 8 % here, one of them slower throughout a run. A variant's run is
        the sum of its turns' jobs and times. Before the first round each variant does one
        turn untimed (the session's first call of a function plans its statements). The
        figure kept is all the repeats together (their jobs over their seconds), not the
        median repeat: the repeats are paired, and a median taken per variant could pair the
        ceiling of one repeat with the variant of another."""
        runs: dict[str, list[Run]] = {v.key: [] for v in variants}
        for rep in range(self.config.repeat):
            self.clean()
            jobs = dict.fromkeys(runs, 0)
            seconds = dict.fromkeys(runs, 0.0)
            with self.cluster.connect(prepare_threshold=0) as conn:
                started: list[tuple[Turns, Callable[[int], int]]] = []
                for v in variants:
                    turn = v.start(conn)
                    started.append((v, turn))
                    turn(rounds)  # the untimed turn (its own round number: its own payloads)
                for r in range(rounds):
                    k = r % len(started)
                    for v, turn in started[k:] + started[:k]:
                        start = time.perf_counter()
                        n = turn(r)
                        seconds[v.key] += time.perf_counter() - start
                        jobs[v.key] += n
            for v in variants:
                run = Run(jobs[v.key], seconds[v.key])
                runs[v.key].append(run)
                self.log(
                    f"  [{rep + 1}/{self.config.repeat}] {v.label}: "
                    f"{run.rate:,.0f} jobs/s ({run.jobs} jobs, {run.seconds:.2f} s, "
                    f"{rounds} turns)"
                )
        for v in variants:
            total = Run(sum(r.jobs for r in runs[v.key]), sum(r.seconds for r in runs[v.key]))
            self.record(scenario, v, total, runs[v.key],
                        f"{len(runs[v.key])} repeats of {rounds} turns, together")

    def pgbench_run(self, name: str, script: str, clients: int, transactions: int,
                    jobs: Callable[[], int]) -> Run:
        res = pgbench(self.cluster, self.scriptdir, name, script, clients, transactions)
        return Run(jobs(), res.seconds)

    def _pgbench(self, name: str, script: str, clients: int, transactions: int,
                 jobs: Callable[[], int]) -> Callable[[], Run]:
        return lambda: self.pgbench_run(name, script, clients, transactions, jobs)

    def _threads(self, concurrency: int,
                 body: Callable[[psycopg.Connection[Any], int], int]) -> Callable[[], Run]:
        return lambda: run_threads(self.cluster, concurrency, body)

    def clean(self) -> None:
        reset(self.cluster)
        settle(self.cluster)

    def fill_raw(self, n: int) -> Callable[[], None]:
        def prepare() -> None:
            reset(self.cluster)
            fill_raw(self.cluster, n)
            settle(self.cluster)

        return prepare

    def fill_jobq(self, n: int) -> Callable[[], None]:
        def prepare() -> None:
            reset(self.cluster)
            fill_jobq(self.cluster, n)
            settle(self.cluster)

        return prepare

    def raw_left(self, n: int) -> Callable[[], int]:
        return lambda: n - count(self.cluster, "SELECT count(*) FROM raw_jobs")

    def jobq_done(self) -> Callable[[], int]:
        return lambda: count(
            self.cluster, "SELECT count(*) FROM jobq_all_jobs WHERE status = 'succeeded'"
        )

    def left_note(self, query: str, what: str) -> Callable[[], str]:
        def check() -> str:
            n = count(self.cluster, query)
            return f"{what}: {n} left undone" if n else ""

        return check

    # -- scenario 1: one job per call and transaction -----------------------------------------

    def scenario_single(self) -> None:
        n = self.config.single_jobs
        self.log(f"scenario 1: enqueue {n} jobs, one per call and transaction, 1 connection")

        def raw_body(conn: psycopg.Connection[Any], _: int) -> int:
            for i in range(n):
                conn.execute(RAW_INSERT, (Jsonb(payload(i)),))
            return n

        def jobq_body(conn: psycopg.Connection[Any], _: int) -> int:
            for i in range(n):
                conn.execute(JOBQ_ENQUEUE, ("noop", Jsonb(payload(i))))
            return n

        def queue_run() -> Run:
            from pgq_client import queue as queue_mod

            with queue_mod.Queue(self.cluster.dsn) as q:
                q.enqueue("warmup", {})  # opens the connection before the clock starts
                start = time.perf_counter()
                for i in range(n):
                    q.enqueue("noop", payload(i))
                return Run(n, time.perf_counter() - start)

        self.measure(
            "1",
            [
                Variant("s1.raw.py", "plain INSERT (psycopg)", "ceiling",
                        lambda: run_threads(self.cluster, 1, raw_body), self.clean),
                Variant("s1.jobq.py", "jobq_enqueue (psycopg)", "jobq",
                        lambda: run_threads(self.cluster, 1, jobq_body), self.clean,
                        ceiling="s1.raw.py"),
                Variant("s1.jobq.queue", "Queue.enqueue", "jobq", queue_run, self.clean,
                        ceiling="s1.raw.py"),
                Variant("s1.raw.pgbench", "plain INSERT (pgbench -c1)", "ceiling",
                        lambda: self.pgbench_run("s1_raw", PGB_RAW_INSERT, 1, n, lambda: n),
                        self.clean),
                Variant("s1.jobq.pgbench", "jobq_enqueue (pgbench -c1)", "jobq",
                        lambda: self.pgbench_run("s1_jobq", PGB_JOBQ_ENQUEUE, 1, n, lambda: n),
                        self.clean, ceiling="s1.raw.pgbench"),
            ],
        )

    # -- scenario 2: batches of 1,000 ------------------------------------------------------------

    def scenario_many(self) -> None:
        size, batches = self.config.many_size, self.config.many_batches
        total = size * batches
        self.log(f"scenario 2: enqueue {total} jobs in {batches} batches of {size}, 1 connection")
        values = ", ".join(["(%s)"] * size)
        raw_many = f"INSERT INTO raw_jobs (payload) VALUES {values} RETURNING id".encode()

        def raw_body(conn: psycopg.Connection[Any], _: int) -> int:
            for b in range(batches):
                params = [Jsonb(payload(b * size + i)) for i in range(size)]
                conn.execute(raw_many, params).fetchall()
            return total

        def jobs_of(b: int) -> list[dict[str, Any]]:
            return [{"job_type": "noop", "payload": payload(b * size + i)} for i in range(size)]

        def jobq_body(conn: psycopg.Connection[Any], _: int) -> int:
            for b in range(batches):
                conn.execute(JOBQ_ENQUEUE_MANY, (Jsonb(jobs_of(b)),)).fetchall()
            return total

        def queue_run() -> Run:
            from pgq_client import queue as queue_mod

            with queue_mod.Queue(self.cluster.dsn) as q:
                q.enqueue("warmup", {})
                start = time.perf_counter()
                for b in range(batches):
                    q.enqueue_many(jobs_of(b))
                return Run(total, time.perf_counter() - start)

        rows = ", ".join(f"('{STATIC_PAYLOAD}')" for _ in range(size))
        pgb_raw = f"INSERT INTO raw_jobs (payload) VALUES {rows};\n"
        elem = f'{{"job_type": "noop", "payload": {STATIC_PAYLOAD}}}'
        elems = ", ".join(elem for _ in range(size))
        pgb_jobq = f"SELECT count(*) FROM jobq_enqueue_many(jobs => '[{elems}]');\n"
        self.measure(
            "2",
            [
                Variant("s2.raw.py", f"multi-row INSERT x{size} (psycopg)", "ceiling",
                        lambda: run_threads(self.cluster, 1, raw_body), self.clean),
                Variant("s2.jobq.py", f"jobq_enqueue_many x{size} (psycopg)", "jobq",
                        lambda: run_threads(self.cluster, 1, jobq_body), self.clean,
                        ceiling="s2.raw.py"),
                Variant("s2.jobq.queue", f"Queue.enqueue_many x{size}", "jobq", queue_run,
                        self.clean, ceiling="s2.raw.py"),
                Variant("s2.raw.pgbench", f"multi-row INSERT x{size} (pgbench)", "ceiling",
                        lambda: self.pgbench_run("s2_raw", pgb_raw, 1, batches, lambda: total),
                        self.clean),
                Variant("s2.jobq.pgbench", f"jobq_enqueue_many x{size} (pgbench)", "jobq",
                        lambda: self.pgbench_run("s2_jobq", pgb_jobq, 1, batches, lambda: total),
                        self.clean, ceiling="s2.raw.pgbench"),
            ],
        )

    # -- scenario 3 and 5: drain -------------------------------------------------------------------

    def _raw_drain_body(self, batch: int, n: int) -> Callable[[psycopg.Connection[Any], int], int]:
        def body(conn: psycopg.Connection[Any], _: int) -> int:
            done = 0
            for _step in range(n + 1):  # bounded: at most one job per step
                rows = conn.execute(RAW_CLAIM, (batch,)).fetchall()
                if not rows:
                    break
                conn.execute(RAW_DELETE, ([r[0] for r in rows],))
                done += len(rows)
            return done

        return body

    def _jobq_drain_body(self, batch: int, n: int) -> Callable[[psycopg.Connection[Any], int], int]:
        def body(conn: psycopg.Connection[Any], i: int) -> int:
            worker = f"bench-{i}"
            done = 0
            for _step in range(n + 1):
                rows = conn.execute(JOBQ_DEQUEUE, (worker, batch)).fetchall()
                if not rows:
                    break
                conn.execute(JOBQ_COMPLETE_MANY, ([r[0] for r in rows], worker))
                done += len(rows)
            return done

        return body

    def _worker_run(
        self,
        n: int,
        *,
        fail_once: bool = False,
        job_type: str = "noop",
        queues: list[str] | None = None,
        done: Callable[[], int] | None = None,
        asynchronous: bool = False,
        poll_interval: float = 1.0,
    ) -> Run:
        from pgq_client.worker import Worker

        def noop(job: Any) -> None:
            if fail_once and job.attempts == 1:
                raise RuntimeError("boom")

        async def async_noop(job: Any) -> None:
            if fail_once and job.attempts == 1:
                raise RuntimeError("boom")

        worker = Worker(
            self.cluster.dsn,
            handlers={job_type: async_noop if asynchronous else noop},
            concurrency=self.config.concurrency,
            queues=queues,
            retry_backoff=timedelta(0),
            poll_interval=poll_interval,
        )
        start = time.perf_counter()
        worker.run(burst=True)
        seconds = time.perf_counter() - start
        return Run((done or self.jobq_done())(), seconds)

    def drain_variants(self, s: str, n: int, prepare_jobq: Callable[[], None],
                       with_raw: bool) -> list[Variant]:
        c = self.config.concurrency
        variants: list[Variant] = []
        jobq_left = self.left_note(
            "SELECT count(*) FROM jobq_jobs WHERE status IN ('pending', 'processing') "
            "AND available_at <= now()", "jobq")
        raw_left = self.left_note("SELECT count(*) FROM raw_jobs", "raw")
        for b in self.config.drain_batches:
            t = math.ceil(n / (b * c))
            ref = "s3.raw" if s == "3" else "s3.jobq"
            if with_raw:
                variants.append(Variant(
                    f"s{s}.raw.py.b{b}", f"raw UPDATE..SKIP LOCKED/DELETE b{b} c{c} (psycopg)",
                    "ceiling", self._threads(c, self._raw_drain_body(b, n)),
                    self.fill_raw(n), check=raw_left))
            variants.append(Variant(
                f"s{s}.jobq.py.b{b}", f"jobq_dequeue/complete_many b{b} c{c} (psycopg)", "jobq",
                self._threads(c, self._jobq_drain_body(b, n)),
                prepare_jobq, ceiling=f"{ref}.py.b{b}", check=jobq_left))
            if with_raw:
                variants.append(Variant(
                    f"s{s}.raw.pgbench.b{b}",
                    f"raw UPDATE..SKIP LOCKED/DELETE b{b} (pgbench -c{c})", "ceiling",
                    self._pgbench(f"s{s}_raw_b{b}", PGB_RAW_DRAIN.format(batch=b), c, t,
                                  self.raw_left(n)),
                    self.fill_raw(n), check=raw_left))
            variants.append(Variant(
                f"s{s}.jobq.pgbench.b{b}", f"jobq_dequeue/complete_many b{b} (pgbench -c{c})",
                "jobq",
                self._pgbench(f"s{s}_jobq_b{b}", PGB_JOBQ_DRAIN.format(batch=b), c, t,
                              self.jobq_done()),
                prepare_jobq, ceiling=f"{ref}.pgbench.b{b}", check=jobq_left))
        variants.append(Variant(
            f"s{s}.jobq.worker", f"Worker(concurrency={c}).run(burst=True)", "jobq",
            lambda: self._worker_run(n), prepare_jobq,
            ceiling="s3.raw.pgbench.b10" if s == "3" else "s3.jobq.worker", check=jobq_left))
        return variants

    def scenario_drain(self) -> None:
        n, c = self.config.drain_jobs, self.config.concurrency
        self.log(f"scenario 3: drain {n} queued jobs, {c} connections")
        self.measure("3", self.drain_variants("3", n, self.fill_jobq(n), with_raw=True))

    def scenario_big_table(self) -> None:
        n = self.config.drain_jobs
        finished, future = self.config.finished_rows, self.config.future_rows
        self.log(f"scenario 5: drain {n} jobs beside {finished} finished and {future} future jobs")
        state = {"built": False}

        def prepare() -> None:
            if not state["built"]:
                reset(self.cluster)
                fill_jobq(self.cluster, finished, status="succeeded")
                fill_jobq(self.cluster, future, available="future")
                state["built"] = True
            fill_jobq(self.cluster, n)
            settle(self.cluster)

        variants = self.drain_variants("5", n, prepare, with_raw=False)
        # jobs done = succeeded now - succeeded before this run
        for v in variants:
            if ".pgbench." in v.key or v.key.endswith(".worker"):
                v.run = self._minus_before(v.run)
        self.measure("5", variants)

    # -- scenarios 7, 8, 9: scenario 3 beside a million rows it cannot claim ----------------------

    def _beside(self, built: dict[str, str], name: str, fill: Callable[[], None],
                drain: Callable[[], None]) -> Callable[[], None]:
        """A prepare step: the million rows of ``name`` (built once and kept while the next
        variants use them), then the jobs to drain, then VACUUM ANALYZE and CHECKPOINT."""
        def prepare() -> None:
            if built.get("rows") != name:
                reset(self.cluster)
                fill()
                built["rows"] = name
            drain()
            settle(self.cluster)

        return prepare

    def scenario_other_types_and_queues(self) -> None:
        n, big, c = self.config.drain_jobs, self.config.volume_rows, self.config.concurrency
        self.log(f"scenario 7: a Worker drains {n} jobs of type b beside {big} pending jobs of "
                 f"type a; then {n} jobs of queue q2 beside {big} in queue q1")
        built: dict[str, str] = {}
        types = self._beside(
            built, "types", lambda: fill_jobq(self.cluster, big, job_type="a"),
            lambda: fill_jobq(self.cluster, n, job_type="b"))
        queues = self._beside(
            built, "queues", lambda: fill_jobq(self.cluster, big, queue="q1"),
            lambda: fill_jobq(self.cluster, n, queue="q2"))
        left = "SELECT count(*) FROM jobq_jobs WHERE status IN ('pending', 'processing') AND "
        self.measure("7", [
            Variant("s7.jobq.worker.types",
                    f"Worker({c}) type b, beside {big:,} jobs of type a", "jobq",
                    self._minus_before(lambda: self._worker_run(n, job_type="b")), types,
                    ceiling="s3.jobq.worker",
                    check=self.left_note(left + "job_type = 'b'", "jobq")),
        ])
        self.measure("7", [
            Variant("s7.jobq.worker.queues",
                    f"Worker({c}) queue q2, beside {big:,} jobs in queue q1", "jobq",
                    self._minus_before(lambda: self._worker_run(n, queues=["q2"])), queues,
                    ceiling="s3.jobq.worker",
                    check=self.left_note(left + "queue = 'q2'", "jobq")),
        ])

    def scenario_scheduled_ahead(self) -> None:
        n, big = self.config.drain_jobs, self.config.volume_rows
        self.log(f"scenario 8: drain {n} jobs beside {big} jobs at the highest priority "
                 "scheduled a year ahead")
        built: dict[str, str] = {}
        prepare = self._beside(
            built, "scheduled",
            lambda: fill_jobq(self.cluster, big, available="year", priority=1_000_000),
            lambda: fill_jobq(self.cluster, n))
        variants = self.drain_variants("8", n, prepare, with_raw=False)
        for v in variants:
            if ".pgbench." in v.key or v.key.endswith(".worker"):
                v.run = self._minus_before(v.run)
        self.measure("8", variants)

    def scenario_prune_beside(self) -> None:
        n, big, b = self.config.drain_jobs, self.config.volume_rows, self.config.prune_batch
        self.log(f"scenario 9: drain {n} jobs while jobq_prune removes {big} succeeded jobs in "
                 f"batches of {b}")
        prunes: list[float] = []  # seconds per prune of `big` rows, one per run

        def prepare() -> None:
            reset(self.cluster)
            fill_jobq(self.cluster, big, status="succeeded", finished_ago="8 days")
            fill_jobq(self.cluster, n)
            settle(self.cluster)

        def with_prune(run: Callable[[], Run]) -> Callable[[], Run]:
            def wrapped() -> Run:
                pruned: list[int] = []
                errors: list[BaseException] = []
                started = threading.Event()

                def prune() -> None:
                    try:
                        with self.cluster.connect(prepare_threshold=0) as conn:
                            t0 = time.perf_counter()
                            started.set()
                            while True:
                                row = conn.execute(
                                    "SELECT jobq_prune(older_than => '7 days',"
                                    " batch_size => %s::int)", (b,)).fetchone()
                                pruned.append(int(row[0]) if row else 0)
                                if pruned[-1] < b:
                                    break
                            prunes.append((time.perf_counter() - t0) * 1e6 / max(1, sum(pruned)))
                    except BaseException as exc:
                        errors.append(exc)
                        started.set()

                thread = threading.Thread(target=prune, daemon=True)
                thread.start()
                started.wait(60)
                r = run()
                thread.join(3600)
                if errors:
                    raise errors[0]
                if sum(pruned) != big:
                    raise RuntimeError(f"the prune removed {sum(pruned)} jobs, not {big}")
                return r

            return wrapped

        c = self.config.concurrency
        jobq_left = self.left_note(
            "SELECT count(*) FROM jobq_jobs WHERE status IN ('pending', 'processing')", "jobq")

        def recent() -> int:  # the drained jobs (the pruned ones finished 8 days ago)
            return count(self.cluster, "SELECT count(*) FROM jobq_all_jobs WHERE status = "
                         "'succeeded' AND finished_at > now() - interval '1 day'")

        variants = [
            Variant(f"s9.jobq.py.b{bb}", f"jobq_dequeue/complete_many b{bb} c{c}, prune beside",
                    "jobq", with_prune(self._threads(c, self._jobq_drain_body(bb, n))), prepare,
                    ceiling=f"s3.jobq.py.b{bb}", check=jobq_left)
            for bb in self.config.drain_batches
        ]
        variants.append(Variant(
            "s9.jobq.worker", f"Worker(concurrency={c}), prune beside", "jobq",
            with_prune(lambda: self._worker_run(n, done=recent)), prepare,
            ceiling="s3.jobq.worker", check=jobq_left))
        self.measure("9", variants)
        if prunes:
            per_million = sorted(prunes)[(len(prunes) - 1) // 2]
            self.results.append(Measurement(
                scenario="9", key="s9.jobq.prune",
                label=f"jobq_prune of {big:,} succeeded jobs, batches of {b:,}, beside a drain",
                kind="jobq", unit="s/M rows", value=per_million, runs=sorted(prunes),
                jobs=big, note=f"{1e6 / per_million:,.0f} rows/s (median of {len(prunes)} runs)"))

    def _minus_before(self, run: Callable[[], Run]) -> Callable[[], Run]:
        def wrapped() -> Run:
            before = self.jobq_done()()
            r = run()
            return Run(r.jobs - before, r.seconds)

        return wrapped

    # -- scenario 6: retries -----------------------------------------------------------------------

    def scenario_retry(self) -> None:
        n, c, b = self.config.retry_jobs, self.config.concurrency, self.config.retry_batch
        self.log(f"scenario 6: {n} jobs that each fail once (backoff 0), batch {b}, "
                 f"{c} connections")

        def raw_body(conn: psycopg.Connection[Any], _: int) -> int:
            done = 0
            for _step in range(2 * n + 1):
                rows = conn.execute(RAW_CLAIM, (b,)).fetchall()
                if not rows:
                    break
                fids = [r[0] for r in rows if "failed" not in r[1]]
                cids = [r[0] for r in rows if "failed" in r[1]]
                if fids:
                    conn.execute(RAW_RETRY, (fids,))
                if cids:
                    conn.execute(RAW_DELETE, (cids,))
                done += len(cids)
            return done

        def jobq_body(conn: psycopg.Connection[Any], i: int) -> int:
            worker = f"bench-{i}"
            done = 0
            for _step in range(2 * n + 1):
                rows = conn.execute(JOBQ_DEQUEUE, (worker, b)).fetchall()
                if not rows:
                    break
                fids = [r[0] for r in rows if r[2] == 1]
                cids = [r[0] for r in rows if r[2] > 1]
                if fids:
                    conn.execute(JOBQ_FAIL_MANY, {"ids": fids, "worker": worker})
                if cids:
                    conn.execute(JOBQ_COMPLETE_MANY, (cids, worker))
                done += len(cids)
            return done

        t = math.ceil(2 * n / (b * c))
        raw_left = self.left_note("SELECT count(*) FROM raw_jobs", "raw")
        jobq_left = self.left_note(
            "SELECT count(*) FROM jobq_all_jobs WHERE status <> 'succeeded'", "jobq")
        self.measure(
            "6",
            [
                Variant("s6.raw.py", f"raw claim/requeue/DELETE b{b} c{c} (psycopg)", "ceiling",
                        lambda: run_threads(self.cluster, c, raw_body), self.fill_raw(n),
                        check=raw_left),
                Variant("s6.jobq.py", f"jobq_dequeue/fail/complete_many b{b} c{c} (psycopg)",
                        "jobq", lambda: run_threads(self.cluster, c, jobq_body),
                        self.fill_jobq(n), ceiling="s6.raw.py", check=jobq_left),
                Variant("s6.raw.pgbench", f"raw claim/requeue/DELETE b{b} (pgbench -c{c})",
                        "ceiling",
                        lambda: self.pgbench_run("s6_raw", PGB_RAW_RETRY.format(batch=b), c, t,
                                                 self.raw_left(n)),
                        self.fill_raw(n), check=raw_left),
                Variant("s6.jobq.pgbench", f"jobq_dequeue/fail/complete_many b{b} (pgbench -c{c})",
                        "jobq",
                        lambda: self.pgbench_run("s6_jobq", PGB_JOBQ_RETRY.format(batch=b), c, t,
                                                 self.jobq_done()),
                        self.fill_jobq(n), ceiling="s6.raw.pgbench", check=jobq_left),
                Variant("s6.jobq.worker", f"Worker(concurrency={c}), handler fails attempt 1",
                        "jobq", lambda: self._worker_run(n, fail_once=True), self.fill_jobq(n),
                        ceiling="s6.raw.pgbench", check=jobq_left),
            ],
        )

    # -- scenario 4: latency -----------------------------------------------------------------------

    def _produce(self, produce: Callable[[int], Any], sent: list[float], ready: threading.Event,
                 wait: float) -> None:
        """Enqueue len(sent) jobs ``gap`` apart on a fixed schedule, noting each one's time."""
        ready.wait(30)
        time.sleep(wait)
        gap = self.config.latency_gap
        base = time.perf_counter()
        for i in range(len(sent)):
            delay = base + i * gap - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sent[i] = time.perf_counter()
            produce(i)

    def _listen_latency(self, channel: str, produce_sql: str, produce_args: Callable[[int], Any],
                        claim: Callable[[psycopg.Connection[Any]], list[int]]) -> list[float]:
        """A LISTEN loop on its own connection: claim until empty, then wait for a NOTIFY."""
        n = self.config.latency_jobs
        sent = [0.0] * n
        started: list[float | None] = [None] * n
        ready = threading.Event()
        with self.cluster.connect(prepare_threshold=0) as lconn, \
                self.cluster.connect(prepare_threshold=0) as pconn:
            lconn.execute(f"LISTEN {channel}".encode())
            producer = threading.Thread(
                target=self._produce,
                args=(lambda i: pconn.execute(produce_sql.encode(), produce_args(i)),
                      sent, ready, 0.2),
                daemon=True,
            )
            producer.start()
            ready.set()
            deadline = time.perf_counter() + 30 + n * self.config.latency_gap
            seen = 0
            while seen < n and time.perf_counter() < deadline:
                got = claim(lconn)
                now = time.perf_counter()
                for seq in got:
                    started[seq] = now
                seen += len(got)
                if not got:
                    for _ in lconn.notifies(timeout=0.5, stop_after=1):
                        pass
            producer.join(30)
        return [(s - t) * 1000 for s, t in zip(started, sent, strict=True) if s is not None]

    def _worker_latency(self) -> list[float]:
        from pgq_client.queue import Queue
        from pgq_client.worker import Worker

        n = self.config.latency_jobs
        sent = [0.0] * n
        started: list[float | None] = [None] * n
        all_started = threading.Event()
        remaining = itertools.count(1)

        def handler(job: Any) -> None:
            started[job.payload["n"]] = time.perf_counter()
            if next(remaining) >= n:
                all_started.set()

        worker = Worker(self.cluster.dsn, handlers={"noop": handler},
                        concurrency=self.config.concurrency)
        ready = threading.Event()

        def producer() -> None:
            with Queue(self.cluster.dsn) as q:
                q.enqueue("warmup", {})  # not a noop: stays queued; opens the connection
                # 1 s for the worker to start and go idle first
                self._produce(lambda i: q.enqueue("noop", payload(i)), sent, ready, 1.0)
            all_started.wait(30)
            worker.stop()

        thread = threading.Thread(target=producer, daemon=True)
        thread.start()
        ready.set()
        worker.run()  # on the main thread, until the producer stops it
        thread.join(30)
        return [(s - t) * 1000 for s, t in zip(started, sent, strict=True) if s is not None]

    def scenario_latency(self) -> None:
        n, gap = self.config.latency_jobs, self.config.latency_gap
        self.log(f"scenario 4: enqueue-to-start latency, {n} jobs {gap * 1000:.0f} ms apart, "
                 "idle consumer")

        def raw_claim(conn: psycopg.Connection[Any]) -> list[int]:
            rows = conn.execute(RAW_CLAIM, (10,)).fetchall()
            if rows:
                conn.execute(RAW_DELETE, ([r[0] for r in rows],))
            return [int(r[1]["n"]) for r in rows]

        def jobq_claim(conn: psycopg.Connection[Any]) -> list[int]:
            rows = conn.execute(JOBQ_DEQUEUE, ("bench-l", 10)).fetchall()
            if rows:
                conn.execute(JOBQ_COMPLETE_MANY, ([r[0] for r in rows], "bench-l"))
            return [int(r[1]["n"]) for r in rows]

        runs: list[tuple[str, str, str, str | None, Callable[[], list[float]]]] = [
            ("s4.raw.py", "raw INSERT+NOTIFY -> LISTEN, claim (psycopg)", "ceiling", None,
             lambda: self._listen_latency("raw_jobs", RAW_ENQUEUE_NOTIFY,
                                          lambda i: (Jsonb(payload(i)),), raw_claim)),
            ("s4.jobq.py", "jobq_enqueue -> LISTEN jobq, jobq_dequeue (psycopg)", "jobq",
             "s4.raw.py",
             lambda: self._listen_latency("jobq", JOBQ_ENQUEUE,
                                          lambda i: ("noop", Jsonb(payload(i))), jobq_claim)),
            ("s4.jobq.worker", "Queue.enqueue -> idle Worker handler", "jobq", "s4.raw.py",
             self._worker_latency),
        ]
        samples: dict[str, list[float]] = {key: [] for key, *_ in runs}
        for rep in range(self.config.repeat):
            for key, label, _kind, _ceiling, fn in runs:
                self.clean()
                got = fn()
                samples[key].extend(got)
                p = percentiles(got) if len(got) > 1 else {}
                self.log(f"  [{rep + 1}/{self.config.repeat}] {label}: {len(got)}/{n} started, "
                         f"p50 {p.get('p50', 0):.2f} ms, p99 {p.get('p99', 0):.2f} ms")
        for key, label, kind, ceiling, _fn in runs:
            got = samples[key]
            p = percentiles(got) if len(got) > 1 else {"p50": float("nan")}
            expected = n * self.config.repeat
            self.results.append(Measurement(
                scenario="4", key=key, label=label, kind=kind, unit="ms", value=p["p50"],
                jobs=len(got), ceiling=ceiling, extra=p,
                note="" if len(got) == expected else f"only {len(got)}/{expected} started"))

    # -- scenario 11: asyncio ---------------------------------------------------------------------

    def scenario_async(self) -> None:
        """AsyncQueue and async handlers beside the synchronous client doing the same: the cost
        of the event loop, not of the database."""
        n, c = self.config.single_jobs, self.config.concurrency
        size, batches = self.config.many_size, self.config.many_batches
        drain = self.config.drain_jobs
        self.log(f"scenario 11: asyncio: enqueue {n} jobs one by one, {batches} batches of "
                 f"{size}, drain {drain} jobs with async def handlers")
        dsn = self.cluster.dsn

        def queue_run() -> Run:
            from pgq_client import Queue

            with Queue(dsn) as q:
                q.enqueue("warmup", {})  # opens the connection before the clock starts
                start = time.perf_counter()
                for i in range(n):
                    q.enqueue("noop", payload(i))
                return Run(n, time.perf_counter() - start)

        async def enqueue_raw_async() -> Run:
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                await conn.execute(JOBQ_ENQUEUE, ("warmup", Jsonb({})))
                start = time.perf_counter()
                for i in range(n):
                    await conn.execute(JOBQ_ENQUEUE, ("noop", Jsonb(payload(i))))
                return Run(n, time.perf_counter() - start)

        async def enqueue_async() -> Run:
            from pgq_client import AsyncQueue

            async with AsyncQueue(dsn) as q:
                await q.enqueue("warmup", {})
                start = time.perf_counter()
                for i in range(n):
                    await q.enqueue("noop", payload(i))
                return Run(n, time.perf_counter() - start)

        async def enqueue_many_async() -> Run:
            from pgq_client import AsyncQueue

            async with AsyncQueue(dsn) as q:
                await q.enqueue("warmup", {})
                start = time.perf_counter()
                for b in range(batches):
                    await q.enqueue_many(
                        [{"job_type": "noop", "payload": payload(b * size + i)}
                         for i in range(size)]
                    )
                return Run(size * batches, time.perf_counter() - start)

        jobq_left = self.left_note(
            "SELECT count(*) FROM jobq_jobs WHERE status IN ('pending', 'processing') "
            "AND available_at <= now()", "jobq")
        self.measure(
            "11",
            [
                Variant("s11.jobq.queue", "Queue.enqueue (reference)", "jobq", queue_run,
                        self.clean),
                Variant("s11.jobq.py.async", "jobq_enqueue (psycopg AsyncConnection)", "ceiling",
                        lambda: asyncio.run(enqueue_raw_async()), self.clean),
                Variant("s11.jobq.aqueue", "AsyncQueue.enqueue", "jobq",
                        lambda: asyncio.run(enqueue_async()), self.clean,
                        ceiling="s11.jobq.py.async"),
                Variant("s11.jobq.aqueue.many", f"AsyncQueue.enqueue_many x{size}", "jobq",
                        lambda: asyncio.run(enqueue_many_async()), self.clean),
                Variant("s11.jobq.worker", f"Worker(concurrency={c}), def handler (reference)",
                        "jobq", lambda: self._worker_run(drain), self.fill_jobq(drain),
                        check=jobq_left),
                Variant("s11.jobq.worker.async", f"Worker(concurrency={c}), async def handler",
                        "jobq", lambda: self._worker_run(drain, asynchronous=True),
                        self.fill_jobq(drain), ceiling="s11.jobq.worker", check=jobq_left),
            ],
        )

    # -- scenarios 12, 13, 14: concurrency and rate limits ----------------------------------------

    def fill_limited(self, n: int, keys: int) -> Callable[[], None]:
        """``n`` pending jobs spread round-robin over ``keys`` keys of limit group ``bench``."""

        def prepare() -> None:
            reset(self.cluster)
            fill_jobq(self.cluster, n)
            with self.cluster.connect() as conn:
                conn.execute(
                    "UPDATE jobq_jobs SET limit_group = 'bench',"
                    " limit_key = 'k' || (hashtext(id::text) & 2147483647) %% %s",
                    (keys,),
                )
            settle(self.cluster)

        return prepare

    def set_limit(self, **limits: Any) -> None:
        """Set the limits of group ``bench`` afresh (none given: remove them)."""
        with self.cluster.connect() as conn:
            conn.execute("DELETE FROM jobq_limit_keys")
            conn.execute("DELETE FROM jobq_limit_starts")
            conn.execute(
                "SELECT jobq_set_limit('bench', max_running => %(max_running)s,"
                " max_starts => %(max_starts)s, per => %(per)s, share => %(share)s)",
                {"max_running": limits.get("max_running"), "max_starts": limits.get("max_starts"),
                 "per": limits.get("per"), "share": limits.get("share")},
            )

    def _limited(self, n: int, keys: int, **limits: Any) -> Callable[[], None]:
        fill = self.fill_limited(n, keys)

        def prepare() -> None:
            fill()
            self.set_limit(**limits)

        return prepare

    def _jobq_left(self) -> Callable[[], str]:
        return self.left_note(
            "SELECT count(*) FROM jobq_jobs WHERE status IN ('pending', 'processing') "
            "AND available_at <= now()", "jobq")

    def _chain_run(self, n: int, keys: int, per_key: int) -> Run:
        """What the keys' turnover can reach on this machine, whoever enforces the limit: one
        session, no handler, no limit check, no function; each transaction completes the jobs
        the previous one claimed and claims, for each key, as many of its next jobs as it
        completed (the first claims ``per_key`` of each key). A key's next job cannot start
        before the completion that frees its slot has committed, so a serial key makes one job
        per durable commit, whatever the queue."""
        with self.cluster.connect() as conn:
            start = time.perf_counter()  # the first claim's jobs count: so does its time
            rows = conn.execute(CHAIN_FIRST, {"per_key": per_key, "keys": keys}).fetchall()
            done = len(rows)
            while rows:
                rows = conn.execute(CHAIN_STEP, {"ids": [r[0] for r in rows]}).fetchall()
                done += len(rows)
            seconds = time.perf_counter() - start
        if done != n:
            raise RuntimeError(f"the chain ran {done} of {n} jobs")
        return Run(done, seconds)

    def _limits_scenario(self, scenario: str, keys: int, max_running: int) -> None:
        n, c = self.config.drain_jobs, self.config.concurrency
        ref = f"s{scenario}.jobq.worker"
        self.measure(
            scenario,
            [
                Variant(ref, f"Worker(concurrency={c}), no limit (reference)", "jobq",
                        lambda: self._worker_run(n), self.fill_jobq(n), check=self._jobq_left()),
                Variant(f"s{scenario}.jobq.worker.k{keys}r{max_running}",
                        f"Worker(concurrency={c}), {keys} keys x max_running {max_running}",
                        "jobq", lambda: self._worker_run(n),
                        self._limited(n, keys, max_running=max_running), ceiling=ref,
                        check=self._jobq_left()),
                Variant(f"s{scenario}.raw.chain.k{keys}r{max_running}",
                        f"bare SQL on jobq_jobs, {keys} keys x {max_running}: completions hand "
                        "slots on",
                        "raw", lambda: self._chain_run(n, keys, max_running),
                        self._limited(n, keys, max_running=max_running), ceiling=ref,
                        check=self._jobq_left()),
            ],
        )
        self.set_limit()

    def scenario_limits_wide(self) -> None:
        """50 keys x max_running 2: 100 slots for 8 handler threads, the limit never binds;
        what the limited claim costs beside the unlimited one."""
        self.log(f"scenario 12: the Worker drains {self.config.drain_jobs} jobs, unlimited and "
                 "over 50 keys x max_running 2")
        self._limits_scenario("12", 50, 2)

    def scenario_limits_serial(self) -> None:
        """8 keys x max_running 1: at most 8 jobs at once, one per key, each key in order."""
        self.log(f"scenario 13: the Worker drains {self.config.drain_jobs} jobs, unlimited and "
                 "over 8 keys x max_running 1")
        self._limits_scenario("13", 8, 1)

    def scenario_fair_wide(self) -> None:
        """100,000 keys (10,000 quick) with one job each, share round_robin and no cap, beside
        the same drain without a limit group: what deciding the order across keys costs when
        every key has work; and at most 10,000 keys under fifo with a cap that never binds."""
        n = 100_000 if not self.config.quick else 10_000
        nf = min(n, 10_000)
        c = self.config.concurrency
        self.log(f"scenario 19: the Worker drains {n} jobs, unlimited and over {n} keys "
                 "sharing round_robin")

        def prepare(count: int, **limits: Any) -> Callable[[], None]:
            def fill() -> None:
                reset(self.cluster)
                fill_jobq(self.cluster, count)
                with self.cluster.connect() as conn:
                    conn.execute(
                        "UPDATE jobq_jobs AS j SET limit_group = 'bench', limit_key = 'k' || r.n"
                        " FROM (SELECT id, row_number() OVER (ORDER BY id) AS n"
                        "       FROM jobq_jobs) AS r"
                        " WHERE r.id = j.id"
                    )
                settle(self.cluster)
                self.set_limit(**limits)

            return fill

        self.measure(
            "19",
            [
                Variant("s19.jobq.worker", f"Worker(concurrency={c}), no limit (reference)",
                        "jobq", lambda: self._worker_run(n), self.fill_jobq(n),
                        check=self._jobq_left()),
                Variant(f"s19.jobq.worker.rr{n}",
                        f"Worker(concurrency={c}), {n:,} keys, round_robin, no cap", "jobq",
                        lambda: self._worker_run(n), prepare(n, share="round_robin"),
                        ceiling="s19.jobq.worker", check=self._jobq_left()),
                # Keys under fifo with a cap that never binds: what the limited claim costs
                # over many keys. At most 10,000: each of its claims probes every key with
                # work, so 100,000 keys would take hours.
                Variant(f"s19.jobq.worker.fifo{nf}",
                        f"Worker(concurrency={c}), {nf:,} keys, fifo, max_running 1,000",
                        "jobq", lambda: self._worker_run(nf), prepare(nf, max_running=1000),
                        ceiling="s19.jobq.worker", check=self._jobq_left()),
            ],
        )
        self.set_limit()

    def scenario_limits_rate(self) -> None:
        """One key with max_starts 1,000 per second: the drain runs at the limit's rate (the
        first window's burst included, so the longer the drain, the closer to it). A worker
        learns that the window has room again by polling: poll_interval 0.05 s."""
        n = 20_000 if not self.config.quick else 5_000
        c = self.config.concurrency
        self.log(f"scenario 14: the Worker drains {n} jobs of one key at max_starts 1,000/s")

        def prepare() -> None:
            self.fill_limited(n, 1)()
            self.set_limit(max_starts=1000, per=timedelta(seconds=1))

        self.results.append(Measurement(
            scenario="14", key="s14.rate", label="max_starts 1,000 per second (the limit)",
            kind="ceiling", unit="jobs/s", value=1000.0, runs=[1000.0], jobs=n,
            seconds=n / 1000.0,
        ))
        def run() -> Run:
            # Not a burst run: that one ends as soon as the window is full (no job is
            # available now); this one runs until every job has succeeded.
            from pgq_client.worker import Worker

            worker = Worker(self.cluster.dsn, handlers={"noop": lambda job: None},
                            concurrency=c, poll_interval=0.05)
            thread = threading.Thread(target=worker.run)
            start = time.perf_counter()
            thread.start()
            done = self.jobq_done()
            while done() < n and thread.is_alive():
                time.sleep(0.01)
            seconds = time.perf_counter() - start
            worker.stop()
            thread.join()
            return Run(done(), seconds)

        self.measure(
            "14",
            [
                Variant("s14.jobq.worker.rate1000",
                        f"Worker(concurrency={c}, poll_interval=0.05), 1 key, 1,000/s",
                        "jobq", run, prepare, ceiling="s14.rate", check=self._jobq_left()),
            ],
        )
        self.set_limit()

    # -- scenario 15: what the client adds, and the array batch -----------------------------------

    def scenario_producer(self) -> None:
        """Queue.enqueue beside the same jobq_enqueue call from bare psycopg (a prepared
        statement, nothing else), and the batch of 1,000 as arrays beside a multi-row INSERT.

        Each comparison takes turns on one connection (:meth:`measure_turns`): a durable
        single enqueue waits for its commit's fsync, whose latency here drifts by a tenth over
        seconds, more than what is compared; variants run one after the other for seconds
        each, on connections of their own, measured that drift as much as the client. The
        Queue is given the connection (``Queue(conn)``): the path of ``Queue(dsn)`` but for
        who opened the connection."""
        n, size, batches = self.config.single_jobs, self.config.many_size, self.config.many_batches
        rounds = max(1, n // SINGLE_TURN)
        self.log(f"scenario 15: producer side: {rounds * SINGLE_TURN} single enqueues, bare "
                 f"psycopg and Queue, {SINGLE_TURN} at a time in turns; {batches} batches of "
                 f"{size}, in turns: multi-row INSERT, jobq_enqueue_arrays, Queue.enqueue_many")

        def on_connection(
            body: Callable[[psycopg.Connection[Any], int], int],
        ) -> Callable[[psycopg.Connection[Any]], Callable[[int], int]]:
            return lambda conn: lambda r: body(conn, r)

        def on_queue(
            body: Callable[[Any, int], int],
        ) -> Callable[[psycopg.Connection[Any]], Callable[[int], int]]:
            def start(conn: psycopg.Connection[Any]) -> Callable[[int], int]:
                from pgq_client import Queue

                q = Queue(conn)  # closing it would leave the connection open: nothing to close
                return lambda r: body(q, r)

            return start

        def bare_turn(conn: psycopg.Connection[Any], r: int) -> int:
            for i in range(r * SINGLE_TURN, (r + 1) * SINGLE_TURN):
                conn.execute(JOBQ_ENQUEUE, ("noop", Jsonb(payload(i))))
            return SINGLE_TURN

        def queue_turn(q: Any, r: int) -> int:
            for i in range(r * SINGLE_TURN, (r + 1) * SINGLE_TURN):
                q.enqueue("noop", payload(i))
            return SINGLE_TURN

        values = ", ".join(["(%s)"] * size)
        raw_many = f"INSERT INTO raw_jobs (payload) VALUES {values} RETURNING id".encode()

        def raw_turn(conn: psycopg.Connection[Any], r: int) -> int:
            params = [Jsonb(payload(r * size + i)) for i in range(size)]
            conn.execute(raw_many, params).fetchall()
            return size

        def arrays_turn(conn: psycopg.Connection[Any], r: int) -> int:
            payloads = Jsonb([payload(r * size + i) for i in range(size)])
            conn.execute(JOBQ_ENQUEUE_ARRAYS, (["noop"] * size, payloads)).fetchall()
            return size

        def many_turn(q: Any, r: int) -> int:
            q.enqueue_many(
                [{"job_type": "noop", "payload": payload(r * size + i)} for i in range(size)]
            )
            return size

        self.measure_turns(
            "15",
            [
                Turns("s15.jobq.py.bare", "jobq_enqueue (bare psycopg, prepared)", "ceiling",
                      on_connection(bare_turn)),
                Turns("s15.jobq.queue", "Queue.enqueue", "jobq", on_queue(queue_turn),
                      ceiling="s15.jobq.py.bare"),
            ],
            rounds,
        )
        self.measure_turns(
            "15",
            [
                Turns("s15.raw.py.many", f"multi-row INSERT x{size} (psycopg)", "ceiling",
                      on_connection(raw_turn)),
                Turns("s15.jobq.py.arrays", f"jobq_enqueue_arrays x{size} (psycopg, binary)",
                      "jobq", on_connection(arrays_turn), ceiling="s15.raw.py.many"),
                Turns("s15.jobq.queue.many", f"Queue.enqueue_many x{size} (arrays)", "jobq",
                      on_queue(many_turn), ceiling="s15.raw.py.many"),
            ],
            batches,
        )

    # -- scenario 16: a bulk load of a million jobs ------------------------------------------------

    def scenario_bulk(self) -> None:
        """Queue.enqueue_iter and `jobq enqueue --from` loading ``bulk_jobs`` jobs, beside a
        multi-row INSERT of the same number of rows into the raw table."""
        n, batch = self.config.bulk_jobs, self.config.bulk_batch
        self.log(f"scenario 16: bulk load of {n} jobs: multi-row INSERT x1000, "
                 f"Queue.enqueue_iter (batches of {batch}), jobq enqueue --from FILE")
        dsn = self.cluster.dsn
        size = 1000
        values = ", ".join(["(%s)"] * size)
        raw_many = f"INSERT INTO raw_jobs (payload) VALUES {values}".encode()

        def raw_body(conn: psycopg.Connection[Any], _: int) -> int:
            for b in range(n // size):
                conn.execute(raw_many, [Jsonb(payload(b * size + i)) for i in range(size)])
            return n // size * size

        def iter_run() -> Run:
            from pgq_client import Queue

            with Queue(dsn) as q:
                q.enqueue("warmup", {})
                start = time.perf_counter()
                jobs = ({"job_type": "noop", "payload": payload(i)} for i in range(n))
                done = q.enqueue_iter(jobs, batch_size=batch).jobs
                return Run(done, time.perf_counter() - start)

        ndjson = self.scriptdir / "bulk.ndjson"

        def write_file() -> None:
            self.clean()
            if not ndjson.exists():
                with ndjson.open("w") as f:
                    for i in range(n):
                        f.write(f'{{"job_type": "noop", "payload": {{"n": {i}, '
                                f'"user": "bench", "action": "noop"}}}}\n')

        def cli_run() -> Run:
            import subprocess
            import sys

            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "pgq_client", "enqueue", "--from", str(ndjson),
                 "--batch-size", str(batch), "--dsn", dsn, "--json"],
                capture_output=True, text=True, timeout=3600,
            )
            seconds = time.perf_counter() - start
            if proc.returncode != 0:
                raise RuntimeError(f"jobq enqueue --from failed: {proc.stderr[-2000:]}")
            return Run(count(self.cluster, "SELECT count(*) FROM jobq_jobs"), seconds)

        self.measure(
            "16",
            [
                Variant("s16.raw.py", f"multi-row INSERT x{size}, {n} rows (psycopg)", "ceiling",
                        lambda: run_threads(self.cluster, 1, raw_body), self.clean),
                Variant("s16.jobq.queue.iter", f"Queue.enqueue_iter, {n} jobs", "jobq",
                        iter_run, self.clean, ceiling="s16.raw.py"),
                Variant("s16.jobq.cli", f"jobq enqueue --from FILE, {n} lines (process)", "jobq",
                        cli_run, write_file, ceiling="s16.raw.py"),
            ],
        )

    # -- scenario 20: a paused queue beside the drain ------------------------------------------

    def scenario_pause(self) -> None:
        """Scenario 3's SQL claim loop (no queue filter) draining the queue ``default`` while
        the queue ``held``, with as many jobs, is paused, beside the same drain with no pause
        and no other jobs: a pause must cost an unpaused claim nothing measurable. The two
        alternate within each repeat (Bench.measure), so the machine's drift falls on both."""
        n, c = self.config.drain_jobs, self.config.concurrency
        self.log(f"scenario 20: drain {n} jobs while queue held ({n} jobs) is paused, and "
                 "while no queue is")

        def prepare(paused: bool) -> Callable[[], None]:
            def fill() -> None:
                reset(self.cluster)
                with self.cluster.connect() as conn:
                    conn.execute("DELETE FROM jobq_paused_queues")
                if paused:
                    fill_jobq(self.cluster, n, queue="held")
                    with self.cluster.connect() as conn:
                        conn.execute("SELECT jobq_pause(queue => 'held', reason => 'bench')")
                fill_jobq(self.cluster, n)
                settle(self.cluster)

            return fill

        left = self.left_note("SELECT count(*) FROM jobq_jobs WHERE queue = 'default' AND "
                              "status IN ('pending', 'processing')", "jobq")
        variants = []
        for b in self.config.drain_batches:
            variants += [
                Variant(f"s20.jobq.py.b{b}.none", f"jobq_dequeue/complete_many b{b} c{c}, "
                        "no queue paused", "jobq",
                        self._threads(c, self._jobq_drain_body(b, n)), prepare(False),
                        check=left),
                Variant(f"s20.jobq.py.b{b}.paused", f"jobq_dequeue/complete_many b{b} c{c}, "
                        f"queue held paused ({n:,} jobs)", "jobq",
                        self._threads(c, self._jobq_drain_body(b, n)), prepare(True),
                        ceiling=f"s20.jobq.py.b{b}.none", check=left),
            ]
        self.measure("20", variants)
        with self.cluster.connect() as conn:
            conn.execute("DELETE FROM jobq_paused_queues")  # the scenarios after it pause nothing
