"""What clients check: a schema whose latest breaking change is a migration this jobq does not
have is refused. Queue, AsyncQueue and Worker import this module alone of the installer."""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterable
from functools import cache
from typing import Any

import psycopg
from psycopg.rows import scalar_row

from .. import _sql
from ..errors import IncompatibleSchema
from .files import available_migrations

# The line of jobq_migrations' comment that names the latest breaking change (sql/describe.sql).
_LATEST_BREAKING = re.compile(r"^Latest breaking change: (\d{4}_[a-z0-9_]+)\.", re.MULTILINE)


@cache
def _shipped_versions() -> frozenset[str]:
    return frozenset(m.version for m in available_migrations())


def breaking_change_in(description: str | None) -> str | None:
    """The latest breaking change named in a comment of ``jobq_migrations``, or None."""
    match = _LATEST_BREAKING.search(description or "")
    return match.group(1) if match else None


def latest_breaking_change(conn: psycopg.Connection[Any], schema: str | None) -> str | None:
    """The latest breaking change applied to ``schema`` (None: the one the search_path finds),
    or None; read from the comment of ``jobq_migrations``, so that any role can ask."""
    with conn.cursor(row_factory=scalar_row) as cur:
        description = cur.execute(_sql.MIGRATIONS_COMMENT, {"schema": schema}).fetchone()
    return breaking_change_in(description)


def incompatibility(
    latest: str | None, schema: str | None, *, known: Iterable[str] | None = None
) -> IncompatibleSchema | None:
    """The error for a schema whose latest breaking change is ``latest``, when this jobq (or
    ``known``, a list of versions) does not have that migration; None when it does."""
    if latest is None or latest in (_shipped_versions() if known is None else set(known)):
        return None
    where = "the jobq schema on the search_path" if schema is None else f"schema {schema!r}"
    try:
        version = importlib.metadata.version("pgq-client")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
        version = "unknown version"
    return IncompatibleSchema(
        f"{where} was migrated by a newer jobq: its migration {latest} is a breaking change "
        f"that this client (pgq-client {version}) does not have, so it cannot work with this "
        "schema. Upgrade the pgq-client package where this runs: every producer and worker of "
        "a schema must have its latest breaking change."
    )


def check_compatible(
    conn: psycopg.Connection[Any], schema: str | None, *, known: Iterable[str] | None = None
) -> None:
    """Raise :class:`~pgq_client.errors.IncompatibleSchema` when ``schema``'s latest breaking
    change is a migration that this jobq (or ``known``) does not have (one catalogue query)."""
    error = incompatibility(latest_breaking_change(conn, schema), schema, known=known)
    if error is not None:
        raise error
