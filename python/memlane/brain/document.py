"""Lossless model of MEMORY.md and EVOLUTION.md: parse, edit, render.

A brain file is a preamble (title, the generated index), then ``## `` sections. In a known
section, a line ``- [KD15] 2026-04-02 — text`` starts an entry; the indented lines right after
it belong to it: ``Detail: …`` (provenance), one ``<!-- key: value | … -->`` comment
(temporal metadata) and any other indented lines (kept as ``extra``). Everything else — prose,
blank lines, unknown sections, code fences — is kept as raw lines.

Parsing keeps every byte: an untouched entry renders from its original lines, so
``render(parse(text)) == text`` for any text, and hand edits survive our writes. Entries we
create or change render in the canonical form::

    - [KD22] 2026-04-10 — Billing moved from Postgres to DynamoDB (supersedes KD15).
      Detail: transcript 0b5c… turns 12-15
      <!-- valid_from: 2026-04-10 | supersedes: KD15 | confidence: high -->

Example:
    >>> doc = parse("# MEMORY\\n\\n## Key Decisions\\n- [KD01] 2026-04-01 — Use Postgres.\\n", MEMORY_SCHEMA)
    >>> doc.find("KD01").text
    'Use Postgres.'
    >>> doc.render() == "# MEMORY\\n\\n## Key Decisions\\n- [KD01] 2026-04-01 — Use Postgres.\\n"
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from memlane.brain.scopes import entry_project, entry_scope, entry_type
from memlane.errors import InvalidArgumentError

# ---------------------------------------------------------------------------- schemas


@dataclass(frozen=True)
class SectionSpec:
    """A known section of a brain file.

    Attributes:
        name: Canonical heading text, e.g. ``Key Decisions``.
        prefix: Key prefix of its entries, e.g. ``KD``.
        cap: Most entries kept in the file (``None``: no cap).
        policy: What :meth:`Brain.archive` may move out when over the cap:
            ``permanent`` (nothing), ``until_superseded`` (only superseded or resolved
            entries), ``rolling`` (inactive entries first, then the oldest).
        aliases: Other headings and short names that mean this section.
        chars: Most characters its entries may take in the file (``None``: no cap), as Hermes
            caps its memory files: a write past it fails, naming the cap.
    """

    name: str
    prefix: str
    cap: int | None
    policy: str
    aliases: tuple[str, ...] = ()
    chars: int | None = None


@dataclass(frozen=True)
class Schema:
    """The sections of one kind of brain file.

    Attributes:
        title: The file's ``#`` title (``MEMORY`` or ``EVOLUTION``).
        sections: Known sections, in the order a new file lists them.
    """

    title: str
    sections: tuple[SectionSpec, ...]

    def by_heading(self, heading: str) -> SectionSpec | None:
        """The section a ``##`` heading names (case, trailing notes and punctuation ignored)."""
        name = _norm_heading(heading)
        for spec in self.sections:
            if name == _norm_heading(spec.name) or name in spec.aliases:
                return spec
        return None

    def by_prefix(self, prefix: str) -> SectionSpec | None:
        """The section whose keys start with ``prefix``."""
        return next((s for s in self.sections if s.prefix == prefix.upper()), None)

    def lookup(self, name: str) -> SectionSpec | None:
        """A section by prefix (``kd``), heading (``Key Decisions``) or alias (``decisions``)."""
        return self.by_prefix(name) or self.by_heading(name)

    def with_caps(self, caps: dict[str, int | None]) -> Schema:
        """A copy with caps overridden by section prefix (``{"KD": 40}``)."""
        return self._override("cap", caps)

    def with_char_caps(self, caps: dict[str, int | None]) -> Schema:
        """A copy with character caps overridden by section prefix (``{"KD": 3000}``)."""
        return self._override("chars", caps)

    def _override(self, attribute: str, caps: dict[str, int | None]) -> Schema:
        unknown = {k.upper() for k in caps} - {s.prefix for s in self.sections}
        if unknown:
            raise InvalidArgumentError(f"unknown section prefix for a cap: {', '.join(sorted(unknown))}")
        upper = {k.upper(): v for k, v in caps.items()}
        return replace(
            self,
            sections=tuple(
                replace(s, **{attribute: upper.get(s.prefix, getattr(s, attribute))}) for s in self.sections
            ),
        )


def _norm_heading(text: str) -> str:
    text = re.sub(r"\(.*?\)|\[.*?\]", "", text)
    return " ".join(re.sub(r"[^\w\s]", " ", text).lower().split())


MEMORY_SCHEMA = Schema(
    "MEMORY",
    (
        SectionSpec("COE Registry", "COE", 15, "permanent", ("coe", "coes", "incidents", "correction of errors"), 4000),
        SectionSpec("Key Decisions", "KD", 30, "until_superseded", ("kd", "decisions"), 6000),
        SectionSpec("Lessons Learned", "LL", 25, "rolling", ("ll", "lessons"), 5000),
        SectionSpec("Recent Context", "RC", 30, "rolling", ("rc", "context"), 4500),
        SectionSpec("Open Threads", "OT", 10, "rolling", ("ot", "threads", "open questions"), 1500),
    ),
)
"""MEMORY.md: caps and archive policies from the design (COE permanent, KD until superseded);
character caps of about 150-200 characters (an entry with its detail) per entry the section keeps."""

EVOLUTION_SCHEMA = Schema(
    "EVOLUTION",
    (
        SectionSpec("Corrections", "CR", None, "until_superseded", ("cr", "correction"), 3000),
        SectionSpec(
            "Competences", "CP", None, "until_superseded", ("cp", "competence", "competencies", "skills"), 3000
        ),
        SectionSpec("Failed Attempts", "FA", None, "until_superseded", ("fa", "failures", "failed"), 3000),
    ),
)
"""EVOLUTION.md: procedural memory, injected in full, so no entry caps by default; it is kept
short by characters instead."""

KEY_PREFIXES = tuple(s.prefix for s in MEMORY_SCHEMA.sections + EVOLUTION_SCHEMA.sections)
REF_RE = re.compile(r"\b(?:" + "|".join(KEY_PREFIXES) + r")\d{1,4}\b")

# ---------------------------------------------------------------------------- entries

_ENTRY_RE = re.compile(r"^[-*+][ \t]+\[(?P<key>[A-Z]{1,5}\d{1,5})\][ \t]*(?P<rest>.*?)\s*$")
_DATE_RE = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})(?![\w-])[ \t]*(?:[—–:-][ \t]*)?")
_SEP_RE = re.compile(r"^[—–:-][ \t]*")
_META_RE = re.compile(r"^<!--(?P<body>.*)-->$")
_META_KEY_RE = re.compile(r"^[A-Za-z_][\w-]*$")
_HEADING_RE = re.compile(r"^##[ \t]+(?P<name>.*?)[ \t#]*$")
_FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")

INDEX_START = "<!-- memlane:index — generated by `memlane brain index`; edits inside this block are replaced -->"
INDEX_END = "<!-- /memlane:index -->"


def parse_meta(comment: str) -> dict[str, str] | None:
    """``{key: value}`` from ``<!-- k: v | k2: v2 -->``, or ``None`` if it is not metadata.

    Example:
        >>> parse_meta("<!-- valid_from: 2026-04-01 | superseded_by: KD22 -->")
        {'valid_from': '2026-04-01', 'superseded_by': 'KD22'}
    """
    m = _META_RE.match(comment.strip())
    if not m or not m.group("body").strip():
        return None
    out: dict[str, str] = {}
    for part in m.group("body").split("|"):
        k, sep, v = part.partition(":")
        k, v = k.strip(), v.strip()
        if not sep or not _META_KEY_RE.match(k) or not v or k in out:
            return None
        out[k] = v
    return out


def render_meta(meta: dict[str, str]) -> str:
    """The comment line body for ``meta`` (inverse of :func:`parse_meta`)."""
    return "<!-- " + " | ".join(f"{k}: {v}" for k, v in meta.items()) + " -->"


@dataclass
class Entry:
    """One memory: a stable key, a date, one line of text, provenance and temporal metadata.

    Equality ignores how the entry was written on disk (``raw``) and where it was found.

    Attributes:
        key: Stable id, e.g. ``KD15``; its letters name the section.
        date: ``YYYY-MM-DD`` or ``None`` for a hand-written entry without one.
        text: The one-line memory.
        detail: Provenance (``path § heading`` or ``transcript SESSION turns A-B``).
        meta: Temporal metadata: ``valid_from``, ``valid_until``, ``superseded_by``,
            ``supersedes``, ``confidence``, ``status`` (``resolved``/``closed``), ``resolved``,
            ``aliases``, ``archived``…
        extra: Other indented lines under the entry, verbatim (stripped).
        raw: The lines it was parsed from (with line endings); ``None`` once changed.
        section: Heading of the section it was found in.
        source: The file it was read from (set by :class:`~memlane.brain.Brain`).
        withheld: The MemoryGuard rule the entry fails on read (a hand edit), if any: it is
            kept out of every injection (snapshot, recall, MCP) and shown as withheld.
    """

    key: str
    date: str | None
    text: str
    detail: str | None = None
    meta: dict[str, str] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)
    raw: list[str] | None = field(default=None, compare=False, repr=False)
    section: str = field(default="", compare=False)
    source: str = field(default="", compare=False, repr=False)
    withheld: str | None = field(default=None, compare=False, repr=False)

    # -- temporal state ------------------------------------------------------------------

    @property
    def prefix(self) -> str:
        """The key's letters (``KD``)."""
        return re.sub(r"\d+$", "", self.key)

    @property
    def number(self) -> int:
        """The key's number (``15`` for ``KD15``)."""
        return int(re.sub(r"^\D+", "", self.key))

    @property
    def superseded_by(self) -> str | None:
        """Key of the entry that replaced this one."""
        return self.meta.get("superseded_by")

    @property
    def supersedes(self) -> str | None:
        """Key of the entry this one replaced."""
        return self.meta.get("supersedes")

    @property
    def superseded(self) -> bool:
        """True once another entry replaced this one (it stays searchable at low weight)."""
        return bool(self.superseded_by) or self.meta.get("status") == "superseded"

    @property
    def resolved(self) -> bool:
        """True for a resolved or closed open thread."""
        return self.meta.get("status") in ("resolved", "closed")

    @property
    def active(self) -> bool:
        """Neither superseded nor resolved."""
        return not (self.superseded or self.resolved)

    @property
    def weight(self) -> float:
        """Recall weight: 0.1 for a superseded entry, else 1.0."""
        return 0.1 if self.superseded else 1.0

    @property
    def aliases(self) -> list[str]:
        """Extra keywords from ``aliases:`` metadata (comma-separated)."""
        return [a.strip() for a in self.meta.get("aliases", "").split(",") if a.strip()]

    def references(self) -> list[str]:
        """Entry keys mentioned in the text and extra lines, in order, without duplicates.

        Example:
            >>> Entry("KD22", "2026-04-10", "Replaces KD15; see LL03 and KD15.").references()
            ['KD15', 'LL03']
        """
        found = REF_RE.findall(" ".join([self.text, *self.extra]))
        return [k for k in dict.fromkeys(found) if k != self.key]

    # -- rendering -----------------------------------------------------------------------

    def canonical_lines(self) -> list[str]:
        """The entry in canonical form, one string per line with ``\\n``."""
        head = f"- [{self.key}] {self.date} — {self.text}" if self.date else f"- [{self.key}] {self.text}"
        lines = [head + "\n"]
        lines += [f"  {x}\n" for x in self.extra]
        if self.detail:
            lines.append(f"  Detail: {self.detail}\n")
        if self.meta:
            lines.append(f"  {render_meta(self.meta)}\n")
        return lines

    def lines(self) -> list[str]:
        """Lines to write: the original ones if untouched, else the canonical form."""
        return list(self.raw) if self.raw is not None else self.canonical_lines()

    def render(self) -> str:
        """The entry as markdown."""
        return _join(self.lines())

    def with_meta(self, **changes: str | None) -> Entry:
        """A copy with metadata keys set (or removed with ``None``), hand edits kept.

        Only the metadata comment line is rewritten; the other original lines stay as typed.
        """
        meta = dict(self.meta)
        for k, v in changes.items():
            if v is None:
                meta.pop(k, None)
            else:
                meta[k] = v
        new = replace(self, meta=meta, raw=None)
        if self.raw is not None:
            new.raw = _patch_meta_line(self.raw, meta)
        return new

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields plus the derived temporal state."""
        return {
            "key": self.key,
            "date": self.date,
            "text": self.text,
            "detail": self.detail,
            "meta": dict(self.meta),
            "extra": list(self.extra),
            "section": self.section,
            "source": self.source,
            "superseded": self.superseded,
            "resolved": self.resolved,
            "active": self.active,
            "weight": self.weight,
            "withheld": self.withheld,
            "references": self.references(),
            "type": entry_type(self),
            "scope": entry_scope(self),
            "project": entry_project(self),
        }


def _patch_meta_line(raw: list[str], meta: dict[str, str]) -> list[str]:
    out = list(raw)
    for i, line in enumerate(out[1:], start=1):
        if parse_meta(line) is not None:
            indent = line[: len(line) - len(line.lstrip())]
            ending = line[len(line.rstrip("\r\n")) :] or "\n"
            if meta:
                out[i] = f"{indent}{render_meta(meta)}{ending}"
            else:
                del out[i]
            return out
    if meta:
        if not out[-1].endswith("\n"):
            out[-1] += "\n"
        out.append(f"  {render_meta(meta)}\n")
    return out


def _parse_entry(lines: list[str]) -> Entry:
    m = _ENTRY_RE.match(lines[0].rstrip("\r\n"))
    assert m is not None  # callers only pass lines that matched
    rest = m.group("rest")
    date = None
    dm = _DATE_RE.match(rest)
    if dm:
        date = dm.group("date")
        rest = rest[dm.end() :]
    else:
        rest = _SEP_RE.sub("", rest, count=1)
    detail: str | None = None
    meta: dict[str, str] | None = None
    extra: list[str] = []
    for line in lines[1:]:
        s = line.strip()
        if detail is None and s[:7].lower() == "detail:":
            detail = s[7:].strip()
            continue
        if meta is None:
            meta = parse_meta(s)
            if meta is not None:
                continue
        extra.append(s)
    return Entry(m.group("key"), date, rest, detail or None, meta or {}, extra, raw=list(lines))


# ---------------------------------------------------------------------------- document


Node = Entry | str
"""A section body is a list of entries and raw lines (each raw line keeps its ending)."""


@dataclass
class Section:
    """A ``##`` section: its heading line, the known section it is (if any) and its body.

    Attributes:
        heading: The heading line as written (with its line ending).
        spec: The known section, or ``None`` for a section memlane does not manage.
        body: Entries and raw lines.
    """

    heading: str
    spec: SectionSpec | None
    body: list[Node] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The heading text."""
        m = _HEADING_RE.match(self.heading.rstrip("\r\n"))
        return m.group("name") if m else self.heading.strip()

    def entries(self) -> list[Entry]:
        """The entries, in file order."""
        return [n for n in self.body if isinstance(n, Entry)]


@dataclass
class Document:
    """A parsed brain file.

    Attributes:
        schema: Which file this is (:data:`MEMORY_SCHEMA` or :data:`EVOLUTION_SCHEMA`).
        preamble: Raw lines before the first ``##`` heading (title, generated index).
        sections: The sections in file order.
    """

    schema: Schema
    preamble: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)

    def entries(self) -> list[Entry]:
        """Every entry of every known section, in file order."""
        return [e for s in self.sections for e in s.entries()]

    def find(self, key: str) -> Entry | None:
        """The entry with this key (the first, if a hand edit duplicated it)."""
        key = key.upper()
        return next((e for e in self.entries() if e.key == key), None)

    def section(self, spec: SectionSpec) -> Section:
        """The section for ``spec``, added in schema order if the file lacks it."""
        for s in self.sections:
            if s.spec is not None and s.spec.prefix == spec.prefix:
                return s
        order = [x.prefix for x in self.schema.sections]
        rank = order.index(spec.prefix)
        at = len(self.sections)
        for i, s in enumerate(self.sections):
            if s.spec is not None and s.spec.prefix in order and order.index(s.spec.prefix) > rank:
                at = i
                break
        if at > 0:
            _ensure_blank_after(self.sections[at - 1].body)
        elif self.preamble:
            _ensure_blank_after(self.preamble)
        new = Section(f"## {spec.name}\n", spec, ["\n"] if at < len(self.sections) else [])
        self.sections.insert(at, new)
        return new

    def add(self, spec: SectionSpec, entry: Entry) -> None:
        """Append ``entry`` after the last entry of its section (or under the heading)."""
        section = self.section(spec)
        entry.section = spec.name
        body = section.body
        last = max((i for i, n in enumerate(body) if isinstance(n, Entry)), default=None)
        if last is not None:
            body.insert(last + 1, entry)
            return
        # No entry yet: under the heading, or after the section's intro prose.
        at = len(body)
        while at > 0 and isinstance(body[at - 1], str) and not str(body[at - 1]).strip():
            at -= 1
        body[at:at] = ["\n", entry] if at else [entry]

    def replace(self, key: str, new: Entry) -> None:
        """Put ``new`` where the entry ``key`` is."""
        for s in self.sections:
            for i, n in enumerate(s.body):
                if isinstance(n, Entry) and n.key == key:
                    new.section = n.section
                    s.body[i] = new
                    return
        raise KeyError(key)

    def remove(self, key: str) -> Entry:
        """Take the entry ``key`` out of the document and return it."""
        for s in self.sections:
            for i, n in enumerate(s.body):
                if isinstance(n, Entry) and n.key == key:
                    del s.body[i]
                    return n
        raise KeyError(key)

    def set_index(self, lines: list[str]) -> None:
        """Replace the generated index block (or insert it under the title)."""
        block = [INDEX_START + "\n", *lines, INDEX_END + "\n"]
        pre = self.preamble
        start = next((i for i, l in enumerate(pre) if l.startswith("<!-- memlane:index")), None)
        end = next((i for i, l in enumerate(pre) if l.strip() == INDEX_END), None) if start is not None else None
        if start is not None and end is not None and end >= start:
            pre[start : end + 1] = block
            return
        at = 0
        if pre and pre[0].startswith("# "):
            if not pre[0].endswith("\n"):
                pre[0] += "\n"
            at = 1
            block = ["\n", *block]
        follows = bool(pre[at].strip()) if at < len(pre) else bool(self.sections)
        pre[at:at] = block + (["\n"] if follows else [])

    def render(self) -> str:
        """The file text: original lines for untouched parts, canonical for changed entries."""
        out: list[str] = list(self.preamble)
        for s in self.sections:
            out.append(s.heading)
            for n in s.body:
                out.extend(n.lines() if isinstance(n, Entry) else [n])
        return _join(out)


def _ensure_blank_after(lines: list[Any]) -> None:
    if not lines:
        lines.append("\n")
        return
    last = lines[-1]
    if isinstance(last, str) and not last.strip():
        return
    if isinstance(last, str) and not last.endswith("\n"):
        lines[-1] = last + "\n"
    elif isinstance(last, Entry) and last.raw is not None and not last.raw[-1].endswith("\n"):
        last.raw[-1] += "\n"
    lines.append("\n")


def _join(lines: list[str]) -> str:
    # Only the file's last line may lack a newline; a line that used to be last gets one
    # when something is appended after it.
    return "".join(l if l.endswith("\n") or i == len(lines) - 1 else l + "\n" for i, l in enumerate(lines))


def _split_lines(text: str) -> list[str]:
    # str.splitlines would also split on \x0b, \x1c, \u2028…, which markdown treats as text.
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def _blocks(lines: list[str]) -> Iterator[tuple[str, int]]:
    """Classify lines: ``heading``, ``entry``, ``cont`` (indented), ``other``; fences are ``other``."""
    fence: str | None = None
    for i, line in enumerate(lines):
        bare = line.rstrip("\r\n")
        fm = _FENCE_RE.match(bare)
        if fence is not None:
            if (
                fm
                and fm.group(1)[0] == fence[0]
                and len(fm.group(1)) >= len(fence)
                and not bare.strip().strip(fence[0])
            ):
                fence = None
            yield "other", i
            continue
        if fm:
            fence = fm.group(1)
            yield "other", i
        elif _HEADING_RE.match(bare):
            yield "heading", i
        elif _ENTRY_RE.match(bare):
            yield "entry", i
        elif bare[:1] in (" ", "\t") and bare.strip():
            yield "cont", i
        else:
            yield "other", i


def parse(text: str, schema: Schema) -> Document:
    """Parse a brain file; never fails, never loses a byte.

    Args:
        text: The file's content (``""`` for a missing file).
        schema: :data:`MEMORY_SCHEMA` or :data:`EVOLUTION_SCHEMA`.

    Returns:
        The document; ``doc.render() == text``.
    """
    lines = _split_lines(text)
    doc = Document(schema)
    current: Section | None = None
    entry_lines: list[str] | None = None

    def flush() -> None:
        nonlocal entry_lines
        if entry_lines is not None and current is not None:
            e = _parse_entry(entry_lines)
            e.section = current.spec.name if current.spec else current.name
            current.body.append(e)
        entry_lines = None

    for kind, i in _blocks(lines):
        line = lines[i]
        if kind == "cont" and entry_lines is not None:
            entry_lines.append(line)
            continue
        flush()
        if kind == "heading":
            name = _HEADING_RE.match(line.rstrip("\r\n"))
            current = Section(line, schema.by_heading(name.group("name")) if name else None)
            doc.sections.append(current)
        elif current is None:
            doc.preamble.append(line)
        elif kind == "entry" and current.spec is not None:
            entry_lines = [line]
        else:
            current.body.append(line)
    flush()
    return doc


def new_document(schema: Schema) -> Document:
    """An empty file with the title, an empty index and every known section.

    Example:
        >>> print(new_document(EVOLUTION_SCHEMA).render().splitlines()[0])
        # EVOLUTION
    """
    doc = Document(schema, preamble=[f"# {schema.title}\n"])
    doc.set_index([])
    for spec in schema.sections:
        doc.section(spec)
    return doc
