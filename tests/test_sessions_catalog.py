"""The session catalog (`Store.sessions`, `Store.session_keys`) read from the index's terms and
fast fields agrees with the same aggregate computed from every stored chunk."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import memlane
from memlane.errors import InvalidArgumentError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))  # not a package

from archive import generate

Row = tuple[str, int, int | None, int | None, str, str, int]


def _rank(chunk: dict[str, Any]) -> tuple[bool, int, int]:
    """A chunk's place in its session: earliest timestamp first, none last, ties by key."""
    ts = chunk["timestamp"]
    return (ts is None, ts or 0, chunk["key"])


def _catalog_from_scan(chunks: list[dict[str, Any]]) -> list[Row]:
    """What `Store.sessions` should answer, from the stored chunks themselves."""
    by_session: dict[str, list[dict[str, Any]]] = {}
    for chunk in chunks:
        if chunk["source"] == "transcript" and chunk["session_id"]:
            by_session.setdefault(chunk["session_id"], []).append(chunk)
    rows: list[Row] = []
    for session, own in by_session.items():
        stamps = [c["timestamp"] for c in own if c["timestamp"] is not None]
        earliest = min(own, key=_rank)

        def first_with(field: str, own: list[dict[str, Any]] = own) -> str:
            having = [c for c in own if c[field]]
            return str(min(having, key=_rank)[field]) if having else ""

        rows.append(
            (
                session,
                len(own),
                min(stamps, default=None),
                max(stamps, default=None),
                first_with("project"),
                first_with("branch"),
                earliest["key"],
            )
        )
    rows.sort(key=lambda r: r[0])
    rows.sort(key=lambda r: (r[3] is not None, r[3] or 0), reverse=True)
    return rows


@pytest.fixture
def mem(tmp_path: Path) -> memlane.Memory:
    """A home of two indexing runs (several segments) of generated transcripts, plus notes;
    the first six sessions have a file in each run, so their chunks span segments."""
    early, late, notes = tmp_path / "early", tmp_path / "late", tmp_path / "notes"
    generate(early, files=6, pairs_per_file=12)
    generate(late, files=10, pairs_per_file=12, seed=11)
    notes.mkdir()
    (notes / "deploy.md").write_text("# Deploy\n\n## Canary\nRoll out to one region first.\n")
    (notes / "billing.md").write_text("# Billing\n\n## Invoices\nInvoices close on the first.\n")
    mem = memlane.open(tmp_path / "home", embedder="none")
    mem.index([early, notes], embed=False)
    mem.index([late], embed=False)
    return mem


def test_the_catalog_matches_a_scan_of_every_stored_chunk(mem: memlane.Memory) -> None:
    store = mem._store
    chunks = store.get([int(k) for k in store.keys()])
    catalog = store.sessions()
    assert catalog == _catalog_from_scan(chunks)
    assert len(catalog) == 10
    assert {c["source"] for c in chunks} > {"transcript"}, "the notes are indexed, and left out"
    by_key = {c["key"]: c for c in chunks}
    for session, count, *_, key in catalog:
        assert by_key[key]["session_id"] == session
        keys = store.session_keys(session)
        assert keys == sorted(c["key"] for c in chunks if c["session_id"] == session)
        assert len(keys) == count


def test_forgetting_a_chunk_drops_its_session_count_by_one(mem: memlane.Memory) -> None:
    store = mem._store
    session, count, *_, key = store.sessions()[0]
    mem.forget(chunk=f"{key:x}")
    after = {row[0]: row for row in store.sessions()}
    assert after[session][1] == count - 1
    assert key not in store.session_keys(session)
    assert after[session][6] != key
    assert list(after.values()) == _catalog_from_scan(store.get([int(k) for k in store.keys()]))


def test_session_keys_of_no_session(mem: memlane.Memory) -> None:
    assert mem._store.session_keys("no-such-session") == []
    with pytest.raises(InvalidArgumentError, match="session_id"):
        mem._store.session_keys("")
