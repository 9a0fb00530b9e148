"""`memlane hook …` run as the clients run it: the installed command, a subprocess, the exact JSON payload on stdin."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import generic_session, write_jsonl

import memlane
from memlane.agents.queue import pending

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A HOME, Claude Code and Codex folder of the test's own: never the user's ~/.claude."""
    fake_home = tmp_path / "user"
    (fake_home / ".claude" / "projects").mkdir(parents=True)
    (fake_home / ".codex" / "sessions").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(fake_home / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(fake_home / ".codex"))
    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)
    return {**os.environ, "PYTHONPATH": str(REPO / "python")}


def memlane_cli(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memlane.cli", *args], input=stdin, env=env, capture_output=True, text=True, timeout=120
    )


def run_hook(command: str, payload: dict | str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run an installed hook command the way Claude Code does: through the shell, payload on stdin."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(command, shell=True, input=data, env=env, capture_output=True, text=True, timeout=120)


def claude_session(
    path: Path, session_id: str, cwd: str, pairs: list[tuple[str, str]], start: str = "2026-03-01T10:00:00.000Z"
) -> Path:
    """A Claude Code session file: user/assistant records chained by uuid, as the CLI writes them."""
    from datetime import datetime, timedelta

    t0 = datetime.fromisoformat(start.replace("Z", "+00:00"))
    records, parent = [], None
    for i, (q, a) in enumerate(pairs):
        for role, text, minute in (("user", q, 2 * i), ("assistant", a, 2 * i + 1)):
            uid = f"{session_id}-{role[0]}{i}"
            ts = (t0 + timedelta(minutes=minute)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            message = {"role": role, "content": [{"type": "text", "text": text}]}
            if role == "assistant":
                message = {
                    "id": f"msg_{uid}",
                    "type": "message",
                    "model": "claude-sonnet-4-5",
                    **message,
                    "stop_reason": "end_turn",
                }
            records.append(
                {
                    "type": role,
                    "timestamp": ts,
                    "parentUuid": parent,
                    "isSidechain": False,
                    "userType": "external",
                    "cwd": cwd,
                    "sessionId": session_id,
                    "version": "2.1.0",
                    "uuid": uid,
                    "message": message,
                }
            )
            parent = uid
    return write_jsonl(path, records)


def installed(settings: Path, event: str) -> str:
    groups = json.loads(settings.read_text())["hooks"][event]
    return next(h["command"] for g in groups for h in g["hooks"] if "memlane" in h["command"])


def wait_for_queue(home: Path, seconds: float = 90) -> None:
    """Wait until the detached worker has drained the queue (a wait, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while pending(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pending(home), (home / "queue" / "worker.log").read_text()


def session_start_payload(session_id: str, cwd: str, transcript: Path, source: str = "startup") -> dict:
    return {
        "session_id": session_id,
        "transcript_path": str(transcript),
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "SessionStart",
        "source": source,
        "model": "claude-sonnet-4-5-20250929",
    }


def test_install_then_next_session_starts_with_memory(env: dict[str, str], tmp_path: Path) -> None:
    """The issue's done-criterion: install-hooks, a session that remembers (MCP) and stops (hook), the next one starts with it."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    home = tmp_path / "memhome"
    claude = Path(env["CLAUDE_CONFIG_DIR"])
    settings, claude_json = claude / "settings.json", tmp_path / "user" / ".claude-state.json"
    r = memlane_cli(
        env,
        "install-hooks",
        "claude-code",
        "--home",
        str(home),
        "--settings",
        str(settings),
        "--claude-json",
        str(claude_json),
        "--embed",
        "none",
    )
    assert r.returncode == 0, r.stderr
    wait_for_queue(home)  # the backfill of the (empty) projects folder

    # Session 1: the agent talks about the exporter, the model remembers a decision through MCP, the turn stops.
    cwd = str(tmp_path / "work" / "exporter-service")
    sid1 = "6f1c2e0a-0000-4000-8000-000000000001"
    t1 = claude_session(
        claude / "projects" / "-work-exporter-service" / f"{sid1}.jsonl",
        sid1,
        cwd,
        [
            (
                "The nightly exporter dies with exit code 137 on the invoices job.",
                "Exit code 137 is an OOM kill: the invoices job loads all rows; stream them in batches of 5000 instead.",
            ),
            ("Which queue should the exporter use?", "Use SQS FIFO queues for the exporter: invoice ordering matters."),
        ],
    )
    server = json.loads(claude_json.read_text())["mcpServers"]["memlane"]

    async def remember() -> str:
        params = StdioServerParameters(
            command=server["command"],
            args=server["args"],
            env={**server["env"], "PYTHONPATH": env["PYTHONPATH"], "MEMLANE_CACHE_DIR": env["MEMLANE_CACHE_DIR"]},
        )
        async with Client(params) as client:
            result = await client.call_tool(
                "remember",
                {
                    "section": "KD",
                    "text": "The exporter uses SQS FIFO queues; invoice ordering matters.",
                    "detail": f"transcript {sid1} turns 2-3",
                },
            )
            return "".join(c.text for c in result.content)

    assert asyncio.run(remember()) == "added [KD01] to MEMORY.md (project, team)"
    stop = run_hook(
        installed(settings, "Stop"),
        {
            "session_id": sid1,
            "transcript_path": str(t1),
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "Stop",
            "stop_hook_active": False,
        },
        env,
    )
    assert stop.returncode == 0 and stop.stdout == "", stop.stderr
    wait_for_queue(home)

    # Session 2 in the same project: SessionStart injects the brain and what session 1 was about.
    sid2 = "6f1c2e0a-0000-4000-8000-000000000002"
    t2 = claude / "projects" / "-work-exporter-service" / f"{sid2}.jsonl"
    out = run_hook(installed(settings, "SessionStart"), session_start_payload(sid2, cwd, t2), env)
    assert out.returncode == 0, out.stderr
    hook_output = json.loads(out.stdout)["hookSpecificOutput"]
    assert hook_output["hookEventName"] == "SessionStart"
    context = hook_output["additionalContext"]
    assert "[KD01]" in context and "SQS FIFO queues; invoice ordering matters" in context  # the brain snapshot
    assert "# Recalled memory" in context and f"session {sid1}" in context  # recalled transcript turns
    assert "stream them in batches of 5000" in context

    # The first prompt recalls on the user's words; the second prompt of the session adds nothing.
    prompt = {
        "session_id": sid2,
        "transcript_path": str(t2),
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "the exporter got exit code 137 again, what did we do last time?",
    }
    first = run_hook(installed(settings, "UserPromptSubmit"), prompt, env)
    assert first.returncode == 0, first.stderr
    recalled = json.loads(first.stdout)["hookSpecificOutput"]
    assert recalled["hookEventName"] == "UserPromptSubmit" and "OOM kill" in recalled["additionalContext"]
    again = run_hook(installed(settings, "UserPromptSubmit"), {**prompt, "prompt": "and the queue?"}, env)
    assert again.returncode == 0 and again.stdout == ""

    # A resume re-injects the frozen snapshot byte for byte, even after the brain changed.
    memlane.Brain(home / "brain", home=home).add("LL", "Batch exporter reads by 5000 rows.")
    resumed = run_hook(installed(settings, "SessionStart"), session_start_payload(sid2, cwd, t2, source="resume"), env)
    snapshot = json.loads(resumed.stdout)["hookSpecificOutput"]["additionalContext"]
    assert snapshot.split("# Recalled memory")[0] == context.split("# Recalled memory")[0]
    assert "LL01" not in snapshot.split("# Recalled memory")[0]


def test_user_prompt_recall_stays_silent_when_nothing_matches(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "memhome"
    src = write_jsonl(
        tmp_path / "s.jsonl", generic_session("s", [("Which database does billing use?", "Postgres 15 on RDS.")])
    )
    memlane.open(home, embedder="none").index([src], embed=False)
    payload = {
        "session_id": "p1",
        "transcript_path": str(tmp_path / "p1.jsonl"),
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "zebra giraffe savanna",
    }
    r = memlane_cli(env, "hook", "claude-code", "user-prompt-submit", "--home", str(home), stdin=json.dumps(payload))
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""


def test_first_prompt_recall_weighs_meaning_when_the_home_has_local_vectors(
    env: dict[str, str], tmp_path: Path
) -> None:
    """An everyday prompt that shares words with the archive ("fix", "kitchen") recalls nothing
    from a home with the local model's vectors; keyword-only, the same words would inject."""
    pairs = [
        (
            "the exporter got exit code 137 again, how do I fix it?",
            "It was an OOM kill: stream the rows in batches of 5000.",
        ),
        (
            "how do I run the tests for the kitchen sink module?",
            "Run pytest tests/kitchen_sink with the fixtures loaded.",
        ),
    ]
    src = write_jsonl(tmp_path / "s.jsonl", generic_session("s", pairs))
    off_topic, on_topic = (
        "How do I fix a leaking kitchen faucet?",
        "what did we do about the exporter running out of memory?",
    )
    for embedder, injects_off_topic in (("none", True), ("local", False)):
        home = tmp_path / embedder
        memlane.open(home, embedder=embedder).index([src])
        for n, (prompt, expected) in enumerate(((off_topic, injects_off_topic), (on_topic, True))):
            payload = {
                "session_id": f"{embedder}{n}",
                "transcript_path": str(tmp_path / "p.jsonl"),
                "cwd": str(tmp_path),
                "permission_mode": "default",
                "hook_event_name": "UserPromptSubmit",
                "prompt": prompt,
            }
            r = memlane_cli(
                env, "hook", "claude-code", "user-prompt-submit", "--home", str(home), stdin=json.dumps(payload)
            )
            assert r.returncode == 0 and r.stderr == "", r.stderr
            assert bool(r.stdout) is expected, (embedder, prompt, r.stdout)
            if expected:
                assert "OOM kill" in r.stdout or "kitchen_sink" in r.stdout


def test_bad_payload_is_one_line_and_never_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    # Exit 2 means "block" to Claude Code (it would erase a prompt or keep a turn going).
    for event, payload in (("stop", "{not json"), ("session-start", "[1, 2]"), ("user-prompt-submit", '{"prompt": ')):
        r = memlane_cli(env, "hook", "claude-code", event, "--home", str(tmp_path / "h"), stdin=payload)
        assert r.returncode == 1 and r.stdout == ""
        assert r.stderr.startswith(f"memlane hook claude-code {event}: the hook payload") and r.stderr.count("\n") == 1
    assert not (tmp_path / "h" / "queue").exists()


def test_stop_hook_returns_before_the_worker_indexes(env: dict[str, str], tmp_path: Path) -> None:
    """The hook only queues: with the worker lock held, nothing is indexed, and the entry waits."""
    home = tmp_path / "memhome"
    src = claude_session(
        tmp_path / "p" / "s1.jsonl", "s1", "/w", [("kafka retention?", "seven days on the orders topic")]
    )
    (home / "queue").mkdir(parents=True)
    from memlane._fs import _try_lock, _unlock

    fd = os.open(home / "queue" / "worker.lock", os.O_RDWR | os.O_CREAT)
    try:
        assert _try_lock(fd)
        r = memlane_cli(
            env,
            "hook",
            "claude-code",
            "pre-compact",
            "--home",
            str(home),
            "--embed",
            "none",
            stdin=json.dumps(
                {
                    "session_id": "s1",
                    "transcript_path": str(src),
                    "cwd": "/w",
                    "hook_event_name": "PreCompact",
                    "trigger": "auto",
                    "custom_instructions": "",
                }
            ),
        )
        assert r.returncode == 0 and r.stdout == ""
        time.sleep(1.0)  # give a (wrongly) undetached worker the chance to index
        assert [e["path"] for e in pending(home)] == [str(src)]
        assert memlane.open(home, embedder="none").status()["chunks"] == 0
    finally:
        _unlock(fd)
        os.close(fd)
    r = memlane_cli(env, "hook", "drain", "--home", str(home), "--json")
    assert json.loads(r.stdout)["indexed"] == [str(src)]
    # The transcript's chunk, and the daily note the pre-compact flush distilled from it.
    mem = memlane.open(home, embedder="none")
    assert not pending(home) and mem.status()["chunks"] == 2
    assert {h.source for h in mem.search("kafka retention orders topic")} == {"transcript", "knowledge"}


def test_drain_resumes_a_crashed_workers_entries_and_drops_vanished_files(env: dict[str, str], tmp_path: Path) -> None:
    from memlane.agents.queue import drain, queue_entry

    home = tmp_path / "memhome"
    keep = claude_session(
        tmp_path / "p" / "keep.jsonl", "keep", "/w", [("where are the runbooks?", "in docs/runbooks, one per service")]
    )
    gone = tmp_path / "p" / "gone.jsonl"
    entry = queue_entry(
        home, {"session_id": "keep", "transcript_path": str(keep)}, client="claude-code", event="stop", embed="none"
    )
    entry.rename(entry.with_name(entry.name + ".taken"))  # a worker died holding it
    queue_entry(
        home, {"session_id": "gone", "transcript_path": str(gone)}, client="claude-code", event="stop", embed="none"
    )
    report = drain(home)
    assert report.indexed == [str(keep)] and report.dropped == [str(gone)] and not pending(home)
    assert memlane.open(home, embedder="none").search("runbooks")[0].session_id == "keep"
    assert "dropped " + str(gone) in (home / "queue" / "worker.log").read_text()


def test_drain_leaves_the_entry_when_the_home_is_locked(env: dict[str, str], tmp_path: Path) -> None:
    from memlane.agents.queue import drain, queue_entry

    home = tmp_path / "memhome"
    src = claude_session(tmp_path / "p" / "s.jsonl", "s", "/w", [("q", "a")])
    mem = memlane.open(home, embedder="none")
    queue_entry(
        home, {"session_id": "s", "transcript_path": str(src)}, client="claude-code", event="stop", embed="none"
    )
    with mem._store.writer():
        report = drain(home)
    assert report.locked and report.indexed == [] and [e["path"] for e in pending(home)] == [str(src)]
    assert drain(home).indexed == [str(src)]


def test_session_end_distils_when_installed_with_distill(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "memhome"
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    r = memlane_cli(
        env,
        "install-hooks",
        "claude-code",
        "--home",
        str(home),
        "--settings",
        str(settings),
        "--no-mcp",
        "--embed",
        "none",
        "--distill",
        "extractive",
    )
    assert r.returncode == 0, r.stderr
    command = installed(settings, "SessionEnd")
    assert "--distill extractive" in command and "--distill" not in installed(settings, "Stop")
    src = claude_session(
        Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / "-w" / "d1.jsonl",
        "d1",
        "/w",
        [
            (
                "Pick a queue for the exporter.",
                "We decided to use SQS FIFO queues for `exporter.py`; ordering matters for invoices.",
            ),
        ],
    )
    end = run_hook(
        command,
        {
            "session_id": "d1",
            "transcript_path": str(src),
            "cwd": "/w",
            "hook_event_name": "SessionEnd",
            "reason": "prompt_input_exit",
        },
        env,
    )
    assert end.returncode == 0 and end.stdout == ""
    wait_for_queue(home)
    memory = (home / "brain" / "MEMORY.md").read_text()
    assert "SQS FIFO" in memory and "[KD01]" in memory
    assert list((home / "brain" / "DailyActivity").glob("*.md"))


def codex_rollout(codex: Path, thread_id: str, cwd: str, pairs: list[tuple[str, str]]) -> Path:
    """A Codex rollout file: session_meta, then user and assistant response items."""
    records = [
        {
            "timestamp": "2026-08-03T10:48:56.000Z",
            "type": "session_meta",
            "payload": {
                "id": thread_id,
                "timestamp": "2026-08-03T10:48:56.000Z",
                "cwd": cwd,
                "originator": "codex_cli_rs",
                "cli_version": "0.146.0",
            },
        }
    ]
    for i, (q, a) in enumerate(pairs):
        ts = f"2026-08-03T10:{50 + i:02d}:00.000Z"
        records.append(
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": q}]},
            }
        )
        records.append(
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": a}]},
            }
        )
    return write_jsonl(
        codex / "sessions" / "2026" / "08" / "03" / f"rollout-2026-08-03T10-48-56-{thread_id}.jsonl", records
    )


def test_codex_hooks_and_notify(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "memhome"
    codex = Path(env["CODEX_HOME"])
    r = memlane_cli(env, "install-hooks", "codex", "--home", str(home), "--embed", "none", "--notify")
    assert r.returncode == 0, r.stderr
    hooks = codex / "hooks.json"
    thread = "019fc8be-3658-7ca3-9e29-00000000abcd"
    rollout = codex_rollout(
        codex,
        thread,
        "/repo/ledger",
        [("Why is the ledger test flaky?", "The ledger test races the clock; freeze time with freezegun.")],
    )

    # Codex's notify passes its payload as the last argument (hyphenated keys, no transcript path).
    import tomllib

    notify = tomllib.loads((codex / "config.toml").read_text())["notify"]
    payload = {
        "type": "agent-turn-complete",
        "thread-id": thread,
        "turn-id": "t1",
        "cwd": "/repo/ledger",
        "input-messages": ["Why is the ledger test flaky?"],
        "last-assistant-message": "freeze time with freezegun.",
    }
    done = subprocess.run([*notify, json.dumps(payload)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    wait_for_queue(home)
    assert memlane.open(home, embedder="none").search("freezegun")[0].path == str(rollout)

    # The Stop hook: the exact fields Codex sends (stop.command.input schema).
    with rollout.open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "timestamp": "2026-08-03T11:00:00.000Z",
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "and the nightly snapshot job?"}],
                    },
                }
            )
            + "\n"
        )
    stop = {
        "cwd": "/repo/ledger",
        "hook_event_name": "Stop",
        "last_assistant_message": "done",
        "model": "gpt-5.6-luna",
        "permission_mode": "default",
        "session_id": thread,
        "stop_hook_active": False,
        "transcript_path": str(rollout),
        "turn_id": "t2",
    }
    assert run_hook(installed(hooks, "Stop"), stop, env).returncode == 0
    wait_for_queue(home)
    assert memlane.open(home, embedder="none").search("nightly snapshot job")

    start = {
        "session_id": "019fc8be-0000-7000-8000-0000000000ff",
        "transcript_path": None,
        "cwd": "/repo/ledger",
        "hook_event_name": "SessionStart",
        "model": "gpt-5.6-luna",
        "permission_mode": "default",
        "source": "startup",
    }
    out = run_hook(installed(hooks, "SessionStart"), start, env)
    context = json.loads(out.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart" and "# memlane memory" in context["additionalContext"]
    assert "freezegun" in context["additionalContext"]


def test_first_prompt_markers_are_claimed_once_and_pruned(tmp_path: Path) -> None:
    from memlane.agents.hooks import _first_prompt

    folder = tmp_path / "queue" / "prompted"
    folder.mkdir(parents=True)
    old = time.time() - 40 * 86400
    for i in range(1001):
        (folder / f"old{i}").touch()
        os.utime(folder / f"old{i}", (old, old))
    (folder / "recent").touch()
    assert _first_prompt(tmp_path, "session-a") is True
    assert _first_prompt(tmp_path, "session-a") is False
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(("old", "recent"))) == ["recent"]
    assert len(list(folder.iterdir())) == 2


def test_session_start_context_fits_claude_codes_10k_character_cap(env: dict[str, str], tmp_path: Path) -> None:
    """Over 10,000 characters Claude Code shows the model a 2 KB preview: the hook must stay under."""
    home = tmp_path / "memhome"
    src = write_jsonl(
        tmp_path / "p" / "s.jsonl",
        generic_session(
            "s",
            [
                (f"ledger question {i} about reconciliation", "answer " + "ledger reconciliation detail " * 40)
                for i in range(30)
            ],
        ),
    )
    memlane.open(home, embedder="none").index([src], embed=False)
    brain = memlane.Brain(home / "brain", home=home, caps={"KD": None, "LL": None})
    for i in range(60):
        brain.add(
            "KD" if i % 2 else "LL",
            f"Ledger rule {i}: reconcile the nightly batch against the bank feed before posting, see runbook section {i}.",
        )
    payload = session_start_payload("cap-1", "/work/ledger", tmp_path / "p" / "cap-1.jsonl")
    r = memlane_cli(env, "hook", "claude-code", "session-start", "--home", str(home), stdin=json.dumps(payload))
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= 9500
    assert all(f"[{k}]" in context for k in ("KD01", "KD30", "LL01", "LL30"))  # the compact index survives the cut
    assert context.endswith("or `memlane brain show`.]") and "# Recalled memory" not in context

    small = memlane_cli(
        env,
        "hook",
        "claude-code",
        "session-start",
        "--home",
        str(home),
        "--max-chars",
        "200000",
        stdin=json.dumps({**payload, "session_id": "cap-2"}),
    )
    big = json.loads(small.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(big) > 10_000 and "# Recalled memory" in big and "Ledger rule 59" in big


def test_requeuing_keeps_the_first_time_and_the_distillation(tmp_path: Path) -> None:
    from memlane.agents.queue import queue_entry

    home = tmp_path / "h"
    payload = {"session_id": "s", "transcript_path": str(tmp_path / "s.jsonl")}
    first = queue_entry(home, payload, client="claude-code", event="session-end", distill="extractive")
    data = json.loads(first.read_text())
    data["queued_at"] = "2026-01-01T00:00:00+00:00"
    first.write_text(json.dumps(data))
    again = queue_entry(home, payload, client="claude-code", event="stop")
    assert again == first and len(pending(home)) == 1
    assert pending(home)[0] | {"event": "stop"} == {**data, "event": "stop"}


def test_claude_turns_index_keywords_and_session_ends_embed(tmp_path: Path) -> None:
    from memlane.agents.queue import queue_entry

    home = tmp_path / "h"
    turn = {"session_id": "s", "transcript_path": str(tmp_path / "s.jsonl")}
    queue_entry(home, turn, client="claude-code", event="stop")
    assert pending(home)[0]["vectors"] is False  # no embedding model loaded on every turn
    queue_entry(home, turn, client="claude-code", event="pre-compact")
    queue_entry(home, turn, client="claude-code", event="stop")
    assert pending(home)[0]["vectors"] is True  # a later turn keeps the embedding asked for
    codex = {"session_id": "c", "transcript_path": str(tmp_path / "c.jsonl")}
    queue_entry(home, codex, client="codex", event="stop")
    assert {e["session_id"]: e["vectors"] for e in pending(home)}["c"] is True  # Codex has no session end


def test_a_failing_hook_exits_1_with_one_line_through_either_entry(env: dict[str, str], tmp_path: Path) -> None:
    payload = json.dumps({"hook_event_name": "SessionStart", "source": "startup"})  # no session id
    for args in (
        ["hook", "claude-code", "session-start", "--home", str(tmp_path)],
        ["--home", str(tmp_path), "hook", "claude-code", "session-start"],
    ):
        r = memlane_cli(env, *args, stdin=payload)
        assert r.returncode == 1 and r.stdout == ""
        assert r.stderr == "memlane hook claude-code session-start: InvalidArgumentError: session id is empty\n"


def test_hooks_on_real_claude_code_transcripts(env: dict[str, str], tmp_path: Path, shared_data: Path) -> None:
    """Real Claude Code session files (shared/data/transcripts) backfilled, then a new session in their project starts with them."""
    import shutil

    samples = sorted((shared_data / "transcripts" / "claude-code").glob("*.jsonl"))
    assert samples, "no Claude Code samples in the shared data"
    project = Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / "-project"
    project.mkdir(parents=True)
    for f in samples:
        shutil.copy(f, project / f.name)
    home = tmp_path / "memhome"
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    assert (
        memlane_cli(
            env,
            "install-hooks",
            "claude-code",
            "--home",
            str(home),
            "--settings",
            str(settings),
            "--no-mcp",
            "--embed",
            "none",
        ).returncode
        == 0
    )
    wait_for_queue(home)
    mem = memlane.open(home, embedder="none")
    assert mem.status()["files"] == len(samples)
    hit = mem.search("hello world function")[0]
    out = run_hook(
        installed(settings, "SessionStart"), session_start_payload("real-1", "/project", project / "real-1.jsonl"), env
    )
    context = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("# memlane memory · session real-1") and len(context) <= 9500
    prompt = {
        "session_id": "real-1",
        "transcript_path": str(project / "real-1.jsonl"),
        "cwd": "/project",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Create a hello world function again, like last time",
    }
    first = json.loads(run_hook(installed(settings, "UserPromptSubmit"), prompt, env).stdout)["hookSpecificOutput"][
        "additionalContext"
    ]
    assert f"session {hit.session_id}" in first and "hello" in first.lower()


@pytest.mark.model
def test_worker_embeds_with_the_local_model_only_when_the_session_ends(tmp_path: Path) -> None:
    from memlane.agents.queue import drain, queue_entry

    home = tmp_path / "h"
    src = claude_session(
        tmp_path / "p" / "s.jsonl",
        "s",
        "/w",
        [("where do the exporter metrics go?", "to the ops Grafana board, panel exporter-lag")],
    )
    payload = {"session_id": "s", "transcript_path": str(src)}
    queue_entry(home, payload, client="claude-code", event="stop", embed="local")
    drain(home)
    status = memlane.open(home, embedder="none").status()
    assert status["chunks"] == 1 and status["chunks_with_vectors"] == 0
    queue_entry(home, payload, client="claude-code", event="session-end", embed="local")
    drain(home)
    status = memlane.open(home, embedder="none").status()
    assert status["chunks_with_vectors"] == 1 and status["embedder_id"]


def test_worker_starts_compaction_when_a_distilled_session_completes_a_week(tmp_path: Path) -> None:
    from memlane.agents.queue import drain, queue_entry
    from memlane.timeline import schedule

    home = tmp_path / "h"
    for day in ("02", "03", "04"):  # ISO week 2026-W10, long over
        p = home / "brain" / "DailyActivity" / f"2026-03-{day}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# 2026-03-{day}\n\n## 09:00 | exporter\n- Raised the exporter retry limit to {day} attempts.\n")
    src = claude_session(
        tmp_path / "d1.jsonl", "d1", "/w", [("Pick a queue.", "We decided to use SQS FIFO queues for the exporter.")]
    )
    queue_entry(
        home,
        {"session_id": "d1", "transcript_path": str(src)},
        client="claude-code",
        event="session-end",
        embed="none",
        distill="extractive",
    )
    report = drain(home)
    assert report.distilled == [str(src)]
    log = (home / "queue" / "worker.log").read_text()
    assert "started compact" in log and "dream" not in log.split("started compact")[1].splitlines()[0]
    assert schedule._SPAWNED[-1].wait(timeout=120) == 0, (home / "queue" / "timeline.log").read_text()
    weekly = (home / "brain" / "Weekly" / "2026-W10.md").read_text()
    assert "(DailyActivity/2026-03-03.md › 09:00)" in weekly
