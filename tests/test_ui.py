"""The viewer (`memlane ui`): its pages' data and its HTTP layer, on a real home.

The rules of a page that can forget memory: the Host header names the server, POSTs carry the
CSRF token, read-only refuses every action, a token is asked on other addresses, transcript
text is escaped and secrets masked everywhere. The browser tests (tests/test_ui_browser.py)
drive the same app in chromium.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import DEPLOY, keyword_home_with_markup
from starlette.testclient import TestClient

import memlane
from memlane.errors import InvalidArgumentError
from memlane.ui import create_app
from memlane.ui.guard import COOKIE, Access
from memlane.ui.views import Views, highlight, turns

TOKEN = "ghp_Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4V"
EVIL = [
    (
        'render this please <script>window.pwned = 1</script> and <img src=x onerror="window.pwned=2">',
        f"Done. The deploy key is {TOKEN}, keep it out of the repository. "
        + "The page now renders the markup as text, which is what a transcript viewer must do. " * 3,
    )
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return keyword_home_with_markup(tmp_path_factory, EVIL)


@pytest.fixture
def mem(home: Path) -> memlane.Memory:
    return memlane.open(home, embedder="none")


def client(mem: memlane.Memory, **access: object) -> TestClient:
    rules = Access(str(access.pop("host", "127.0.0.1")), 8765, **access)  # type: ignore[arg-type]
    return TestClient(create_app(mem, rules), base_url="http://127.0.0.1:8765")


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page carries no CSRF field"
    return found.group(1)


# ---------------------------------------------------------------------------- data functions


def test_sessions_list_every_transcript_session_newest_first(mem: memlane.Memory) -> None:
    found = mem.sessions()
    assert [s.session_id for s in found] == ["deploy-1", "evil-1", "cook-1"]
    assert [s.chunks for s in found] == [3, 1, 2]
    assert found[0].first == "2026-03-01T10:00:00Z" and found[0].last == "2026-03-01T10:04:00Z"
    page = Views(mem).sessions(page=1)
    assert page.total == 3 and page.items[0].path.endswith("deploy.jsonl") and page.items[0].format


def test_session_view_renders_turns_in_order_with_vectors_and_file_state(mem: memlane.Memory) -> None:
    view = Views(mem).session("deploy-1")
    assert view is not None
    assert [c["turns"][0].role for c in view.chunks] == ["user"] * 3
    assert view.chunks[0]["turns"][0].lines[0][1] == DEPLOY[0][0]
    assert [c["vector"] for c in view.chunks] == [False, False, False]  # keyword-only home
    assert view.file_state == "present" and view.skipped == {}
    assert Views(mem).session("no-such-session") is None


def test_turns_mark_tool_lines() -> None:
    shown = turns("User: run it\nAssistant: ok\n[tool Bash] pytest -q\n[result] 3 passed")
    assert [(t.role, [k for k, _ in t.lines]) for t in shown] == [
        ("user", ["text"]),
        ("assistant", ["text", "tool", "tool"]),
    ]


def test_highlight_marks_query_terms_only() -> None:
    spans = highlight("exit code 137 in main.py", ["137", "main"])
    assert [s.text for s in spans if s.mark] == ["137", "main"]
    assert "".join(s.text for s in spans) == "exit code 137 in main.py"


def test_search_view_has_score_parts_and_the_floor_when_nothing_clears_it(mem: memlane.Memory) -> None:
    views = Views(mem)
    found = views.search("exit code 137 OOM", {})
    assert found.hits and found.hits[0]["session_id"] == "deploy-1"
    assert {"bm25", "coverage"} <= set(found.hits[0]["parts"])
    assert any(s.mark for s in found.hits[0]["passage"])
    nothing = views.search("zebra", {})
    assert nothing.hits == [] and nothing.best is None
    weak = views.search("the next release", {"project": ""})
    assert weak.hits or (weak.best is not None and weak.best < weak.floor)


def test_secrets_are_masked_in_every_view(mem: memlane.Memory) -> None:
    views = Views(mem)
    view = views.session("evil-1")
    assert view is not None
    text = repr(view.chunks) + repr(views.search("deploy key repository", {}).hits)
    assert TOKEN not in text and "ghp_…" in text
    scanned, rows = views.secrets()
    assert scanned >= 6 and any(r["chunk"] == view.chunks[0]["id"] for r in rows.items)
    assert all(TOKEN not in repr(r) for r in rows.items)


def test_brain_page_data_shows_entries_chains_and_withheld(mem: memlane.Memory, home: Path) -> None:
    from memlane.brain import Brain, default_brain_dir

    brain = Brain(default_brain_dir(home), home=home)
    old = brain.add("key decisions", "Billing runs on MySQL.", on="2026-01-05")
    new = brain.supersede(old.key, "Billing runs on Postgres 16.", on="2026-03-01")
    data = Views(mem).brain()
    rows = [e for entries in data["sections"].values() for e in entries]
    assert {old.key, new.key} <= {e["key"] for e in rows}
    assert [k for k, _, _ in data["chains"][0]] == [old.key, new.key]
    with pytest.raises(InvalidArgumentError):
        Views(mem).brain_file("../../etc/passwd")


# ---------------------------------------------------------------------------- HTTP layer


def test_every_page_answers_with_the_security_headers(mem: memlane.Memory) -> None:
    c = client(mem)
    for path in ("/", "/search?q=deploy", "/sessions", "/session?id=deploy-1", "/brain", "/injections", "/secrets"):
        r = c.get(path)
        assert r.status_code == 200, path
        csp = r.headers["content-security-policy"]
        assert "script-src" not in csp and "default-src 'none'" in csp  # no script may run at all
        assert r.headers["x-frame-options"] == "DENY"
    assert client(mem).get("/session?id=nope").status_code == 404


def test_overview_shows_the_chunk_count(mem: memlane.Memory) -> None:
    html = client(mem).get("/").text
    assert re.search(r'id="chunk-count">6<', html)


def test_transcript_markup_is_escaped(mem: memlane.Memory) -> None:
    html = client(mem).get("/session?id=evil-1").text
    assert "<script>window.pwned" not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in html
    assert TOKEN not in html


def test_a_wrong_host_header_is_refused(mem: memlane.Memory) -> None:
    c = client(mem)
    assert c.get("/", headers={"host": "attacker.example:8765"}).status_code == 400
    assert c.get("/", headers={"host": "localhost:8765"}).status_code == 200


def test_a_post_without_the_csrf_token_is_refused(mem: memlane.Memory) -> None:
    c = client(mem)
    r = c.post("/forget", data={"kind": "session", "value": "cook-1"})
    assert r.status_code == 403
    r = c.post("/forget", data={"kind": "session", "value": "cook-1", "csrf": "forged"})
    assert r.status_code == 403
    assert [s.session_id for s in mem.sessions()].count("cook-1") == 1


def test_a_cross_origin_post_is_refused(mem: memlane.Memory) -> None:
    c = client(mem)
    csrf = csrf_of(c.get("/forget?kind=session&value=cook-1").text)
    r = c.post(
        "/forget", data={"kind": "session", "value": "cook-1", "csrf": csrf}, headers={"origin": "http://evil.test"}
    )
    assert r.status_code == 403


def test_forget_then_undo_through_the_pages(mem: memlane.Memory) -> None:
    c = client(mem)
    confirm = c.get("/forget?kind=session&value=cook-1")
    assert confirm.status_code == 200 and "2 chunk(s)" in confirm.text
    r = c.post(
        "/forget", data={"kind": "session", "value": "cook-1", "csrf": csrf_of(confirm.text)}, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"].startswith("/forgotten?")
    assert not mem.search("pasta boil spaghetti", 3)
    undo = c.get(r.headers["location"])
    r = c.post(
        "/unforget", data={"kind": "session", "value": "cook-1", "csrf": csrf_of(undo.text)}, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"] == "/session?id=cook-1"
    assert mem.search("pasta boil spaghetti", 3)[0].session_id == "cook-1"


def test_read_only_hides_and_refuses_every_action(mem: memlane.Memory) -> None:
    c = client(mem, read_only=True)
    page = c.get("/session?id=cook-1").text
    assert "Forget this session" not in page and "forget this chunk" not in page
    csrf = Access("127.0.0.1", 8765).csrf  # any token: the refusal comes first
    assert c.post("/forget", data={"kind": "session", "value": "cook-1", "csrf": csrf}).status_code == 403
    assert c.get("/forget?kind=session&value=cook-1").status_code == 403
    assert [s.session_id for s in mem.sessions()].count("cook-1") == 1


def test_a_token_is_required_beyond_loopback_and_kept_in_a_cookie(mem: memlane.Memory) -> None:
    with pytest.raises(InvalidArgumentError, match="needs a token"):
        Access("0.0.0.0", 8765)
    rules = Access("0.0.0.0", 8765, token="s3cret-token")
    c = TestClient(create_app(mem, rules), base_url="http://0.0.0.0:8765")
    r = c.get("/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"
    assert c.post("/login", data={"token": "wrong"}).status_code == 401
    r = c.get("/sessions?token=s3cret-token", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/sessions"
    cookie = r.headers["set-cookie"]
    assert f"{COOKIE}=s3cret-token" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert c.get("/").status_code == 200  # the cookie is kept by the client


def test_the_secrets_page_scans_off_the_request_and_then_shows_the_report(mem: memlane.Memory) -> None:
    import time

    c = client(mem)
    first = c.get("/secrets")
    assert first.status_code == 200 and 'id="scanning"' in first.text and 'http-equiv="refresh"' in first.text
    deadline = time.monotonic() + 60
    while 'id="scanning"' in (page := c.get("/secrets").text):
        assert time.monotonic() < deadline, "the scan never finished"
        time.sleep(0.05)
    assert "secret-row" in page and "ghp_…" in page and TOKEN not in page


def test_brain_pages_serve_nothing_outside_the_brain(mem: memlane.Memory) -> None:
    c = client(mem)
    assert c.get("/brain/page?path=../manifest.json").status_code == 404
    assert c.get("/static/../memory.py").status_code == 404


def test_ui_command_refuses_a_public_address_without_a_token(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    from memlane.cli import main

    assert main(["--home", str(home), "ui", "--host", "0.0.0.0", "--embed", "none"]) == 2
    err = capsys.readouterr().err
    assert "needs a token" in err and len(err.strip().splitlines()) == 1


def test_ui_command_says_in_one_line_when_its_port_is_taken(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    import socket

    from memlane.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--home", str(home), "ui", "--port", str(port), "--embed", "none"]) == 2
    captured = capsys.readouterr()
    assert f"cannot listen on 127.0.0.1:{port}" in captured.err and len(captured.err.strip().splitlines()) == 1
    assert "memlane ui: http" not in captured.out  # no address printed for a server that never started


def test_every_page_answers_on_a_fresh_home(tmp_path: Path) -> None:
    c = client(memlane.open(tmp_path / "fresh", embedder="none"))
    for path in ("/", "/search?q=deploy", "/sessions", "/brain", "/injections", "/secrets"):
        assert c.get(path).status_code == 200, path
    assert 'id="chunk-count">0<' in c.get("/").text
    assert c.get("/session?id=s1").status_code == 404
    assert "is not a chunk id" in c.get("/chunk?id=zz").text
