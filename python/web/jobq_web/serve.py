"""What ``jobq web`` runs once it has read its options: the privilege report of ``--check``, and
the server (uvicorn on a socket bound before the URL is printed)."""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Sequence

import uvicorn

from pgq_client import JobqError

from .app import FUNCTIONS, Dashboard, create_app
from .guard import Credentials


def role_report(dsn: str, schema: str | None) -> list[str]:
    """The lines of ``jobq web --check``: the connected role and, per function the pages call,
    whether it may call it; :class:`~jobq_web.app.NotInstalled` where jobq is not installed."""
    board = Dashboard(dsn, schema)
    try:
        role, allowed = board.role()
    finally:
        board.close()
    return [
        f"role {role} may call:",
        *(f"  {name:28} {'yes' if allowed.get(name) else 'no'}" for name in FUNCTIONS),
    ]


def serve(
    dsn: str,
    schema: str | None,
    host: str,
    port: int,
    *,
    credentials: Credentials | None = None,
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Serve the dashboard on ``host:port`` until SIGTERM or Ctrl-C; a port in use is a
    :class:`~pgq_client.JobqError` that names it."""
    # the bound address names this server; a wildcard bind names none of its own
    named = [] if host in ("0.0.0.0", "::", "") else [host]
    app = create_app(
        dsn, schema=schema, credentials=credentials, allowed_hosts=[*named, *allowed_hosts]
    )
    listening = _listen(host, port)
    shown = f"[{host}]" if ":" in host else host
    note = " (credential required)" if credentials else ""
    print(f"jobq web: http://{shown}:{port}/{note}", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    # uvicorn stops on SIGTERM, puts back the handler it found and raises the signal again; this
    # handler lets that pass, so that a clean stop exits 0 as a service manager expects.
    found = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        server.run(sockets=[listening])
    finally:
        signal.signal(signal.SIGTERM, found)


def _listen(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise JobqError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock
