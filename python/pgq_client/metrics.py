"""Prometheus exposition of ``jobq_metrics()``: ``jobq metrics`` and ``jobq metrics --serve``.

The numbers are kept by the database (see docs/metrics.md); this module only turns the rows of
``jobq_metrics()`` into metric families, through ``prometheus_client``: a custom
:class:`JobqCollector` reads the function on every scrape, so nothing is cached or counted in
the process, and any number of exporters (or none) see the same values.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from .errors import JobqError
from .models import MetricSample

__all__ = [
    "HELP",
    "JobqCollector",
    "ListenAddress",
    "families",
    "parse_listen_address",
    "render",
]

log = logging.getLogger(__name__)

# The help text of each metric jobq_metrics() returns (names without _total, _bucket, ...).
HELP = {
    "jobq_enqueued": "Jobs added (an existing idempotency key adds none).",
    "jobq_started": "Claims of pending jobs (attempts started).",
    "jobq_succeeded": "Jobs completed.",
    "jobq_failed": "Failed attempts reported by jobq_fail and jobq_fail_many.",
    "jobq_dead_lettered": "Jobs that went to dead_letter.",
    "jobq_cancelled": "Jobs that went to cancelled.",
    "jobq_lock_expired": "Claims taken back because their lock expired (worker presumed dead).",
    "jobq_released": "Claims given back unstarted (jobq_release, jobq_release_orphans).",
    "jobq_requeued": "Finished jobs made pending again (jobq_requeue_dead_letter(s)).",
    "jobq_jobs": "Jobs present, per queue and status.",
    "jobq_oldest_available_age_seconds": "Age of the oldest job available now, per queue.",
    "jobq_metrics_counting": "1 while the jobq functions count for these metrics, 0 while off "
    "(counters, histograms and jobq_jobs then stand still).",
    "jobq_wait_seconds": "Time from available_at to the claim.",
    "jobq_run_seconds": "Time from the claim to completion or failure.",
    "jobq_up": "1 if jobq_metrics() could be read on this scrape, else 0.",
}

def families(samples: Sequence[MetricSample]) -> list[Metric]:
    """The metric families of ``jobq_metrics()`` rows: names ending in ``_total`` are counters,
    a name with ``_bucket`` rows (label ``le``) is a histogram with its ``_sum`` and ``_count``,
    anything else a gauge. Label names come from the rows (queue, job_type, status)."""
    histograms = {s.metric[: -len("_bucket")] for s in samples if s.metric.endswith("_bucket")}
    out: dict[str, Any] = {}
    # histogram name -> label values -> (buckets, [sum])
    series: dict[str, dict[tuple[str, ...], tuple[list[tuple[str, float]], list[float]]]] = {}
    for s in samples:
        base, _, part = s.metric.rpartition("_")
        names = sorted(k for k in s.labels if k != "le")
        values = tuple(s.labels[k] for k in names)
        kind: Any = GaugeMetricFamily
        name = s.metric
        if base in histograms and part in ("bucket", "sum", "count"):
            kind, name = HistogramMetricFamily, base
            buckets, total = series.setdefault(base, {}).setdefault(values, ([], [0.0]))
            if part == "bucket":
                buckets.append((s.labels["le"], s.value))
            elif part == "sum":
                total[0] = s.value
        elif part == "total":
            kind, name = CounterMetricFamily, base
        if name not in out:
            out[name] = kind(name, HELP.get(name, name), labels=names)
        if kind is not HistogramMetricFamily:
            out[name].add_metric(list(values), s.value)
    for base, by_labels in series.items():
        for values, (buckets, total) in by_labels.items():
            out[base].add_metric(list(values), buckets=buckets, sum_value=total[0])
    return [out[name] for name in sorted(out)]


class JobqCollector(Collector):
    """Reads ``jobq_metrics()`` on every collection (every scrape). ``read`` returns the rows
    (``Queue.metrics``); when it fails, the scrape still answers, with ``jobq_up 0`` and the
    error logged, so that an alert can tell "the database cannot be read" from "no jobs"."""

    def __init__(self, read: Callable[[], Sequence[MetricSample]]) -> None:
        self._read = read
        self._lock = threading.Lock()  # scrapes may come in parallel: one read at a time

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("jobq_up", HELP["jobq_up"])
        with self._lock:
            try:
                samples = self._read()
            except JobqError as exc:
                log.warning("jobq metrics: cannot read jobq_metrics(): %s", exc)
                up.add_metric([], 0.0)
                yield up
                return
        up.add_metric([], 1.0)
        yield up
        yield from families(samples)


def render(samples: Sequence[MetricSample]) -> str:
    """The Prometheus text format of these samples (what ``jobq metrics`` prints)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JobqCollector(lambda: samples))
    return generate_latest(registry).decode("utf-8")


@dataclass(frozen=True)
class ListenAddress:
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_listen_address(text: str) -> ListenAddress:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; ``:PORT`` for every interface); raises
    ValueError saying what is wrong."""
    value = text.strip()
    host, sep, port_text = value.rpartition(":")
    if not sep:
        raise ValueError(f"{text!r} has no port: give HOST:PORT, e.g. 127.0.0.1:9187")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r}: write an IPv6 address in brackets, e.g. [::1]:9187")
    if not port_text.isdigit():
        raise ValueError(f"{text!r}: the port must be a number, got {port_text!r}")
    port = int(port_text)
    if port > 65535:
        raise ValueError(f"{text!r}: the port must be 0..65535, got {port}")
    return ListenAddress(host or "0.0.0.0", port)
