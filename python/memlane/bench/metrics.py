"""Retrieval metrics over a ranked list of hits, at session or turn granularity.

A ranking is a list of *positions*, best first; each position holds the set of ids that hit
counts for:

* session granularity: one session id per position, repeated sessions removed (a session
  ranks where it first appears; see :func:`session_ranking`);
* turn granularity: every source id in the hit's ``meta["turn_ids"]`` (a chunk counts for
  both turns of a pair, or every turn of the short pairs packed into it).

For gold ids ``G`` and the union ``R_k`` of the ids in the first ``k`` positions:

* ``recall_any@k`` = 1 if ``R_k ∩ G`` is not empty (LongMemEval ``recall_any``; MemPalace's
  "R@k" on LongMemEval);
* ``recall_all@k`` = 1 if ``G ⊆ R_k`` (LongMemEval's official ``recall_all``);
* ``evidence_recall@k`` = ``|R_k ∩ G| / |G|`` (MemPalace's LoCoMo "avg recall");
* ``ndcg@k``: binary relevance, ``DCG = Σ rel_i / log2(i + 1)`` over positions ``i = 1..k``,
  where a position is relevant when it holds a gold id not already covered higher up (so a
  repeated gold id earns nothing twice); ``IDCG`` puts ``min(|G|, k)`` relevant positions first.
  At turn granularity one chunk can hold two gold turns, so a perfect ranking can score
  below 1; compare turn-level NDCG across runs of the same chunker only. (LongMemEval's own
  script uses the older ``rel_1 + Σ_{i≥2} rel_i / log2(i)`` discount; ours is the standard one.)

Questions without gold are not scored here: callers skip and count them.

Example:
    >>> score([{"s1"}, {"s2"}, {"s3"}], {"s2", "s9"}, ks=(1, 3))
    {'recall_any@1': 0.0, 'recall_all@1': 0.0, 'evidence_recall@1': 0.0, 'ndcg@1': 0.0, 'recall_any@3': 1.0, 'recall_all@3': 0.0, 'evidence_recall@3': 0.5, 'ndcg@3': 0.386853}
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence

from memlane.errors import InvalidArgumentError

__all__ = [
    "METRICS",
    "aggregate",
    "evidence_recall",
    "ndcg",
    "recall_all",
    "recall_any",
    "score",
    "session_ranking",
    "turn_ranking",
]

METRICS = ("recall_any", "recall_all", "evidence_recall", "ndcg")


def session_ranking(session_ids: Iterable[str]) -> list[frozenset[str]]:
    """Positions for session-level scoring: each session once, where it first appears.

    Args:
        session_ids: ``Hit.session_id`` of each hit, best first.

    Returns:
        One singleton set per distinct session.

    Example:
        >>> session_ranking(["a", "b", "a", "c"])
        [frozenset({'a'}), frozenset({'b'}), frozenset({'c'})]
    """
    seen: dict[str, None] = {}
    for sid in session_ids:
        seen.setdefault(sid, None)
    return [frozenset((sid,)) for sid in seen]


def turn_ranking(turn_ids: Iterable[Iterable[str]]) -> list[frozenset[str]]:
    """Positions for turn-level scoring: one per hit, holding all its turn ids.

    Args:
        turn_ids: ``Hit.meta["turn_ids"]`` of each hit, best first.

    Returns:
        One set per hit (empty when a hit carries no ids).

    Example:
        >>> [sorted(ids) for ids in turn_ranking([["D1:1", "D1:2"], ["D3:4"]])]
        [['D1:1', 'D1:2'], ['D3:4']]
    """
    return [frozenset(ids) for ids in turn_ids]


def _covered(ranking: Sequence[Collection[str]], k: int) -> set[str]:
    if k < 1:
        raise InvalidArgumentError(f"k must be at least 1, got {k}")
    out: set[str] = set()
    for ids in ranking[:k]:
        out.update(ids)
    return out


def _gold(gold: Collection[str]) -> frozenset[str]:
    g = frozenset(gold)
    if not g:
        raise InvalidArgumentError("no gold ids: skip the question instead of scoring it")
    return g


def recall_any(ranking: Sequence[Collection[str]], gold: Collection[str], k: int) -> float:
    """1.0 if any gold id is in the first ``k`` positions, else 0.0.

    Example:
        >>> recall_any([{"x"}, {"g"}], {"g"}, 1), recall_any([{"x"}, {"g"}], {"g"}, 2)
        (0.0, 1.0)
    """
    return 1.0 if _covered(ranking, k) & _gold(gold) else 0.0


def recall_all(ranking: Sequence[Collection[str]], gold: Collection[str], k: int) -> float:
    """1.0 if every gold id is in the first ``k`` positions, else 0.0.

    Example:
        >>> recall_all([{"a", "b"}, {"c"}], {"a", "c"}, 1), recall_all([{"a", "b"}, {"c"}], {"a", "c"}, 2)
        (0.0, 1.0)
    """
    return 1.0 if _gold(gold) <= _covered(ranking, k) else 0.0


def evidence_recall(ranking: Sequence[Collection[str]], gold: Collection[str], k: int) -> float:
    """Fraction of the gold ids found in the first ``k`` positions.

    Example:
        >>> evidence_recall([{"a"}, {"x"}, {"b"}], {"a", "b", "c", "d"}, 3)
        0.5
    """
    g = _gold(gold)
    return len(_covered(ranking, k) & g) / len(g)


def ndcg(ranking: Sequence[Collection[str]], gold: Collection[str], k: int) -> float:
    """Binary NDCG@k; a position is relevant when it adds a gold id not covered above it.

    Example:
        >>> round(ndcg([{"x"}, {"g"}], {"g"}, 2), 4)  # 1/log2(3)
        0.6309
        >>> ndcg([{"g1", "g2"}, {"g2"}], {"g1", "g2"}, 2) < 1.0  # both gold turns in one chunk
        True
    """
    g = _gold(gold)
    if k < 1:
        raise InvalidArgumentError(f"k must be at least 1, got {k}")
    dcg = 0.0
    seen: set[str] = set()
    for i, ids in enumerate(ranking[:k]):
        new = (set(ids) & g) - seen
        if new:
            dcg += 1.0 / math.log2(i + 2)
            seen |= new
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(g), k)))
    return dcg / ideal


_FUNCS = {"recall_any": recall_any, "recall_all": recall_all, "evidence_recall": evidence_recall, "ndcg": ndcg}


def score(
    ranking: Sequence[Collection[str]], gold: Collection[str], ks: Iterable[int] = (1, 3, 5, 10)
) -> dict[str, float]:
    """Every metric at every ``k`` for one question, keyed ``"<metric>@<k>"`` (rounded to 6 places).

    Args:
        ranking: Positions, best first (from :func:`session_ranking` or :func:`turn_ranking`).
        gold: Gold ids; must not be empty.
        ks: Cut-offs.

    Returns:
        ``{"recall_any@1": …, "recall_all@1": …, "evidence_recall@1": …, "ndcg@1": …, …}``.

    Raises:
        memlane.errors.InvalidArgumentError: ``gold`` is empty or a ``k`` is below 1.

    Example:
        >>> score([{"g"}], {"g"}, ks=(1,))
        {'recall_any@1': 1.0, 'recall_all@1': 1.0, 'evidence_recall@1': 1.0, 'ndcg@1': 1.0}
    """
    out: dict[str, float] = {}
    for k in ks:
        for name in METRICS:
            out[f"{name}@{k}"] = round(_FUNCS[name](ranking, gold, k), 6)
    return out


def aggregate(rows: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Mean of each metric over questions (rounded to 6 places); empty input gives ``{}``.

    Example:
        >>> aggregate([{"recall_any@1": 1.0}, {"recall_any@1": 0.0}, {"recall_any@1": 1.0}])
        {'recall_any@1': 0.666667}
    """
    sums: dict[str, float] = {}
    n = 0
    for row in rows:
        n += 1
        for key, value in row.items():
            sums[key] = sums.get(key, 0.0) + value
    return {key: round(total / n, 6) for key, total in sums.items()} if n else {}
