"""The jobq dashboard (docs/dashboard.md), the ``jobq-web`` distribution: a Starlette
application built on the public ``pgq_client`` API, as the role it connects with (what that
role may not do is shown disabled, never attempted). ``jobq web`` serves it; an application
mounts it: ``app.mount("/jobq", create_app(dsn_or_pool))``.
"""

from __future__ import annotations

from .app import Credentials, create_app, is_loopback, parse_bind

__all__ = ["Credentials", "create_app", "is_loopback", "parse_bind"]
