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

What ``recall`` and ``get`` answer with is recorded by key in the injection audit
(:mod:`memlane.audit`; client ``mcp``, the session unknown to the server).

An agent's role (``--agent``, see :mod:`memlane.roles`) bounds every tool: a project
agent recalls and gets only its project's memories, the admin's and the notes of the user's
global libraries, and writes only its project's entries; a skill agent is not offered
``remember`` or ``supersede`` at all.

The server lives as long as the session, so it recalls hybrid (the embedder loads once, on the
first query); hooks, a process per event, recall keyword-only. With ``remote`` (``memlane
--remote URL mcp``) it recalls from a served index (``memlane serve``) and offers only
``recall`` and ``status``: the brain and chunk look-ups are a home's. The ``mcp`` SDK is imported only
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
from collections.abc import Callable, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Literal, TypeVar

from memlane import secrets
from memlane._check import echo
from memlane.errors import InvalidArgumentError, MemlaneError
from memlane.memory import Memory
from memlane.roles import Role

INSTRUCTIONS = (
    "memlane is this user's long-term memory across agent sessions: curated MEMORY.md entries "
    "(keys like KD07), notes and past transcripts. Call recall before answering questions about "
    "earlier work, decisions, errors or preferences; remember durable decisions and lessons; "
    "supersede an entry when it changes."
)
_BRAIN_KEY = re.compile(r"^[A-Za-z]{2,4}\d+$")
Section = Literal["KD", "LL", "OT", "COE", "RC", "CR", "CP", "FA"]
MemoryType = Literal["user", "feedback", "project", "reference"]
Scope = Literal["private", "team"]
ItemType = Literal["decision", "entity", "claim", "task", "note"]
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
        role: The agent's role (default admin).
        cwd: Where the agent works (a skill agent reads that project's memories).
        remote: A served index's URL to recall from instead of ``home``.

    Example:
        >>> import tempfile
        >>> MemoryTools(tempfile.mkdtemp(), embedder="none").recall("anything")
        'Nothing in memory clears the relevance threshold for this query.'
    """

    def __init__(
        self,
        home: str | PathLike[str],
        embedder: str = "local",
        role: Role | None = None,
        cwd: str | None = None,
        remote: str | None = None,
    ) -> None:
        import memlane

        self.home = Path(home).expanduser()
        self.remote = remote
        self.mem = memlane.connect(remote) if remote else memlane.open(home, embedder=embedder)
        self.role = role or Role()
        self.reads = self.role.reads(cwd)
        self.cwd = cwd

    @property
    def _home(self) -> Memory:
        """The local home: the tools that read the brain, tasks or chunk ids need one (over a served
        index only recall and status are offered)."""
        if not isinstance(self.mem, Memory):
            raise InvalidArgumentError(
                "this tool reads the home's brain and chunks, which a served index does not have"
            )
        return self.mem

    def _readable(self, project: str | None) -> str | None:
        """The project a read covers: the role's, or what the agent asked within it."""
        if self.reads is None:
            return project
        if self.remote:  # the served index resolves names; the role's project bounds the read
            return self.reads
        if project is not None and set(self._home.project_keys(project)) - set(self._home.project_keys(self.reads)):
            raise PermissionError(f"agent {self.role} reads project {self.reads} only, not {echo(project)}")
        return self.reads

    def _in_scope(self, hit: Any) -> bool:
        """Whether a chunk is the agent's to read: its project's, or a note of the user's global
        libraries (which every project reads)."""
        if self.reads is None or hit.project in self._home.project_keys(self.reads):
            return True
        return hit.source != "transcript" and any(
            lib["global"] and lib["path"] == hit.project for lib in self._home.libraries()
        )

    def _entry_keys(self) -> list[str] | None:
        """The project keys brain entries must belong to for this agent (``None``: any)."""
        return None if self.reads is None else self._home.project_keys(self.reads) or [self.reads]

    @functools.cached_property
    def brain(self) -> Any:
        """The home's brain (MEMORY.md, EVOLUTION.md)."""
        from memlane.brain import Brain, default_brain_dir

        return Brain(default_brain_dir(self._home.home), home=self._home.home)

    def recall(
        self,
        query: str,
        max_tokens: int = 4000,
        project: str | None = None,
        branch: str | None = None,
        types: Sequence[str] | None = None,
    ) -> str:
        """The recall block for ``query``, followed by the items' ids for :meth:`get`; with
        ``types``, the typed, cited items of those types instead (:meth:`memlane.Memory.items`).
        What it answers with is recorded in the injection audit (:mod:`memlane.audit`)."""
        from memlane import audit

        scope = self._readable(project)
        if types:
            if self.remote:
                raise InvalidArgumentError(
                    "types are read from the home's brain and tasks, which a served index does not have"
                )
            found = self._home.items(query, types=types, project=scope)
            lines = [
                f"- {i.type} {i.id}: {i.text.splitlines()[0] if i.text else ''} (cited: {i.citation})" for i in found
            ]
            if not lines:
                return f"No {' or '.join(types)} in memory for this query."
            answer = secrets.mask("\n".join(lines))
            items = [audit.text_item(i.id, i.type, n, line) for n, (i, line) in enumerate(zip(found, lines), 1)]
            self._record("recall", scope, query, answer, items)
            return answer
        result = self.mem.recall(query, max_tokens=max_tokens, project=scope, branch=branch)
        if not result:
            return "Nothing in memory clears the relevance threshold for this query."
        if self.remote:  # no `get` over a served index
            answer = result.text.rstrip()
        else:
            ids = " ".join(f"[{n}] {item.id}" for n, item in enumerate(result.items, 1))
            answer = f"{result.text.rstrip()}\n\nids for get: {ids}"  # recall masks secrets
        self._record("recall", scope, query, answer, audit.recall_items(result.items))
        return answer

    def _record(
        self, tool: str, project: str | None, query: str | None, answer: str, items: list[dict[str, Any]]
    ) -> None:
        """Record an answer that injected memory in the injection audit, once it is ready (the
        server knows no agent session id: the session is left unknown)."""
        from memlane import audit
        from memlane.recall import estimate_tokens

        audit.record(
            self.home,
            client="mcp",
            session=None,
            event=tool,
            project=project or self._cwd_project,
            query=query,
            tokens=estimate_tokens(answer),
            items=items,
        )

    @functools.cached_property
    def _cwd_project(self) -> str | None:
        """The project the agent works in (its working directory's repository), if known."""
        from memlane import _core

        return _core.project_of(self.cwd) if self.cwd else None

    def remember(
        self,
        section: str,
        text: str,
        detail: str | None = None,
        type: str | None = None,
        scope: str | None = None,
        project: str | None = None,
    ) -> str:
        """Add a brain entry (MemoryGuard-checked, bounded by the role); the new key, and a
        warning when the text is what the repository already holds."""
        spec, _ = self.brain._spec(section)
        type, project = self.role.writes(spec.prefix, type, project)
        entry = self.brain.add(section, text, detail=detail, type=type, scope=scope, project=project)
        from memlane.brain.scopes import entry_project, entry_scope, entry_type

        bound = f", project {entry_project(entry)}" if entry_project(entry) else ""
        out = f"added [{entry.key}] to {Path(entry.source).name} ({entry_type(entry)}, {entry_scope(entry)}{bound})"
        for f in self.brain.advise(entry.text):
            out += f"\nwarning ({f.rule}: {f.excerpt!r}): the repository already holds this; memory is for what code and git history do not say"
        return out

    def supersede(self, key: str, text: str, detail: str | None = None) -> str:
        """Replace entry ``key``; the old one stays, marked superseded."""
        if self.role.project is not None:
            from memlane.brain.scopes import entry_project, project_name

            old = self.brain.get(key)
            if old is None or entry_project(old) != project_name(self.role.project):
                raise PermissionError(
                    f"agent {self.role} supersedes its project's entries only; {echo(key.upper())} is not one"
                )
        new = self.brain.supersede(key, text, detail=detail)
        return f"[{key.upper()}] superseded by [{new.key}]"

    def get(self, id: str) -> str:
        """A brain entry (by key, with the entries it references) or a chunk (by hex id), in full
        (recorded in the injection audit)."""
        from memlane import audit

        ident = id.strip()
        if _BRAIN_KEY.match(ident):
            from memlane.brain.scopes import in_project

            keys = self._entry_keys()
            loaded = [e for e in self.brain.load(ident) if keys is None or in_project(e, keys)]
            if not loaded or loaded[0].key != ident.upper():
                raise KeyError(f"no entry {echo(ident.upper())} in agent {self.role}'s memory")
            rendered = [_render_entry(loaded[0]), *(f"referenced: {_render_entry(e)}" for e in loaded[1:])]
            answer = secrets.mask("\n\n".join(rendered))
            items = [audit.text_item(e.key, "brain", n, r) for n, (e, r) in enumerate(zip(loaded, rendered), 1)]
            self._record("get", self.reads, None, answer, items)
            return answer
        hit = self._home.get(ident)
        if hit is None or not self._in_scope(hit):
            raise KeyError(
                f"no chunk {echo(ident)}: removed from the index, mistyped, or outside agent {self.role}'s projects"
            )
        answer = secrets.mask(_render_hit(hit))
        self._record("get", self.reads, None, answer, [audit.text_item(hit.id, hit.source, 1, answer)])
        return answer

    def tasks(self, project: str | None = None) -> str:
        """The open items of the agents' own plans in ``project`` (default: the session's, as
        its working directory tells), then the brain's open threads there."""
        from memlane import _core
        from memlane.brain import tasks
        from memlane.brain.scopes import in_project

        key = self._readable(project) or project or (_core.project_of(self.cwd) if self.cwd else None)
        found = tasks.open_tasks(self._home.home, key)
        lines = [
            f"- [{t.status}] {t.description} (session {t.session_id}, {t.updated[:10]}, {Path(t.project).name})"
            for t in found
        ]
        threads = [
            e
            for e in self.brain.entries()
            if e.prefix == "OT" and e.active and not e.resolved and (key is None or in_project(e, [key]))
        ]
        lines += [f"- [open thread {e.key}] {e.text}" for e in threads]
        where = f" in {Path(key).name}" if key else ""
        return "\n".join(lines) if lines else f"No open tasks{where}."

    def status(self) -> str:
        """Counts of the index and the brain, in a few lines."""
        s = self.mem.status()
        if self.remote:
            down = ", ".join(map(str, s["missing_shards"])) or "none"
            return f"served index {s['index']} at {self.remote} (catalog version {s['generation']}): {s['chunks']:,} chunks, {s['sessions']:,} sessions; shards down: {down}"
        entries = self.brain.entries(evolution=True)
        active = sum(e.active for e in entries)
        vectors = (
            f"{s['chunks_with_vectors']:,} with vectors ({s['embedder_id']})"
            if s["chunks_with_vectors"]
            else "keywords only"
        )
        reads = f"project {self.reads} and the user's global libraries" if self.reads else "every project"
        return (
            f"home {self._home.home}\n"
            f"index: {s['chunks']:,} chunks, {s['sessions']:,} sessions, {s['files']:,} files; {vectors}\n"
            f"brain: {len(entries)} entries in MEMORY.md and EVOLUTION.md, {active} active ({self.brain.dir})\n"
            f"agent: {self.role}, reads {reads}" + ("" if self.role.can_write else ", writes nothing")
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
        except (MemlaneError, ValueError, FileNotFoundError, PermissionError) as exc:
            raise ToolError(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def build_server(
    home: str | PathLike[str],
    embedder: str = "local",
    role: Role | None = None,
    cwd: str | None = None,
    remote: str | None = None,
) -> Any:
    """The MCP server (``mcp.server.MCPServer``) exposing :class:`MemoryTools` over ``home``
    (or the served index at ``remote``: recall and status only); a role that writes nothing
    is not offered the write tools."""
    from mcp.server import MCPServer
    from mcp.types import ToolAnnotations

    from memlane import __version__

    tools = MemoryTools(home, embedder, role, cwd, remote)
    server = MCPServer("memlane", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)

    @server.tool(annotations=read_only, structured_output=False)
    @_user_errors
    def recall(
        query: str,
        max_tokens: int = 4000,
        project: str | None = None,
        branch: str | None = None,
        types: list[ItemType] | None = None,
    ) -> str:
        """Search long-term memory (MEMORY.md, notes, past sessions). Returns relevant items with provenance and ids, or says nothing is relevant. project/branch: only that repository's (name or path) or git branch's memories. types: only typed, cited items of these kinds."""
        return tools.recall(query, max_tokens, project, branch, types)

    if tools.role.can_write and not remote:

        @server.tool(annotations=writes, structured_output=False)
        @_user_errors
        def remember(
            section: Section,
            text: str,
            detail: str | None = None,
            type: MemoryType | None = None,
            scope: Scope | None = None,
            project: str | None = None,
        ) -> str:
            """Add a one-line memory: KD decision, LL lesson, OT open thread, COE incident, RC context; CR/CP/FA corrections, competences, failed attempts. detail: provenance. type: user, feedback, project, reference; scope: private or team; project: bind to a repository. Never code, paths or git history."""
            return tools.remember(section, text, detail, type, scope, project)

        @server.tool(annotations=writes, structured_output=False)
        @_user_errors
        def supersede(key: str, text: str, detail: str | None = None) -> str:
            """Replace a MEMORY.md entry (key like KD07) that is no longer true; the old one stays, marked superseded."""
            return tools.supersede(key, text, detail)

    if not remote:

        @server.tool(annotations=read_only, structured_output=False)
        @_user_errors
        def get(id: str) -> str:
            """Full text and provenance of one item by the id recall printed (hex chunk id or entry key like KD07)."""
            return tools.get(id)

        @server.tool(annotations=read_only, structured_output=False)
        @_user_errors
        def tasks(project: str | None = None) -> str:
            """Open work carried across sessions: items of the agents' own plans (TodoWrite, update_plan) not done yet, and open threads. project: a repository (name or path); default this session's."""
            return tools.tasks(project)

    @server.tool(annotations=read_only, structured_output=False)
    @_user_errors
    def status() -> str:
        """What the memory holds: indexed chunks and sessions, brain entries."""
        return tools.status()

    return server


def serve(
    home: str | PathLike[str], embedder: str = "local", role: Role | None = None, remote: str | None = None
) -> None:
    """Run the server on stdio until the client closes the connection (the agent's working
    directory is the server's)."""
    import os

    build_server(home, embedder, role, os.getcwd(), remote).run("stdio")
