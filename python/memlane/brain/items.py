"""Typed, cited items: what memory holds, by kind, each with where it came from.

Five types, each read from where memlane already keeps it (nothing is extracted twice):

- ``decision`` — MEMORY.md's Key Decisions (KD), as distillation or people wrote them;
- ``entity`` — its Reference/Context entries (RC): a thing and where it lives;
- ``claim`` — what was learnt or found: lessons (LL), incidents (COE) and EVOLUTION.md's
  corrections, competences and failed attempts (CR, CP, FA);
- ``task`` — open work: the agents' own plans (:mod:`memlane.brain.tasks`) and open threads (OT);
- ``note`` — a section of the knowledge library, found through the index
  (:meth:`memlane.Memory.items` adds them; this module knows no index).

An item's ``citation`` is its entry's ``Detail:`` provenance (``transcript SESSION turns A-B``,
``path § heading``) or, without one, the entry's own place (``MEMORY.md [KD07]``); a task cites its
session and transcript. ``confidence`` is the entry's (``high``, ``medium``, ``low``) when it says.

Example:
    >>> import tempfile
    >>> from memlane.brain import Brain
    >>> brain = Brain(tempfile.mkdtemp())
    >>> _ = brain.add("KD", "Billing uses Postgres 16.", detail="transcript s1 turns 2-3", confidence="high")
    >>> [(i.type, i.text, i.citation, i.confidence) for i in brain_items(brain, types=["decision"])]
    [('decision', 'Billing uses Postgres 16.', 'transcript s1 turns 2-3', 'high')]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from memlane.brain import tasks as task_memory
from memlane.brain.brain import Brain, keyword_scores
from memlane.brain.document import Entry
from memlane.brain.scopes import entry_project, in_project

TYPES = ("decision", "entity", "claim", "task", "note")
"""The item types, as ``memlane search --type`` takes them."""
_BY_SECTION = {
    "KD": "decision",
    "RC": "entity",
    "OT": "task",
    "LL": "claim",
    "COE": "claim",
    "CR": "claim",
    "CP": "claim",
    "FA": "claim",
}


@dataclass(frozen=True)
class Item:
    """One typed memory with its citation."""

    id: str
    """The entry key (KD07), task id (T…) or chunk id."""
    type: str
    text: str
    citation: str
    project: str | None = None
    confidence: str | None = None
    extracted: str | None = None
    """When it was written down (the entry's date, the task's last change, the note's time)."""
    score: float | None = None
    """How well it matched the query (absent when listed without one)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def _from_entry(e: Entry, score: float | None = None) -> Item:
    where = "EVOLUTION.md" if Path(e.source).name.startswith("EVOLUTION") else "MEMORY.md"
    return Item(
        e.key,
        _BY_SECTION[e.prefix],
        e.text,
        e.detail or f"{where} [{e.key}]",
        entry_project(e),
        e.meta.get("confidence"),
        e.date,
        score,
    )


def _from_task(t: task_memory.Task, score: float | None = None) -> Item:
    return Item(
        t.id,
        "task",
        f"[{t.status}] {t.description}",
        f"session {t.session_id} ({t.path})",
        t.project or None,
        None,
        t.updated,
        score,
    )


def brain_items(
    brain: Brain,
    home: str | PathLike[str] | None = None,
    *,
    types: Sequence[str] = TYPES,
    query: str | None = None,
    project: str | None = None,
    k: int | None = None,
) -> list[Item]:
    """The brain's items of ``types`` (and, with ``home``, its open tasks), in ``project`` when
    given, best match for ``query`` first (every item, in file order, without one).

    Superseded, resolved and withheld entries are not items: what is current is.
    """
    entries = [
        e
        for e in brain.entries(evolution=True)
        if e.prefix in _BY_SECTION
        and _BY_SECTION[e.prefix] in types
        and e.active
        and not e.resolved
        and not e.withheld
        and (project is None or in_project(e, [project]))
    ]
    found = [] if "task" not in types or home is None else task_memory.open_tasks(home, project)
    # The tasks are scored as entries are (their words, IDF-weighted), so both rank together.
    as_entries = [Entry(t.id, t.updated[:10], t.description) for t in found]
    by_id = {t.id: t for t in found}
    if query is None:
        items = [_from_entry(e) for e in entries] + [_from_task(t) for t in found]
    else:
        scored = keyword_scores(entries + as_entries, query)
        items = [_from_task(by_id[e.key], s) if e.key in by_id else _from_entry(e, s) for e, s in scored]
    return items[:k] if k is not None else items


def check_types(types: Iterable[str]) -> list[str]:
    """``types`` as a list, each one of :data:`TYPES`.

    Raises:
        InvalidArgumentError: An unknown type (one line naming the known ones).
    """
    from memlane._check import echo
    from memlane.errors import InvalidArgumentError

    out = list(types)
    for t in out:
        if t not in TYPES:
            raise InvalidArgumentError(f"unknown item type {echo(t)}: use {', '.join(TYPES)}")
    return out
