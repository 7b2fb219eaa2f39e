"""The fault suite's harness: a ledger of effects, worker processes, bounded waits, invariants.

Every test drives real worker processes (:mod:`tests.faults.worker_proc`) against its own
database (the ``dsn`` fixture) and ends with :meth:`Fx.check_invariants`, the one shared check:

* no job lost: the jobs in ``jobq_jobs`` are exactly the expected ones, each in its expected
  final status;
* no job completed by two claims: a transactional job (``fx``, ``afx``) that succeeded has
  exactly one effect, written by the claim that completed it (attempt = its final
  ``attempts``); one that did not succeed has none. A plain job (``fx_plain``, ``afx_plain``)
  that succeeded has the effect of its final claim (its handler ran to the end before the
  completion);
* ``attempts <= max_attempts``, and no handler ever started an attempt the job does not count;
* nothing left ``processing``;
* every effect was written by a claim whose ``start`` the ledger recorded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg.types.json import Jsonb

from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]

LEDGER_DDL = """
CREATE TABLE fx_ledger (
    job_id uuid NOT NULL,
    attempt integer NOT NULL,
    worker text NOT NULL,
    event text NOT NULL CHECK (event IN ('start')),
    backend_pid integer,
    os_pid integer,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (job_id, attempt, worker, event)
);
-- No constraint on purpose: a job whose effect happened twice must show up, not be refused.
CREATE TABLE fx_effects (
    job_id uuid NOT NULL,
    attempt integer NOT NULL,
    worker text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ON fx_effects (job_id);
CREATE TABLE fx_gate (name text PRIMARY KEY, open boolean NOT NULL DEFAULT false);
"""

T = TypeVar("T")


def install_ledger(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(LEDGER_DDL)


class WorkerProc:
    """One ``tests.faults.worker_proc`` subprocess."""

    def __init__(self, worker_id: str, popen: subprocess.Popen[bytes], log_path: Path) -> None:
        self.worker_id = worker_id
        self.popen = popen
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, signum: int) -> None:
        self.popen.send_signal(signum)

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"worker {self.worker_id} did not exit within {timeout:.0f}s\n{self.log_tail()}"
            ) from None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return f"--- last lines of {self.worker_id}'s log:\n" + "\n".join(text[-lines:])


class Fx:
    """What a fault test needs: its database, a connection that survives restarts, workers."""

    def __init__(self, dsn: str, tmp: Path) -> None:
        self.dsn = dsn
        self.tmp = tmp
        self.procs: list[WorkerProc] = []
        self._conn: psycopg.Connection[Any] | None = None

    # -- SQL from the test side -----------------------------------------------------------------

    @property
    def conn(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = psycopg.connect(self.dsn, autocommit=True, application_name="fx-test")
        return self._conn

    def sql(self, query: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """One autocommit statement; reconnects and retries once if the server went away."""
        for attempt in (1, 2, 3):
            try:
                cur = self.conn.execute(query, params)
                return cur.fetchall() if cur.description else []
            except psycopg.OperationalError:
                if attempt == 3:
                    raise
                self._conn = None
                time.sleep(0.5)
        raise AssertionError("unreachable")

    def one(self, query: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.sql(query, params)[0][0]

    def enqueue_many(self, jobs: list[dict[str, Any]]) -> list[uuid.UUID]:
        rows = self.sql(
            "SELECT id FROM jobq_enqueue_many(%(j)s::jsonb) ORDER BY ord", {"j": Jsonb(jobs)}
        )
        return [r[0] for r in rows]

    def gate(self, *names: str) -> None:
        """Close gates: handlers of jobs with ``gate`` in these names wait until opened."""
        for name in names:
            self.sql(
                "INSERT INTO fx_gate (name, open) VALUES (%(n)s, false)"
                " ON CONFLICT (name) DO UPDATE SET open = false",
                {"n": name},
            )

    def open_gate(self, *names: str) -> None:
        self.sql("UPDATE fx_gate SET open = true WHERE name = ANY(%(n)s)", {"n": list(names)})

    def starts(self, job_id: uuid.UUID) -> list[tuple[int, str, int | None]]:
        """(attempt, worker, backend_pid) of every recorded start of a job, by attempt."""
        return [
            (r[0], r[1], r[2])
            for r in self.sql(
                "SELECT attempt, worker, backend_pid FROM fx_ledger WHERE job_id = %(id)s"
                " AND event = 'start' ORDER BY attempt, at",
                {"id": job_id},
            )
        ]

    def wait_started(
        self, job_id: uuid.UUID, attempt: int = 1, timeout: float = 60.0
    ) -> tuple[int, str, int | None]:
        def probe() -> tuple[int, str, int | None] | None:
            return next((s for s in self.starts(job_id) if s[0] == attempt), None)

        return self.wait_for(f"job {job_id} to start attempt {attempt}", probe, timeout)

    def wait_listening(self, workers: int, timeout: float = 60.0) -> None:
        """Wait until ``workers`` worker processes have their listener up, so that a test's
        timing starts with running workers, not with a Python interpreter still starting on a
        busy machine.

        A worker's fetcher LISTENs, then claims on the same connection: pg_stat_activity shows
        its last statement, so a listening fetcher is a connection whose query is the LISTEN
        or, soon after, a claim (only fetchers call jobq_dequeue)."""
        self.wait_for(
            f"{workers} worker(s) to LISTEN",
            lambda: self.one(
                "SELECT count(*) >= %(n)s FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name = 'fx-worker'"
                " AND (query LIKE 'LISTEN %%' OR query LIKE '%%jobq_dequeue(%%')",
                {"n": workers},
            ) or None,
            timeout,
        )

    def wait_for(
        self, what: str, probe: Callable[[], T | None], timeout: float = 60.0,
        interval: float = 0.05,
    ) -> T:
        """:func:`wait_for`, with the workers' logs in the failure message."""
        return wait_for(what, probe, timeout, interval, details=self._logs)

    def job(self, job_id: uuid.UUID) -> dict[str, Any]:
        rows = self.conn.cursor(row_factory=psycopg.rows.dict_row).execute(
            "SELECT * FROM jobq_all_jobs WHERE id = %(id)s", {"id": job_id}
        ).fetchall()
        assert rows, f"job {job_id} does not exist"
        return rows[0]

    def status_counts(self) -> Counter[str]:
        return Counter(
            {r[0]: r[1] for r in self.sql("SELECT status, count(*) FROM jobq_all_jobs GROUP BY 1")}
        )

    def wait_all_finished(self, expected: int, timeout: float = 120.0) -> None:
        """Wait until ``expected`` jobs exist and none is pending or processing."""

        def probe() -> bool:
            c = self.status_counts()
            return sum(c.values()) >= expected and c["pending"] == 0 and c["processing"] == 0

        try:
            self.wait_for(f"{expected} jobs to finish", probe, timeout, interval=0.2)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nstatuses now: {dict(self.status_counts())}") from None

    def backdate_locks(self, worker_id: str | None = None, by: str = "1 hour") -> int:
        """Age the claims (of ``worker_id``, or all) instead of waiting for their lock timeout."""
        rows = self.sql(
            "UPDATE jobq_jobs SET locked_at = locked_at - %(by)s::interval,"
            " locked_until = locked_until - %(by)s::interval"
            " WHERE status = 'processing' AND (%(w)s::text IS NULL OR locked_by = %(w)s)"
            " RETURNING id",
            {"by": by, "w": worker_id},
        )
        return len(rows)

    def terminate(self, where: str = "application_name IN ('fx-worker', 'fx-ledger')") -> int:
        """pg_terminate_backend of this database's matching connections; returns how many."""
        return len(self.terminated(where))

    def terminated(self, where: str) -> list[str | None]:
        """:meth:`terminate`, returning the state of each connection it terminated (``active``:
        a statement was in flight). The connections are chosen before any is terminated, so
        that each state is the one its termination cut."""
        rows = self.sql(
            "WITH victim AS MATERIALIZED (SELECT pid, state FROM pg_stat_activity"
            f" WHERE datname = current_database() AND pid <> pg_backend_pid() AND ({where}))"
            " SELECT state FROM victim WHERE pg_terminate_backend(pid)"
        )
        return [r[0] for r in rows]

    # -- worker processes -----------------------------------------------------------------------

    def spawn(
        self,
        worker_id: str,
        *args: str,
        concurrency: int = 2,
        dsn: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> WorkerProc:
        """Start a worker process (``dsn``: another way to this database, e.g. a proxy;
        ``env``: more environment, e.g. ``FX_CLOCK_SKEW``)."""
        log_path = self.tmp / f"{worker_id}.log"
        env = dict(
            os.environ,
            JOBQ_DSN=dsn or self.dsn,
            PGAPPNAME="fx-worker",
            PYTHONUNBUFFERED="1",
            **(env or {}),
        )
        cmd = [
            sys.executable, "-m", "tests.faults.worker_proc",
            "--worker-id", worker_id, "--concurrency", str(concurrency), *args,
        ]
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        proc = WorkerProc(worker_id, popen, log_path)
        self.procs.append(proc)
        return proc

    def _logs(self) -> str:
        dumped = [p for p in self.procs if p.alive()]
        for p in dumped:  # worker_proc dumps its threads' stacks on SIGUSR1
            p.signal(signal.SIGUSR1)
        if dumped:
            time.sleep(0.5)
        tails = [p.log_tail(60 if p in dumped else 15) for p in self.procs]
        return ("\n" + "\n".join(t for t in tails if t)) if tails else ""

    def stop_all(self, timeout: float = 60.0) -> dict[str, int]:
        """SIGTERM every live worker (SIGCONT first) and wait for each; their exit codes."""
        codes: dict[str, int] = {}
        for p in self.procs:
            if p.alive():
                p.signal(signal.SIGCONT)
                p.signal(signal.SIGTERM)
        for p in self.procs:
            codes[p.worker_id] = p.wait(timeout)
        return codes

    def kill_all(self) -> None:
        for p in self.procs:
            if p.alive():
                p.popen.kill()
                p.popen.wait(10)
        if self._conn is not None:
            self._conn.close()

    # -- the shared invariants ------------------------------------------------------------------

    def check_invariants(
        self,
        expected: Mapping[uuid.UUID, str] | Iterable[uuid.UUID],
        *,
        allow_processing: bool = False,
    ) -> None:
        """The invariants of the suite (module docstring); ``expected``: id → final status
        (or just ids: all ``succeeded``)."""
        if not isinstance(expected, Mapping):
            expected = dict.fromkeys(expected, "succeeded")
        jobs = {
            r[0]: {"status": r[1], "attempts": r[2], "max_attempts": r[3], "job_type": r[4]}
            for r in self.sql(
                "SELECT id, status, attempts, max_attempts, job_type FROM jobq_all_jobs"
            )
        }
        effects: dict[uuid.UUID, list[tuple[int, str]]] = defaultdict(list)
        for job_id, attempt, worker in self.sql(
            "SELECT job_id, attempt, worker FROM fx_effects ORDER BY at"
        ):
            effects[job_id].append((attempt, worker))
        starts: dict[uuid.UUID, set[tuple[int, str]]] = defaultdict(set)
        for job_id, attempt, worker in self.sql(
            "SELECT job_id, attempt, worker FROM fx_ledger WHERE event = 'start'"
        ):
            starts[job_id].add((attempt, worker))

        problems: list[str] = []
        lost = set(expected) - set(jobs)
        if lost:
            problems.append(f"{len(lost)} jobs lost, e.g. {sorted(map(str, lost))[:3]}")
        extra = set(jobs) - set(expected)
        if extra:
            problems.append(f"{len(extra)} unexpected jobs, e.g. {sorted(map(str, extra))[:3]}")
        wrong_status = Counter(
            (want, jobs[i]["status"])
            for i, want in expected.items()
            if i in jobs and jobs[i]["status"] != want
        )
        if wrong_status:
            problems.append(f"jobs not in their expected status: (expected, actual) {wrong_status}")
        processing = [i for i, j in jobs.items() if j["status"] == "processing"]
        if processing and not allow_processing:
            problems.append(f"{len(processing)} jobs left processing, e.g. {processing[:3]}")
        over = [i for i, j in jobs.items() if j["attempts"] > j["max_attempts"]]
        if over:
            problems.append(f"{len(over)} jobs with attempts > max_attempts, e.g. {over[:3]}")

        twice: list[str] = []
        wrong_claim: list[str] = []
        missing: list[str] = []
        phantom: list[str] = []
        unstarted: list[str] = []
        uncounted: list[str] = []
        for i, j in jobs.items():
            fx = effects.get(i, [])
            if any(e not in starts.get(i, set()) for e in fx):
                unstarted.append(f"{i}: effects {fx}, starts {sorted(starts.get(i, set()))}")
            if any(a > j["attempts"] for a, _ in starts.get(i, set())):
                uncounted.append(f"{i}: attempts {j['attempts']}, starts {sorted(starts[i])}")
            if j["job_type"] in ("fx", "afx"):
                if j["status"] == "succeeded":
                    if len(fx) > 1:
                        twice.append(f"{i}: {fx}")
                    elif not fx:
                        missing.append(str(i))
                    elif fx[0][0] != j["attempts"]:
                        wrong_claim.append(f"{i}: effect {fx[0]}, final attempt {j['attempts']}")
                elif fx:
                    phantom.append(f"{i} ({j['status']}): {fx}")
            elif (
                j["job_type"] in ("fx_plain", "afx_plain")
                and j["status"] == "succeeded"
                and not any(a == j["attempts"] for a, _ in fx)
            ):
                missing.append(f"{i} (plain, final attempt {j['attempts']}, effects {fx})")
        for name, items in (
            ("effect written twice (transactional jobs)", twice),
            ("succeeded without the effect of its completing claim", missing),
            ("effect written by a claim that did not complete the job", wrong_claim),
            ("effect of a job that did not succeed (transactional)", phantom),
            ("effect without a recorded start of that claim", unstarted),
            ("a handler started an attempt the job does not count", uncounted),
        ):
            if items:
                problems.append(f"{len(items)} x {name}, e.g. {items[:3]}")
        assert not problems, "invariants violated:\n  " + "\n  ".join(problems) + self._logs()
