"""Writing summaries and wiki pages into the brain, and indexing them into the home.

Below :mod:`~memlane.timeline.compact`, :mod:`~memlane.timeline.wiki`,
:mod:`~memlane.timeline.dream` and :mod:`~memlane.timeline.gate`, which all publish or index
what they wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.brain.brain import DAILY_DIR

if TYPE_CHECKING:
    from memlane.brain import Brain
    from memlane.memory import Memory


def publish(brain: Brain, files: dict[Path, str], what: str) -> None:
    """Write summaries or wiki pages in one brain transaction (lock, MemoryGuard, atomic replace).

    Raises:
        MemoryGuardError: A new line trips a guard rule; nothing is written.
    """
    with brain.transaction() as txn:
        for path, text in files.items():
            if not path.resolve().is_relative_to((brain.dir / DAILY_DIR).resolve()):
                path.parent.mkdir(parents=True, exist_ok=True)
                txn.put(path, text)
        txn.event(what, files=[p.relative_to(brain.dir).as_posix() for p in files])


def index_summaries(mem: Memory, paths: list[Path]) -> dict[str, Any]:
    """Index written summaries into the home: their text vectors plus the salience-weighted mean of
    their children's (:mod:`memlane.timeline.vectors`), through :meth:`memlane.Memory.index`."""
    from memlane.timeline.vectors import seed_summary_vectors

    existing = [p for p in paths if p.exists()]
    seeded = seed_summary_vectors(mem, existing)
    report = mem.index(existing, embed=mem.embedder is not None, format="markdown")
    return {
        "files": report.files_indexed,
        "chunks_added": report.chunks_added,
        "chunks_embedded": report.chunks_embedded,
        "child_vectors": seeded,
    }
