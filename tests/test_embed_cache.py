"""The shared embedding cache: machine-wide hit/miss counters and what `memlane status` shows."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
from conftest import DEPLOY, generic_session, write_jsonl

import memlane
from memlane.cli import main
from memlane.embed.cache import CacheStats, EmbeddingCache

# Two exchanges too long to be packed into one chunk: two chunks.
PAIRS = DEPLOY[:2]


def test_counters_persist_and_are_shared_by_every_instance(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite"
    first = EmbeddingCache(path)
    first.put_many("fake/4", {"a": np.ones((1, 4), np.float32), "b": np.ones((2, 4), np.float32)})
    first.get_many("fake/4", ["a", "b", "c"])
    first.get_many("fake/4", ["a", "a"])  # duplicates in one lookup count once
    first.get_many("fake/4", [])
    first.close()
    second = EmbeddingCache(path)
    second.get_many("other/4", ["a"])  # another embedder's key space: a miss
    assert second.stats == CacheStats(hits=0, misses=1)  # this process's share
    assert second.totals() == CacheStats(hits=3, misses=2)
    summary = second.summary()
    assert (summary["entries"], summary["hits"], summary["misses"]) == (2, 3, 2)
    assert summary["bytes"] >= path.stat().st_size > 0


def test_cache_file_from_before_the_counters_gains_them(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE vectors (embedder TEXT NOT NULL, hash TEXT NOT NULL, windows INTEGER NOT NULL, "
        "dim INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (embedder, hash)) WITHOUT ROWID"
    )
    db.execute("INSERT INTO vectors VALUES ('fake/2', 'h', 1, 2, ?)", (np.ones(2, np.float16).tobytes(),))
    db.commit()
    db.close()
    cache = EmbeddingCache(path)
    assert cache.get_many("fake/2", ["h"])["h"].tolist() == [[1.0, 1.0]]
    assert cache.summary()["entries"] == 1 and cache.totals() == CacheStats(hits=1, misses=0)


_WORKER = """
import sys
from pathlib import Path
from memlane.embed.cache import EmbeddingCache
cache = EmbeddingCache(Path(sys.argv[1]))
for i in range(200):
    cache.get_many("fake/4", ["a", f"missing-{i}"])
"""


def test_concurrent_processes_lose_no_count(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite"
    EmbeddingCache(path).put_many("fake/4", {"a": np.ones((1, 4), np.float32)})
    workers = [subprocess.Popen([sys.executable, "-c", _WORKER, str(path)]) for _ in range(4)]
    assert [w.wait(timeout=120) for w in workers] == [0, 0, 0, 0]
    assert EmbeddingCache(path).totals() == CacheStats(hits=800, misses=800)


def test_status_shows_hits_misses_entries_and_bytes(tmp_path: Path, capsys, fake_embedder) -> None:
    write_jsonl(tmp_path / "t" / "a.jsonl", generic_session("a", PAIRS))
    memlane.open(tmp_path / "a", embedder=fake_embedder).index([tmp_path / "t"])
    # A second home over the same sources: every chunk comes from the shared cache.
    memlane.open(tmp_path / "b", embedder=fake_embedder).index([tmp_path / "t"])
    assert main(["--home", str(tmp_path / "b"), "--json", "status"]) == 0
    cache = json.loads(capsys.readouterr().out)["embedding_cache"]
    assert (cache["entries"], cache["hits"], cache["misses"]) == (2, 2, 2)
    assert cache["bytes"] > 0
    assert main(["--home", str(tmp_path / "b"), "status"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("emb. cache"))
    assert "2 entries" in line and "2 hits" in line and "2 misses" in line


def test_a_search_reads_chunk_vectors_without_counting_a_lookup(tmp_path: Path, fake_embedder) -> None:
    write_jsonl(tmp_path / "t" / "a.jsonl", generic_session("a", PAIRS))
    mem = memlane.open(tmp_path / "home", embedder=fake_embedder)
    mem.index([tmp_path / "t"])
    before = mem.cache.totals()
    # A present-state question: the reordering reads the hits' chunk vectors from the cache.
    assert mem.search("what is the proxy keepalive timeout now?", k=2)
    assert mem.cache.totals() == before


def test_status_of_a_machine_without_cache(tmp_path: Path, capsys) -> None:
    (tmp_path / "h").mkdir()
    assert main(["--home", str(tmp_path / "h"), "--json", "status"]) == 0
    cache = json.loads(capsys.readouterr().out)["embedding_cache"]
    assert {k: cache[k] for k in ("entries", "bytes", "hits", "misses")} == dict.fromkeys(
        ("entries", "bytes", "hits", "misses"), 0
    )
