"""What a forgotten session leaves in the brain: the entries and daily notes distilled from it.

Forgetting a session (``memlane forget --session ID``) takes its chunks out of the index, but
distillation may have written about it: MEMORY.md and EVOLUTION.md entries whose ``Detail:``
line cites ``transcript ID turns A-B``, and the ``## HH:MM | topic`` entry of a DailyActivity
note that carries the session's marker. :func:`citing` lists those that cite that session and no
other (an entry that also cites another session keeps its other evidence, so it stays);
:func:`remove_citing` removes them in one brain transaction.

Example:
    >>> import tempfile
    >>> from memlane.brain import Brain
    >>> brain = Brain(tempfile.mkdtemp())
    >>> _ = brain.add("KD", "Billing uses Postgres.", detail="transcript s1 turns 2-3 · DailyActivity/2026-03-02.md")
    >>> _ = brain.add("KD", "Search runs on tantivy.", detail="transcript s2 turns 1-1")
    >>> [e.key for e in citing(brain, "s1").entries]
    ['KD01']
    >>> [e.key for e in remove_citing(brain, "s1").entries], [e.key for e in brain.entries()]
    (['KD01'], ['KD02'])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from memlane._fs import read_text
from memlane.brain.brain import Brain
from memlane.brain.document import Entry

_CITED = re.compile(r"\btranscript (\S+) turns\b")
_HEADING = re.compile(r"^## ")


@dataclass
class Citations:
    """What in the brain cites one session alone."""

    entries: list[Entry] = field(default_factory=list)
    """MEMORY.md and EVOLUTION.md entries (archived ones too)."""
    daily: list[tuple[Path, str]] = field(default_factory=list)
    """DailyActivity entries: (note, the entry's heading)."""

    def __bool__(self) -> bool:
        return bool(self.entries or self.daily)


def _cites_only(entry: Entry, session_id: str) -> bool:
    cited = set(_CITED.findall(entry.detail or ""))
    return cited == {session_id}


def _daily_sections(text: str, session_id: str) -> list[tuple[int, int]]:
    """Line ranges ``[start, end)`` of the ``##`` entries of a daily note that carry the
    session's marker."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if _HEADING.match(line)] + [len(lines)]
    marker = f"memlane:session id={session_id} "
    return [(a, b) for a, b in zip(starts, starts[1:]) if any(marker in line for line in lines[a:b])]


def citing(brain: Brain, session_id: str) -> Citations:
    """The brain entries and daily-note entries that cite ``session_id`` and no other session."""
    found = Citations(
        entries=[e for e in brain.entries(include_archived=True, evolution=True) if _cites_only(e, session_id)]
    )
    for note in sorted(brain.daily_dir.glob("*.md")) if brain.daily_dir.is_dir() else []:
        text = read_text(note)
        lines = text.splitlines()
        found.daily += [(note, lines[a].lstrip("# ").strip()) for a, _ in _daily_sections(text, session_id)]
    return found


def remove_citing(brain: Brain, session_id: str) -> Citations:
    """Remove what :func:`citing` finds, in one brain transaction; returns what went."""
    found = citing(brain, session_id)
    if not found:
        return found
    keys = {e.key for e in found.entries}
    with brain.transaction() as txn:
        for e in found.entries:  # MEMORY.md, EVOLUTION.md or one of their monthly archives
            schema = brain.evolution_schema if Path(e.source).name.startswith("EVOLUTION") else brain.memory_schema
            txn.doc(Path(e.source), schema).remove(e.key)
        for note in {n for n, _ in found.daily}:
            lines = txn.text(note).splitlines(keepends=True)
            for a, b in reversed(_daily_sections("".join(lines), session_id)):
                del lines[a:b]
            txn.put(note, "".join(lines))
        txn.event("forget", session_id=session_id, entries=sorted(keys), daily=len(found.daily))
    return found
