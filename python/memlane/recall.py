"""Recall inside the agent loop: a token-budgeted block of what memory knows about a query.

Work in progress: the API below is the contract; the engine lands next.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlane.memory import Memory


@dataclass(frozen=True)
class RecallItem:
    """One recalled piece of memory with its provenance line."""

    id: str
    source: str
    text: str
    score: float
    provenance: str
    timestamp: str | None
    superseded: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class Recall:
    """The result of :meth:`memlane.Memory.recall`: the items and the assembled block."""

    query: str
    items: list[RecallItem] = field(default_factory=list)
    text: str = ""
    tokens: int = 0

    def __str__(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        return bool(self.items)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the CLI's ``--json`` shape)."""
        return {"query": self.query, "tokens": self.tokens, "text": self.text, "items": [i.to_dict() for i in self.items]}


def recall(mem: Memory, query: str, max_tokens: int = 15_000, *, half_life_days: float | None = None, include_brain: bool = True) -> Recall:
    """Brain entries and hybrid hits for ``query``, assembled within ``max_tokens``."""
    raise NotImplementedError


def session_snapshot(mem: Memory, session_id: str) -> str:
    """The always-injected block (brain, evolution, index summary), frozen per session."""
    raise NotImplementedError


def focus_query(mem: Memory, cwd: str | None = None, transcript_path: str | None = None) -> str:
    """The pre-session query: focus keywords from recent activity and open threads."""
    raise NotImplementedError
