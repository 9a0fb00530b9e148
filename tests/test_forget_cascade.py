"""Forgetting a session takes what the brain learnt from it alone (`--cascade`); `forget --all`
clears a home. Both leave `memlane verify` sound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_jsonl

from memlane.brain import Brain, default_brain_dir
from memlane.brain.distill import distill
from memlane.cli import main


def session(session_id: str, decision: str, day: str) -> list[dict]:
    return [
        {
            "role": "user",
            "content": "Pick a queue for the exporter.",
            "timestamp": f"{day}T10:00:00Z",
            "session_id": session_id,
        },
        {"role": "assistant", "content": decision, "timestamp": f"{day}T10:01:00Z", "session_id": session_id},
    ]


def run(home: Path, *args: str) -> int:
    return main(["--home", str(home), *args])


def out_json(home: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    code = run(home, "--json", *args)
    return {"code": code, **json.loads(capsys.readouterr().out or "{}")}


@pytest.fixture
def distilled(tmp_path: Path) -> Path:
    """A home with two distilled sessions (s1, s2), their transcripts and the brain indexed."""
    home = tmp_path / "home"
    logs = tmp_path / "logs"
    write_jsonl(
        logs / "s1.jsonl",
        session(
            "s1", "We decided to use SQS FIFO queues for `exporter.py`; ordering matters for invoices.", "2026-03-02"
        ),
    )
    write_jsonl(
        logs / "s2.jsonl",
        session("s2", "We decided to keep Postgres 16 for `billing.py`; the team knows it well.", "2026-03-03"),
    )
    brain = Brain(default_brain_dir(home), home=home)
    for name in ("s1", "s2"):
        distill(logs / f"{name}.jsonl", brain=brain)
    assert run(home, "index", str(logs), str(brain.daily_dir), "--embed", "none") == 0
    return home


def test_forget_session_lists_then_cascades_what_the_brain_holds_from_it(
    distilled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = distilled
    brain = Brain(default_brain_dir(home), home=home)
    (s1_entry,) = [e for e in brain.entries() if "SQS" in e.text]
    daily_hits = [h for h in json.loads(_search(home, capsys, "SQS FIFO queues")) if h["source"] == "knowledge"]
    assert daily_hits, "the daily note of s1 is searchable before the forget"

    listed = out_json(home, capsys, "forget", "--session", "s1", "--dry-run")
    assert listed["brain_entries"] == [s1_entry.key] and len(listed["daily_entries"]) == 1
    assert [e.key for e in Brain(default_brain_dir(home), home=home).entries()] == [
        e.key for e in brain.entries()
    ]  # nothing removed

    done = out_json(home, capsys, "forget", "--session", "s1", "--cascade")
    assert done["code"] == 0 and done["brain_entries"] == [s1_entry.key]
    left = Brain(default_brain_dir(home), home=home)
    assert [e.text for e in left.entries() if "SQS" in e.text] == []
    assert any("Postgres" in e.text for e in left.entries()), "s2's entry stays"
    daily = "".join(p.read_text() for p in left.daily_dir.glob("*.md"))
    assert "id=s1 " not in daily and "id=s2 " in daily
    assert [h for h in json.loads(_search(home, capsys, "SQS FIFO queues")) if "SQS" in h["text"]] == []
    assert out_json(home, capsys, "verify")["code"] == 0


def _search(home: Path, capsys: pytest.CaptureFixture[str], query: str) -> str:
    capsys.readouterr()
    assert run(home, "--json", "search", query, "-k", "10") == 0
    return capsys.readouterr().out


def test_forget_all_clears_the_home_and_leaves_it_sound(
    distilled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = distilled
    # Not at a terminal and no --yes: refused in one line, nothing removed.
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    capsys.readouterr()
    assert run(home, "forget", "--all") == 2
    assert "--yes" in capsys.readouterr().err
    assert json.loads(_search(home, capsys, "Postgres billing"))

    cleared = out_json(home, capsys, "forget", "--all", "--yes")
    assert cleared["code"] == 0 and "brain" in cleared["removed"]
    assert json.loads(_search(home, capsys, "Postgres billing")) == []
    status = out_json(home, capsys, "status")
    assert status["chunks"] == 0 and status["files"] == 0
    assert out_json(home, capsys, "verify")["code"] == 0
    assert not default_brain_dir(home).exists()
