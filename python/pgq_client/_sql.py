"""Every SQL statement the client sends, in one place.

The queue statements call only the public ``jobq_*`` functions, with named arguments and every
parameter cast to its type, so another language could do the same with the same calls.
``{schema}`` is replaced by ``"<schema>".`` when the client is given a schema, and by nothing
otherwise (the connection's search_path then decides); see :class:`Statements`.
"""

from __future__ import annotations

import hashlib
from functools import cache

from psycopg import sql

ENQUEUE = """
SELECT {schema}jobq_enqueue(
    job_type => %(job_type)s::text,
    payload => %(payload)s::jsonb,
    idempotency_key => %(idempotency_key)s::text,
    max_attempts => %(max_attempts)s::int,
    run_at => %(run_at)s::timestamptz,
    priority => %(priority)s::int,
    queue => %(queue)s::text
) AS id
"""

ENQUEUE_MANY = """
SELECT id FROM {schema}jobq_enqueue_many(jobs => %(jobs)s::jsonb) ORDER BY ord
"""

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
# finished, payload its id) and "cancel" (a running job got a cancel request, payload the id of
# the worker that holds it): jobq-<kind>:<schema> when that fits in 63 bytes, else
# jobq-<kind># and the hex SHA-224 of the schema name cut to fit. The payload CHECK_ALL means
# "more than 100 of them at once: check everything".
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
        self.enqueue = _render(ENQUEUE, schema)
        self.enqueue_many = _render(ENQUEUE_MANY, schema)
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


@cache
def statements(schema: str | None = None) -> Statements:
    """The statements for ``schema``, rendered once per process."""
    return Statements(schema)


def _render(template: str, schema: str | None) -> sql.Composed:
    prefix: sql.Composable
    prefix = sql.SQL("") if schema is None else sql.SQL("{}.").format(sql.Identifier(schema))
    return sql.SQL(template.strip()).format(schema=prefix)
