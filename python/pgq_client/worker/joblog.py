"""The Worker's log: one logger, and every line about a job names it the same way."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from psycopg.conninfo import conninfo_to_dict

from ..models import Job, UnservedJobType

UNSERVED_IDLE = timedelta(minutes=15)
"""A queue and job type that no worker claimed for this long counts as served by nobody (the
same window as ``jobq doctor``'s default max_pending_age)."""

log = logging.getLogger("pgq_client.worker")


def job_log(
    level: int, job: Job, msg: str, *args: object, exc: BaseException | None = None
) -> None:
    """``job <id> (type <t>, attempt <n>/<max>): <msg>``, with ``job_id``, ``job_type`` and
    ``attempt`` as ``extra`` fields for structured handlers."""
    if log.isEnabledFor(level):
        log.log(
            level,
            "job %s (type %s, attempt %d/%d): " + msg,
            job.id,
            job.job_type,
            job.attempts,
            job.max_attempts,
            *args,
            exc_info=exc,
            extra={"job_id": str(job.id), "job_type": job.job_type, "attempt": job.attempts},
        )


def duration(value: timedelta) -> str:
    """``90s``, ``1.5s``: a backoff as a person reads it."""
    return f"{value.total_seconds():g}s"


def database_name(dsn: str) -> str:
    """``user@host:port/dbname`` of a DSN: what the log may say about it (never a password)."""
    try:
        params = conninfo_to_dict(dsn)
    except Exception:  # its message may quote the DSN, password included
        return "(a DSN that cannot be parsed)"
    host = str(params.get("host") or "localhost")
    port, user, dbname = params.get("port"), params.get("user"), params.get("dbname")
    name = f"{user}@" if user else ""
    name += f"{host}:{port}" if port else host
    return f"{name}/{dbname}" if dbname else name


def report_unserved(who: str, rows: Sequence[UnservedJobType]) -> None:
    """One warning for the available jobs that no worker serves, naming each queue and type."""
    if rows:
        log.warning(
            "%s: jobs waiting for a queue and job type that no worker has asked for in the "
            "last %s (a misspelt job type, or a queue or job type no running worker "
            "handles): %s",
            who,
            f"{UNSERVED_IDLE.total_seconds() / 60:g} minutes",
            "; ".join(row.describe() for row in rows),
        )


def log_completed(who: str, jobs: Sequence[Job], done: int, retried: bool) -> None:
    """Log what a ``jobq_complete_many`` of ``jobs`` that recorded ``done`` of them says."""
    if done < len(jobs):
        log.warning(
            "%s: %d of %d completed jobs were not recorded: their claim was lost (lock "
            "expired, taken over)%s; jobs: %s",
            who,
            len(jobs) - done,
            len(jobs),
            " or already recorded before the connection was lost" if retried else "",
            ", ".join(f"{j.id} ({j.job_type}, attempt {j.attempts})" for j in jobs),
        )
    if log.isEnabledFor(logging.DEBUG):
        for job in jobs:
            job_log(logging.DEBUG, job, "succeeded")
