"""The search pipeline: candidates, time-aware reordering, then summaries handing over to their evidence.

:meth:`memlane.Memory.search` checks its arguments, resolves the project scope and the query
vector into a :class:`SearchRequest`, and calls :func:`search`, which runs the steps in order:

1. :func:`candidates` — the core's fused BM25 and vector hits, the relevance floor applied
   (:mod:`memlane.ranking.relevance`: nothing when no candidate reaches it). It fetches a
   :class:`Pool` wider than ``k`` when a later step needs room to reorder or to fill a gap;
2. :func:`reorder` — on questions about the present state or a named time, the current
   statement first and the named time first (:mod:`memlane.ranking.rerank`);
3. :func:`place_hierarchy` — a summary among the hits hands its place to the daily entries it
   cites (:mod:`memlane.ranking.hierarchy`), found by :func:`fetch_evidence`.

The reordering and the hierarchy load on first use: they compile their regexes only once a
search needs them.

Example:
    >>> from memlane import _core
    >>> import tempfile
    >>> store = _core.Store(tempfile.mkdtemp())
    >>> search(store, SearchRequest("exit code 137", 5), lambda embedder_id, hashes: {})
    []
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from memlane.ranking.hit import Hit
from memlane.ranking.relevance import FLOOR

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "HIERARCHY_SPARE",
    "Pool",
    "SearchRequest",
    "SearchStore",
    "WindowLookup",
    "candidates",
    "fetch_evidence",
    "place_hierarchy",
    "plan",
    "reorder",
    "search",
    "unit_vectors",
]

HIERARCHY_SPARE = 3
"""Extra fused hits fetched beyond ``k`` when summaries may hand their place on: a summary
handing its place to a child already listed leaves a gap, and these fill it."""


class SearchStore(Protocol):
    """What the pipeline searches: a home's :class:`memlane._core.Store`, or a sharded index's
    set of shards (:class:`memlane.cluster.search.ShardSet`), which answer the same call."""

    def search(
        self,
        query: str,
        k: int = 10,
        vector: npt.NDArray[np.float32] | None = None,
        embedder_id: str | None = None,
        sources: list[str] | None = None,
        session_id: str | None = None,
        since: int | None = None,
        until: int | None = None,
        fusion: str = "weighted",
        vector_weight: float = 0.6,
        threshold: float = ...,
        candidates: int = 50,
        projects: list[str] | None = None,
        branch: str | None = None,
        libraries: list[str] | None = None,
    ) -> list[dict[str, Any]]: ...


WindowLookup = Callable[[str, list[str]], "dict[str, np.ndarray]"]
"""``windows(embedder_id, content_hashes)``: the cached window vectors of these chunks."""


@dataclass(frozen=True)
class SearchRequest:
    """One search, its arguments checked and resolved: times in epoch milliseconds, the
    project scope as keys, the query's vector (None: BM25 answers alone)."""

    query: str
    k: int
    vector: npt.NDArray[np.float32] | None = None
    embedder_id: str | None = None
    sources: list[str] | None = None
    session_id: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    fusion: str = "weighted"
    vector_weight: float = 0.6
    threshold: float = FLOOR
    recency: bool = True
    temporal: bool = True
    hierarchy: bool = True
    projects: list[str] | None = None
    branch: str | None = None
    libraries: list[str] | None = None


@dataclass(frozen=True)
class Pool:
    """How many fused hits a search fetches: ``size`` to reorder among (``k`` when nothing is
    reordered), plus ``spare`` to fill the gaps summaries leave."""

    size: int
    spare: int
    time_aware: bool


def plan(request: SearchRequest) -> Pool:
    """The pool ``request`` needs: a wider one when the query asks about the present state or
    a named time (the reordering needs candidates to move up), spares when summaries may hand on."""
    from memlane.ranking.rerank import POOL, needs_rerank

    time_aware = (request.recency or request.temporal) and needs_rerank(
        request.query, recency=request.recency, temporal=request.temporal
    )
    return Pool(
        size=max(request.k, POOL) if time_aware else request.k,
        spare=HIERARCHY_SPARE if request.hierarchy else 0,
        time_aware=time_aware,
    )


def candidates(store: SearchStore, request: SearchRequest, pool: Pool) -> list[dict[str, Any]]:
    """The core's fused hits for ``request``, best first, the relevance floor applied."""
    return store.search(
        request.query,
        k=pool.size + pool.spare,
        vector=request.vector,
        embedder_id=request.embedder_id,
        sources=request.sources,
        session_id=request.session_id,
        since=request.since_ms,
        until=request.until_ms,
        fusion=request.fusion,
        vector_weight=request.vector_weight,
        threshold=request.threshold,
        candidates=max(50, 5 * request.k, pool.size),
        projects=request.projects,
        branch=request.branch,
        libraries=request.libraries,
    )


def unit_vectors(windows: WindowLookup, embedder_id: str | None, content_hashes: list[str]) -> np.ndarray | None:
    """One unit vector per chunk (its windows averaged) from the embedding cache, or None
    when any is missing (then hits are compared by their words)."""
    if embedder_id is None or not content_hashes:
        return None
    import numpy as np

    cached = windows(embedder_id, content_hashes)
    if len(cached) < len(set(content_hashes)):
        return None
    rows = np.stack([w[0] if len(w) == 1 else w.mean(axis=0) for w in (cached[h] for h in content_hashes)])
    unit: np.ndarray = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return unit


def reorder(
    hits: list[Hit], raw: Sequence[dict[str, Any]], request: SearchRequest, pool: Pool, windows: WindowLookup
) -> list[Hit]:
    """The pool's hits with the current statement and the named time first; the spares after."""
    from memlane.ranking.rerank import rerank
    from memlane.ranking.temporal import asks_present_state

    # Same-subject grouping compares chunk vectors; only present-state questions group.
    grouping = request.recency and asks_present_state(request.query)
    hashes = [d["content_hash"] for d in raw[: pool.size]]
    vectors = unit_vectors(windows, request.embedder_id, hashes) if grouping else None
    ranked = rerank(hits[: pool.size], request.query, vectors, recency=request.recency, temporal=request.temporal)
    return ranked[: request.k + pool.spare] + hits[pool.size :]


def fetch_evidence(store: SearchStore, request: SearchRequest, pool: Pool, since_ms: int, until_ms: int) -> list[Hit]:
    """The query's hits among the knowledge library's chunks dated in ``[since_ms, until_ms)``,
    with no floor: a summary's children are judged by the summary that cites them."""
    found = store.search(
        request.query,
        k=max(pool.size, 50),
        vector=request.vector,
        embedder_id=request.embedder_id,
        sources=["knowledge"],
        since=since_ms,
        until=until_ms,
        fusion=request.fusion,
        vector_weight=request.vector_weight,
        threshold=0.0,
        projects=request.projects,
        branch=request.branch,
        libraries=request.libraries,
    )
    return [Hit._from_core(d) for d in found]


def place_hierarchy(store: SearchStore, request: SearchRequest, pool: Pool, hits: list[Hit]) -> list[Hit]:
    """``hits`` with each summary among the first ``k`` handing its place to its evidence.

    Asked for summaries alone, the caller gets them: there is no evidence to hand them to."""
    wanted = not request.sources or "knowledge" in request.sources
    if not (request.hierarchy and wanted and any(h.source == "summary" for h in hits[: request.k])):
        return hits
    from memlane.ranking.hierarchy import place_evidence

    return place_evidence(hits, request.k, fetch=partial(fetch_evidence, store, request, pool))


def search(store: SearchStore, request: SearchRequest, windows: WindowLookup) -> list[Hit]:
    """The hits of ``request``, at most ``k``: every step of the pipeline in order."""
    pool = plan(request)
    raw = candidates(store, request, pool)
    hits = [Hit._from_core(d) for d in raw]
    if pool.time_aware:
        hits = reorder(hits, raw, request, pool, windows)
    return place_hierarchy(store, request, pool, hits)[: request.k]
