"""jobq: a PostgreSQL job queue whose logic lives in SQL, with this thin psycopg 3 client.

from pgq_client import AsyncQueue, Queue, Worker
Queue(dsn).enqueue("ocr", {"rev": 1})
await AsyncQueue(dsn).enqueue("ocr", {"rev": 1})        # in asyncio code
Worker(dsn, handlers={"ocr": handle_ocr}).run()         # def or async def handlers
"""

from ._sql import connect_kwargs
from .async_queue import AsyncQueue
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
from .models import (
    JOB_ACTIONS,
    BulkSummary,
    Dependency,
    Fire,
    FoundJobs,
    GraphNode,
    HealthRow,
    Job,
    JobsPage,
    JobStatus,
    Limit,
    LimitUsage,
    MetricSample,
    RefusedBatch,
    Schedule,
    StatsRow,
)
from .queue import Queue
from .worker import Worker

__all__ = [
    "JOB_ACTIONS", "AsyncQueue", "BulkSummary", "ConnectionFailed", "Dependency", "Fire",
    "FoundJobs", "GraphNode", "HealthRow",
    "IncompatibleSchema", "InvalidArgument", "Job", "JobFailed", "JobNotFound", "JobStatus",
    "JobqError", "JobsPage", "Limit", "LimitUsage", "MetricSample", "NotMigrated", "NullValue",
    "PayloadTooLarge",
    "PermanentError", "PermissionDenied", "Queue", "RefusedBatch", "Retry", "Schedule",
    "SerializationFailure", "StatsRow", "Worker", "connect_kwargs",
]
