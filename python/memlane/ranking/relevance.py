"""The relevance floor: when nothing memory holds is relevant to a query, the answer is empty.

Every hit carries a ``relevance`` on an absolute scale, the same from query to query (the fused
``score`` is not: its BM25 part is relative to the query's best hit, so any keyword overlap
once scored as a perfect keyword match). The core computes it (``relevance`` in memlane-core's
``hybrid.rs``) from two pieces of evidence:

* **coverage** — the hit's BM25 score over the most the query could score (each term's
  idf·(k1+1)): the share of the query's informative terms the hit holds. A term no chunk holds
  weighs like the rarest, so "how do I fix a leaking kitchen faucet?" covers little of any
  coding transcript that says "fix";
* **cosine** — of the query and the hit's best window.

With vectors, ``relevance = 0.6 · cosine + 0.4 · coverage`` (cosine clamped to [0, 1]);
keyword-only, coverage × 4.5 (at most 1), scaled so the floor costs the same recall there.

A search returns nothing when no candidate reaches :data:`FLOOR`, and otherwise ranks every
candidate by its fused score: the floor decides *whether* memory answers, not which hits it
keeps, because a floor on each hit drops evidence that a relevant answer needs for no fewer
off-topic answers (benches/LOG.md, *Relevance floor*). Recall injects nothing unless the search
answers, and then the candidates that reach :data:`ITEM_FLOOR`. Brain entries are scored here
on the same scale (:func:`entry_relevance`).

Example:
    >>> FLOOR
    0.225
    >>> entry_relevance(keyword=0.5, similarity=0.5)
    0.5
"""

from __future__ import annotations

from memlane import _core

__all__ = ["FLOOR", "ITEM_FLOOR", "VECTOR_WEIGHT", "entry_relevance"]

FLOOR: float = round(_core.DEFAULT_THRESHOLD, 6)
"""The default relevance floor: the highest that leaves evidence recall as it is without one,
so that off-topic questions get nothing while on-topic ones lose nothing (benches/LOG.md,
*Relevance floor*)."""

ITEM_FLOOR = 0.175
"""Relevance under which recall leaves a candidate out of an answer the floor let through: the
highest that still injects every piece of evidence the fused-score rule it replaced injected,
at every token budget, so that the room it frees goes to better candidates."""

VECTOR_WEIGHT: float = round(_core.RELEVANCE_VECTOR_WEIGHT, 6)
"""Weight of the cosine in relevance; the keyword evidence gets the rest."""


def entry_relevance(keyword: float, similarity: float | None) -> float:
    """Relevance of a brain entry: its cosine with the query (None in keyword-only mode) and the
    share of the query's IDF mass it holds, weighed as search weighs a hit's.

    Example:
        >>> entry_relevance(keyword=0.3, similarity=None)
        0.3
    """
    if similarity is None:
        return keyword
    return VECTOR_WEIGHT * max(0.0, min(1.0, similarity)) + (1 - VECTOR_WEIGHT) * keyword
