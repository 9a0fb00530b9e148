"""The product pipeline on real parts: the bundled MiniLM model and real transcript samples."""

from __future__ import annotations

import pytest
from conftest import COOKING, DEPLOY, generic_session, write_jsonl

import memlane

# Three exchanges too long to be packed together: a chunk each.
PAIRS = [DEPLOY[0], COOKING[0], DEPLOY[2]]


@pytest.mark.model
def test_semantic_recall_with_the_local_model(tmp_path):
    write_jsonl(tmp_path / "t" / "a.jsonl", generic_session("a", PAIRS))
    mem = memlane.open(tmp_path / "home")
    report = mem.index([tmp_path / "t"])
    assert report.chunks_embedded == 3
    assert mem.status()["embedder_id"] == "local/all-MiniLM-L6-v2/q8/384"
    # No shared keyword: only the vectors can find these.
    for query, expected in [
        ("cooking noodles", "pasta"),
        ("what SQL engine stores invoices", "Postgres"),
        ("the service ran out of memory and was killed", "OOM"),
    ]:
        hits = mem.search(query, k=3)
        assert hits and expected in hits[0].text, (query, [h.text for h in hits])
        assert hits[0].scores["vector"] > 0.3
    assert mem.search("quantum chromodynamics lattice gauge theory") == []


@pytest.mark.model
def test_index_the_shared_transcript_samples(tmp_path, shared_data):
    mem = memlane.open(tmp_path / "home")
    report = mem.index([shared_data / "transcripts"])
    status = mem.status()
    assert report.files_indexed >= 15
    assert status["chunks"] == report.chunks_added >= 40
    assert status["chunks_with_vectors"] == status["chunks"]
    again = mem.index([shared_data / "transcripts"])
    assert (again.files_indexed, again.chunks_added, again.chunks_embedded) == (0, 0, 0)
