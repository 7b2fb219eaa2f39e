"""The installer: ``jobq migrate``, ``grant``/``revoke``, and what ``doctor`` checks.

Modules by concern: :mod:`.files` (the migrations and function files, their header lines and
history), :mod:`.levels` (the levels of ``jobq grant``), :mod:`.plan` (what a schema records
against the files), :mod:`.script` (the statements, and ``--dry-run``), :mod:`.runner`
(``migrate``), :mod:`.privileges` (``grant``/``revoke``), :mod:`.drift` (who controls a
schema, what differs from the files), :mod:`.citus`, and :mod:`.compat`, the only one clients
import. The SQL is in ``sql/*.sql`` beside them, filled in with psycopg.sql.
"""

from .files import MigrationError

__all__ = ["MigrationError"]
