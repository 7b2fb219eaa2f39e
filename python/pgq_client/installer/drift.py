"""Whether a schema holds what the files define, and who else controls it (``jobq doctor``;
``jobq migrate`` refuses or warns). Reads the catalogue, never a jobq function that another
role could have planted, except ``jobq_health`` after a run."""

from __future__ import annotations

import re
from typing import Any

import psycopg

from .. import _sql
from . import citus
from .files import FunctionFile, MigrationError, file_signature, function_files, statement
from .plan import validate_schema

_VOLATILITY = {"VOLATILE": "v", "STABLE": "s", "IMMUTABLE": "i"}


def control_findings(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    """Who else controls ``schema`` (``sql/control.sql``): objects there that jobq's owner does
    not own, and roles other than it (or its members, or superusers) that may CREATE there.
    Empty for a schema that does not exist yet."""
    query = statement("control", schema)
    return [str(row[1]) for row in conn.execute(query)]


def audit_findings(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    present = conn.execute(statement("has_health", schema)).fetchone()
    if not present or not present[0]:
        return []  # an install without jobq_health (a test's own function files)
    rows = conn.execute(statement("audit", schema)).fetchall()
    return [
        f"{row[0]}: anyone who controls the schema can run code as jobq's owner (see "
        "docs/security.md, 'Install safely')"
        for row in rows
    ]


def audit(conninfo: str, schema: str = "public") -> list[str]:
    """Warnings about who else controls ``schema``: its owner, when that is not the owner of
    jobq's objects (nor a superuser), and roles other than that owner that may CREATE in it.
    :func:`~.runner.migrate` logs them after each run; ``jobq doctor`` reports them too."""
    validate_schema(schema)
    with psycopg.connect(conninfo, autocommit=True, **_sql.connect_kwargs(conninfo)) as conn:
        return audit_findings(conn, schema)


def _expected(f: FunctionFile) -> tuple[str, bool, str, str, set[str]]:
    """What the catalogue holds of a file's function: its body, SECURITY DEFINER, volatility,
    language and settings ("name=value", and "search_path" for SET search_path FROM CURRENT)."""
    found = re.search(r"CREATE OR REPLACE FUNCTION(.*?)\bAS \$\$(.*?)\$\$;", f.sql, re.S)
    if found is None:  # pragma: no cover - files.py checked the CREATE
        raise MigrationError(f"function file {f.path.name}: no `AS $$ ... $$;` body")
    header, body = found.group(1), found.group(2)
    volatility = re.search(r"^(VOLATILE|STABLE|IMMUTABLE)\s*$", header, re.M)
    language = re.search(r"^LANGUAGE (\w+)", header, re.M)
    settings = {
        f"{m.group(1)}={m.group(2).strip()}"
        for m in re.finditer(r"^SET (\w+) = (.+?)\s*$", header, re.M)
    }
    if re.search(r"^SET search_path FROM CURRENT\s*$", header, re.M):
        settings.add("search_path")
    return (
        body,
        re.search(r"^SECURITY DEFINER\s*$", header, re.M) is not None,
        _VOLATILITY[volatility.group(1)] if volatility else "v",
        language.group(1).lower() if language else "sql",
        settings,
    )


def _unquote(item: str) -> str:
    item = item.strip()
    quoted = len(item) >= 2 and item[0] == item[-1] == '"'
    return item[1:-1].replace('""', '"') if quoted else item


def _differences(
    f: FunctionFile, installed: tuple[Any, ...], schema: str, on_citus: bool
) -> list[str]:
    """How one installed function differs from its file."""
    prosrc, definer, volatility, language, config = installed
    body, want_definer, want_volatility, want_language, settings = _expected(f)
    found: list[str] = []
    if prosrc != body:
        found.append(f"its body differs from sql/functions/{f.path.name}")
    if definer != want_definer:
        found.append(
            "is not SECURITY DEFINER, as its file says it is" if want_definer
            else "is SECURITY DEFINER, which its file does not say"
        )
    if (language, volatility) != (want_language, want_volatility):
        found.append(f"is {language} {volatility}, its file says {want_language} {want_volatility}")
    have = {item for item in config if not item.startswith("search_path=")}
    for item in config:
        if item.startswith("search_path="):
            have.add("search_path")
            value = item.partition("=")[2]
            if [_unquote(i) for i in value.split(",")] != [schema, "pg_temp"]:
                found.append(f"runs with search_path {value!r}, not the schema's")
    if have != (citus.expected_settings(f.name, settings) if on_citus else settings):
        found.append(
            f"its settings differ from its file: {sorted(have)} instead of {sorted(settings)}"
        )
    return found


def function_drift(
    conn: psycopg.Connection[Any], schema: str, files: list[FunctionFile] | None = None
) -> list[tuple[str, str]]:
    """How the functions installed in ``schema`` differ from this jobq's files, as
    (function, what differs): a body or a setting changed by hand (a ``CREATE OR REPLACE``
    without ``SECURITY DEFINER``, another search_path), a file not applied or half applied, a
    jobq function no file defines. Empty when the schema holds exactly what the files define.
    Reads only the catalogue, and ``jobq_migrations`` when the role may (an admin may)."""
    files = function_files() if files is None else files
    installed = {row[0]: row[2:] for row in conn.execute(statement("installed_functions", schema))}
    signatures: dict[str, str | None] = dict(conn.execute(statement(
        "file_signatures",
        schema,
        names=[f.name for f in files],
        signatures=[file_signature(f) for f in files],
    )).fetchall())
    try:
        with conn.transaction():
            recorded = dict(conn.execute(statement("recorded", schema)).fetchall())
    except psycopg.errors.InsufficientPrivilege:
        recorded = None
    on_citus = citus.distributed(conn, schema)
    found: list[tuple[str, str]] = []
    for f in files:
        signature = signatures[f.name]
        if signature not in installed:
            found.append((
                f.name,
                f"not installed as {file_signature(f)} (sql/functions/{f.path.name}): run "
                "jobq migrate",
            ))
            continue
        found += [(f.name, d) for d in _differences(f, installed[signature], schema, on_citus)]
        if recorded is not None and recorded.get(f.version) != f.checksum:
            found.append((f.name, f"sql/functions/{f.path.name} is not applied in its current "
                                  "version: run jobq migrate"))
    found += [
        (signature, "no file of this jobq defines it (made by hand, an overload planted beside "
                    "jobq's, or a function of a newer jobq)")
        for signature in installed
        if signature not in signatures.values()
    ]
    return found
