"""A worker process for the fault suite: ``python -m tests.faults.worker_proc [options]``.

It builds a :class:`pgq_client.Worker` on ``JOBQ_DSN`` with two handlers that keep a ledger in
the test's database (tables made by :func:`tests.faults.harness.install_ledger`):

* ``fx`` — transactional, ``handler(job, conn)``: records ``start`` in ``fx_ledger`` on its own
  autocommit connection, then writes its *effect* (one row of ``fx_effects``) on ``conn``, the
  worker's transaction that also completes the job: the effect exists iff the completion
  committed;
* ``fx_plain`` — ``handler(job)``: records ``start``, then its effect (``fx_effects``, autocommit)
  at the end; the worker acknowledges it later (``jobq_complete_many``);
* with ``--with-async``, also ``afx`` and ``afx_plain``: the same two as ``async def`` handlers
  (run on the Worker's event loop, ``afx`` on an ``AsyncConnection``), their ledger on one
  ``AsyncConnection`` of the loop's.

What a handler does besides is read from the job's payload, so one process serves every test:

* ``gate``: a name; the handler waits (after ``start``, and for ``fx`` after writing the
  effect when ``gate_after_effect`` is true) while a row ``fx_gate(name)`` exists, for ``name``
  or ``name/<attempt>``, with ``open = false``. No row: no wait. The test holds a job exactly
  where it wants it and lets it go with an UPDATE;
* ``exit``: ``os._exit(EXIT_POISON)`` right after ``start`` (a poison job that kills its worker);
* ``raise_on``: a list of attempts on which the handler raises ``RuntimeError`` (after the gate);
* ``sleep``: seconds to sleep in the handler;
* ``until_cancelled`` (``fx_plain``): the handler runs until ``job.cancel_requested()`` turns
  true, then raises ``RuntimeError("fx: cancel seen")`` (the job then ends cancelled).

Each ledger row carries the worker id and the backend pid of the handler's transaction, so a
test can terminate exactly that backend. Connections are named by ``application_name``:
``fx-worker`` (the Worker's own, from ``PGAPPNAME``) and ``fx-ledger`` (this module's).
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from typing import Any


def _skew_wall_clock(seconds: float) -> None:
    """Make this process's wall clock wrong by ``seconds`` (time.time, datetime.now/utcnow),
    before pgq_client is imported: the queue must not care (``FX_CLOCK_SKEW``)."""
    import datetime as _dt

    real_time = time.time
    delta = _dt.timedelta(seconds=seconds)

    class SkewedDatetime(_dt.datetime):
        @classmethod
        def now(cls, tz: _dt.tzinfo | None = None) -> SkewedDatetime:
            return super().now(tz) + delta

        @classmethod
        def utcnow(cls) -> SkewedDatetime:
            return super().utcnow() + delta

    time.time = lambda: real_time() + seconds
    _dt.datetime = SkewedDatetime  # type: ignore[misc]


if os.environ.get("FX_CLOCK_SKEW"):
    _skew_wall_clock(float(os.environ["FX_CLOCK_SKEW"]))

import psycopg  # noqa: E402

from pgq_client import Job, Worker  # noqa: E402

EXIT_POISON = 17

log = logging.getLogger("fx.worker_proc")

_local = threading.local()
_dsn = ""
_worker_id = ""


def _ledger_conn() -> psycopg.Connection[Any]:
    conn: psycopg.Connection[Any] | None = getattr(_local, "conn", None)
    if conn is None or conn.closed or conn.broken:
        conn = psycopg.connect(_dsn, autocommit=True, application_name="fx-ledger")
        _local.conn = conn
    return conn


def _ledger(query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Run one autocommit statement on this thread's ledger connection, through connection loss.

    Statements are idempotent (ON CONFLICT DO NOTHING / reads), so a retry after a lost reply is
    safe.
    """
    deadline = time.monotonic() + 120
    while True:
        try:
            cur = _ledger_conn().execute(query, params)
            return cur.fetchall() if cur.description else []
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            _local.conn = None
            time.sleep(0.05)


def _start(job: Job, backend_pid: int | None) -> None:
    _ledger(
        "INSERT INTO fx_ledger (job_id, attempt, worker, event, backend_pid, os_pid)"
        " VALUES (%(id)s, %(a)s, %(w)s, 'start', %(bp)s, %(pid)s) ON CONFLICT DO NOTHING",
        {"id": job.id, "a": job.attempts, "w": _worker_id, "bp": backend_pid, "pid": os.getpid()},
    )


def _wait_gate(job: Job) -> None:
    gate = job.payload.get("gate")
    if not gate:
        return
    names = [gate, f"{gate}/{job.attempts}"]
    while True:
        rows = _ledger(
            "SELECT count(*) FROM fx_gate WHERE name = ANY(%(n)s) AND NOT open", {"n": names}
        )
        if rows[0][0] == 0:
            return
        time.sleep(0.02)


def _misbehave(job: Job) -> None:
    if job.payload.get("exit"):
        sys.stdout.flush()
        os._exit(EXIT_POISON)
    if job.payload.get("sleep"):
        time.sleep(float(job.payload["sleep"]))


def _raise_if_asked(job: Job) -> None:
    if job.attempts in job.payload.get("raise_on", []):
        raise RuntimeError(f"fx: asked to fail attempt {job.attempts} (worker {_worker_id})")


def handle_fx(job: Job, conn: psycopg.Connection[Any]) -> None:
    """Transactional: the effect row commits with the completion, or not at all."""
    _start(job, conn.info.backend_pid)
    _misbehave(job)
    after = bool(job.payload.get("gate_after_effect"))
    if not after:
        _wait_gate(job)
        _raise_if_asked(job)
    conn.execute(
        "INSERT INTO fx_effects (job_id, attempt, worker) VALUES (%(id)s, %(a)s, %(w)s)",
        {"id": job.id, "a": job.attempts, "w": _worker_id},
    )
    if after:
        _wait_gate(job)
        _raise_if_asked(job)


def handle_fx_plain(job: Job) -> None:
    """At-least-once: the effect is written before the worker acknowledges the job."""
    _start(job, None)
    _misbehave(job)
    if job.payload.get("until_cancelled"):
        deadline = time.monotonic() + 120
        while not job.cancel_requested():
            if time.monotonic() > deadline:
                raise RuntimeError("fx: no cancel request within 120 s")
            time.sleep(0.01)
        raise RuntimeError(f"fx: cancel seen (worker {_worker_id})")
    _wait_gate(job)
    _raise_if_asked(job)
    _ledger(
        "INSERT INTO fx_effects (job_id, attempt, worker)"
        " SELECT %(id)s, %(a)s, %(w)s WHERE NOT EXISTS (SELECT FROM fx_effects"
        " WHERE job_id = %(id)s AND attempt = %(a)s AND worker = %(w)s)",
        {"id": job.id, "a": job.attempts, "w": _worker_id},
    )


_aconn: psycopg.AsyncConnection[Any] | None = None


async def _aledger(query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """:func:`_ledger` on the event loop: one autocommit connection shared by the loop's jobs
    (psycopg runs their statements one at a time), reopened after a loss."""
    global _aconn
    deadline = time.monotonic() + 120
    while True:
        try:
            if _aconn is None or _aconn.closed or _aconn.broken:
                _aconn = await psycopg.AsyncConnection.connect(
                    _dsn, autocommit=True, application_name="fx-ledger"
                )
            cur = await _aconn.execute(query, params)
            return await cur.fetchall() if cur.description else []
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            _aconn = None
            await asyncio.sleep(0.05)


async def _astart(job: Job, backend_pid: int | None) -> None:
    await _aledger(
        "INSERT INTO fx_ledger (job_id, attempt, worker, event, backend_pid, os_pid)"
        " VALUES (%(id)s, %(a)s, %(w)s, 'start', %(bp)s, %(pid)s) ON CONFLICT DO NOTHING",
        {"id": job.id, "a": job.attempts, "w": _worker_id, "bp": backend_pid, "pid": os.getpid()},
    )


async def _await_gate(job: Job) -> None:
    gate = job.payload.get("gate")
    if not gate:
        return
    names = [gate, f"{gate}/{job.attempts}"]
    while True:
        rows = await _aledger(
            "SELECT count(*) FROM fx_gate WHERE name = ANY(%(n)s) AND NOT open", {"n": names}
        )
        if rows[0][0] == 0:
            return
        await asyncio.sleep(0.02)


async def _amisbehave(job: Job) -> None:
    if job.payload.get("exit"):
        sys.stdout.flush()
        os._exit(EXIT_POISON)
    if job.payload.get("sleep"):
        await asyncio.sleep(float(job.payload["sleep"]))


async def ahandle_fx(job: Job, conn: psycopg.AsyncConnection[Any]) -> None:
    """:func:`handle_fx`, ``async def``: the effect commits with the completion, or not at all."""
    await _astart(job, conn.info.backend_pid)
    await _amisbehave(job)
    after = bool(job.payload.get("gate_after_effect"))
    if not after:
        await _await_gate(job)
        _raise_if_asked(job)
    await conn.execute(
        "INSERT INTO fx_effects (job_id, attempt, worker) VALUES (%(id)s, %(a)s, %(w)s)",
        {"id": job.id, "a": job.attempts, "w": _worker_id},
    )
    if after:
        await _await_gate(job)
        _raise_if_asked(job)


async def ahandle_fx_plain(job: Job) -> None:
    """:func:`handle_fx_plain`, ``async def``."""
    await _astart(job, None)
    await _amisbehave(job)
    await _await_gate(job)
    _raise_if_asked(job)
    await _aledger(
        "INSERT INTO fx_effects (job_id, attempt, worker)"
        " SELECT %(id)s, %(a)s, %(w)s WHERE NOT EXISTS (SELECT FROM fx_effects"
        " WHERE job_id = %(id)s AND attempt = %(a)s AND worker = %(w)s)",
        {"id": job.id, "a": job.attempts, "w": _worker_id},
    )


def main(argv: list[str] | None = None) -> int:
    global _dsn, _worker_id
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker-id", required=True)
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--queue", action="append", dest="queues")
    p.add_argument("--lock-timeout", type=float, default=60.0)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--prefetch", type=int)
    p.add_argument("--poll-interval", type=float, default=0.2)
    p.add_argument("--shutdown-grace", type=float, default=60.0)
    p.add_argument("--retry-backoff", type=float, default=0.05)
    p.add_argument("--burst", action="store_true")
    p.add_argument("--with-async", action="store_true", help="also the afx, afx_plain handlers")
    p.add_argument("--log-level", default="WARNING")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format=f"%(asctime)s {args.worker_id} %(threadName)s %(levelname)s %(name)s: %(message)s",
    )
    # `kill -USR1` dumps every thread's stack to the log: the harness does it when a wait
    # times out, so a hung worker explains itself in the test's failure message.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    _dsn = os.environ["JOBQ_DSN"]
    _worker_id = args.worker_id
    handlers: dict[str, Any] = {"fx": handle_fx, "fx_plain": handle_fx_plain}
    if args.with_async:
        handlers.update(afx=ahandle_fx, afx_plain=ahandle_fx_plain)
    worker = Worker(
        _dsn,
        handlers=handlers,
        concurrency=args.concurrency,
        queues=args.queues,
        lock_timeout=args.lock_timeout,
        batch_size=args.batch_size,
        prefetch=args.prefetch,
        poll_interval=args.poll_interval,
        shutdown_grace=args.shutdown_grace,
        retry_backoff=args.retry_backoff,
        worker_id=args.worker_id,
    )
    print(f"fx worker {args.worker_id} pid {os.getpid()} running", flush=True)
    worker.run(burst=args.burst)
    print(f"fx worker {args.worker_id} stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
