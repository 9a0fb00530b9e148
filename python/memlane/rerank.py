"""Time-aware reordering of fused hits: the current statement first, the named time first.

Runs on the fused candidates of :meth:`memlane.Memory.search`, so every caller (recall, the
MCP tools, ``memlane bench``) gets the same ranking.

* **Recency inside groups** (present-state questions, see :func:`memlane.temporal.asks_present_state`):
  hits that say something about the same subject — their chunk vectors are close, or without
  vectors their words overlap — form a group. Within a group, the newest hit that is about as
  relevant as the group's best takes the group's best place; the older ones move down one
  place each and are marked ``superseded_by`` the newer one. Hits outside any group never
  move for being old: there is no blanket recency decay.
* **Temporal affinity** (the question names a time, see :func:`memlane.temporal.time_window`):
  hits dated in (or just after) that window get a bonus on their fused score. Relative times
  are read against the newest candidate's date.

Example:
    >>> rerank([], "which database does billing use now?", None)
    []
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from memlane.temporal import affinity, asks_present_state, time_window

if TYPE_CHECKING:
    import numpy as np

    from memlane.memory import Hit

__all__ = ["POOL", "needs_rerank", "rerank"]

POOL = 30
"""Fused candidates the reordering looks at (at least k): the newest statement of a subject
may rank well below the stale one before reordering."""

# Two chunks are about the same subject when their similarity (cosine of chunk vectors, or
# without vectors the overlap of their words) stands out from the candidates' background: at
# least this many standard deviations above the mean pairwise similarity of the pool, and at
# least the floor. A fixed cut does not work: chunks of one conversation are all alike (same
# people, same style), while a restated decision is alike far beyond that.
SAME_SUBJECT_SPREAD = 3.0
SAME_SUBJECT_FLOOR = 0.5
# A newer member replaces the group's best only if its fused score is at least this share of it:
# a weaker hit on a neighbouring topic must not displace the fact the question is after.
RELEVANCE_RATIO = 0.5
# Temporal affinity: bonus on the fused score for a hit dated inside the named window, how far
# after the window a memory still counts as telling of it, and how fast the bonus fades outside.
TIME_BONUS = 0.3
TIME_LAG = timedelta(days=7)
TIME_SCALE = timedelta(days=14)

_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]*[a-z0-9]|[a-z0-9]")
_STOP = frozenset(
    "a an and are as at be been but by can did do does for from had has have how i in is it its me my "
    "no not now of on or our so that the their there these this to us was we were what when where which "
    "who why will with you your user assistant yes ok".split()
)


def _when(hit: Hit) -> datetime | None:
    return datetime.fromisoformat(hit.timestamp.replace("Z", "+00:00")) if hit.timestamp else None


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def _similarity(hits: list[Hit], vectors: np.ndarray | None) -> np.ndarray:
    import numpy as np

    if vectors is not None:
        return vectors @ vectors.T
    words = [_words(h.text) for h in hits]
    return np.array([[len(a & b) / max(min(len(a), len(b)), 1) for b in words] for a in words], dtype=np.float32)


def _same_subject(hits: list[Hit], vectors: np.ndarray | None) -> list[list[bool]]:
    """Boolean matrix: hit i and hit j say something about the same subject."""
    import numpy as np

    sims = _similarity(hits, vectors)
    background = sims[~np.eye(len(hits), dtype=bool)]
    if background.size < 2:
        return [[False] * len(hits) for _ in hits]
    cut = max(SAME_SUBJECT_FLOOR, float(background.mean() + SAME_SUBJECT_SPREAD * background.std()))
    return (sims >= cut).tolist()


def _current_first(hits: list[Hit], vectors: np.ndarray | None) -> list[Hit]:
    """Each dated hit, best first, gathers the ungrouped dated hits about its subject; the
    newest of those that is nearly as relevant takes the group's place."""
    same = _same_subject(hits, vectors)
    order = list(range(len(hits)))
    grouped: set[int] = set()
    superseded: dict[int, str] = {}
    for best, hit in enumerate(hits):
        if best in grouped or not hit.timestamp:
            continue
        group = [best] + [j for j in range(best + 1, len(hits)) if j not in grouped and hits[j].timestamp and same[best][j]]
        grouped.update(group)
        floor = RELEVANCE_RATIO * hit.score
        newest = max((j for j in group if hits[j].score >= floor), key=lambda j: (hits[j].timestamp or "", -j))
        for j in group:
            if (hits[j].timestamp or "") < (hits[newest].timestamp or ""):
                superseded[j] = hits[newest].id
        if newest != best:
            order.remove(newest)
            order.insert(order.index(best), newest)
    return [replace(hits[i], superseded_by=superseded[i]) if i in superseded else hits[i] for i in order]


def _time_affinity(hits: list[Hit], query: str) -> list[Hit]:
    whens = [_when(h) for h in hits]
    dates = [d for d in whens if d is not None]
    window = time_window(query, max(dates)) if dates else None
    if window is None:
        return hits
    boosted = []
    for hit, when in zip(hits, whens):
        near = affinity(when, window, TIME_LAG, TIME_SCALE)
        boosted.append(replace(hit, score=round(hit.score + TIME_BONUS * near, 6), scores={**hit.scores, "time": round(near, 3)}))
    # Stable: hits with equal scores keep the fused order.
    return sorted(boosted, key=lambda h: -h.score)


def needs_rerank(query: str, *, recency: bool = True, temporal: bool = True) -> bool:
    """Whether :func:`rerank` would reorder anything for this query (else the caller can skip
    fetching a larger candidate pool).

    Example:
        >>> needs_rerank("what did Caroline research?"), needs_rerank("what did we use in January?")
        (False, True)
    """
    if asks_present_state(query):
        return recency
    # Whether a window exists does not depend on the reference date.
    return temporal and time_window(query, datetime.now(timezone.utc)) is not None


def rerank(hits: list[Hit], query: str, vectors: np.ndarray | None, *, recency: bool = True, temporal: bool = True) -> list[Hit]:
    """Reorder fused hits (best first) for the time the query is about.

    Args:
        hits: Fused hits, best first.
        query: The question.
        vectors: One unit-norm vector per hit (rows aligned with ``hits``), or None to compare
            hits by their words.
        recency: Current statement first within same-subject groups on present-state questions.
        temporal: Boost hits near a time the question names.

    Returns:
        The same hits, reordered; earlier statements carry ``superseded_by``; boosted hits carry
        ``scores["time"]``.
    """
    if not hits:
        return hits
    if asks_present_state(query):
        return _current_first(hits, vectors) if recency else hits
    return _time_affinity(hits, query) if temporal else hits
