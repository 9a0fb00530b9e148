"""A search hit: one fused result with its provenance and score breakdown.

Example:
    >>> h = Hit("c1", "transcript", "exit code 137", 0.8, {"bm25": 1.0, "vector": 0.7}, "/x/s1.jsonl", "s1", 3, 4, None, "")
    >>> h.to_dict()["scores"]
    {'bm25': 1.0, 'vector': 0.7}
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any

__all__ = ["Hit"]

_EPOCH = datetime(1970, 1, 1)


def _iso(ms: int | None) -> str | None:
    """Epoch milliseconds as ISO-8601 UTC, ``Z``-suffixed (naive arithmetic: twice as fast as a
    timezone-aware ``fromtimestamp``, and the same text).

    Example:
        >>> _iso(1773652500123), _iso(0)
        ('2026-03-16T09:15:00.123000Z', '1970-01-01T00:00:00Z')
    """
    if ms is None:
        return None
    return (_EPOCH + timedelta(milliseconds=ms)).isoformat() + "Z"


@dataclass(frozen=True)
class Hit:
    """One search result with its provenance.

    Attributes:
        id: Chunk id (hex of the content key).
        source: ``transcript`` | ``knowledge`` | ``summary`` (compaction and wiki pages) | ``brain``.
        text: The chunk text.
        score: Fused score used for ranking (on present-state questions the newest statement of a
            subject takes the score of the earlier one it displaces, see :mod:`memlane.ranking.rerank`).
        scores: Breakdown: ``bm25`` (normalised to the query's best), ``vector`` (cosine) and
            ``coverage`` (BM25 over the most the query could score: the share of its informative
            terms the chunk holds).
        path: Source file.
        session_id: Session the turns belong to (empty for knowledge chunks).
        turn_start: First turn index in the session (knowledge: the section's index in its note).
        turn_end: Last turn index (inclusive).
        timestamp: ISO-8601 UTC time of the first turn (knowledge: of the entry or note), if known.
        heading: Heading path ``Title › Section`` (knowledge chunks), else empty; knowledge chunks
            also carry ``kind``, ``title``, ``tags``, ``frontmatter``, ``line_start``/``line_end`` in ``meta``.
        superseded_by: Id of a newer hit in this result that says something else about the same
            subject (present-state questions), so this one is an earlier statement; else None.
        relevance: How relevant the hit is on an absolute scale, the same from query to query
            (see :mod:`memlane.ranking.relevance`); None for a chunk looked up rather than matched.
        project: The project the chunk is filed under: the repository root of the directory its
            turns were written in (a note: of its library folder), else that directory; empty
            when unknown (a chat export, a home indexed before projects were recorded).
        branch: The git branch the turns were written on, when the source records it.
    """

    id: str
    source: str
    text: str
    score: float
    scores: dict[str, float | None]
    path: str
    session_id: str
    turn_start: int
    turn_end: int
    timestamp: str | None
    heading: str
    superseded_by: str | None = None
    relevance: float | None = None
    project: str = ""
    branch: str = ""
    meta: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _from_core(cls, d: dict[str, Any]) -> Hit:
        # Every field set at once, past the frozen dataclass's ``__init__`` (which sets each
        # through ``object.__setattr__``): 14 µs a hit instead of 24, and a search makes 13.
        hit = object.__new__(cls)
        hit.__dict__.update(
            id=d["id"],
            source=d["source"],
            text=d["text"],
            score=round(float(d["score"]), 6),
            scores={"bm25": d["bm25"], "vector": d["vector"], "coverage": d.get("coverage")},
            path=d["path"],
            session_id=d["session_id"],
            turn_start=d["turn_start"],
            turn_end=d["turn_end"],
            timestamp=_iso(d["timestamp"]),
            heading=d["heading"],
            superseded_by=None,
            relevance=None if d.get("relevance") is None else round(float(d["relevance"]), 6),
            project=d.get("project", ""),
            branch=d.get("branch", ""),
            meta={
                **(d.get("meta") or {}),
                "format": d["format"],
                "role": d["role"],
                "timestamp_end": _iso(d["timestamp_end"]),
            },
        )
        return hit

    @classmethod
    def _from_stored(cls, chunk: dict[str, Any]) -> Hit:
        """A stored chunk (``Store.get``) as a hit that was looked up, not matched: no scores."""
        return cls._from_core({**chunk, "score": 0.0, "bm25": None, "vector": None})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the CLI's ``--json`` shape), sharing nothing with the hit.

        Field by field: ``dataclasses.asdict`` deep-copies through ``copy.deepcopy``, which costs
        a served search a noticeable share of its own time.
        """
        out = {name: getattr(self, name) for name in _FIELD_NAMES}
        out["scores"] = dict(self.scores)
        out["meta"] = _copied(self.meta)
        return out


_FIELD_NAMES = tuple(f.name for f in fields(Hit))


def _copied(value: Any) -> Any:
    """A copy of a JSON-like value (dicts and lists copied all the way down)."""
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copied(v) for v in value]
    return value
