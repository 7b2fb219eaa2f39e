"""The installer: ``jobq migrate``, ``grant``/``revoke``, and what ``doctor`` checks.

``sql/migrations/NNNN_<what>.sql`` (tables, indexes, types, data changes) are applied in order,
each once, each in its own transaction, and recorded in ``<schema>.jobq_migrations`` with the
SHA-256 of the file; an applied migration whose file changed is refused, and so is a record
this jobq does not know (a newer jobq, or a development build before 0.1.0). Then every
function file (``sql/functions/jobq_<name>.sql``) whose SHA-256 differs from the one recorded
for it is applied, all in one transaction. ``sql/functions/history.sha256`` lists every
version of every function file jobq has shipped: a schema that recorded another one was
migrated by a newer jobq and is refused rather than given older bodies.

Modules by concern: :mod:`.files` (the files and their header lines), :mod:`.levels` (the
levels of ``jobq grant``), :mod:`.plan` (records against files), :mod:`.script` (the
statements, and ``--dry-run``), :mod:`.runner` (``migrate``), :mod:`.privileges`
(``grant``/``revoke``), :mod:`.drift` (who controls a schema, what differs from the files),
:mod:`.citus`, and :mod:`.compat`, the only one clients import. The SQL is in ``sql/*.sql``
beside them, filled in with psycopg.sql.
"""

from .files import MigrationError

__all__ = ["MigrationError"]
