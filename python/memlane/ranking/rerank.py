"""Time-aware reordering of fused hits: the current statement first, the named time first.

Runs on the fused candidates of :meth:`memlane.Memory.search`, so every caller (recall, the
MCP tools, ``memlane bench``) gets the same ranking.

* **Current statement first** (present-state questions, see
  :func:`memlane.ranking.temporal.asks_present_state`): each dated hit, best first, starts a group of
  statements about its subject. The most relevant newer hit that says something about the same
  subject joins, then the most relevant hit newer than that one about the same subject as it,
  and so on; older statements of the subject join as well. The members then take the group's
  places and scores newest first. The older ones are marked ``superseded_by`` the newest only
  when both answer the question (score at least ``MARK_RATIO`` of the pool's best) and the two
  are one subject's without counting value slots: a wrong "outdated" mark misleads an
  agent more than none.
  Hits outside any group never move for being old: there is no blanket recency decay. A
  group never mixes repositories: a newer statement in another repository says nothing about
  this one (a hit of unknown repository — a chat export, a note of a library kept outside any
  repository — may join any group).
* **Temporal affinity** (the question names a time, see :func:`memlane.ranking.temporal.time_window`):
  hits dated in (or just after) that window get a bonus on their fused score. Relative times
  are read against the newest candidate's date.

Example:
    >>> rerank([], "which database does billing use now?", None)
    []
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from memlane import _core
from memlane.ranking.temporal import NUMBER_WORDS, affinity, asks_present_state, time_window

if TYPE_CHECKING:
    import numpy as np

    from memlane.ranking.hit import Hit

__all__ = ["POOL", "needs_rerank", "rerank"]

POOL = 30
"""Fused candidates the reordering looks at (at least k): the newest statement of a subject
may rank well below the stale one before reordering."""

# Whether hit j says something about the same subject as hit i is a sum of evidence, which
# must reach SAME_SUBJECT_EVIDENCE:
# * how far their similarity (cosine of chunk vectors; without vectors, of tf-idf vectors of
#   their words) stands out from the pool's, in robust standard deviations (median and MAD, at
#   least SPREAD_FLOOR: a pool is often full of repeated boilerplate, which inflates a plain
#   standard deviation; under SMALL_POOL hits there is no background and unrelated counts as
#   0). A fixed cut does not work: chunks of one conversation are all alike (same people, same
#   style), while a restated decision is alike far beyond that;
# * the share of the query's subject they have in common: the query terms both contain, each
#   weighted by its rarity in the pool ("billing" in "which database does billing use now?"),
#   over those i contains. The query defines the subject, so two answers to it can be one
#   subject's statements even when their own wording has little in common;
# * change language in j ("moved to", "switched", "replaced", "no longer", "now"); additive
#   language ("also", "as well", "now has") counts against it;
# * a new value in an identifier slot: both name identifiers the query does not ("us-east-1",
#   "db-billing-01", ".github/workflows", "BILLING_PG_URL") and j names one i does not — a
#   restated setting usually changes exactly such a value;
# * a new number for something both count ("3 API replicas" then "5 replicas", "70 percent"
#   then "80 percent", "Python 3.9" then "Python 3.12") or a new named version ("MySQL 5.7"
#   then "Postgres 16"), the other kind of value a restated setting changes;
# * how relevant j is next to the group's best (fused score ratio, at most 1): the weaker j
#   answers the question, the stronger the rest of the evidence must be, so a neighbouring
#   topic does not displace a fact nothing contradicts.
# Change language and value slots are read in the paragraphs of a hit that name a query term
# (and the one after each), so the unrelated turns of a packed chunk lend it none.
# Repeats (word sets at least DUPLICATE alike) say the same thing: neither supersedes the other.
# The weights were chosen on the tune half of benches/reversal_corpus.py (seeds 11-14), with
# no unique old fact allowed to lose its first place (IDENTIFIER_WEIGHT 0 / 1 / 2 / 3: current
# first 56.9 / 61.1 / 63.2 / 67.4 with the local embedder; 2 was the one checked on LoCoMo dev;
# then QUANTITY_WEIGHT 0 / 1 / 2 / 3: 61.1 / 64.6 / 65.3 / 66.0, where 3 buries a unique fact;
# then value slots read where the hit names the query's terms 66.0, named versions 69.4, and
# RELEVANCE_RATIO 0.5 / 0.45 / 0.4 / 0.35 / 0.3: 69.4 / 71.5 / 72.2 / 71.5 / 70.1).
SAME_SUBJECT_EVIDENCE = 7.0
SUBJECT_WEIGHT = 2.0
CHANGE_WEIGHT = 1.0
IDENTIFIER_WEIGHT = 2.0
QUANTITY_WEIGHT = 2.0
RELEVANCE_WEIGHT = 3.0
SPREAD_FLOOR = 0.05
SMALL_POOL = 5
DUPLICATE = 0.9
# No hit scoring under this share of the group's best joins it.
RELEVANCE_RATIO = 0.4
# Marking is stricter than reordering: a group's older members are marked superseded only when
# the group's newest and the older member both score at least this share of the pool's best, so
# both answer the question; a group of side matches (another subject's statements, filler) may
# still reorder, but telling an agent that a memory is outdated needs more than that.
MARK_RATIO = 0.6
# Temporal affinity: bonus on the fused score for a hit dated inside the named window, how far
# after the window a memory still counts as telling of it, and how fast the bonus fades outside.
TIME_BONUS = 0.3
TIME_LAG = timedelta(days=7)
TIME_SCALE = timedelta(days=14)

_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "now",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "there",
        "these",
        "this",
        "to",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "user",
        "assistant",
        "yes",
        "ok",
        "currently",
        "current",
        "moment",
        "present",
        "today",
        "days",
        "still",
    ]
)
_NUMBER_WORDS = {word: str(n) for word, n in NUMBER_WORDS.items()} | {"single": "1"}


@lru_cache(maxsize=1)
def _reader() -> _core.TextFeatures:
    """The core's reader of hit texts (its patterns: memlane-core's ``features`` module), with
    this module's stop words and number words."""
    return _core.TextFeatures(sorted(_STOP), list(_NUMBER_WORDS.items()))


def _when(hit: Hit) -> datetime | None:
    return datetime.fromisoformat(hit.timestamp.replace("Z", "+00:00")) if hit.timestamp else None


def _words(text: str) -> frozenset[str]:
    return frozenset(_reader().words(text))


def _stems(text: str) -> frozenset[str]:
    """Crude stems of a text's words, enough to match "deploys" with "deployed" and "sessions"
    with "session"."""
    return frozenset(_reader().stems(text))


class _Features(NamedTuple):
    """What the reordering reads from one hit's text, whatever the query."""

    stems: frozenset[str]
    # The identifiers it names, dates and clock times aside (the query's are taken out later).
    identifiers: frozenset[str]
    # 1 for change language, -1 for additive language, 0 for both or neither.
    change: float
    # The numbers it gives, by the (stemmed) word they count.
    quantities: dict[str, frozenset[str]]


# A present-state question often meets hits an earlier one met (a session's follow-ups, recall
# after search).
@lru_cache(maxsize=1024)
def _features(text: str) -> _Features:
    stems, identifiers, change, quantities = _reader().features(text)
    return _Features(
        frozenset(stems),
        frozenset(identifiers),
        float(change),
        {unit: frozenset(numbers) for unit, numbers in quantities},
    )


@lru_cache(maxsize=1024)
def _about(text: str, terms: frozenset[str]) -> str:
    """The paragraphs of a text that name one of the query's terms, each with the paragraph after
    it (the answer to a question that names it); the whole text when none does or it has fewer
    than three paragraphs."""
    paragraphs = text.split("\n\n")
    if len(paragraphs) < 3:
        return text
    kept = {k for i, p in enumerate(paragraphs) if _stems(p) & terms for k in (i, i + 1)}
    return "\n\n".join(p for i, p in enumerate(paragraphs) if i in kept) if kept else text


def _robust_z(sims: np.ndarray) -> np.ndarray:
    """How many robust standard deviations each pair's similarity lies above the pool's."""
    import numpy as np

    if len(sims) < SMALL_POOL:  # too few pairs to tell a background: unrelated is 0
        return sims / SPREAD_FLOOR
    background = sims[~np.eye(len(sims), dtype=bool)]
    median = float(np.median(background))
    spread = 1.4826 * float(np.median(np.abs(background - median)))
    return (sims - median) / max(spread, SPREAD_FLOOR)


def _word_vectors(stems: list[frozenset[str]]) -> np.ndarray:
    """Unit tf-idf vectors of the hits' word stems, idf taken in the pool, in the columns of
    the stems two or more hits share: the stand-in for chunk vectors when a home has none."""
    import numpy as np

    vocabulary = {t: i for i, t in enumerate(sorted(set().union(*stems)))}
    rows = np.zeros((len(stems), max(len(vocabulary), 1)), dtype=np.float32)
    for r, words in enumerate(stems):
        for t in words:
            rows[r, vocabulary[t]] = 1.0
    held = rows.sum(axis=0)
    rows *= np.log1p(len(stems) / np.maximum(held, 1.0))
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    # A stem of one hit adds nothing to the similarity of two: without those columns the
    # product stays small, where a wide one (thousands of stems) goes to multi-threaded BLAS,
    # whose thread wake-ups cost milliseconds. Only self-similarities (never compared) change.
    return rows[:, held > 1]


def _evidence(hits: list[Hit], query: str, vectors: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Matrices of same-subject evidence but relevance (row = the older or better hit, column =
    the candidate): without the value slots (identifiers, quantities), and their share. Repeats
    say the same thing, so neither supersedes the other."""
    import numpy as np

    n = len(hits)
    query_words = _words(query)
    terms = _stems(query)
    stems = [_features(h.text).stems for h in hits]
    # Value slots and change language are read where a hit speaks of the query's subject: a pack
    # of short turns often holds unrelated ones ("Renamed APP_DEBUG …" beside a remark on the
    # dashboard), whose values and verbs say nothing about it.
    features = [_features(_about(h.text, terms)) for h in hits]
    vectors = vectors if vectors is not None else _word_vectors(stems)
    evidence = _robust_z(vectors @ vectors.T)
    # Same words, same statement (by words, not vectors: "3 replicas" and "5 replicas" embed
    # almost alike but are a change).
    sizes = [len(s) for s in stems]
    for i in range(n):
        for j in range(i + 1, n):
            # Sets of unequal size cannot be alike enough: skip their intersection and union.
            small, large = (sizes[i], sizes[j]) if sizes[i] <= sizes[j] else (sizes[j], sizes[i])
            if small >= DUPLICATE * large and len(stems[i] & stems[j]) >= DUPLICATE * len(stems[i] | stems[j]):
                evidence[i, j] = evidence[j, i] = -np.inf
    # The query's subject: its terms, each weighted by its rarity among the candidates.
    weight = {t: float(np.log((n + 1) / (1 + sum(t in s for s in stems)))) for t in terms}
    covered = [{t for t in terms if t in s} for s in stems]
    for i in range(n):
        own = sum(weight[t] for t in covered[i])
        if own > 0:
            shared = np.array([sum(weight[t] for t in covered[i] & covered[j]) for j in range(n)])
            evidence[i] += SUBJECT_WEIGHT * shared / own
    # A new value in an identifier slot both hits fill.
    idents = [f.identifiers - query_words for f in features]
    named = [i for i in range(n) if idents[i]]
    slots = np.zeros((n, n), dtype=np.float32)
    for i in named:
        for j in named:
            if idents[j] - idents[i]:
                slots[i, j] = IDENTIFIER_WEIGHT
    # A new number for something both count.
    amounts = [f.quantities for f in features]
    counting = [i for i in range(n) if amounts[i]]
    for i in counting:
        for j in counting:
            if any(numbers - amounts[i].get(unit, numbers) for unit, numbers in amounts[j].items()):
                slots[i, j] += QUANTITY_WEIGHT
    change = np.array([f.change for f in features], dtype=np.float32)
    return evidence + CHANGE_WEIGHT * change[None, :], slots


def _ratio(hit: Hit, best: Hit) -> float:
    return min(hit.score / best.score, 1.0) if best.score > 0 else 1.0


def _joins(evidence: float, relevance: float) -> bool:
    return evidence + RELEVANCE_WEIGHT * relevance >= SAME_SUBJECT_EVIDENCE


@lru_cache(maxsize=1024)
def _is_repository(key: str) -> bool:
    from memlane import _core

    return _core.repository_root(key) == key


def _repository(hit: Hit) -> str:
    """The repository ``hit`` speaks of, ``""`` when unknown. A transcript's project is where
    its work happened; a note's is only where it is filed, so a notes library outside any
    repository (a journal across projects) says nothing of which repository a statement is
    about, while a note inside one (its ``docs/``) does."""
    if not hit.project or hit.source == "transcript" or _is_repository(hit.project):
        return hit.project
    return ""


def _elsewhere(hit: Hit, project: str) -> bool:
    """Whether ``hit`` speaks of another repository than ``project`` (unknown on either side
    is no sign of another one)."""
    return bool(project and (theirs := _repository(hit)) and theirs != project)


def _current_first(hits: list[Hit], query: str, vectors: np.ndarray | None) -> list[Hit]:
    """Group each dated hit, best first, with the other statements of its subject; the newest
    takes the group's first place (see the module docstring)."""
    if len(hits) < 2:
        return hits
    plain, slots = _evidence(hits, query, vectors)
    evidence = plain + slots
    top = max(h.score for h in hits)
    order = list(range(len(hits)))
    scores = [h.score for h in hits]
    grouped: set[int] = set()
    superseded: dict[int, str] = {}
    for best, hit in enumerate(hits):
        if best in grouped or not hit.timestamp:
            continue
        # Hits ranked above this one had their turn: it is the best of any group it starts.
        free = [
            j
            for j in range(best + 1, len(hits))
            if j not in grouped and hits[j].timestamp and hits[j].score >= RELEVANCE_RATIO * hit.score
        ]
        chain, project = [best], _repository(hit)
        while True:
            tip = chain[-1]
            newer = [
                j
                for j in free
                if (hits[j].timestamp or "") > (hits[tip].timestamp or "")
                and not _elsewhere(hits[j], project)
                and _joins(evidence[tip][j], _ratio(hits[j], hit))
            ]
            if not newer:
                break
            chain.append(max(newer, key=lambda j: (hits[j].score, -j)))
            project = project or _repository(hits[chain[-1]])
        older = [
            j
            for j in free
            if (hits[j].timestamp or "") < (hit.timestamp or "")
            and not _elsewhere(hits[j], project)
            and _joins(evidence[j][best], _ratio(hits[j], hit))
        ]
        group = chain + older
        if len(group) < 2:
            continue
        grouped.update(group)
        places = sorted(order.index(j) for j in group)
        newest_first = sorted(group, key=lambda j: (hits[j].timestamp or "", -j), reverse=True)
        taken = [scores[order[p]] for p in places]
        for place, j, score in zip(places, newest_first, taken):
            order[place] = j
            scores[j] = score
        newest = newest_first[0]
        for j in newest_first[1:]:
            # Value slots only reorder: a new identifier or number is too weak a sign to tell an
            # agent that a memory is outdated, so the pair must be one subject's without them.
            alike = max(plain[j][newest], plain[newest][j])
            if min(hits[j].score, hits[newest].score) >= MARK_RATIO * top and _joins(
                alike, _ratio(hits[newest], hits[j])
            ):
                superseded[j] = hits[newest].id
    return [replace(hits[i], score=scores[i], superseded_by=superseded.get(i)) for i in order]


def _time_affinity(hits: list[Hit], query: str) -> list[Hit]:
    whens = [_when(h) for h in hits]
    dates = [d for d in whens if d is not None]
    window = time_window(query, max(dates)) if dates else None
    if window is None:
        return hits
    boosted = []
    for hit, when in zip(hits, whens):
        near = affinity(when, window, TIME_LAG, TIME_SCALE)
        boosted.append(
            replace(hit, score=round(hit.score + TIME_BONUS * near, 6), scores={**hit.scores, "time": round(near, 3)})
        )
    # Equal scores by chunk id (hex of the key, zero-padded): the order fusion gives ties.
    return sorted(boosted, key=lambda h: (-h.score, h.id))


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


def rerank(
    hits: list[Hit], query: str, vectors: np.ndarray | None, *, recency: bool = True, temporal: bool = True
) -> list[Hit]:
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
        return _current_first(hits, query, vectors) if recency else hits
    return _time_affinity(hits, query) if temporal else hits
