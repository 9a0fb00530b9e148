"""Ranking of search hits: the hit type, time-aware reordering and temporal windows.

Below :mod:`memlane.memory` (which calls it) and :mod:`memlane.recall`; imports neither.

* :mod:`~memlane.ranking.hit` — :class:`~memlane.ranking.hit.Hit`, one fused result with provenance;
* :mod:`~memlane.ranking.rerank` — the current statement first, the named time first;
* :mod:`~memlane.ranking.temporal` — what time a question is about.

The submodules load on first use: reordering compiles its regexes only once a search needs it.
"""
