"""Provenance of summary statements: ``(DailyActivity/2026-03-02.md › 14:40)`` at the end of a line.

Every statement memlane writes into a summary (``Weekly/``, ``Monthly/``, ``WISDOM.md``) or a
wiki page (``wiki/``) ends with the sources it came from, relative to the brain folder, so a
tool can follow it to the evidence and :meth:`memlane.brain.Brain.check` can verify it:

- ``(DailyActivity/2026-03-02.md › 14:40)`` — an entry of a daily note (its ``## 14:40 …`` heading);
- ``(DailyActivity/2026-03-02.md)``, ``(Weekly/2026-W10.md)``, ``(Monthly/2026-03.md)`` — a whole file;
- ``(Monthly/2026-03.md; Monthly/2026-04.md)`` — several sources, ``; `` between them.

Example:
    >>> line = "- Billing moved to DynamoDB. (DailyActivity/2026-03-02.md › 14:40)"
    >>> [(r.path, r.entry) for r in refs(line)]
    [('DailyActivity/2026-03-02.md', '14:40')]
    >>> strip(line)
    '- Billing moved to DynamoDB.'
    >>> render([Ref("Weekly/2026-W10.md"), Ref("Weekly/2026-W11.md")])
    '(Weekly/2026-W10.md; Weekly/2026-W11.md)'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memlane._fs import read_text

SEP = " › "
"""Between a file and the entry heading inside it."""

SUMMARY_DIRS = ("Weekly", "Monthly", "wiki")
"""Brain sub-folders holding summaries and wiki pages (``WISDOM.md`` sits in the brain folder)."""
WISDOM_FILE = "WISDOM.md"

_REF = r"(?:DailyActivity|Weekly|Monthly|wiki)/[^()\s;›][^();›]*?\.md(?: › [^();]+?)?"
_TRAILER = re.compile(r"\s*\((" + _REF + r"(?:; " + _REF + r")*)\)\s*$")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True, order=True)
class Ref:
    """One source of a statement: a file relative to the brain folder and, optionally, an entry in it.

    Attributes:
        path: ``DailyActivity/2026-03-02.md``, ``Weekly/2026-W10.md``…
        entry: The start of the entry's heading (``14:40``), or None for the whole file.
    """

    path: str
    entry: str | None = None

    def __str__(self) -> str:
        return self.path if self.entry is None else f"{self.path}{SEP}{self.entry}"


def refs(line: str) -> list[Ref]:
    """The sources a line ends with (empty when it ends with none)."""
    m = _TRAILER.search(line)
    if not m:
        return []
    out = []
    for part in m.group(1).split("; "):
        path, _, entry = part.partition(SEP)
        out.append(Ref(path.strip(), entry.strip() or None))
    return out


def strip(line: str) -> str:
    """The line without its trailing provenance."""
    m = _TRAILER.search(line)
    return line[: m.start()] if m else line


def render(sources: list[Ref]) -> str:
    """``(a; b)`` for a statement's sources, in the given order."""
    return "(" + "; ".join(str(r) for r in sources) + ")"


def brain_root(summary: Path) -> Path:
    """The brain folder of a summary or wiki page (what its provenance paths are relative to)."""
    return summary.parent.parent if summary.parent.name in SUMMARY_DIRS else summary.parent


def summary_files(brain_dir: Path) -> list[Path]:
    """Every summary and wiki page in a brain folder, sorted."""
    found = [p for d in SUMMARY_DIRS for p in sorted((brain_dir / d).glob("*.md"))]
    wisdom = brain_dir / WISDOM_FILE
    return found + ([wisdom] if wisdom.is_file() else [])


def entry_headings(text: str) -> list[str]:
    """The heading texts of a markdown file, outside fenced code."""
    out: list[str] = []
    fence = None
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            mark = stripped[:3]
            fence = None if fence == mark else (fence or mark)
            continue
        if fence is None and (m := _HEADING.match(line)):
            out.append(m.group(1))
    return out


def resolves(ref: Ref, brain_dir: Path, cache: dict[str, list[str] | None] | None = None) -> bool:
    """Whether the file exists in ``brain_dir`` and, for an entry, has a heading starting with it."""
    cache = {} if cache is None else cache
    if ref.path not in cache:
        target = brain_dir / ref.path
        cache[ref.path] = entry_headings(read_text(target)) if target.is_file() else None
    headings = cache[ref.path]
    if headings is None:
        return False
    return ref.entry is None or any(h == ref.entry or h.startswith(ref.entry + " ") for h in headings)


def statements(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every statement of a summary: its list items outside the frontmatter."""
    lines = text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() in ("---", "...")), None)
        start = end + 1 if end is not None else 0
    return [(i + 1, line) for i, line in enumerate(lines) if i >= start and re.match(r"\s*[-*] ", line)]


def check(brain_dir: Path) -> list[tuple[str, str, str]]:
    """Problems of every summary and wiki page: ``(code, message, path)``.

    ``missing_provenance``: a statement names no source; ``dangling_provenance``: a source
    does not resolve (the file or the entry is gone).
    """
    problems: list[tuple[str, str, str]] = []
    cache: dict[str, list[str] | None] = {}
    for path in summary_files(brain_dir):
        rel = path.relative_to(brain_dir).as_posix()
        for n, line in statements(read_text(path)):
            found = refs(line)
            if not found:
                problems.append(
                    (
                        "missing_provenance",
                        f"{rel}:{n} states something without its source: {line.strip()[:80]!r}",
                        str(path),
                    )
                )
            for ref in found:
                if not resolves(ref, brain_dir, cache):
                    problems.append(("dangling_provenance", f"{rel}:{n} cites {ref}, which does not exist", str(path)))
    return problems
