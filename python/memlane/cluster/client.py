"""A served index (``memlane serve``) seen from a client: ``memlane.connect(URL)``, ``--remote URL``.

It speaks HTTP with the standard library's ``http.client`` (no Ray, no HTTP package: ``import
memlane`` and a hook process stay light), keeping its connections open for the next request
(a new connection costs ~0.5 ms more on loopback), and returns the same :class:`memlane.Hit`
and :class:`memlane.recall.Recall` objects as a home. The bearer token comes from ``token`` or
``MEMLANE_TOKEN``; the server decides what it may read (:mod:`memlane.cluster.access`). A
server beyond loopback is reached through the proxy the environment names
(``HTTP_PROXY``/``HTTPS_PROXY``, ``NO_PROXY`` as curl and pip read them; HTTPS through a
``CONNECT`` tunnel). Every failure — a wrong URL, a server down, a refused token or request —
is one :class:`RemoteError` saying what to do.

Example:
    >>> mem = connect("http://127.0.0.1:9")  # nothing listens on port 9
    >>> mem.status()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    memlane.cluster.client.RemoteError: cannot reach a memlane server at http://127.0.0.1:9: ...
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import json
import os
import ssl
import threading
import urllib.parse
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memlane.errors import InvalidArgumentError, MemlaneError
from memlane.ranking.hit import Hit
from memlane.recall import (
    DEFAULT_MAX_TOKENS,
    Recall,
    RecallItem,
    RecallOptions,
    recall_options,
    shows_recall_options,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["RemoteError", "RemoteMemory", "connect", "loopback"]


class RemoteError(MemlaneError):
    """The served index could not answer (unreachable, token refused, bad request)."""


class RemoteMemory:
    """A served index with the reading part of the :class:`memlane.Memory` interface:
    ``search``, ``recall``, ``status`` (and ``snippets`` for what ``search`` fetched).

    After each call, ``missing_shards`` lists the shards that did not answer (the answer
    came from the others: ``partial``).
    """

    def __init__(self, url: str, token: str | None = None, timeout: float = 30.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise InvalidArgumentError(
                f"{url!r} is not a server URL: give http://HOST:PORT (what `memlane serve` printed)"
            )
        self.url = url.rstrip("/")
        parts = urllib.parse.urlsplit(self.url)
        if not parts.hostname:
            raise InvalidArgumentError(f"{url!r} names no host: give http://HOST:PORT (what `memlane serve` printed)")
        self._address = (parts.scheme, parts.hostname, parts.port)
        self._base = parts.path
        self._proxy = _proxy_for(parts.scheme, parts.hostname)
        self.token = token if token is not None else os.environ.get("MEMLANE_TOKEN") or None
        self.timeout = timeout
        self.missing_shards: list[int] = []
        self.generation: int | None = None
        self._snippets: dict[tuple[str, str], str] = {}
        self._idle: list[http.client.HTTPConnection] = []  # open connections no request is using
        self._lock = threading.Lock()
        # A client dropped without close() still closes its sockets.
        weakref.finalize(self, _close_all, self._idle)

    def __enter__(self) -> RemoteMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the kept connections (a later request opens another)."""
        with self._lock:
            _close_all(self._idle)

    @property
    def partial(self) -> bool:
        """Whether the last answer lacked some shards."""
        return bool(self.missing_shards)

    def _exchange(self, method: str, path: str, data: bytes | None, headers: dict[str, str]) -> tuple[int, str, bytes]:
        """One request: status, reason, body. On a kept connection if one is idle; one the
        server closed meanwhile (idle timeout, restart) is dropped and the request sent once
        more on a new connection: every endpoint only reads, so asking again is safe."""
        if self._proxy is not None and self._address[0] == "http":
            # Plain HTTP through a proxy: it takes the whole URL (the Host header follows it).
            _, host, port = self._address
            path = f"http://{host if ':' not in host else f'[{host}]'}{f':{port}' if port else ''}{path}"
            headers = {**headers, **self._proxy_auth()}
        with self._lock:
            kept = self._idle.pop() if self._idle else None
        if kept is not None:
            try:
                return self._send(kept, method, path, data, headers)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                pass
        return self._send(self._connection(), method, path, data, headers)

    def _connection(self) -> http.client.HTTPConnection:
        """A new connection to the server, or to the proxy in front of it (HTTPS: a tunnel
        through it, TLS end to end)."""
        scheme, host, port = self._address
        kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        if self._proxy is None:
            return kind(host, port, timeout=self.timeout)
        proxy_host = self._proxy.hostname
        assert proxy_host is not None  # _proxy_for refuses a proxy URL without a host
        conn = kind(proxy_host, self._proxy.port or 80, timeout=self.timeout)
        if scheme == "https":
            conn.set_tunnel(host, port, headers=self._proxy_auth())
        return conn

    def _proxy_auth(self) -> dict[str, str]:
        """``Proxy-Authorization`` for the user and password in the proxy's URL, if it has them."""
        if self._proxy is None or not self._proxy.username:
            return {}
        user, password = urllib.parse.unquote(self._proxy.username), urllib.parse.unquote(self._proxy.password or "")
        return {"Proxy-Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

    def _send(
        self, conn: http.client.HTTPConnection, method: str, path: str, data: bytes | None, headers: dict[str, str]
    ) -> tuple[int, str, bytes]:
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            body = response.read()
        except BaseException:
            conn.close()  # in an unknown state: not used again
            raise
        if response.will_close:
            conn.close()
        else:
            with self._lock:
                self._idle.append(conn)
        return response.status, response.reason, body

    def _request(self, route: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            status, reason, raw = self._exchange(
                "POST" if body is not None else "GET", f"{self._base}/{route}", data, headers
            )
        except (OSError, http.client.HTTPException) as exc:  # refused, unknown host, timeout, a broken answer
            via = ""
            if self._proxy is not None:
                shown = self._proxy._replace(netloc=self._proxy.netloc.rpartition("@")[2]).geturl()
                via = f" through the proxy {shown} (set NO_PROXY={self._address[1]} to go direct)"
            if isinstance(exc, ssl.SSLCertVerificationError):
                via += " (a certificate of its own: point SSL_CERT_FILE at it)"
            raise RemoteError(f"cannot reach a memlane server at {self.url}{via}: {exc}") from None
        if status >= 400:
            try:
                detail = json.loads(raw).get("error") or reason
            except (ValueError, AttributeError):
                detail = reason
            if status == 401:
                hint = "the server refused the token" if self.token else "the server needs a token: set MEMLANE_TOKEN"
                raise RemoteError(f"{self.url}: 401 unauthorized: {hint}") from None
            if status == 403:  # the token is good; what it asked is not its to read (secrets, another project)
                raise RemoteError(f"{self.url}/{route}: 403 forbidden: {detail}") from None
            raise RemoteError(f"{self.url}/{route}: HTTP {status}: {detail}") from None
        try:
            answer = json.loads(raw)
        except ValueError:
            raise RemoteError(f"{self.url} answered something other than JSON: is it a memlane server?") from None
        if not isinstance(answer, dict):
            raise RemoteError(f"{self.url} answered something other than a memlane answer: is it a memlane server?")
        self.missing_shards = list(answer.get("missing_shards") or [])
        self.generation = answer.get("generation")
        return answer

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        sources: Sequence[str] | None = None,
        session_id: str | None = None,
        since: str | int | float | None = None,
        until: str | int | float | None = None,
        fusion: str = "weighted",
        vector_weight: float = 0.6,
        threshold: float | None = None,
        recency: bool = True,
        temporal: bool = True,
        hierarchy: bool = True,
        project: str | None = None,
        branch: str | None = None,
        show_secrets: bool = False,
        snippet_chars: int = 0,
    ) -> list[Hit]:
        """Hits as :meth:`memlane.Memory.search` returns them, answered by the server (texts
        masked unless ``show_secrets``, which a server grants only when started with
        ``--allow-show-secrets``, and to admin tokens only; with ``snippet_chars`` the server
        also cuts each hit's best passage, which :meth:`snippets` then returns). A token given
        a project agent's role reads that project only (the server's ``project`` when none is
        asked)."""
        body: dict[str, Any] = {
            "query": query, "k": k, "sources": list(sources) if sources else None, "session_id": session_id, "since": since,
            "until": until, "fusion": fusion, "vector_weight": vector_weight, "recency": recency, "temporal": temporal,
            "hierarchy": hierarchy, "project": project, "branch": branch, "show_secrets": show_secrets,
        }  # fmt: skip
        if threshold is not None:
            body["threshold"] = threshold
        if snippet_chars:
            body["snippet_chars"] = snippet_chars
        answer = self._request("search", body)
        hits = [Hit(**h) for h in answer["hits"]]
        self._snippets = {(query, h.id): s for h, s in zip(hits, answer.get("snippets") or [])}
        return hits

    def snippets(self, query: str, hits: Sequence[Hit], max_chars: int = 300) -> list[str]:
        """Each hit's passage as the server cut it for the last search (``snippet_chars``), else its beginning."""
        return [self._snippets.get((query, h.id)) or " ".join(h.text[:max_chars].split()) for h in hits]

    @shows_recall_options
    def recall(self, query: str, max_tokens: int = DEFAULT_MAX_TOKENS, **options: Unpack[RecallOptions]) -> Recall:
        """The recall block as :meth:`memlane.Memory.recall` builds it, answered by the server
        (``options``: :class:`memlane.recall.RecallOptions`)."""
        answer = self._request("recall", {"query": query, "max_tokens": max_tokens, **recall_options(options)})
        return Recall(answer["query"], [RecallItem(**i) for i in answer["items"]], answer["text"], answer["tokens"])

    def records_projects(self) -> bool:
        """A served index answers project-scoped queries (the server says when it cannot)."""
        return True

    def status(self) -> dict[str, Any]:
        """The served index's status (``memlane --index URI status --json``'s fields, plus
        ``missing_shards``, ``shard_actors`` and the queries each shard answered)."""
        return self._request("status")


def _proxy_for(scheme: str, host: str) -> urllib.parse.SplitResult | None:
    """The proxy a request to ``host`` goes through: the environment's (``HTTP_PROXY``,
    ``HTTPS_PROXY``; ``NO_PROXY`` exempts hosts), read by the standard library as curl and pip
    read it; None for a loopback server, which no proxy could reach.

    Example:
        >>> _proxy_for("http", "127.0.0.1") is None
        True
    """
    if loopback(host):
        return None
    import urllib.request  # only a client beyond loopback pays for it

    # Undocumented but stable since Python 3.0, and the one reader of NO_PROXY as the environment means it.
    if urllib.request.proxy_bypass_environment(host):  # type: ignore[attr-defined]
        return None
    proxy = urllib.request.getproxies_environment().get(scheme)
    if not proxy:
        return None
    parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if parts.scheme != "http" or not parts.hostname:
        raise InvalidArgumentError(
            f"the {scheme} proxy {proxy!r} from the environment is not http://HOST:PORT, the only kind memlane speaks to"
        )
    return parts


def loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback (a server there is reachable from it alone).

    Example:
        >>> loopback("127.0.0.1"), loopback("::1"), loopback("localhost"), loopback("0.0.0.0")
        (True, True, True, False)
    """
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _close_all(connections: list[http.client.HTTPConnection]) -> None:
    for conn in connections:
        conn.close()
    connections.clear()


def connect(url: str, token: str | None = None, timeout: float = 30.0) -> RemoteMemory:
    """A served index (``memlane serve``) at ``url``, with ``search``, ``recall`` and ``status``.

    Example:
        >>> connect("http://127.0.0.1:8765").url
        'http://127.0.0.1:8765'
    """
    return RemoteMemory(url, token, timeout)
