"""The :class:`Brain`: MEMORY.md and EVOLUTION.md with temporal validity, archives and checks.

The brain folder (default ``<memlane home>/brain``; override with ``Brain(brain_dir)``,
``--brain DIR`` or ``$MEMLANE_BRAIN_DIR``, e.g. to keep MEMORY.md in your own notes
folder) holds::

    MEMORY.md                           L1, always injected: curated entries with stable keys
    EVOLUTION.md                        L2, always injected: corrections, competences, failures
    DailyActivity/YYYY-MM-DD.md         L3: one section per distilled session
    Archives/MEMORY-archive-YYYY-MM.md  entries moved out of MEMORY.md; never deleted

Every change runs in a :meth:`Brain.transaction`: it holds the folder's lock, re-reads the
files, lets the operation edit them, regenerates the compact index, passes the new text
through :class:`~memlane.brain.guard.MemoryGuard` and replaces each file atomically.

Example:
    >>> import tempfile
    >>> brain = Brain(tempfile.mkdtemp(), home=tempfile.mkdtemp())
    >>> kd = brain.add("kd", "Billing stores invoices in Postgres.", on="2026-04-01")
    >>> new = brain.supersede(kd.key, "Billing moved from Postgres to DynamoDB.", on="2026-04-10")
    >>> [(e.key, e.superseded, e.weight) for e in brain.entries()]
    [('KD01', True, 0.1), ('KD02', False, 1.0)]
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import date as Date
from os import PathLike
from pathlib import Path
from typing import Any

from memlane import secrets
from memlane._check import echo
from memlane._fs import atomic_write, brain_lock, read_text
from memlane._paths import default_brain_dir, default_home
from memlane.brain.check import Problem, check
from memlane.brain.document import (
    EVOLUTION_SCHEMA,
    MEMORY_SCHEMA,
    Document,
    Entry,
    Schema,
    SectionSpec,
    parse,
)
from memlane.brain.guard import Finding, MemoryGuard
from memlane.brain.keywords import keyword_scores
from memlane.brain.scopes import classify, in_project
from memlane.brain.transaction import Transaction
from memlane.errors import InvalidArgumentError, MemlaneError
from memlane.events import EventLog

__all__ = [
    "ARCHIVE_DIR",
    "CHAR_CAPS_ENV",
    "DAILY_DIR",
    "EVOLUTION_FILE",
    "MAX_REFERENCES",
    "MEMORY_FILE",
    "VERDICTS_FILE",
    "Brain",
    "CapError",
    "Problem",
    "Transaction",
    "default_brain_dir",
    "keyword_scores",
    "parse_caps",
]

MEMORY_FILE = "MEMORY.md"
EVOLUTION_FILE = "EVOLUTION.md"
ARCHIVE_DIR = "Archives"
DAILY_DIR = "DailyActivity"
VERDICTS_FILE = "guard-verdicts.json"
"""In the home: MemoryGuard read verdicts by content hash (hooks re-read MEMORY.md in every process)."""
_MAX_VERDICTS = 4096
MAX_REFERENCES = 3
CHAR_CAPS_ENV = "MEMLANE_CHAR_CAPS"
"""Character caps for every brain of this environment: ``KD=3000,LL=none``."""
_INHERITED = ("type", "scope", "project")


def _today(on: Date | str | None) -> str:
    if on is None:
        return Date.today().isoformat()
    if isinstance(on, Date):
        return on.isoformat()
    try:
        return Date.fromisoformat(on).isoformat()
    except ValueError:
        raise InvalidArgumentError(f"bad date {on!r}: use YYYY-MM-DD") from None


def _one_line(text: str, what: str) -> str:
    line = " ".join(text.split())
    if not line:
        raise InvalidArgumentError(f"{what} is empty")
    return line


def _meta_value(value: str) -> str:
    # "|" separates metadata fields and "-->" would close the comment.
    return " ".join(value.replace("|", "/").replace("-->", "->").split())


def parse_caps(values: Iterable[str], what: str = "--cap") -> dict[str, int | None]:
    """``{"KD": 40, "RC": None}`` from ``["KD=40", "RC=none"]`` (``none``: no cap).

    Raises:
        memlane.errors.InvalidArgumentError (a ValueError): Not ``PREFIX=N`` with a whole, non-negative N (or ``none``).

    Example:
        >>> parse_caps(["kd=40", "RC=none"])
        {'KD': 40, 'RC': None}
    """
    caps: dict[str, int | None] = {}
    for value in values:
        key, sep, n = value.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f"{what} takes PREFIX=N (like KD=40 or RC=none), not {value!r}")
        if n.strip().lower() == "none":
            caps[key.strip().upper()] = None
            continue
        try:
            cap = int(n)
        except ValueError:
            raise InvalidArgumentError(f"{what} {value!r}: N must be a whole number or none") from None
        if cap < 0:
            raise InvalidArgumentError(f"{what} {value!r}: N must not be negative")
        caps[key.strip().upper()] = cap
    return caps


class CapError(MemlaneError, ValueError):
    """A write would take a section past its character cap; nothing was written."""


def _section_chars(doc: Document, prefix: str) -> int:
    return sum(len(e.render()) for e in doc.entries() if e.prefix == prefix)


def _age(e: Entry) -> tuple[str, int]:
    return (e.meta.get("valid_until") or e.date or "", e.number)


class Brain:
    """MEMORY.md, EVOLUTION.md, their archives and the DailyActivity notes in one folder.

    Args:
        brain_dir: The brain folder (default :func:`default_brain_dir`).
        home: The memlane home for the events log (default ``$MEMLANE_HOME``).
        caps: Per-section caps by key prefix, e.g. ``{"KD": 40, "RC": 20}``.
        guard: The write guard (default :class:`MemoryGuard` with every rule).
        char_caps: Per-section character caps by key prefix, over ``$MEMLANE_CHAR_CAPS`` and
            the defaults (:data:`~memlane.brain.document.MEMORY_SCHEMA`).

    Example:
        >>> import tempfile
        >>> b = Brain(tempfile.mkdtemp(), home=tempfile.mkdtemp(), caps={"OT": 2})
        >>> b.add("open threads", "Find why the nightly export is slow.", on="2026-04-01").key
        'OT01'
        >>> b.resolve("OT01", note="an index was missing", on="2026-04-03").meta["status"]
        'resolved'
    """

    def __init__(
        self,
        brain_dir: str | PathLike[str] | None = None,
        *,
        home: str | PathLike[str] | None = None,
        caps: dict[str, int | None] | None = None,
        guard: MemoryGuard | None = None,
        char_caps: dict[str, int | None] | None = None,
    ) -> None:
        self.home = Path(home).expanduser() if home is not None else default_home()
        self.dir = Path(brain_dir).expanduser() if brain_dir is not None else default_brain_dir(self.home)
        chars = parse_caps(filter(None, os.environ.get(CHAR_CAPS_ENV, "").split(",")), CHAR_CAPS_ENV) | {
            k.upper(): v for k, v in (char_caps or {}).items()
        }

        def split(table: dict[str, int | None]) -> tuple[dict[str, int | None], dict[str, int | None]]:
            return ({k: v for k, v in table.items() if MEMORY_SCHEMA.by_prefix(k)},
                    {k: v for k, v in table.items() if not MEMORY_SCHEMA.by_prefix(k)})  # fmt: skip

        (memory_caps, evolution_caps), (memory_chars, evolution_chars) = split(caps or {}), split(chars)
        self.memory_schema = MEMORY_SCHEMA.with_caps(memory_caps).with_char_caps(memory_chars)
        self.evolution_schema = EVOLUTION_SCHEMA.with_caps(evolution_caps).with_char_caps(evolution_chars)
        self.guard = guard or MemoryGuard()
        self.events = EventLog(self.home)
        self._verdicts: dict[str, str | None] | None = None
        self._verdicts_dirty = False

    # -- paths ---------------------------------------------------------------------------

    @property
    def memory_path(self) -> Path:
        """``<brain>/MEMORY.md``."""
        return self.dir / MEMORY_FILE

    @property
    def evolution_path(self) -> Path:
        """``<brain>/EVOLUTION.md``."""
        return self.dir / EVOLUTION_FILE

    @property
    def archive_dir(self) -> Path:
        """``<brain>/Archives``."""
        return self.dir / ARCHIVE_DIR

    @property
    def daily_dir(self) -> Path:
        """``<brain>/DailyActivity``."""
        return self.dir / DAILY_DIR

    def log(self, type: str, **fields: Any) -> None:
        """Append a memory event to the home's events log."""
        self.events.append(type, **fields)

    def _spec(self, section: str) -> tuple[SectionSpec, bool]:
        """A section by name or prefix, and whether it lives in EVOLUTION.md."""
        spec = self.memory_schema.lookup(section)
        if spec is not None:
            return spec, False
        spec = self.evolution_schema.lookup(section)
        if spec is not None:
            return spec, True
        names = [f"{s.prefix} ({s.name})" for s in self.memory_schema.sections + self.evolution_schema.sections]
        raise InvalidArgumentError(f"unknown section {section!r}; use one of: {', '.join(names)}")

    def _schema_of(self, key: str) -> Schema:
        prefix = re.sub(r"\d+$", "", key.upper())
        if self.memory_schema.by_prefix(prefix):
            return self.memory_schema
        if self.evolution_schema.by_prefix(prefix):
            return self.evolution_schema
        raise InvalidArgumentError(f"{key!r} is not an entry key (like KD07, LL12, OT03, CR02)")

    # -- transactions --------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, on: Date | str | None = None) -> Iterator[Transaction]:
        """Lock the folder, yield its files for editing, then guard and write what changed.

        Nothing is written if the block raises or the guard blocks any of the new text.

        Raises:
            MemoryGuardError: A write would add text a guard rule forbids.
            BrainLockedError: Another writer held the lock too long.
        """
        with brain_lock(self.dir):
            txn = Transaction(self, _today(on))
            yield txn
            txn._commit()

    # -- reading -------------------------------------------------------------------------

    def _withheld(self, text: str) -> str | None:
        """:meth:`MemoryGuard.withheld`, remembered in the home by content hash.

        Screening a MEMORY.md costs tens of milliseconds (benches/bench_guard.py), and every
        hook is a new process that reads it: each text is judged once per rule set.
        """
        if not text.strip():
            return None
        if self._verdicts is None:
            self._verdicts = {}
            with contextlib.suppress(OSError, ValueError, AttributeError):
                saved = json.loads((self.home / VERDICTS_FILE).read_text(encoding="utf-8"))
                if saved.get("rules") == self.guard.fingerprint:
                    self._verdicts = dict(saved["verdicts"])
        key = hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
        if key not in self._verdicts:
            self._verdicts[key] = self.guard.withheld(text)
            self._verdicts_dirty = True
        return self._verdicts[key]

    def _save_verdicts(self) -> None:
        if not self._verdicts_dirty or self._verdicts is None:
            return
        recent = dict(list(self._verdicts.items())[-_MAX_VERDICTS:])
        # A cache: a failed write (read-only home) only costs the next process a scan.
        with contextlib.suppress(OSError):
            atomic_write(self.home / VERDICTS_FILE, json.dumps({"rules": self.guard.fingerprint, "verdicts": recent}))
            self._verdicts_dirty = False

    def _read_doc(self, path: Path, schema: Schema, text: str | None = None) -> Document:
        text = read_text(path) if text is None else text
        doc = parse(text, schema)
        for e in doc.entries():
            e.source = str(path)
        # One scan of the whole file clears the usual case; only a file that fails it is
        # screened entry by entry.
        if self._withheld(text) is not None:
            for e in doc.entries():
                e.withheld = self._withheld(e.render())
        self._save_verdicts()
        return doc

    def _screened(self, path: Path, schema: Schema, project: Sequence[str] | None = None) -> str:
        """A brain file as it may be injected: failing entries and paragraphs withheld, secrets
        masked; with ``project`` (its keys), entries bound to another project left out.

        An entry that fails the guard on read (a hand edit) becomes ``- [KD07] withheld: RULE``
        (its index line too); other failing paragraphs become ``(withheld: RULE)``.
        """
        text = read_text(path)
        clean = self._withheld(text) is None
        doc = self._read_doc(path, schema, text) if project is not None or not clean else None
        elsewhere = (
            {e.key for e in doc.entries() if not in_project(e, project)}
            if doc is not None and project is not None
            else set()
        )
        if clean and not elsewhere:
            self._save_verdicts()
            return secrets.mask(text)
        assert doc is not None  # read above whenever the text is not clean or a project is given
        held = {e.key: e.withheld for e in doc.entries() if e.withheld}
        out: list[str] = []
        paragraph: list[str] = []

        def flush() -> None:
            rule = self._withheld("".join(paragraph)) if paragraph else None
            out.extend([f"(withheld: {rule})\n"] if rule else paragraph)
            paragraph.clear()

        def raw(line: str) -> None:
            m = re.match(r"- \[([A-Z]{2,4}\d+)\]", line)
            if m and m.group(1) in elsewhere:  # another project's entry, in the compact index
                return
            if m and m.group(1) in held:  # the entry's line in the compact index
                flush()
                out.append(f"- [{m.group(1)}] withheld: {held[m.group(1)]}\n")
            elif not line.strip() or line.startswith("#"):
                flush()
                out.append(line)
            else:
                paragraph.append(line)

        for line in doc.preamble:
            raw(line)
        for section in doc.sections:
            raw(section.heading)
            for node in section.body:
                if not isinstance(node, Entry):
                    raw(node)
                    continue
                if node.key in elsewhere:
                    continue
                flush()
                out.extend([f"- [{node.key}] withheld: {node.withheld}\n"] if node.withheld else node.lines())
        flush()
        screened = "".join(line if line.endswith("\n") else line + "\n" for line in out)
        rule = self._withheld(screened)
        self._save_verdicts()
        if rule:
            # What is left still fails (an attack spread over entries and prose): hold it all.
            return f"({path.name} withheld: MemoryGuard rule {rule}; run `memlane brain check`)\n"
        return secrets.mask(screened)

    def memory(self) -> Document:
        """MEMORY.md, parsed (an empty document if the file does not exist yet)."""
        doc = self._read_doc(self.memory_path, self.memory_schema)
        self.log("read", path=str(self.memory_path), entries=len(doc.entries()))
        return doc

    def evolution(self) -> Document:
        """EVOLUTION.md, parsed."""
        doc = self._read_doc(self.evolution_path, self.evolution_schema)
        self.log("read", path=str(self.evolution_path), entries=len(doc.entries()))
        return doc

    def _archived(self) -> list[Entry]:
        out: list[Entry] = []
        for path in sorted(self.archive_dir.glob("*-archive-*.md")):
            schema = self.evolution_schema if path.name.startswith(EVOLUTION_SCHEMA.title) else self.memory_schema
            out += self._read_doc(path, schema).entries()
        return out

    def _all_entries(self, include_archived: bool) -> list[Entry]:
        entries = self._read_doc(self.memory_path, self.memory_schema).entries()
        entries += self._read_doc(self.evolution_path, self.evolution_schema).entries()
        if include_archived:
            entries += self._archived()
        return entries

    def entries(self, *, include_archived: bool = False, evolution: bool = False) -> list[Entry]:
        """Entries of MEMORY.md (and EVOLUTION.md, archives on request) with their state.

        Each entry carries ``superseded``, ``active`` and ``weight`` (0.1 when superseded),
        ``section`` and ``source`` — what recall needs to index the brain.

        Args:
            include_archived: Add entries moved to ``Archives/``.
            evolution: Add EVOLUTION.md entries.
        """
        entries = self._read_doc(self.memory_path, self.memory_schema).entries()
        if evolution:
            entries += self._read_doc(self.evolution_path, self.evolution_schema).entries()
        if include_archived:
            entries += [e for e in self._archived() if evolution or self.memory_schema.by_prefix(e.prefix)]
        self.log("read", path=str(self.dir), entries=len(entries))
        return entries

    def get(self, key: str) -> Entry | None:
        """The entry ``key`` from MEMORY.md, EVOLUTION.md or the archives."""
        key = key.upper()
        entry = next((e for e in self._all_entries(True) if e.key == key), None)
        self.log("read", path=entry.source if entry else str(self.dir), key=key, entries=int(entry is not None))
        return entry

    def load(self, key: str, max_references: int = MAX_REFERENCES) -> list[Entry]:
        """An entry and the entries it references (1 hop, at most ``max_references``).

        References are keys mentioned in its text first, then its supersession links, so a
        superseded decision always brings the one that replaced it.

        Raises:
            KeyError: No entry has this key.
        """
        every = {e.key: e for e in reversed(self._all_entries(True))}
        entry = every.get(key.upper())
        if entry is None:
            raise KeyError(f"no entry {echo(key.upper())} in {self.dir}")
        links = [*entry.references(), entry.superseded_by, entry.supersedes]
        refs = [every[k] for k in dict.fromkeys(k for k in links if k and k != entry.key) if k in every]
        out = [entry, *refs[:max_references]]
        self.log("read", path=entry.source, key=entry.key, entries=len(out))
        return out

    def inject(self, project: Sequence[str] | None = None) -> str:
        """MEMORY.md then EVOLUTION.md, in full: the block a session starts with.

        Entries that fail the MemoryGuard on read are withheld (``- [KD07] withheld: RULE``)
        and secrets are masked: this text goes into every session. With ``project`` (the
        session's project key, or keys), entries bound to another project are left out
        (:func:`~memlane.brain.scopes.in_project`): user and feedback entries come always,
        project entries only in their project.
        """
        texts = (
            self._screened(self.memory_path, self.memory_schema, project),
            self._screened(self.evolution_path, self.evolution_schema, project),
        )
        parts = [t.rstrip("\n") + "\n" for t in texts if t.strip()]
        self.log("read", path=str(self.dir), bytes=sum(len(p) for p in parts))
        return "\n".join(parts)

    def search(self, query: str, k: int = 10, *, include_archived: bool = True) -> list[tuple[Entry, float]]:
        """Keyword search over brain entries, superseded ones weighted 0.1.

        A light stand-in until the hybrid index covers the brain: the score is the share of
        the query's IDF mass an entry matches, times the entry's weight.

        Example:
            >>> import tempfile
            >>> b = Brain(tempfile.mkdtemp(), home=tempfile.mkdtemp())
            >>> _ = b.add("kd", "Billing uses Postgres.", on="2026-04-01")
            >>> [(e.key, round(s, 2)) for e, s in b.search("postgres billing")]
            [('KD01', 1.0)]
        """
        out = keyword_scores(self._all_entries(include_archived), query)[:k]
        self.log("search", query=query, results=len(out), path=str(self.dir))
        return out

    # -- writing -------------------------------------------------------------------------

    def _next_key(self, txn: Transaction, spec: SectionSpec, evolution: bool) -> str:
        # Keys are never reused: count this transaction's files (an entry may have moved to
        # an archive not written yet) and every archive on disk.
        docs = [txn.evolution if evolution else txn.memory, *txn._docs.values()]
        used = [e.number for d in docs for e in d.entries() if e.prefix == spec.prefix]
        used += [e.number for e in self._archived() if e.prefix == spec.prefix]
        return f"{spec.prefix}{max(used, default=0) + 1:02d}"

    def _new_entry(
        self,
        txn: Transaction,
        spec: SectionSpec,
        evolution: bool,
        text: str,
        detail: str | None,
        meta: dict[str, str],
    ) -> Entry:
        doc = txn.evolution if evolution else txn.memory
        entry = Entry(
            self._next_key(txn, spec, evolution),
            txn.today,
            _one_line(text, "the entry text"),
            _one_line(detail, "detail") if detail else None,
            {"valid_from": txn.today, **{k: _meta_value(v) for k, v in meta.items() if v}},
            source=str(self.evolution_path if evolution else self.memory_path),
        )
        doc.add(spec, entry)
        return entry

    def add(
        self,
        section: str,
        text: str,
        *,
        detail: str | None = None,
        confidence: str | None = None,
        aliases: Iterable[str] = (),
        meta: dict[str, str] | None = None,
        on: Date | str | None = None,
        type: str | None = None,
        scope: str | None = None,
        project: str | None = None,
    ) -> Entry:
        """Add an entry with the section's next key, ``valid_from`` today.

        If the section goes over its cap, :meth:`archive` moves what its policy allows; past
        its character cap, the write fails. :meth:`advise` says whether the text is something
        the repository already holds (a warning, not a refusal).

        Args:
            section: Prefix or heading: ``kd``, ``Key Decisions``, ``LL``, ``open threads``,
                ``CR`` (EVOLUTION.md: ``CR`` corrections, ``CP`` competences, ``FA`` failed attempts).
            text: One line (whitespace is collapsed).
            detail: Provenance: ``path § heading`` or ``transcript SESSION turns A-B``.
            confidence: ``high``, ``medium``, ``low``…
            aliases: Extra keywords for the index.
            meta: More metadata fields.
            on: The date (default today).
            type: ``user``, ``feedback``, ``project`` or ``reference`` (default: the section's,
                see :mod:`memlane.brain.scopes`).
            scope: ``private`` or ``team`` (default: the type's).
            project: The project a project or reference entry is bound to (a key or a name;
                the name is stored): it is injected only in that project's sessions.

        Returns:
            The new entry.

        Raises:
            memlane.errors.InvalidArgumentError (a ValueError): Unknown section, empty text, a
                type, scope or project the rules refuse.
            CapError: The section would pass its character cap (a ValueError); nothing is written.
            MemoryGuardError: The text trips a guard rule; nothing is written.
        """
        spec, evolution = self._spec(section)
        fields = dict(meta or {}) | classify(spec.prefix, type, scope, project)
        if confidence:
            fields["confidence"] = confidence
        if aliases := [a for a in aliases if a.strip()]:
            fields["aliases"] = ", ".join(aliases)
        with self.transaction(on) as txn:
            entry = self._new_entry(txn, spec, evolution, text, detail, fields)
            self._archive_overflow(txn, evolution, [spec.prefix])
            self._check_chars(txn, evolution, spec)
            txn.event("add", key=entry.key, path=entry.source)
        return entry

    def advise(self, text: str) -> list[Finding]:
        """What in ``text`` the repository already holds — code, file paths, git history — and
        so is not worth remembering (:meth:`MemoryGuard.advise`); logged as an ``advice`` event.

        Example:
            >>> import tempfile
            >>> [f.rule for f in Brain(tempfile.mkdtemp(), home=tempfile.mkdtemp()).advise("Fixed in commit 3f9a2c1d.")]
            ['derivable.git_history']
        """
        found = self.guard.advise(text)
        if found:
            self.log("advice", rules=[f.rule for f in found], path=str(self.dir))
        return found

    def _check_chars(self, txn: Transaction, evolution: bool, spec: SectionSpec) -> None:
        """Raise :class:`CapError` when ``spec``'s section is over its character cap."""
        section = (self.evolution_schema if evolution else self.memory_schema).by_prefix(spec.prefix)
        if section is None or section.chars is None:
            return
        used = _section_chars(txn.evolution if evolution else txn.memory, spec.prefix)
        if used > section.chars:
            raise CapError(
                f"{section.name} would hold {used:,} characters, over its cap of {section.chars:,} ({section.prefix}): "
                f"supersede or archive entries (`memlane brain archive KEY`), shorten this one, or raise the cap "
                f"(--char-cap {section.prefix}=N, or {CHAR_CAPS_ENV})"
            )

    def supersede(
        self,
        old_key: str,
        text: str,
        *,
        detail: str | None = None,
        confidence: str | None = None,
        on: Date | str | None = None,
    ) -> Entry:
        """Replace an entry: the new one links back, the old one stays, marked superseded.

        The old entry gets ``superseded_by`` and ``valid_until``; the new one, in the same
        section, gets ``supersedes``. Both remain searchable (the old at weight 0.1).

        Raises:
            KeyError: No such entry in MEMORY.md or EVOLUTION.md.
            memlane.errors.InvalidArgumentError (a ValueError): The entry is already superseded.
        """
        schema = self._schema_of(old_key)
        evolution = schema.title == EVOLUTION_SCHEMA.title
        fields = {"confidence": confidence} if confidence else {}
        with self.transaction(on) as txn:
            doc = txn.evolution if evolution else txn.memory
            old = doc.find(old_key)
            if old is None:
                raise KeyError(
                    f"no entry {echo(old_key.upper())} in {self.evolution_path if evolution else self.memory_path}"
                )
            new = self._supersede_in(txn, old, text, detail, fields)
            self._archive_overflow(txn, evolution, [old.prefix])
            spec = schema.by_prefix(old.prefix)
            assert spec is not None  # _schema_of matched the prefix
            self._check_chars(txn, evolution, spec)
        return new

    def _supersede_in(
        self, txn: Transaction, old: Entry, text: str, detail: str | None, fields: dict[str, str]
    ) -> Entry:
        """Supersede ``old`` (an entry of this transaction's files) with a new entry."""
        schema = self._schema_of(old.key)
        evolution = schema.title == EVOLUTION_SCHEMA.title
        if old.superseded:
            raise InvalidArgumentError(f"{old.key} is already superseded by {old.superseded_by or 'another entry'}")
        spec = schema.by_prefix(old.prefix)
        assert spec is not None  # _schema_of matched the prefix
        # The replacement is the same kind of memory, for the same people and project.
        kept = {k: old.meta[k] for k in _INHERITED if k in old.meta}
        new = self._new_entry(txn, spec, evolution, text, detail, {**kept, **fields, "supersedes": old.key})
        doc = txn.evolution if evolution else txn.memory
        doc.replace(old.key, old.with_meta(superseded_by=new.key, valid_until=txn.today))
        txn.event("supersede", key=old.key, by=new.key, path=new.source)
        return new

    def resolve(self, key: str, *, note: str | None = None, close: bool = False, on: Date | str | None = None) -> Entry:
        """Mark an open thread resolved (or closed: dropped without a resolution).

        Raises:
            KeyError: No such entry.
            memlane.errors.InvalidArgumentError (a ValueError): Not an open thread, or already resolved.
        """
        with self.transaction(on) as txn:
            entry = txn.memory.find(key)
            if entry is None:
                raise KeyError(f"no entry {echo(key.upper())} in {self.memory_path}")
            if entry.prefix != "OT":
                raise InvalidArgumentError(f"{entry.key} is not an open thread (OT…); supersede it instead")
            if entry.resolved:
                raise InvalidArgumentError(f"{entry.key} is already {entry.meta['status']}")
            status = "closed" if close else "resolved"
            changes = {"status": status, "resolved": txn.today, "valid_until": txn.today}
            if note:
                changes["resolution"] = _meta_value(note)
            new = entry.with_meta(**changes)
            txn.memory.replace(entry.key, new)
            txn.event("resolve", key=entry.key, status=status, path=str(self.memory_path))
        return new

    def _archive_overflow(
        self, txn: Transaction, evolution: bool, prefixes: Iterable[str] | None = None
    ) -> list[Entry]:
        """Archive what each over-cap section's policy allows (all sections, or ``prefixes``)."""
        schema = self.evolution_schema if evolution else self.memory_schema
        doc = txn.evolution if evolution else txn.memory
        wanted = set(prefixes) if prefixes is not None else None
        moved: list[Entry] = []
        for spec in schema.sections:
            if wanted is not None and spec.prefix not in wanted:
                continue
            entries = [e for e in doc.entries() if e.prefix == spec.prefix]
            if spec.cap is None or len(entries) <= spec.cap:
                continue
            excess = len(entries) - spec.cap
            candidates = sorted((e for e in entries if not e.active), key=_age)
            if spec.policy == "rolling":
                candidates += sorted((e for e in entries if e.active), key=_age)
            elif spec.policy == "permanent":
                candidates = []
            for e in candidates[:excess]:
                moved.append(self._move_to_archive(txn, doc, schema, e))
        return moved

    def _move_to_archive(self, txn: Transaction, doc: Document, schema: Schema, entry: Entry) -> Entry:
        doc.remove(entry.key)
        archived = entry.with_meta(archived=txn.today)
        spec = schema.by_prefix(entry.prefix)
        if spec is None:
            raise InvalidArgumentError(f"{entry.key} has no section in {schema.title}.md to archive under")
        txn.archive(schema).add(spec, archived)
        txn.event("archive", key=entry.key, path=str(self.archive_dir))
        return archived

    def archive(self, keys: Iterable[str] = (), *, on: Date | str | None = None) -> list[Entry]:
        """Move entries to ``Archives/<FILE>-archive-YYYY-MM.md`` (full text, never deleted).

        With no ``keys``, every section over its cap gives up what its policy allows:
        COE Registry nothing (permanent), Key Decisions only superseded entries, the others
        superseded or resolved entries first, then the oldest. Entries never leave because
        they are old while their section is under its cap.

        Args:
            keys: Move exactly these entries instead (any section).
            on: The date (names the archive month).

        Returns:
            The archived entries.
        """
        wanted = [k.upper() for k in keys]
        with self.transaction(on) as txn:
            moved: list[Entry] = []
            for key in wanted:
                schema = self._schema_of(key)
                doc = txn.evolution if schema.title == EVOLUTION_SCHEMA.title else txn.memory
                entry = doc.find(key)
                if entry is None:
                    raise KeyError(f"no entry {echo(key)} in {schema.title}.md")
                moved.append(self._move_to_archive(txn, doc, schema, entry))
            if not wanted:
                moved = self._archive_overflow(txn, False) + self._archive_overflow(txn, True)
        return moved

    def reindex(self) -> int:
        """Regenerate the compact index of MEMORY.md and EVOLUTION.md; returns entries listed."""
        with self.transaction() as txn:
            n = len(txn.memory.entries()) + len(txn.evolution.entries())
        return n

    # -- checking ------------------------------------------------------------------------

    def check(self) -> list[Problem]:
        """Validate the brain: unique keys, caps, references, supersession links, guard re-scan,
        and the provenance of every summary and wiki statement (:mod:`memlane.brain.provenance`).

        Returns:
            Problems, errors first; empty when all is well (:func:`memlane.brain.check.check`).
        """
        return check(self, self._archived())
