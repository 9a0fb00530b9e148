"""The brain folder as compaction reads it: dailies, periods, sections, frontmatter.

Notes are parsed by the core's markdown parser (``memlane._core.parse_file``), the same one
that indexes them, so a section here is a chunk's section there. Periods are ISO weeks
(``2026-W10``, Monday to Sunday) and calendar months (``2026-03``); a week belongs to the month
of its Thursday, as ISO 8601 assigns weeks to years.

Example:
    >>> from datetime import date
    >>> iso_week(date(2026, 3, 2)), week_days("2026-W10"), week_month("2026-W10")
    ('2026-W10', (datetime.date(2026, 3, 2), datetime.date(2026, 3, 8)), '2026-03')
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from memlane import _core
from memlane.brain.brain import DAILY_DIR
from memlane.brain.provenance import Ref
from memlane.errors import InvalidArgumentError

WEEKLY_DIR = "Weekly"
MONTHLY_DIR = "Monthly"
WIKI_DIR = "wiki"
_DAILY_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
_ENTRY_TIME = re.compile(r"^(\d{1,2}:\d{2})\b")
_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


def iso_week(day: date) -> str:
    """The ISO week of a day, ``YYYY-Www``."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def week_days(week: str) -> tuple[date, date]:
    """Monday and Sunday of an ISO week."""
    m = _WEEK.match(week)
    if not m:
        raise InvalidArgumentError(f"{week!r} is not an ISO week like 2026-W10")
    monday = date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
    return monday, monday + timedelta(days=6)


def week_month(week: str) -> str:
    """The month a week belongs to: its Thursday's."""
    return (week_days(week)[0] + timedelta(days=3)).strftime("%Y-%m")


def month_days(month: str) -> tuple[date, date]:
    """First and last day of a month ``YYYY-MM``."""
    m = _MONTH.match(month)
    if not m:
        raise InvalidArgumentError(f"{month!r} is not a month like 2026-03")
    first = date(int(m.group(1)), int(m.group(2)), 1)
    nxt = date(first.year + first.month // 12, first.month % 12 + 1, 1)
    return first, nxt - timedelta(days=1)


def file_hash(path: Path) -> str:
    """A short content hash (sha256, 16 hex digits) naming the exact bytes compaction read."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def dailies(brain_dir: Path) -> dict[date, Path]:
    """``DailyActivity/YYYY-MM-DD.md`` notes by day (other files in the folder are not dailies)."""
    folder = brain_dir / DAILY_DIR
    out: dict[date, Path] = {}
    if not folder.is_dir():
        return out
    for p in sorted(folder.iterdir()):
        m = _DAILY_NAME.match(p.name)
        if m and p.is_file():
            try:
                out[date.fromisoformat(m.group(1))] = p
            except ValueError:
                continue
    return out


@dataclass(frozen=True)
class Section:
    """One section of a note, as the index chunks it.

    Attributes:
        ref: Where it is, relative to the brain folder (``DailyActivity/2026-03-02.md › 14:40``).
        heading: Its own heading text (``14:40 | Billing DB``), empty before the first heading.
        text: Its lines without the heading line.
        day: The note's day, if the note is dated.
    """

    ref: Ref
    heading: str
    text: str
    day: date | None


def read_note(path: Path, brain_dir: Path) -> tuple[dict[str, Any], list[Section]]:
    """A note's frontmatter and sections (parsed by the core's markdown parser)."""
    parsed = _core.parse_file(str(path), "markdown")
    note = parsed.get("note") or {}
    rel = path.relative_to(brain_dir).as_posix()
    m = _DAILY_NAME.match(path.name)
    day = date.fromisoformat(m.group(1)) if m else None
    sections = []
    for s in note.get("sections", []):
        heading = s["heading"][-1] if len(s["heading"]) > 1 else ""
        lines = s["text"].split("\n")
        # The section's own heading line (and a note title above it) is context, not content.
        while lines and (lines[0].startswith("#") or not lines[0].strip()):
            lines.pop(0)
        m_time = _ENTRY_TIME.match(heading)
        entry = m_time.group(1) if m_time and day is not None else None
        sections.append(Section(Ref(rel, entry), heading, "\n".join(lines).strip(), day))
    return dict(note.get("frontmatter") or {}), sections


def frontmatter(path: Path) -> dict[str, Any]:
    """A summary's frontmatter as written (YAML), or ``{}`` when it has none or cannot be read."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---\n", 4)
    if end < 0:
        return {}
    try:
        data = yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def render_frontmatter(fields: dict[str, Any]) -> str:
    """``---`` YAML ``---`` in the given key order (block style, which the core's parser reads too)."""
    import yaml

    body = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10_000)
    return f"---\n{body}---\n"
