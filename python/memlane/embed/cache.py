"""The embedding cache: vectors by (embedder id, content hash), shared by every index.

Sources plus this cache are the truth; indexes are derived from them, so an index can be
rebuilt without a single new embedding call. SQLite gives atomic, concurrent-safe writes for
free; vectors are stored as float16, which halves the cache at no measurable recall cost (the
HNSW index keeps 8 bits a dimension by default).

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

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

log = logging.getLogger("memlane.embed.cache")
_T = TypeVar("_T")

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


def as_cached(vectors: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each of ``vectors`` (chunks' window vectors, one width) as the cache stores it (float16)
    and as it gives it back (float32), converted in one pass over all of them. A chunk embedded
    now enters an index as it would read back from the cache, so two builds of the same sources
    answer to the last digit whatever each found cached: an 8-bit index quantizes a float32
    vector and its float16 rounding differently.

    Example:
        >>> stored, read_back = as_cached([np.array([[0.1]], np.float32), np.array([[1.0], [2.0]], np.float32)])
        >>> stored[0].dtype, float(read_back[0][0, 0]), read_back[1].shape
        (dtype('float16'), 0.0999755859375, (2, 1))
    """
    if not vectors:
        return [], []
    ends = np.cumsum([len(v) for v in vectors]).tolist()
    spans = list(zip([0, *ends[:-1]], ends))
    stored = np.concatenate(vectors).astype(np.float16)
    read_back = stored.astype(np.float32)
    # Slices, not np.split: its per-piece bookkeeping cost more than the conversion saved.
    return [stored[a:b] for a, b in spans], [read_back[a:b] for a, b in spans]


@dataclass
class CacheStats:
    """Lookup hits and misses (of this process in :attr:`EmbeddingCache.stats`; of all, on disk)."""

    hits: int = 0
    misses: int = 0


class EmbeddingCache:
    """A persistent map (embedder id, content hash) → window vectors ``(n, dim)``.

    The cache is shared by every home on the machine, so a damaged file must never take them
    down: a cache that SQLite cannot read is set aside (renamed ``embeddings.sqlite.corrupt-…``,
    with a one-line warning) and a fresh one starts. Homes keep their vectors; only vectors not
    yet in any home are embedded again.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.stats = CacheStats()
        self.set_aside_to: Path | None = None
        self._lock = threading.Lock()
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError as exc:
            self._replace(exc)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _replace(self, exc: sqlite3.DatabaseError) -> Path:
        """Set the unreadable cache file aside, open a fresh one in its place; where it went."""
        stamp = time.strftime("%Y%m%dT%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            part = self.path.with_name(self.path.name + suffix)
            if part.exists():
                part.rename(aside.with_name(aside.name + suffix))
        self.set_aside_to = aside
        log.warning(
            "the embedding cache at %s is unreadable (%s): set aside as %s, starting a fresh one",
            self.path,
            exc,
            aside.name,
        )
        self._db = self._connect()
        return aside

    def _guard(self, action: Callable[[], _T]) -> _T:
        """Run a database action; if the file turns out damaged, set it aside and retry once."""
        try:
            return action()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            with self._lock:
                self._db.close()
                self._replace(exc)
            return action()

    def check(self, thorough: bool = True) -> list[str]:
        """What SQLite's own integrity check finds wrong (``[]`` when sound).

        ``thorough`` runs ``integrity_check`` (reads every page), else ``quick_check``.
        """
        pragma = "integrity_check" if thorough else "quick_check"
        try:
            with self._lock:
                rows = [r[0] for r in self._db.execute(f"PRAGMA {pragma}")]
        except sqlite3.DatabaseError as exc:
            return [str(exc)]
        return [] if rows == ["ok"] else rows

    def set_aside(self) -> Path:
        """Set this cache file aside and start a fresh one (what repair does to a damaged cache)."""
        with self._lock:
            self._db.close()
            return self._replace(sqlite3.DatabaseError("failed its integrity check"))

    def get_many(self, embedder_id: str, hashes: Iterable[str], *, count: bool = True) -> dict[str, np.ndarray]:
        """Cached vectors (float32) for the hashes that are present.

        ``count=False`` leaves the hit and miss counters alone: a search reading chunk vectors
        saves no embedding, and without the counter write it never waits for an indexer's
        transaction on the cache.
        """
        wanted = list(dict.fromkeys(hashes))
        return self._guard(lambda: self._get_many(embedder_id, wanted, count))

    def _get_many(self, embedder_id: str, wanted: list[str], count: bool) -> dict[str, np.ndarray]:
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
        return self._guard(lambda: self._known(embedder_id, wanted))

    def _known(self, embedder_id: str, wanted: list[str]) -> set[str]:
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

    def embedders_for(self, hashes: Iterable[str]) -> dict[str, int]:
        """How many of ``hashes`` each embedder has vectors for (to recover a home's embedder)."""
        wanted = list(dict.fromkeys(hashes))[:_BATCH]

        def count() -> dict[str, int]:
            marks = ",".join("?" * len(wanted))
            with self._lock:
                rows = self._db.execute(
                    f"SELECT embedder, COUNT(*) FROM vectors WHERE hash IN ({marks}) GROUP BY embedder", wanted
                )
                return dict(rows.fetchall())

        return self._guard(count) if wanted else {}

    def delete(self, hashes: Iterable[str]) -> int:
        """Drop the vectors of these content hashes, for every embedder; how many rows went."""
        wanted = list(dict.fromkeys(hashes))

        def drop() -> int:
            gone = 0
            with self._lock:
                for start in range(0, len(wanted), _BATCH):
                    part = wanted[start : start + _BATCH]
                    marks = ",".join("?" * len(part))
                    gone += self._db.execute(f"DELETE FROM vectors WHERE hash IN ({marks})", part).rowcount
            return gone

        return self._guard(drop) if wanted else 0

    def _count(self, hits: int, misses: int) -> None:
        """Add one lookup batch to the machine-wide counters (caller holds ``_lock``)."""
        self._db.executemany("UPDATE counters SET n = n + ? WHERE name = ?", [(hits, "hits"), (misses, "misses")])

    def put_many(self, embedder_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store vectors (one transaction; existing entries are kept)."""
        rows = [
            (embedder_id, h, v.shape[0], v.shape[1], np.ascontiguousarray(v, dtype=np.float16).tobytes())
            for h, v in vectors.items()
        ]

        def put() -> None:
            with self._lock:
                self._db.execute("BEGIN")
                try:
                    self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise

        self._guard(put)

    def totals(self) -> CacheStats:
        """Hits and misses of every process that ever used this cache file."""

        def read() -> dict[str, int]:
            with self._lock:
                return dict(self._db.execute("SELECT name, n FROM counters").fetchall())

        counts = self._guard(read)
        return CacheStats(hits=counts.get("hits", 0), misses=counts.get("misses", 0))

    def summary(self) -> dict[str, int | str]:
        """Entries and bytes on disk, and the lifetime hits and misses of all processes."""

        def count() -> int:
            with self._lock:
                return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

        entries = self._guard(count)
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        totals = self.totals()
        return {"path": str(self.path), "entries": entries, "bytes": size, "hits": totals.hits, "misses": totals.misses}

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
