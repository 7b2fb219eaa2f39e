"""``python -m bench.run [--quick] [--json PATH]``: the jobq benchmark (see docs/performance.md).

Starts a throwaway PostgreSQL cluster with durable settings (fsync, synchronous_commit and
full_page_writes on), runs every scenario beside its raw-SQL ceiling, prints a table with the
ratio of each jobq figure to its ceiling and PASS/MISS per target, writes JSON, and stops the
cluster.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import pressure, worker_chain, workflows
from .cluster import ROOT, SETTINGS, Cluster
from .harness import Measurement, Target
from .scenarios import Bench, Config

DEFAULT_JSON = ROOT / "bench" / "results" / "latest.json"
SCENARIOS = (
    "1", "2", "3", "4", "5", "6", "7", "8", "9", "11", "12", "13", "14", "15", "16", "17", "18",
    "19", "20", "21",
)
BUSY_LOAD = 0.7  # 1-minute load average per core above which the machine counts as busy


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 1024**2, 1)
                break
    except OSError:
        pass
    return info


def compute_ratios(results: list[Measurement]) -> None:
    by_key = {m.key: m for m in results}
    for m in results:
        base = by_key.get(m.ceiling or "")
        if base is not None and base.value and not math.isnan(base.value):
            m.ratio = m.value / base.value


def targets(results: list[Measurement]) -> list[Target]:
    by_key = {m.key: m for m in results}

    def ratio(key: str) -> float | None:
        m = by_key.get(key)
        return None if m is None else m.ratio

    def value(key: str) -> float | None:
        m = by_key.get(key)
        return None if m is None else m.value

    def versus(key: str, base: str) -> float | None:  # against another than its ceiling
        m, b = by_key.get(key), by_key.get(base)
        return None if m is None or b is None or not b.value else m.value / b.value

    def extra(key: str, name: str) -> float | None:
        m = by_key.get(key)
        return None if m is None or name not in m.extra else float(m.extra[name])

    out = [
        Target("single enqueue, SQL >= 0.9x plain INSERT", ratio("s1.jobq.py"), ">=", 0.9),
        Target("single enqueue, Queue.enqueue >= 0.9x plain INSERT", ratio("s1.jobq.queue"),
               ">=", 0.9),
        Target("enqueue_many, SQL >= 0.8x multi-row INSERT", ratio("s2.jobq.py"), ">=", 0.8),
        Target("enqueue_many, Queue.enqueue_many >= 0.8x multi-row INSERT",
               ratio("s2.jobq.queue"), ">=", 0.8),
        Target("SQL drain b10 >= 0.8x raw SQL b10", ratio("s3.jobq.py.b10"), ">=", 0.8),
        Target("SQL drain b100 >= 0.8x raw SQL b100", ratio("s3.jobq.py.b100"), ">=", 0.8),
        Target("Worker drain >= 0.5x pgbench b10 ceiling", ratio("s3.jobq.worker"), ">=", 0.5),
    ]
    raw_p50 = extra("s4.raw.py", "p50")
    out += [
        Target("idle latency p50 (ms) <= raw LISTEN/NOTIFY p50", extra("s4.jobq.worker", "p50"),
               "<=", raw_p50 if raw_p50 is not None else float("nan"),
               detail="threshold = raw p50 of this run"),
        Target("idle latency p99 (ms) <= 10 ms", extra("s4.jobq.worker", "p99"), "<=", 10.0),
        Target("1M finished + 100k future: SQL drain b10 >= 0.9x scenario 3",
               ratio("s5.jobq.py.b10"), ">=", 0.9),
        Target("1M finished + 100k future: SQL drain b100 >= 0.9x scenario 3",
               ratio("s5.jobq.py.b100"), ">=", 0.9),
        Target("1M finished + 100k future: Worker drain >= 0.9x scenario 3",
               ratio("s5.jobq.worker"), ">=", 0.9),
        Target("1M pending of another type: Worker drain >= 0.9x scenario 3",
               ratio("s7.jobq.worker.types"), ">=", 0.9),
        Target("1M pending in another queue: Worker drain >= 0.9x scenario 3",
               ratio("s7.jobq.worker.queues"), ">=", 0.9),
        Target("1M scheduled a year ahead: SQL drain b10 >= 0.9x scenario 3",
               ratio("s8.jobq.py.b10"), ">=", 0.9),
        Target("1M scheduled a year ahead: SQL drain b100 >= 0.9x scenario 3",
               ratio("s8.jobq.py.b100"), ">=", 0.9),
        Target("1M scheduled a year ahead: Worker drain >= 0.9x scenario 3",
               ratio("s8.jobq.worker"), ">=", 0.9),
        Target("a paused queue beside: SQL drain b10 >= 0.95x none paused",
               ratio("s20.jobq.py.b10.paused"), ">=", 0.95),
        Target("a paused queue beside: SQL drain b100 >= 0.95x none paused",
               ratio("s20.jobq.py.b100.paused"), ">=", 0.95),
        Target("pruning 1M beside: SQL drain b10 >= 0.8x scenario 3",
               ratio("s9.jobq.py.b10"), ">=", 0.8),
        Target("pruning 1M beside: SQL drain b100 >= 0.8x scenario 3",
               ratio("s9.jobq.py.b100"), ">=", 0.8),
        Target("pruning 1M beside: Worker drain >= 0.8x scenario 3",
               ratio("s9.jobq.worker"), ">=", 0.8),
        Target("AsyncQueue.enqueue >= 0.9x jobq_enqueue on an AsyncConnection",
               ratio("s11.jobq.aqueue"), ">=", 0.9),
        Target("async def handlers: Worker drain >= 0.8x def handlers",
               ratio("s11.jobq.worker.async"), ">=", 0.8),
        # Against what the keys' turnover can reach in bare SQL, not the unlimited drain: a
        # serial key needs a durable commit per job, whoever enforces the limit.
        Target("50 keys x max_running 2: Worker drain >= 0.75x s12.raw.chain.k50r2",
               versus("s12.jobq.worker.k50r2", "s12.raw.chain.k50r2"), ">=", 0.75),
        Target("8 keys x max_running 1: Worker drain >= 0.7x s13.raw.chain.k8r1",
               versus("s13.jobq.worker.k8r1", "s13.raw.chain.k8r1"), ">=", 0.7),
        Target("100,000 keys round_robin, no cap: Worker drain >= 0.8x unlimited",
               ratio("s19.jobq.worker.rr100000"), ">=", 0.8),
        Target("1 key x 1,000 starts/s: Worker drain >= 0.95x the limit",
               ratio("s14.jobq.worker.rate1000"), ">=", 0.95),
        Target("1 key x 1,000 starts/s: Worker drain <= 1.05x the limit",
               ratio("s14.jobq.worker.rate1000"), "<=", 1.05),
        Target("Queue.enqueue >= 0.95x jobq_enqueue from bare psycopg (prepared)",
               ratio("s15.jobq.queue"), ">=", 0.95),
        Target("jobq_enqueue_arrays x1000 >= 1.0x multi-row INSERT",
               ratio("s15.jobq.py.arrays"), ">=", 1.0),
        Target("Queue.enqueue_many x1000 >= 1.0x multi-row INSERT",
               ratio("s15.jobq.queue.many"), ">=", 1.0),
        Target("bulk load: Queue.enqueue_iter >= 70,000 jobs/s (1M in < 15 s)",
               value("s16.jobq.queue.iter"), ">=", 70_000.0),
        Target("bulk load: jobq enqueue --from >= 70,000 jobs/s",
               value("s16.jobq.cli"), ">=", 70_000.0),
        Target("held snapshot: Worker completions during it >= 0.7x the offered rate",
               extra("s17.jobq.hold", "ratio_to_offered"), ">=", 0.7),
        *(Target(f"workflow {shape}: jobq >= 0.5x its bare-SQL ceiling",
                 ratio(f"s18.{key}"), ">=", 0.5)
          for key, shape in (("fan_out", "fan-out"), ("fan_in", "fan-in"),
                             ("layers", "20 layers"), ("chain", "chain"))),
        Target("chain: the Worker >= 0.5x the bare-SQL chain", ratio("s21.jobq.worker.chain"),
               ">=", 0.5),
    ]
    return out


def render(results: list[Measurement], goals: list[Target]) -> str:
    lines = []
    head = f"{'sc':<3}{'measurement':<58}{'jobs':>8}{'result':>22}{'vs':>22}{'ratio':>8}"
    lines += [head, "-" * len(head)]
    scenario = None
    for m in results:
        if scenario is not None and m.scenario != scenario:
            lines.append("")
        scenario = m.scenario
        if m.unit == "ms":
            result = (f"p50 {m.extra.get('p50', float('nan')):.2f} "
                      f"p99 {m.extra.get('p99', float('nan')):.2f} ms")
        elif m.unit == "s/M rows":
            result = f"{m.value:,.1f} s per 1M rows"
        else:
            result = f"{m.value:,.0f} jobs/s"
        ratio = "" if m.ratio is None else f"{m.ratio:.2f}x"
        lines.append(f"{m.scenario:<3}{m.label[:57]:<58}{m.jobs:>8}{result:>22}"
                     f"{(m.ceiling or '(ceiling)'):>22}{ratio:>8}")
        if m.unit == "ms":
            tail = f"p95 {m.extra.get('p95', 0):.2f} max {m.extra.get('max', 0):.2f} ms"
            lines.append(f"{'':<3}{'':<58}{'':>8}{tail:>22}")
        if m.note:
            lines.append(f"{'':<3}  note: {m.note}")
    lines += ["", "targets:"]
    for g in goals:
        measured = "n/a" if g.measured is None else f"{g.measured:.2f}"
        lines.append(f"  {g.status:<5} {g.name:<64} {measured:>8} {g.op} {g.threshold:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller counts, about a minute")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"default {DEFAULT_JSON}")
    parser.add_argument("--repeat", type=int, default=None,
                        help="runs per measurement, median kept (default 3, quick 1)")
    parser.add_argument("--only", default=",".join(SCENARIOS),
                        help="comma-separated scenarios to run (default all)")
    parser.add_argument("--metrics", choices=("on", "off"), default=None,
                        help="counting for jobq_metrics() on or off (default: the "
                        "installation's default, off)")
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    config = Config.make(args.quick, args.repeat)
    # The retry scenario makes handlers fail on purpose: keep the worker's per-job warnings
    # (with tracebacks) out of the report. Errors still show.
    logging.getLogger("pgq_client").setLevel(logging.ERROR)

    load_before = os.getloadavg()
    started = time.time()
    log(f"starting a throwaway PostgreSQL ({', '.join(f'{k}={v}' for k, v in SETTINGS.items())})")
    metrics = None if args.metrics is None else args.metrics == "on"
    with Cluster(metrics=metrics) as cluster, \
            tempfile.TemporaryDirectory(prefix="jobq-pgbench.") as scripts:
        log(f"PostgreSQL {cluster.settings['server_version']} on port {cluster.port}, "
            f"fsync={cluster.settings['fsync']} "
            f"synchronous_commit={cluster.settings['synchronous_commit']} "
            f"full_page_writes={cluster.settings['full_page_writes']}")
        bench = Bench(cluster, config, Path(scripts), log)
        steps: dict[str, Callable[[], None]] = {
            "1": bench.scenario_single,
            "2": bench.scenario_many,
            "3": bench.scenario_drain,
            "4": bench.scenario_latency,
            "5": bench.scenario_big_table,
            "6": bench.scenario_retry,
            "7": bench.scenario_other_types_and_queues,
            "8": bench.scenario_scheduled_ahead,
            "9": bench.scenario_prune_beside,
            "11": bench.scenario_async,
            "12": bench.scenario_limits_wide,
            "13": bench.scenario_limits_serial,
            "14": bench.scenario_limits_rate,
            "15": bench.scenario_producer,
            "16": bench.scenario_bulk,
            "17": lambda: bench.results.extend(pressure.scenario(cluster, config.quick, log)),
            "18": lambda: bench.results.extend(workflows.scenario(cluster, config.quick, log)),
            "19": bench.scenario_fair_wide,
            "20": bench.scenario_pause,
            "21": lambda: bench.results.extend(
                worker_chain.scenario(cluster, config.quick, config.concurrency, log)
            ),
        }
        for s in SCENARIOS:
            if s in only:
                steps[s]()
        settings = dict(cluster.settings)
    load_after = os.getloadavg()
    elapsed = time.time() - started

    results = bench.results
    compute_ratios(results)
    goals = targets(results)
    cpus = os.cpu_count() or 1
    busy = max(load_before[0], load_after[0]) / cpus > BUSY_LOAD
    print(render(results, goals))
    print(f"\n{'quick' if config.quick else 'full'} run, {elapsed:.0f} s, load average "
          f"{load_before[0]:.2f} before / {load_after[0]:.2f} after on {cpus} CPUs"
          + (" -- machine busy, figures are noisy" if busy else ""))

    report = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": "quick" if config.quick else "full",
        "elapsed_seconds": round(elapsed, 1),
        "config": {k: v for k, v in vars(config).items()},
        "machine": {**machine(), "load_before": load_before, "load_after": load_after,
                    "busy": busy},
        "postgres": settings,
        "jobq_metrics_counting": args.metrics or "default (off)",
        "results": [m.to_json() for m in results],
        "targets": [g.to_json() for g in goals],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    log(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
