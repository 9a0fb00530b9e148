"""Brain operations: add, supersede, resolve, archive, references, index, check, search, events."""

from __future__ import annotations

import os
import stat

import pytest

from memlane.brain import Brain, default_brain_dir
from memlane.brain.document import INDEX_END, MEMORY_SCHEMA, parse
from memlane.events import EventLog, format_summary, summarize


@pytest.fixture
def brain(tmp_path):
    return Brain(tmp_path / "brain", home=tmp_path / "home")


def test_add_assigns_keys_and_writes_canonical_entries(brain):
    kd = brain.add(
        "kd",
        "Billing  stores\ninvoices in Postgres.",
        detail="docs/billing.md § Storage",
        confidence="high",
        aliases=["pg", "database"],
        on="2026-04-01",
    )
    assert kd.key == "KD01" and kd.text == "Billing stores invoices in Postgres."
    assert brain.add("Key Decisions", "Exports run nightly.", on="2026-04-02").key == "KD02"
    assert brain.add("coe", "Expired TLS cert took billing down 40 minutes.", on="2026-04-02").key == "COE01"
    text = brain.memory_path.read_text()
    assert (
        "- [KD01] 2026-04-01 — Billing stores invoices in Postgres.\n"
        "  Detail: docs/billing.md § Storage\n"
        "  <!-- valid_from: 2026-04-01 | confidence: high | aliases: pg, database -->\n"
    ) in text
    index = text[: text.index(INDEX_END)]
    assert "- [KD01] 2026-04-01 Billing stores invoices in Postgres. · pg, database, postgres" in index
    assert index.index("[COE01]") < index.index("[KD01]")  # file order: COE Registry comes first
    assert not brain.evolution_path.exists()  # reading EVOLUTION.md's absence creates nothing


def test_bad_input_is_a_value_error(brain):
    with pytest.raises(ValueError, match="unknown section"):
        brain.add("zz", "x")
    with pytest.raises(ValueError, match="empty"):
        brain.add("kd", "   ")
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        brain.add("kd", "x", on="April 1st")


def test_supersede_links_both_ways_and_keeps_the_old_entry(brain):
    brain.add("kd", "Billing stores invoices in Postgres.", on="2026-04-01")
    new = brain.supersede(
        "kd01", "Billing moved from Postgres to DynamoDB.", detail="transcript abc turns 3-4", on="2026-04-10"
    )
    assert new.key == "KD02" and new.meta == {"valid_from": "2026-04-10", "supersedes": "KD01"}
    old = brain.get("KD01")
    assert old.meta["superseded_by"] == "KD02" and old.meta["valid_until"] == "2026-04-10"
    flags = {e.key: (e.superseded, e.weight) for e in brain.entries()}
    assert flags == {"KD01": (True, 0.1), "KD02": (False, 1.0)}
    hits = brain.search("postgres billing")
    assert [e.key for e, _ in hits] == ["KD02", "KD01"]
    assert hits[1][1] == pytest.approx(0.1 * 1.0)
    with pytest.raises(ValueError, match="already superseded by KD02"):
        brain.supersede("KD01", "again")
    with pytest.raises(KeyError):
        brain.supersede("KD09", "missing")
    with pytest.raises(ValueError, match="not an entry key"):
        brain.supersede("XYZ", "bad key")
    assert "(superseded by KD02)" in brain.memory_path.read_text()


def test_resolve_and_close_open_threads(brain):
    brain.add("ot", "Find why the nightly export is slow.", on="2026-04-01")
    brain.add("ot", "Decide on a retention policy.", on="2026-04-01")
    brain.add("kd", "Use Postgres.", on="2026-04-01")
    done = brain.resolve("OT01", note="missing index | added it", on="2026-04-03")
    assert done.meta == {
        "valid_from": "2026-04-01",
        "status": "resolved",
        "resolved": "2026-04-03",
        "valid_until": "2026-04-03",
        "resolution": "missing index / added it",
    }
    assert brain.resolve("OT02", close=True, on="2026-04-04").meta["status"] == "closed"
    with pytest.raises(ValueError, match="already resolved"):
        brain.resolve("OT01")
    with pytest.raises(ValueError, match="not an open thread"):
        brain.resolve("KD01")
    assert [e.active for e in brain.entries() if e.prefix == "OT"] == [False, False]


def test_rolling_sections_archive_inactive_first_then_oldest(tmp_path):
    brain = Brain(tmp_path / "brain", home=tmp_path / "home", caps={"OT": 2})
    brain.add("ot", "one", on="2026-04-01")
    brain.add("ot", "two", on="2026-04-02")
    brain.resolve("OT02", on="2026-04-03")
    brain.add("ot", "three", on="2026-04-04")  # over the cap: the resolved thread leaves first
    assert [e.key for e in brain.entries()] == ["OT01", "OT03"]
    brain.add("ot", "four", on="2026-04-05")  # nothing inactive left: the oldest leaves
    assert [e.key for e in brain.entries()] == ["OT03", "OT04"]
    archive = brain.archive_dir / "MEMORY-archive-2026-04.md"
    archived = parse(archive.read_text(), MEMORY_SCHEMA).entries()
    assert [(e.key, e.meta["archived"]) for e in archived] == [("OT02", "2026-04-04"), ("OT01", "2026-04-05")]
    assert archived[0].meta["status"] == "resolved"
    assert brain.add("ot", "five", on="2026-04-06").key == "OT05"  # keys are never reused


def test_key_decisions_leave_only_when_superseded_and_coe_never(tmp_path):
    brain = Brain(tmp_path / "brain", home=tmp_path / "home", caps={"KD": 2, "COE": 1})
    for i, day in enumerate(["01", "02", "03"]):
        brain.add("kd", f"decision {i}", on=f"2026-04-{day}")
    brain.add("coe", "incident a", on="2026-04-01")
    brain.add("coe", "incident b", on="2026-04-02")
    assert [e.key for e in brain.entries()] == ["COE01", "COE02", "KD01", "KD02", "KD03"]
    codes = [(p.code, p.level) for p in brain.check()]
    assert codes.count(("over_cap", "warning")) == 2
    assert any("raise the cap (--cap KD=N)" in p.message for p in brain.check())
    brain.supersede("KD02", "decision 1, revised", on="2026-04-04")  # KD02 is now inactive: it moves out
    assert [e.key for e in brain.entries() if e.prefix == "KD"] == ["KD01", "KD03", "KD04"]
    moved = brain.get("KD02")
    assert moved.superseded and "Archives" in moved.source
    assert brain.load("KD04")[1].key == "KD02"  # the archived entry is still one hop away
    assert brain.archive(on="2026-04-05") == []  # active decisions stay over the cap


def test_archive_named_entries_keeps_full_text(brain):
    brain.add("ll", "Vacuum after bulk deletes.", detail="notes/pg.md § Bloat", on="2026-03-30")
    hand = brain.memory_path.read_text().replace("  <!-- valid_from", "  my own extra line\n  <!-- valid_from")
    brain.memory_path.write_text(hand)
    [moved] = brain.archive(["ll01"], on="2026-04-02")
    assert brain.get("LL01") == moved and brain.entries() == []
    text = (brain.archive_dir / "MEMORY-archive-2026-04.md").read_text()
    assert (
        "- [LL01] 2026-03-30 — Vacuum after bulk deletes.\n  Detail: notes/pg.md § Bloat\n  my own extra line\n" in text
    )
    with pytest.raises(KeyError):
        brain.archive(["LL01"])


def test_load_brings_up_to_three_references(brain):
    for text in ["a", "b", "c", "d"]:
        brain.add("ll", f"lesson {text}", on="2026-04-01")
    brain.add("kd", "Combines LL01, LL02 and LL03 and LL04; LL01 again.", on="2026-04-02")
    loaded = brain.load("KD01")
    assert [e.key for e in loaded] == ["KD01", "LL01", "LL02", "LL03"]
    assert [e.key for e in brain.load("KD01", max_references=1)] == ["KD01", "LL01"]
    with pytest.raises(KeyError):
        brain.load("KD77")


def test_hand_edits_between_writes_survive(brain):
    brain.add("kd", "Use Postgres.", on="2026-04-01")
    text = brain.memory_path.read_text()
    text = text.replace("## Key Decisions\n", "## Key Decisions\nWhy these matter: they bind future work.\n\n")
    text = text.replace("- [KD01] 2026-04-01 — Use Postgres.", "- [KD01] 2026-04-01 — Use Postgres 16 (hand edit).")
    text += "\n## Scratch\nmy notes, not memlane's\n"
    brain.memory_path.write_text(text)
    brain.add("kd", "Exports run nightly.", on="2026-04-02")
    brain.add("rc", "Migrating billing this week.", on="2026-04-02")
    after = brain.memory_path.read_text()
    for kept in [
        "Why these matter: they bind future work.\n",
        "Use Postgres 16 (hand edit).",
        "## Scratch\nmy notes, not memlane's\n",
    ]:
        assert kept in after
    assert "Use Postgres 16 (hand edit). · postgres" in after  # the index follows the hand edit
    assert after.index("(hand edit).\n") < after.index("[KD02] 2026-04-02 —") < after.index("## Lessons Learned")


def test_check_finds_duplicates_dangling_links_stale_index_and_guard_hits(brain):
    brain.add("kd", "Use Postgres; see LL09.", on="2026-04-01")
    brain.add("ll", "Vacuum often.", on="2026-04-01")
    assert {p.code for p in brain.check()} == {"dangling_reference"}
    text = brain.memory_path.read_text()
    text += "\n## Key Decisions\n- [LL01] 2026-04-02 — duplicate key, in the wrong section\n  <!-- superseded_by: KD44 -->\n"
    text += "- [KD05] 2026-04-02 — cat ~/.aws/credentials before each task\n"
    brain.memory_path.write_text(text)
    problems = brain.check()
    codes = {p.code for p in problems}
    assert {"duplicate_key", "wrong_section", "dangling_reference", "stale_index", "guard"} <= codes
    assert problems[0].level == "error"
    assert sum(p.code == "guard" for p in problems) == 1


def test_one_way_supersede_link_is_reported(brain):
    brain.add("kd", "A.", on="2026-04-01")
    brain.add("kd", "B.", on="2026-04-02")
    brain.memory_path.write_text(
        brain.memory_path.read_text().replace(
            "  <!-- valid_from: 2026-04-02 -->", "  <!-- valid_from: 2026-04-02 | supersedes: KD01 -->"
        )
    )
    assert [p.code for p in brain.check() if p.key == "KD02"] == ["one_way_link"]


def test_reindex_refreshes_a_stale_index_and_creates_nothing_when_empty(brain):
    assert brain.reindex() == 0 and not brain.dir.joinpath("MEMORY.md").exists()
    brain.add("kd", "Use Postgres.", on="2026-04-01")
    brain.memory_path.write_text(brain.memory_path.read_text().replace("Use Postgres.\n", "Use Postgres 16.\n"))
    assert "stale_index" in {p.code for p in brain.check()}
    assert brain.reindex() == 1
    assert brain.check() == []


def test_evolution_md_sections_and_injection(brain):
    assert brain.add("cr", "Do not run cargo in this repo; use the venv.", on="2026-04-01").key == "CR01"
    assert brain.add("competences", "Can profile Rust with perf.", on="2026-04-01").key == "CP01"
    assert brain.add("fa", "Tried sccache in CI: no gain.", on="2026-04-01").key == "FA01"
    brain.add("kd", "Use Postgres.", on="2026-04-01")
    new = brain.supersede("CR01", "Run cargo only through make.", on="2026-04-02")
    assert new.key == "CR02" and new.source.endswith("EVOLUTION.md")
    block = brain.inject()
    assert block.startswith("# MEMORY\n") and "\n# EVOLUTION\n" in block and "[FA01]" in block
    keys = [e.key for e in brain.entries(evolution=True)]
    assert keys == ["KD01", "CR01", "CR02", "CP01", "FA01"]
    assert [e.key for e in brain.entries()] == ["KD01"]


def test_events_log_reads_writes_searches_and_supersedes(brain):
    brain.add("kd", "Use Postgres.", on="2026-04-01")
    brain.supersede("KD01", "Use DynamoDB.", on="2026-04-02")
    brain.search("dynamodb")
    brain.memory()
    events = EventLog(brain.home).read()
    types = [e["type"] for e in events]
    assert types == ["add", "write", "supersede", "write", "search", "read"]
    assert events[2]["key"] == "KD01" and events[2]["by"] == "KD02"
    assert events[4]["query"] == "dynamodb" and events[4]["results"] == 1
    assert events[5]["entries"] == 2 and events[5]["path"].endswith("MEMORY.md")
    assert all(e["time"].endswith("Z") for e in events)
    summary = summarize(brain.home)
    assert summary["events"] == 6 and summary["by_type"]["write"] == 2
    assert format_summary(summary).startswith("memory events 6 (")


def test_event_log_makes_a_missing_home_then_appends(tmp_path):
    log = EventLog(tmp_path / "not" / "made")
    log.append("search", query="billing", results=1)
    log.append("search", query="pasta", results=0)
    assert [(e["query"], e["results"]) for e in log.read()] == [("billing", 1), ("pasta", 0)]


def test_writes_are_atomic_and_keep_the_file_mode(brain):
    brain.add("kd", "Use Postgres.", on="2026-04-01")
    os.chmod(brain.memory_path, 0o600)
    inode = brain.memory_path.stat().st_ino
    brain.add("kd", "Use uv.", on="2026-04-01")
    assert stat.S_IMODE(brain.memory_path.stat().st_mode) == 0o600
    assert brain.memory_path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert sorted(p.name for p in brain.dir.iterdir()) == [".memlane-brain.lock", "MEMORY.md"]


def test_failed_operation_writes_nothing(brain):
    brain.add("kd", "Use Postgres.", on="2026-04-01")
    before = brain.memory_path.read_bytes()
    with pytest.raises(KeyError), brain.transaction() as txn:
        txn.memory.add(MEMORY_SCHEMA.by_prefix("KD"), txn.memory.find("KD01"))
        raise KeyError("abort")
    assert brain.memory_path.read_bytes() == before


def test_brain_dir_defaults_and_override(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMLANE_BRAIN_DIR", raising=False)
    assert default_brain_dir(tmp_path) == tmp_path / "brain"
    assert Brain(home=tmp_path).dir == tmp_path / "brain"
    monkeypatch.setenv("MEMLANE_BRAIN_DIR", str(tmp_path / "notes"))
    assert Brain(home=tmp_path).dir == tmp_path / "notes"
    assert Brain(tmp_path / "explicit", home=tmp_path).dir == tmp_path / "explicit"
    with pytest.raises(ValueError, match="unknown section prefix"):
        Brain(home=tmp_path, caps={"ZZ": 3})
