"""A TCP proxy in front of PostgreSQL that can lose the reply to a COMMIT, or to a claim.

Two faults ``pg_terminate_backend`` cannot produce on purpose: the server commits, and the
client never hears it (the connection drops between the commit and its reply).

* :meth:`drop_next_commit_reply`: the proxy forwards the server's messages one by one and, at
  the first ``CommandComplete`` whose tag is ``COMMIT``, closes both sides instead of
  forwarding it.
* :meth:`drop_next_reply_with_rows`: at the next statement whose text contains a marker (by
  default ``jobq_dequeue``) and that returns rows, the proxy keeps the whole reply back until
  the server's ``ReadyForQuery`` (so the statement's implicit transaction has committed), then
  closes both sides without forwarding any of it. The client's messages are read one by one to
  find the statement: its text in a ``Query`` or ``Parse``, or, once psycopg has prepared it,
  the name of that prepared statement in a ``Bind``.

Connections through it must not negotiate TLS or GSS (``sslmode=disable gssencmode=disable``):
then both streams are plain protocol messages (type byte, int32 length) after the client's
startup packet (int32 length, no type byte).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from psycopg.conninfo import conninfo_to_dict, make_conninfo


@dataclass
class _Link:
    """What the two pumps of one client connection share."""

    prepared: set[bytes] = field(default_factory=set)  # statement names holding the marker
    marked: threading.Event = field(default_factory=threading.Event)  # the reply to hold back


class CommitDroppingProxy:
    def __init__(self, dsn: str) -> None:
        params = conninfo_to_dict(dsn)
        self.upstream = (str(params.get("host", "127.0.0.1")), int(str(params.get("port", 5432))))
        self._listener = socket.create_server(("127.0.0.1", 0))
        port = self._listener.getsockname()[1]
        self.dsn = make_conninfo(
            dsn, host="127.0.0.1", port=port, sslmode="disable", gssencmode="disable"
        )
        self._armed = threading.Event()
        self.dropped = threading.Event()
        self._marker: bytes | None = None  # armed for a reply with rows to this statement
        self.dropped_rows = 0  # rows of the reply that was dropped
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, name="fx-proxy", daemon=True).start()

    def drop_next_commit_reply(self) -> None:
        self.dropped.clear()
        self._armed.set()

    def drop_next_reply_with_rows(self, marker: bytes = b"jobq_dequeue") -> None:
        self.dropped.clear()
        self.dropped_rows = 0
        self._marker = marker

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            for s in self._sockets:
                _close(s)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._sockets += [client, server]
            link = _Link()
            threading.Thread(
                target=self._pump_up, args=(client, server, link), daemon=True
            ).start()
            threading.Thread(
                target=self._pump_down, args=(server, client, link), daemon=True
            ).start()

    def _pump_up(self, src: socket.socket, dst: socket.socket, link: _Link) -> None:
        buf = b""
        started = False
        try:
            while data := src.recv(65536):
                buf += data
                out: list[bytes] = []
                while True:
                    if not started:  # the startup packet: int32 length, no type byte
                        if len(buf) < 4 or len(buf) < int.from_bytes(buf[:4], "big"):
                            break
                        size = int.from_bytes(buf[:4], "big")
                        started = True
                    else:
                        if len(buf) < 5 or len(buf) < 1 + int.from_bytes(buf[1:5], "big"):
                            break
                        size = 1 + int.from_bytes(buf[1:5], "big")
                        self._inspect(buf[:size], link)
                    out.append(buf[:size])
                    buf = buf[size:]
                if out:
                    dst.sendall(b"".join(out))
        except OSError:
            pass
        _close(src)
        _close(dst)

    def _inspect(self, msg: bytes, link: _Link) -> None:
        """Mark the link when the client sends the statement a drop is armed for."""
        marker = self._marker
        if marker is None:
            return
        kind, body = msg[:1], msg[5:]
        if kind == b"Q" and marker in body:
            link.marked.set()
        elif kind == b"P":  # Parse: name \0 query \0 ...
            name, _, rest = body.partition(b"\0")
            if marker in rest.partition(b"\0")[0]:
                if name:
                    link.prepared.add(name)
                link.marked.set()
        elif kind == b"B":  # Bind: portal \0 statement \0 ...
            statement = body.partition(b"\0")[2].partition(b"\0")[0]
            if statement in link.prepared:
                link.marked.set()

    def _pump_down(self, src: socket.socket, dst: socket.socket, link: _Link) -> None:
        buf = b""
        held: list[bytes] = []  # the reply to a marked statement, kept back
        try:
            while data := src.recv(65536):
                buf += data
                out: list[Any] = []
                while len(buf) >= 5:
                    size = 1 + int.from_bytes(buf[1:5], "big")
                    if len(buf) < size:
                        break
                    msg, buf = buf[:size], buf[size:]
                    if msg[:1] == b"C" and msg[5:] == b"COMMIT\x00" and self._armed.is_set():
                        self._armed.clear()
                        if out:
                            dst.sendall(b"".join(out))
                        _close(src)
                        _close(dst)
                        self.dropped.set()
                        return
                    if link.marked.is_set():
                        held.append(msg)
                        if msg[:1] != b"Z":
                            continue
                        rows = sum(1 for m in held if m[:1] == b"D")
                        link.marked.clear()
                        if rows and self._marker is not None:
                            # Committed (ReadyForQuery follows the implicit commit): drop it all.
                            self._marker = None
                            self.dropped_rows = rows
                            if out:
                                dst.sendall(b"".join(out))
                            _close(src)
                            _close(dst)
                            self.dropped.set()
                            return
                        out.extend(held)
                        held = []
                        continue
                    out.append(msg)
                if out:
                    dst.sendall(b"".join(out))
        except OSError:
            pass
        _close(src)
        _close(dst)


def _close(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    s.close()
