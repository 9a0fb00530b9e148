"""The memory that learns by itself, through the hooks as Claude Code runs them: stop indexes,
pre-compact flushes what the session said so far, session-end distils the rest, and the worker
indexes what distillation wrote. Corrections and preferences are captured, the agent's open plan
is carried to the next session of its project (not another's), and a later plan closes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hooks import env, memlane_cli, session_start_payload  # noqa: F401 - env is a fixture
from test_tasks import claude_session, repo, todo

import memlane
from memlane.brain import Brain, default_brain_dir
from memlane.events import EventLog

FIRST = [
    [todo("Add retry to the exporter", "in_progress"), todo("Write the changelog", "pending")],
    [todo("Add retry to the exporter", "in_progress"), todo("Write the changelog", "pending")],
]


def with_user_turns(rows: list[dict], texts: list[str]) -> list[dict]:
    """The session's user turns say ``texts`` (one each, in order)."""
    users = [r for r in rows if r["type"] == "user"]
    for row, text in zip(users, texts):
        row["message"]["content"] = [{"type": "text", "text": text}]
    return rows


def hook(env: dict[str, str], home: Path, event: str, payload: dict) -> str:
    r = memlane_cli(
        env, "hook", "claude-code", event, "--home", str(home), "--embed", "none", stdin=json.dumps(payload)
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def carried(output: str) -> list[str]:
    """The "open from last time" items a session-start output holds (without their sources)."""
    context = json.loads(output)["hookSpecificOutput"]["additionalContext"] if output else ""
    block = (
        context.split("## Open from last time", 1)[1].split("\n\n", 1)[0] if "## Open from last time" in context else ""
    )
    return [line.split(" (session ")[0] for line in block.splitlines()[1:]]


def wait_idle(home: Path) -> None:
    from test_hooks import wait_for_queue

    wait_for_queue(home)


def test_a_session_is_indexed_flushed_distilled_and_its_open_plan_carried(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "memhome"
    app, web = repo(tmp_path, "app"), repo(tmp_path, "web")
    src = tmp_path / "projects" / "s1.jsonl"
    src.parent.mkdir()
    rows = with_user_turns(
        claude_session("s1", app, FIRST),
        [
            "Plan the exporter work; we need retries before Friday.",
            "No, don't use time.sleep in the retry loop, use the backoff helper in utils/retry.py.",
        ],
    )
    write = lambda rs: src.write_text("".join(json.dumps(r) + "\n" for r in rs))  # noqa: E731
    write(rows)
    payload = {"session_id": "s1", "transcript_path": str(src), "cwd": str(app)}

    hook(env, home, "stop", {**payload, "hook_event_name": "Stop"})
    wait_idle(home)
    hook(env, home, "pre-compact", {**payload, "hook_event_name": "PreCompact", "trigger": "auto"})
    wait_idle(home)
    brain = Brain(default_brain_dir(home), home=home)
    corrections = [e for e in brain.entries(evolution=True) if e.prefix == "CR"]
    assert [e.text for e in corrections] and "backoff helper" in corrections[0].text
    assert "transcript s1 turns" in (corrections[0].detail or "")
    events = [e["type"] for e in EventLog(home).read()]
    assert "memory:compact" in events and "memory:flush" in events
    # The daily note the flush wrote is searchable now, not at the next manual index.
    mem = memlane.open(home, embedder="none")
    assert any(
        h.source == "knowledge" and "DailyActivity" in h.path
        for h in mem.search("exporter retries backoff helper", k=10)
    )

    # The session goes on past the flush; session-end distils only what came after it.
    more = with_user_turns(
        claude_session(
            "s1",
            app,
            [*FIRST, [todo("Add retry to the exporter", "in_progress"), todo("Write the changelog", "completed")]],
        ),
        [
            "Plan the exporter work; we need retries before Friday.",
            "No, don't use time.sleep in the retry loop, use the backoff helper in utils/retry.py.",
            "From now on, always run the linters before you commit anything.",
        ],
    )
    write(more)
    hook(env, home, "session-end", {**payload, "hook_event_name": "SessionEnd", "reason": "exit"})
    wait_idle(home)
    brain = Brain(default_brain_dir(home), home=home)
    preferences = [e for e in brain.entries() if e.meta.get("type") == "user"]
    assert any("linters" in e.text for e in preferences)
    assert len([e for e in brain.entries(evolution=True) if e.prefix == "CR"]) == 1, (
        "the flushed turns are not distilled twice"
    )
    daily = "".join(p.read_text() for p in brain.daily_dir.glob("*.md"))
    assert daily.count("memlane:session id=s1 ") == 2, "one entry for the flush, one for the rest"

    # The next session of the project starts with its open plan; another project's does not.
    nxt = hook(env, home, "session-start", session_start_payload("s2", str(app), tmp_path / "projects" / "s2.jsonl"))
    assert carried(nxt) == ["- [in_progress] Add retry to the exporter"]
    assert (
        carried(
            hook(env, home, "session-start", session_start_payload("w2", str(web), tmp_path / "projects" / "w2.jsonl"))
        )
        == []
    )

    # A later session marks it done: it is no longer carried.
    later = tmp_path / "projects" / "s2.jsonl"
    later.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in claude_session("s2", app, [[todo("Add retry to the exporter", "completed")]], day="2026-03-03")
        )
    )
    hook(
        env,
        home,
        "stop",
        {"session_id": "s2", "transcript_path": str(later), "cwd": str(app), "hook_event_name": "Stop"},
    )
    wait_idle(home)
    assert (
        carried(
            hook(env, home, "session-start", session_start_payload("s3", str(app), tmp_path / "projects" / "s3.jsonl"))
        )
        == []
    )


def test_distillation_can_be_turned_off_in_one_setting(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "memhome"
    app = repo(tmp_path, "app")
    src = tmp_path / "s1.jsonl"
    src.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in with_user_turns(
                claude_session("s1", app, FIRST),
                ["Plan it.", "From now on, always run the linters before you commit anything."],
            )
        )
    )
    quiet = {**env, "MEMLANE_DISTILL": "off"}
    hook(
        quiet,
        home,
        "session-end",
        {"session_id": "s1", "transcript_path": str(src), "cwd": str(app), "hook_event_name": "SessionEnd"},
    )
    wait_idle(home)
    assert memlane.open(home, embedder="none").status()["chunks"] > 0, "indexed all the same"
    assert not default_brain_dir(home).exists() or not Brain(default_brain_dir(home), home=home).entries()
