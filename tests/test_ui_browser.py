"""`memlane ui` in a real browser: Debian's chromium, headless, driven through its chromedriver.

The server runs as a user starts it (`memlane ui`, a process of its own) on a real home; the
agent side is real too (the user-prompt-submit hook, run as a process, records what it
injects). Each test saves a screenshot: to a temporary folder, or to
``$MEMLANE_UI_SCREENSHOTS`` (``docs/screenshots`` refreshes the README's pictures).
`make test` installs chromium and chromium-driver with apt when they are absent (`make browser`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port, keyword_home_with_markup

import memlane

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extras: pip install -e '.[dev]'")
from selenium.webdriver.common.by import By  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER), reason="no chromium/chromedriver: `make browser` installs them (apt)"
)

EVIL = [
    (
        'show this <script>window.pwned = 1</script> and <img src=x onerror="window.pwned = 2">',
        "It shows as text: a transcript viewer must never run what a transcript holds. " * 4,
    )
]
PROMPT = "why was the container OOM-killed with exit code 137"


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "python"), "HOME": str(tmp / "user")}


class Server:
    """A `memlane ui` process and its address."""

    def __init__(self, home: Path, tmp: Path, *extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "memlane.cli", "--home", str(home), "ui", "--port", str(self.port)]
        self.log = tmp / f"ui-{self.port}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([*cmd, "--embed", "none", *extra], env=_env(tmp), stdout=out, stderr=out)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"memlane ui exited: {self.log.read_text()}") from None
                time.sleep(0.1)
        raise RuntimeError("memlane ui did not listen within 60 s")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return keyword_home_with_markup(tmp_path_factory, EVIL)


@pytest.fixture(scope="module")
def server(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(home, tmp_path_factory.mktemp("ui"))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    # A host name that resolves to the server, as a DNS-rebinding page's would.
    options.add_argument("--host-resolver-rules=MAP rebind.test 127.0.0.1")
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("MEMLANE_UI_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def wait_url(driver: Any, part: str) -> None:
    """Wait until the browser is on a URL holding ``part`` (after a form's redirect)."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(expected_conditions.url_contains(part))


def shot(driver: Any, shots: Path, name: str) -> None:
    path = shots / f"{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 1000  # a real picture of the page


def text_of(driver: Any, css: str) -> str:
    """The text of the element ``css`` selects, once the page holding it has loaded (a form's
    submission returns before the next page is there)."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    found = WebDriverWait(driver, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, css)))
    return str(found.text)


def test_overview_shows_the_chunk_count(server: Server, browser: Any, home: Path, shots: Path) -> None:
    browser.get(server.url + "/")
    chunks = memlane.open(home, embedder="none").status()["chunks"]
    assert text_of(browser, "#chunk-count") == f"{chunks:,}"
    assert text_of(browser, "#health").startswith("sound")
    shot(browser, shots, "overview")
    browser.find_element(By.LINK_TEXT, "Sessions").click()
    text_of(browser, ".session-row")
    rows = browser.find_elements(By.CSS_SELECTOR, ".session-row")
    assert [r.find_element(By.TAG_NAME, "a").text for r in rows] == ["deploy-1", "evil-1", "cook-1"]
    shot(browser, shots, "sessions")


def test_search_finds_a_known_chunk_with_its_score_parts(server: Server, browser: Any, home: Path, shots: Path) -> None:
    expected = memlane.open(home, embedder="none").search("exit code 137 OOM", 1)[0].id
    browser.get(server.url + "/search")
    box = browser.find_element(By.NAME, "q")
    box.send_keys("exit code 137 OOM")
    box.submit()
    text_of(browser, ".hit")
    first = browser.find_element(By.CSS_SELECTOR, ".hit")
    assert first.get_attribute("data-id") == expected
    parts = {p.get_attribute("data-part") for p in first.find_elements(By.CSS_SELECTOR, ".score-parts [data-part]")}
    assert {"bm25", "coverage"} <= parts
    assert first.find_elements(By.CSS_SELECTOR, ".passage mark")  # the matched words are marked
    shot(browser, shots, "search")


def test_a_session_renders_and_its_planted_script_never_runs(server: Server, browser: Any, shots: Path) -> None:
    browser.get(server.url + "/session?id=evil-1")
    main = browser.find_element(By.TAG_NAME, "main")
    assert "<script>window.pwned = 1</script>" in main.text  # shown as text
    assert not main.find_elements(By.TAG_NAME, "script") and not main.find_elements(By.TAG_NAME, "img")
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    assert browser.find_elements(By.CSS_SELECTOR, ".turn-user") and browser.find_elements(
        By.CSS_SELECTOR, ".turn-assistant"
    )
    shot(browser, shots, "session")


def test_forget_and_undo_through_the_page_change_what_search_returns(server: Server, browser: Any, shots: Path) -> None:
    def found_cooking() -> bool:
        browser.get(server.url + "/search?q=pasta+boil+spaghetti")
        return any("cook-1" in h.text for h in browser.find_elements(By.CSS_SELECTOR, ".hit"))

    assert found_cooking()
    browser.get(server.url + "/session?id=cook-1")
    browser.find_element(By.CSS_SELECTOR, "a.forget-session").click()
    assert "Forget this session?" in text_of(browser, "h1")
    browser.find_element(By.ID, "confirm-forget").click()
    assert "is forgotten" in text_of(browser, "#forgotten")
    shot(browser, shots, "forgotten")
    forgotten = browser.current_url
    assert not found_cooking()
    browser.get(forgotten)
    browser.find_element(By.ID, "undo").click()
    wait_url(browser, "/session?id=cook-1")
    assert found_cooking()


def test_a_read_only_server_refuses_the_post(home: Path, browser: Any, tmp_path: Path, shots: Path) -> None:
    ro = Server(home, tmp_path, "--read-only")
    try:
        browser.get(ro.url + "/session?id=deploy-1")
        assert text_of(browser, "#read-only") == "read-only"
        assert not browser.find_elements(By.CSS_SELECTOR, "a.forget-session, a.forget-chunk")
        # A form built by hand, as another page could post it: refused, and nothing forgotten.
        browser.execute_script(
            "const f = document.createElement('form'); f.method = 'post'; f.action = '/forget';"
            "for (const [k, v] of [['kind', 'session'], ['value', 'deploy-1'], ['csrf', 'x']]) {"
            "  const i = document.createElement('input'); i.name = k; i.value = v; f.appendChild(i); }"
            "document.body.appendChild(f); f.submit();"
        )
        assert "read-only" in text_of(browser, "#error")
        shot(browser, shots, "read-only")
    finally:
        ro.stop()
    assert "deploy-1" in [s.session_id for s in memlane.open(home, embedder="none").sessions()]


def test_a_wrong_host_header_is_refused(server: Server, browser: Any, shots: Path) -> None:
    browser.get(f"http://rebind.test:{server.port}/")
    assert "Host header refused" in browser.find_element(By.TAG_NAME, "body").text
    assert not browser.find_elements(By.ID, "chunk-count")
    shot(browser, shots, "wrong-host")


def test_the_injection_audit_lists_a_hook_recall(
    server: Server, browser: Any, home: Path, tmp_path: Path, shots: Path
) -> None:
    payload = json.dumps({"session_id": "agent-7", "prompt": PROMPT, "hook_event_name": "UserPromptSubmit"})
    r = subprocess.run(
        [sys.executable, "-m", "memlane.cli", "hook", "claude-code", "user-prompt-submit", "--home", str(home)],
        input=payload,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    recalled = memlane.open(home, embedder="none").search(PROMPT, 1)[0].id
    browser.get(server.url + "/injections")
    first = browser.find_element(By.CSS_SELECTOR, ".injection")
    assert "agent-7" in first.text and "claude-code" in first.text and "user-prompt-submit" in first.text
    keys = [a.text for a in first.find_elements(By.CSS_SELECTOR, ".inj-item a")]
    assert recalled in keys
    shot(browser, shots, "injections")
    # From the chunk: every session it was injected into.
    first.find_element(By.LINK_TEXT, recalled).click()
    assert "agent-7" in browser.find_element(By.TAG_NAME, "main").text


def test_brain_and_secrets_pages_render(server: Server, browser: Any, home: Path, shots: Path) -> None:
    brain = memlane.Brain(home / "brain", home=home)
    old = brain.add("KD", "Billing runs on MySQL.", on="2026-01-05")
    brain.supersede(old.key, "Billing runs on Postgres 16.", on="2026-03-01")
    browser.get(server.url + "/brain")
    assert "→" in text_of(browser, ".chain")
    shot(browser, shots, "brain")
    browser.get(server.url + "/secrets")
    text_of(browser, "table.secrets")  # after the scan (the page reloads itself until then)
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Secrets")
    shot(browser, shots, "secrets")
