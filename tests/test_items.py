"""Typed, cited items: `memlane search --type` and the MCP recall filter read decisions,
entities, claims and tasks from the brain and the agents' plans, and notes from the library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_jsonl
from test_tasks import claude_session, repo, todo

from memlane.agents.mcp import MemoryTools
from memlane.brain import Brain, default_brain_dir
from memlane.brain.items import TYPES
from memlane.cli import main


def run_json(home: Path, capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    capsys.readouterr()
    assert main(["--home", str(home), "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    app = repo(tmp_path, "app")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "billing.md").write_text(
        "# Billing\n\n## Database\n\nInvoices live in Postgres 16 on RDS, eu-west-1.\n"
    )
    write_jsonl(
        tmp_path / "s1.jsonl",
        claude_session("s1", app, [[todo("Move billing invoices to the new Postgres", "pending")]]),
    )
    assert (
        main(["--home", str(home), "index", str(tmp_path / "notes"), str(tmp_path / "s1.jsonl"), "--embed", "none"])
        == 0
    )
    brain = Brain(default_brain_dir(home), home=home)
    brain.add("KD", "Billing stores invoices in Postgres 16.", detail="transcript s1 turns 2-3", confidence="high")
    old = brain.add("KD", "Billing stores invoices in MySQL.", detail="transcript s0 turns 1-1")
    brain.supersede(old.key, "Billing moved off MySQL.")
    brain.add("RC", "Grafana board billing-latency tracks invoice p99.")
    brain.add(
        "LL",
        "Invoice exports time out past 10k rows in Postgres.",
        detail="DailyActivity/2026-03-02.md § 10:00 | exports",
    )
    return home


def test_search_by_type_returns_items_with_their_citations(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    decisions = run_json(home, capsys, "search", "billing invoices postgres", "--type", "decision")
    assert [(d["type"], d["text"], d["citation"], d["confidence"]) for d in decisions] == [
        ("decision", "Billing stores invoices in Postgres 16.", "transcript s1 turns 2-3", "high"),
        ("decision", "Billing moved off MySQL.", "MEMORY.md [KD03]", None),
    ], "the current decisions only: a superseded one is no item"
    assert [e["text"] for e in run_json(home, capsys, "search", "billing grafana", "--type", "entity")] == [
        "Grafana board billing-latency tracks invoice p99."
    ]
    assert [c["citation"] for c in run_json(home, capsys, "search", "invoice exports postgres", "--type", "claim")] == [
        "DailyActivity/2026-03-02.md § 10:00 | exports"
    ]
    (task,) = run_json(home, capsys, "search", "billing postgres", "--type", "task")
    assert task["text"] == "[pending] Move billing invoices to the new Postgres" and task["citation"].startswith(
        "session s1 ("
    )
    (note,) = run_json(home, capsys, "search", "invoices postgres RDS", "--type", "note")
    assert note["citation"].endswith("billing.md § Billing › Database")
    both = run_json(
        home, capsys, "search", "billing invoices postgres", "--type", "decision", "--type", "note", "-k", "10"
    )
    assert {i["type"] for i in both} == {"decision", "note"}
    assert set(TYPES) == {"decision", "entity", "claim", "task", "note"}


def test_an_unknown_type_is_one_line_and_the_mcp_recall_filters_by_type(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["--home", str(home), "search", "billing", "--type", "gossip"]) == 2
    err = capsys.readouterr().err
    assert "unknown item type gossip" in err and err.count("\n") == 1
    out = MemoryTools(home, embedder="none").recall("billing invoices postgres", types=["decision"])
    assert (
        out.splitlines()[0]
        == "- decision KD01: Billing stores invoices in Postgres 16. (cited: transcript s1 turns 2-3)"
    )
    assert "MySQL" not in out.splitlines()[0]


def test_items_export_writes_every_item_of_a_project(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "items.json"
    capsys.readouterr()
    assert main(["--home", str(home), "items", "--export", str(out)]) == 0
    doc = json.loads(out.read_text())
    by_type = {}
    for item in doc["items"]:
        by_type.setdefault(item["type"], []).append(item)
    assert sorted(by_type) == ["claim", "decision", "entity", "note", "task"]
    assert [n["citation"].rsplit("/", 1)[1] for n in by_type["note"]] == ["billing.md § Billing › Database"]
    assert all({"id", "type", "text", "citation", "confidence", "extracted"} <= set(i) for i in doc["items"])
    assert run_json(home, capsys, "items", "--type", "decision")["items"][0]["citation"] == "transcript s1 turns 2-3"
