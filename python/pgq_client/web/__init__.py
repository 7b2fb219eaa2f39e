"""The jobq dashboard: an ASGI application (Starlette) that shows queues, jobs, dead letters and
schedules, and lets an operator requeue or cancel jobs.

It reads and acts through a :class:`~pgq_client.Queue` over its pool (the operations of
``pgq_client._ops``), as the database role it connects with: what that role may not do is shown
disabled (asked of ``has_function_privilege``), never attempted.

``jobq web`` serves it; an application mounts it with::

    from pgq_client.web import create_app
    app.mount("/jobq", create_app(dsn))         # or a psycopg_pool.ConnectionPool

Needs the ``web`` extra (``pip install 'pgq-client[web]'``): Starlette, Jinja2 and, for
``jobq web``, uvicorn.
"""

from __future__ import annotations

from .app import Credentials, create_app, is_loopback, parse_bind

__all__ = ["Credentials", "create_app", "is_loopback", "parse_bind"]
