"""Who may use the viewer, and what every answer carries.

A page that can forget memory is an attack surface, reachable by any page open in the same
browser. The rules, each enforced before a route runs:

- **Host**: the ``Host`` header must name the address the server is bound to (a DNS-rebinding
  page reaches 127.0.0.1 under its own host name, and is refused).
- **Token**: on any address but loopback a token is required (the server refuses to start
  without one); given once (``?token=`` or the login form) it is kept in an HttpOnly,
  SameSite=Strict cookie and compared in constant time.
- **CSRF**: every state-changing request is a POST whose form carries this server's CSRF token
  (a random value only its own pages hold), and whose ``Origin``, when sent, is the server's.
- **Read-only**: every POST is refused (403) and no page shows an action.
- **Headers**: a Content-Security-Policy allowing only the viewer's own stylesheet (no script
  at all, so text from a transcript can never run), no framing, no referrer, no sniffing.

Example:
    >>> access = Access("127.0.0.1", 8765)
    >>> access.host_allowed("127.0.0.1:8765"), access.host_allowed("localhost:8765"), access.host_allowed("evil.test:8765")
    (True, True, False)
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field

from memlane.errors import InvalidArgumentError

TOKEN_ENV = "MEMLANE_TOKEN"
"""Where ``memlane ui`` reads the access token when ``--token`` is not given."""

COOKIE = "memlane_token"

HEADERS = {
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",  # "no-referrer" makes a browser send `Origin: null` with its own forms
    "cache-control": "no-store",
}
"""Sent with every answer."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``.

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
        (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class Access:
    """The rules of one server.

    Args:
        host: The address bound.
        port: The port bound.
        token: The access token (required unless ``host`` is loopback).
        read_only: Refuse every action.

    Raises:
        InvalidArgumentError: A non-loopback ``host`` without a token.
    """

    host: str
    port: int
    token: str | None = None
    read_only: bool = False
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def __post_init__(self) -> None:
        if not self.token and not is_loopback(self.host):
            raise InvalidArgumentError(
                f"serving on {self.host} (not loopback) needs a token: --token T or ${TOKEN_ENV}"
            )

    def hosts(self) -> set[str]:
        """The ``Host`` values accepted: the bound address with and without its port, and
        ``localhost`` for a loopback server."""
        names = {self.host, f"[{self.host}]" if ":" in self.host else self.host}
        if is_loopback(self.host):
            names |= {"localhost", "127.0.0.1", "[::1]"}
        return {n for name in names for n in (name, f"{name}:{self.port}")}

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request's ``Host`` header names this server."""
        return host is not None and host.lower() in self.hosts()

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether a POST's ``Origin`` (when the browser sends one) is this server."""
        if origin is None:
            return True
        scheme, _, rest = origin.partition("://")
        return scheme in ("http", "https") and self.host_allowed(rest)

    def token_matches(self, given: str | None) -> bool:
        """Whether ``given`` is the access token (always, when there is none)."""
        if not self.token:
            return True
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def csrf_matches(self, given: str | None) -> bool:
        """Whether a form's ``csrf`` field is this server's."""
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())
