"""Keeping passwords out of messages.

A DSN may carry a password (``postgresql://app:secret@db/app``, ``password=secret``,
``?password=secret``). No message of the client or the CLI may show it: not an error about the
DSN itself (libpq's parse errors quote the fragment they choke on, which may be the password),
not a suggested command, not a description of the database in use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict

__all__ = ["MASK", "is_conninfo_error", "mask_dsn", "mask_quoted", "passwords", "scrub"]

MASK = "****"

# userinfo of a URI: scheme://user:PASSWORD@ (the user part has no unescaped ':' '/' '@').
_URI_PASSWORD = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@:?#]*:)(?P<pw>[^@/?#]*)(?=@)")
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&]password=)(?P<pw>[^&#]*)", re.IGNORECASE)
_KV_PASSWORD = re.compile(r"(?P<head>(?:^|\s)password\s*=\s*)(?P<pw>'(?:[^'\\]|\\.)*'?|\S+)")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')

# libpq's messages about a connection string it cannot parse; they quote what they choke on.
_CONNINFO_ERROR = re.compile(
    r"connection info string|percent-encoded|URI|connection option|conninfo|"
    r"invalid integer value|invalid port|unexpected spaces|missing \"=\"",
    re.IGNORECASE,
)


def passwords(dsn: str | None) -> set[str]:
    """Every form in which ``dsn``'s password may appear in a message (raw, decoded, unquoted),
    whether or not libpq can parse the DSN."""
    found: set[str] = set()
    if not dsn:
        return found
    try:
        parsed = conninfo_to_dict(dsn).get("password")
    except psycopg.Error:
        parsed = None
    if parsed:
        found.add(str(parsed))
    for pattern in (_URI_PASSWORD, _QUERY_PASSWORD, _KV_PASSWORD):
        for match in pattern.finditer(dsn):
            raw = match.group("pw")
            found.update({raw, raw.strip("'"), unquote(raw), raw.strip("'").replace("\\'", "'")})
    return {p for p in found if p}


def mask_dsn(dsn: str) -> str:
    """``dsn`` as the user wrote it, with its password replaced by ``****``."""
    masked = _URI_PASSWORD.sub(lambda m: m.group("head") + MASK, dsn)
    masked = _QUERY_PASSWORD.sub(lambda m: m.group("head") + MASK, masked)
    masked = _KV_PASSWORD.sub(lambda m: m.group("head") + MASK, masked)
    return scrub(masked, [dsn])


def mask_quoted(message: str) -> str:
    """Every double-quoted fragment of ``message`` replaced by ``"****"`` (``"="`` kept)."""
    return _QUOTED.sub(lambda m: m.group(0) if m.group(1) == "=" else f'"{MASK}"', message)


def is_conninfo_error(exc: BaseException) -> bool:
    """Whether ``exc`` is libpq refusing to parse a connection string (it may quote a secret)."""
    return (
        isinstance(exc, psycopg.ProgrammingError)
        and getattr(exc, "sqlstate", None) is None
        and bool(_CONNINFO_ERROR.search(str(exc)))
    )


def scrub(message: str, dsns: Iterable[str | None]) -> str:
    """``message`` with every password of ``dsns`` replaced by ``****``.

    Very short passwords (one or two characters) are masked only where they stand quoted, so
    that ordinary words of the message survive.
    """
    secrets: set[str] = set()
    for dsn in dsns:
        secrets |= passwords(dsn)
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 3:
            message = message.replace(secret, MASK)
        else:
            message = message.replace(f'"{secret}"', f'"{MASK}"')
    return message
