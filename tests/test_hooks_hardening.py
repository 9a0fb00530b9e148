"""Hooks that can never block the agent: argument errors exit 1 in one line, a huge prompt is
bounded, the events log stays bounded, a FIFO is never opened, a hook that hangs answers at its
deadline, a damaged index still gives the brain snapshot."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import generic_session, write_jsonl

import memlane
from memlane.agents import hooks
from memlane.events import EVENTS_NAME, EventLog, summarize
from memlane.events import MAX_QUERY_CHARS as EVENT_QUERY_CHARS
from memlane.ranking.query import MAX_QUERY_CHARS, bounded
from memlane.recall import DAMAGED_INDEX

REPO = Path(__file__).resolve().parents[1]
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A HOME and Claude Code folder of the test's own, never the user's."""
    user = tmp_path / "user"
    (user / ".claude" / "projects").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(user / ".claude"))
    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)
    monkeypatch.delenv(hooks.DEADLINE_ENV, raising=False)
    return {**os.environ, "PYTHONPATH": str(REPO / "python")}


def memlane_cli(
    env: dict[str, str], *args: str, stdin: str | bytes = "", timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run(
        [sys.executable, "-m", "memlane.cli", *args], input=data, env=env, capture_output=True, timeout=timeout
    )


def hook_in_process(
    argv: list[str], stdin: str | bytes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    code = hooks.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def home_with_memory(tmp_path: Path) -> Path:
    """A home with an indexed session about the exporter and one MEMORY.md entry."""
    home = tmp_path / "memhome"
    src = write_jsonl(
        tmp_path / "src" / "s1.jsonl",
        generic_session(
            "s1",
            [
                (
                    "The nightly exporter dies with exit code 137 on the invoices job.",
                    "Exit code 137 is an OOM kill: stream the invoice rows in batches of 5000.",
                ),
            ],
        ),
    )
    memlane.open(home, embedder="none").index([src], embed=False)
    memlane.Brain(home / "brain", home=home).add("KD", "The exporter uses SQS FIFO queues; invoice ordering matters.")
    return home


# -- 1. every argument error exits 1 with one line ---------------------------------------------

BAD_ARGV = [
    (["claude-code", "user-prompt-submit", "--bogus-flag"], "unrecognized arguments: --bogus-flag"),
    (
        ["claude-code", "user-prompt-submit", "--max-tokens", "abc"],
        "argument --max-tokens: needs a whole number, got 'abc'",
    ),
    (["claude-code", "user-prompt-submit", "--max-tokens", "0"], "argument --max-tokens: must be at least 1, got 0"),
    (["claude-code", "session-start", "--max-chars", "0"], "argument --max-chars: must be at least 1, got 0"),
    (["claude-code", "session-start", "--deadline", "-1"], "argument --deadline: must be a number of seconds above 0"),
    (["claude-code", "no-such-event"], "argument event: invalid choice: 'no-such-event'"),
    (["no-such-client", "stop"], "argument CLIENT: invalid choice: 'no-such-client'"),
    (["claude-code"], "the following arguments are required: event"),
    ([], "the following arguments are required: CLIENT"),
    (["codex", "pre-compact"], "argument event: invalid choice: 'pre-compact'"),
    (["claude-code", "stop", "{}", "extra"], "unrecognized arguments: extra"),
]


@pytest.mark.parametrize(("argv", "says"), BAD_ARGV)
def test_argument_errors_exit_1_in_one_line_in_process(
    argv: list[str],
    says: str,
    tmp_path: Path,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = hook_in_process(
        [*argv, "--home", str(tmp_path / "h")] if argv else argv,
        '{"session_id": "s", "prompt": "hi"}',
        monkeypatch,
        capsys,
    )
    assert code == 1 and out == ""
    assert says in err and err.count("\n") == 1 and "usage:" not in err and "Traceback" not in err


def test_argument_errors_exit_1_through_the_command_line_both_routes(tmp_path: Path, env: dict[str, str]) -> None:
    home = str(tmp_path / "h")
    payload = '{"session_id": "s", "prompt": "hi"}'
    for argv, says in BAD_ARGV:
        for route in (
            ["hook", *argv, "--home", home],
            ["--home", home, "hook", *argv],
            ["--bogus-global", "hook", *argv],
        ):
            r = memlane_cli(env, *route, stdin=payload)
            err = r.stderr.decode()
            assert r.returncode == 1 and r.stdout == b"", (route, err)
            assert err.count("\n") == 1 and "usage:" not in err and "Traceback" not in err, (route, err)
            assert says in err or "--bogus-global" in err, (route, err)


def test_a_bad_deadline_in_the_environment_is_one_line(tmp_path: Path, env: dict[str, str]) -> None:
    r = memlane_cli(
        {**env, hooks.DEADLINE_ENV: "soon"}, "hook", "claude-code", "stop", "--home", str(tmp_path / "h"), stdin="{}"
    )
    assert r.returncode == 1
    assert (
        r.stderr.decode()
        == "memlane hook claude-code stop: $MEMLANE_HOOK_DEADLINE needs a number of seconds, got 'soon'\n"
    )


def test_the_api_names_max_chars_and_a_tiny_budget_recalls_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    home = home_with_memory(tmp_path)
    with pytest.raises(ValueError, match="max_chars must be at least 1"):
        hooks.user_prompt_submit(home, {"session_id": "a", "prompt": "exit code 137"}, max_chars=0)
    # 40 characters leave no room for a recall (it needs 100 tokens): nothing, not an error.
    assert hooks.user_prompt_submit(home, {"session_id": "b", "prompt": "exit code 137"}, max_chars=40) is None
    assert "OOM kill" in (hooks.user_prompt_submit(home, {"session_id": "c", "prompt": "exit code 137"}) or "")


def test_payload_fields_of_the_wrong_type_are_read_as_absent(tmp_path: Path, env: dict[str, str]) -> None:
    home = home_with_memory(tmp_path)
    out = hooks.session_start(home, {"session_id": "w1", "cwd": ["not", "a", "path"], "transcript_path": {"x": 1}})
    assert out is not None and "[KD01]" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert hooks.user_prompt_submit(home, {"session_id": "w2", "prompt": {"text": "exit code 137"}}) is None


# -- 2. a huge prompt is bounded ----------------------------------------------------------------


def test_bounded_cuts_at_a_word_and_keeps_short_queries() -> None:
    assert bounded("exit code 137") == "exit code 137"
    long = "alpha " * 2000
    cut = bounded(long)
    assert len(cut) <= MAX_QUERY_CHARS and cut == long[: len(cut)] and cut.endswith("alpha")
    assert len(bounded("x" * 10_000)) == MAX_QUERY_CHARS  # one long token: cut where the bound falls


def test_search_and_recall_work_on_the_first_characters_of_a_huge_query(tmp_path: Path, env: dict[str, str]) -> None:
    home = home_with_memory(tmp_path)
    mem = memlane.open(home, embedder="none")
    head = "why does the nightly exporter die with exit code 137? "
    huge = head + "lorem ipsum dolor sit amet " * 40_000  # ~1 MB pasted after the question
    assert [h.id for h in mem.search(huge)] == [h.id for h in mem.search(bounded(huge))]
    assert mem.search(huge)[0].text.count("OOM kill") == 1
    recalled = mem.recall(huge, max_tokens=2000)
    assert "OOM kill" in recalled.text and len(recalled.query) <= MAX_QUERY_CHARS
    logged = [e["query"] for e in EventLog(home).read() if e["type"] == "search"]
    assert logged and all(len(q) < EVENT_QUERY_CHARS + 40 for q in logged)


def test_a_5_mb_prompt_recalls_on_its_start_and_logs_little(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = home_with_memory(tmp_path)
    log = home / EVENTS_NAME
    before = log.stat().st_size if log.exists() else 0
    prompt = "the exporter got exit code 137 again, what did we do last time? " + "x1 y2 z3 " * 580_000
    payload = json.dumps({"session_id": "big", "cwd": str(tmp_path), "prompt": prompt})
    assert len(payload) > 5_000_000
    code, out, err = hook_in_process(
        ["claude-code", "user-prompt-submit", "--home", str(home)], payload, monkeypatch, capsys
    )
    assert code == 0 and err == ""
    assert "OOM kill" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert log.stat().st_size - before < 4000  # two search events, each query cut to 500 characters


# -- 3. the events log is bounded -----------------------------------------------------------------


def test_events_keep_a_bounded_query_with_a_marker(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append("search", query="q" * 10_000, results=0)
    log.append("search", query="short question", results=1)
    first, second = log.read()
    assert first["query"] == "q" * EVENT_QUERY_CHARS + "… [+9,500 chars not kept]"
    assert second["query"] == "short question"


def test_events_rotate_at_the_cap_keeping_two_generations(tmp_path: Path) -> None:
    log = EventLog(tmp_path, max_bytes=4096)
    for i in range(400):
        log.append("search", query=f"question number {i}", results=i)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["events.jsonl", "events.jsonl.1", "events.jsonl.2", "events.jsonl.lock"]
    assert all((tmp_path / f).stat().st_size <= 4096 for f in files)
    kept = log.read()
    numbers = [e["results"] for e in kept]
    assert numbers == list(range(400 - len(numbers), 400))  # the newest, in order, none missing between
    summary = summarize(tmp_path)
    assert (
        summary["events"] == len(kept) and summary["last"] == kept[-1]["time"] and summary["first"] == kept[0]["time"]
    )


def test_concurrent_appenders_lose_no_line_across_a_rotation(tmp_path: Path) -> None:
    writers, lines = 4, 300  # ~120 KB in all (100 bytes a line): one rotation at 80 KB, nothing dropped

    def write(w: int) -> None:
        log = EventLog(tmp_path, max_bytes=80_000)
        for i in range(lines):
            log.append("search", query=f"writer {w} line {i}", results=i)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (tmp_path / "events.jsonl.1").exists()  # it did rotate
    kept = [e["query"] for e in EventLog(tmp_path).read()]
    assert sorted(kept) == sorted(f"writer {w} line {i}" for w in range(writers) for i in range(lines))


def test_an_appender_that_finds_the_full_log_just_moved_still_writes_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another appender moved the full log aside after this one found it full, and no appender
    # has started the new log yet: the rotation this one wanted is done, and its line goes into
    # a new log (it was dropped, 4% of runs of the concurrent test above).
    import memlane._fs

    log = EventLog(tmp_path, max_bytes=200)
    log.append("search", query="x" * 120, results=0)
    taking_the_lock = memlane._fs._try_lock

    def the_other_appender_moved_it_first(fd: int) -> bool:
        if log.path.exists():
            os.replace(log.path, log.path.with_name(EVENTS_NAME + ".1"))
        return taking_the_lock(fd)

    monkeypatch.setattr(memlane._fs, "_try_lock", the_other_appender_moved_it_first)
    log.append("search", query="the line that must not be lost", results=1)
    assert [e["results"] for e in log.read()] == [0, 1] and log.path.exists()


@needs_fifo
def test_an_events_log_that_is_a_fifo_is_skipped(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / EVENTS_NAME)
    done = threading.Event()

    def log() -> None:
        EventLog(tmp_path).append("search", query="q", results=0)
        done.set()

    threading.Thread(target=log, daemon=True).start()
    assert done.wait(30), "appending to a FIFO with no reader hung"
    assert EventLog(tmp_path).read() == [] and summarize(tmp_path)["events"] == 0


# -- 4. FIFOs are never opened; a hung hook answers at its deadline -----------------------------------


@needs_fifo
def test_a_fifo_beside_the_transcript_does_not_hang_session_start(tmp_path: Path, env: dict[str, str]) -> None:
    home = home_with_memory(tmp_path)
    project = Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / "-work-exporter"
    write_jsonl(
        project / "earlier.jsonl", generic_session("earlier", [("exporter exit code 137 again", "same OOM kill")])
    )
    os.mkfifo(project / "zz-stuck.jsonl")  # newest name and time: read first if it were read
    payload = {"session_id": "fifo-1", "cwd": "/work/exporter", "transcript_path": str(project / "fifo-1.jsonl")}
    r = memlane_cli(
        {**env, hooks.DEADLINE_ENV: "30"},
        "hook",
        "claude-code",
        "session-start",
        "--home",
        str(home),
        stdin=json.dumps(payload),
        timeout=100,
    )
    assert r.returncode == 0 and r.stderr == b""  # skipped, not cut off by the deadline
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "[KD01]" in context and "OOM kill" in context  # snapshot and the recall the earlier session asked for


@needs_fifo
def test_a_fifo_for_memory_md_leaves_the_brain_out_saying_why(tmp_path: Path, env: dict[str, str]) -> None:
    home = tmp_path / "memhome"
    (home / "brain").mkdir(parents=True)
    os.mkfifo(home / "brain" / "MEMORY.md")
    r = memlane_cli(
        {**env, hooks.DEADLINE_ENV: "30"},
        "hook",
        "claude-code",
        "session-start",
        "--home",
        str(home),
        stdin=json.dumps({"session_id": "fifo-2", "cwd": "/w"}),
        timeout=100,
    )
    assert r.returncode == 0 and r.stderr == b""
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"{home / 'brain' / 'MEMORY.md'} is not a regular file" in context


@needs_fifo
def test_a_hook_stuck_in_the_index_answers_at_its_deadline(tmp_path: Path, env: dict[str, str]) -> None:
    """A FIFO where the index keeps a segment: opening the index waits forever; the deadline ends the hook."""
    home = home_with_memory(tmp_path)
    segment = sorted((home / "lexical").glob("*.store"))[0]
    segment.unlink()
    os.mkfifo(segment)
    r = memlane_cli(
        env,
        "hook",
        "claude-code",
        "session-start",
        "--home",
        str(home),
        "--deadline",
        "1",
        stdin=json.dumps({"session_id": "stuck", "cwd": "/w"}),
        timeout=100,
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr.decode() == (
        "memlane hook claude-code session-start: answered at its 1 s deadline with nothing (no context was ready); "
        "--deadline or $MEMLANE_HOOK_DEADLINE sets it\n"
    )


def test_at_the_deadline_what_is_ready_is_answered(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The snapshot is handed over before the recall starts: a recall that never ends leaves it."""
    home = home_with_memory(tmp_path)
    stuck = threading.Event()
    monkeypatch.setattr(hooks, "_recall", lambda *a, **k: stuck.wait(60) and "")
    try:
        code, out, err = hook_in_process(
            ["claude-code", "session-start", "--home", str(home), "--deadline", "2"],
            json.dumps({"session_id": "late", "cwd": "/w"}),
            monkeypatch,
            capsys,
        )
    finally:
        stuck.set()
    assert code == 0 and "answered at its 2 s deadline with the context ready by then" in err
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "[KD01]" in context and "# Recalled memory" not in context


# -- 5. a damaged index still gives the snapshot --------------------------------------------------------


def test_a_damaged_index_gives_the_snapshot_and_the_repair_line(tmp_path: Path, env: dict[str, str]) -> None:
    home = home_with_memory(tmp_path)
    term = sorted((home / "lexical").glob("*.term"))[0]
    term.write_bytes(b"\x00garbage" * 20)
    start = {"session_id": "dmg-1", "cwd": "/w"}
    r = memlane_cli(env, "hook", "claude-code", "session-start", "--home", str(home), stdin=json.dumps(start))
    assert r.returncode == 0 and r.stderr == b""
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "[KD01]" in context and "SQS FIFO queues" in context and DAMAGED_INDEX in context
    assert not (home / "snapshots").exists() or not list((home / "snapshots").iterdir())  # not frozen with the damage

    prompt = {"session_id": "dmg-1", "cwd": "/w", "prompt": "what did we do about exit code 137?"}
    r = memlane_cli(env, "hook", "claude-code", "user-prompt-submit", "--home", str(home), stdin=json.dumps(prompt))
    assert r.returncode == 0 and r.stderr == b""
    assert json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"] == DAMAGED_INDEX

    memlane.open(home, embedder="none").repair()
    r = memlane_cli(
        env,
        "hook",
        "claude-code",
        "session-start",
        "--home",
        str(home),
        stdin=json.dumps({**start, "session_id": "dmg-2"}),
    )
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert DAMAGED_INDEX not in context and "1 chunks from 1 sessions" in context


def test_a_snapshot_frozen_before_the_damage_gets_the_repair_line_added(tmp_path: Path, env: dict[str, str]) -> None:
    home = home_with_memory(tmp_path)
    start = {"session_id": "dmg-3", "cwd": "/w"}
    frozen = json.loads(hooks.session_start(home, start) or "")["hookSpecificOutput"]["additionalContext"]
    assert DAMAGED_INDEX not in frozen
    sorted((home / "lexical").glob("*.term"))[0].write_bytes(b"\x00garbage" * 20)
    resumed = json.loads(hooks.session_start(home, start) or "")["hookSpecificOutput"]["additionalContext"]
    assert resumed == frozen.split("\n\n# Recalled memory")[0] + "\n\n" + DAMAGED_INDEX
