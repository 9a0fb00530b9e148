"""The knowledge library: markdown notes indexed as sections beside transcripts, with delta sync."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import SHARED_DATA, generic_session, write_jsonl

import memlane
from memlane.cli import main
from memlane.knowledge import library_dirs

DAILY = """# 2026-04-01

## 09:30 | Importer crash
Fixed the CSV importer crash on empty rows in `importer.py`. #bug

## 14:05 | Billing storage
Decided to move billing invoices from Postgres to DynamoDB table invoices-v2.
"""

DESIGN = """---
title: Billing design
date: 2026-03-02
tags: [billing, storage]
---
# Billing

Overview of the billing service.

## Storage
Invoices are written to the ledger with idempotency keys.

```python
## not a section: code
ledger.write(invoice)
```

## Retries
Webhooks retry with exponential backoff, capped at 6 attempts.
"""

SIGNALS = """# Ops signals

- 2026-04-03 pager fired for replica lag on db-2
- 2026-04-05 disk full on the metrics host
"""


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    for rel, text in {
        "DailyActivity/2026-04-01.md": DAILY,
        "designs/billing.md": DESIGN,
        "signals/ops.md": SIGNALS,
        "MEMORY.md": "# MEMORY\n\n## Key decisions\n- [KD01] 2026-04-01 zanzibar brain entry\n",
        ".draft.md": "# Draft\n\nzanzibar hidden draft\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def mem(tmp_path, fake_embedder):
    return memlane.open(tmp_path / "home", embedder=fake_embedder)


def keys_by_file(mem: memlane.Memory) -> dict[str, list[int]]:
    manifest = json.loads((mem.home / "manifest.json").read_text())
    return {path: entry["keys"] for path, entry in manifest["files"].items()}


def test_search_finds_a_section_with_its_provenance(mem, library):
    report = mem.index([library])
    assert (report.files_seen, report.files_indexed) == (3, 3)
    hit = mem.search("move billing invoices to DynamoDB", k=3, sources=["knowledge"])[0]
    assert hit.source == "knowledge"
    assert hit.path == str(library / "DailyActivity" / "2026-04-01.md")
    assert hit.heading == "2026-04-01 › 14:05 | Billing storage"
    assert hit.timestamp == "2026-04-01T14:05:00Z"
    assert hit.text.startswith("2026-04-01 › 14:05 | Billing storage\n\n## 14:05 | Billing storage\n")
    assert hit.scores["vector"] is not None
    assert (hit.meta["kind"], hit.meta["line_start"], hit.meta["line_end"]) == ("daily", 6, 7)


def test_sections_carry_frontmatter_tags_and_note_date(mem, library):
    mem.index([library])
    hit = mem.search("webhooks exponential backoff attempts", k=1)[0]
    assert hit.heading == "Billing › Retries"
    assert hit.timestamp == "2026-03-02T00:00:00Z"
    assert hit.meta["tags"] == ["billing", "storage"]
    assert hit.meta["frontmatter"]["title"] == "Billing design"
    # The `##` line inside the code fence did not split the Storage section.
    storage = mem.search("ledger idempotency keys", k=1)[0]
    assert storage.heading == "Billing › Storage" and "ledger.write(invoice)" in storage.text
    tagged = mem.search("CSV importer crash", k=1)[0]
    assert tagged.meta["tags"] == ["bug"]


def test_signal_entries_are_chunked_one_by_one(mem, library):
    mem.index([library])
    hits = mem.search("disk full metrics host", k=5, sources=["knowledge"])
    assert hits[0].path.endswith("signals/ops.md")
    assert hits[0].text.endswith("- 2026-04-05 disk full on the metrics host")
    assert "replica lag" not in hits[0].text
    assert hits[0].timestamp == "2026-04-05T00:00:00Z"


def test_brain_files_and_hidden_files_are_not_knowledge(mem, library):
    mem.index([library])
    assert mem.search("zanzibar", k=5) == []
    assert not any(p.endswith(("MEMORY.md", ".draft.md")) for p in keys_by_file(mem))


def test_knowledge_and_transcripts_are_searched_together_and_filterable(mem, library):
    write_jsonl(
        library / "sessions" / "s.jsonl",
        generic_session("s1", [("where do invoices live now?", "In DynamoDB, table invoices-v2.")]),
    )
    mem.index([library])
    sources = {h.source for h in mem.search("invoices DynamoDB invoices-v2", k=10)}
    assert sources == {"transcript", "knowledge"}
    assert {h.source for h in mem.search("invoices DynamoDB", k=10, sources=["knowledge"])} == {"knowledge"}
    assert {h.source for h in mem.search("invoices DynamoDB", k=10, sources=["transcript"])} == {"transcript"}
    dated = mem.search("invoices DynamoDB", k=10, sources=["knowledge"], since="2026-04-01", until="2026-04-02")
    assert dated[0].heading == "2026-04-01 › 14:05 | Billing storage"
    assert {h.path for h in dated} == {str(library / "DailyActivity" / "2026-04-01.md")}


def test_delta_sync_touches_only_what_changed(mem, library, fake_embedder):
    mem.index([library])
    before = keys_by_file(mem)
    daily = str(library / "DailyActivity" / "2026-04-01.md")
    design = str(library / "designs" / "billing.md")
    embedded = fake_embedder.texts_embedded

    # Unchanged: a no-op.
    noop = mem.index([library])
    assert (noop.files_indexed, noop.chunks_added, noop.chunks_removed) == (0, 0, 0)

    # One entry edited in place: only that chunk is replaced and embedded.
    (library / "DailyActivity" / "2026-04-01.md").write_text(
        DAILY.replace("DynamoDB table invoices-v2", "DynamoDB table invoices-v3")
    )
    edit = mem.index([library])
    assert (edit.files_indexed, edit.chunks_added, edit.chunks_removed) == (1, 1, 1)
    assert fake_embedder.texts_embedded - embedded == 1
    after = keys_by_file(mem)
    assert after[design] == before[design]
    assert after[daily][0] == before[daily][0] and after[daily][1] != before[daily][1]
    assert "invoices-v3" in mem.search("invoices-v3", k=1)[0].text

    # A file deleted: its chunks go, nothing else does.
    (library / "designs" / "billing.md").unlink()
    gone = mem.index([library])
    assert (gone.files_removed, gone.chunks_removed, gone.chunks_added) == (1, len(before[design]), 0)
    assert design not in keys_by_file(mem)
    assert all(h.path != design for h in mem.search("webhooks backoff ledger", k=10))
    assert mem.status()["chunks"] == sum(len(k) for k in keys_by_file(mem).values())


def test_appended_daily_entry_adds_one_chunk(mem, library):
    mem.index([library])
    path = library / "DailyActivity" / "2026-04-01.md"
    path.write_text(DAILY + "\n## 18:00 | Release\nShipped version 2.4.1 to production.\n")
    report = mem.index([library])
    # The last entry loses its trailing blank line to the new one: same text, same key.
    assert (report.chunks_added, report.chunks_removed) == (1, 0)
    hit = mem.search("shipped 2.4.1", k=1)[0]
    assert (hit.timestamp, hit.heading) == ("2026-04-01T18:00:00Z", "2026-04-01 › 18:00 | Release")


def test_cli_indexes_a_notes_folder_and_forces_markdown(tmp_path, library, capsys):
    home = str(tmp_path / "cli-home")
    assert main(["--home", home, "--json", "index", str(library), "--embed", "none"]) == 0
    assert json.loads(capsys.readouterr().out)["files_indexed"] == 3
    assert main(["--home", home, "search", "replica lag db-2", "--source", "knowledge", "--embed", "none"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1. [") and "Ops signals · lines 1-3 · 2026-04-03" in out

    plain = tmp_path / "todo.txt"
    plain.write_text("## Errands\nrenew the passport\n")
    assert main(["--home", home, "--json", "index", str(plain), "--format", "markdown", "--embed", "none"]) == 0
    capsys.readouterr()
    assert main(["--home", home, "--json", "search", "passport", "--embed", "none"]) == 0
    hit = json.loads(capsys.readouterr().out)[0]
    assert (hit["source"], hit["heading"]) == ("knowledge", "todo › Errands")


def test_library_dirs_reads_the_env_and_the_brain_folder(tmp_path, monkeypatch):
    notes, brain = tmp_path / "notes", tmp_path / "brain"
    notes.mkdir()
    monkeypatch.setenv("MEMLANE_LIBRARY", f"{notes}:{tmp_path / 'missing'}")
    monkeypatch.setenv("MEMLANE_BRAIN_DIR", str(brain))
    assert library_dirs(tmp_path) == [notes]
    brain.mkdir()
    assert library_dirs(tmp_path) == [notes, brain]


def test_real_markdown_documents_split_at_their_headings(mem):
    """The project's own design notes (../shared/DESIGN.md, FORMATS.md) as a real library."""
    docs = [(SHARED_DATA.parent / name).resolve() for name in ("DESIGN.md", "FORMATS.md")]
    if not all(d.is_file() for d in docs):
        pytest.skip(f"real markdown notes not found beside the repo at {SHARED_DATA.parent}")
    report = mem.index(docs)
    assert (report.files_indexed, report.records_skipped) == (2, {})
    for doc in docs:
        h2s, fence = [], False
        for line in doc.read_text().splitlines():
            if line.startswith(("```", "~~~")):
                fence = not fence
            elif not fence and (m := re.match(r"## (.+)", line)):
                h2s.append(m.group(1).strip())
        assert h2s, doc
        headings = {
            h.heading.split(" › ")[-1] for h in mem.search(" ".join(h2s), k=200, threshold=0.0) if h.path == str(doc)
        }
        assert set(h2s) <= headings, set(h2s) - headings
