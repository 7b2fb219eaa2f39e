"""Every SQL statement the client sends, in one place.

The queue statements call only the public ``jobq_*`` functions, schema-qualified, with named
arguments and every parameter cast to its ``pg_catalog``-qualified type, so another language
could do the same with the same calls. They are written below as SQL whose ``jobq_*`` calls
carry their signature (``jobq_release(job_ids uuid[], worker_id text)``), which
:func:`_render` turns into ``"<schema>".jobq_release(job_ids => %(job_ids)s::pg_catalog.uuid[],
...)``; a client given no schema renders :data:`LATE_SCHEMA` there and puts the schema in once
:data:`FIND_SCHEMA` has found it (see :class:`Statements`).

Then what the client asks about an installation rather than its jobs, and how it connects:
the settings of every connection jobq opens for its own statements (:func:`connect_kwargs`),
the schema a client given none finds, the NOTIFY channels of an installation, and the
catalogue queries of administration (grant, revoke, doctor, the dashboard's privileges).

Nothing another role creates can be chosen by these statements (docs/security.md): every
connection jobq opens for its own statements runs with ``search_path = pg_catalog, pg_temp``,
and the statements that may also run on a connection the application hands in, which keeps
its own search_path, name every function, operator and type ``pg_catalog``-qualified.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from functools import cache
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import tuple_row

# A statement of Statements: bytes when its text is ASCII, else an sql.SQL (see _render).
Query = bytes | sql.SQL

_IDS = "SELECT pg_catalog.array_agg(id ORDER BY ord)"

# One statement per attribute of Statements. The ids of a batch come back as one uuid[] in
# input order, read in binary (Call.binary): parsing a thousand UUIDs from text, a row each,
# costs more than the array's binary elements; the *_count forms, for a bulk load that keeps
# no ids, return one row instead. The Worker's heartbeat_cancels renews the claims and reads
# the cancel requests of the same jobs in one statement, so that a worker learns of a cancel
# within one heartbeat interval at no extra round trip. jobs_page is the dashboard's keyset
# page (after_at, after_id: the previous page's last row; a last row with matches false marks
# where a filtered search of finished jobs stopped).
_TEMPLATES = {
    "enqueue_many": _IDS + " FROM jobq_enqueue_many(jobs jsonb)",
    "enqueue_many_count": "SELECT pg_catalog.count(*) FROM jobq_enqueue_many(jobs jsonb)",
    "dequeue": "SELECT * FROM jobq_dequeue(worker_id text, job_types text[], batch_size int4,"
    " lock_timeout interval, queues text[])",
    "complete": "SELECT jobq_complete(job_id uuid, worker_id text, attempt int4, result jsonb)"
    " AS completed",
    "complete_many": "SELECT jobq_complete_many(job_ids uuid[], worker_id text, attempts int4[],"
    " results jsonb[]) AS completed",
    "fail": "SELECT jobq_fail(job_id uuid, worker_id text, error text, retry bool,"
    " backoff interval, attempt int4) AS status",
    "fail_many": "SELECT ord, job_id, status FROM jobq_fail_many(job_ids uuid[], worker_id text,"
    " errors text[], retries bool[], backoffs interval[], attempts int4[]) ORDER BY ord",
    "heartbeat": "SELECT jobq_heartbeat(worker_id text, job_ids uuid[]) AS renewed",
    "heartbeat_cancels": "SELECT jobq_heartbeat(worker_id text, job_ids uuid[]) AS renewed,"
    " ARRAY(SELECT jobq_cancel_requested(job_ids uuid[])) AS cancel_requested",
    "cancel_requested": "SELECT jobq_cancel_requested(job_ids uuid[]) AS id",
    "cancel": "SELECT job_id, status FROM jobq_cancel(job_ids uuid[], reason text)",
    "job_status": "SELECT id, status, attempts, result, last_error, finished_at,"
    " cancel_requested FROM jobq_job_status(job_ids uuid[])",
    "await_": "SELECT id, status, attempts, result, last_error, finished_at, cancel_requested"
    " FROM jobq_await(job_ids uuid[], timeout interval)",
    "release": "SELECT jobq_release(job_ids uuid[], worker_id text) AS released",
    "release_orphans": "SELECT jobq_release_orphans(worker_id text, job_ids uuid[]) AS released",
    "requeue_dead_letter": "SELECT jobq_requeue_dead_letter(job_id uuid) AS requeued",
    "requeue_dead_letters": "SELECT jobq_requeue_dead_letters(job_type text, queue text,"
    " include_cancelled bool) AS requeued",
    "list_jobs": "SELECT * FROM jobq_list_jobs(statuses text[], job_type text, queue text,"
    " max_rows int4)",
    "get_job": "SELECT * FROM jobq_get_job(job_id uuid)",
    "stats": "SELECT queue, job_type, status, jobs, oldest_available_at FROM jobq_stats()"
    " ORDER BY queue, job_type, status",
    "prune": "SELECT jobq_prune(older_than interval, statuses text[], batch_size int4)"
    " AS pruned",
    "configure": "SELECT jobq_configure(max_payload_bytes int4, metrics bool) AS settings",
    "metrics": "SELECT metric, labels, value FROM jobq_metrics()",
    "health": "SELECT check_name, queue, severity, value, detail FROM jobq_health()",
    "unserved": "SELECT queue, job_type, jobs, oldest_available_at"
    " FROM jobq_unserved_job_types(idle interval)",
    "schedule": "SELECT jobq_schedule(name text, cron text, job_type text, payload jsonb,"
    " timezone text, queue text, priority int4, max_attempts int4, catch_up text, paused bool)"
    " AS next_run_at",
    "unschedule": "SELECT jobq_unschedule(name text) AS deleted",
    "schedules": "SELECT name, cron, timezone, job_type, payload, queue, priority, max_attempts,"
    " catch_up, paused, next_run_at, next_run_local, created_at, updated_at"
    " FROM jobq_schedules() ORDER BY name",
    "tick": "SELECT schedule, fire_at, job_id FROM jobq_tick() ORDER BY schedule, fire_at",
    "jobs_page": "SELECT id, queue, job_type, status, priority, attempts, max_attempts,"
    " available_at, created_at, updated_at, locked_at, locked_by, finished_at, last_error,"
    " cancel_requested, sort_at, matches FROM jobq_jobs_page(status text, queue text,"
    " job_type text, after_at timestamptz, after_id uuid, max_rows int4, scan_limit int4)",
    "queue_summary": "SELECT queue, available, scheduled, processing, failed, dead_letter,"
    " cancelled, oldest_available_at, succeeded_recent"
    " FROM jobq_queue_summary(recent interval)",
    "set_limit": "SELECT jobq_set_limit(limit_group text, max_running int4, max_starts int4,"
    " per interval)",
    "limits": "SELECT limit_group, max_running, max_starts, per FROM jobq_limits()"
    " ORDER BY limit_group",
    "limit_usage": "SELECT limit_group, limit_key, running, max_running, starts_in_window,"
    " max_starts, per, pending FROM jobq_limit_usage()",
    "pause": "SELECT jobq_pause(queue text, reason text) AS paused",
    "resume": "SELECT jobq_resume(queue text) AS resumed",
    "queues": "SELECT queue, paused, paused_at, reason, pending, processing FROM jobq_queues()",
}

# A batch as one array per column, sent in binary (%b): no quoting or escaping of thousands of
# values in the client, no parsing of numbers and times in the server. The payloads travel as
# one JSON array, encoded in one pass by the client and split in the server into ARRAY(...
# ORDER BY), cheaper than an ordered array_agg (docs/decisions/0004-one-producer-path.md). A
# NULL array is the default for every job: when no job has a payload the JSON is NULL, its
# ARRAY() empty, and NULLIF makes that NULL (a batch sent is never empty). A job type or queue
# that every job of the batch has goes once (%(job_type)s, %(queue)s), repeated by array_fill
# in the server, and its list is NULL.
_ENQUEUE_ARRAYS = """ FROM {schema}jobq_enqueue_arrays(
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
)"""

# jobq_enqueue's arguments, each as the client passes it. A single enqueue sends only the
# arguments that differ from the function's defaults (Statements.enqueue_with): every parameter
# costs a bind and a coercion in the server and a field in libpq's message, and the usual call
# (a job type and a payload) is then the same two-parameter statement a hand-written client
# would prepare.
_ENQUEUE_SIGNATURE = (
    "job_type text, payload jsonb, idempotency_key text, max_attempts int4, run_at timestamptz,"
    " priority int4, queue text, limit_group text, limit_key text"
)

_CALL = re.compile(r"\b(jobq_\w+)\(([^()]*)\)")


def _arguments(signature: str) -> dict[str, str]:
    """``name type, ...`` as {name: its named argument, the parameter cast to the type}."""
    pairs = (argument.split() for argument in signature.split(",") if argument.strip())
    return {name: f"{name} => %({name})s::pg_catalog.{kind}" for name, kind in pairs}


ENQUEUE_ARGUMENTS = _arguments(_ENQUEUE_SIGNATURE)

# Where a client given no schema renders the schema's prefix (a comment, so that a statement
# whose schema is not yet put in is still valid SQL; it is never sent so).
LATE_SCHEMA = "/*jobq:schema*/"


def _prefix(schema: str) -> str:
    """``"<schema>".``, quoted as quote_ident and PQescapeIdentifier quote an identifier."""
    return '"' + schema.replace('"', '""') + '".'


def bind_schema(query: Any, schema: str) -> Any:
    """``query`` (rendered with :data:`LATE_SCHEMA`) with ``schema`` put in."""
    if isinstance(query, bytes):
        if LATE_SCHEMA.encode() not in query:
            return query
        text = query.decode("ascii").replace(LATE_SCHEMA, _prefix(schema))
        return text.encode("ascii") if text.isascii() else sql.SQL(text)
    if isinstance(query, sql.SQL) and LATE_SCHEMA in query.as_string(None):
        return sql.SQL(query.as_string(None).replace(LATE_SCHEMA, _prefix(schema)))
    return query


def _render(template: str, schema: str | None) -> Query:
    # One literal SQL string per statement, rather than a Composed of parts joined again on
    # each call. ASCII text goes as bytes, which psycopg sends as they are (an sql.SQL is
    # encoded again on every call), and ASCII is the same bytes in every client encoding
    # PostgreSQL has. A schema name beyond ASCII keeps the sql.SQL.
    prefix = LATE_SCHEMA if schema is None else _prefix(schema)
    text = _CALL.sub(
        lambda m: f"{{schema}}{m[1]}({', '.join(_arguments(m[2]).values())})", template
    )
    text = text.strip().replace("{schema}", prefix)
    return text.encode("ascii") if text.isascii() else sql.SQL(text)


class Statements:
    """The statements above, rendered once for one schema (or, with None, with
    :data:`LATE_SCHEMA` where the schema goes: see :func:`bind_schema`), one attribute per
    entry of the table."""

    if TYPE_CHECKING:  # the attributes are made from _TEMPLATES

        def __getattr__(self, name: str) -> Query: ...

    def __init__(self, schema: str | None = None) -> None:
        self.schema = schema
        self._enqueue_with: dict[tuple[str, ...], Query] = {}
        for name, template in _TEMPLATES.items():
            setattr(self, name, _render(template, schema))
        self.enqueue_arrays = _render(_IDS + _ENQUEUE_ARRAYS, schema)
        self.enqueue_arrays_count = _render("SELECT pg_catalog.count(*)" + _ENQUEUE_ARRAYS, schema)

    def enqueue_with(self, names: tuple[str, ...]) -> Query:
        """``jobq_enqueue`` called with the arguments ``names`` only (in ENQUEUE_ARGUMENTS'
        order), the others left to the function's defaults; rendered once per set."""
        query = self._enqueue_with.get(names)
        if query is None:
            args = ", ".join(ENQUEUE_ARGUMENTS[name] for name in names)
            query = _render(f"SELECT {{schema}}jobq_enqueue({args}) AS id", self.schema)
            self._enqueue_with[names] = query
        return query


@cache
def statements(schema: str | None = None) -> Statements:
    """The statements for ``schema``, rendered once per process."""
    return Statements(schema)


# -- the catalogue and connections --------------------------------------------------------------

# Every connection jobq opens speaks UTF-8, whatever PGCLIENTENCODING or the DSN say (given as a
# connection argument, it wins over both): jobq decodes jsonb as UTF-8 (models.load_json) and
# sends its SQL files, not all ASCII, as text; the server converts to and from the database's
# encoding. A connection or pool that the application gives jobq keeps its own.
CLIENT_ENCODING: dict[str, Any] = {"client_encoding": "UTF8"}

# The search_path of every connection jobq opens for its own statements, a startup option so
# that it holds from the first statement and survives RESET ALL and DISCARD ALL (a pool's
# reset): built-ins and operators are found in pg_catalog alone, and no look-alike another role
# plants in public or jobq's schema can be chosen for a call that needs an implicit coercion.
SEARCH_PATH_OPTION = "-c search_path=pg_catalog,pg_temp"


def connect_kwargs(dsn: str | None = None) -> dict[str, Any]:
    """The connection arguments of a connection jobq opens for its own statements: UTF-8 and
    :data:`SEARCH_PATH_OPTION`, after the DSN's own ``options`` (else ``PGOPTIONS``, which
    libpq reads only when no ``options`` is given), so that ``-c role=...`` and the like still
    apply and a search_path among them is overridden."""
    options = ""
    if dsn:
        try:
            options = str(conninfo_to_dict(dsn).get("options") or "")
        except psycopg.Error:
            options = ""  # psycopg.connect reports the malformed DSN itself
    if not options:
        options = os.environ.get("PGOPTIONS", "")
    return {**CLIENT_ENCODING, "options": f"{options} {SEARCH_PATH_OPTION}".strip()}


# The schema of the installation for a client given none: the first schema of the connection's
# search_path that holds jobq_enqueue. It runs with the application's search_path, so it names
# every function, operator and type it uses in pg_catalog.
FIND_SCHEMA = """
SELECT s.name::pg_catalog.text AS schema
FROM pg_catalog.unnest(pg_catalog.current_schemas(false)) WITH ORDINALITY AS s (name, position)
WHERE EXISTS (
    SELECT FROM pg_catalog.pg_proc AS p
    JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
    WHERE n.nspname OPERATOR(pg_catalog.=) s.name
      AND p.proname OPERATOR(pg_catalog.=) 'jobq_enqueue'::pg_catalog.name
)
ORDER BY s.position
LIMIT 1
"""

_found: dict[str, str] = {}
_found_lock = threading.Lock()


def opened_by_jobq(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether ``conn`` runs with :data:`SEARCH_PATH_OPTION` (a connection jobq opened for
    its own statements, on which the application's search_path is not to be found)."""
    return SEARCH_PATH_OPTION in str(conn.info.get_parameters().get("options") or "")


def find_schema(conn: psycopg.Connection[Any]) -> str:
    """The schema of the installation that ``conn``'s search_path finds (``public`` when it
    finds none: the statements then say that jobq is not installed there)."""
    with conn.cursor(row_factory=tuple_row) as cur:  # whatever row factory it was given
        row = cur.execute(FIND_SCHEMA).fetchone()
    return str(row[0]) if row and row[0] else "public"


def schema_of_dsn(dsn: str) -> str:
    """The schema that a connection to ``dsn``, with the search_path its DSN, role and database
    give it, finds (:data:`FIND_SCHEMA`), asked once per process and DSN on a short connection
    of its own: the connections jobq opens for its statements run with the search_path of
    :data:`SEARCH_PATH_OPTION`, which finds no jobq."""
    with _found_lock:
        found = _found.get(dsn)
    if found is None:
        with (
            psycopg.connect(dsn, autocommit=True, connect_timeout=10, **CLIENT_ENCODING) as c,
            c.cursor(row_factory=tuple_row) as cur,
        ):
            row = cur.execute(FIND_SCHEMA).fetchone()
        if not row or not row[0]:
            return "public"  # not installed (yet): asked again next time
        found = str(row[0])
        with _found_lock:
            _found[dsn] = found
    return found


# NOTIFY: each installation has its own channels, named as jobq__channel and
# jobq__event_channel name them in SQL. The workers' wake-ups: the payload is a queue name, or
# WAKE_ALL when one statement made jobs available in more than 100 queues.
NOTIFY_CHANNEL = "jobq"
WAKE_ALL = ""

# The other events, one channel per kind: "done" (an awaited job finished) and "cancel" (a
# running job got a cancel request). Their payload is always CHECK_ALL (empty): any role may
# LISTEN, so it names no job nor worker, and a listener re-checks what it waits for.
DONE = "done"
CANCEL_EVENT = "cancel"
CHECK_ALL = ""

# The channel of the installation in %(schema)s, computed by the server so that the bytes of
# the name are counted in the database's encoding, as jobq__channel counts them.
CHANNEL = """
SELECT CASE
    WHEN s.name OPERATOR(pg_catalog.=) 'public' THEN 'jobq'
    WHEN pg_catalog.octet_length(s.name) OPERATOR(pg_catalog.<=) 58
        THEN 'jobq.' OPERATOR(pg_catalog.||) s.name
    ELSE 'jobq#' OPERATOR(pg_catalog.||) pg_catalog.encode(
        pg_catalog.sha224(pg_catalog.convert_to(s.name, 'UTF8')), 'hex')
END AS channel
FROM (SELECT %(schema)s::pg_catalog.text AS name) AS s
"""


# The channel of %(kind)s events of the installation in %(schema)s, as jobq__event_channel.
EVENT_CHANNEL = """
SELECT CASE
    WHEN pg_catalog.octet_length(
            c.prefix OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) s.name
        ) OPERATOR(pg_catalog.<=) 63
        THEN c.prefix OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) s.name
    ELSE c.prefix OPERATOR(pg_catalog.||) '#' OPERATOR(pg_catalog.||) pg_catalog.left(
        pg_catalog.encode(pg_catalog.sha224(pg_catalog.convert_to(s.name, 'UTF8')), 'hex'),
        63 OPERATOR(pg_catalog.-) pg_catalog.octet_length(c.prefix OPERATOR(pg_catalog.||) '#'))
END AS channel
FROM (SELECT %(schema)s::pg_catalog.text AS name) AS s,
    (SELECT 'jobq-' OPERATOR(pg_catalog.||) %(kind)s::pg_catalog.text AS prefix) AS c
"""


def channel(schema: str) -> str:
    """The NOTIFY channel of the installation in ``schema`` (in a UTF-8 database): ``jobq``
    for public, ``jobq.<schema>`` up to 58 bytes, else ``jobq#`` and its SHA-224."""
    if schema == "public":
        return NOTIFY_CHANNEL
    raw = schema.encode("utf-8")
    if len(raw) <= 58:
        return f"jobq.{schema}"
    return "jobq#" + hashlib.sha224(raw).hexdigest()


def event_channel(schema: str, kind: str) -> str:
    """The NOTIFY channel of ``kind`` events of the installation in ``schema`` (UTF-8):
    ``jobq-<kind>:<schema>`` up to 63 bytes, else ``jobq-<kind>#`` and its SHA-224 cut to fit."""
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

# Administration (jobq grant, jobq revoke): jobq's functions and tables in a schema that jobq's
# owner (jobq_migrations' owner, else the connected role) owns, so that an object another role
# planted there is never granted or revoked. Functions come by signature (regprocedure), so
# that an overload is never named for another.
_JOBQ_OWNER = """(
    SELECT coalesce(
        (SELECT c.relowner FROM pg_catalog.pg_class AS c
         JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
         WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name
           AND c.relname OPERATOR(pg_catalog.=) 'jobq_migrations'::pg_catalog.name),
        (SELECT r.oid FROM pg_catalog.pg_roles AS r
         WHERE r.rolname OPERATOR(pg_catalog.=) current_user)
    )
)"""

JOBQ_FUNCTIONS = """
SELECT p.proname::pg_catalog.text AS name,
       p.oid::pg_catalog.regprocedure::pg_catalog.text AS signature
FROM pg_catalog.pg_proc AS p
JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name
  AND p.prokind OPERATOR(pg_catalog.=) 'f'::pg_catalog."char"
  AND pg_catalog.starts_with(p.proname::pg_catalog.text, 'jobq_'::pg_catalog.text)
  AND p.proowner OPERATOR(pg_catalog.=) """ + _JOBQ_OWNER + """
ORDER BY 1, 2
"""

JOBQ_TABLES = """
SELECT c.relname::pg_catalog.text AS name
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name
  AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,S,f}'::pg_catalog."char"[])
  AND pg_catalog.starts_with(c.relname::pg_catalog.text, 'jobq_'::pg_catalog.text)
  AND NOT pg_catalog.starts_with(c.relname::pg_catalog.text, 'jobq__'::pg_catalog.text)
  AND c.relowner OPERATOR(pg_catalog.=) """ + _JOBQ_OWNER + """
ORDER BY 1
"""

# jobq revoke: whether anything but jobq lives in the schema (then USAGE stays).
SCHEMA_HAS_OTHERS = """
SELECT EXISTS (
    SELECT FROM pg_catalog.pg_class AS c
    JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name
      AND NOT pg_catalog.starts_with(c.relname::pg_catalog.text, 'jobq_'::pg_catalog.text)
    UNION ALL
    SELECT FROM pg_catalog.pg_proc AS p
    JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
    WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name
      AND NOT pg_catalog.starts_with(p.proname::pg_catalog.text, 'jobq_'::pg_catalog.text)
) AS others
"""

# The comment of jobq_migrations, where the runner names the schema's latest breaking change,
# read from the catalogue, which every role may read: in the given schema, or the search_path's.
MIGRATIONS_COMMENT = """
SELECT pg_catalog.obj_description(c.oid, 'pg_class'::pg_catalog.name) AS description
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.=) 'jobq_migrations'::pg_catalog.name
  AND CASE
      WHEN %(schema)s::pg_catalog.text IS NULL
          THEN c.oid OPERATOR(pg_catalog.=)
              pg_catalog.to_regclass('jobq_migrations'::pg_catalog.text)
      ELSE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name
  END
"""

SCHEMA_EXISTS = """
SELECT EXISTS (
    SELECT FROM pg_catalog.pg_namespace AS n
    WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s::pg_catalog.name
) AS present
"""


# Which of the given functions (name, argument types) the connected role may execute, NULL for
# one that is not installed: the dashboard shows what it may not do disabled.
FUNCTION_PRIVILEGES = """
SELECT f.name,
       CASE WHEN p.oid IS NULL THEN NULL
            ELSE pg_catalog.has_function_privilege(p.oid, 'EXECUTE'::pg_catalog.text) END AS allowed
FROM ROWS FROM (
    pg_catalog.unnest(%(names)s::pg_catalog.text[]),
    pg_catalog.unnest(%(signatures)s::pg_catalog.text[])
) AS f (name, signature)
CROSS JOIN LATERAL (
    SELECT pg_catalog.to_regprocedure(pg_catalog.concat(
        pg_catalog.quote_ident(%(schema)s::pg_catalog.text), '.', f.name, f.signature
    ))::pg_catalog.oid AS oid
) AS p
"""


# FUNCTION_PRIVILEGES with the role they are the privileges of, in the one round trip the
# dashboard makes for them on each page.
ROLE_PRIVILEGES = (
    "SELECT current_user::pg_catalog.text AS role, f.name, f.allowed FROM ("
    + FUNCTION_PRIVILEGES
    + ") AS f"
).encode("ascii")
