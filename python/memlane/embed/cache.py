"""The embedding cache: vectors by (embedder id, content hash), shared by every index.

Sources plus this cache are the truth; indexes are derived from them, so an index can be
rebuilt without a single new embedding call. SQLite gives atomic, concurrent-safe writes for
free; vectors are stored as float16 (what the HNSW index keeps by default), which halves the
cache at no measurable recall cost.

Hits and misses (of lookups for embedding; a search reading chunk vectors is not one) are
counted in the database itself, for every process on the machine: each lookup adds its
counts with one ``UPDATE ... SET n = n + ?``, which SQLite applies atomically however many
processes write at once, so ``memlane status`` sees the lifetime totals.

Example:
    >>> import numpy as np, tempfile, pathlib
    >>> cache = EmbeddingCache(pathlib.Path(tempfile.mkdtemp()) / "e.sqlite")
    >>> cache.put_many("fake/8", {"ab": np.ones((2, 8), np.float32)})
    >>> cache.get_many("fake/8", ["ab", "cd"])["ab"].shape
    (2, 8)
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    embedder TEXT NOT NULL,
    hash TEXT NOT NULL,
    windows INTEGER NOT NULL,
    dim INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (embedder, hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    n INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO counters VALUES ('hits', 0), ('misses', 0);
"""
# SQLite's default limit on host parameters per statement is 999 on old builds.
_BATCH = 900


@dataclass
class CacheStats:
    """Lookup hits and misses (of this process in :attr:`EmbeddingCache.stats`; of all, on disk)."""

    hits: int = 0
    misses: int = 0


class EmbeddingCache:
    """A persistent map (embedder id, content hash) → window vectors ``(n, dim)``."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.stats = CacheStats()
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def get_many(self, embedder_id: str, hashes: Iterable[str], *, count: bool = True) -> dict[str, np.ndarray]:
        """Cached vectors (float32) for the hashes that are present.

        ``count=False`` leaves the hit and miss counters alone: a search reading chunk vectors
        saves no embedding, and without the counter write it never waits for an indexer's
        transaction on the cache.
        """
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(wanted), _BATCH):
                part = wanted[start : start + _BATCH]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT hash, windows, dim, data FROM vectors WHERE embedder = ? AND hash IN ({marks})",
                    [embedder_id, *part],
                )
                for h, windows, dim, data in rows:
                    found[h] = np.frombuffer(data, dtype=np.float16).reshape(windows, dim).astype(np.float32)
            if wanted and count:
                self._count(hits=len(found), misses=len(wanted) - len(found))
        if count:
            self.stats.hits += len(found)
            self.stats.misses += len(wanted) - len(found)
        return found

    def known(self, embedder_id: str, hashes: Iterable[str]) -> set[str]:
        """The hashes that have vectors, without reading them or counting a lookup."""
        wanted = list(dict.fromkeys(hashes))
        found: set[str] = set()
        with self._lock:
            for start in range(0, len(wanted), _BATCH):
                part = wanted[start : start + _BATCH]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT hash FROM vectors WHERE embedder = ? AND hash IN ({marks})", [embedder_id, *part]
                )
                found.update(h for (h,) in rows)
        return found

    def _count(self, hits: int, misses: int) -> None:
        """Add one lookup batch to the machine-wide counters (caller holds ``_lock``)."""
        self._db.executemany(
            "UPDATE counters SET n = n + ? WHERE name = ?", [(hits, "hits"), (misses, "misses")]
        )

    def put_many(self, embedder_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store vectors (one transaction; existing entries are kept)."""
        rows = [
            (embedder_id, h, v.shape[0], v.shape[1], np.ascontiguousarray(v, dtype=np.float16).tobytes())
            for h, v in vectors.items()
        ]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)
            self._db.execute("COMMIT")

    def totals(self) -> CacheStats:
        """Hits and misses of every process that ever used this cache file."""
        with self._lock:
            counts = dict(self._db.execute("SELECT name, n FROM counters").fetchall())
        return CacheStats(hits=counts.get("hits", 0), misses=counts.get("misses", 0))

    def summary(self) -> dict[str, int | str]:
        """Entries and bytes on disk, and the lifetime hits and misses of all processes."""
        with self._lock:
            (entries,) = self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        totals = self.totals()
        return {"path": str(self.path), "entries": entries, "bytes": size, "hits": totals.hits, "misses": totals.misses}

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
