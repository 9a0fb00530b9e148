"""``memlane mcp``: memory as an MCP server on stdio, for agents to recall and remember mid-session.

Five tools, each with a short description and a tight schema (every tool description is
context the agent pays for on every turn):

- ``recall(query, max_tokens)`` — brain entries, notes and transcript turns relevant to a
  query, as one block with provenance and the id of each item;
- ``remember(section, text, detail)`` — add a MEMORY.md / EVOLUTION.md entry, through the
  MemoryGuard;
- ``supersede(key, text, detail)`` — replace an entry; the old one stays, marked superseded;
- ``get(id)`` — one item in full: a chunk by its hex id, or a brain entry by its key (``KD07``)
  with the entries it references;
- ``status()`` — what the memory holds.

The server lives as long as the session, so it recalls hybrid (the embedder loads once, on the
first query); hooks, a process per event, recall keyword-only. The ``mcp`` SDK is imported only
here, so ``import memlane`` stays fast.

Example (a client session over stdio, as the tests run it)::

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async with Client(StdioServerParameters(command="memlane", args=["mcp"])) as client:
        print((await client.call_tool("recall", {"query": "billing database"})).content[0].text)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from os import PathLike
from pathlib import Path
from typing import Any, Literal, TypeVar

from memlane import secrets
from memlane.errors import MemlaneError

INSTRUCTIONS = (
    "memlane is this user's long-term memory across agent sessions: curated MEMORY.md entries "
    "(keys like KD07), notes and past transcripts. Call recall before answering questions about "
    "earlier work, decisions, errors or preferences; remember durable decisions and lessons; "
    "supersede an entry when it changes."
)
_BRAIN_KEY = re.compile(r"^[A-Za-z]{2,4}\d+$")
Section = Literal["KD", "LL", "OT", "COE", "RC", "CR", "CP", "FA"]
_F = TypeVar("_F", bound=Callable[..., str])


def _render_entry(e: Any) -> str:
    if e.withheld:
        return f"[{e.key}] withheld: {e.withheld} (it fails MemoryGuard; the user can read it in {Path(e.source).name})"
    state = f" (superseded by {e.superseded_by})" if e.superseded_by else (" (superseded)" if e.superseded else "")
    lines = [f"[{e.key}] {e.date or 'undated'} {e.text}{state}", f"source: {e.source}"]
    if e.detail:
        lines.append(f"Detail: {e.detail}")
    return "\n".join(lines)


def _render_hit(hit: Any) -> str:
    where = [hit.path]
    if hit.heading:
        where.append(hit.heading)
    if hit.source == "transcript":
        where.append(f"session {hit.session_id} · turns {hit.turn_start}-{hit.turn_end}")
    if hit.timestamp:
        where.append(hit.timestamp)
    return f"[{hit.id}] {hit.source} · {' · '.join(where)}\n{hit.text}"


class MemoryTools:
    """The tools' logic over one home, independent of the MCP plumbing.

    Args:
        home: The memlane home.
        embedder: Query embedder (``local`` by default; ``none`` for keyword-only).

    Example:
        >>> import tempfile
        >>> MemoryTools(tempfile.mkdtemp(), embedder="none").recall("anything")
        'Nothing in memory clears the relevance threshold for this query.'
    """

    def __init__(self, home: str | PathLike[str], embedder: str = "local") -> None:
        import memlane

        self.mem = memlane.open(home, embedder=embedder)

    @functools.cached_property
    def brain(self) -> Any:
        """The home's brain (MEMORY.md, EVOLUTION.md)."""
        from memlane.brain import Brain, default_brain_dir

        return Brain(default_brain_dir(self.mem.home), home=self.mem.home)

    def recall(self, query: str, max_tokens: int = 4000) -> str:
        """The recall block for ``query``, followed by the items' ids for :meth:`get`."""
        result = self.mem.recall(query, max_tokens=max_tokens)
        if not result:
            return "Nothing in memory clears the relevance threshold for this query."
        ids = " ".join(f"[{n}] {item.id}" for n, item in enumerate(result.items, 1))
        return f"{result.text.rstrip()}\n\nids for get: {ids}"  # recall masks secrets

    def remember(self, section: str, text: str, detail: str | None = None) -> str:
        """Add a brain entry (MemoryGuard-checked); the new key."""
        entry = self.brain.add(section, text, detail=detail)
        return f"added [{entry.key}] to {Path(entry.source).name}"

    def supersede(self, key: str, text: str, detail: str | None = None) -> str:
        """Replace entry ``key``; the old one stays, marked superseded."""
        new = self.brain.supersede(key, text, detail=detail)
        return f"[{key.upper()}] superseded by [{new.key}]"

    def get(self, id: str) -> str:  # noqa: A002 - the tool's argument name
        """A brain entry (by key, with the entries it references) or a chunk (by hex id), in full."""
        ident = id.strip()
        if _BRAIN_KEY.match(ident):
            loaded = self.brain.load(ident)
            return secrets.mask("\n\n".join([_render_entry(loaded[0]), *(f"referenced: {_render_entry(e)}" for e in loaded[1:])]))
        hit = self.mem.get(ident)
        if hit is None:
            raise KeyError(f"no chunk {ident}: it was removed from the index, or the id is mistyped")
        return secrets.mask(_render_hit(hit))

    def status(self) -> str:
        """Counts of the index and the brain, in a few lines."""
        s = self.mem.status()
        entries = self.brain.entries(evolution=True)
        active = sum(e.active for e in entries)
        vectors = f"{s['chunks_with_vectors']:,} with vectors ({s['embedder_id']})" if s["chunks_with_vectors"] else "keywords only"
        return (
            f"home {self.mem.home}\n"
            f"index: {s['chunks']:,} chunks, {s['sessions']:,} sessions, {s['files']:,} files; {vectors}\n"
            f"brain: {len(entries)} entries in MEMORY.md and EVOLUTION.md, {active} active ({self.brain.dir})"
        )


def _user_errors(fn: _F) -> _F:
    """Turn the errors a caller can act on into tool errors whose text reaches the model."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        try:
            return fn(*args, **kwargs)
        except KeyError as exc:
            raise ToolError(exc.args[0] if exc.args else "no such entry") from None
        except (MemlaneError, ValueError, FileNotFoundError) as exc:
            raise ToolError(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def build_server(home: str | PathLike[str], embedder: str = "local") -> Any:
    """The MCP server (``mcp.server.MCPServer``) exposing :class:`MemoryTools` over ``home``."""
    from mcp.server import MCPServer
    from mcp.types import ToolAnnotations

    from memlane import __version__

    tools = MemoryTools(home, embedder)
    server = MCPServer("memlane", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)

    @server.tool(annotations=read_only, structured_output=False)
    @_user_errors
    def recall(query: str, max_tokens: int = 4000) -> str:
        """Search long-term memory (MEMORY.md, notes, past sessions). Returns relevant items with provenance and ids, or says nothing is relevant."""
        return tools.recall(query, max_tokens)

    @server.tool(annotations=writes, structured_output=False)
    @_user_errors
    def remember(section: Section, text: str, detail: str | None = None) -> str:
        """Add a one-line entry to MEMORY.md: KD decision, LL lesson, OT open thread, COE incident, RC recent context (CR/CP/FA: EVOLUTION.md corrections, competences, failed attempts). detail: provenance, e.g. a file or session."""
        return tools.remember(section, text, detail)

    @server.tool(annotations=writes, structured_output=False)
    @_user_errors
    def supersede(key: str, text: str, detail: str | None = None) -> str:
        """Replace a MEMORY.md entry (key like KD07) that is no longer true; the old one stays, marked superseded."""
        return tools.supersede(key, text, detail)

    @server.tool(annotations=read_only, structured_output=False)
    @_user_errors
    def get(id: str) -> str:  # noqa: A002 - the argument name the agent sees
        """Full text and provenance of one item by the id recall printed (hex chunk id or entry key like KD07)."""
        return tools.get(id)

    @server.tool(annotations=read_only, structured_output=False)
    @_user_errors
    def status() -> str:
        """What the memory holds: indexed chunks and sessions, brain entries."""
        return tools.status()

    return server


def serve(home: str | PathLike[str], embedder: str = "local") -> None:
    """Run the server on stdio until the client closes the connection."""
    build_server(home, embedder).run("stdio")
