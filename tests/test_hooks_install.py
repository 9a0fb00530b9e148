"""`memlane install-hooks` (idempotent, backs up, keeps the user's entries) and `memlane doctor`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import tomllib
from test_hooks import claude_session, env, memlane_cli, wait_for_queue  # noqa: F401 - env is a fixture

import memlane

USER_SETTINGS = {
    "model": "opus",
    "cleanupPeriodDays": 90,
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard"}]}],
    },
}


def install(env: dict[str, str], home: Path, settings: Path, *extra: str):
    return memlane_cli(
        env,
        "install-hooks",
        "claude-code",
        "--home",
        str(home),
        "--settings",
        str(settings),
        "--claude-json",
        str(settings.parent / "state.json"),
        "--no-backfill",
        *extra,
    )


def test_install_keeps_user_entries_backs_up_and_is_idempotent(env: dict[str, str], tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(USER_SETTINGS, indent=2))
    r = install(env, tmp_path / "h1", settings)
    assert r.returncode == 0, r.stderr
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["cleanupPeriodDays"] == 90
    stop = [h["command"] for g in data["hooks"]["Stop"] for h in g["hooks"]]
    assert stop[0] == "say done" and stop[1].endswith(f"hook claude-code stop --home {tmp_path / 'h1'}")
    assert data["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert data["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    backups = sorted(tmp_path.glob("settings.json.memlane-backup-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == USER_SETTINGS
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["mcpServers"]["memlane"]["args"][-3:] == ["mcp", "--home", str(tmp_path / "h1")]

    before = settings.read_bytes()
    again = install(env, tmp_path / "h1", settings, "--json")
    assert json.loads(again.stdout)["changed"] == [] and settings.read_bytes() == before
    assert len(list(tmp_path.glob("settings.json.memlane-backup-*"))) == 1

    time.sleep(1.1)  # backups are named by the second
    moved = install(env, tmp_path / "h2", settings)
    assert moved.returncode == 0
    commands = [
        h["command"]
        for groups in json.loads(settings.read_text())["hooks"].values()
        for g in groups
        for h in g["hooks"]
    ]
    ours = [c for c in commands if "memlane" in c]
    assert len(ours) == 5 and all(str(tmp_path / "h2") in c for c in ours)
    assert "say done" in commands and "/usr/local/bin/guard" in commands


def test_install_refuses_a_broken_settings_file(env: dict[str, str], tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"hooks": {"Stop": [}')
    r = install(env, tmp_path / "h", settings)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not JSON" in r.stderr
    assert settings.read_text() == '{"hooks": {"Stop": [}' and not list(tmp_path.glob("*.memlane-backup-*"))


def test_install_codex_writes_hooks_mcp_and_notify(env: dict[str, str], tmp_path: Path) -> None:
    codex = Path(env["CODEX_HOME"])
    (codex / "config.toml").write_text('model = "gpt-5.6-luna"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n')
    home = tmp_path / "h"
    r = memlane_cli(env, "install-hooks", "codex", "--home", str(home), "--notify", "--no-backfill")
    assert r.returncode == 0, r.stderr
    config = tomllib.loads((codex / "config.toml").read_text())
    assert config["model"] == "gpt-5.6-luna" and config["mcp_servers"]["docs"] == {"command": "docs-mcp"}
    assert config["mcp_servers"]["memlane"]["args"][-3:] == ["mcp", "--home", str(home)]
    assert config["notify"][-4:] == ["--home", str(home), "codex", "notify"]
    assert sorted(json.loads((codex / "hooks.json").read_text())["hooks"]) == [
        "SessionStart",
        "Stop",
        "UserPromptSubmit",
    ]
    text = (codex / "config.toml").read_text()
    again = memlane_cli(env, "install-hooks", "codex", "--home", str(home), "--notify", "--no-backfill", "--json")
    assert json.loads(again.stdout)["changed"] == [] and (codex / "config.toml").read_text() == text

    # A notify program of the user's own is left alone (the Stop hook indexes anyway).
    (codex / "config.toml").write_text('notify = ["notify-send", "codex"]\n')
    r = memlane_cli(env, "install-hooks", "codex", "--home", str(home), "--notify", "--no-backfill")
    assert tomllib.loads((codex / "config.toml").read_text())["notify"] == ["notify-send", "codex"]
    assert "already has notify" in r.stdout
    # Codex has no session-end: its per-turn Stop hook distils (every twenty turns), as asked.
    assert (
        memlane_cli(env, "install-hooks", "codex", "--home", str(home), "--distill", "off", "--no-backfill").returncode
        == 0
    )
    stop = json.loads((codex / "hooks.json").read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert stop.endswith("--distill off")


def doctor(env: dict[str, str], home: Path) -> tuple[int, dict[str, dict]]:
    r = memlane_cli(env, "doctor", "--home", str(home), "--json")
    return r.returncode, {c["name"]: c for c in json.loads(r.stdout)["checks"]}


def test_doctor_reports_missing_hooks_then_a_healthy_setup(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "h"
    code, checks = doctor(env, home)
    assert code == 1 and checks["claude-code hooks"]["level"] == "error" and checks["home"]["level"] == "warning"
    assert checks["codex hooks"]["level"] == "error" and checks["claude-code mcp"]["level"] == "warning"

    assert memlane_cli(env, "install-hooks", "claude-code", "--home", str(home), "--no-backfill").returncode == 0
    assert memlane_cli(env, "install-hooks", "codex", "--home", str(home), "--no-backfill").returncode == 0
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    claude_session(projects / "-w" / "s1.jsonl", "s1", "/w", [("q", "a")])
    memlane.open(home, embedder="none").index([projects], embed=False)
    code, checks = doctor(env, home)
    assert code == 0, checks
    assert {c["level"] for c in checks.values()} == {"ok"}
    assert checks["home"]["message"].endswith("1 chunks from 1 files, consistent")

    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "disableAllHooks": True}))
    code, checks = doctor(env, home)
    assert code == 1 and "disableAllHooks" in checks["claude-code hooks"]["message"]
    settings.write_text(
        json.dumps({k: v for k, v in json.loads(settings.read_text()).items() if k != "disableAllHooks"})
    )

    # A broken install (memlane moved) is an error.
    settings.write_text(settings.read_text().replace("/memlane hook", "/gone/memlane hook"))
    code, checks = doctor(env, home)
    assert code == 1 and "hook command not found" in checks["claude-code hooks"]["message"]


def test_doctor_warns_before_claude_code_deletes_an_unindexed_transcript(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert (
        memlane_cli(env, "install-hooks", "claude-code", "--home", str(home), "--no-mcp", "--no-backfill").returncode
        == 0
    )
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    fresh = claude_session(projects / "-w" / "fresh.jsonl", "fresh", "/w", [("q1", "a1")])
    old = claude_session(projects / "-w" / "old.jsonl", "old", "/w", [("q2", "a2")])
    code, checks = doctor(env, home)
    assert (
        checks["transcript retention"]["level"] == "warning"
        and "2 transcript(s) not indexed" in checks["transcript retention"]["message"]
    )

    month_ago = time.time() - 29 * 86400  # default cleanupPeriodDays is 30: deleted within 2 days
    os.utime(old, (month_ago, month_ago))
    code, checks = doctor(env, home)
    assert code == 1 and checks["transcript retention"]["level"] == "error"
    assert (
        "1 transcript(s) are not indexed" in checks["transcript retention"]["message"]
        and str(old) in checks["transcript retention"]["message"]
    )

    memlane.open(home, embedder="none").index([projects], embed=False)
    assert doctor(env, home)[1]["transcript retention"]["level"] == "ok"
    with fresh.open("a") as fh:  # appended since indexing: not indexed up to its end
        fh.write(fresh.read_text().splitlines()[0] + "\n")
    assert doctor(env, home)[1]["transcript retention"]["level"] == "warning"

    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "cleanupPeriodDays": 0}))
    code, checks = doctor(env, home)
    assert code == 1 and "cleanupPeriodDays = 0" in checks["transcript retention"]["message"]


@pytest.mark.parametrize("queued_minutes_ago, level", [(5, "ok"), (120, "warning")])
def test_doctor_flags_a_queue_that_does_not_drain(
    env: dict[str, str], tmp_path: Path, queued_minutes_ago: int, level: str
) -> None:
    from datetime import datetime, timedelta, timezone

    from memlane.agents.queue import queue_entry

    home = tmp_path / "h"
    entry = queue_entry(
        home, {"session_id": "s", "transcript_path": str(tmp_path / "s.jsonl")}, client="claude-code", event="stop"
    )
    data = json.loads(entry.read_text())
    data["queued_at"] = (datetime.now(timezone.utc) - timedelta(minutes=queued_minutes_ago)).isoformat(
        timespec="seconds"
    )
    entry.write_text(json.dumps(data))
    assert doctor(env, home)[1]["index queue"]["level"] == level


def test_install_indexes_the_existing_transcripts_in_the_background(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "h"
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    old = claude_session(
        projects / "-srv-billing" / "old.jsonl",
        "old",
        "/srv/billing",
        [("why did the invoice PDF render blank?", "wkhtmltopdf lacked fonts; install fonts-dejavu in the image")],
    )
    r = memlane_cli(env, "install-hooks", "claude-code", "--home", str(home), "--no-mcp", "--embed", "none")
    assert r.returncode == 0 and f"indexing {projects} in the background" in r.stdout
    wait_for_queue(home)
    assert memlane.open(home, embedder="none").search("invoice PDF blank fonts")[0].path == str(old)
