"""Ranking of search hits: the search pipeline, the hit type, the relevance floor, time-aware reordering and temporal windows.

Below :mod:`memlane.memory` (which calls it) and :mod:`memlane.recall`; imports neither.

* :mod:`~memlane.ranking.pipeline` — a search's steps in order: candidates, reordering, hierarchy;
* :mod:`~memlane.ranking.hit` — :class:`~memlane.ranking.hit.Hit`, one fused result with provenance;
* :mod:`~memlane.ranking.relevance` — the absolute relevance scale and its floor;
* :mod:`~memlane.ranking.rerank` — the current statement first, the named time first;
* :mod:`~memlane.ranking.temporal` — what time a question is about;
* :mod:`~memlane.ranking.query` — the bound on how much of a query any search reads.

The reordering loads on first use: it compiles its regexes only once a search needs it.
"""
