"""jobq: a PostgreSQL job queue whose logic lives in SQL, with this thin psycopg 3 client.

from pgq_client import Queue, Worker
Queue(dsn).enqueue("ocr", {"rev": 1})
Worker(dsn, handlers={"ocr": handle_ocr}).run()
"""

from .errors import (
    ConnectionFailed,
    IncompatibleSchema,
    InvalidArgument,
    JobqError,
    NotMigrated,
    NullValue,
    PayloadTooLarge,
    PermanentError,
    PermissionDenied,
    Retry,
    SerializationFailure,
)
from .models import Fire, Job, Schedule, StatsRow
from .queue import Queue
from .worker import Worker

__all__ = [
    "ConnectionFailed",
    "Fire",
    "IncompatibleSchema",
    "InvalidArgument",
    "Job",
    "JobqError",
    "NotMigrated",
    "NullValue",
    "PayloadTooLarge",
    "PermanentError",
    "PermissionDenied",
    "Queue",
    "Retry",
    "Schedule",
    "SerializationFailure",
    "StatsRow",
    "Worker",
]
