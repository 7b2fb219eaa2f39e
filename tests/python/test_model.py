"""A model-based test of the SQL API: a ``hypothesis`` state machine drives the jobq functions
against a real database and keeps an in-memory model of what the documented API promises, checked
against the table after every step (statuses, attempts, claims and their holders, fencing
results, error records, claim order, filters and limits).

The calls: enqueue (idempotency keys, priorities, run_at in the future, queues, job types,
limit groups and keys), claims with filters and batch sizes, jobq_await at once (which never
waits for the second session's locks), complete and fail by the holder,
by another worker and with a stale attempt, heartbeat, release, expiry and takeover (time is
moved by backdating ``locked_at`` and ``available_at``, never by sleeping), cancel, requeue,
limits (max_running), prune, and a second session that holds row locks or an open claim while
the first goes on. Where the reference (docs/sql-api.md) is silent, the model follows
docs/guarantees.md ("Claims, exactly").

The normal run is bounded (``JOBQ_MODEL_EXAMPLES`` examples, default 25, of up to
``JOBQ_MODEL_STEPS`` steps, default 50); ``JOBQ_MODEL_EXAMPLES=10000`` is the long run
(docs/testing.md). Each test function has its own database; examples reset it with TRUNCATE.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from datetime import datetime
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

Conn = psycopg.Connection[Any]

EXAMPLES = int(os.environ.get("JOBQ_MODEL_EXAMPLES", "25"))
STEPS = int(os.environ.get("JOBQ_MODEL_STEPS", "50"))
# JOBQ_MODEL_SHRINK=0 reports the first failing history as found, without shrinking it.
PHASES = [p for p in Phase if os.environ.get("JOBQ_MODEL_SHRINK", "1") != "0" or p != Phase.shrink]

UNLIMITED_TYPES = ["ta", "tb"]
LIMITED_TYPE = "tl"  # every limited job has this type (limit group "g")
QUEUES = ["q1", "q2"]
WORKERS = ["w1", "w2"]
FINISHED = ("succeeded", "failed", "dead_letter", "cancelled")
TABLES = (
    "jobq_jobs, jobq_jobs_history, jobq_limits, jobq_limit_keys, jobq_limit_starts, jobq_workers"
)


@dataclasses.dataclass
class Job:
    id: uuid.UUID
    job_type: str
    queue: str
    priority: int
    max_attempts: int
    available_at: datetime
    future: bool  # available_at is still to come
    scheduled: bool  # not yet promoted into the claim index
    limit_key: str | None  # of group "g" when job_type is LIMITED_TYPE
    idempotency_key: str | None
    status: str = "pending"
    attempts: int = 0
    locked_by: str | None = None
    stale: bool = False  # its lock was backdated past every lock_timeout used
    cancel_requested: bool = False
    errors: int = 0

    def order(self) -> tuple[int, datetime, str]:
        return (-self.priority, self.available_at, str(self.id))

    @property
    def limited(self) -> bool:
        return self.job_type == LIMITED_TYPE


class JobqModel(RuleBasedStateMachine):
    # The two sessions, opened once per test function: a new connection per example would
    # plan every statement of the claim again.
    a: Conn
    b: Conn

    def __init__(self) -> None:
        super().__init__()
        self.b.rollback()
        self.a.execute(f"TRUNCATE {TABLES}")
        self.jobs: dict[uuid.UUID, Job] = {}
        self.max_running: int | None = None
        # The second session: rows it holds, and the model as its open claim would leave it.
        self.b_locked: set[uuid.UUID] = set()
        self.b_after: dict[uuid.UUID, Job] | None = None

    def teardown(self) -> None:
        self.b.rollback()

    # -- helpers ------------------------------------------------------------------------------

    def one(self, query: str, params: Any = None) -> Any:
        row = self.a.execute(query, params).fetchone()
        assert row is not None
        return row[0]

    def reread_available_at(self, job: Job) -> None:
        job.available_at = self.one("SELECT available_at"
                                    " FROM jobq_all_jobs WHERE id = %s", (job.id,))

    def free(self, job: Job) -> bool:
        return job.id not in self.b_locked

    def ids_where(self, pred: Any) -> list[uuid.UUID]:
        # In the order of enqueue: a replayed example draws the same jobs (ids are random).
        return [j.id for j in self.jobs.values() if pred(j)]

    def predict_claim(
        self,
        jobs: dict[uuid.UUID, Job],
        worker: str,
        job_types: list[str] | None,
        queues: list[str] | None,
        batch: int,
        locked: set[uuid.UUID],
        got: list[uuid.UUID] | None = None,
    ) -> list[uuid.UUID]:
        """Applies a claim to ``jobs`` (the model) and returns the ids it claims, in order.
        ``got``: what the database's claim returned, checked and applied where the model
        cannot choose alone."""

        def in_filters(j: Job) -> bool:
            return (job_types is None or j.job_type in job_types) and (
                queues is None or j.queue in queues
            )

        # 0. Due scheduled jobs are promoted, whatever the filters (rows held elsewhere wait).
        for j in jobs.values():
            if j.status == "pending" and j.scheduled and not j.future and j.id not in locked:
                j.scheduled = False
        # 1. Stale claims in the filters: those that end take no place; the first `batch` of
        #    the others in claim order go back to pending.
        stale = [
            j
            for j in jobs.values()
            if j.status == "processing" and j.stale and in_filters(j) and j.id not in locked
        ]
        for j in stale:
            if j.cancel_requested or j.attempts >= j.max_attempts:
                j.status = "cancelled" if j.cancel_requested else "dead_letter"
                j.locked_by, j.stale, j.errors = None, False, j.errors + 1
        rerun = sorted((j for j in stale if j.status == "processing"), key=Job.order)[:batch]
        for j in rerun:
            j.status, j.locked_by, j.stale, j.errors = "pending", None, False, j.errors + 1
            j.scheduled = False
        # 2. The claim: pending jobs available now in claim order, within each key's room.
        running: dict[str | None, int] = {}
        for j in jobs.values():
            if j.limited and j.status == "processing":
                running[j.limit_key] = running.get(j.limit_key, 0) + 1
        candidates = sorted(
            (
                j
                for j in jobs.values()
                if j.status == "pending"
                and not j.scheduled
                and not j.future
                and in_filters(j)
                and j.id not in locked
            ),
            key=Job.order,
        )
        taken: list[uuid.UUID] = []
        for j in candidates:
            if len(taken) == batch:
                break
            if j.limited and self.max_running is not None:
                if running.get(j.limit_key, 0) >= self.max_running:
                    continue
                running[j.limit_key] = running.get(j.limit_key, 0) + 1
            taken.append(j.id)
        if got is not None and locked & {j.id for j in jobs.values() if j.status == "pending"}:
            # Pending rows held elsewhere: the claim is exact in number, not in which jobs
            # (docs/guarantees.md). The jobs it took must be claimable, in claim order, within
            # the caps, and as many as the model's choice.
            assert len(got) == len(taken), "a claim beside held rows is never short"
            allowed = {j.id for j in candidates}
            assert set(got) <= allowed, "a claim takes only claimable jobs"
            assert got == [j.id for j in sorted((jobs[i] for i in got), key=Job.order)]
            if self.max_running is not None:
                before: dict[str | None, int] = {}
                added: dict[str | None, int] = {}
                for j in jobs.values():
                    if j.limited and j.status == "processing":
                        before[j.limit_key] = before.get(j.limit_key, 0) + 1
                    if j.limited and j.id in got:
                        added[j.limit_key] = added.get(j.limit_key, 0) + 1
                for key, n in added.items():
                    # a cap lowered below the running jobs admits none until they end
                    assert before.get(key, 0) + n <= self.max_running, "max_running holds"
            taken = list(got)
        for i in taken:
            j = jobs[i]
            j.status, j.locked_by, j.attempts = "processing", worker, j.attempts + 1
        return taken

    # -- producers ----------------------------------------------------------------------------

    SPEC = st.fixed_dictionaries(
        {
            "job_type": st.sampled_from([*UNLIMITED_TYPES, LIMITED_TYPE]),
            "queue": st.sampled_from(QUEUES),
            "priority": st.sampled_from([0, 1, 5]),
            "max_attempts": st.integers(1, 3),
            "future": st.booleans(),
            "idempotency_key": st.sampled_from([None, None, "i1", "i2"]),
            "limit_key": st.sampled_from([None, "k1", "k2"]),
        }
    )

    @initialize(
        specs=st.lists(SPEC, min_size=2, max_size=8),
        max_running=st.sampled_from([None, 1, 1, 2]),
    )
    def start(self, specs: list[dict[str, Any]], max_running: int | None) -> None:
        self.set_limit(max_running)
        self.enqueue(specs)

    @rule(specs=st.lists(SPEC, min_size=1, max_size=5))
    def enqueue(self, specs: list[dict[str, Any]]) -> None:
        for spec in specs:
            self.enqueue_one(**spec)

    def enqueue_one(
        self,
        job_type: str,
        queue: str,
        priority: int,
        max_attempts: int,
        future: bool,
        idempotency_key: str | None,
        limit_key: str | None,
    ) -> None:
        limited = job_type == LIMITED_TYPE
        # Keys are spelt per job type: the same key under another type is another job.
        if idempotency_key is not None:
            idempotency_key = f"{job_type}:{idempotency_key}"
            if self.b_after is not None and any(
                j.idempotency_key == idempotency_key and j.id in self.b_locked
                for j in self.jobs.values()
            ):
                # The unique index's check waits for the open claim that changes the key's
                # job (docs/guarantees.md): not a call the model makes.
                return
        got = self.one(
            """SELECT jobq_enqueue(%(t)s, '{}', idempotency_key => %(k)s,
                   max_attempts => %(m)s, priority => %(p)s, queue => %(q)s,
                   run_at => CASE WHEN %(f)s THEN now() + interval '1 hour' END,
                   limit_group => %(g)s, limit_key => %(lk)s)""",
            {
                "t": job_type,
                "k": idempotency_key,
                "m": max_attempts,
                "p": priority,
                "q": queue,
                "f": future,
                "g": "g" if limited else None,
                "lk": limit_key if limited else None,
            },
        )
        same = [
            j
            for j in self.jobs.values()
            if idempotency_key is not None
            and j.idempotency_key == idempotency_key
            and j.job_type == job_type
        ]
        if same:
            assert got == same[0].id, "an idempotency key returns its job's id"
            return
        assert got not in self.jobs
        job = Job(
            id=got,
            job_type=job_type,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            available_at=datetime.min,
            future=future,
            scheduled=future,
            limit_key=limit_key if limited else None,
            idempotency_key=idempotency_key,
        )
        self.jobs[got] = job
        self.reread_available_at(job)

    @precondition(lambda self: any(j.future for j in self.jobs.values()))
    @rule(data=st.data())
    def time_passes_for_a_future_job(self, data: st.DataObject) -> None:
        ids = self.ids_where(lambda j: j.future and self.free(j))
        if not ids:
            return
        job = self.jobs[data.draw(st.sampled_from(ids))]
        self.a.execute(
            "UPDATE jobq_jobs SET available_at = now() - interval '1 second' WHERE id = %s",
            (job.id,),
        )
        job.future = False
        self.reread_available_at(job)

    # -- claims -------------------------------------------------------------------------------

    @rule(
        worker=st.sampled_from(WORKERS),
        job_types=st.sampled_from(
            [None, ["ta"], ["tl"], ["ta", "tl"], ["tb", "ta"], ["tb", "tl", "ta"]]
        ),
        queues=st.sampled_from([None, ["q1"], ["q2"], ["q2", "q1"]]),
        batch=st.integers(1, 4),
    )
    def claim(
        self, worker: str, job_types: list[str] | None, queues: list[str] | None, batch: int
    ) -> None:
        rows = self.a.execute(
            "SELECT id, attempts, locked_by FROM jobq_dequeue(%s, %s, %s, queues => %s)",
            (worker, job_types, batch, queues),
        ).fetchall()
        got = [r[0] for r in rows]
        expected = self.predict_claim(
            self.jobs, worker, job_types, queues, batch, self.b_locked, got
        )
        assert [r[0] for r in rows] == expected, self.describe("the claim's jobs, in order")
        for r in rows:
            assert (r[1], r[2]) == (self.jobs[r[0]].attempts, worker)

    @precondition(lambda self: any(j.status == "processing" for j in self.jobs.values()))
    @rule()
    def every_lock_expires(self) -> None:
        ids = self.ids_where(lambda j: j.status == "processing" and not j.stale and self.free(j))
        self.a.execute(
            "UPDATE jobq_jobs SET locked_at = locked_at - interval '1 hour',"
            " locked_until = locked_until - interval '1 hour' WHERE id = ANY(%s)",
            (ids,),
        )
        for i in ids:
            self.jobs[i].stale = True

    @precondition(lambda self: any(j.status == "processing" for j in self.jobs.values()))
    @rule(data=st.data())
    def lock_expires(self, data: st.DataObject) -> None:
        ids = self.ids_where(lambda j: j.status == "processing" and not j.stale and self.free(j))
        if not ids:
            return
        job = self.jobs[data.draw(st.sampled_from(ids))]
        self.a.execute(
            "UPDATE jobq_jobs SET locked_at = locked_at - interval '1 hour',"
            " locked_until = locked_until - interval '1 hour' WHERE id = %s",
            (job.id,),
        )
        job.stale = True

    # -- the holder's reports -----------------------------------------------------------------

    def pick_for_report(self, data: st.DataObject) -> tuple[Job, str, int | None] | None:
        ids = self.ids_where(self.free)
        if not ids:
            return None
        job = self.jobs[data.draw(st.sampled_from(ids))]
        worker = data.draw(st.sampled_from([job.locked_by or "w1", "w1", "w2"]))
        attempt = data.draw(st.sampled_from([None, job.attempts, job.attempts - 1]))
        return job, worker, attempt

    def describe(self, what: str) -> str:
        """The model's jobs, for a failure's message."""
        lines = [
            what,
            f"max_running={self.max_running} held by B={sorted(map(str, self.b_locked))}",
        ]
        for j in self.jobs.values():
            lines.append(
                f"  {j.id} {j.job_type}/{j.queue}/{j.limit_key} p{j.priority} {j.status}"
                f" a{j.attempts}/{j.max_attempts} by={j.locked_by} stale={j.stale}"
                f" sched={j.scheduled} future={j.future} at={j.available_at.isoformat()}"
            )
        return "\n".join(lines)

    def holds(self, job: Job, worker: str, attempt: int | None) -> bool:
        return (
            job.status == "processing"
            and job.locked_by == worker
            and (attempt is None or attempt == job.attempts)
        )

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        picked = self.pick_for_report(data)
        if picked is None:
            return
        job, worker, attempt = picked
        got = self.one("SELECT jobq_complete(%s, %s, %s)", (job.id, worker, attempt))
        assert got == self.holds(job, worker, attempt), "fencing of jobq_complete"
        if got:
            job.status, job.locked_by, job.stale = "succeeded", None, False

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data(), retry=st.booleans())
    def fail(self, data: st.DataObject, retry: bool) -> None:
        picked = self.pick_for_report(data)
        if picked is None:
            return
        job, worker, attempt = picked
        got = self.one(
            "SELECT jobq_fail(%s, %s, 'boom', retry => %s, backoff => '0', attempt => %s)",
            (job.id, worker, retry, attempt),
        )
        if not self.holds(job, worker, attempt):
            assert got is None, "fencing of jobq_fail"
            return
        job.errors += 1
        job.locked_by, job.stale = None, False
        if job.cancel_requested:
            job.status = "cancelled"
        elif not retry:
            job.status = "failed"
        elif job.attempts >= job.max_attempts:
            job.status = "dead_letter"
        else:
            job.status, job.scheduled = "pending", False  # backoff 0: claimable at once
            self.reread_available_at(job)
        assert got == job.status

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data(), worker=st.sampled_from(WORKERS))
    def heartbeat(self, data: st.DataObject, worker: str) -> None:
        ids = data.draw(st.lists(st.sampled_from(self.ids_where(self.free) or [uuid.uuid4()])))
        got = self.one("SELECT jobq_heartbeat(%s, %s::uuid[])", (worker, ids))
        held = [i for i in set(ids) if i in self.jobs and self.holds(self.jobs[i], worker, None)]
        assert got == len(held)
        for i in held:
            self.jobs[i].stale = False  # its lock is renewed

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data(), worker=st.sampled_from(WORKERS))
    def release(self, data: st.DataObject, worker: str) -> None:
        ids = data.draw(st.lists(st.sampled_from(self.ids_where(self.free) or [uuid.uuid4()])))
        got = self.one("SELECT jobq_release(%s::uuid[], %s)", (ids, worker))
        held = [i for i in set(ids) if i in self.jobs and self.holds(self.jobs[i], worker, None)]
        assert got == len(held)
        for i in held:
            job = self.jobs[i]
            job.locked_by, job.stale, job.attempts = None, False, job.attempts - 1
            job.scheduled = False
            job.status = "cancelled" if job.cancel_requested else "pending"
            self.reread_available_at(job)

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data())
    def await_at_once(self, data: st.DataObject) -> None:
        """jobq_await(ids, '0'): the statuses at once, whatever the second session holds (it
        never waits for a row lock)."""
        ids = data.draw(st.lists(st.sampled_from(self.ids_where(lambda j: True)), max_size=4))
        rows = self.a.execute(
            "SELECT id, status, attempts FROM jobq_await(%s::uuid[], '0')", (ids,)
        ).fetchall()
        expected = sorted(
            ((i, self.jobs[i].status, self.jobs[i].attempts) for i in set(ids)),
            key=lambda r: str(r[0]),
        )
        assert rows == expected

    # -- operators ----------------------------------------------------------------------------

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        ids = self.ids_where(self.free)
        if not ids:
            return
        job = self.jobs[data.draw(st.sampled_from(ids))]
        rows = self.a.execute(
            "SELECT job_id, status FROM jobq_cancel(%s::uuid[], 'stop')", ([job.id],)
        ).fetchall()
        if job.status == "pending":
            job.status = "cancelled"
            expected = "cancelled"
        elif job.status == "processing":
            job.cancel_requested = True
            expected = "cancel_requested"
        else:
            expected = job.status
        assert rows == [(job.id, expected)]

    @precondition(lambda self: any(j.status in FINISHED for j in self.jobs.values()))
    @rule(data=st.data())
    def requeue(self, data: st.DataObject) -> None:
        ids = self.ids_where(self.free)
        if not ids:
            return
        job = self.jobs[data.draw(st.sampled_from(ids))]
        got = self.one("SELECT jobq_requeue_dead_letter(%s)", (job.id,))
        assert got == (job.status in ("failed", "dead_letter", "cancelled"))
        if got:
            job.status, job.attempts, job.scheduled = "pending", 0, False
            job.cancel_requested, job.future = False, False
            self.reread_available_at(job)

    @rule(max_running=st.sampled_from([None, 1, 2]))
    def set_limit_rule(self, max_running: int | None) -> None:
        self.set_limit(max_running)

    def set_limit(self, max_running: int | None) -> None:
        self.a.execute("SELECT jobq_set_limit('g', max_running => %s)", (max_running,))
        self.max_running = max_running

    @precondition(lambda self: bool(self.jobs))
    @rule(
        statuses=st.lists(st.sampled_from(FINISHED), min_size=1, unique=True),
        batch=st.sampled_from([None, 1, 2, 3]),
    )
    def prune(self, statuses: list[str], batch: int | None) -> None:
        finished = {
            r[0]: r[1]
            for r in self.a.execute(
                "SELECT id, finished_at FROM jobq_all_jobs WHERE finished_at IS NOT NULL"
            ).fetchall()
        }
        doomed = sorted(
            (j for j in self.jobs.values() if j.status in statuses and self.free(j)),
            key=lambda j: (finished[j.id], str(j.id)),
        )
        if batch is not None:
            doomed = doomed[:batch]
        got = self.one("SELECT jobq_prune('0', %s, batch_size => %s)", (statuses, batch))
        assert got == len(doomed), "prune deletes the oldest first, across statuses"
        for j in doomed:
            del self.jobs[j.id]
        # what is gone must be gone: checked by the invariant

    # -- the second session ---------------------------------------------------------------------

    def b_idle(self) -> bool:
        return not self.b_locked and self.b_after is None

    @precondition(lambda self: self.b_idle() and bool(self.jobs))
    @rule(data=st.data())
    def b_holds_rows(self, data: st.DataObject) -> None:
        ids = data.draw(st.lists(st.sampled_from(self.ids_where(lambda j: True)), min_size=1))
        self.b.execute("SELECT id FROM jobq_jobs WHERE id = ANY(%s) FOR UPDATE", (ids,))
        self.b.execute("SELECT id FROM jobq_jobs_history WHERE id = ANY(%s) FOR UPDATE", (ids,))
        self.b_locked = set(ids)

    @precondition(lambda self: self.b_idle())
    @rule(
        job_types=st.sampled_from([["ta"], ["tb"], ["ta", "tb"]]),
        queues=st.sampled_from([None, ["q1"]]),
        batch=st.integers(1, 3),
    )
    def b_opens_a_claim(self, job_types: list[str], queues: list[str] | None, batch: int) -> None:
        before = {i: dataclasses.replace(j) for i, j in self.jobs.items()}
        after = {i: dataclasses.replace(j) for i, j in self.jobs.items()}
        expected = self.predict_claim(after, "wB", job_types, queues, batch, set())
        rows = self.b.execute(
            "SELECT id FROM jobq_dequeue('wB', %s, %s, queues => %s)", (job_types, batch, queues)
        ).fetchall()
        assert [r[0] for r in rows] == expected
        # Rows the open claim changed (promoted, taken back, claimed) are locked until it ends.
        self.b_locked = {i for i in after if after[i] != before[i]}
        self.b_after = after

    @precondition(lambda self: not self.b_idle())
    @rule(commit=st.booleans())
    def b_ends(self, commit: bool) -> None:
        if commit:
            self.b.commit()
            if self.b_after is not None:
                for i in self.b_locked:
                    if i in self.jobs:
                        self.jobs[i] = self.b_after[i]
        else:
            self.b.rollback()
        self.b_locked, self.b_after = set(), None

    # -- the check after every step -------------------------------------------------------------

    @invariant()
    def table_matches_the_model(self) -> None:
        rows = self.a.execute(
            """SELECT id, status, attempts, locked_by, cancel_requested_at IS NOT NULL,
                      jsonb_array_length(errors), available_at, job_type, queue, priority,
                      limit_key, status = 'pending' AND scheduled
               FROM jobq_all_jobs"""
        ).fetchall()
        got = {r[0]: r[1:] for r in rows}
        assert set(got) == set(self.jobs), "the jobs in the table are those of the model"
        for i, j in self.jobs.items():
            expected = (
                j.status,
                j.attempts,
                j.locked_by,
                j.cancel_requested,
                j.errors,
                j.available_at,
                j.job_type,
                j.queue,
                j.priority,
                j.limit_key,
                j.status == "pending" and j.scheduled,
            )
            assert got[i] == expected, f"job {i}"


@pytest.mark.long
@pytest.mark.timeout(max(300, EXAMPLES))
def test_the_sql_api_follows_its_model(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as a, psycopg.connect(dsn) as b:
        # A statement that waits on a lock is a failure of the model's expectations.
        a.execute("SET lock_timeout = '3s'")
        b.execute("SET lock_timeout = '3s'")
        b.commit()
        JobqModel.a, JobqModel.b = a, b
        run_state_machine_as_test(
            JobqModel,
            settings=settings(
                max_examples=EXAMPLES,
                stateful_step_count=STEPS,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                print_blob=True,
                phases=PHASES,
            ),
        )
