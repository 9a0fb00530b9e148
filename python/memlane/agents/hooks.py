"""Agent hooks: memory in when a session starts, transcripts queued for indexing when it stops.

``memlane hook CLIENT EVENT`` reads the JSON payload the client sends (on stdin; Codex's
``notify`` passes it as the last argument) and answers in the client's hook output format:

- ``session-start`` prints the session's frozen brain snapshot plus a pre-session recall as
  ``{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": …}}``,
  the shape both Claude Code and Codex inject into the model's context, at most 9,500
  characters (Claude Code shows the model only a 2 KB preview of anything over 10,000);
- ``user-prompt-submit`` recalls on the first prompt of a session only (the user's own words
  are the best query there is) and prints nothing when nothing clears the threshold or the
  session has already had its first prompt;
- ``stop``, ``session-end``, ``pre-compact`` and Codex ``notify`` queue the transcript for a
  detached worker (:mod:`memlane.agents.queue`); they return at once and never block the agent.

The queue and its detached worker are :mod:`memlane.agents.queue`.

Recall is scoped to the session's project (the repository around the payload's ``cwd``): the
snapshot leaves out brain entries bound to other projects, and the recall reads this project's
transcripts and notes; only when nothing there clears the relevance floor do other projects'
memories come in, each labelled with its project. An agent role (``--agent``,
:mod:`memlane.roles`) narrows that: a project or skill agent reads its project only,
and a skill agent's sessions are never distilled into the brain.

SessionStart recalls keyword-only: a hook is a fresh process per event, and loading the local
embedding model costs about half a CPU-second, far over the start-up budget (its focus query is
the project's own words, which keywords find). The first prompt is the user's own words, which
keywords alone cannot tell from an everyday question: it loads the model once per session when
the home holds that model's vectors. The MCP server, which lives as long as the session, recalls
hybrid.

A hook never exits 2: Claude Code reads exit 2 as "block" (it would erase a submitted prompt or
keep a finished turn going). A bad payload or command line (an unknown flag or event, say from
a settings.json written by another memlane version) prints one line on stderr and exits 1,
which the clients report without interrupting the session; never a usage text or a traceback.

A hook also keeps its own deadline, :data:`DEFAULT_DEADLINE_S` (5 s; ``--deadline SECONDS`` or
``$MEMLANE_HOOK_DEADLINE`` changes it). The clients wait far longer (Claude Code kills a command
hook after 60 s), but the user waits for SessionStart and UserPromptSubmit before anything
happens, and a hook that hangs (an ``open()`` on a FIFO named like a transcript, a blocked
index) should cost seconds, not the client's whole timeout. Ordinary hooks take 0.1–2 s
(``benches/bench_hooks.py``; the first prompt on a home with vectors loads the model), so 5 s
cuts off only what is stuck. The event is handled on a worker thread: the snapshot is put
aside first, then the recall; when the deadline passes, the hook prints what is ready (the
snapshot at least, once rendered), says so in one line on stderr and exits 0 at once
(``os._exit``, so that a thread stuck in a system call cannot hold the process).

What a hook injects (the snapshot's brain entries, the recall's chunks) is recorded by key in
the injection audit once the answer is out (:mod:`memlane.audit`, ``<home>/injections.jsonl``):
one append, and a log that cannot be written never fails the hook.

The query a hook recalls on is bounded (:mod:`memlane.ranking.query`): a pasted 5 MB prompt
costs what its first 4,000 characters cost. A damaged index still gives the brain snapshot,
with one line saying to run ``memlane repair`` in place of the recall.

"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from memlane.agents.queue import DISTILL_ENV, QUEUE_DIR, distill_min_turns, drain, queue_entry, spawn_worker
from memlane.errors import InvalidArgumentError, MemlaneError
from memlane.events import EventLog
from memlane.roles import Role

CLIENTS = {
    "claude-code": ("session-start", "user-prompt-submit", "stop", "session-end", "pre-compact"),
    "codex": ("session-start", "user-prompt-submit", "stop", "notify"),
}
"""The events ``memlane hook`` handles, per client."""

HOOK_EVENT_NAMES = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "stop": "Stop",
    "session-end": "SessionEnd",
    "pre-compact": "PreCompact",
}
"""Our event names → the clients' ``hook_event_name``."""

_PROMPTED_DIR = "prompted"
_MAX_PROMPTED = 1000
_CARRIED_CHARS = 1500
"""Characters at most of the "open from last time" tasks a session starts with (about ten)."""

DEFAULT_MAX_TOKENS = 4000
"""Token budget of the recall a hook injects (the frozen snapshot comes on top)."""
DEFAULT_MAX_CHARS = 9500
"""Characters a hook injects at most: Claude Code replaces hook context over 10,000 characters
with a file path and a 2 KB preview, so the model would see almost none of it."""
_MIN_RECALL_TOKENS = 100
DEFAULT_DEADLINE_S = 5.0
"""Seconds a hook takes at most before it answers with what it has (see the module doc)."""
DEADLINE_ENV = "MEMLANE_HOOK_DEADLINE"
"""Environment variable that sets the deadline when ``--deadline`` does not."""
_TRUNCATED = "\n\n[memlane: the rest of MEMORY.md did not fit the hook's size limit; read an entry in full with the memlane MCP `get` tool (its key, like KD07) or `memlane brain show`.]"


class HookInputError(MemlaneError, ValueError):
    """The payload on stdin is not the JSON object a client sends."""


class HookUsageError(InvalidArgumentError):
    """A ``memlane hook`` command line that cannot be read (the message says what to do)."""


def read_payload(text: str) -> dict[str, Any]:
    """The client's JSON payload as a dict.

    Raises:
        HookInputError: ``text`` is not a JSON object.

    Example:
        >>> read_payload('{"session_id": "abc", "hook_event_name": "SessionStart"}')["session_id"]
        'abc'
    """
    try:
        payload = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise HookInputError(
            f"the hook payload is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise HookInputError("the hook payload is JSON nested too deep to read") from None
    if not isinstance(payload, dict):
        raise HookInputError(f"the hook payload must be a JSON object, not {type(payload).__name__}")
    return payload


def _field(payload: dict[str, Any], key: str) -> str:
    """A payload field as text: ``""`` when it is absent or not a string or a number."""
    value = payload.get(key)
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else ""


def _read_stdin(stdin: Any) -> str:
    """The payload text from ``stdin`` (the process's by default), read as UTF-8 bytes when it can be."""
    stream = stdin if stdin is not None else sys.stdin
    if stream is None:  # started with stdin closed
        return ""
    raw = getattr(stream, "buffer", None)
    data = raw.read() if raw is not None else stream.read()
    if isinstance(data, bytes):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HookInputError(f"the hook payload is not UTF-8 text (byte {exc.start} of {len(data)})") from None
    return str(data)


class _Reply:
    """The context a hook has ready: parts added, in order, by the thread handling the event,
    read once by the thread answering (at the end, or at the deadline: later parts are dropped).

    Each part carries the memory items it injects (:mod:`memlane.audit`), so that what the
    answer held, and only that, is recorded once it is out (:meth:`record`).
    """

    def __init__(self, event: str) -> None:
        self.event = event
        self.session: str | None = None
        self.project: str | None = None
        self.query: str | None = None
        self._parts: list[tuple[str, list[dict[str, Any]]]] = []
        self._lock = threading.Lock()
        self._closed = False
        self._sent: tuple[str, list[dict[str, Any]]] | None = None

    def add(self, text: str, items: Sequence[dict[str, Any]] = ()) -> None:
        with self._lock:
            if not self._closed:
                self._parts.append((text, list(items)))

    def output(self) -> str | None:
        """The hook's output for what is ready (None if nothing); nothing is added after."""
        with self._lock:
            self._closed = True
            parts = list(self._parts)
        if not parts:
            return None
        context = "\n\n".join(text for text, _ in parts)
        self._sent = (context, [item for _, items in parts for item in items])
        return _context_output(self.event, context)

    def record(self, home: str | os.PathLike[str], client: str) -> None:
        """Append what the answer injected to the injection audit (nothing if it injected
        nothing); a log that cannot be written never fails the hook."""
        if self._sent is None:
            return
        from memlane import audit
        from memlane.recall import estimate_tokens

        context, items = self._sent
        audit.record(
            home,
            client=client,
            session=self.session,
            event=self.event,
            project=self.project,
            query=self.query,
            tokens=estimate_tokens(context),
            items=items,
        )


def _context_output(event: str, text: str) -> str:
    from memlane import secrets

    # The snapshot and the recall come masked already; this is the last door to the agent.
    context = secrets.mask(text)
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": HOOK_EVENT_NAMES[event], "additionalContext": context}},
        ensure_ascii=False,
    )


def _open(home: str | os.PathLike[str]) -> Any:
    import memlane

    return memlane.open(home, embedder="none")


def _remote() -> Any:
    """The served index (``memlane serve``) that recalls when ``MEMLANE_REMOTE`` names one, else None;
    the brain snapshot stays the home's."""
    url = os.environ.get("MEMLANE_REMOTE")
    if not url:
        return None
    from memlane.cluster.client import connect

    return connect(url)


# -- context in ---------------------------------------------------------------------------


def _fit(text: str, limit: int) -> str:
    """``text`` cut at a line boundary to at most ``limit`` characters, saying where the rest is."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - len(_TRUNCATED))].rsplit("\n", 1)[0]
    return cut.rstrip() + _TRUNCATED


def _project(role: Role, payload: dict[str, Any]) -> str | None:
    """The project a hook recalls from: the role's, or the session's (its cwd's repository)."""
    cwd = _field(payload, "cwd") or None
    if role.kind != "admin":
        return role.reads(cwd)
    if cwd is None:
        return None
    from memlane import _core

    return _core.project_of(cwd)


_Recalled = tuple[str, list[dict[str, Any]]]
"""A hook's recall: the text injected ("" for none) and its items for the audit."""


def _recalled(recall: Any, note: str = "") -> _Recalled:
    from memlane.audit import recall_items

    if not recall:
        return "", []
    text = str(recall).strip()
    return (f"{note}\n\n{text}" if note else text), recall_items(recall.items)


def _recall(mem: Any, query: str, budget: int, project: str | None, role: Role) -> _Recalled:
    """Index recall (no brain) from ``project``; for the admin, other projects', labelled,
    when nothing in it clears the relevance floor."""
    if project is not None and not mem.records_projects():
        # A home indexed before projects were recorded cannot tell them apart: the admin reads
        # it whole, as before; a scoped agent reads nothing of it.
        return (
            _recalled(mem.recall(query, max_tokens=budget, include_brain=False)) if role.kind == "admin" else ("", [])
        )
    scoped = mem.recall(query, max_tokens=budget, include_brain=False, project=project)
    if scoped or project is None or role.kind != "admin":
        return _recalled(scoped)
    note = f"[memlane: nothing in this project ({Path(project).name}) clears the relevance floor; these memories come from other projects, each labelled with its own.]"
    others = mem.recall(query, max_tokens=budget - len(note) // 4 - 1, include_brain=False, label_projects=True)
    return _recalled(others, note)


def session_start(
    home: str | os.PathLike[str],
    payload: dict[str, Any],
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_chars: int = DEFAULT_MAX_CHARS,
    role: Role | None = None,
    client: str = "claude-code",
) -> str | None:
    """The SessionStart hook output: frozen snapshot plus pre-session recall (None if both are empty).

    The snapshot is frozen per session id, so a resume or a compaction re-injects the same block.
    The whole context stays within ``max_chars``: the snapshot first (cut at a line if it must
    be; MEMORY.md's compact index comes first, so the cut keeps it), then a recall in the room left.
    A damaged index gives the snapshot and, in place of the recall, the line saying to run
    ``memlane repair`` (:data:`memlane.recall.DAMAGED_INDEX`). What it injects is recorded
    in the injection audit (:mod:`memlane.audit`) as ``client``'s.
    """
    reply = _Reply("session-start")
    _session_start(home, payload, reply, max_tokens=max_tokens, max_chars=max_chars, role=role)
    out = reply.output()
    reply.record(home, client)
    return out


def _session_start(
    home: str | os.PathLike[str],
    payload: dict[str, Any],
    reply: _Reply,
    *,
    max_tokens: int,
    max_chars: int,
    role: Role | None,
) -> None:
    from memlane import _check
    from memlane.audit import snapshot_items
    from memlane.brain.tasks import carried_block
    from memlane.errors import CorruptIndexError
    from memlane.recall import DAMAGED_INDEX, focus_query, session_snapshot

    _check.integer("max_tokens", max_tokens, minimum=1)
    _check.integer("max_chars", max_chars, minimum=1)
    role = role or Role()
    project = _project(role, payload)
    reply.session, reply.project = _field(payload, "session_id"), project
    with _open(home) as mem:
        snapshot = _fit(session_snapshot(mem, reply.session, project).strip(), max_chars)
        if snapshot:
            # Ready before the recall starts: what a deadline leaves the agent.
            reply.add(snapshot, snapshot_items(snapshot))
        room = max_chars - len(snapshot) - 2
        # The project's open work from its last sessions, before the recall and within its room.
        if project and (carried := carried_block(home, project, min(room, _CARRIED_CHARS))):
            reply.add(carried)
            room -= len(carried) + 2
        budget = min(max_tokens, room // 4)  # recall counts four UTF-8 bytes per token: bytes ≥ characters
        try:
            # The snapshot carries the brain; the recall adds library and transcripts only.
            query = focus_query(
                mem, cwd=_field(payload, "cwd") or None, transcript_path=_field(payload, "transcript_path") or None
            )
            if query and budget >= _MIN_RECALL_TOKENS:
                reply.query = query
                recalled, items = _recall(_remote() or mem, query, budget, project, role)
                if recalled:
                    reply.add(recalled, items)
        except CorruptIndexError:
            if DAMAGED_INDEX not in snapshot and len(DAMAGED_INDEX) <= room:  # a snapshot frozen before the damage
                reply.add(DAMAGED_INDEX)


def _first_prompt(home: Path, session_id: str) -> bool:
    """Claim the session's first prompt (atomically: two racing hooks cannot both win)."""
    folder = home / QUEUE_DIR / _PROMPTED_DIR
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha1(session_id.encode("utf-8")).hexdigest()[:20]
    try:
        os.close(os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        return False
    markers = list(folder.iterdir())
    if len(markers) > _MAX_PROMPTED:  # one small file per session: forget sessions a month old
        cutoff = time.time() - 30 * 86400
        for m in markers:
            with contextlib.suppress(OSError):
                if m.stat().st_mtime < cutoff:
                    m.unlink()
    return True


def user_prompt_submit(
    home: str | os.PathLike[str],
    payload: dict[str, Any],
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_chars: int = DEFAULT_MAX_CHARS,
    role: Role | None = None,
    client: str = "claude-code",
) -> str | None:
    """Recall on the user's first prompt of a session; None on later prompts or when nothing clears the threshold.

    Only the prompt's first :data:`~memlane.ranking.query.MAX_QUERY_CHARS` characters are
    recalled on. A damaged index answers with the line saying to run ``memlane repair``.
    What it injects is recorded in the injection audit (:mod:`memlane.audit`) as ``client``'s.
    """
    reply = _Reply("user-prompt-submit")
    _user_prompt_submit(home, payload, reply, max_tokens=max_tokens, max_chars=max_chars, role=role)
    out = reply.output()
    reply.record(home, client)
    return out


def _user_prompt_submit(
    home: str | os.PathLike[str],
    payload: dict[str, Any],
    reply: _Reply,
    *,
    max_tokens: int,
    max_chars: int,
    role: Role | None,
) -> None:
    from memlane import _check
    from memlane.errors import CorruptIndexError
    from memlane.ranking.query import bounded
    from memlane.recall import DAMAGED_INDEX

    _check.integer("max_tokens", max_tokens, minimum=1)
    _check.integer("max_chars", max_chars, minimum=1)
    budget = min(max_tokens, max_chars // 4)  # four UTF-8 bytes per token: bytes ≥ characters
    prompt = bounded(_field(payload, "prompt")).strip()  # bounded here too: a served index would get it whole
    session_id = _field(payload, "session_id")
    if (
        budget < _MIN_RECALL_TOKENS
        or not prompt
        or not session_id
        or not _first_prompt(Path(home).expanduser(), session_id)
    ):
        return
    role = role or Role()
    reply.session, reply.project, reply.query = session_id, _project(role, payload), prompt
    try:
        recalled, items = _recall_words(home, prompt, budget, reply.project, role)
    except CorruptIndexError:
        recalled, items = DAMAGED_INDEX, []
    if recalled:
        reply.add(recalled, items)


def _recall_words(
    home: str | os.PathLike[str], prompt: str, max_tokens: int, project: str | None, role: Role
) -> _Recalled:
    """Recall on the user's own words, weighing their meaning when the home holds the local
    model's vectors (the session-start snapshot already holds the brain, so it is left out),
    scoped to ``project`` as :func:`_recall` scopes it.

    Keyword-only, the relevance floor lets most everyday off-topic prompts through (with the
    query embedded, few are; benches/LOG.md, *Relevance floor*), so the first prompt of a
    session pays for loading the model (about half a CPU-second). A home built by another
    embedder (billed, remote) or a model that cannot load recalls keyword-only.
    """
    import memlane
    from memlane.embed import is_bundled_model
    from memlane.errors import MemlaneError

    if (remote := _remote()) is not None:  # the server embeds the query with the index's own model
        return _recall(remote, prompt, max_tokens, project, role)
    with _open(home) as mem:
        # `local` picks the home's own mode of the bundled model (memlane.embed.spec_for_home).
        if not is_bundled_model(mem.vectors_embedder_id):
            return _recall(mem, prompt, max_tokens, project, role)
    try:
        with memlane.open(home, embedder="local") as mem:
            return _recall(mem, prompt, max_tokens, project, role)
    except (MemlaneError, ImportError, OSError, ValueError):  # no usable model: the words still recall
        with _open(home) as mem:
            return _recall(mem, prompt, max_tokens, project, role)


# -- command line ---------------------------------------------------------------------------


def _at_least_one(value: str) -> int:
    """argparse type of ``--max-tokens`` and ``--max-chars``: a whole number ≥ 1."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def _seconds(value: str) -> float:
    """argparse type of ``--deadline`` (and the reading of ``$MEMLANE_HOOK_DEADLINE``): seconds > 0."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a number of seconds, got {value!r}") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {value!r}")
    return seconds


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors raise :class:`HookUsageError` (one line, exit 1 from
    :func:`main`) instead of printing the usage and exiting 2, which a client reads as "block"."""

    def error(self, message: str) -> NoReturn:
        raise HookUsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def add_arguments(parser: argparse.ArgumentParser, parents: Sequence[argparse.ArgumentParser] = ()) -> None:
    """The ``hook`` subcommand's arguments: ``CLIENT EVENT [PAYLOAD]`` or ``drain``."""
    sub = parser.add_subparsers(dest="client", required=True, metavar="CLIENT")
    for client, events in CLIENTS.items():
        p = sub.add_parser(client, parents=list(parents), help=f"handle a {client} hook event (payload JSON on stdin)")
        p.add_argument("event", choices=events)
        p.add_argument("payload", nargs="?", help="the payload JSON (Codex notify passes it as an argument)")
        p.add_argument(
            "--max-tokens",
            type=_at_least_one,
            default=DEFAULT_MAX_TOKENS,
            help=f"recall budget in tokens (default {DEFAULT_MAX_TOKENS})",
        )
        p.add_argument(
            "--max-chars",
            type=_at_least_one,
            default=DEFAULT_MAX_CHARS,
            help=f"most characters injected (default {DEFAULT_MAX_CHARS}: Claude Code's 10,000 cap)",
        )
        p.add_argument(
            "--deadline",
            type=_seconds,
            metavar="SECONDS",
            help=f"answer with what is ready after this long (default ${DEADLINE_ENV}, else {DEFAULT_DEADLINE_S:g})",
        )
        p.add_argument(
            "--embed", default="local", help="embedder the worker indexes with: local (default), bedrock…, none"
        )
        p.add_argument(
            "--distill",
            choices=["extractive", "bedrock", "off"],
            default=os.environ.get(DISTILL_ENV) or "extractive",
            help=f"distil sessions into DailyActivity and MEMORY.md when they end, before a compaction and every 20 Codex turns: "
            f"extractive (default, offline), bedrock, or off (${DISTILL_ENV})",
        )
        p.add_argument(
            "--agent",
            metavar="ROLE",
            help="admin (default), project:NAME or skill:NAME: what the agent reads and writes ($MEMLANE_AGENT)",
        )
    p = sub.add_parser(
        "drain", parents=list(parents), help="index the queued transcripts now (what the detached worker runs)"
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def run(args: argparse.Namespace, stdin: Any = None, *, hard_exit: bool = False) -> int:
    """Run a parsed ``memlane hook …`` command; returns 0, or 1 with one line on stderr (never 2: "block").

    An event is answered within its deadline (see the module doc); with ``hard_exit`` (the
    hook is the whole process) a late answer ends the process at once.
    """
    what = " ".join(x for x in (args.client, getattr(args, "event", None)) if x)
    try:
        if args.client == "drain":
            report = drain(Path(args.home).expanduser())
            if getattr(args, "json", False):
                print(json.dumps(report.to_dict()))
            return 0
        return _answer(args, stdin, what, hard_exit)
    except (HookInputError, HookUsageError) as exc:
        sys.stderr.write(f"memlane hook {what}: {_one_line(str(exc))}\n")
        return 1
    except Exception as exc:
        sys.stderr.write(f"memlane hook {what}: {type(exc).__name__}: {_one_line(str(exc))}\n")
        return 1


def _deadline(args: argparse.Namespace) -> float:
    if getattr(args, "deadline", None) is not None:
        return float(args.deadline)
    value = os.environ.get(DEADLINE_ENV, "").strip()
    if not value:
        return DEFAULT_DEADLINE_S
    try:
        return _seconds(value)
    except argparse.ArgumentTypeError as exc:
        raise HookUsageError(f"${DEADLINE_ENV} {exc}") from None


def _answer(args: argparse.Namespace, stdin: Any, what: str, hard_exit: bool) -> int:
    """Handle the event on a worker thread and answer by the deadline, with what is ready then."""
    deadline = _deadline(args)
    reply = _Reply(args.event)
    failed: list[BaseException] = []

    def work() -> None:
        try:
            _handle(args, stdin, reply)
        except BaseException as exc:
            failed.append(exc)

    # A daemon thread: one stuck in a system call (an open() on a FIFO) never keeps the process alive.
    worker = threading.Thread(target=work, name="memlane-hook", daemon=True)
    worker.start()
    worker.join(deadline)
    if not worker.is_alive():
        if failed:
            raise failed[0]
        out = reply.output()
        if out:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()  # the agent has its answer before the audit line is written
        reply.record(Path(args.home).expanduser(), args.client)
        return 0
    out = reply.output()
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    reply.record(Path(args.home).expanduser(), args.client)
    ready = "the context ready by then" if out else "nothing (no context was ready)"
    sys.stderr.write(
        f"memlane hook {what}: answered at its {deadline:g} s deadline with {ready}; --deadline or ${DEADLINE_ENV} sets it\n"
    )
    if hard_exit:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # the worker may be stuck where no exception reaches it: end the process now
    return 0


def _handle(args: argparse.Namespace, stdin: Any, reply: _Reply) -> None:
    """Read the payload and handle the event (on the worker thread), putting context in ``reply``."""
    home = Path(args.home).expanduser()
    event = args.event
    payload = read_payload(args.payload if args.payload is not None else _read_stdin(stdin))
    role = Role.parse(args.agent)
    if event == "session-start":
        _session_start(home, payload, reply, max_tokens=args.max_tokens, max_chars=args.max_chars, role=role)
    elif event == "user-prompt-submit":
        _user_prompt_submit(home, payload, reply, max_tokens=args.max_tokens, max_chars=args.max_chars, role=role)
    else:
        # A skill agent writes nothing to the brain: its transcript is indexed, never distilled.
        distill = (
            args.distill if distill_min_turns(args.client, event) and role.can_write and args.distill != "off" else None
        )
        if event == "pre-compact":  # the client is about to compact the session's context
            EventLog(home).append(
                "memory:compact", session_id=_field(payload, "session_id"), trigger=_field(payload, "trigger") or None
            )
        if queue_entry(home, payload, client=args.client, event=event, embed=args.embed, distill=distill) is not None:
            spawn_worker(home)


_GLOBAL_VALUE_OPTIONS = ("--home", "--index", "--remote")


def hook_arguments(argv: Sequence[str]) -> list[str] | None:
    """The arguments of a ``memlane …`` command line that runs ``hook`` (the global options
    before it kept), or None when it runs another command.

    Example:
        >>> hook_arguments(["--home", "/h", "hook", "claude-code", "stop"])
        ['--home', '/h', 'claude-code', 'stop']
        >>> hook_arguments(["search", "hook"]) is None
        True
    """
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg in _GLOBAL_VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            return [*argv[:i], *argv[i + 1 :]] if arg == "hook" else None
    return None


def main(argv: Sequence[str], *, hard_exit: bool = False) -> int:
    """``memlane hook …`` without building the full CLI: hooks start a process per event.

    Returns 0 or 1, never 2 (a client's "block"), whatever ``argv`` holds; ``hard_exit`` when
    the hook is the whole process (see :func:`run`).
    """
    from memlane._paths import default_home

    def common(defaults: bool) -> argparse.ArgumentParser:
        # As in memlane.cli: SUPPRESS in the subcommand so `--home` before or after it both work.
        p = argparse.ArgumentParser(add_help=False)
        p.add_argument(
            "--home",
            default=str(default_home()) if defaults else argparse.SUPPRESS,
            help="memlane home (default: $MEMLANE_HOME or ~/.local/share/memlane)",
        )
        p.add_argument(
            "--json",
            action="store_true",
            default=False if defaults else argparse.SUPPRESS,
            help="print one JSON document on stdout (drain)",
        )
        return p

    parser = _Parser(prog="memlane hook", description="Handle an agent hook event.", parents=[common(True)])
    add_arguments(parser, [common(False)])
    try:
        args = parser.parse_args(list(argv))
    except HookUsageError as exc:
        sys.stderr.write(_one_line(str(exc)) + "\n")
        return 1
    except SystemExit as exc:  # --help printed what was asked for
        return 0 if exc.code in (0, None) else 1
    return run(args, hard_exit=hard_exit)
