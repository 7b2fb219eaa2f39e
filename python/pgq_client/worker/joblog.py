"""The Worker's log: one logger, and every line about a job names it the same way."""

from __future__ import annotations

import logging
from datetime import timedelta

from psycopg.conninfo import conninfo_to_dict

from ..models import Job

__all__ = ["database_name", "duration", "job_log", "log"]

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
