"""The levels of ``jobq grant``, defined once.

Which functions a level gets is declared by each function's file (``--! levels:``); the names,
their order (narrowest first), what each is for and the tables an admin may read are declared
here, and the CLI's choices and help, the files' check and the SQL of the grants derive from it.
"""

from __future__ import annotations

from typing import Literal, get_args

Level = Literal["producer", "worker", "monitor", "admin"]

# Narrowest first: a function granted to several of a role's levels is logged for the first.
LEVELS: tuple[Level, ...] = get_args(Level)

LEVEL_HELP: dict[Level, str] = {
    "producer": "enqueue",
    "worker": "+ claim and acknowledge",
    "monitor": "stats and health, read-only",
    "admin": "every public function and SELECT on the tables",
}

# The tables an admin may read (SELECT on those installed).
ADMIN_TABLES = (
    "jobq_jobs", "jobq_jobs_history", "jobq_all_jobs", "jobq_retention", "jobq_settings",
    "jobq_migrations", "jobq_schedules", "jobq_workers", "jobq_limits", "jobq_limit_keys",
    "jobq_limit_starts", "jobq_metric_counters", "jobq_metric_deltas", "jobq_awaits",
    "jobq_cancel_requests", "jobq_metric_labels", "jobq_paused_queues", "jobq_job_dependencies",
    "jobq_audit", "jobq_index_rebuilds",
)


def help_text() -> str:
    """The help of ``jobq grant --as``: each level and what it is for."""
    return "; ".join(f"{level}: {LEVEL_HELP[level]}" for level in LEVELS) + "."
