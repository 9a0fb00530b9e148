"""The viewer's pages as data: what each page shows, read from a :class:`memlane.Memory`.

Every function returns plain values (dataclasses, dicts, lists of strings) and does all the
masking: the templates only lay them out (escaped). What is slow to compute and changes only
when the home is written (the health check, the session catalog, the secrets scan) is kept
per state of the home's manifest, so a page answers in milliseconds between index runs.

Example:
    >>> import memlane, tempfile
    >>> views = Views(memlane.open(tempfile.mkdtemp(), embedder="none"))
    >>> views.overview().chunks, views.sessions().total
    (0, 0)
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from memlane import _core, secrets
from memlane.brain import Brain, default_brain_dir
from memlane.brain.provenance import refs, summary_files
from memlane.brain.scopes import entry_project, entry_scope, entry_type
from memlane.errors import InvalidArgumentError, MemlaneError
from memlane.memory import Memory
from memlane.ranking.hit import Hit
from memlane.ranking.relevance import FLOOR
from memlane.sessions import Session, describe

PER_PAGE = 50
"""Sessions, injections and secrets per page."""

SNIPPET_CHARS = 320
TOOL_LINE_CHARS = 240
"""A tool call or result line longer than this shows its beginning (the rest on demand)."""

_T = TypeVar("_T")


# ---------------------------------------------------------------------------- shared shapes


@dataclass(frozen=True)
class Paged:
    """One page of a longer list."""

    items: list[Any]
    total: int
    page: int
    pages: int


def paged(items: Sequence[_T], page: int, per_page: int = PER_PAGE) -> Paged:
    """Page ``page`` (from 1; past the end: the last) of ``items``."""
    pages = max(1, -(-len(items) // per_page))
    page = min(max(1, page), pages)
    return Paged(list(items[(page - 1) * per_page : page * per_page]), len(items), page, pages)


@dataclass(frozen=True)
class Span:
    """A piece of text, marked when it matched the query."""

    text: str
    mark: bool = False


def highlight(text: str, tokens: Sequence[str]) -> list[Span]:
    """``text`` cut where the query's ``tokens`` occur (case-insensitive), those parts marked.

    Example:
        >>> [(s.text, s.mark) for s in highlight("Exit code 137", ["code"])]
        [('Exit ', False), ('code', True), (' 137', False)]
    """
    words = sorted({t for t in tokens if len(t) > 1}, key=len, reverse=True)
    if not words:
        return [Span(text)]
    pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    out, at = [], 0
    for m in pattern.finditer(text):
        if m.start() > at:
            out.append(Span(text[at : m.start()]))
        out.append(Span(m.group(), True))
        at = m.end()
    if at < len(text):
        out.append(Span(text[at:]))
    return out


def _signature(path: Path) -> tuple[int, int, int]:
    """What changes when ``path`` is rewritten: inode, size, mtime."""
    try:
        st = path.stat()
    except OSError:
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


# ---------------------------------------------------------------------------- page data


@dataclass(frozen=True)
class Overview:
    """The overview page."""

    home: str
    chunks: int
    transcript_chunks: int | None
    """Chunks of transcripts (the rest are notes and summaries); None when not counted."""
    sessions: int
    files: int
    chunks_with_vectors: int
    vectors_pending: int
    embedder: str | None
    quantization: str | None
    disk_bytes: int
    sources_gone: int
    health: dict[str, Any]
    projects: list[tuple[str, int]]
    formats: list[tuple[str, int]]
    libraries: list[dict[str, Any]]
    last_index: dict[str, Any] | None
    queue: int
    events: list[dict[str, Any]]
    injections: list[dict[str, Any]]


@dataclass(frozen=True)
class SearchResult:
    """A search page: the hits with their passages, or why there are none."""

    query: str
    filters: dict[str, str]
    hits: list[dict[str, Any]]
    floor: float
    best: float | None = None
    """With no hit: the best candidate's relevance (None: nothing matched at all)."""


@dataclass(frozen=True)
class Turn:
    """A turn of a chunk as the session page shows it."""

    role: str
    lines: list[tuple[str, str]]
    """``(kind, text)``: kind ``text``, or ``tool`` for a tool call or result."""


@dataclass
class SessionView:
    """A session page."""

    session_id: str
    chunks: list[dict[str, Any]]
    path: str
    format: str
    project: str
    branch: str
    file_state: str
    skipped: dict[str, int] = field(default_factory=dict)
    injections: list[dict[str, Any]] = field(default_factory=list)


class Views:
    """The pages of one memory, with what is kept between requests.

    Args:
        mem: The home shown (a :class:`memlane.Memory`).
    """

    def __init__(self, mem: Memory) -> None:
        self.mem = mem
        # A sharded index (memlane.cluster) searches shards: it has no session catalog, brain,
        # injection audit or secrets of its own, and is never written from here.
        self.sharded = not isinstance(mem._store, _core.Store)
        self.brain_dir = default_brain_dir(mem.home)
        self._kept: dict[str, tuple[Any, Any]] = {}
        self._parsed: dict[str, tuple[tuple[int, int, int], dict[str, int]]] = {}
        self._scan: threading.Thread | None = None
        self._scan_lock = threading.Lock()

    def _while_unchanged(self, name: str, compute: Callable[[], _T]) -> _T:
        """``compute()``, kept until the home's manifest changes (every write rewrites it)."""
        state = _signature(self.mem.home / "manifest.json")
        kept = self._kept.get(name)
        if kept is not None and kept[0] == state:
            return kept[1]  # type: ignore[no-any-return]
        value = compute()
        self._kept[name] = (state, value)
        return value

    # -- overview ----------------------------------------------------------------------------

    def overview(self) -> Overview:
        """Health, counts, embedder and vectors, disk, the last index run, the hook queue and
        the latest events and injections (of a sharded index: its catalog's counts only)."""
        if self.sharded:
            return self._sharded_overview()
        status = self._while_unchanged("status", self.mem._store.status)
        catalog = self._catalog()
        transcript_chunks = sum(s.chunks for s in catalog)
        events = self.mem.events.tail(200)
        return Overview(
            home=str(self.mem.home),
            chunks=status["chunks"],
            transcript_chunks=transcript_chunks,
            sessions=status["sessions"],
            files=status["files"],
            chunks_with_vectors=status["chunks_with_vectors"],
            vectors_pending=status["chunks"] - status["chunks_with_vectors"] if status["embedder_id"] else 0,
            embedder=status["embedder_id"],
            quantization=status.get("quantization"),
            disk_bytes=status["disk_bytes"] + status.get("archive_disk_bytes", 0),
            sources_gone=status.get("sources_gone", 0),
            health=self._while_unchanged("health", lambda: self.mem.verify(thorough=False)),
            projects=Counter(s.project for s in catalog).most_common(12),
            formats=sorted(self._while_unchanged("formats", self.mem._store.formats).items(), key=lambda kv: -kv[1]),
            libraries=self.mem.libraries(),
            last_index=next((e for e in reversed(events) if e.get("type") == "index"), None),
            queue=self._queue_length(),
            events=list(reversed(events[-12:])),
            injections=self.mem.injections(limit=5),
        )

    def _sharded_overview(self) -> Overview:
        status = self.mem.status()
        return Overview(
            home=status.get("index") or str(self.mem.home),
            chunks=status["chunks"],
            transcript_chunks=None,
            sessions=status["sessions"],
            files=status["files"],
            chunks_with_vectors=status["chunks_with_vectors"] or 0,
            vectors_pending=0,
            embedder=status["embedder_id"],
            quantization=status.get("quantization"),
            disk_bytes=status["disk_bytes"],
            sources_gone=0,
            health={"sound": None, "findings": [], "thorough": False},
            projects=[],
            formats=[],
            libraries=self.mem.libraries(),
            last_index=None,
            queue=0,
            events=[],
            injections=[],
        )

    def _queue_length(self) -> int:
        from memlane.agents.queue import pending  # the hooks' queue of transcripts to index

        return len(pending(self.mem.home))

    # -- search ------------------------------------------------------------------------------

    def search(self, query: str, filters: dict[str, str], k: int = 20) -> SearchResult:
        """Hits for ``query`` with the CLI's filters (``project``, ``branch``, ``source``,
        ``session``, ``since``, ``until``), each with its passage marked and its score parts;
        none when no candidate clears the floor, and then the best candidate's relevance."""
        query = query.strip()
        if not query:
            return SearchResult(query, filters, [], FLOOR)
        scope: dict[str, Any] = {
            "sources": [filters["source"]] if filters.get("source") else None,
            "session_id": filters.get("session") or None,
            "since": filters.get("since") or None,
            "until": filters.get("until") or None,
            "project": filters.get("project") or None,
            "branch": filters.get("branch") or None,
        }
        hits = self.mem.search(query, k, **scope)
        if not hits:
            best = self.mem.search(query, 1, threshold=0.0, **scope)
            return SearchResult(query, filters, [], FLOOR, best[0].relevance if best else None)
        tokens = _core.query_tokens(query)
        passages = secrets.mask_many(self.mem.snippets(query, hits, SNIPPET_CHARS))
        return SearchResult(
            query,
            filters,
            [_hit_row(h, highlight(p, tokens)) for h, p in zip(hits, passages)],
            FLOOR,
        )

    # -- sessions ----------------------------------------------------------------------------

    def _catalog(self) -> list[Session]:
        return self._while_unchanged("catalog", self.mem.sessions)

    def sessions(self, project: str | None = None, page: int = 1) -> Paged:
        """A page of sessions (most recent first), with their files and formats."""
        rows = self._catalog()
        if project:
            rows = [s for s in rows if s.project == project]
        shown = paged(rows, page)
        return Paged(describe(self.mem._store, shown.items), shown.total, shown.page, shown.pages)

    def projects(self) -> list[tuple[str, int]]:
        """Projects with their session counts (a sharded index: chunk counts), largest first."""
        if self.sharded:
            return sorted(self.mem.projects().items(), key=lambda kv: -kv[1])
        return Counter(s.project for s in self._catalog() if s.project).most_common()

    def session(self, session_id: str) -> SessionView | None:
        """A session's chunks as turns (tool lines shortened), which have vectors, the records
        its file's parse skipped, and what was injected into it; None when none of it is held."""
        hits = self.mem.session(session_id)
        if not hits:
            return None
        first = hits[0]
        vectors = self.mem._store.has_vectors([int(h.id, 16) for h in hits])
        texts = secrets.mask_many([h.text for h in hits])
        chunks = [
            {**_provenance(h), "turns": turns(text, h.meta.get("role", "")), "vector": has}
            for h, text, has in zip(hits, texts, vectors)
        ]
        state, skipped = self._file_state(first.path)
        return SessionView(
            session_id,
            chunks,
            first.path,
            first.meta.get("format", ""),
            first.project,
            first.branch,
            state,
            skipped,
            self.mem.injections(session=session_id, limit=PER_PAGE),
        )

    def _file_state(self, path: str) -> tuple[str, dict[str, int]]:
        """Whether the session's file is still there, and the records its parse skips (the
        core's parser, run again; kept until the file changes)."""
        p = Path(path)
        sig = _signature(p)
        if sig == (0, 0, 0):
            return "gone (the home keeps its copy)", {}
        kept = self._parsed.get(path)
        if kept is None or kept[0] != sig:
            try:
                skipped = dict(_core.parse_file(p)["skipped"])
            except (OSError, MemlaneError):  # unreadable now, or damaged: the page says so
                return "present, but it no longer parses", {}
            kept = (sig, skipped)
            self._parsed[path] = kept
        return "present", kept[1]

    def chunk(self, chunk_id: str) -> dict[str, Any] | None:
        """One chunk in full (masked), with every session it was injected into."""
        hit = self.mem.get(chunk_id)
        if hit is None:
            return None
        (text,) = secrets.mask_many([hit.text])
        return {
            **_provenance(hit),
            "turns": turns(text, hit.meta.get("role", "")),
            "injected": self.mem.injections(key=hit.id, limit=PER_PAGE),
        }

    # -- brain -------------------------------------------------------------------------------

    def brain(self) -> dict[str, Any]:
        """MEMORY.md's entries by section (type, scope, project, validity, withheld ones with
        their rule), the supersession chains, EVOLUTION.md, and the summary and wiki pages."""
        brain = Brain(self.brain_dir, home=self.mem.home)
        entries = brain.entries(include_archived=True)
        by_key = {e.key: e for e in entries}
        sections: dict[str, list[dict[str, Any]]] = {}
        for e in entries:
            sections.setdefault(e.section or "(no section)", []).append(_entry_row(e))
        chains = []
        for e in entries:
            if e.superseded_by and not e.meta.get("supersedes"):  # the oldest of a chain
                chain, seen = [e], {e.key}
                while (nxt := by_key.get(chain[-1].superseded_by or "")) is not None and nxt.key not in seen:
                    chain.append(nxt)
                    seen.add(nxt.key)
                chains.append([(c.key, c.meta.get("valid_from") or c.date or "", secrets.mask(c.text)) for c in chain])
        evolution = [_entry_row(e) for e in brain.entries(evolution=True)]
        return {
            "dir": str(self.brain_dir),
            "exists": self.brain_dir.is_dir(),
            "sections": sections,
            "chains": chains,
            "evolution": evolution,
            "files": self.brain_files(),
        }

    def brain_files(self) -> list[str]:
        """The brain's summary, wiki and daily pages, relative to its folder."""
        daily = sorted((self.brain_dir / "DailyActivity").glob("*.md"), reverse=True)
        return [p.relative_to(self.brain_dir).as_posix() for p in [*summary_files(self.brain_dir), *daily]]

    def brain_file(self, relative: str) -> dict[str, Any]:
        """A summary, wiki, WISDOM or daily page as lines, each provenance reference a link.

        Raises:
            InvalidArgumentError: ``relative`` is not one of :meth:`brain_files`.
        """
        if relative not in self.brain_files():
            raise InvalidArgumentError(f"{relative!r} is not a page of this brain")
        text = (self.brain_dir / relative).read_text(encoding="utf-8", errors="replace")
        lines = [(secrets.mask(line), [str(r) for r in refs(line)], cited_session(line)) for line in text.splitlines()]
        return {"path": relative, "lines": lines}

    # -- injections and secrets -----------------------------------------------------------------

    def injections(self, session: str | None = None, key: str | None = None, page: int = 1) -> Paged:
        """Injections newest first, a page at a time."""
        offset = (max(1, page) - 1) * PER_PAGE
        rows = self.mem.injections(session=session, key=key, limit=PER_PAGE + 1, offset=offset)
        more = len(rows) > PER_PAGE
        return Paged(rows[:PER_PAGE], offset + len(rows), max(1, page), max(1, page) + int(more))

    def secrets(self, page: int = 1, *, wait: bool = True) -> tuple[int, Paged] | None:
        """The secrets report (masked), a page at a time, and the chunks scanned.

        The scan reads every chunk (seconds on a large home). With ``wait=False`` it runs on a
        thread and None says it is under way: the page says so and asks again, rather than
        hold the request (and the viewer's other pages) for the whole scan.
        """
        if wait:
            report = self._while_unchanged("secrets", self.mem.secrets)
        else:
            with self._scan_lock:
                kept = self._kept.get("secrets")
                if kept is None or kept[0] != _signature(self.mem.home / "manifest.json"):
                    if self._scan is None or not self._scan.is_alive():
                        self._scan = threading.Thread(target=self.secrets, name="memlane-ui-secrets", daemon=True)
                        self._scan.start()
                    return None
                report = kept[1]
        return report["chunks_scanned"], paged(report["secrets"], page)

    # -- forgetting --------------------------------------------------------------------------

    def forget(self, kind: str, value: str, *, dry_run: bool = False, undo: bool = False) -> dict[str, Any]:
        """Forget a session or a chunk (or preview it, or undo it).

        Raises:
            InvalidArgumentError: ``kind`` is neither ``session`` nor ``chunk``, or nothing matches.
        """
        if kind not in ("session", "chunk"):
            raise InvalidArgumentError(f"can forget a session or a chunk, not {kind!r}")
        return self.mem.forget(**{kind: value}, dry_run=dry_run, undo=undo)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- rows


def _provenance(h: Hit) -> dict[str, Any]:
    return {
        "id": h.id,
        "source": h.source,
        "path": h.path,
        "session_id": h.session_id,
        "turn_range": (h.turn_start, h.turn_end),
        "timestamp": h.timestamp,
        "heading": h.heading,
        "project": h.project,
        "branch": h.branch,
    }


def _hit_row(h: Hit, passage: list[Span]) -> dict[str, Any]:
    return {
        **_provenance(h),
        "score": h.score,
        "relevance": h.relevance,
        "parts": {k: v for k, v in h.scores.items() if k in ("bm25", "vector", "coverage")},
        "passage": passage,
        "superseded_by": h.superseded_by,
    }


_CITED_SESSION = re.compile(r"\btranscript (\S+) turns (\d+)-(\d+)")


def cited_session(text: str | None) -> str | None:
    """The session a brain entry's ``Detail:`` (or a daily note's line) cites, if any.

    Example:
        >>> cited_session("transcript 0b5c-1 turns 12-15 · DailyActivity/2026-04-02.md")
        '0b5c-1'
    """
    found = _CITED_SESSION.search(text or "")
    return found.group(1) if found else None


def _entry_row(e: Any) -> dict[str, Any]:
    return {
        "session": cited_session(e.detail),
        "key": e.key,
        "date": e.date,
        "text": secrets.mask(e.text),
        "detail": secrets.mask(e.detail) if e.detail else None,
        "type": entry_type(e),
        "scope": entry_scope(e),
        "project": entry_project(e),
        "valid_from": e.meta.get("valid_from"),
        "valid_until": e.meta.get("valid_until"),
        "superseded_by": e.superseded_by,
        "archived": bool(e.meta.get("archived")) or e.source.endswith(".archive.md"),
        "withheld": e.withheld,
    }


_SPEAKER = re.compile(r"^(User|Assistant|System): ?")
_TOOL = re.compile(r"^\[(tool|result|tool_result|tool result)\b")


def turns(text: str, role: str = "") -> list[Turn]:
    """A chunk's text as turns: a line starting ``User:`` / ``Assistant:`` opens one; tool
    calls and results (``[tool …]``, ``[result]``) are marked so the page can shorten them.

    Example:
        >>> [(t.role, t.lines) for t in turns("User: hi\\nAssistant: done\\n[tool Bash] ls")]
        [('user', [('text', 'hi')]), ('assistant', [('text', 'done'), ('tool', '[tool Bash] ls')])]
    """
    out: list[Turn] = []
    for line in text.strip("\n").split("\n"):
        m = _SPEAKER.match(line)
        if m or not out:
            out.append(Turn(m.group(1).lower() if m else (role.split("+")[0] or "text"), []))
            line = line[m.end() :] if m else line
        out[-1].lines.append(("tool" if _TOOL.match(line) else "text", line))
    return out
