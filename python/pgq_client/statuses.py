"""Every job status, in the order of a job's life, and whether it is finished.

The one Python definition of the statuses: the client, the CLI and the dashboard take them from
here, and a test compares them with the SQL function ``jobq__statuses()``, the database's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["FINISHED_STATUSES", "STATUSES", "STATUS_IS_FINISHED"]

STATUS_IS_FINISHED: Mapping[str, bool] = MappingProxyType(
    {
        "waiting": False,  # a dependency has not succeeded yet: never claimed
        "pending": False,  # waits (also between retries)
        "processing": False,  # claimed
        "succeeded": True,
        "failed": True,  # a permanent failure the worker asked for
        "dead_letter": True,  # used all its attempts
        "cancelled": True,  # cancelled (jobq_cancel)
    }
)
STATUSES: tuple[str, ...] = tuple(STATUS_IS_FINISHED)
FINISHED_STATUSES: tuple[str, ...] = tuple(s for s, done in STATUS_IS_FINISHED.items() if done)
