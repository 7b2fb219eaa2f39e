"""What stands before every route: the Host/Origin allow-list, the credential, the security
headers, and the CSRF token of the forms."""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

CSRF_COOKIE = "jobq_csrf"
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
}
# The names the dashboard answers to by default: this machine's. A page elsewhere whose name
# is made to resolve to 127.0.0.1 (DNS rebinding) sends its own name as Host, so the browser's
# same-origin rule would let it read the pages and post the forms: a request whose Host (or,
# for a state-changing one, whose Origin) names another host is refused.
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Credentials:
    """HTTP Basic credentials every request must present (compared in constant time)."""

    user: str
    password: str

    @classmethod
    def parse(cls, value: str) -> Credentials:
        """``USER:PASSWORD``; both parts non-empty."""
        user, sep, password = value.partition(":")
        if not sep or not user or not password:
            raise ValueError("a credential is USER:PASSWORD, both non-empty")
        return cls(user, password)

    def accepts(self, header: str | None) -> bool:
        if not header or not header.lower().startswith("basic "):
            return False
        try:
            given = base64.b64decode(header[6:].strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        return hmac.compare_digest(given, f"{self.user}:{self.password}".encode())


def parse_bind(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets) -> (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--bind takes HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str | None:
    """The host name of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``),
    lower-case, or None when it is malformed."""
    value = value.strip().lower()
    if not value or any(c.isspace() or c in "/@?#\\" for c in value):
        return None
    if value.startswith("["):
        end = value.find("]")
        rest = value[end + 1:] if end > 1 else None
        if rest is None or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return None
        return value[1:end]
    name, sep, port = value.partition(":")
    if sep and not port.isdigit():
        return None
    return name.rstrip(".") or None


class Guard(BaseHTTPMiddleware):
    """Refuses a request whose ``Host`` is not one of the allowed host names (421), or a
    state-changing one whose ``Origin`` is not (403); asks for the credential (when one is
    set); adds the security headers to every response. The CSRF token is checked by the POST
    routes themselves (they need the form)."""

    def __init__(
        self, app: ASGIApp, credentials: Credentials | None, allowed_hosts: frozenset[str]
    ) -> None:
        super().__init__(app)
        self.credentials = credentials
        self.allowed_hosts = allowed_hosts

    def _allowed(self, name: str | None) -> bool:
        return name is not None and ("*" in self.allowed_hosts or name in self.allowed_hosts)

    def _refusal(self, request: Request) -> Response | None:
        if not self._allowed(host_name(request.headers.get("host", ""))):
            return Response(
                "the jobq dashboard does not answer to this host name (jobq web --allowed-host "
                "NAME adds one)\n", status_code=421, media_type="text/plain",
            )
        origin = request.headers.get("origin")
        if request.method not in _SAFE_METHODS and origin is not None:
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or not self._allowed(host_name(parts.netloc)):
                why = "the jobq dashboard refuses a change requested by another site\n"
                return Response(why, status_code=403, media_type="text/plain")
        if self.credentials and not self.credentials.accepts(request.headers.get("authorization")):
            return Response(
                "the jobq dashboard needs its credential\n",
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="jobq", charset="UTF-8"'},
                media_type="text/plain",
            )
        return None

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = self._refusal(request) or await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response


def csrf_token(request: Request) -> tuple[str, bool]:
    """The CSRF token of this browser (its cookie), and whether it must be set now."""
    token = request.cookies.get(CSRF_COOKIE, "")
    if len(token) >= 32 and token.replace("-", "").replace("_", "").isalnum():
        return token, False
    return secrets.token_urlsafe(32), True


def csrf_ok(request: Request, fields: dict[str, str]) -> bool:
    """The form's token equals the cookie, and the POST's Origin (or Referer), when the
    browser sends one, names this host."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not cookie or not hmac.compare_digest(cookie.encode(), fields.get("csrf", "").encode()):
        return False
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")
