"""A TCP proxy in front of PostgreSQL that can lose the reply to a COMMIT.

The one fault ``pg_terminate_backend`` cannot produce on purpose: the server commits, and the
client never hears it (the connection drops between the commit and its reply). Armed with
:meth:`drop_next_commit_reply`, the proxy forwards the server's messages one by one and, at the
first ``CommandComplete`` whose tag is ``COMMIT``, closes both sides instead of forwarding it.

Connections through it must not negotiate TLS or GSS (``sslmode=disable gssencmode=disable``):
then the server's stream is plain protocol messages (type byte, int32 length) from the start.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

from psycopg.conninfo import conninfo_to_dict, make_conninfo


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
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, name="fx-proxy", daemon=True).start()

    def drop_next_commit_reply(self) -> None:
        self.dropped.clear()
        self._armed.set()

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
            threading.Thread(target=self._pump_up, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pump_down, args=(server, client), daemon=True).start()

    @staticmethod
    def _pump_up(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        _close(src)
        _close(dst)

    def _pump_down(self, src: socket.socket, dst: socket.socket) -> None:
        buf = b""
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
