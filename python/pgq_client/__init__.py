"""jobq: a PostgreSQL job queue whose logic lives in SQL, with this thin psycopg 3 client.

from pgq_client import Queue, Worker
Queue(dsn).enqueue("ocr", {"rev": 1})
Worker(dsn, handlers={"ocr": handle_ocr}).run()
"""

from .errors import (
    ConnectionFailed,
    IncompatibleSchema,
    InvalidArgument,
    JobFailed,
    JobNotFound,
    JobqError,
    NotMigrated,
    NullValue,
    PayloadTooLarge,
    PermanentError,
    PermissionDenied,
    Retry,
    SerializationFailure,
)
from .models import Fire, Job, JobStatus, Schedule, StatsRow
from .queue import Queue
from .worker import Worker

__all__ = [
    "ConnectionFailed",
    "Fire",
    "IncompatibleSchema",
    "InvalidArgument",
    "Job",
    "JobFailed",
    "JobNotFound",
    "JobStatus",
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
