"""Fuzzing the hook entry points: whatever the command line and the payload, a hook exits 0 or
1 (never 2, a client's "block"), with at most one line on stderr and never a traceback."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import generic_session, write_jsonl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memlane
from memlane.agents import hooks

REPO = Path(__file__).resolve().parents[1]

_VALUES = st.sampled_from(
    [
        "0",
        "-1",
        "1",
        "3",
        "abc",
        "",
        "1e9",
        "nan",
        "inf",
        "-inf",
        "0.5",
        "9" * 30,
        "admin",
        "project:x",
        "skill:",
        "none",
        "local",
        "extractive",
        "bogus",
        "--",
        "-",
        "\x00",
        "é",
    ]
)
_FLAGS = st.sampled_from(
    [
        "--max-tokens",
        "--max-chars",
        "--deadline",
        "--embed",
        "--distill",
        "--agent",
        "--json",
        "--bogus",
        "-x",
        "--max-tokens=0",
        "--max-chars=abc",
        "--deadline=-2",
    ]
)
_CLIENTS = st.sampled_from(["claude-code", "codex", "no-client", "", "hook"])
# stop, session-end and pre-compact queue an entry and start a worker: spawn_worker is replaced
# below, so no process is started for each example.
_EVENTS = st.sampled_from(
    ["session-start", "user-prompt-submit", "stop", "session-end", "pre-compact", "notify", "bogus", ""]
)

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_KEYS = st.sampled_from(["session_id", "prompt", "cwd", "transcript_path", "hook_event_name", "source", "thread-id"])


@st.composite
def payloads(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["object", "object", "object", "huge", "binary", "text", "nested", "json"]))
    if kind == "object":
        return json.dumps(draw(st.dictionaries(_KEYS, _JSON | st.text(max_size=200), max_size=6))).encode()
    if kind == "huge":  # a pasted log as the prompt, up to 3 MB
        size = draw(st.sampled_from([10_000, 300_000, 3_000_000]))
        return json.dumps(
            {"session_id": draw(st.text(min_size=1, max_size=10)), "prompt": "exit code 137 " + "x" * size}
        ).encode()
    if kind == "binary":
        return draw(st.binary(max_size=300))
    if kind == "text":
        return draw(st.text(max_size=300)).encode("utf-8", "surrogatepass")
    if kind == "nested":
        depth = draw(st.sampled_from([10, 900, 5000]))
        return ("[" * depth + "]" * depth).encode()
    return json.dumps(draw(_JSON)).encode()


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    argv = [draw(_CLIENTS), draw(_EVENTS)]
    for _ in range(draw(st.integers(0, 4))):
        argv.append(draw(_FLAGS))
        if draw(st.booleans()):
            argv.append(draw(_VALUES))
    if draw(st.booleans()):
        argv.append(draw(st.text(max_size=30)))  # a stray positional: Codex's payload, or garbage
    return [a for a in argv if a != ""] if draw(st.booleans()) else argv


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One home with a session and a brain entry, shared by every example (hooks only read it)."""
    root = tmp_path_factory.mktemp("fuzz")
    src = write_jsonl(
        root / "src" / "s.jsonl", generic_session("s", [("why exit code 137?", "An OOM kill: stream the rows.")])
    )
    home = root / "memhome"
    memlane.open(home, embedder="none").index([src], embed=False)
    memlane.Brain(home / "brain", home=home).add("KD", "The exporter streams invoice rows in batches.")
    return home


def _check(code: int, out: str, err: str) -> None:
    assert code in (0, 1), (code, err)
    assert "Traceback" not in err and "usage:" not in err, err
    assert err.count("\n") <= 1 and (err == "" or err.endswith("\n")), err
    if code == 1:
        assert out == "" and err.startswith("memlane hook"), (out, err)
    if out:
        assert out.endswith("\n") and "hookSpecificOutput" in json.loads(out)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(argv=command_lines(), payload=payloads())
def test_the_in_process_entry_point_exits_0_or_1_in_one_line(
    argv: list[str], payload: bytes, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hooks, "spawn_worker", lambda home: None)
    monkeypatch.setenv("MEMLANE_AGENT", "")
    with tempfile.TemporaryDirectory() as cwd:
        monkeypatch.chdir(cwd)  # a fuzzed --home that is a relative path lands here
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload), encoding="utf-8"))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = hooks.main([*argv, "--home", str(home)] if "--home" not in argv else argv)
    _check(code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize(
    ("argv", "payload"),
    [
        (
            ["claude-code", "user-prompt-submit"],
            json.dumps({"session_id": "sub-1", "prompt": "exit code 137 " + "y" * 10_000_000}).encode(),
        ),
        (["claude-code", "session-start"], bytes(range(256)) * 40),
        (["claude-code", "session-start"], b"[" * 100_000),
        (
            ["codex", "session-start", "--max-chars", "1"],
            json.dumps({"session_id": "sub-2", "cwd": 7, "transcript_path": [1]}).encode(),
        ),
        (["claude-code", "user-prompt-submit", "--max-tokens", "-5", "--what"], b"{}"),
        (["claude-code", "notify"], b"{}"),
    ],
)
def test_the_command_line_exits_0_or_1_in_one_line(argv: list[str], payload: bytes, home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "HOME": str(tmp_path)}
    r = subprocess.run(
        [sys.executable, "-m", "memlane.cli", "hook", *argv, "--home", str(home)],
        input=payload,
        env=env,
        capture_output=True,
        timeout=120,
    )
    _check(r.returncode, r.stdout.decode(), r.stderr.decode())
