"""The dashboard's public names under the client's package, for code that imports them from
here: the dashboard is the jobq-web distribution (``jobq_web``), so they work where it is
installed."""

from __future__ import annotations

try:
    from jobq_web import Credentials, create_app, is_loopback, parse_bind
except ImportError as exc:
    raise ImportError(
        f"the dashboard is the jobq-web package: pip install jobq-web ({exc.name} is missing)",
        name=exc.name,
    ) from None

__all__ = ["Credentials", "create_app", "is_loopback", "parse_bind"]
