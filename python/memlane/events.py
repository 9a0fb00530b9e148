"""Memory events: one JSON line per read, write, search, supersede or blocked write.

The log lives at ``<home>/events.jsonl``. Each line carries ``type``, ``time`` (ISO-8601
UTC), the ``path`` or ``query`` it concerns and result counts; ``memlane status`` shows a
summary. Lines are appended with one ``write`` on an ``O_APPEND`` descriptor, so concurrent
processes interleave whole lines without a lock.

Example:
    >>> import tempfile
    >>> log = EventLog(tempfile.mkdtemp())
    >>> log.append("search", query="billing database", results=2)
    >>> summarize(log.path)["by_type"]
    {'search': 1}
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import datetime, timezone
from os import PathLike
from pathlib import Path
from typing import Any

EVENTS_NAME = "events.jsonl"

EVENT_TYPES = ("read", "write", "search", "supersede", "resolve", "archive", "distill", "blocked")
"""Event types memlane writes."""


class EventLog:
    """The append-only events log of a memlane home.

    Args:
        home: The memlane home; the log is ``events.jsonl`` inside it.
    """

    def __init__(self, home: str | PathLike[str]) -> None:
        self.path = Path(home).expanduser() / EVENTS_NAME

    def append(self, type: str, **fields: Any) -> None:  # noqa: A002 - "type" is the field's name in the log
        """Append one event; ``fields`` must be JSON-serialisable.

        The log is a record, not a dependency: an event that cannot be written (a full disk, a
        read-only home) is skipped, and the search or write it describes goes on.
        """
        record = {"type": type, "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")}
        record.update(fields)
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        try:
            try:
                fd = os.open(self.path, flags, 0o644)
            except FileNotFoundError:  # a home not made yet: no mkdir on every search
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, flags, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError:
            return

    def read(self) -> list[dict[str, Any]]:
        """Every event, oldest first (a torn last line from a crash is skipped)."""
        return list(_iter_events(self.path))


class NoEventLog(EventLog):
    """An events log that keeps nothing: for an index whose local folder is a cache (a
    sharded index, searched in process or served), where no one reads a log and a line per
    search would grow without bound (a server at 100 queries/s: ~1 GB a day).
    """

    def __init__(self) -> None:
        """No file."""

    def append(self, type: str, **fields: Any) -> None:  # noqa: A002 - EventLog's signature
        """Keep nothing."""

    def read(self) -> list[dict[str, Any]]:
        """No events."""
        return []


def _iter_events(path: Path) -> Any:
    try:
        fh = open(path, encoding="utf-8")
    except FileNotFoundError:
        return
    with fh:
        for line in fh:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield record


def summarize(path: str | PathLike[str]) -> dict[str, Any]:
    """Counts of an events log for ``memlane status``.

    Args:
        path: The log file, or the memlane home holding ``events.jsonl``.

    Returns:
        ``{"path", "events", "by_type", "blocked_by_rule", "first", "last"}``.
    """
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / EVENTS_NAME
    by_type: Counter[str] = Counter()
    blocked: Counter[str] = Counter()
    first = last = None
    for record in _iter_events(p):
        by_type[str(record.get("type"))] += 1
        if record.get("type") == "blocked":
            blocked[str(record.get("rule"))] += 1
        first = first or record.get("time")
        last = record.get("time")
    return {
        "path": str(p),
        "events": sum(by_type.values()),
        "by_type": dict(sorted(by_type.items())),
        "blocked_by_rule": dict(sorted(blocked.items())),
        "first": first,
        "last": last,
    }


def format_summary(summary: dict[str, Any]) -> str:
    """One human line for a :func:`summarize` result.

    Example:
        >>> format_summary({"events": 3, "by_type": {"read": 2, "blocked": 1}, "blocked_by_rule": {"unicode.bidi": 1}, "last": "2026-04-01T10:00:00.000Z"})
        'memory events 3 (read 2, blocked 1; blocked by unicode.bidi 1), last 2026-04-01T10:00:00.000Z'
    """
    if not summary["events"]:
        return "memory events 0"
    kinds = ", ".join(f"{k} {v}" for k, v in summary["by_type"].items())
    rules = ", ".join(f"{k} {v}" for k, v in summary["blocked_by_rule"].items())
    blocked = f"; blocked by {rules}" if rules else ""
    return f"memory events {summary['events']} ({kinds}{blocked}), last {summary['last']}"
