"""Where scenario 18's wide drains wait.

``python -m bench.fan_in_waits DSN [fan_in|fan_out|layers] [N]`` (N: 10,000 by default).

Enqueues the shape (fan-in N→1, fan-out 1→N, or 20 layers of N/20 whose jobs wait for two of
the layer above) in one ``jobq_enqueue_many`` on the database ``DSN`` (jobq installed, and the
``pg_stat_statements`` extension; a throwaway cluster started with it in
``shared_preload_libraries``, ``pg_stat_statements.track=all`` and ``track_functions=all``),
drains it as scenario 18 does (8 sessions, ``jobq_dequeue`` of up to 10 then
``jobq_complete_many``, two transactions) while another session samples the 8 sessions'
``pg_stat_activity`` wait events about every millisecond, and prints the share of samples per
wait event, statements and shared buffers per job, and the time per call of the release
functions. Wait shares and times depend on the machine's load; statements and buffers do not.
Start the cluster with ``fsync=on synchronous_commit=on`` to see the commits' flushes.
"""

from __future__ import annotations

import collections
import sys
import threading
import time
from typing import Any

import psycopg
from psycopg.types.json import Jsonb


def _elements(shape: str, n: int) -> list[dict[str, Any]]:
    if shape == "fan_in":
        return [{"job_type": "step"}] * n + [{"job_type": "step", "after": list(range(1, n + 1))}]
    if shape == "fan_out":
        return [{"job_type": "step"}] + [{"job_type": "step", "after": [1]}] * n
    width = n // 20
    elements: list[dict[str, Any]] = []
    for i in range(width * 20):
        layer, k = divmod(i, width)
        above = (layer - 1) * width
        after = sorted({above + k + 1, above + (k + 1) % width + 1}) if layer else []
        elements.append({"job_type": "step", **({"after": after} if after else {})})
    return elements


def main(dsn: str, shape: str = "fan_in", n: int = 10_000) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("TRUNCATE jobq_jobs, jobq_jobs_history, jobq_job_dependencies")
        elements = _elements(shape, n)
        total = len(elements)
        conn.execute("SELECT count(*) FROM jobq_enqueue_many(%s::jsonb)", (Jsonb(elements),))
        conn.execute("VACUUM ANALYZE jobq_jobs")
        conn.execute("VACUUM ANALYZE jobq_job_dependencies")
        conn.execute("SELECT pg_stat_statements_reset()")
        conn.execute("SELECT pg_stat_reset()")
        pids: list[int] = []
        done = [0]
        lock = threading.Lock()
        stop = threading.Event()
        samples: collections.Counter[str] = collections.Counter()

        def drain(i: int) -> None:
            with psycopg.connect(dsn, autocommit=True) as w:
                with lock:
                    pids.append(w.info.backend_pid)
                while True:
                    ids = [r[0] for r in w.execute(
                        "SELECT id FROM jobq_dequeue(%s, NULL, 10)", (f"w{i}",)).fetchall()]
                    if ids:
                        w.execute("SELECT jobq_complete_many(%s, %s)", (ids, f"w{i}"))
                        with lock:
                            done[0] += len(ids)
                        continue
                    with lock:
                        if done[0] >= total:
                            return
                    time.sleep(0.002)  # a dependent is released by another session's commit

        def sample() -> None:
            with psycopg.connect(dsn, autocommit=True) as s:
                while not stop.is_set():
                    for state, kind, event in s.execute(
                        "SELECT state, wait_event_type, wait_event FROM pg_stat_activity"
                        " WHERE pid = ANY(%s)", (pids,)
                    ).fetchall():
                        if state != "active":
                            samples["between statements"] += 1
                        else:
                            samples[f"{kind}: {event}" if kind else "running"] += 1
                    time.sleep(0.001)

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(8)]
        started = time.monotonic()
        for t in threads:
            t.start()
        sampler = threading.Thread(target=sample)
        sampler.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        stop.set()
        sampler.join()
        print(f"{shape}: {total:,} jobs in {elapsed:.1f} s ({total / elapsed:,.0f} jobs/s)")
        count = sum(samples.values()) or 1
        for name, k in samples.most_common(10):
            print(f"  {name:32} {100 * k / count:5.1f} % of samples")
        calls, buffers, top = conn.execute(
            "SELECT sum(calls), sum(shared_blks_hit + shared_blks_read),"
            " sum(calls) FILTER (WHERE toplevel) FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchone() or (0, 0, 0)
        print(f"  per job: {calls / total:.2f} statements ({top / total:.2f} top-level),"
              f" {buffers / total:.1f} shared buffers")
        for name, k, ms in conn.execute(
            "SELECT funcname, calls, total_time / nullif(calls, 0) FROM pg_stat_user_functions"
            " WHERE funcname IN ('jobq__dependents_finished', 'jobq__dependents_probe',"
            " 'jobq_complete_many') ORDER BY funcname"
        ).fetchall():
            print(f"  {name}: {k} calls, {ms or 0:.2f} ms a call")


if __name__ == "__main__":
    main(sys.argv[1], *sys.argv[2:3], *(int(a) for a in sys.argv[3:4]))
