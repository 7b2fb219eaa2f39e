"""Every SQL statement the client sends, in one place: the files of ``sql/`` beside this
module (linted by sqlfluff), read once, and how the client connects.

``sql/calls.sql`` holds every call of a jobq function, each an attribute of
:class:`Statements`, which puts the installation's schema before each ``jobq_*`` name; a
client given no schema renders :data:`LATE_SCHEMA` there and puts the schema in once
:data:`FIND_SCHEMA` has found it. The other files are what the client asks the catalogue: the
schema a client given none finds, the NOTIFY channels, grant, revoke and the dashboard's
privileges.

Nothing another role creates can be chosen by these statements (docs/security.md): every
connection jobq opens for its own statements runs with ``search_path = pg_catalog, pg_temp``,
and the statements that may also run on a connection the application hands in, which keeps
its own search_path, name every function, operator and type ``pg_catalog``-qualified.
"""

from __future__ import annotations

import os
import re
import threading
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import tuple_row

# A statement of Statements: bytes when its text is ASCII, else an sql.SQL (see _render).
Query = bytes | sql.SQL


def _load(name: str, **parts: str) -> str:
    """The text of ``sql/<name>.sql`` without its header comment, each ``{part}`` of ``parts``
    put in."""
    text = (Path(__file__).with_name("sql") / f"{name}.sql").read_text(encoding="utf-8")
    text = re.sub(r"\A(--.*\n)+", "", text)
    for part, value in parts.items():
        text = text.replace(f"{{{part}}}", value)
    return text


# The statements of calls.sql by name (a statement ends with a line that ends with ";"), and
# the forms of a bulk load that keeps no ids, each one row (jobs, added): *_count, for a batch
# without idempotency keys, where every job is added; *_added, which asks jobq_inserted, in the
# same statement, which of the ids the batch inserted.
_IDS = "SELECT pg_catalog.array_agg(id ORDER BY ord)"
_STATEMENT = re.compile(r"^-- name: (\w+)\n(.*?);[ \t]*(?:--[^\n]*)?$", re.MULTILINE | re.DOTALL)
_CALLS = {
    name: re.sub(r"\A(--.*\n)+", "", body)  # (its comment says why, and may hold a %)
    for name, body in _STATEMENT.findall(_load("calls"))
}
_COUNT = "pg_catalog.count(*)::pg_catalog.int4"
for _bulk in ("enqueue_many", "enqueue_arrays"):
    _CALLS[f"{_bulk}_count"] = _CALLS[_bulk].replace(_IDS, f"SELECT {_COUNT}, {_COUNT}", 1)
    _CALLS[f"{_bulk}_added"] = (
        f"SELECT {_COUNT}, pg_catalog.count(*) FILTER (WHERE n.inserted)::pg_catalog.int4\n"
        f"FROM jobq_inserted(({_CALLS[_bulk]})) AS n"
    )

# jobq_enqueue's arguments by name, each as calls.sql's enqueue passes it.
ENQUEUE_ARGUMENTS = {
    name: argument
    for argument, name in re.findall(r"^ +((\w+) => [^,\n]+)", _CALLS["enqueue"], re.MULTILINE)
}

# Where a client given no schema renders the schema's prefix (a comment, so that a statement
# whose schema is not yet put in is still valid SQL; it is never sent so).
LATE_SCHEMA = "/*jobq:schema*/"
_CALL = re.compile(r"\b(?=jobq_\w+\()")


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
    text = _CALL.sub(lambda _: prefix, template.strip())
    return text.encode("ascii") if text.isascii() else sql.SQL(text)


class Statements:
    """The statements of calls.sql, rendered once for one schema (or, with None, with
    :data:`LATE_SCHEMA` where the schema goes: see :func:`bind_schema`), one attribute each."""

    if TYPE_CHECKING:  # the attributes are made from _CALLS

        def __getattr__(self, name: str) -> Query: ...

    def __init__(self, schema: str | None = None) -> None:
        self.schema = schema
        self._enqueue_with: dict[tuple[str, ...], Query] = {}
        for name, template in _CALLS.items():
            setattr(self, name, _render(template, schema))

    def enqueue_with(self, names: tuple[str, ...]) -> Query:
        """``jobq_enqueue`` called with the arguments ``names`` only (in ENQUEUE_ARGUMENTS'
        order), the others left to the function's defaults; rendered once per set."""
        query = self._enqueue_with.get(names)
        if query is None:
            args = ", ".join(ENQUEUE_ARGUMENTS[name] for name in names)
            query = _render(f"SELECT jobq_enqueue({args}) AS id", self.schema)
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


FIND_SCHEMA = _load("find_schema")

_found: dict[str, str] = {}
_found_lock = threading.Lock()


def opened_by_jobq(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether ``conn`` runs with :data:`SEARCH_PATH_OPTION` (a connection jobq opened for
    its own statements, on which the application's search_path is not to be found)."""
    return SEARCH_PATH_OPTION in str(conn.info.get_parameters().get("options") or "")


def find_schema(conn: psycopg.Connection[Any]) -> str:
    """The schema of the installation that ``conn``'s search_path finds (``public`` when it
    finds none: the statements then say that jobq is not installed there)."""
    return _schema_found(conn) or "public"


def _schema_found(conn: psycopg.Connection[Any]) -> str | None:
    with conn.cursor(row_factory=tuple_row) as cur:  # whatever row factory it was given
        row = cur.execute(FIND_SCHEMA).fetchone()
    return str(row[0]) if row and row[0] else None


def schema_of_dsn(dsn: str) -> str:
    """The schema that a connection to ``dsn``, with the search_path its DSN, role and database
    give it, finds (:data:`FIND_SCHEMA`), asked once per process and DSN on a short connection
    of its own: the connections jobq opens for its statements run with the search_path of
    :data:`SEARCH_PATH_OPTION`, which finds no jobq."""
    with _found_lock:
        found = _found.get(dsn)
    if found is None:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10, **CLIENT_ENCODING) as c:
            found = _schema_found(c)
        if found is None:
            return "public"  # not installed (yet): asked again next time
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

# The channels of the installation in %(schema)s (of %(kind)s events), computed by the server.
CHANNEL, EVENT_CHANNEL = _load("channel"), _load("event_channel")


def listen(*channel_names: str) -> sql.Composed:
    """``LISTEN`` on each channel, in one simple-query round trip."""
    return sql.SQL("; ").join(
        sql.SQL("LISTEN {}").format(sql.Identifier(name)) for name in channel_names
    )


def unlisten(channel_name: str) -> sql.Composed:
    return sql.SQL("UNLISTEN {}").format(sql.Identifier(channel_name))


# The catalogue queries of jobq grant and revoke and of the dashboard's privileges.
_JOBQ_OWNER = f"({_load('jobq_owner')})"
JOBQ_FUNCTIONS = _load("jobq_functions", jobq_owner=_JOBQ_OWNER)
JOBQ_TABLES = _load("jobq_tables", jobq_owner=_JOBQ_OWNER)
SCHEMA_HAS_OTHERS = _load("schema_has_others")
SCHEMA_EXISTS = _load("schema_exists")
MIGRATIONS_COMMENT = _load("migrations_comment")
ROLE_PRIVILEGES = _load("role_privileges").encode("ascii")
