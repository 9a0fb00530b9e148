"""`memlane uninstall-hooks`: takes out what install-hooks wrote, and nothing of anyone else's."""

from __future__ import annotations

import json
from pathlib import Path

import tomllib
from test_hooks import env, memlane_cli  # noqa: F401 - env is a fixture

from memlane.agents.install import install_claude_code, install_codex, uninstall_claude_code, uninstall_codex

USER_SETTINGS = {
    "model": "opus",
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard"}]}],
    },
}
USER_STATE = {"numStartups": 3, "mcpServers": {"docs": {"type": "stdio", "command": "docs-mcp", "args": []}}}
USER_CONFIG = 'model = "gpt-5.6-luna"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
EXE = "/usr/bin/memlane"


def _claude_files(tmp_path: Path) -> tuple[Path, Path]:
    settings, state = tmp_path / "settings.json", tmp_path / "state.json"
    settings.write_text(json.dumps(USER_SETTINGS, indent=4))  # not install-hooks' own layout
    state.write_text(json.dumps(USER_STATE))
    return settings, state


def _codex_files(tmp_path: Path) -> Path:
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "config.toml").write_text(USER_CONFIG)
    (codex / "hooks.json").write_text(json.dumps(USER_SETTINGS))
    return codex


def _snapshot(*paths: Path) -> dict[str, bytes | None]:
    return {str(p): p.read_bytes() if p.is_file() else None for p in paths}


def test_install_then_uninstall_gives_back_the_files_as_they_were(tmp_path: Path) -> None:
    settings, state = _claude_files(tmp_path)
    codex = _codex_files(tmp_path)
    before = _snapshot(settings, state, codex / "config.toml", codex / "hooks.json")
    install_claude_code(settings, home=tmp_path / "h", memlane=EXE, claude_json=state)
    install_codex(codex, home=tmp_path / "h", memlane=EXE, notify=True)
    assert _snapshot(settings, state, codex / "config.toml", codex / "hooks.json") != before

    claude = uninstall_claude_code(settings, claude_json=state)
    assert sorted(claude.changed) == sorted([str(settings), str(state)])
    report = uninstall_codex(codex)
    assert sorted(report.changed) == sorted([str(codex / "hooks.json"), str(codex / "config.toml")])
    assert _snapshot(settings, state, codex / "config.toml", codex / "hooks.json") == before


def test_uninstall_twice_changes_nothing_the_second_time(tmp_path: Path) -> None:
    settings, state = _claude_files(tmp_path)
    codex = _codex_files(tmp_path)
    install_claude_code(settings, home=tmp_path / "h", memlane=EXE, claude_json=state)
    install_codex(codex, home=tmp_path / "h", memlane=EXE, notify=True)
    uninstall_claude_code(settings, claude_json=state)
    uninstall_codex(codex)
    after = _snapshot(*tmp_path.rglob("*"))
    again = uninstall_claude_code(settings, claude_json=state)
    assert (
        again.changed == [] and again.backups == [] and sorted(again.unchanged) == sorted([str(settings), str(state)])
    )
    assert uninstall_codex(codex).changed == []
    assert _snapshot(*tmp_path.rglob("*")) == after  # no file written, no backup made


def test_uninstall_keeps_what_others_added_since(tmp_path: Path) -> None:
    settings, state = _claude_files(tmp_path)
    codex = _codex_files(tmp_path)
    install_claude_code(settings, home=tmp_path / "h", memlane=EXE, claude_json=state)
    install_codex(codex, home=tmp_path / "h", memlane=EXE, notify=True)
    # Another tool adds its own hook, a server and a setting after memlane's install.
    data = json.loads(settings.read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "other-tool stop"}]})
    settings.write_text(json.dumps(data))
    state.write_text(json.dumps({**json.loads(state.read_text()), "numStartups": 4}))
    (codex / "config.toml").write_text((codex / "config.toml").read_text() + '\n[mcp_servers.other]\ncommand = "o"\n')

    uninstall_claude_code(settings, claude_json=state)
    uninstall_codex(codex)
    stop = [h["command"] for g in json.loads(settings.read_text())["hooks"]["Stop"] for h in g["hooks"]]
    assert stop == ["say done", "other-tool stop"]
    assert json.loads(settings.read_text())["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert json.loads(state.read_text()) == {**USER_STATE, "numStartups": 4}
    config = tomllib.loads((codex / "config.toml").read_text())
    assert config == {
        "model": "gpt-5.6-luna",
        "mcp_servers": {"docs": {"command": "docs-mcp"}, "other": {"command": "o"}},
    }
    assert "memlane" not in (codex / "hooks.json").read_text()


def test_uninstall_removes_a_file_install_created(tmp_path: Path) -> None:
    settings, state = tmp_path / "claude" / "settings.json", tmp_path / "claude" / "state.json"
    install_claude_code(settings, home=tmp_path / "h", memlane=EXE, claude_json=state)
    uninstall_claude_code(settings, claude_json=state)
    assert not settings.exists() and not state.exists()


def test_uninstall_hooks_command(env: dict[str, str], tmp_path: Path) -> None:
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.write_text(json.dumps(USER_SETTINGS))
    before = settings.read_bytes()
    for client in ("claude-code", "codex"):
        r = memlane_cli(env, "install-hooks", client, "--home", str(tmp_path / "h"), "--no-backfill")
        assert r.returncode == 0, r.stderr
    for client in ("claude-code", "codex"):
        r = memlane_cli(env, "uninstall-hooks", client)
        assert r.returncode == 0 and "wrote" in r.stdout, r.stderr
    assert settings.read_bytes() == before
    codex = Path(env["CODEX_HOME"])
    assert not (codex / "hooks.json").exists() and not (codex / "config.toml").exists()  # install created them
    r = memlane_cli(env, "uninstall-hooks", "claude-code", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["changed"] == []
    checks = {c["name"]: c for c in json.loads(memlane_cli(env, "doctor", "--json").stdout)["checks"]}
    assert "install-hooks claude-code" in checks["claude-code hooks"]["message"]
