"""What the client asks about an installation rather than its jobs, and how it connects.

The settings of every connection jobq opens for its own statements (:func:`connect_kwargs`),
the schema a client given none finds (:data:`FIND_SCHEMA`), the NOTIFY channels of an
installation, and the catalogue queries of administration (grant, revoke, doctor, the
dashboard's privileges). These may run on a connection the application hands in, which keeps
its own search_path, so each names every function, operator and type in ``pg_catalog``.
:mod:`pgq_client._sql` re-exports every name.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import tuple_row

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

