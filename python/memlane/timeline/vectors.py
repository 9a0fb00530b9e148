"""A summary's second vector: the salience-weighted mean of its children's vectors.

A summary chunk is indexed with its own text's windows plus one more vector, the mean of the
chunks it cites (each child file's chunk vectors averaged, weighted by the child's ``salience``
in the summary's frontmatter). A chunk scores by its best window, so a summary also matches a
question about what its children say in their own words — and :mod:`memlane.ranking.hierarchy`
then hands the hit to those children. The vectors go into the embedding cache under the
summary chunk's content hash, where :meth:`memlane.Memory.index` picks them up like any cached
vector (and a repair rebuilds them without a call).

Example:
    >>> import memlane, tempfile
    >>> seed_summary_vectors(memlane.open(tempfile.mkdtemp(), embedder="none"), [])
    0
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memlane import _core
from memlane.brain import provenance
from memlane.timeline import notes

if TYPE_CHECKING:
    import numpy as np

    from memlane.memory import Memory


def _file_vector(mem: Memory, embedder_id: str, path: Path, memo: dict[Path, np.ndarray | None]) -> np.ndarray | None:
    """Mean of a file's chunk vectors (each chunk's windows averaged), from the cache; None if none is cached."""
    import numpy as np

    if path not in memo:
        memo[path] = None
        if path.is_file():
            hashes = [c["content_hash"] for c in _core.chunk_file(str(path), "markdown")]
            cached = mem.cache.get_many(embedder_id, hashes, count=False)
            rows = [cached[h].mean(axis=0) for h in hashes if h in cached]
            if rows:
                v = np.mean(np.stack(rows), axis=0)
                memo[path] = v / max(float(np.linalg.norm(v)), 1e-12)
    return memo[path]


def seed_summary_vectors(mem: Memory, summaries: list[Path]) -> int:
    """Put each summary chunk's vectors (text windows + children's mean) in the embedding cache.

    Returns:
        Chunks given a children's vector (0 in a keyword-only home).
    """
    embedder = mem.embedder
    if embedder is None or not summaries:
        return 0
    import numpy as np

    memo: dict[Path, np.ndarray | None] = {}
    seeded: dict[str, np.ndarray] = {}
    with_children = 0
    for path in summaries:
        root = provenance.brain_root(path)
        weights = notes.frontmatter(path).get("salience") or {}
        for chunk in _core.chunk_file(str(path), "markdown"):
            children = dict.fromkeys(r.path for line in chunk["text"].splitlines() for r in provenance.refs(line))
            vectors, w = [], []
            for rel in children:
                v = _file_vector(mem, embedder.id, root / rel, memo)
                if v is not None:
                    vectors.append(v)
                    w.append(float(weights.get(rel, 1.0)) if isinstance(weights, dict) else 1.0)
            text_windows = embedder.embed_documents([chunk["text"]])[0]
            if vectors:
                weight = np.array(w, dtype=np.float32) if sum(w) > 0 else np.ones(len(w), dtype=np.float32)
                mean = (np.stack(vectors) * weight[:, None]).sum(axis=0)
                mean /= max(float(np.linalg.norm(mean)), 1e-12)
                seeded[chunk["content_hash"]] = np.vstack([text_windows, mean[None, :]]).astype(np.float32)
                with_children += 1
            else:
                seeded[chunk["content_hash"]] = np.asarray(text_windows, dtype=np.float32)
    # The cache keeps an existing entry: replace it, so the children's vector is the current one.
    mem.cache.delete(list(seeded))
    mem.cache.put_many(embedder.id, seeded)
    return with_children
