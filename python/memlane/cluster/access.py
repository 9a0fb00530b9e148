"""Who may ask a served index what (``memlane serve``): bearer tokens, the agent role each
token stands for, and the narrowing of a request to that role.

- ``--token T`` (or ``$MEMLANE_TOKEN``) is an admin token: it reads every project.
- ``--token-file FILE`` maps more tokens to roles, one ``TOKEN ROLE`` a line (blank lines and
  ``#`` comments ignored), a role as ``memlane mcp --agent`` takes it: ``admin`` or
  ``project:NAME`` (see :mod:`memlane.roles`). A request with a project agent's token
  reads that project only: a ``project`` field naming another one is refused (403) rather than
  quietly replaced, so an agent that asked for the wrong project learns it instead of reading
  answers it takes for that project's. A ``skill:NAME`` role reads the project its session
  runs in, which a server cannot see: the file refuses it (give the skill a ``project:NAME``
  token). The file holds credentials: one that others may read is refused, as ssh refuses
  such a key.
- ``show_secrets`` is refused (403) unless the server runs with ``--allow-show-secrets``, and
  then only for admin tokens; each request granted is logged (see :mod:`memlane.cluster.serve`).

Tokens are compared in constant time (:func:`hmac.compare_digest`), every one of them for
every request, so the time an answer takes says nothing about which token nearly matched.

Example:
    >>> access = Access.build("admin-t", parse_tokens("agent-t project:billing", "tokens"))
    >>> str(access.grant("Bearer agent-t").role), access.grant("bearer admin-t").source
    ('project:billing', '--token')
    >>> access.grant("Bearer wrong") is None
    True
"""

from __future__ import annotations

import hmac
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlane import _check
from memlane.errors import InvalidArgumentError, MemlaneError
from memlane.roles import Role

__all__ = ["Access", "Forbidden", "Grant", "bearer", "parse_tokens", "read_tokens"]


class Forbidden(MemlaneError, PermissionError):
    """A request its token may not make (HTTP 403): secrets in clear, another project."""


@dataclass(frozen=True)
class Grant:
    """What one token may read: its ``role`` and where it was given (``source``: ``--token`` or
    ``FILE:LINE``), which names it in the log without writing the token itself."""

    role: Role
    source: str


OPEN = Grant(Role(), "no token")
"""The grant of every request to a server started without tokens (loopback only, or --insecure)."""


def bearer(authorization: str) -> str | None:
    """The token of an ``Authorization`` header's ``Bearer`` credentials (the scheme's case is
    free, RFC 7235); None for another scheme or none.

    Example:
        >>> bearer("Bearer abc"), bearer("bearer  abc "), bearer("Basic YTpi"), bearer("")
        ('abc', 'abc', None, None)
    """
    scheme, _, credentials = authorization.strip().partition(" ")
    return credentials.strip() or None if scheme.lower() == "bearer" else None


def parse_tokens(text: str, name: str) -> list[tuple[str, Grant]]:
    """The ``(token, grant)`` pairs of a tokens file's text (``name`` names it in errors).

    Raises:
        InvalidArgumentError: One line saying which line is wrong and why.

    Example:
        >>> [(t, str(g.role), g.source) for t, g in parse_tokens("# agents\\nk1 admin\\nk2 project:billing\\n", "tokens")]
        [('k1', 'admin', 'tokens:2'), ('k2', 'project:billing', 'tokens:3')]
        >>> parse_tokens("k1 skill:review", "tokens")
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: tokens:1: a skill agent reads the project its session runs in, which a server cannot see: give its token the role project:NAME
    """
    pairs: list[tuple[str, Grant]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        where = f"{name}:{number}"
        if len(fields) != 2:
            raise InvalidArgumentError(
                f"{where}: expected TOKEN ROLE (e.g. 7f3c… project:billing), got {len(fields)} field{'s' if len(fields) != 1 else ''}"
            )
        token, role_text = fields
        try:
            role = Role.parse(role_text)
        except ValueError as exc:
            raise InvalidArgumentError(f"{where}: {exc}") from None
        if role.kind == "skill":
            raise InvalidArgumentError(
                f"{where}: a skill agent reads the project its session runs in, which a server cannot see: give its token the role project:NAME"
            )
        if token in seen:
            raise InvalidArgumentError(f"{where}: the same token as line {seen[token]}: each token stands for one role")
        seen[token] = number
        pairs.append((token, Grant(role, where)))
    return pairs


def read_tokens(path: str | os.PathLike[str]) -> list[tuple[str, Grant]]:
    """The ``(token, grant)`` pairs of a tokens file that only its owner (and group) may read.

    Raises:
        InvalidArgumentError: The file is missing, readable or writable by others, or has a bad line (one line).
    """
    file = Path(path)
    try:
        mode = file.stat().st_mode
        if os.name == "posix" and mode & (stat.S_IROTH | stat.S_IWOTH):
            raise InvalidArgumentError(f"--token-file {path}: other users may read or write it: `chmod 600 {path}`")
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidArgumentError(f"--token-file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"--token-file {path}: cannot read it: {exc}") from None
    pairs = parse_tokens(text, str(path))
    if not pairs:
        raise InvalidArgumentError(f"--token-file {path} holds no token: one `TOKEN ROLE` a line")
    return pairs


@dataclass(frozen=True)
class Access:
    """The tokens a server takes, their grants, and whether admin tokens may ask ``show_secrets``."""

    tokens: tuple[tuple[bytes, Grant], ...] = ()
    allow_show_secrets: bool = False

    @classmethod
    def build(
        cls, token: str | None = None, pairs: list[tuple[str, Grant]] | None = None, allow_show_secrets: bool = False
    ) -> Access:
        """``token`` as an admin token, then the pairs of a tokens file.

        Raises:
            InvalidArgumentError: A token of the file is ``token`` itself (it would stand for two roles).
        """
        every = [(token, Grant(Role(), "--token"))] if token else []
        for value, grant in pairs or []:
            if value == token:
                raise InvalidArgumentError(
                    f"{grant.source}: the same token as --token/MEMLANE_TOKEN (an admin token): each token stands for one role"
                )
            every.append((value, grant))
        return cls(tuple((value.encode(), grant) for value, grant in every), allow_show_secrets)

    def grant(self, authorization: str) -> Grant | None:
        """The grant of a request's ``Authorization`` header; None when it is refused (no known token)."""
        if not self.tokens:
            return OPEN
        sent = (bearer(authorization) or "").encode()
        found = None
        for value, grant in self.tokens:  # every token, matched or not: no early exit to time
            if hmac.compare_digest(sent, value) and found is None:
                found = grant
        return found

    def narrow(self, grant: Grant, body: dict[str, Any], keys: Callable[[str], list[str]]) -> dict[str, Any]:
        """``body`` as ``grant`` may ask it: ``project`` within the role's project (the role's when
        none was asked); ``show_secrets`` checked.

        Raises:
            Forbidden: Secrets in clear it may not have, or a project outside its role's.
        """
        if _check.flag("show_secrets", body.get("show_secrets", False)):
            if not self.allow_show_secrets:
                raise Forbidden(
                    "show_secrets refused: this server hands out texts with secrets masked "
                    "(`memlane serve --allow-show-secrets` lets admin tokens ask, each request logged)"
                )
            if grant.role.kind != "admin":
                raise Forbidden(
                    f"show_secrets refused: agent {grant.role} gets texts with secrets masked (only admin tokens may ask)"
                )
        if grant.role.kind == "admin":
            return body
        asked = _check.optional_text("project", body.get("project"))
        try:
            return {**body, "project": grant.role.narrow(asked, keys)}
        except PermissionError as exc:
            raise Forbidden(str(exc)) from None
