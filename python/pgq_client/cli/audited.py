"""The single-job commands an operator runs (``jobq cancel``, ``jobq jobs retry``,
``jobq dead-letter requeue ID``), recorded in the audit log as the commands on many jobs are:
through ``jobq_act_on_jobs``, the dashboard's own path."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from .base import settings

_ACT = {"jobq_act_on_jobs": "(text, uuid[], text)"}


def cancel(job_ids: Sequence[uuid.UUID], reason: str | None) -> dict[uuid.UUID, str]:
    """Each known job's status after the cancel, as ``jobq_cancel`` answers it. A role that
    may not call ``jobq_act_on_jobs`` (a producer or worker, which cancels its own jobs)
    calls ``jobq_cancel``, which writes no audit row."""
    with settings().queue() as q:
        _, allowed = q.function_privileges(_ACT)
        if not allowed["jobq_act_on_jobs"]:
            return q.cancel(job_ids, reason)
        outcomes = q.act_on_jobs("cancel", job_ids, reason)
    return {i: o.removeprefix("left alone: ") for i, o in outcomes.items() if o != "unknown"}


def requeue(job_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, bool]:
    """Whether each job (once, in the order given) was requeued (admin)."""
    with settings().queue() as q:
        outcomes = q.act_on_jobs("requeue", job_ids, None)
    return {i: o == "requeued" for i, o in outcomes.items()}
