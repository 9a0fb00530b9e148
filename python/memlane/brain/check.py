"""What :meth:`memlane.brain.Brain.check` reports: every way a brain folder can be wrong.

Unique keys (archives included), sections and dates, references and supersession links both
ways, caps, MemoryGuard over every file (a hand edit can bring in what a write would refuse),
a stale compact index, and the provenance of summaries and wiki pages.

Example:
    >>> import tempfile
    >>> from memlane.brain import Brain
    >>> check(Brain(tempfile.mkdtemp(), home=tempfile.mkdtemp()), archived=[])
    []
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from memlane import secrets
from memlane._fs import read_text
from memlane.brain import provenance
from memlane.brain.document import INDEX_END, Entry, parse
from memlane.brain.guard import DERIVABLE, Finding
from memlane.brain.keywords import index_line
from memlane.brain.transaction import BrainFolder

__all__ = ["Problem", "check"]


@dataclass(frozen=True)
class Problem:
    """One finding of :meth:`memlane.brain.Brain.check`.

    Attributes:
        level: ``error`` (check fails) or ``warning``.
        code: ``duplicate_key``, ``over_cap``, ``dangling_reference``, ``guard``, …
        message: One line for humans.
        key: The entry concerned, if any.
        path: The file concerned.
    """

    level: str
    code: str
    message: str
    key: str | None = None
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"level": self.level, "code": self.code, "message": self.message, "key": self.key, "path": self.path}


def _guard_problem(f: Finding, key: str | None, path: str) -> Problem:
    """A MemoryGuard finding in a brain file as a check problem; an entry's names what happens to it."""
    subject = key or "text outside the entries"
    if f.rule.startswith("secret."):
        label = secrets.KIND_BY_NAME[f.rule.split(".", 1)[1]].label
        message = f"{subject} holds a secret ({label} {f.excerpt}, masked wherever memlane shows it): rotate it, then write where it lives instead"
    else:
        message = (
            f"{subject} fails MemoryGuard rule {f.rule}: {f.excerpt!r} (a hand edit?); withheld from every injection"
        )
    return Problem("error", "guard", message, key, path)


def check(brain: BrainFolder, archived: list[Entry]) -> list[Problem]:
    """Validate ``brain``: unique keys (``archived``: the entries of its archives), caps,
    references, supersession links, guard re-scan, and the provenance of every summary and
    wiki statement (:mod:`memlane.brain.provenance`).

    Returns:
        Problems, errors first; empty when all is well.
    """
    problems: list[Problem] = []
    memory_text, evolution_text = read_text(brain.memory_path), read_text(brain.evolution_path)
    docs = [
        (brain.memory_path, parse(memory_text, brain.memory_schema), memory_text),
        (brain.evolution_path, parse(evolution_text, brain.evolution_schema), evolution_text),
    ]
    live = [(p, e) for p, doc, _ in docs for e in doc.entries()]
    all_keys = Counter(e.key for _, e in live) + Counter(e.key for e in archived)
    known = set(all_keys)
    for key, n in sorted(all_keys.items()):
        if n > 1:
            problems.append(
                Problem(
                    "error",
                    "duplicate_key",
                    f"{key} is used {n} times (keys must be unique, archives included)",
                    key,
                )
            )
    by_key = {e.key: e for _, e in live} | {e.key: e for e in archived if e.key not in {x.key for _, x in live}}
    for path, e in live:
        where = str(path)
        spec = brain.memory_schema.by_heading(e.section) or brain.evolution_schema.by_heading(e.section)
        if spec is not None and spec.prefix != e.prefix:
            problems.append(
                Problem(
                    "warning",
                    "wrong_section",
                    f"{e.key} sits in {e.section}, whose keys start with {spec.prefix}",
                    e.key,
                    where,
                )
            )
        if not e.date:
            problems.append(Problem("warning", "missing_date", f"{e.key} has no date", e.key, where))
        for field_name in ("valid_from", "valid_until", "resolved"):
            value = e.meta.get(field_name)
            if value and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
                problems.append(
                    Problem("warning", "bad_date", f"{e.key} {field_name} is {value!r}, not YYYY-MM-DD", e.key, where)
                )
        for f in brain.guard.advise(e.text):
            rule = next(r for r in DERIVABLE if r.name == f.rule)
            problems.append(
                Problem(
                    "warning",
                    "derivable",
                    f"{e.key} holds {rule.description} ({f.excerpt!r}): what not to save",
                    e.key,
                    where,
                )
            )
        for ref in e.references():
            if ref not in known:
                problems.append(
                    Problem(
                        "warning",
                        "dangling_reference",
                        f"{e.key} mentions {ref}, which does not exist",
                        e.key,
                        where,
                    )
                )
        for link, back in (("superseded_by", "supersedes"), ("supersedes", "superseded_by")):
            target = e.meta.get(link)
            if not target:
                continue
            if target not in known:
                problems.append(
                    Problem(
                        "warning",
                        "dangling_reference",
                        f"{e.key} {link} {target}, which does not exist",
                        e.key,
                        where,
                    )
                )
            elif by_key[target].meta.get(back) != e.key:
                problems.append(
                    Problem(
                        "warning",
                        "one_way_link",
                        f"{e.key} {link} {target}, but {target} has no {back}: {e.key}",
                        e.key,
                        where,
                    )
                )
    for path, doc, text in docs:
        for s in doc.sections:
            if s.spec is None:
                continue
            chars = sum(len(e.render()) for e in s.entries())
            if s.spec.chars is not None and chars > s.spec.chars:
                problems.append(
                    Problem(
                        "warning",
                        "over_char_cap",
                        f"{s.spec.name} holds {chars:,} characters, cap {s.spec.chars:,}: "
                        f"archive or supersede entries, or raise the cap (--char-cap {s.spec.prefix}=N)",
                        path=str(path),
                    )
                )
            n = len(s.entries())
            if s.spec.cap is not None and n > s.spec.cap:
                inactive = sum(not e.active for e in s.entries())
                hint = (
                    "run `memlane brain archive`"
                    if s.spec.policy == "rolling" or inactive
                    else f"its active entries are never archived automatically: supersede some or raise the cap (--cap {s.spec.prefix}=N)"
                )
                problems.append(
                    Problem(
                        "warning",
                        "over_cap",
                        f"{s.spec.name} holds {n} entries, cap {s.spec.cap}: {hint}",
                        path=str(path),
                    )
                )
        findings = brain.guard.scan(text)
        by_entry = {e.key: brain.guard.scan(e.render()) for e in doc.entries()} if findings else {}
        for key, found in by_entry.items():
            problems += [_guard_problem(f, key, str(path)) for f in found]
        # The rest (prose, or the entry's line in the compact index when it differs).
        attributed = {f for found in by_entry.values() for f in found}
        problems += [_guard_problem(f, None, str(path)) for f in findings if f not in attributed]
        if text and doc.entries():
            block = "".join(index_line(e) for e in doc.entries())
            if block not in text or INDEX_END not in text:
                problems.append(
                    Problem(
                        "warning",
                        "stale_index",
                        "the compact index is out of date: run `memlane brain index`",
                        path=str(path),
                    )
                )
    # Summaries and wiki pages: every statement names its source, and every source resolves.
    problems += [Problem("error", code, message, path=path) for code, message, path in provenance.check(brain.dir)]
    # A hand edit shows up in its entry and in the index line: report it once.
    return sorted(dict.fromkeys(problems), key=lambda p: (p.level != "error", p.code, p.key or ""))
