"""Transcripts outlive their files: Claude Code deletes sessions older than cleanupPeriodDays,
and a folder re-index must not forget them. The home keeps a compressed copy of each, and only
`memlane forget` removes them. Notes still follow the file system."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlane.cli import main

SAMPLES = "claude-code"


def run(home: Path, *args: str) -> int:
    return main(["--home", str(home), *args])


def out_json(home: Path, capsys: pytest.CaptureFixture[str], *args: str) -> object:
    capsys.readouterr()
    assert run(home, "--json", *args) == 0
    return json.loads(capsys.readouterr().out)


def segments(home: Path) -> dict[str, list[dict]]:
    files = json.loads((home / "manifest.json").read_text())["files"]
    return {Path(p).name: e.get("archive", []) for p, e in files.items()}


@pytest.fixture
def folder(shared_data: Path, tmp_path: Path) -> Path:
    src = tmp_path / "projects"
    shutil.copytree(shared_data / "transcripts" / SAMPLES, src)
    (src / "notes.md").write_text("# Deploy notes\n\nThe canary runs in eu-west-1 for an hour.\n")
    return src


def test_a_deleted_transcript_still_answers_until_forgotten(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert run(home, "index", str(folder), "--embed", "none") == 0
    gone = folder / "simonw-sample_session.jsonl"
    query = "hello world function goodbye"  # what only that session talks about
    assert any(h["path"] == str(gone) for h in out_json(home, capsys, "search", query, "-k", "20"))
    kept = segments(home)
    assert all(kept[p.name] for p in folder.glob("*.jsonl")), "every transcript has a copy"
    assert kept["notes.md"] == [], "notes follow the file system: no copy"

    gone.unlink()
    (folder / "notes.md").unlink()
    report = out_json(home, capsys, "index", str(folder), "--embed", "none")
    assert (report["files_gone"], report["files_removed"]) == (1, 1)
    assert any(h["path"] == str(gone) for h in out_json(home, capsys, "search", query, "-k", "20"))
    assert not any(h["path"].endswith("notes.md") for h in out_json(home, capsys, "search", "canary eu-west-1"))
    status = out_json(home, capsys, "status")
    assert status["sources_gone"] == 1
    assert 0 < status["archive_disk_bytes"] < status["archived_bytes"]
    assert out_json(home, capsys, "verify")["sound"]
    # Nothing changed since: the next run marks nothing again.
    assert out_json(home, capsys, "index", str(folder), "--embed", "none")["files_gone"] == 0

    listed = out_json(home, capsys, "forget", "--missing", "--dry-run")
    assert listed["files"] == [str(gone)] and listed["chunks"] > 0
    archive_files = {p.stem for p in (home / "archive").rglob("*.zst")}
    assert {s["hash"] for s in kept[gone.name]} <= archive_files
    assert out_json(home, capsys, "forget", "--missing")["files"] == [str(gone)]
    assert not any(h["path"] == str(gone) for h in out_json(home, capsys, "search", query, "-k", "20"))
    left = {p.stem for p in (home / "archive").rglob("*.zst")}
    assert not {s["hash"] for s in kept[gone.name]} & left, "its copy is swept"
    assert out_json(home, capsys, "verify")["sound"]


def test_appends_are_kept_as_they_come_and_a_file_back_is_no_longer_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, src = tmp_path / "home", tmp_path / "src" / "s.jsonl"
    src.parent.mkdir()
    rows = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"turn {i} about the exporter retry budget",
            "timestamp": f"2026-03-02T10:{i:02d}:00Z",
            "session_id": "s1",
        }
        for i in range(24)
    ]
    for step in range(0, 24, 2):  # a session indexed turn by turn, as the Stop hook does
        with src.open("a") as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows[step : step + 2]))
        assert run(home, "index", str(src.parent), "--embed", "none") == 0
        (segs,) = segments(home).values()
        assert sum(s["len"] for s in segs) == src.stat().st_size
        assert len(segs) <= 8, "merged past the cap"
    copy = src.read_bytes()
    src.unlink()
    assert out_json(home, capsys, "index", str(src.parent), "--embed", "none")["files_gone"] == 1
    src.write_bytes(copy)
    assert out_json(home, capsys, "index", str(src.parent), "--embed", "none")["files_gone"] == 0
    assert out_json(home, capsys, "status")["sources_gone"] == 0
