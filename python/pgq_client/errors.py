"""Typed exceptions of the jobq client: every error from the database is mapped from its
SQLSTATE to a class rooted at :class:`JobqError` (:func:`from_psycopg`), which keeps it in
``exc.sqlstate``. :class:`PermanentError` and :class:`Retry` are not jobq's errors: a handler
raises them to tell the worker how to fail its job, and ``except JobqError`` never catches them.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import psycopg

from ._secrets import is_conninfo_error, mask_quoted

__all__ = [
    "ConnectionFailed", "IncompatibleSchema", "InvalidArgument", "JobFailed", "JobNotFound",
    "JobqError", "NotMigrated", "NullValue", "PayloadTooLarge", "PermanentError",
    "PermissionDenied", "Retry", "SerializationFailure", "error_summary", "from_psycopg",
]


class JobqError(Exception):
    """Base of every jobq error; ``sqlstate`` is the PostgreSQL error code, when there is one."""

    sqlstate: str | None = None

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        if sqlstate is not None:
            self.sqlstate = sqlstate

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidArgument(JobqError):
    """An argument was refused (SQLSTATE 22023 invalid_parameter_value); nothing changed."""

    sqlstate = "22023"


class NullValue(InvalidArgument):
    """A NULL was given where a value is required, e.g. a NULL payload (SQLSTATE 22004)."""

    sqlstate = "22004"


class PayloadTooLarge(InvalidArgument):
    """The payload is larger than the installation's ``max_payload_bytes`` (SQLSTATE 54000)."""

    sqlstate = "54000"


class PermissionDenied(JobqError):
    """The role may not call this function (SQLSTATE 42501); see ``jobq grant``."""

    sqlstate = "42501"


class NotMigrated(JobqError):
    """jobq is not installed (or not up to date) in this database/schema: run ``jobq migrate``
    (SQLSTATE 42883 undefined function, 42P01 undefined table, 3F000 invalid schema name)."""

    sqlstate = "42883"


class IncompatibleSchema(JobqError):
    """The schema has a breaking change (a migration marked ``--! breaking-change``) that this
    client does not have: it was migrated by a newer jobq. Upgrade the client package."""


class SerializationFailure(JobqError):
    """The transaction could not be serialized (SQLSTATE 40001/40P01); retry it."""

    sqlstate = "40001"


class ConnectionFailed(JobqError):
    """The database could not be reached, or the connection was lost (SQLSTATE class 08)."""


class JobFailed(JobqError):
    """``Queue.result()``: the job ``job_id`` ended ``status`` (``failed``, ``dead_letter`` or
    ``cancelled``) without a result; ``last_error``: its error, or the cancel's reason."""

    def __init__(self, job_id: uuid.UUID, status: str, last_error: str | None) -> None:
        detail = error_summary(last_error)
        super().__init__(f"job {job_id} ended {status}" + (f": {detail}" if detail else ""))
        self.job_id = job_id
        self.status = status
        self.last_error = last_error


class JobNotFound(JobqError, LookupError):
    """No job has this id (never enqueued, or pruned since)."""


def error_summary(text: str | None) -> str:
    """The line of a job's error that says what failed: its first (a Worker stores the
    exception, then the traceback's last frames), or the last of a whole Python traceback."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return ""
    prefix = "worker error: " if lines[0].startswith("worker error: ") else ""
    if lines[0][len(prefix):].startswith("Traceback") and len(lines) > 1:
        return prefix + lines[-1]
    return lines[0]


class PermanentError(Exception):
    """Raised by a job handler: fail the job now, without retry (status ``failed``)."""


class Retry(Exception):
    """Raised by a job handler: retry the job after ``after`` (the worker's backoff if None).

    The attempt still counts: a job that has used all its attempts goes to ``dead_letter``.
    """

    def __init__(self, after: timedelta | float | None = None, message: str | None = None) -> None:
        if after is not None and not isinstance(after, timedelta):
            after = timedelta(seconds=after)
        if after is not None and after < timedelta(0):
            raise ValueError(f"Retry(after=...) must not be negative, got {after!r}")
        self.after: timedelta | None = after
        super().__init__(message or f"retry requested (after {after})")


_NOT_MIGRATED_HINT = (
    "jobq is not installed in this database/schema (or is older than this client); "
    "run `jobq migrate`"
)

# Each class by its SQLSTATE, and the others it stands for: 22P02 invalid_text_representation
# (bad JSON), 22P05 untranslatable_character (\u0000 in jsonb), 22021 character_not_in_repertoire.
_BY_SQLSTATE: dict[str, type[JobqError]] = {
    code: cls
    for cls, others in (
        (InvalidArgument, ("22P02", "22P05", "22021")), (NullValue, ()), (PayloadTooLarge, ()),
        (PermissionDenied, ()), (NotMigrated, ("42P01", "3F000")),
        (SerializationFailure, ("40P01",)),
    )
    for code in (cls.sqlstate, *others)
    if code is not None
}


def from_psycopg(exc: psycopg.Error) -> JobqError:
    """Map a psycopg error to the typed jobq exception (the caller raises it ``from exc``)."""
    if is_conninfo_error(exc):
        # libpq quotes the part of the DSN it cannot parse, which may be the password.
        return JobqError(f"invalid connection string: {mask_quoted(str(exc).strip())}")
    sqlstate = exc.sqlstate
    primary = exc.diag.message_primary or str(exc).strip() or type(exc).__name__
    message = primary
    detail = exc.diag.message_detail
    if detail:
        message = f"{message} ({detail})"
    connection_state = sqlstate is None or sqlstate.startswith(("08", "57P"))
    if connection_state and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        text = str(exc).strip()
        first_line = text.splitlines()[0] if text else primary
        if not first_line.startswith("connection failed"):
            first_line = f"database connection failed: {first_line}"
        return ConnectionFailed(first_line, sqlstate=sqlstate)
    if sqlstate is None:
        if isinstance(exc, psycopg.DataError):  # refused by the driver before sending
            return InvalidArgument(message, sqlstate=None)
        return JobqError(message)
    cls = _BY_SQLSTATE.get(sqlstate, JobqError)
    if cls is NotMigrated:
        message = f"{_NOT_MIGRATED_HINT}: {primary}"
    return cls(message, sqlstate=sqlstate)
