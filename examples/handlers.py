"""Job handlers to copy: ``jobq worker examples.handlers:HANDLERS`` runs them.

A handler takes the job (``pgq_client.Job``: ``id``, ``job_type``, ``payload``, ``attempts``,
...). Returning completes the job; raising fails it and it is retried later with a growing
delay; raising ``PermanentError`` fails it at once, without retry (status ``failed``).

A handler that takes two parameters, ``(job, conn)``, runs inside a transaction on ``conn``
and the worker completes the job in that same transaction: the handler's writes and the
completion commit together or not at all (see ``record_signup``).

Copy this file into your project (say ``myapp/jobs.py``), replace the bodies with your work,
and run ``jobq worker myapp.jobs:HANDLERS``.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from pgq_client import Job, PermanentError

log = logging.getLogger(__name__)


def send_email(job: Job) -> None:
    """Payload: ``{"to": "a@example.com", "subject": "..."}``."""
    to = job.payload.get("to")
    if not isinstance(to, str) or "@" not in to:
        # Retrying cannot fix a bad address: fail now, no retry.
        raise PermanentError(f"not an e-mail address: {to!r}")
    log.info(
        "would send %r to %s (job %s, attempt %d)",
        job.payload.get("subject"),
        to,
        job.id,
        job.attempts,
    )


def thumbnail(job: Job) -> None:
    """Payload: ``{"image": "cat.png"}``."""
    image = job.payload.get("image")
    if not image:
        raise PermanentError("payload has no 'image'")
    log.info("would make a thumbnail of %s (job %s)", image, job.id)


def ocr(job: Job) -> None:
    """Payload: ``{"rev": 1}``."""
    log.info("would read revision %s (job %s)", job.payload.get("rev"), job.id)


def record_signup(job: Job, conn: psycopg.Connection[Any]) -> None:
    """Transactional completion: this write and the job's completion commit together."""
    conn.execute("CREATE TABLE IF NOT EXISTS example_signups (email text PRIMARY KEY, job_id uuid)")
    conn.execute(
        "INSERT INTO example_signups (email, job_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (job.payload["email"], job.id),
    )


HANDLERS = {
    "send_email": send_email,
    "thumbnail": thumbnail,
    "ocr": ocr,
    "record_signup": record_signup,
}
