"""The served index's client (``memlane.connect``) over a real socket, without Ray: it keeps its
connections open for the next request, replaces one the server closed while it sat idle, and
reaches a server beyond loopback through the environment's proxy."""

from __future__ import annotations

import base64
import http.client
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

import memlane
from memlane.cluster.client import RemoteError, _proxy_for


class _Status(BaseHTTPRequestHandler):
    """Answers ``GET /status`` as a memlane server would, over HTTP/1.1 keep-alive; counts
    connections. With ``server.one_request`` it closes each connection after one answer
    without saying so (what an idle timeout or a restart does to a kept connection)."""

    protocol_version = "HTTP/1.1"

    def handle(self) -> None:
        self.server.connections += 1  # type: ignore[attr-defined]
        if self.server.one_request:  # type: ignore[attr-defined]
            self.handle_one_request()
        else:
            super().handle()

    def do_GET(self) -> None:
        body = json.dumps({"chunks": 3, "missing_shards": [], "generation": 7}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        """A search or recall as a server with roles answers it: 403 for secrets in clear or
        another project than the token's, else an empty answer."""
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("show_secrets"):
            status, answer = 403, {"error": "show_secrets refused: this server hands out texts with secrets masked"}
        elif body.get("project") not in (None, "alpha"):
            status, answer = 403, {"error": f"agent project:alpha reads project alpha only, not {body['project']}"}
        else:
            status, answer = 200, {"hits": [], "partial": False, "missing_shards": [], "generation": 7}
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    httpd.connections = 0  # type: ignore[attr-defined]
    httpd.one_request = False  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _url(httpd: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def test_requests_share_one_kept_connection(server: ThreadingHTTPServer) -> None:
    with memlane.connect(_url(server)) as mem:
        assert [mem.status()["chunks"] for _ in range(3)] == [3, 3, 3]
        assert mem.generation == 7
    assert server.connections == 1  # type: ignore[attr-defined]


def test_a_connection_the_server_closed_is_replaced_once(server: ThreadingHTTPServer) -> None:
    server.one_request = True  # type: ignore[attr-defined]
    with memlane.connect(_url(server)) as mem:
        assert [mem.status()["chunks"] for _ in range(3)] == [3, 3, 3]
    assert server.connections == 3  # type: ignore[attr-defined]


def test_threads_each_get_a_connection_and_give_it_back(server: ThreadingHTTPServer) -> None:
    with memlane.connect(_url(server)) as mem:
        answers: list[int] = []
        threads = [
            threading.Thread(target=lambda: answers.extend(mem.status()["chunks"] for _ in range(5))) for _ in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert answers == [3] * 15
        opened = server.connections  # type: ignore[attr-defined]
        assert 1 <= opened <= 3  # at most one per request in flight
        assert [mem.status()["chunks"] for _ in range(4)] == [3] * 4
        assert server.connections == opened  # type: ignore[attr-defined]  # the kept ones answered


def test_a_refused_request_is_one_error_saying_why_and_the_connection_serves_on(server: ThreadingHTTPServer) -> None:
    url = _url(server)
    with memlane.connect(url, token="agent-token") as mem:
        with pytest.raises(RemoteError) as refused:
            mem.search("deploy key", show_secrets=True)
        assert (
            str(refused.value)
            == f"{url}/search: 403 forbidden: show_secrets refused: this server hands out texts with secrets masked"
        )
        with pytest.raises(
            RemoteError, match=f"^{url}/recall: 403 forbidden: agent project:alpha reads project alpha only, not beta$"
        ):
            mem.recall("deploy key", project="beta")
        assert mem.search("deploy key", project="alpha") == [] and mem.generation == 7
    assert server.connections == 1  # type: ignore[attr-defined]  # a refusal leaves the connection open


def test_a_server_gone_is_one_error_and_the_next_request_tries_again(server: ThreadingHTTPServer) -> None:
    url = _url(server)
    server.one_request = True  # type: ignore[attr-defined]  # a stopped server's connections close
    with memlane.connect(url) as mem:
        assert mem.status()["chunks"] == 3
        server.shutdown()
        server.server_close()
        with pytest.raises(RemoteError, match=f"cannot reach a memlane server at {url}"):
            mem.status()
        with pytest.raises(RemoteError, match="cannot reach"):
            mem.status()


class _Proxy(BaseHTTPRequestHandler):
    """A forward proxy: a plain HTTP request (its target a whole URL) goes to the test server,
    whatever host it names; a ``CONNECT`` (an HTTPS tunnel) is refused. Each request's method,
    target and ``Proxy-Authorization`` are kept in ``server.seen``."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.server.seen.append((self.command, self.path, self.headers.get("Proxy-Authorization")))  # type: ignore[attr-defined]
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.target)  # type: ignore[attr-defined]
        upstream.request("GET", urlsplit(self.path).path)
        answer = upstream.getresponse()
        body = answer.read()
        upstream.close()
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_CONNECT(self) -> None:
        self.server.seen.append((self.command, self.path, self.headers.get("Proxy-Authorization")))  # type: ignore[attr-defined]
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy(server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    for name in list(os.environ):  # only the proxies a test names
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    httpd.seen = []  # type: ignore[attr-defined]
    httpd.target = server.server_address[1]  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_a_server_beyond_loopback_is_reached_through_the_environment_proxy(
    server: ThreadingHTTPServer, proxy: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://deploy:p%40ss@127.0.0.1:{proxy.server_address[1]}")
    port = server.server_address[1]
    with memlane.connect(f"http://memlane.test:{port}") as mem:  # a name only the proxy knows
        assert [mem.status()["chunks"] for _ in range(2)] == [3, 3]
    credentials = "Basic " + base64.b64encode(b"deploy:p@ss").decode()
    assert proxy.seen == [("GET", f"http://memlane.test:{port}/status", credentials)] * 2  # type: ignore[attr-defined]


def test_loopback_and_no_proxy_hosts_go_direct(
    server: ThreadingHTTPServer, proxy: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp.example:3128")
    monkeypatch.setenv("NO_PROXY", "memlane.test,.internal.example")
    with memlane.connect(_url(server)) as mem:
        assert mem.status()["chunks"] == 3
    assert proxy.seen == []  # type: ignore[attr-defined]
    assert [
        _proxy_for("http", h) for h in ("localhost", "::1", "127.0.0.2", "memlane.test", "db.internal.example")
    ] == [None] * 5
    through = _proxy_for("https", "memlane.example.com")
    assert through is not None and (through.hostname, through.port) == ("proxy.corp.example", 3128)


def test_https_goes_through_a_connect_tunnel(proxy: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://ops:secret@127.0.0.1:{proxy.server_address[1]}")
    with memlane.connect("https://memlane.test:8443") as mem:
        # The test proxy refuses the tunnel: the error names the proxy (its password left out).
        with pytest.raises(
            RemoteError,
            match=rf"through the proxy http://127\.0\.0\.1:{proxy.server_address[1]} \(set NO_PROXY=memlane\.test",
        ):
            mem.status()
    # Only memlane's own requests: another library of this process may use the proxy set meanwhile.
    ours = [s for s in proxy.seen if s[1] == "memlane.test:8443"]  # type: ignore[attr-defined]
    assert ours == [("CONNECT", "memlane.test:8443", "Basic " + base64.b64encode(b"ops:secret").decode())]


def test_a_proxy_memlane_cannot_speak_to_is_refused_up_front(
    proxy: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(ValueError, match="not http://HOST:PORT"):
        memlane.connect("https://memlane.example.com")
