"""The wiki: topical pages in ``wiki/<slug>.md``, every line traceable to a daily.

A page's frontmatter: ``type: wiki``, ``name``, ``category`` (one of :data:`CATEGORIES`),
``sources`` (daily entries), ``related`` (other pages' names), ``confidence`` (``low`` with one
source, ``medium`` with two, ``high`` from three), ``current`` (a subject's value now:
``{value, source, since}``), ``supersedes`` (earlier values, each
``{fact, value, source, since, superseded_on}``: both values are kept, with their dates) and
``contradictions`` (values stated without a change, ``{value, source}``). The body: ``# name``,
then ``## Current`` (a subject page), ``## Facts`` and ``## History``, each line ending with
its provenance. A page from one or two sources is a **stub**; from three or more it is
**synthesized** (its facts chosen by an engine from every source).

:meth:`Wiki.as_of` answers "as of" questions from ``current`` and ``supersedes``;
:meth:`Wiki.lint` finds stale pages (no source in :data:`STALE_DAYS` days), orphans (no source
resolves) and contradictions. Pages are written through :func:`memlane.timeline.compact.publish`
(brain lock, MemoryGuard, atomic replace) and indexed as ``source="summary"``: search hands a
matching page's place to the dailies it cites.

Example:
    >>> page = Page("billing database", "concept", current={"value": "DynamoDB", "source": "DailyActivity/2026-03-03.md › 14:40", "since": "2026-03-03"},
    ...             supersedes=[{"fact": "We decided to use Postgres as the billing database.", "value": "Postgres",
    ...                          "source": "DailyActivity/2026-01-12.md › 10:20", "since": "2026-01-12", "superseded_on": "2026-03-03"}])
    >>> page.as_of("2026-02-01").value, page.as_of("2026-03-20").value, page.as_of("2025-12-01")
    ('Postgres', 'DynamoDB', None)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane._fs import brain_lock
from memlane.brain import provenance
from memlane.brain.provenance import Ref
from memlane.errors import InvalidArgumentError
from memlane.timeline import notes

if TYPE_CHECKING:
    from memlane.brain import Brain

CATEGORIES = ("entity", "concept", "project", "reference", "theme")
STALE_DAYS = 90
SYNTHESIZED_FROM = 3
_SLUG = re.compile(r"[^a-z0-9]+")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "for",
        "to",
        "in",
        "on",
        "at",
        "by",
        "as",
        "is",
        "was",
        "did",
        "does",
        "do",
        "use",
        "used",
        "uses",
        "which",
        "what",
        "who",
        "when",
        "where",
        "now",
        "our",
        "we",
        "as",
    ]
)


def slugify(name: str) -> str:
    """The file name of a page: lower case, words joined by ``-``.

    Example:
        >>> slugify("Billing database (EU)")
        'billing-database-eu'
    """
    slug = _SLUG.sub("-", name.lower()).strip("-")
    if not slug:
        raise InvalidArgumentError(f"{name!r} gives an empty page name: use letters or digits")
    return slug[:80]


def _day(ref: str) -> str | None:
    m = re.search(r"(\d{4}-\d{2}-\d{2})", ref)
    return m.group(1) if m else None


@dataclass(frozen=True)
class Answer:
    """A value as of a date, and where it was stated."""

    value: str
    source: str
    since: str


@dataclass
class Page:
    """One wiki page (see the module doc for the fields)."""

    name: str
    category: str = "concept"
    sources: list[str] = field(default_factory=list)
    related: list[str] = field(default_factory=list)
    current: dict[str, str] | None = None
    supersedes: list[dict[str, str]] = field(default_factory=list)
    contradictions: list[dict[str, str]] = field(default_factory=list)
    facts: list[tuple[str, list[str]]] = field(default_factory=list)
    """``(statement, [refs])`` lines of the ``## Facts`` section."""

    @property
    def slug(self) -> str:
        """File name without ``.md``."""
        return slugify(self.name)

    @property
    def confidence(self) -> str:
        """``low`` (one source), ``medium`` (two), ``high`` (three or more)."""
        return ("low", "medium", "high")[min(len(self.sources), SYNTHESIZED_FROM) - 1] if self.sources else "low"

    @property
    def status(self) -> str:
        """``stub`` or ``synthesized``."""
        return "synthesized" if len(self.sources) >= SYNTHESIZED_FROM else "stub"

    def as_of(self, on: str) -> Answer | None:
        """The value that held on ``on`` (ISO date), None before the first."""
        timeline = [(s.get("since") or "", s["value"], s["source"]) for s in self.supersedes if s.get("value")]
        if self.current:
            timeline.append((self.current.get("since") or "", self.current["value"], self.current["source"]))
        valid = [t for t in sorted(timeline) if t[0] and t[0] <= on]
        return Answer(valid[-1][1], valid[-1][2], valid[-1][0]) if valid else None

    def add_source(self, ref: str) -> None:
        """Cite one more daily entry (kept in date order, once)."""
        if ref not in self.sources:
            self.sources = sorted([*self.sources, ref])

    def set_value(self, value: str, ref: str, fact: str, *, change: bool) -> str:
        """Record a subject's value from a statement: ``same``, ``superseded`` (the old one kept, dated),
        ``contradiction`` (a new value stated without change language) or ``first``."""
        since = _day(ref) or ""
        self.add_source(ref)
        if self.current is None:
            self.current = {"value": value, "source": ref, "since": since, "fact": fact}
            return "first"
        if self.current["value"].lower() == value.lower():
            return "same"
        if since < (self.current.get("since") or ""):
            # An older statement read late (a backfilled daily): history, not the current value;
            # it held until the next value on record.
            later = [s.get("since") or "" for s in self.supersedes if (s.get("since") or "") > since] + [
                self.current.get("since") or ""
            ]
            self.supersedes.append(
                {"fact": fact, "value": value, "source": ref, "since": since, "superseded_on": min(later)}
            )
            self.supersedes.sort(key=lambda s: s.get("since") or "")
            return "superseded"
        if not change:
            self.contradictions.append({"value": value, "source": ref})
            return "contradiction"
        old = self.current
        self.supersedes.append(
            {
                "fact": old.get("fact") or f"{self.name}: {old['value']}",
                "value": old["value"],
                "source": old["source"],
                "since": old.get("since") or "",
                "superseded_on": since,
            }
        )
        self.current = {"value": value, "source": ref, "since": since, "fact": fact}
        return "superseded"

    def render(self) -> str:
        """The page's text (frontmatter, then Current, Facts, History)."""
        fields: dict[str, Any] = {
            "type": "wiki",
            "name": self.name,
            "category": self.category,
            "sources": self.sources,
            "related": self.related,
            "confidence": self.confidence,
            "status": self.status,
        }
        if self.current:
            fields["current"] = dict(self.current)
        fields["supersedes"] = self.supersedes
        if self.contradictions:
            fields["contradictions"] = self.contradictions
        out = [notes.render_frontmatter(fields), f"# {self.name}\n"]
        if self.current:
            out.append("\n## Current\n")
            out.append(
                f"- {self.name}: {self.current['value']}, since {self.current['since']} {provenance.render([_ref(self.current['source'])])}\n"
            )
        if self.facts:
            out.append("\n## Facts\n")
            out += [f"- {text} {provenance.render([_ref(r) for r in refs])}\n" for text, refs in self.facts]
        if self.supersedes:
            out.append("\n## History\n")
            out += [
                f"- {s['since']} to {s['superseded_on']}: {s['value']} {provenance.render([_ref(s['source'])])}\n"
                for s in self.supersedes
            ]
        return "".join(out)

    @classmethod
    def parse(cls, text: str, name: str) -> Page:
        """A page from its text (frontmatter and Facts lines); ``name`` if the frontmatter has none."""
        import yaml

        fm: dict[str, Any] = {}
        body = text
        if text.startswith("---\n") and (end := text.find("\n---\n", 4)) >= 0:
            try:
                fm = yaml.safe_load(text[4:end]) or {}
            except yaml.YAMLError:
                fm = {}
            body = text[end + 5 :]
        page = cls(
            str(fm.get("name") or name),
            str(fm.get("category") or "concept"),
            [str(s) for s in fm.get("sources") or []],
            [str(r) for r in fm.get("related") or []],
            fm.get("current") or None,
            list(fm.get("supersedes") or []),
            list(fm.get("contradictions") or []),
        )
        section = None
        for line in body.splitlines():
            if line.startswith("## "):
                section = line[3:].strip()
            elif section == "Facts" and line.startswith("- ") and (refs := provenance.refs(line)):
                page.facts.append((provenance.strip(line)[2:].strip(), [str(r) for r in refs]))
        return page


def _ref(text: str) -> Ref:
    path, _, entry = text.partition(provenance.SEP)
    return Ref(path, entry or None)


def source_ref(source: str, brain_dir: Path) -> Ref:
    """A source a person names (``DailyActivity/2026-11-20.md › 14:32``, relative to the brain
    folder or absolute inside it) as a reference relative to the folder.

    The path is resolved (``..``, symlinks) before it is judged: a page is made from what its
    source says, so a source outside the folder would copy any file into the wiki.

    Raises:
        InvalidArgumentError: The file lies outside the brain folder.

    Example:
        >>> import tempfile
        >>> brain = Path(tempfile.mkdtemp())
        >>> str(source_ref(f"{brain}/DailyActivity/2026-11-20.md › 14:32", brain))
        'DailyActivity/2026-11-20.md › 14:32'
        >>> source_ref("../../etc/passwd", brain)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: '../../etc/passwd' is not a file in the brain folder ...: name a daily in it, 'DailyActivity/YYYY-MM-DD.md › HH:MM' (relative to the folder, or absolute)
    """
    path, _, entry = (part.strip() for part in source.partition(provenance.SEP.strip()))
    root = Path(brain_dir).expanduser().resolve()
    # An absolute path replaces the root in the join; a relative one is taken from the root.
    target = (root / Path(path).expanduser()).resolve()
    if target == root or not target.is_relative_to(root):
        raise InvalidArgumentError(
            f"{path!r} is not a file in the brain folder {root}: name a daily in it, "
            f"'DailyActivity/YYYY-MM-DD.md{provenance.SEP}HH:MM' (relative to the folder, or absolute)"
        )
    return Ref(target.relative_to(root).as_posix(), entry or None)


class Wiki:
    """The wiki pages of a brain folder."""

    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        self.dir = brain.dir / notes.WIKI_DIR

    def path(self, name: str) -> Path:
        """Where the page named ``name`` lives."""
        return self.dir / f"{slugify(name)}.md"

    def pages(self) -> list[Page]:
        """Every page, by slug."""
        return [Page.parse(p.read_text(encoding="utf-8"), p.stem) for p in sorted(self.dir.glob("*.md"))]

    def get(self, name: str) -> Page:
        """The page named ``name`` (or with that slug).

        Raises:
            KeyError: No such page.
        """
        path = self.path(name)
        if not path.is_file():
            raise KeyError(f"no wiki page {name!r} in {self.dir} (`memlane wiki list` shows them)")
        return Page.parse(path.read_text(encoding="utf-8"), path.stem)

    def write(self, pages: list[Page], remove: Sequence[str] = ()) -> None:
        """Publish pages (brain transaction: lock, MemoryGuard, atomic replace), then remove pages by name."""
        from memlane.timeline.publish import publish

        if pages:
            publish(self.brain, {self.path(p.name): p.render() for p in pages}, "wiki")
        if remove:
            with brain_lock(self.brain.dir):
                for name in remove:
                    self.path(name).unlink(missing_ok=True)
            self.brain.log("wiki_remove", pages=list(remove))

    def find(self, question: str) -> Page | None:
        """The subject page a question is about: the most of its name's words in the question (all of them)."""
        asked = set(_WORD.findall(question.lower())) - _STOP
        best, best_score = None, 0.0
        for page in self.pages():
            if page.current is None:
                continue
            words = set(_WORD.findall(page.name.lower())) - _STOP
            if words and words <= asked and len(words) > best_score:
                best, best_score = page, len(words)
        return best

    def answer(self, question: str, *, on: str) -> Answer | None:
        """What the wiki says a question's subject was on ``on`` (ISO date), or None."""
        page = self.find(question)
        return page.as_of(on) if page is not None else None

    def stub(self, name: str, category: str, source: str) -> Page:
        """A page from one source: the sentences of that daily entry that name it.

        Args:
            source: A daily entry, ``DailyActivity/YYYY-MM-DD.md › HH:MM``, relative to the brain
                folder or absolute inside it (see :func:`source_ref`).

        Raises:
            memlane.errors.InvalidArgumentError: Unknown category, a source outside the brain folder or that does not
                resolve, or a page that exists.
        """
        if category not in CATEGORIES:
            raise InvalidArgumentError(f"unknown category {category!r}: use one of {', '.join(CATEGORIES)}")
        if self.path(name).exists():
            raise InvalidArgumentError(f"wiki page {name!r} exists: `memlane wiki show {slugify(name)}`")
        ref = source_ref(source, self.brain.dir)
        if not provenance.resolves(ref, self.brain.dir):
            raise InvalidArgumentError(
                f"{source} does not resolve in {self.brain.dir} (use DailyActivity/YYYY-MM-DD.md › HH:MM)"
            )
        page = Page(name, category)
        page.add_source(str(ref))
        page.facts = [(s, [str(ref)]) for s in mentions(self.brain.dir, ref, name)]
        self.write([page])
        return page

    def lint(self, today: date | None = None) -> list[dict[str, str]]:
        """``{"page", "problem", "message"}`` for stale pages, orphans and contradictions."""
        today = today or date.today()
        out = []
        cache: dict[str, list[str] | None] = {}
        for page in self.pages():
            days = [d for d in (_day(s) for s in page.sources) if d]
            if not page.sources or not any(provenance.resolves(_ref(s), self.brain.dir, cache) for s in page.sources):
                out.append(
                    {
                        "page": page.slug,
                        "problem": "orphan",
                        "message": f"{page.name}: none of its {len(page.sources)} sources resolves",
                    }
                )
            elif days and max(days) < (today - timedelta(days=STALE_DAYS)).isoformat():
                out.append(
                    {
                        "page": page.slug,
                        "problem": "stale",
                        "message": f"{page.name}: its newest source is from {max(days)}, over {STALE_DAYS} days ago",
                    }
                )
            for c in page.contradictions:
                current = page.current["value"] if page.current else "?"
                out.append(
                    {
                        "page": page.slug,
                        "problem": "contradiction",
                        "message": f"{page.name}: {c['source']} says {c['value']} while the page says {current}, with no change stated",
                    }
                )
        return out

    def merge(self, into: str, other: str) -> Page:
        """Merge page ``other`` into ``into`` (sources, facts, history, related); ``other`` goes and links to it follow."""
        a, b = self.get(into), self.get(other)
        for s in b.sources:
            a.add_source(s)
        a.facts += [f for f in b.facts if f not in a.facts]
        a.supersedes = sorted(
            a.supersedes + [s for s in b.supersedes if s not in a.supersedes], key=lambda s: s.get("since") or ""
        )
        a.contradictions += [c for c in b.contradictions if c not in a.contradictions]
        a.related = sorted(set(a.related + b.related) - {a.name, b.name})
        if a.current is None:
            a.current = b.current
        self.write([a, *self._relinked(b.name, a.name, skip={a.slug, b.slug})], remove=[b.name])
        return a

    def rename(self, old: str, new: str) -> Page:
        """Rename a page (its file and name) and every ``related`` link to it."""
        page = self.get(old)
        if self.path(new).exists() and slugify(new) != page.slug:
            raise InvalidArgumentError(
                f"wiki page {new!r} exists: merge instead (`memlane wiki merge {slugify(new)} {page.slug}`)"
            )
        former = page.name
        page.name = new
        self.write(
            [page, *self._relinked(former, new, skip={page.slug, slugify(former)})],
            remove=[former] if slugify(former) != slugify(new) else [],
        )
        return page

    def _relinked(self, old: str, new: str, skip: set[str]) -> list[Page]:
        changed = []
        for p in self.pages():
            if p.slug not in skip and old in p.related:
                p.related = sorted({new if r == old else r for r in p.related})
                changed.append(p)
        return changed


def mentions(brain_dir: Path, ref: Ref, name: str) -> list[str]:
    """The sentences of a daily entry that name ``name`` (all its sentences if none does).

    Raises:
        InvalidArgumentError: ``ref`` leads outside the brain folder.
    """
    from memlane.timeline.engines import _sentences

    ref = source_ref(str(ref), brain_dir)
    root = Path(brain_dir).expanduser().resolve()
    _, sections = notes.read_note(root / ref.path, root)
    text = "\n".join(s.text for s in sections if ref.entry is None or s.ref.entry == ref.entry)
    found = _sentences(text)
    named = [s for s in found if name.lower() in s.lower()]
    return named or found
