"""Memory events: one JSON line per read, write, search, supersede or blocked write.

The log lives at ``<home>/events.jsonl``. Each line carries ``type``, ``time`` (ISO-8601
UTC), the ``path`` or ``query`` it concerns and result counts; ``memlane status`` shows a
summary. Lines are appended with one ``write`` on an ``O_APPEND`` descriptor, so concurrent
processes interleave whole lines without a lock.

The log is bounded. A ``query`` longer than :data:`MAX_QUERY_CHARS` keeps its first
characters and says how many were left out (a hook searching a pasted 5 MB log used to add
10 MB a call). Past :data:`MAX_LOG_BYTES` the file moves to ``events.jsonl.1`` (the one
before to ``.2``; :data:`GENERATIONS` are kept) and a new one starts. One appender rotates,
under a lock, after checking that no other did meanwhile; an appender that opened the file
before the move finishes its line in the moved file, so no line is torn or lost (but the
oldest generation's). Reading (:meth:`EventLog.read`, :func:`summarize`) covers every
generation kept, oldest first. The injection audit (:mod:`memlane.audit`) is the same kind of
log under another name and cap.

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
import stat
from collections import Counter
from datetime import datetime, timezone
from os import PathLike
from pathlib import Path
from typing import Any

EVENTS_NAME = "events.jsonl"

MAX_QUERY_CHARS = 500
"""Characters of a ``query`` field the log keeps (dreaming counts questions by their words;
the first 500 characters tell one question from another)."""

MAX_LOG_BYTES = 16 << 20
"""Size past which ``events.jsonl`` moves to ``events.jsonl.1`` and a new one starts."""

GENERATIONS = 2
"""Moved-aside logs kept (``events.jsonl.1``, ``.2``): at most ~48 MiB of events in all."""

# O_NONBLOCK: a FIFO put where the log belongs (with no reader) fails to open instead of
# hanging the search that logs; regular files ignore the flag.
_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0)

EVENT_TYPES = ("read", "write", "search", "supersede", "resolve", "archive", "distill", "blocked")
"""Event types memlane writes."""


def _bounded(query: Any) -> Any:
    """A query as the log keeps it: its first :data:`MAX_QUERY_CHARS` characters and a marker
    saying how many more there were.

    Example:
        >>> _bounded("x" * 502)[-26:]
        'xxxxx… [+2 chars not kept]'
    """
    if not isinstance(query, str) or len(query) <= MAX_QUERY_CHARS:
        return query
    return f"{query[:MAX_QUERY_CHARS]}… [+{len(query) - MAX_QUERY_CHARS:,} chars not kept]"


class EventLog:
    """The append-only events log of a memlane home.

    Args:
        home: The memlane home; the log is ``events.jsonl`` inside it.
        max_bytes: Size past which the log rotates (default :data:`MAX_LOG_BYTES`).
        name: The log's file name in the home: another log with the same bounds, masking and
            rotation (the injection audit's ``injections.jsonl``, :mod:`memlane.audit`).
    """

    def __init__(self, home: str | PathLike[str], max_bytes: int = MAX_LOG_BYTES, *, name: str = EVENTS_NAME) -> None:
        self.path = Path(home).expanduser() / name
        self.max_bytes = max_bytes

    def append(self, type: str, **fields: Any) -> None:
        """Append one event; ``fields`` must be JSON-serialisable.

        The log is a record, not a dependency: an event that cannot be written (a full disk, a
        read-only home) is skipped, and the search or write it describes goes on.
        """
        record = {
            "type": type,
            "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        record.update(fields)
        if isinstance(record.get("query"), str):
            from memlane.secrets import mask  # a key searched for by its value stays out of the log

            record["query"] = _bounded(mask(record["query"]))
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        try:
            fd = self._open()
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):  # a FIFO or a device is no log
                    return
                if st.st_size and st.st_size + len(line) > self.max_bytes:
                    # Rotate before writing, so the log never grows past its cap.
                    os.close(fd)
                    fd = -1
                    self._rotate(st.st_ino)
                    fd = self._open()
                os.write(fd, line)
            finally:
                if fd >= 0:
                    os.close(fd)
        except OSError:
            return

    def _open(self) -> int:
        try:
            return os.open(self.path, _OPEN_FLAGS, 0o644)
        except FileNotFoundError:  # a home not made yet: no mkdir on every search
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, _OPEN_FLAGS, 0o644)

    def _rotate(self, full: int) -> None:
        """Move the full log (inode ``full``) aside: ``.1`` → ``.2`` …, the log → ``.1``.

        Every appender that finds the log full gets here; the lock lets one move it, and the
        inode read again under the lock tells the others it was moved already (without that
        check, a second move would put a fresh log over the generation just moved aside).
        """
        from memlane._fs import _try_lock, _unlock  # only when the log is full

        name = self.path.name
        fd = os.open(self.path.with_name(name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _try_lock(fd):  # another appender is moving it
                return
            try:
                try:
                    moved = self.path.stat().st_ino != full
                except FileNotFoundError:  # moved, and no appender has started the new log yet
                    moved = True
                if moved:  # by another appender meanwhile
                    return
                for n in range(GENERATIONS - 1, 0, -1):
                    older = self.path.with_name(f"{name}.{n}")
                    if older.exists():
                        os.replace(older, self.path.with_name(f"{name}.{n + 1}"))
                os.replace(self.path, self.path.with_name(f"{name}.1"))
            finally:
                _unlock(fd)
        finally:
            os.close(fd)

    def generations(self) -> list[Path]:
        """The log's files, oldest first: ``events.jsonl.2``, ``.1``, then ``events.jsonl``
        (the moved-aside files that exist, and the log's own path whether it exists or not)."""
        return _generations(self.path)

    def read(self) -> list[dict[str, Any]]:
        """Every event kept, oldest first (a torn last line from a crash is skipped)."""
        return [record for p in self.generations() for record in _iter_events(p)]

    def tail(self, n: int) -> list[dict[str, Any]]:
        """The last ``n`` events (or fewer), oldest first, read from the end of the newest
        files only: a page showing recent events reads kilobytes, not a 16 MiB log.

        Example:
            >>> import tempfile
            >>> log = EventLog(tempfile.mkdtemp())
            >>> for q in ("a", "b", "c"):
            ...     log.append("search", query=q)
            >>> [e["query"] for e in log.tail(2)]
            ['b', 'c']
        """
        found: list[dict[str, Any]] = []
        for path in reversed(self.generations()):
            found = _tail_events(path, n - len(found)) + found
            if len(found) >= n:
                break
        return found[-n:] if n > 0 else []


class NoEventLog(EventLog):
    """An events log that keeps nothing: for an index whose local folder is a cache (a
    sharded index, searched in process or served), where no one reads a log and a line per
    search would grow without bound (a server at 100 queries/s: ~1 GB a day).
    """

    def __init__(self) -> None:
        """No file."""
        self.max_bytes = MAX_LOG_BYTES

    def append(self, type: str, **fields: Any) -> None:
        """Keep nothing."""

    def read(self) -> list[dict[str, Any]]:
        """No events."""
        return []

    def tail(self, n: int) -> list[dict[str, Any]]:
        """No events."""
        return []


def _generations(path: Path) -> list[Path]:
    older = [path.with_name(f"{path.name}.{n}") for n in range(GENERATIONS, 0, -1)]
    return [p for p in older if p.is_file()] + [path]


_TAIL_BYTES = 256 << 10
"""How far from its end :meth:`EventLog.tail` reads a file (a thousand events or more)."""


def _tail_events(path: Path, n: int) -> list[dict[str, Any]]:
    """The last ``n`` whole events in the last :data:`_TAIL_BYTES` of ``path``, oldest first."""
    try:
        if n <= 0 or not stat.S_ISREG(path.stat().st_mode):
            return []
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - _TAIL_BYTES))
            data = fh.read()
    except OSError:
        return []
    lines = data.split(b"\n")
    if size > _TAIL_BYTES:
        lines = lines[1:]  # the first line read may be cut
    out = []
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
            if len(out) == n:
                break
    return out[::-1]


def _iter_events(path: Path) -> Any:
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # never open a FIFO: it would wait for a writer
            return
        fh = open(path, encoding="utf-8")  # noqa: SIM115 (the `with fh:` below closes it)
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


def parse_lines(data: bytes, type: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """The records in the whole lines of ``data`` (a log read from some offset on), those of
    ``type`` only when given, and how many bytes those whole lines take: a line still being
    written is left for the next read; a line torn by a crash is skipped.

    Example:
        >>> parse_lines(b'{"type": "search"}\\n{"type": "read"}\\nnot json\\n{"type": "sea', "search")
        ([{'type': 'search'}], 45)
    """
    end = data.rfind(b"\n") + 1
    records = []
    for line in data[:end].splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # torn, or not UTF-8
            continue
        if isinstance(record, dict) and (type is None or record.get("type") == type):
            records.append(record)
    return records, end


def summarize(path: str | PathLike[str]) -> dict[str, Any]:
    """Counts of an events log for ``memlane status`` (its rotated generations included).

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
    for record in (r for g in _generations(p) for r in _iter_events(g)):
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
