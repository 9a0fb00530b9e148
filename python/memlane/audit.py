"""The injection audit: what memory each agent session was given, and why, recorded by key.

Memory enters an agent where nobody sees it: a hook's session-start snapshot and recall, an
MCP ``recall`` or ``get``. Each such injection appends one line to ``<home>/injections.jsonl``::

    {"type": "inject", "time": "2026-04-02T14:03:00.123Z", "client": "claude-code",
     "session": "0b5c…", "event": "user-prompt-submit", "project": "/src/billing",
     "query": "which database does billing use", "tokens": 812,
     "items": [{"key": "9f2c…", "src": "transcript", "rank": 1, "rel": 0.8123,
                "bm25": 1.0, "vec": 0.6102, "cov": 0.75, "tok": 153}, …]}

An item is named by its key (a chunk id, or a brain entry's key like ``KD07``), never by its
text: the log holds no memory, only which memory went where (a chunk forgotten since is gone
from the index and leaves no trace of its words here). ``rank`` is the item's place in what was
injected (a session-start's snapshot entries, ``src: "brain"``, are ranked apart from its
recall's hits), ``rel`` its relevance on the absolute scale the floor is set on, then the parts
that made it (``bm25``, ``vec``, ``cov`` for a hit, ``kw`` and ``vec`` for a brain entry), and
``tok`` its estimated tokens; floats keep four decimals and an unknown part is left out, so an
item costs under 200 bytes (``benches/bench_injections.py``).

The log is an :class:`~memlane.events.EventLog` under another name: the same ``O_APPEND``
writes, masked and bounded query, and rotation, with its own cap, :data:`MAX_BYTES` (or
``$MEMLANE_INJECTIONS_MAX_BYTES``) and two generations kept. :class:`Injections` reads it for
a long-lived viewer: newest first, filtered by session, key or client, parsing only what was
appended since the last call.

Example:
    >>> import tempfile
    >>> home = tempfile.mkdtemp()
    >>> record(home, client="mcp", session=None, event="get", project=None, query=None, tokens=40,
    ...        items=[{"key": "KD07", "src": "brain", "rank": 1, "tok": 40}])
    >>> [r["items"][0]["key"] for r in Injections(home).records(key="KD07")]
    ['KD07']
"""

from __future__ import annotations

import itertools
import os
import stat
import sys
import threading
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.errors import InvalidArgumentError
from memlane.events import EventLog, parse_lines

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from memlane.recall import RecallItem

INJECTIONS_NAME = "injections.jsonl"

MAX_BYTES = 4 << 20
"""Size past which ``injections.jsonl`` moves aside (two generations kept: ~12 MiB in all)."""

MAX_BYTES_ENV = "MEMLANE_INJECTIONS_MAX_BYTES"
"""Environment variable that sets the cap in place of :data:`MAX_BYTES`."""

MIN_BYTES = 64 << 10
"""The smallest cap: a recall of the most items a hook injects fits in one generation."""

_PART_NAMES = {"bm25": "bm25", "vector": "vec", "coverage": "cov", "keyword": "kw"}
# The first bytes of a file tell it from a later file given the same inode (each line starts
# with a millisecond time): parsed records are kept per inode across a rotation.
_HEAD_BYTES = 256


def max_bytes() -> int:
    """The log's cap: ``$MEMLANE_INJECTIONS_MAX_BYTES`` when set, else :data:`MAX_BYTES`.

    Raises:
        memlane.errors.InvalidArgumentError: The variable is not a whole number of bytes of at
            least :data:`MIN_BYTES`.
    """
    value = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not value:
        return MAX_BYTES
    try:
        cap = int(value)
    except ValueError:
        cap = -1
    if cap < MIN_BYTES:
        raise InvalidArgumentError(f"${MAX_BYTES_ENV} must be a whole number of bytes ≥ {MIN_BYTES}, got {value!r}")
    return cap


def log(home: str | PathLike[str]) -> EventLog:
    """The injections log of ``home`` (written and read through :class:`~memlane.events.EventLog`)."""
    return EventLog(home, max_bytes(), name=INJECTIONS_NAME)


# ---------------------------------------------------------------------------- writing


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def recall_items(items: Sequence[RecallItem], first_rank: int = 1) -> list[dict[str, Any]]:
    """The audit's items for recalled items, ranked in their order from ``first_rank``.

    Example:
        >>> from memlane.recall import RecallItem
        >>> item = RecallItem("c1", "transcript", "exit code 137", 0.61, "session s1 · turn 3", None,
        ...                   relevance=0.612345, parts={"bm25": 1.0, "vector": None, "coverage": 0.5})
        >>> recall_items([item])
        [{'key': 'c1', 'src': 'transcript', 'rank': 1, 'rel': 0.6123, 'bm25': 1.0, 'cov': 0.5, 'tok': 9}]
    """
    from memlane.recall import estimate_tokens

    out = []
    for rank, item in enumerate(items, first_rank):
        entry: dict[str, Any] = {"key": item.id, "src": item.source, "rank": rank}
        if item.relevance is not None:
            entry["rel"] = _round(item.relevance)
        for name, value in (item.parts or {}).items():
            if value is not None and name in _PART_NAMES:
                entry[_PART_NAMES[name]] = _round(value)
        entry["tok"] = estimate_tokens(item.provenance) + estimate_tokens(item.text)
        out.append(entry)
    return out


def text_item(key: str, src: str, rank: int, text: str) -> dict[str, Any]:
    """The audit's item for ``text`` injected whole under ``key`` (an MCP ``get``, a typed item).

    Example:
        >>> text_item("KD07", "brain", 1, "[KD07] 2026-04-01 Use Postgres.")
        {'key': 'KD07', 'src': 'brain', 'rank': 1, 'tok': 8}
    """
    from memlane.recall import estimate_tokens

    return {"key": key, "src": src, "rank": rank, "tok": estimate_tokens(text)}


def snapshot_items(text: str) -> list[dict[str, Any]]:
    """The brain entries a session-start snapshot injects, in the order it shows them first,
    each with the tokens of its lines (its index line, its entry line and the indented lines
    under it); an entry withheld by the guard shows no text and is left out.

    Example:
        >>> snapshot_items("# MEMORY\\n- [KD01] 2026-04-01 Use Postgres.\\n\\n## Key Decisions\\n"
        ...                "- [KD01] 2026-04-01 — Use Postgres.\\n  Detail: s1\\n- [KD02] withheld: unicode.bidi\\n")
        [{'key': 'KD01', 'src': 'brain', 'rank': 1, 'tok': 23}]
    """
    from memlane.brain.document import _ENTRY_RE
    from memlane.recall import estimate_tokens

    tokens: dict[str, int] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _ENTRY_RE.match(line)
        if m:
            current = None if m.group("rest").startswith("withheld:") else m.group("key")
        elif not line[:1].isspace() or not line.strip():
            current = None
        if current is not None:
            tokens[current] = tokens.get(current, 0) + estimate_tokens(line + "\n")
    return [{"key": key, "src": "brain", "rank": rank, "tok": tok} for rank, (key, tok) in enumerate(tokens.items(), 1)]


def record(
    home: str | PathLike[str],
    *,
    client: str,
    session: str | None,
    event: str,
    project: str | None,
    query: str | None,
    tokens: int,
    items: Sequence[dict[str, Any]],
) -> None:
    """Append one injection to ``home``'s log (one ``write``). Never fails the answer it records:
    a log that cannot be written is skipped, as :meth:`~memlane.events.EventLog.append` skips it,
    and any other failure (a malformed ``$MEMLANE_INJECTIONS_MAX_BYTES``, say) is one line on
    stderr.

    Args:
        home: The memlane home.
        client: ``claude-code``, ``codex``, ``mcp``.
        session: The agent session's id, when the caller knows it.
        event: ``session-start``, ``user-prompt-submit``, an MCP tool's name.
        project: The project the injection was scoped to (its key), if any.
        query: What was recalled on (masked and bounded in the log), if anything.
        tokens: Estimated tokens of everything injected.
        items: :func:`recall_items` / :func:`snapshot_items`, in the order injected.
    """
    try:
        log(home).append(
            "inject",
            client=client,
            session=session or None,
            event=event,
            project=project or None,
            query=query or None,
            tokens=tokens,
            items=list(items),
        )
    except Exception as exc:  # the agent's answer is already out: say so, and it stands
        reason = " ".join(str(exc).split())
        sys.stderr.write(f"memlane {client}: injection not recorded: {type(exc).__name__}: {reason}\n")


# ---------------------------------------------------------------------------- reading


@dataclass
class _Parsed:
    """One file of the log as far as it was read: its first bytes, the offset after its last
    whole line, and the records up to there."""

    head: bytes
    offset: int
    records: list[dict[str, Any]]


def _read(path: Path, cache: dict[tuple[int, int], _Parsed]) -> tuple[tuple[int, int], _Parsed] | None:
    """``path`` parsed, from where the cache (by inode) stopped reading it when it can be; None
    when it is absent or no regular file (a FIFO is never opened: it would wait for a writer)."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            return None
        fh = open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError:
        return None
    ident = (st.st_dev, st.st_ino)
    known = cache.get(ident)
    with fh:
        head = fh.read(_HEAD_BYTES)
        if known is None or head[: len(known.head)] != known.head or st.st_size < known.offset:
            known = _Parsed(b"", 0, [])  # a new file, or another file on a reused inode
        fh.seek(known.offset)
        data = fh.read()
    records, end = parse_lines(data, "inject")  # a line being written is read once it is whole
    if end:
        known = _Parsed(head, known.offset + end, known.records + records)
    return ident, known


class Injections:
    """The injection audit of a memlane home, for a viewer that reads it page after page.

    Parsed records are kept between calls: when the log grew, only the appended bytes are
    parsed; after a rotation the moved file (the same inode) keeps its records, and the new
    one is read from its start. Safe to share between threads.

    Args:
        home: The memlane home.
    """

    def __init__(self, home: str | PathLike[str]) -> None:
        self.path = Path(home).expanduser() / INJECTIONS_NAME
        self._files: dict[tuple[int, int], _Parsed] = {}
        self._signature: tuple[tuple[tuple[int, int], int], ...] = ()
        self._records: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def _all(self) -> list[dict[str, Any]]:
        """Every record kept, oldest first, read again as far as the files changed."""
        with self._lock:
            # Oldest generation first; a file seen twice (moved while being listed) counts once.
            files: dict[tuple[int, int], _Parsed] = {}
            for path in EventLog(self.path.parent, name=INJECTIONS_NAME).generations():
                found = _read(path, self._files)
                if found is not None and found[0] not in files:
                    files[found[0]] = found[1]
            signature = tuple((ident, p.offset) for ident, p in files.items())
            if signature != self._signature:
                self._records = [r for p in files.values() for r in p.records]
                self._signature = signature
            self._files = files
            return self._records

    def records(
        self,
        *,
        session: str | None = None,
        key: str | None = None,
        client: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Injections newest first, each a copy of its record (see the module doc).

        Args:
            session: Only injections into this session.
            key: Only injections holding this chunk id or brain key.
            client: Only this client's (``claude-code``, ``codex``, ``mcp``).
            limit: At most this many.
            offset: Skip this many first (a page's start).

        Raises:
            memlane.errors.InvalidArgumentError: ``limit`` or ``offset`` is negative.
        """
        from memlane import _check

        _check.integer("limit", limit, minimum=0)
        _check.integer("offset", offset, minimum=0)
        page = itertools.islice(self._matching(session, key, client), offset, offset + limit)
        return [{**r, "items": [dict(i) for i in r.get("items") or ()]} for r in page]

    def count(self, *, session: str | None = None, key: str | None = None, client: str | None = None) -> int:
        """How many injections :meth:`records` has with these filters (for paging)."""
        return sum(1 for _ in self._matching(session, key, client))

    def _matching(self, session: str | None, key: str | None, client: str | None) -> Iterator[dict[str, Any]]:
        for r in reversed(self._all()):
            if session is not None and r.get("session") != session:
                continue
            if client is not None and r.get("client") != client:
                continue
            if key is not None and not any(i.get("key") == key for i in r.get("items") or ()):
                continue
            yield r

    def sessions_for(self, key: str) -> list[dict[str, Any]]:
        """Every session ``key`` (a chunk id or a brain key) was injected into, the latest first.

        Returns:
            One dict a session: ``session`` (None for injections whose session was not known,
            as over MCP), ``client`` and ``project`` (of its latest injection), ``first`` and
            ``last`` (times), and ``injections``: ``{"time", "event", "rank", "rel"}`` each,
            newest first (``rel`` None for a snapshot's brain entry).
        """
        sessions: dict[str | None, dict[str, Any]] = {}
        for r in self._matching(None, key, None):
            item = next(i for i in r["items"] if i.get("key") == key)
            s = sessions.setdefault(
                r.get("session"),
                {
                    "session": r.get("session"),
                    "client": r.get("client"),
                    "project": r.get("project"),
                    "first": r.get("time"),
                    "last": r.get("time"),
                    "injections": [],
                },
            )
            s["first"] = r.get("time")
            s["injections"].append(
                {"time": r.get("time"), "event": r.get("event"), "rank": item.get("rank"), "rel": item.get("rel")}
            )
        return list(sessions.values())
