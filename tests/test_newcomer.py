"""What a newcomer meets on a fresh machine: `memlane index` with an agent missing, `memlane doctor` before install-hooks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import generic_session, write_jsonl

from memlane.cli import main

PAIRS = [("the deploy failed with an OOM", "raise the memory limit of the worker pod")]


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with no agent installed: no ~/.claude, no ~/.codex."""
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "MEMLANE_LIBRARY", "MEMLANE_BRAIN_DIR"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_index_leaves_out_the_folders_of_an_agent_not_installed(
    fresh_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude = fresh_home / ".claude" / "projects"
    write_jsonl(claude / "-w" / "a.jsonl", generic_session("a", PAIRS))
    code = main(["--home", str(tmp_path / "m"), "index", str(claude), "~/.codex/sessions", "--embed", "none"])
    out, err = capsys.readouterr()
    assert code == 0 and "indexed 1 of 1 files" in out
    assert err == "memlane index: not found, left out: ~/.codex/sessions\n"


def test_index_with_no_named_folder_there_is_one_line_naming_them(
    fresh_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--home", str(tmp_path / "m"), "index", "~/.claude/projects", "~/.codex/sessions", "--embed", "none"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == "memlane index: nothing to index: ~/.claude/projects, ~/.codex/sessions not found\n"
    code = main(["--json", "--home", str(tmp_path / "m"), "index", "~/.codex/sessions", "--embed", "none"])
    assert code == 2 and json.loads(capsys.readouterr().out)["kind"] == "FileNotFoundError"


def test_a_bare_index_takes_the_agent_folders_that_exist(
    fresh_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_jsonl(fresh_home / ".codex" / "sessions" / "2026" / "01" / "01" / "a.jsonl", generic_session("a", PAIRS))
    code = main(["--home", str(tmp_path / "m"), "index", "--embed", "none", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["files_indexed"] == 1 and err == ""


def test_doctor_before_install_hooks_names_what_is_missing_per_client(
    fresh_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--home", str(tmp_path / "m"), "doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    # A machine may have one agent and not the other: warnings, not errors.
    assert code == 0
    for client in ("claude-code", "codex"):
        assert checks[f"{client} hooks"]["level"] == "warning"
        assert f"`memlane install-hooks {client}`" in checks[f"{client} hooks"]["message"]
        assert "not registered" in checks[f"{client} mcp"]["message"]
        assert f"`memlane install-hooks {client}`" in checks[f"{client} mcp"]["message"]
    main(["--home", str(tmp_path / "m"), "doctor"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and sum("install-hooks" in line for line in lines) == 4


def test_recall_keeps_an_aider_edit_block_as_aider_wrote_it(shared_data: Path, tmp_path: Path) -> None:
    # Aider marks its own output lines with `>`; an edit block's `>>>>>>> REPLACE` inside the
    # answer's code fence is the answer's text and must come back with all seven.
    import memlane

    sample = shared_data / "transcripts" / "aider"
    written = sum(line.startswith(">>>>>>> REPLACE") for f in sample.iterdir() for line in f.read_text().splitlines())
    assert written > 0
    mem = memlane.open(tmp_path / "m", embedder="none")
    mem.index([sample])
    text = mem.recall("SEARCH REPLACE edit block", max_tokens=20_000).text
    lines = text.splitlines()
    assert any(line == ">>>>>>> REPLACE" for line in lines)
    # Before, each came back as an output line with one `>` eaten: `[result] >>>>>> REPLACE`.
    assert not [line for line in lines if re.search(r"(^|[^>])>>>>>> REPLACE", line)]
