"""The installer: ``jobq migrate``, ``grant``/``revoke``, and what ``doctor`` checks, a module
per concern (docs/DEVELOPING.md); its SQL is in ``sql/*.sql`` beside them, filled in with
psycopg.sql. Clients import :mod:`.compat` alone."""

from .files import MigrationError

__all__ = ["MigrationError"]
