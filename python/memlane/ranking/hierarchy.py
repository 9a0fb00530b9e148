"""Summaries never outrank their evidence: a matching summary hands its place to the children it cites.

A hit with ``source="summary"`` (a weekly, monthly, WISDOM.md or a wiki page) points to its
evidence with provenance at the end of each line (:mod:`memlane.brain.provenance`). When one
is among the results, :func:`place_evidence` asks ``fetch`` for the daily entries of the
periods it cites that match the query (the same hybrid search, restricted to the knowledge
library and those dates), keeps the ones it cites, and puts the best :data:`LIFT` of them in its
place: a child takes the summary's score (and ``relevance``) when that is higher than its own
("a parent that matches lifts its children"), carries the summary's heading as
``meta["context"]`` and its id as ``meta["via"]``, and the summary itself leaves the result.
A summary none of whose children matches stays, at its score (a wiki page at
:data:`WIKI_WEIGHT` of it): it is the only route to what it says. The cost: one restricted search per summary among the hits; none when there is
no summary.

Why: ranked on their own, summaries (which restate many days in few words) take the top places
and push out the daily entries that hold the details a question asks for.

Example:
    >>> place_evidence([], 10, fetch=lambda since, until: [])
    []
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.brain.provenance import Ref, brain_root, refs

if TYPE_CHECKING:
    from memlane.ranking.hit import Hit

__all__ = ["LIFT", "WIKI_WEIGHT", "cited", "place_evidence"]

# 1 rather than 2: on LoCoMo dev as dailies (benches/bench_timeline_locomo.py, BM25), 2 lifted entries per
# summary cost 0.2 points of recall_any@5 (a second child pushes a gold turn out); 1 costs none.
LIFT = 1
"""Children of one summary that may take its place (the best matching one)."""
WIKI_WEIGHT = 0.5
"""Score weight of a wiki page none of whose cited entries matched: high enough that the page
stays a route to what it says, low enough that it seldom sits above the entries that are the
evidence (the highest weight at which pages above the first piece of evidence stop falling;
benches/bench_timeline_locomo.py --dream measures it)."""

Fetch = Callable[[int, int], Sequence["Hit"]]
"""``fetch(since_ms, until_ms)``: the query's hits among knowledge chunks dated in ``[since, until)``."""

_DAILY = re.compile(r"^DailyActivity/(\d{4}-\d{2}-\d{2})\.md$")
_WEEKLY = re.compile(r"^Weekly/(\d{4})-W(\d{2})\.md$")
_MONTHLY = re.compile(r"^Monthly/(\d{4})-(\d{2})\.md$")
_ENTRY = re.compile(r"(\d{1,2}:\d{2})\b")


def cited(hit: Hit) -> list[Ref]:
    """The sources a summary hit's lines cite, first seen first."""
    return list(dict.fromkeys(r for line in hit.text.splitlines() for r in refs(line)))


def _days(ref: Ref) -> tuple[date, date] | None:
    """First and last day a cited file covers."""
    if m := _DAILY.match(ref.path):
        d = date.fromisoformat(m.group(1))
        return d, d
    if m := _WEEKLY.match(ref.path):
        monday = date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
        return monday, monday + timedelta(days=6)
    if m := _MONTHLY.match(ref.path):
        first = date(int(m.group(1)), int(m.group(2)), 1)
        nxt = date(first.year + first.month // 12, first.month % 12 + 1, 1)
        return first, nxt - timedelta(days=1)
    return None


def _ms(d: date) -> int:
    return int(datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp() * 1000)


def _is_child(hit: Hit, root: Path, sources: list[Ref], spans: list[tuple[date, date]]) -> bool:
    """Whether a daily entry hit is one the summary cites (an entry, a whole daily, or a day in a cited week or month)."""
    try:
        rel = Path(hit.path).relative_to(root).as_posix()
    except ValueError:
        return False
    m = _DAILY.match(rel)
    if not m:
        return False
    entry = _ENTRY.match(hit.heading.rsplit(" › ", 1)[-1])
    for r in sources:
        if r.path == rel and (r.entry is None or (entry is not None and entry.group(1) == r.entry)):
            return True
    day = date.fromisoformat(m.group(1))
    return any(first <= day <= last for (first, last), r in zip(spans, sources) if not _DAILY.match(r.path))


def _children(parent: Hit, fetch: Fetch) -> list[Hit]:
    sources = [r for r in cited(parent) if _days(r) is not None]
    if not sources:
        return []
    spans = [_days(r) for r in sources]
    since = min(s[0] for s in spans if s)
    until = max(s[1] for s in spans if s) + timedelta(days=1)
    root = brain_root(Path(parent.path))
    return [h for h in fetch(_ms(since), _ms(until)) if _is_child(h, root, sources, spans)]  # type: ignore[arg-type]


def _lifted_relevance(kid: Hit, parent: Hit) -> float | None:
    """A child found through a summary is as relevant as the summary was: recall's item floor
    (:mod:`memlane.ranking.relevance`) must not drop the evidence of a summary it would keep."""
    known = [r for r in (kid.relevance, parent.relevance) if r is not None]
    return max(known) if known else None


def place_evidence(hits: Sequence[Hit], k: int, *, fetch: Fetch) -> list[Hit]:
    """Hand each summary hit's place to the best children it cites (see the module doc).

    Args:
        hits: Fused hits, best first.
        k: Hits wanted.
        fetch: The query's hits among dated knowledge chunks in a time range.

    Returns:
        At most ``k`` hits, best first, no summary above a child it cites.
    """
    if not any(h.source == "summary" for h in hits):
        return list(hits[:k])
    placed: dict[str, Hit] = {}
    order: list[str] = []

    def put(hit: Hit) -> None:
        prior = placed.get(hit.id)
        if prior is None:
            order.append(hit.id)
            placed[hit.id] = hit
        else:
            # The higher score stands; the first summary that led to the hit stays its context.
            best = hit if hit.score > prior.score else prior
            placed[hit.id] = replace(best, meta={**hit.meta, **prior.meta})

    for hit in hits:
        if hit.source != "summary":
            put(hit)
            continue
        kids = _children(hit, fetch)[:LIFT]
        if not kids:
            is_wiki = (hit.meta.get("frontmatter") or {}).get("type") == "wiki"
            put(replace(hit, score=round(hit.score * WIKI_WEIGHT, 6)) if is_wiki else hit)
            continue
        for rank, kid in enumerate(kids):
            own = placed[kid.id].score if kid.id in placed else None
            lifted = round(hit.score - rank * 1e-6, 6)
            score = lifted if own is None else max(own, lifted)
            put(
                replace(
                    kid,
                    score=score,
                    relevance=_lifted_relevance(kid, hit),
                    meta={**kid.meta, "context": hit.heading, "via": hit.id},
                )
            )
    # Stable: equal scores keep their order of arrival (the evidence came before its summary).
    ranked = sorted(order, key=lambda i: -placed[i].score)
    return [placed[i] for i in ranked[:k]]
