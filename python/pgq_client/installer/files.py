"""The files jobq installs (numbered migrations, function files and their history) and the
installer's own statements (``installer/sql/*.sql``). The header lines a file may have
(``--! requires:``, ``levels:``, ``replaces:``, ``granted-as:``, ``breaking-change``) are
described in docs/DEVELOPING.md."""

from __future__ import annotations

import hashlib
import importlib.resources
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from psycopg import sql

from ..errors import JobqError
from .levels import LEVELS

HISTORY_FILE = "history.sha256"
FUNCTIONS_PREFIX = "functions/"
BREAKING = "breaking-change"

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
_FUNCTION_NAME = re.compile(r"^(jobq_[a-z0-9_]+)\.sql$")
_DIRECTIVE = re.compile(
    r"^--![ \t]*(?P<key>[a-z-]*)[ \t]*(?::[ \t]*(?P<value>.*?))?[ \t]*$", re.MULTILINE
)
# An argument list as DROP FUNCTION takes it: type names, arrays, commas, spaces.
_SIGNATURE = re.compile(r"^(jobq_[a-z0-9_]+)\(\s*([a-z0-9_ \[\],]*?)\s*\)$")
_HISTORY_LINE = re.compile(r"^([0-9a-f]{64})  (jobq_[a-z0-9_]+)\.sql$")
_REVOKE = re.compile(
    r"^REVOKE EXECUTE ON FUNCTION\s+(jobq_\w+\s*\(.*?\))\s+FROM PUBLIC;", re.M | re.S
)
_KEYS = ("requires", "replaces", "levels", "granted-as")


class MigrationError(JobqError):
    """A migration cannot be applied (edited after it was applied, unknown, bad file name)."""


class _Checksummed:
    sql: str

    @property
    def checksum(self) -> str:
        """The SHA-256 of the file's text, as ``jobq_migrations`` records it."""
        return hashlib.sha256(self.sql.encode()).hexdigest()


@dataclass(frozen=True)
class Migration(_Checksummed):
    """One migration file: ``version`` is its name without ``.sql`` (``0001_jobq_baseline``)."""

    version: str
    sql: str

    @property
    def breaking(self) -> bool:
        first = _DIRECTIVE.match(self.sql)
        return first is not None and first.group("key") == BREAKING


@dataclass(frozen=True)
class FunctionFile(_Checksummed):
    """One function file, with its header lines; ``version`` is what ``jobq_migrations``
    records it as (``functions/jobq_dequeue``)."""

    name: str
    path: Path
    sql: str = field(repr=False)
    requires: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()
    levels: tuple[str, ...] = ()
    granted_as: tuple[str, ...] = ()

    @property
    def version(self) -> str:
        return FUNCTIONS_PREFIX + self.name

    @property
    def private(self) -> bool:
        """Private helpers (``jobq__*``) are granted to nobody."""
        return self.name.startswith("jobq__")

    @property
    def renamed_from(self) -> tuple[str, ...]:
        """The old names among ``replaces`` (this function was renamed from them)."""
        names = (signature.split("(", 1)[0] for signature in self.replaces)
        return tuple(dict.fromkeys(n for n in names if n != self.name))


def _sql_dir(kind: str) -> Path:
    """``migrations`` or ``functions``: shipped in the wheel, else those of the source tree."""
    shipped = Path(str(importlib.resources.files("pgq_client"))) / kind
    source = Path(__file__).resolve().parents[3] / "sql" / kind
    for found in (shipped, source):
        if found.is_dir():
            return found
    raise MigrationError(f"no {kind} found (looked in {shipped} and {source})")


@cache
def _statement_text(name: str) -> str:
    return (Path(__file__).with_name("sql") / f"{name}.sql").read_text(encoding="utf-8")


def statement(name: str, schema: str | None = None, /, **parts: object) -> sql.Composed:
    """The installer's statement ``installer/sql/<name>.sql`` with its ``{placeholders}``
    filled by psycopg.sql: SQL as it is, a list or tuple as its items (``'a', 'b'``, for an
    ``ARRAY[...]`` or ``IN (...)``), any other value as a Literal. ``schema`` fills
    ``{schema}`` (an identifier), ``{schema_name}`` (its name as a value) and ``{schema_ident}``
    (its quoted name as a value, for to_regnamespace)."""
    if schema is not None:
        ident = sql.Identifier(schema)
        parts = {"schema": ident, "schema_name": schema, "schema_ident": ident.as_string(None),
                 **parts}
    return sql.SQL(_statement_text(name)).format(**{k: literal(v) for k, v in parts.items()})


def literal(value: object) -> sql.Composable:
    if isinstance(value, sql.Composable):
        return value
    if isinstance(value, (list, tuple)):
        return sql.SQL(", ").join(sql.Literal(v) for v in value)
    return sql.Literal(value)


def available_migrations(directory: Path | None = None) -> list[Migration]:
    """Every migration file, in order. Refuses files that do not follow ``NNNN_name.sql``."""
    found: list[Migration] = []
    for path in sorted((directory or _sql_dir("migrations")).glob("*.sql")):
        if not _NAME.match(path.name):
            raise MigrationError(
                f"migration file {path.name!r} does not follow NNNN_lowercase_name.sql"
            )
        text = path.read_text(encoding="utf-8")
        for directive in _DIRECTIVE.finditer(text):
            if directive.group("key") != BREAKING:
                raise MigrationError(
                    f"migration {path.name}: unknown directive `--! {directive.group('key')}` "
                    f"(known: {BREAKING})"
                )
            if directive.start() != 0:
                raise MigrationError(
                    f"migration {path.name}: `--! {BREAKING}` must be its first line"
                )
        found.append(Migration(version=path.stem, sql=text))
    numbers = [m.version[:4] for m in found]
    if len(set(numbers)) != len(numbers):
        raise MigrationError(f"two migration files share a number: {numbers}")
    return found


def _check_item(path: Path, name: str, key: str, item: str) -> None:
    if key == "levels" and item not in LEVELS:
        raise MigrationError(
            f"function file {path.name}: `--! levels:` names {item}; "
            f"the levels are {', '.join(LEVELS)}"
        )
    if key == "replaces" and not _SIGNATURE.match(item):
        raise MigrationError(
            f"function file {path.name}: `--! replaces: {item}` must name an older signature "
            f"of {name}, or the old name of a renamed function, as `jobq_name(type, type, ...)`"
        )
    if key == "granted-as" and (not _FUNCTION_NAME.match(f"{item}.sql") or item == name):
        raise MigrationError(
            f"function file {path.name}: `--! granted-as: {item}` must name another jobq "
            "function"
        )


def _read_function_file(path: Path) -> FunctionFile:
    match = _FUNCTION_NAME.match(path.name)
    if not match:
        raise MigrationError(
            f"function file {path.name!r} does not follow jobq_lowercase_name.sql"
        )
    name = match.group(1)
    text = path.read_text(encoding="utf-8")
    if not re.search(
        rf"^CREATE OR REPLACE FUNCTION {re.escape(name)}\(", text, re.MULTILINE | re.IGNORECASE
    ):
        raise MigrationError(
            f"function file {path.name} must define its function with "
            f"`CREATE OR REPLACE FUNCTION {name}(` (it is applied again whenever it changes)"
        )
    found: dict[str, list[str]] = {key: [] for key in _KEYS}
    for directive in _DIRECTIVE.finditer(text):
        key, value = directive.group("key"), directive.group("value")
        if key not in _KEYS:
            raise MigrationError(
                f"function file {path.name}: unknown directive `--! {key}:` "
                f"(known: {', '.join(_KEYS)})"
            )
        if not value:
            raise MigrationError(f"function file {path.name}: `--! {key}:` names nothing")
        for item in (v.strip() for v in re.split(r",\s*(?![^()]*\))", value)):
            if item:
                _check_item(path, name, key, item)
                found[key].append(item)
    return FunctionFile(name, path, text, *(tuple(found[key]) for key in _KEYS))


def function_files(directory: Path | None = None) -> list[FunctionFile]:
    """Every function file, in the order they are applied.

    Private helpers (``jobq__*``) first, then by name; a file whose ``--! requires:`` line
    names others comes after them. Refuses unknown names in ``requires``, cycles, bad file
    names, and files that do not ``CREATE OR REPLACE`` their own function.
    """
    paths = sorted((directory or _sql_dir("functions")).glob("*.sql"))
    files = {f.name: f for f in map(_read_function_file, paths)}
    for f in files.values():
        for required in f.requires:
            if required not in files:
                raise MigrationError(
                    f"function file {f.path.name} requires {required}, which has no file"
                )
        for old in f.renamed_from:
            if old in files:
                raise MigrationError(
                    f"function file {f.path.name} replaces {old}, which still has a file: "
                    "a renamed function's old file must be gone"
                )
    order = sorted(files, key=lambda n: (not files[n].private, n))
    done: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            raise MigrationError(f"function files require each other in a cycle: {name}")
        visiting.add(name)
        for required in sorted(files[name].requires, key=order.index):
            visit(required)
        visiting.discard(name)
        done.append(name)

    for name in order:
        visit(name)
    return [files[name] for name in done]


def function_history(directory: Path | None = None) -> dict[str, frozenset[str]]:
    """The SHA-256 of every version of each function file that jobq has shipped, by name.

    Read from ``history.sha256`` beside the files (lines as ``sha256sum`` prints them; ``#``
    starts a comment). A directory without one knows only its files as they are.
    """
    path = (directory or _sql_dir("functions")) / HISTORY_FILE
    if not path.exists():
        return {}
    known: dict[str, set[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _HISTORY_LINE.match(line)
        if not match:
            raise MigrationError(
                f"{path.name}, line {number}: expected `<sha256>  jobq_<name>.sql`, got {line!r}"
            )
        known.setdefault(match.group(2), set()).add(match.group(1))
    return {name: frozenset(checksums) for name, checksums in known.items()}


def file_signature(f: FunctionFile) -> str:
    """``name(argument types)`` of a file's function, from its ``REVOKE ... FROM PUBLIC``."""
    found = _REVOKE.search(f.sql)
    if found is None:  # pragma: no cover - every file revokes (a test checks it)
        raise MigrationError(f"function file {f.path.name}: no REVOKE EXECUTE ... FROM PUBLIC")
    return " ".join(found.group(1).split()).replace("( ", "(").replace(" )", ")")
