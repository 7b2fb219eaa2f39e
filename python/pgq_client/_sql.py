"""Every SQL statement the client sends, in one place.

The queue statements call only the public ``jobq_*`` functions, with named arguments and every
parameter cast to its type, so another language could do the same with the same calls.
``{schema}`` is replaced by ``"<schema>".`` when the client is given a schema, and by nothing
otherwise (the connection's search_path then decides); see :class:`Statements`.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any

from psycopg import sql

# A statement of Statements: bytes when its text is ASCII, else an sql.SQL (see _render).
Query = bytes | sql.SQL

# Every connection jobq opens speaks UTF-8, whatever PGCLIENTENCODING or the DSN say (given as a
# connection argument, it wins over both): jobq decodes jsonb as UTF-8 (models.load_json) and
# sends its SQL files, whose comments are not all ASCII, as text. With a LATIN1 client encoding
# a claim could not read back a payload with an accented letter, an enqueue could not send a
# euro sign, and `jobq migrate` stopped with a traceback. The server converts to and from the
# database's encoding. A connection or pool that the application gives jobq keeps its own.
CLIENT_ENCODING: dict[str, Any] = {"client_encoding": "UTF8"}

# jobq_enqueue's arguments, each as the client passes it. A single enqueue sends only the
# arguments that differ from the function's defaults (Statements.enqueue_with): every parameter
# costs a bind and a coercion in the server and a field in libpq's message, and the usual call
# (a job type and a payload) is then the same two-parameter statement a hand-written client
# would prepare.
ENQUEUE_ARGUMENTS = {
    "job_type": "%(job_type)s::text",
    "payload": "%(payload)s::jsonb",
    "idempotency_key": "%(idempotency_key)s::text",
    "max_attempts": "%(max_attempts)s::int",
    "run_at": "%(run_at)s::timestamptz",
    "priority": "%(priority)s::int",
    "queue": "%(queue)s::text",
    "limit_group": "%(limit_group)s::text",
    "limit_key": "%(limit_key)s::text",
}

# The ids of a batch come back as one uuid[] in input order, read in binary (Call.binary): for
# 1,000 jobs 0.6 ms less per batch than a text row per id (parsing a thousand UUIDs from
# text and a row each cost more than the array's binary elements).
ENQUEUE_MANY = """
SELECT pg_catalog.array_agg(id ORDER BY ord) FROM {schema}jobq_enqueue_many(jobs => %(jobs)s::jsonb)
"""

ENQUEUE_MANY_COUNT = """
SELECT pg_catalog.count(*) FROM {schema}jobq_enqueue_many(jobs => %(jobs)s::jsonb)
"""

# A batch as one array per column, sent in binary (%b): no quoting or escaping of thousands of
# values in the client, no parsing of numbers and times in the server. The payloads travel as
# one JSON array, encoded in one pass by the client and split in the server, which measured
# faster than one JSON text per job; split into ARRAY(... ORDER BY), not an ordered array_agg:
# 0.8 against 0.9-1.3 ms for 1,000 payloads. A NULL array is the default for every job: when no
# job has a payload the JSON is NULL, its ARRAY() empty, and NULLIF makes that NULL (a batch
# sent is never empty). A job type or queue that every job of the batch has goes once
# (%(job_type)s, %(queue)s), repeated by array_fill in the server, and its list is NULL. The
# arguments are written once, for the statement that returns the ids and the one that counts.
_ENQUEUE_ARRAYS_ARGS = """
    job_types => CASE WHEN %(job_type)s::text IS NULL THEN %(job_types)b::text[]
        ELSE pg_catalog.array_fill(%(job_type)s::text, ARRAY[%(jobs)s::integer]) END,
    payloads => NULLIF(ARRAY(
        SELECT e.payload
        FROM pg_catalog.jsonb_array_elements(%(payloads)s::jsonb) WITH ORDINALITY AS e (payload, n)
        ORDER BY e.n
    ), '{}'::jsonb[]),
    idempotency_keys => %(idempotency_keys)b::text[],
    max_attempts => %(max_attempts)b::int[],
    run_ats => %(run_ats)b::timestamptz[],
    priorities => %(priorities)b::int[],
    queues => CASE WHEN %(queue)s::text IS NULL THEN %(queues)b::text[]
        ELSE pg_catalog.array_fill(%(queue)s::text, ARRAY[%(jobs)s::integer]) END
"""
ENQUEUE_ARRAYS = (
    "SELECT pg_catalog.array_agg(id ORDER BY ord) FROM {schema}jobq_enqueue_arrays("
    + _ENQUEUE_ARRAYS_ARGS + ")"
)

# The same, for a bulk load that keeps no ids: one row back instead of one per job (parsing
# thousands of UUIDs in the client cost more than the rest of its work on a batch).
ENQUEUE_ARRAYS_COUNT = (
    "SELECT pg_catalog.count(*) FROM {schema}jobq_enqueue_arrays(" + _ENQUEUE_ARRAYS_ARGS + ")"
)

DEQUEUE = """
SELECT * FROM {schema}jobq_dequeue(
    worker_id => %(worker_id)s::text,
    job_types => %(job_types)s::text[],
    batch_size => %(batch_size)s::int,
    lock_timeout => %(lock_timeout)s::interval,
    queues => %(queues)s::text[]
)
"""

COMPLETE = """
SELECT {schema}jobq_complete(
    job_id => %(job_id)s::uuid,
    worker_id => %(worker_id)s::text,
    attempt => %(attempt)s::int,
    result => %(result)s::jsonb
) AS completed
"""

# ``attempts`` is the trailing parameter added for fencing a batch by attempt, ``results`` the
# handlers' return values (JSON text, or NULL for none; NULL as a whole when no job has one).
COMPLETE_MANY = """
SELECT {schema}jobq_complete_many(
    job_ids => %(job_ids)s::uuid[],
    worker_id => %(worker_id)s::text,
    attempts => %(attempts)s::int[],
    results => %(results)s::jsonb[]
) AS completed
"""

FAIL = """
SELECT {schema}jobq_fail(
    job_id => %(job_id)s::uuid,
    worker_id => %(worker_id)s::text,
    error => %(error)s::text,
    retry => %(retry)s::boolean,
    backoff => %(backoff)s::interval,
    attempt => %(attempt)s::int
) AS status
"""

# Many failures in one statement: one row per job, in input order (status NULL: claim lost).
FAIL_MANY = """
SELECT ord, job_id, status FROM {schema}jobq_fail_many(
    job_ids => %(job_ids)s::uuid[],
    worker_id => %(worker_id)s::text,
    errors => %(errors)s::text[],
    retries => %(retries)s::boolean[],
    backoffs => %(backoffs)s::interval[],
    attempts => %(attempts)s::int[]
)
ORDER BY ord
"""

HEARTBEAT = """
SELECT {schema}jobq_heartbeat(
    worker_id => %(worker_id)s::text,
    job_ids => %(job_ids)s::uuid[]
) AS renewed
"""

# The Worker's heartbeat: the renewal and the cancel requests of the same jobs in one statement,
# so that a worker learns of a cancel within one heartbeat interval at no extra round trip.
HEARTBEAT_CANCELS = """
SELECT
    {schema}jobq_heartbeat(
        worker_id => %(worker_id)s::text,
        job_ids => %(job_ids)s::uuid[]
    ) AS renewed,
    ARRAY(
        SELECT {schema}jobq_cancel_requested(job_ids => %(job_ids)s::uuid[])
    ) AS cancel_requested
"""

CANCEL_REQUESTED = """
SELECT {schema}jobq_cancel_requested(job_ids => %(job_ids)s::uuid[]) AS id
"""

CANCEL = """
SELECT job_id, status FROM {schema}jobq_cancel(
    job_ids => %(job_ids)s::uuid[],
    reason => %(reason)s::text
)
"""

JOB_STATUS = """
SELECT id, status, attempts, result, last_error, finished_at, cancel_requested
FROM {schema}jobq_job_status(job_ids => %(job_ids)s::uuid[])
"""

AWAIT = """
SELECT id, status, attempts, result, last_error, finished_at, cancel_requested
FROM {schema}jobq_await(job_ids => %(job_ids)s::uuid[], timeout => %(timeout)s::interval)
"""

RELEASE = """
SELECT {schema}jobq_release(
    job_ids => %(job_ids)s::uuid[],
    worker_id => %(worker_id)s::text
) AS released
"""

RELEASE_ORPHANS = """
SELECT {schema}jobq_release_orphans(
    worker_id => %(worker_id)s::text,
    job_ids => %(job_ids)s::uuid[]
) AS released
"""

REQUEUE_DEAD_LETTER = """
SELECT {schema}jobq_requeue_dead_letter(job_id => %(job_id)s::uuid) AS requeued
"""

REQUEUE_DEAD_LETTERS = """
SELECT {schema}jobq_requeue_dead_letters(
    job_type => %(job_type)s::text,
    queue => %(queue)s::text
) AS requeued
"""

LIST_JOBS = """
SELECT * FROM {schema}jobq_list_jobs(
    statuses => %(statuses)s::text[],
    job_type => %(job_type)s::text,
    queue => %(queue)s::text,
    max_rows => %(max_rows)s::int
)
"""

# One job by id. jobq has no public look-up by id that returns the whole row, so this filters
# what jobq_list_jobs returns (every job, most recently changed first): the server reads the
# whole table, and only the matching row travels.
GET_JOB = """
SELECT * FROM {schema}jobq_get_job(job_id => %(job_id)s::uuid)
"""

STATS = """
SELECT queue, job_type, status, jobs, oldest_available_at FROM {schema}jobq_stats()
ORDER BY queue, job_type, status
"""

PRUNE = """
SELECT {schema}jobq_prune(
    older_than => %(older_than)s::interval,
    statuses => %(statuses)s::text[],
    batch_size => %(batch_size)s::int
) AS pruned
"""

CONFIGURE = """
SELECT {schema}jobq_configure(
    max_payload_bytes => %(max_payload_bytes)s::int, metrics => %(metrics)s::boolean
) AS settings
"""

METRICS = """
SELECT metric, labels, value FROM {schema}jobq_metrics()
"""

UNSERVED = """
SELECT queue, job_type, jobs, oldest_available_at
FROM {schema}jobq_unserved_job_types(idle => %(idle)s::interval)
"""

HEALTH = """
SELECT check_name, queue, severity, value, detail FROM {schema}jobq_health()
"""

SCHEDULE = """
SELECT {schema}jobq_schedule(
    name => %(name)s::text,
    cron => %(cron)s::text,
    job_type => %(job_type)s::text,
    payload => %(payload)s::jsonb,
    timezone => %(timezone)s::text,
    queue => %(queue)s::text,
    priority => %(priority)s::int,
    max_attempts => %(max_attempts)s::int,
    catch_up => %(catch_up)s::text,
    paused => %(paused)s::boolean
) AS next_run_at
"""

UNSCHEDULE = """
SELECT {schema}jobq_unschedule(name => %(name)s::text) AS deleted
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
    status => %(status)s::text,
    queue => %(queue)s::text,
    job_type => %(job_type)s::text,
    after_at => %(after_at)s::timestamptz,
    after_id => %(after_id)s::uuid,
    max_rows => %(max_rows)s::int,
    scan_limit => %(scan_limit)s::int
)
"""

QUEUE_SUMMARY = """
SELECT queue, available, scheduled, processing, failed, dead_letter, cancelled,
       oldest_available_at, succeeded_recent
FROM {schema}jobq_queue_summary(recent => %(recent)s::interval)
"""

# Which of the given functions (name, argument types) the connected role may execute: NULL for
# one that is not installed (an older jobq). The dashboard shows what it may not do disabled
# rather than trying it. The schema is the given one, else what the search_path finds.
FUNCTION_PRIVILEGES = """
SELECT f.name,
       CASE WHEN p.oid IS NULL THEN NULL
            ELSE pg_catalog.has_function_privilege(p.oid, 'EXECUTE') END AS allowed
FROM ROWS FROM (
    pg_catalog.unnest(%(names)s::text[]), pg_catalog.unnest(%(signatures)s::text[])
) AS f(name, signature)
CROSS JOIN LATERAL (
    SELECT pg_catalog.to_regprocedure(
        CASE WHEN %(schema)s::text IS NULL THEN f.name || f.signature
             ELSE pg_catalog.quote_ident(%(schema)s::text) || '.' || f.name || f.signature
        END
    )::oid AS oid
) AS p
"""

SET_LIMIT = """
SELECT {schema}jobq_set_limit(
    limit_group => %(limit_group)s::text,
    max_running => %(max_running)s::int,
    max_starts => %(max_starts)s::int,
    per => %(per)s::interval
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

# NOTIFY: each installation has its own channels. The workers' wake-ups (jobq__channel in SQL):
# jobq for schema public, jobq.<schema> for a schema of at most 58 bytes (a channel name holds
# 63), else jobq# and the hex SHA-224 of the schema name in UTF-8. The payload is a queue name,
# or WAKE_ALL when one statement made jobs available in more than 100 queues.
NOTIFY_CHANNEL = "jobq"
WAKE_ALL = ""

# The other events (jobq__event_channel in SQL), one channel per kind: "done" (an awaited job
# finished) and "cancel" (a running job got a cancel request): jobq-<kind>:<schema> when that
# fits in 63 bytes, else jobq-<kind># and the hex SHA-224 of the schema name cut to fit. Their
# payload is always CHECK_ALL (empty): a channel is readable by any role that LISTENs, so it
# names no job nor worker, and a listener re-checks what it waits for.
DONE = "done"
CANCEL_EVENT = "cancel"
CHECK_ALL = ""

# The channel of the installation in %(schema)s, or, when it is NULL, in the schema where the
# search_path finds jobq_enqueue (public when it finds none), computed by the server so that
# the bytes of the name are counted in the database's encoding, as jobq__channel counts them.
CHANNEL = """
SELECT CASE
    WHEN s.name = 'public' THEN 'jobq'
    WHEN pg_catalog.octet_length(s.name) <= 58 THEN 'jobq.' || s.name
    ELSE 'jobq#' || pg_catalog.encode(
        pg_catalog.sha224(pg_catalog.convert_to(s.name, 'UTF8')), 'hex')
END AS channel
FROM (
    SELECT coalesce(
        %(schema)s::text,
        (SELECT n.nspname::text
         FROM pg_catalog.pg_proc AS p
         JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
         WHERE p.oid = pg_catalog.to_regproc('jobq_enqueue')),
        'public'
    ) AS name
) AS s
"""


# The channel of %(kind)s events (see above) of the installation in %(schema)s, or where the
# search_path finds jobq_enqueue, computed by the server as jobq__event_channel computes it.
EVENT_CHANNEL = """
SELECT CASE
    WHEN pg_catalog.octet_length(c.prefix || ':' || s.name) <= 63 THEN c.prefix || ':' || s.name
    ELSE c.prefix || '#' || pg_catalog.left(
        pg_catalog.encode(pg_catalog.sha224(pg_catalog.convert_to(s.name, 'UTF8')), 'hex'),
        63 - pg_catalog.octet_length(c.prefix || '#'))
END AS channel
FROM (
    SELECT coalesce(
        %(schema)s::text,
        (SELECT n.nspname::text
         FROM pg_catalog.pg_proc AS p
         JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
         WHERE p.oid = pg_catalog.to_regproc('jobq_enqueue')),
        'public'
    ) AS name
) AS s, (SELECT 'jobq-' || %(kind)s::text AS prefix) AS c
"""


# The schema of the installation: %(schema)s, or where the search_path finds jobq_enqueue.
JOBQ_SCHEMA = """
SELECT coalesce(
    %(schema)s::text,
    (SELECT n.nspname::text
     FROM pg_catalog.pg_proc AS p
     JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
     WHERE p.oid = pg_catalog.to_regproc('jobq_enqueue'))
) AS schema
"""


def channel(schema: str) -> str:
    """The NOTIFY channel of the installation in ``schema`` (in a UTF-8 database)."""
    if schema == "public":
        return NOTIFY_CHANNEL
    raw = schema.encode("utf-8")
    if len(raw) <= 58:
        return f"jobq.{schema}"
    return "jobq#" + hashlib.sha224(raw).hexdigest()


def event_channel(schema: str, kind: str) -> str:
    """The NOTIFY channel of ``kind`` events of the installation in ``schema`` (UTF-8)."""
    raw = f"jobq-{kind}:{schema}".encode()
    if len(raw) <= 63:
        return f"jobq-{kind}:{schema}"
    prefix = f"jobq-{kind}#"
    return prefix + hashlib.sha224(schema.encode("utf-8")).hexdigest()[: 63 - len(prefix)]


def listen(*channel_names: str) -> sql.Composed:
    """``LISTEN`` on each channel, in one simple-query round trip."""
    return sql.SQL("; ").join(
        sql.SQL("LISTEN {}").format(sql.Identifier(name)) for name in channel_names
    )


def unlisten(channel_name: str) -> sql.Composed:
    return sql.SQL("UNLISTEN {}").format(sql.Identifier(channel_name))

# Administration (jobq grant): the public functions of a schema, private jobq__ helpers excluded.
PUBLIC_FUNCTIONS = """
SELECT p.proname::text AS name
FROM pg_catalog.pg_proc AS p
JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname = %(schema)s::text
  AND p.prokind = 'f'
  AND left(p.proname, 5) = 'jobq_'
  AND left(p.proname, 6) <> 'jobq__'
ORDER BY 1
"""

# jobq revoke: every jobq function and table of a schema, and whether anything else lives there.
JOBQ_FUNCTIONS = """
SELECT p.proname::text AS name
FROM pg_catalog.pg_proc AS p
JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname = %(schema)s::text
  AND pg_catalog.left(p.proname, 5) = 'jobq_'
ORDER BY 1
"""

JOBQ_TABLES = """
SELECT c.relname::text AS name
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s::text
  AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
  AND pg_catalog.left(c.relname, 5) = 'jobq_'
ORDER BY 1
"""

SCHEMA_HAS_OTHERS = """
SELECT EXISTS (
    SELECT FROM pg_catalog.pg_class AS c
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    WHERE n.nspname = %(schema)s::text AND pg_catalog.left(c.relname, 5) <> 'jobq_'
    UNION ALL
    SELECT FROM pg_catalog.pg_proc AS p
    JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
    WHERE n.nspname = %(schema)s::text AND pg_catalog.left(p.proname, 5) <> 'jobq_'
) AS others
"""

# The comment of jobq_migrations, where the runner names the schema's latest breaking change.
# Read from the catalogue, which every role may read (the table itself only admins may): in the
# given schema, or the one the search_path finds.
MIGRATIONS_COMMENT = """
SELECT pg_catalog.obj_description(c.oid, 'pg_class') AS description
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.relname = 'jobq_migrations'
  AND CASE
      WHEN %(schema)s::text IS NULL THEN c.oid = pg_catalog.to_regclass('jobq_migrations')
      ELSE n.nspname = %(schema)s::text
  END
"""

SCHEMA_EXISTS = """
SELECT EXISTS (
    SELECT FROM pg_catalog.pg_namespace WHERE nspname = %(schema)s::text
) AS present
"""


class Statements:
    """The statements above, rendered once for one schema (or for the search_path)."""

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
    # is joined again on each call. ASCII text goes as bytes, which psycopg sends as they are:
    # an sql.SQL is encoded again on every call (5,000 of the 155,000 instructions of a
    # single Queue.enqueue, counted with callgrind), and ASCII is the same bytes in every
    # client encoding PostgreSQL has. A schema name beyond ASCII keeps the sql.SQL, encoded
    # in the connection's encoding.
    prefix = "" if schema is None else '"' + schema.replace('"', '""') + '".'
    text = template.strip().replace("{schema}", prefix)
    return text.encode("ascii") if text.isascii() else sql.SQL(text)
