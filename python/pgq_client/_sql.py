"""Every SQL statement the client sends, in one place (the catalogue and channel statements
are written in :mod:`pgq_client._catalog` and re-exported here).

The queue statements call only the public ``jobq_*`` functions, schema-qualified, with named
arguments and every parameter cast to its type (the type itself ``pg_catalog``-qualified), so
another language could do the same with the same calls. ``{schema}`` is replaced by
``"<schema>".``; a client given no schema renders :data:`LATE_SCHEMA` there and puts the schema
in once :data:`FIND_SCHEMA` has found it (see :class:`Statements`).

Nothing another role creates can be chosen by these statements (docs/security.md): every
connection jobq opens for its own statements runs with ``search_path = pg_catalog, pg_temp``
(:func:`connect_kwargs`), and the statements that may also run on a connection the application
hands in, which keeps its own search_path, name every function, operator and type
``pg_catalog``-qualified.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from psycopg import sql

from ._catalog import (  # re-exported: every statement the client sends is reached here
    CANCEL_EVENT as CANCEL_EVENT,
)
from ._catalog import (
    CHANNEL as CHANNEL,
)
from ._catalog import (
    CHECK_ALL as CHECK_ALL,
)
from ._catalog import (
    CLIENT_ENCODING as CLIENT_ENCODING,
)
from ._catalog import (
    DONE as DONE,
)
from ._catalog import (
    EVENT_CHANNEL as EVENT_CHANNEL,
)
from ._catalog import (
    FIND_SCHEMA as FIND_SCHEMA,
)
from ._catalog import (
    FUNCTION_PRIVILEGES as FUNCTION_PRIVILEGES,
)
from ._catalog import (
    JOBQ_FUNCTIONS as JOBQ_FUNCTIONS,
)
from ._catalog import (
    JOBQ_TABLES as JOBQ_TABLES,
)
from ._catalog import (
    MIGRATIONS_COMMENT as MIGRATIONS_COMMENT,
)
from ._catalog import (
    NOTIFY_CHANNEL as NOTIFY_CHANNEL,
)
from ._catalog import (
    SCHEMA_EXISTS as SCHEMA_EXISTS,
)
from ._catalog import (
    SCHEMA_HAS_OTHERS as SCHEMA_HAS_OTHERS,
)
from ._catalog import (
    SEARCH_PATH_OPTION as SEARCH_PATH_OPTION,
)
from ._catalog import (
    WAKE_ALL as WAKE_ALL,
)
from ._catalog import (
    channel as channel,
)
from ._catalog import (
    connect_kwargs as connect_kwargs,
)
from ._catalog import (
    event_channel as event_channel,
)
from ._catalog import (
    find_schema as find_schema,
)
from ._catalog import (
    listen as listen,
)
from ._catalog import (
    opened_by_jobq as opened_by_jobq,
)
from ._catalog import (
    schema_of_dsn as schema_of_dsn,
)
from ._catalog import (
    unlisten as unlisten,
)

# A statement of Statements: bytes when its text is ASCII, else an sql.SQL (see _render).
Query = bytes | sql.SQL

# jobq_enqueue's arguments, each as the client passes it. A single enqueue sends only the
# arguments that differ from the function's defaults (Statements.enqueue_with): every parameter
# costs a bind and a coercion in the server and a field in libpq's message, and the usual call
# (a job type and a payload) is then the same two-parameter statement a hand-written client
# would prepare.
ENQUEUE_ARGUMENTS = {
    "job_type": "%(job_type)s::pg_catalog.text",
    "payload": "%(payload)s::pg_catalog.jsonb",
    "idempotency_key": "%(idempotency_key)s::pg_catalog.text",
    "max_attempts": "%(max_attempts)s::pg_catalog.int4",
    "run_at": "%(run_at)s::pg_catalog.timestamptz",
    "priority": "%(priority)s::pg_catalog.int4",
    "queue": "%(queue)s::pg_catalog.text",
    "limit_group": "%(limit_group)s::pg_catalog.text",
    "limit_key": "%(limit_key)s::pg_catalog.text",
}

# The ids of a batch come back as one uuid[] in input order, read in binary (Call.binary):
# parsing a thousand UUIDs from text, a row each, costs more than the array's binary elements.
ENQUEUE_MANY = """
SELECT pg_catalog.array_agg(id ORDER BY ord)
FROM {schema}jobq_enqueue_many(jobs => %(jobs)s::pg_catalog.jsonb)
"""

ENQUEUE_MANY_COUNT = """
SELECT pg_catalog.count(*) FROM {schema}jobq_enqueue_many(jobs => %(jobs)s::pg_catalog.jsonb)
"""

# A batch as one array per column, sent in binary (%b): no quoting or escaping of thousands of
# values in the client, no parsing of numbers and times in the server. The payloads travel as
# one JSON array, encoded in one pass by the client and split in the server, which is faster
# than one JSON text per job; split into ARRAY(... ORDER BY), which is cheaper than an ordered
# array_agg (docs/decisions/0004-one-producer-path.md). A NULL array is the default for every
# job: when no job has a payload the JSON is NULL, its ARRAY() empty, and NULLIF makes that
# NULL (a batch sent is never empty). A job type or queue that every job of the batch has goes once
# (%(job_type)s, %(queue)s), repeated by array_fill in the server, and its list is NULL. The
# arguments are written once, for the statement that returns the ids and the one that counts.
_ENQUEUE_ARRAYS_ARGS = """
    job_types => CASE WHEN %(job_type)s::pg_catalog.text IS NULL
        THEN %(job_types)b::pg_catalog.text[]
        ELSE pg_catalog.array_fill(%(job_type)s::pg_catalog.text, ARRAY[%(jobs)s::pg_catalog.int4])
    END,
    payloads => NULLIF(ARRAY(
        SELECT e.payload
        FROM pg_catalog.jsonb_array_elements(%(payloads)s::pg_catalog.jsonb)
            WITH ORDINALITY AS e (payload, n)
        ORDER BY e.n
    ), '{}'::pg_catalog.jsonb[]),
    idempotency_keys => %(idempotency_keys)b::pg_catalog.text[],
    max_attempts => %(max_attempts)b::pg_catalog.int4[],
    run_ats => %(run_ats)b::pg_catalog.timestamptz[],
    priorities => %(priorities)b::pg_catalog.int4[],
    queues => CASE WHEN %(queue)s::pg_catalog.text IS NULL THEN %(queues)b::pg_catalog.text[]
        ELSE pg_catalog.array_fill(%(queue)s::pg_catalog.text, ARRAY[%(jobs)s::pg_catalog.int4])
    END,
    limit_groups => %(limit_groups)b::pg_catalog.text[],
    limit_keys => %(limit_keys)b::pg_catalog.text[]
"""
ENQUEUE_ARRAYS = (
    "SELECT pg_catalog.array_agg(id ORDER BY ord) FROM {schema}jobq_enqueue_arrays("
    + _ENQUEUE_ARRAYS_ARGS + ")"
)

# The same, for a bulk load that keeps no ids: one row back instead of one per job (parsing
# thousands of UUIDs would cost the client more than the rest of its work on a batch).
ENQUEUE_ARRAYS_COUNT = (
    "SELECT pg_catalog.count(*) FROM {schema}jobq_enqueue_arrays(" + _ENQUEUE_ARRAYS_ARGS + ")"
)

DEQUEUE = """
SELECT * FROM {schema}jobq_dequeue(
    worker_id => %(worker_id)s::pg_catalog.text,
    job_types => %(job_types)s::pg_catalog.text[],
    batch_size => %(batch_size)s::pg_catalog.int4,
    lock_timeout => %(lock_timeout)s::pg_catalog.interval,
    queues => %(queues)s::pg_catalog.text[]
)
"""

COMPLETE = """
SELECT {schema}jobq_complete(
    job_id => %(job_id)s::pg_catalog.uuid,
    worker_id => %(worker_id)s::pg_catalog.text,
    attempt => %(attempt)s::pg_catalog.int4,
    result => %(result)s::pg_catalog.jsonb
) AS completed
"""

# ``attempts`` fences each job by its claim's attempt, ``results`` holds the handlers' return
# values (JSON text, or NULL for none; NULL as a whole when no job has one).
COMPLETE_MANY = """
SELECT {schema}jobq_complete_many(
    job_ids => %(job_ids)s::pg_catalog.uuid[],
    worker_id => %(worker_id)s::pg_catalog.text,
    attempts => %(attempts)s::pg_catalog.int4[],
    results => %(results)s::pg_catalog.jsonb[]
) AS completed
"""

FAIL = """
SELECT {schema}jobq_fail(
    job_id => %(job_id)s::pg_catalog.uuid,
    worker_id => %(worker_id)s::pg_catalog.text,
    error => %(error)s::pg_catalog.text,
    retry => %(retry)s::pg_catalog.bool,
    backoff => %(backoff)s::pg_catalog.interval,
    attempt => %(attempt)s::pg_catalog.int4
) AS status
"""

# Many failures in one statement: one row per job, in input order (status NULL: claim lost).
FAIL_MANY = """
SELECT ord, job_id, status FROM {schema}jobq_fail_many(
    job_ids => %(job_ids)s::pg_catalog.uuid[],
    worker_id => %(worker_id)s::pg_catalog.text,
    errors => %(errors)s::pg_catalog.text[],
    retries => %(retries)s::pg_catalog.bool[],
    backoffs => %(backoffs)s::pg_catalog.interval[],
    attempts => %(attempts)s::pg_catalog.int4[]
)
ORDER BY ord
"""

HEARTBEAT = """
SELECT {schema}jobq_heartbeat(
    worker_id => %(worker_id)s::pg_catalog.text,
    job_ids => %(job_ids)s::pg_catalog.uuid[]
) AS renewed
"""

# The Worker's heartbeat: the renewal and the cancel requests of the same jobs in one statement,
# so that a worker learns of a cancel within one heartbeat interval at no extra round trip.
HEARTBEAT_CANCELS = """
SELECT
    {schema}jobq_heartbeat(
        worker_id => %(worker_id)s::pg_catalog.text,
        job_ids => %(job_ids)s::pg_catalog.uuid[]
    ) AS renewed,
    ARRAY(
        SELECT {schema}jobq_cancel_requested(job_ids => %(job_ids)s::pg_catalog.uuid[])
    ) AS cancel_requested
"""

CANCEL_REQUESTED = """
SELECT {schema}jobq_cancel_requested(job_ids => %(job_ids)s::pg_catalog.uuid[]) AS id
"""

CANCEL = """
SELECT job_id, status FROM {schema}jobq_cancel(
    job_ids => %(job_ids)s::pg_catalog.uuid[],
    reason => %(reason)s::pg_catalog.text
)
"""

JOB_STATUS = """
SELECT id, status, attempts, result, last_error, finished_at, cancel_requested
FROM {schema}jobq_job_status(job_ids => %(job_ids)s::pg_catalog.uuid[])
"""

AWAIT = """
SELECT id, status, attempts, result, last_error, finished_at, cancel_requested
FROM {schema}jobq_await(
    job_ids => %(job_ids)s::pg_catalog.uuid[], timeout => %(timeout)s::pg_catalog.interval
)
"""

RELEASE = """
SELECT {schema}jobq_release(
    job_ids => %(job_ids)s::pg_catalog.uuid[],
    worker_id => %(worker_id)s::pg_catalog.text
) AS released
"""

RELEASE_ORPHANS = """
SELECT {schema}jobq_release_orphans(
    worker_id => %(worker_id)s::pg_catalog.text,
    job_ids => %(job_ids)s::pg_catalog.uuid[]
) AS released
"""

REQUEUE_DEAD_LETTER = """
SELECT {schema}jobq_requeue_dead_letter(job_id => %(job_id)s::pg_catalog.uuid) AS requeued
"""

REQUEUE_DEAD_LETTERS = """
SELECT {schema}jobq_requeue_dead_letters(
    job_type => %(job_type)s::pg_catalog.text,
    queue => %(queue)s::pg_catalog.text
) AS requeued
"""

LIST_JOBS = """
SELECT * FROM {schema}jobq_list_jobs(
    statuses => %(statuses)s::pg_catalog.text[],
    job_type => %(job_type)s::pg_catalog.text,
    queue => %(queue)s::pg_catalog.text,
    max_rows => %(max_rows)s::pg_catalog.int4
)
"""

GET_JOB = """
SELECT * FROM {schema}jobq_get_job(job_id => %(job_id)s::pg_catalog.uuid)
"""

STATS = """
SELECT queue, job_type, status, jobs, oldest_available_at FROM {schema}jobq_stats()
ORDER BY queue, job_type, status
"""

PRUNE = """
SELECT {schema}jobq_prune(
    older_than => %(older_than)s::pg_catalog.interval,
    statuses => %(statuses)s::pg_catalog.text[],
    batch_size => %(batch_size)s::pg_catalog.int4
) AS pruned
"""

CONFIGURE = """
SELECT {schema}jobq_configure(
    max_payload_bytes => %(max_payload_bytes)s::pg_catalog.int4,
    metrics => %(metrics)s::pg_catalog.bool
) AS settings
"""

METRICS = """
SELECT metric, labels, value FROM {schema}jobq_metrics()
"""

UNSERVED = """
SELECT queue, job_type, jobs, oldest_available_at
FROM {schema}jobq_unserved_job_types(idle => %(idle)s::pg_catalog.interval)
"""

HEALTH = """
SELECT check_name, queue, severity, value, detail FROM {schema}jobq_health()
"""

SCHEDULE = """
SELECT {schema}jobq_schedule(
    name => %(name)s::pg_catalog.text,
    cron => %(cron)s::pg_catalog.text,
    job_type => %(job_type)s::pg_catalog.text,
    payload => %(payload)s::pg_catalog.jsonb,
    timezone => %(timezone)s::pg_catalog.text,
    queue => %(queue)s::pg_catalog.text,
    priority => %(priority)s::pg_catalog.int4,
    max_attempts => %(max_attempts)s::pg_catalog.int4,
    catch_up => %(catch_up)s::pg_catalog.text,
    paused => %(paused)s::pg_catalog.bool
) AS next_run_at
"""

UNSCHEDULE = """
SELECT {schema}jobq_unschedule(name => %(name)s::pg_catalog.text) AS deleted
"""

SCHEDULES = """
SELECT name, cron, timezone, job_type, payload, queue, priority, max_attempts, catch_up, paused,
       next_run_at, next_run_local, created_at, updated_at
FROM {schema}jobq_schedules()
ORDER BY name
"""

# The dashboard (pgq_client.web): a page of the jobs of one status (keyset: after_at, after_id
# are the sort_at and id of the previous page's last row; a last row with matches false marks
# where a filtered search of finished jobs stopped), and the per-queue summary.
JOBS_PAGE = """
SELECT id, queue, job_type, status, priority, attempts, max_attempts, available_at, created_at,
       updated_at, locked_at, locked_by, finished_at, last_error, cancel_requested, sort_at,
       matches
FROM {schema}jobq_jobs_page(
    status => %(status)s::pg_catalog.text,
    queue => %(queue)s::pg_catalog.text,
    job_type => %(job_type)s::pg_catalog.text,
    after_at => %(after_at)s::pg_catalog.timestamptz,
    after_id => %(after_id)s::pg_catalog.uuid,
    max_rows => %(max_rows)s::pg_catalog.int4,
    scan_limit => %(scan_limit)s::pg_catalog.int4
)
"""

QUEUE_SUMMARY = """
SELECT queue, available, scheduled, processing, failed, dead_letter, cancelled,
       oldest_available_at, succeeded_recent
FROM {schema}jobq_queue_summary(recent => %(recent)s::pg_catalog.interval)
"""

SET_LIMIT = """
SELECT {schema}jobq_set_limit(
    limit_group => %(limit_group)s::pg_catalog.text,
    max_running => %(max_running)s::pg_catalog.int4,
    max_starts => %(max_starts)s::pg_catalog.int4,
    per => %(per)s::pg_catalog.interval
)
"""

LIMITS = """
SELECT limit_group, max_running, max_starts, per FROM {schema}jobq_limits() ORDER BY limit_group
"""

LIMIT_USAGE = """
SELECT limit_group, limit_key, running, max_running, starts_in_window, max_starts, per, pending
FROM {schema}jobq_limit_usage()
"""

TICK = """
SELECT schedule, fire_at, job_id FROM {schema}jobq_tick() ORDER BY schedule, fire_at
"""

# Where a client given no schema renders the schema's prefix (a comment, so that a statement
# whose schema is not yet put in is still valid SQL; it is never sent so).
LATE_SCHEMA = "/*jobq:schema*/"

def bind_schema(query: Any, schema: str) -> Any:
    """``query`` (rendered with :data:`LATE_SCHEMA`) with ``schema`` put in."""
    prefix = '"' + schema.replace('"', '""') + '".'
    if isinstance(query, bytes):
        if LATE_SCHEMA.encode() not in query:
            return query
        text = query.decode("ascii").replace(LATE_SCHEMA, prefix)
        return text.encode("ascii") if text.isascii() else sql.SQL(text)
    if isinstance(query, sql.SQL) and LATE_SCHEMA in query.as_string(None):
        return sql.SQL(query.as_string(None).replace(LATE_SCHEMA, prefix))
    return query


class Statements:
    """The statements above, rendered once for one schema (or, with None, with
    :data:`LATE_SCHEMA` where the schema goes: see :func:`bind_schema`)."""

    def __init__(self, schema: str | None = None) -> None:
        self.schema = schema
        self._enqueue_with: dict[tuple[str, ...], Query] = {}
        self.enqueue_many = _render(ENQUEUE_MANY, schema)
        self.enqueue_many_count = _render(ENQUEUE_MANY_COUNT, schema)
        self.enqueue_arrays = _render(ENQUEUE_ARRAYS, schema)
        self.enqueue_arrays_count = _render(ENQUEUE_ARRAYS_COUNT, schema)
        self.dequeue = _render(DEQUEUE, schema)
        self.complete = _render(COMPLETE, schema)
        self.complete_many = _render(COMPLETE_MANY, schema)
        self.fail = _render(FAIL, schema)
        self.fail_many = _render(FAIL_MANY, schema)
        self.heartbeat = _render(HEARTBEAT, schema)
        self.heartbeat_cancels = _render(HEARTBEAT_CANCELS, schema)
        self.cancel_requested = _render(CANCEL_REQUESTED, schema)
        self.cancel = _render(CANCEL, schema)
        self.job_status = _render(JOB_STATUS, schema)
        self.await_ = _render(AWAIT, schema)
        self.release = _render(RELEASE, schema)
        self.release_orphans = _render(RELEASE_ORPHANS, schema)
        self.requeue_dead_letter = _render(REQUEUE_DEAD_LETTER, schema)
        self.requeue_dead_letters = _render(REQUEUE_DEAD_LETTERS, schema)
        self.list_jobs = _render(LIST_JOBS, schema)
        self.get_job = _render(GET_JOB, schema)
        self.stats = _render(STATS, schema)
        self.prune = _render(PRUNE, schema)
        self.configure = _render(CONFIGURE, schema)
        self.metrics = _render(METRICS, schema)
        self.health = _render(HEALTH, schema)
        self.unserved = _render(UNSERVED, schema)
        self.schedule = _render(SCHEDULE, schema)
        self.unschedule = _render(UNSCHEDULE, schema)
        self.schedules = _render(SCHEDULES, schema)
        self.tick = _render(TICK, schema)
        self.jobs_page = _render(JOBS_PAGE, schema)
        self.queue_summary = _render(QUEUE_SUMMARY, schema)
        self.set_limit = _render(SET_LIMIT, schema)
        self.limits = _render(LIMITS, schema)
        self.limit_usage = _render(LIMIT_USAGE, schema)

    def enqueue_with(self, names: tuple[str, ...]) -> Query:
        """``jobq_enqueue`` called with the arguments ``names`` only (in ENQUEUE_ARGUMENTS'
        order), the others left to the function's defaults; rendered once per set."""
        query = self._enqueue_with.get(names)
        if query is None:
            args = ",\n    ".join(f"{name} => {ENQUEUE_ARGUMENTS[name]}" for name in names)
            query = _render(f"SELECT {{schema}}jobq_enqueue(\n    {args}\n) AS id", self.schema)
            self._enqueue_with[names] = query
        return query


@cache
def statements(schema: str | None = None) -> Statements:
    """The statements for ``schema``, rendered once per process."""
    return Statements(schema)


def _render(template: str, schema: str | None) -> Query:
    # One literal SQL string per statement, the schema quoted as PostgreSQL quotes an
    # identifier (the rule of quote_ident and PQescapeIdentifier), where a Composed of parts
    # is joined again on each call. ASCII text goes as bytes, which psycopg sends as they are
    # (an sql.SQL is encoded again on every call), and ASCII is the same bytes in every client
    # encoding PostgreSQL has. A schema name beyond ASCII keeps the sql.SQL.
    prefix = LATE_SCHEMA if schema is None else '"' + schema.replace('"', '""') + '".'
    text = template.strip().replace("{schema}", prefix)
    return text.encode("ascii") if text.isascii() else sql.SQL(text)


# FUNCTION_PRIVILEGES with the role they are the privileges of, in the one round trip the
# dashboard makes for them on each page.
ROLE_PRIVILEGES = (
    "SELECT current_user::pg_catalog.text AS role, f.name, f.allowed FROM ("
    + FUNCTION_PRIVILEGES
    + ") AS f"
).encode("ascii")
