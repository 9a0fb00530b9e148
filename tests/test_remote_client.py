"""The served index's client (``memlane.connect``) over a real socket, without Ray: it keeps its
connections open for the next request and replaces one the server closed while it sat idle."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import memlane
from memlane.cluster.client import RemoteError


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

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook's name
        body = json.dumps({"chunks": 3, "missing_shards": [], "generation": 7}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

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
        threads = [threading.Thread(target=lambda: answers.extend(mem.status()["chunks"] for _ in range(5))) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert answers == [3] * 15
        opened = server.connections  # type: ignore[attr-defined]
        assert 1 <= opened <= 3  # at most one per request in flight
        assert [mem.status()["chunks"] for _ in range(4)] == [3] * 4
        assert server.connections == opened  # type: ignore[attr-defined]  # the kept ones answered


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
