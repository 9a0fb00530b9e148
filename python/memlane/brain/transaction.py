"""One locked read-modify-write of a brain folder (:meth:`memlane.brain.Brain.transaction`).

A :class:`Transaction` reads each file once under the folder's lock, lets an operation edit the
parsed documents, then (on commit) regenerates the compact index, passes everything new through
the MemoryGuard as a whole, and replaces each changed file atomically: archives first,
MEMORY.md last, so a crash in between leaves an entry in both places, never in neither.

Example:
    >>> import tempfile
    >>> from memlane.brain import Brain
    >>> brain = Brain(tempfile.mkdtemp(), home=tempfile.mkdtemp())
    >>> with brain.transaction(on="2026-04-01") as txn:
    ...     txn.memory.entries()
    []
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from memlane._fs import atomic_write, read_text
from memlane.brain.document import Document, Schema, new_document, parse
from memlane.brain.guard import MemoryGuard, MemoryGuardError
from memlane.brain.keywords import index_line

__all__ = ["BrainFolder", "Transaction"]


class BrainFolder(Protocol):
    """What a transaction (and :func:`memlane.brain.check.check`) reads of a
    :class:`memlane.brain.Brain`: its folder, files, schemas, guard and event log."""

    dir: Path
    guard: MemoryGuard
    memory_schema: Schema
    evolution_schema: Schema

    @property
    def memory_path(self) -> Path: ...

    @property
    def evolution_path(self) -> Path: ...

    @property
    def archive_dir(self) -> Path: ...

    def log(self, type: str, **fields: Any) -> None: ...


class Transaction:
    """The files of one locked read-modify-write; see :meth:`memlane.brain.Brain.transaction`."""

    def __init__(self, brain: BrainFolder, today: str) -> None:
        self.brain = brain
        self.today = today
        self._docs: dict[Path, Document] = {}
        self._old: dict[Path, str] = {}
        self._new: dict[Path, str] = {}
        self.events: list[dict[str, Any]] = []

    def _read(self, path: Path) -> str:
        if path not in self._old:
            self._old[path] = read_text(path)
        return self._new.get(path, self._old[path])

    def doc(self, path: Path, schema: Schema, title: str | None = None) -> Document:
        """The parsed file, read once under the lock (a new file starts from the template)."""
        if path not in self._docs:
            text = self._read(path)
            if text:
                doc = parse(text, schema)
            elif title is not None:
                doc = Document(
                    schema,
                    preamble=[
                        f"# {title}\n",
                        "\n",
                        "Entries moved out by `memlane brain archive`: full text, never deleted.\n",
                        "\n",
                    ],
                )
            else:
                doc = new_document(schema)
            for e in doc.entries():
                e.source = str(path)
            self._docs[path] = doc
        return self._docs[path]

    @property
    def memory(self) -> Document:
        """MEMORY.md."""
        return self.doc(self.brain.memory_path, self.brain.memory_schema)

    @property
    def evolution(self) -> Document:
        """EVOLUTION.md."""
        return self.doc(self.brain.evolution_path, self.brain.evolution_schema)

    def archive(self, schema: Schema) -> Document:
        """This month's archive file for ``schema`` (MEMORY or EVOLUTION)."""
        month = self.today[:7]
        return self.doc(
            self.brain.archive_dir / f"{schema.title}-archive-{month}.md", schema, f"{schema.title} archive {month}"
        )

    def text(self, path: Path) -> str:
        """A plain file's current text inside this transaction."""
        return self._read(path)

    def put(self, path: Path, text: str) -> None:
        """Replace a plain file (a DailyActivity note) when the transaction commits."""
        self._read(path)
        self._new[path] = text

    def event(self, type: str, **fields: Any) -> None:
        """Queue an event; it is logged only if the transaction commits."""
        self.events.append({"type": type, **fields})

    def _pending(self) -> dict[Path, str]:
        out = dict(self._new)
        for path, doc in self._docs.items():
            if not self._old.get(path) and not doc.entries():
                continue  # reading a missing file is no reason to create it
            if path.parent == self.brain.dir:
                doc.set_index([index_line(e) for e in doc.entries()])
            out[path] = doc.render()
        return {p: t for p, t in out.items() if t != self._old.get(p, "")}

    def _commit(self) -> list[Path]:
        pending = self._pending()
        if not pending:
            return []
        guard = self.brain.guard
        # Judge the transaction as a whole: an entry moving from MEMORY.md to an archive adds
        # nothing new, but any line that appears only in the new text must pass.
        new_all = "\n".join(pending.values())
        old_all = "\n".join(self._old.get(p, "") for p in pending)
        findings = guard.new_findings(new_all, old_all)
        if findings:
            rules = {f.rule for f in findings}
            path = next(
                (
                    p
                    for p, t in pending.items()
                    if {f.rule for f in guard.new_findings(t, self._old.get(p, ""))} & rules
                ),
                None,
            )
            err = MemoryGuardError(findings, str(path) if path else None)
            for f in err.findings:
                self.brain.log("blocked", rule=f.rule, excerpt=f.excerpt, path=str(path) if path else None)
            raise err
        # Archives first, MEMORY.md last: a crash in between leaves an entry in both places,
        # never in neither.
        order = sorted(pending, key=lambda p: (p.parent == self.brain.dir, p.name == self.brain.memory_path.name))
        for path in order:
            atomic_write(path, pending[path])
        for ev in self.events:
            self.brain.log(**ev)
        for path in order:
            self.brain.log("write", path=str(path), bytes=len(pending[path].encode("utf-8")))
        return order
