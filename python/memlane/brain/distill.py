"""Distillation: a finished session → a DailyActivity entry → new MEMORY.md entries.

For each session of a transcript file, :func:`distill`:

1. asks an engine (:class:`~memlane.brain.engines.ExtractiveEngine` offline, or
   :class:`~memlane.brain.engines.BedrockEngine`) for a topic, what was done, decisions,
   files, commands, the outcome and memory candidates;
2. drops any line the :class:`~memlane.brain.guard.MemoryGuard` would block (transcripts
   carry tool output and pasted text; one poisoned line must not sink the whole note) and
   reports it as withheld;
3. appends ``## HH:MM | topic`` to ``DailyActivity/YYYY-MM-DD.md`` with a marker naming the
   session, so distilling it again adds nothing;
4. promotes decisions (KD), lessons (LL), open threads (OT) and incidents (COE) to
   MEMORY.md with a ``Detail:`` line pointing at the transcript turns and the daily note. A
   reversal ("we switched from X to Y", "no longer", "instead of") supersedes the active
   entry that says X instead of adding a contradicting one.
5. captures what the user corrected (CR), prefers (a ``user`` entry), confirmed as fixed (CP)
   or reported broken (FA) (:mod:`memlane.brain.capture`, offline, whatever the engine),
   with the same ``Detail:`` provenance; what the brain already holds, or nearly, is not added
   again.

Steps 3 to 5 run in one brain transaction: the lock is held, the guard sees everything and
nothing is written if any part fails.

Example:
    >>> import json, tempfile, pathlib
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> rows = [{"role": "user", "content": "Pick a queue for the exporter.", "timestamp": "2026-03-02T10:00:00Z", "session_id": "s1"},
    ...         {"role": "assistant", "content": "We decided to use SQS FIFO queues for `exporter.py`; ordering matters for invoices.",
    ...          "timestamp": "2026-03-02T10:01:00Z", "session_id": "s1"}]
    >>> _ = (tmp / "s1.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> from datetime import timezone
    >>> brain = Brain(tmp / "brain", home=tmp / "home")
    >>> [r.added for r in distill(tmp / "s1.jsonl", brain=brain, tz=timezone.utc)]
    [['KD01']]
    >>> [r.skipped for r in distill(tmp / "s1.jsonl", brain=brain, tz=timezone.utc)]
    [True]
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta, tzinfo
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane import _core, secrets
from memlane._fs import read_text
from memlane._paths import default_home
from memlane.brain.brain import DAILY_DIR, Brain, CapError, Transaction
from memlane.brain.document import Entry
from memlane.brain.engines import BedrockEngine, Distillation, Engine, ExtractiveEngine, Item, Session, near_duplicate
from memlane.brain.scopes import classify
from memlane.errors import InvalidArgumentError, InvalidDataError

if TYPE_CHECKING:
    from memlane.brain.capture import Capture

_KIND_SECTION = {"decision": "KD", "lesson": "LL", "thread": "OT", "incident": "COE"}
_DAILY_HEADING = re.compile(r"^## (\d\d:\d\d) \|")


@dataclass
class DistillResult:
    """What distilling one session did.

    Attributes:
        session_id: The session.
        format: Its transcript format.
        path: The transcript file.
        engine: ``extractive`` or ``bedrock``.
        skipped: True if the session was already distilled (nothing written).
        daily: The DailyActivity file written.
        heading: The ``## HH:MM | topic`` heading written.
        added: Keys of new MEMORY.md and EVOLUTION.md entries.
        captured: ``{"key", "kind"}`` of the added entries that capture took from what the user
            corrected, prefers, confirmed or reported broken (:mod:`memlane.brain.capture`).
        superseded: ``{"old": key, "new": key}`` for each reversal applied.
        withheld: ``{"text", "rule"}`` for lines the guard kept out.
        archived: Keys moved to the archive because a section went over its cap.
        over_cap: Captures left out because their section is at its character cap.
    """

    session_id: str
    format: str
    path: str
    engine: str
    skipped: bool = False
    daily: str | None = None
    heading: str | None = None
    added: list[str] = field(default_factory=list)
    superseded: list[dict[str, str]] = field(default_factory=list)
    withheld: list[dict[str, str]] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    captured: list[dict[str, str]] = field(default_factory=list)
    over_cap: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def make_engine(
    engine: str | Engine = "extractive", *, model_id: str | None = None, region: str | None = None
) -> Engine:
    """An engine by name (``extractive`` or ``bedrock``), or the engine object itself.

    Example:
        >>> make_engine("bedrock", model_id="amazon.nova-lite-v1:0").model_id
        'amazon.nova-lite-v1:0'
    """
    if not isinstance(engine, str):
        return engine
    if engine == "extractive":
        return ExtractiveEngine()
    if engine == "bedrock":
        return BedrockEngine(model_id, region=region)
    raise InvalidArgumentError(f"unknown distill engine {engine!r}: use extractive or bedrock")


def resolve_source(source: str | PathLike[str], home: str | PathLike[str] | None = None) -> Path:
    """The transcript file for a path, or for a session id already indexed in ``home``.

    A bare id is looked up in the home's manifest: first files whose name contains it (Claude
    Code and Codex name files after the session), then the indexed chunks' session ids.

    Raises:
        FileNotFoundError: Neither a file nor an indexed session.
    """
    path = Path(source).expanduser()
    if path.exists():
        return path
    sid = str(source)
    home_dir = Path(home).expanduser() if home is not None else default_home()
    manifest_path = home_dir / "manifest.json"
    if not manifest_path.exists():
        raise FileNotFoundError(f"{sid}: no such file, and no index at {home_dir} to look a session id up in")
    files: dict[str, Any] = json.loads(manifest_path.read_text(encoding="utf-8")).get("files", {})
    for name in files:
        if sid in Path(name).name and Path(name).exists():
            return Path(name)
    store = _core.Store(str(home_dir))
    keys = [k for f in files.values() for k in f.get("keys", [])]
    for start in range(0, len(keys), 4096):
        for chunk in store.get(keys[start : start + 4096]):
            if chunk.get("session_id") == sid:
                return Path(chunk["path"])
    raise FileNotFoundError(f"{sid}: no such file, and no indexed session has this id (pass the transcript's path)")


def load_sessions(
    path: str | PathLike[str], *, session_id: str | None = None, format: str | None = None
) -> list[Session]:
    """The sessions of a transcript file worth distilling.

    Subagent sessions are left out (their parent covers them) unless the file holds nothing
    else or ``session_id`` names one.

    Raises:
        memlane.errors.InvalidArgumentError: No session with ``session_id`` in the file.
        memlane.errors.InvalidDataError: No conversation in the file.
    """
    parsed = _core.parse_file(str(path), format)
    sessions = [
        Session(s["id"], s["format"], str(path), s.get("cwd"), s.get("title"), s["turns"], s.get("parent_id"))
        for s in parsed["sessions"]
        if s["turns"]
    ]
    if session_id is not None:
        chosen = [s for s in sessions if s.id == session_id]
        if not chosen:
            ids = ", ".join(s.id for s in sessions) or "none"
            raise InvalidArgumentError(f"{path}: no session {session_id!r} (sessions: {ids})")
        return chosen
    talk = [s for s in sessions if any(t["role"] == "user" for t in s.turns)]
    top = [s for s in talk if not s.parent_id]
    if not (top or talk):
        raise InvalidDataError(f"{path}: no conversation found (format: {parsed.get('format') or 'not recognised'})")
    return top or talk


def _marker(session: Session) -> str:
    last = session.turn_base + len(session.turns) - 1
    return f"<!-- memlane:session id={session.id} format={session.format} turns={session.turn_base}-{last} -->"


_MARKER = re.compile(r"<!-- memlane:session id=(\S+) format=\S+(?: turns=(\d+)-(\d+))? -->")


def _started(session: Session, tz: tzinfo | None) -> datetime:
    ms = session.started_ms
    if ms is None:
        ms = int(Path(session.path).stat().st_mtime * 1000)
    return (
        datetime.fromtimestamp(ms / 1000, tz=tz) if tz is not None else datetime.fromtimestamp(ms / 1000).astimezone()
    )


def _daily_files(brain: Brain, session: Session, tz: tzinfo | None) -> list[Path]:
    """The notes a session's entries can be in: the days its turns span (a long session is
    flushed part by part), and their neighbours (another time zone dates them otherwise)."""
    first = _started(session, tz)
    last_ms = next((t["timestamp"] for t in reversed(session.turns) if t.get("timestamp")), None)
    last = datetime.fromtimestamp(last_ms / 1000, tz=first.tzinfo) if last_ms is not None else first
    days = min(max((last.date() - first.date()).days, 0), 31)
    return [brain.daily_dir / f"{(first + timedelta(days=d)).date().isoformat()}.md" for d in range(-1, days + 2)]


def distilled_turns(brain: Brain, session: Session, tz: tzinfo | None = None) -> int:
    """How many of the session's first turns DailyActivity notes already cover (all of them
    when a note carries the marker of a distillation made before they went by turn range)."""
    whole = session.turn_base + len(session.turns)
    done = 0
    for path in _daily_files(brain, session, tz):
        for m in _MARKER.finditer(read_text(path)):
            if m.group(1) == session.id:
                done = max(done, whole if m.group(2) is None else int(m.group(3)) + 1)
    return done


def already_distilled(brain: Brain, session: Session, tz: tzinfo | None = None) -> bool:
    """True if DailyActivity notes already cover every turn of this session."""
    return distilled_turns(brain, session, tz) >= session.turn_base + len(session.turns)


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _tokens(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


def find_reversed(item: Item, candidates: list[Entry]) -> Entry | None:
    """The active entry a reversal gives up: it must mention what ``item.replaces`` names.

    Example:
        >>> old = Entry("KD01", "2026-04-01", "Billing stores invoices in Postgres.")
        >>> new = Item("decision", "We switched from Postgres to DynamoDB for billing.", (3, 3), replaces="Postgres")
        >>> find_reversed(new, [old]).key
        'KD01'
    """
    if item.supersedes:
        return next((e for e in candidates if e.key == item.supersedes and e.active), None)
    if not item.replaces:
        return None
    gone = _tokens(item.replaces)
    if not gone:
        return None
    words = _tokens(item.text)
    best, best_score = None, 0.0
    for e in candidates:
        if not e.active:
            continue
        have = _tokens(e.text)
        coverage = len(gone & have) / len(gone)
        if coverage < 0.5:
            continue
        score = coverage + 0.5 * len(words & have) / max(len(words | have), 1)
        if score > best_score:
            best, best_score = e, score
    return best


def _passes(brain: Brain, result: DistillResult, session: Session, text: str) -> bool:
    """Whether the guard lets ``text`` through; a blocked line is recorded as withheld."""
    findings = brain.guard.scan(text)
    shown = secrets.mask(text)[:200]  # printed and returned: never with its secret
    # The same sentence may be both a decision line and an item: report it once.
    if findings and all(w["text"] != shown for w in result.withheld):
        result.withheld.append({"text": shown, "rule": findings[0].rule})
        brain.log("blocked", rule=findings[0].rule, excerpt=findings[0].excerpt, path=session.path, stage="distill")
    return not findings


def _clean(d: Distillation, brain: Brain, result: DistillResult, session: Session) -> Distillation:
    """Drop every line the guard would block, recording it as withheld."""

    def ok(text: str) -> bool:
        return _passes(brain, result, session, text)

    topic = d.topic if ok(d.topic) else session.id
    return Distillation(
        topic=topic,
        done=[x for x in d.done if ok(x)],
        decisions=[x for x in d.decisions if ok(x)],
        files=[x for x in d.files if ok(x)],
        commands=[x for x in d.commands if ok(x)],
        outcome=d.outcome if ok(d.outcome) else "(withheld by MemoryGuard)",
        items=[i for i in d.items if ok(i.text) and (not i.replaces or ok(i.replaces))],
    )


def _without_captured(d: Distillation, captures: list[Capture]) -> Distillation:
    """The distillation without the items a correction or preference capture already files.

    The engine reads "from now on, always…" as a decision and "no, don't use X" as a reversal;
    capture knows them for what they are, so they are written once, as that.
    """
    said = [c for c in captures if c.kind in ("correction", "preference")]

    def captured(item: Item) -> bool:
        return any(item.turns[0] <= c.turns[1] <= item.turns[1] and near_duplicate(item.text, c.text) for c in said)

    gone = {i.text for i in d.items if captured(i)}
    if not gone:
        return d
    return replace(
        d, items=[i for i in d.items if i.text not in gone], decisions=[x for x in d.decisions if x not in gone]
    )


def _code(s: str) -> str:
    tick = "``" if "`" in s else "`"
    pad = " " if tick == "``" else ""
    return f"{tick}{pad}{s}{pad}{tick}"


def render_daily_entry(session: Session, d: Distillation, heading: str, promoted: list[str]) -> str:
    """The ``## HH:MM | topic`` section for one session."""
    last = session.turn_base + len(session.turns) - 1
    lines = [heading, _marker(session)]
    lines.append("- **Done:**" if d.done else "- **Done:** (nothing stated)")
    lines += [f"  - {x}" for x in d.done]
    lines.append("- **Decisions:**" if d.decisions else "- **Decisions:** none")
    lines += [f"  - {x}" for x in d.decisions]
    lines.append(f"- **Files:** {', '.join(_code(f) for f in d.files) or 'none'}")
    lines.append(f"- **Commands:** {', '.join(_code(c) for c in d.commands) or 'none'}")
    lines.append(f"- **Outcome:** {d.outcome or 'unknown'}")
    if promoted:
        lines.append(f"- **Promoted:** {', '.join(promoted)}")
    lines.append(
        f"- **Transcript:** session `{session.id}` ({session.format}, turns {session.turn_base}-{last}) · {session.path}"
    )
    return "\n".join(lines) + "\n"


def _insert_daily(text: str, day: str, entry: str, time: str) -> str:
    """Put ``entry`` among the day's entries in time order."""
    if not text.strip():
        return f"# {day}\n\n{entry}"
    lines = text.splitlines(keepends=True)
    if not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    at = next((i for i, l in enumerate(lines) if (m := _DAILY_HEADING.match(l)) and m.group(1) > time), None)
    if at is None:
        sep = "" if lines[-1].strip() == "" else "\n"
        return "".join(lines) + sep + entry
    return "".join(lines[:at]) + entry + "\n" + "".join(lines[at:])


def _promote(
    brain: Brain, txn: Transaction, session: Session, items: list[Item], detail_tail: str, result: DistillResult
) -> list[str]:
    if not items:
        return []
    memory = txn.memory
    seen = {_norm(e.text) for e in memory.entries()} | {_norm(e.text) for e in brain._archived()}
    notes: list[str] = []
    for item in items:
        if _norm(item.text) in seen:
            continue
        seen.add(_norm(item.text))
        a, b = (session.turn_base + t for t in item.turns)
        detail = f"transcript {session.id} turns {a}-{b} · {detail_tail}"
        fields = {"confidence": item.confidence} if item.confidence else {}
        prefix = _KIND_SECTION[item.kind]
        old = (
            find_reversed(item, [e for e in memory.entries() if e.prefix in ("KD", "LL")])
            if item.kind == "decision"
            else None
        )
        if old is not None:
            new = brain._supersede_in(txn, old, item.text, detail, fields)
            result.superseded.append({"old": old.key, "new": new.key})
            notes.append(f"{new.key} (supersedes {old.key})")
        else:
            spec, _ = brain._spec(prefix)
            new = brain._new_entry(txn, spec, False, item.text, detail, fields)
            txn.event("add", key=new.key, path=new.source)
            notes.append(new.key)
        result.added.append(new.key)
    return notes


def _write_captures(
    brain: Brain, txn: Transaction, session: Session, captures: list[Capture], detail_tail: str, result: DistillResult
) -> list[str]:
    """Add the captures the brain does not hold yet (archives included, near duplicates too)."""
    if not captures:
        return []
    held = [e.text for e in txn.memory.entries() + txn.evolution.entries() + brain._archived()]
    notes: list[str] = []
    for c in captures:
        if any(_norm(c.text) == _norm(t) or near_duplicate(c.text, t) for t in held):
            continue
        spec, evolution = brain._spec(c.section)
        a, b = (session.turn_base + t for t in c.turns)
        detail = f"transcript {session.id} turns {a}-{b} · {detail_tail}"
        new = brain._new_entry(txn, spec, evolution, c.text, detail, classify(spec.prefix, c.type))
        try:
            brain._check_chars(txn, evolution, spec)
        except CapError:
            # A full section keeps what it has: the capture is reported, not forced in.
            (txn.evolution if evolution else txn.memory).remove(new.key)
            result.over_cap.append(secrets.mask(c.text)[:200])
            continue
        txn.event("add", key=new.key, path=new.source)
        held.append(c.text)
        notes.append(new.key)
        result.added.append(new.key)
        result.captured.append({"key": new.key, "kind": c.kind})
    return notes


def distill_session(
    session: Session,
    brain: Brain,
    engine: Engine,
    *,
    promote: bool = True,
    tz: tzinfo | None = None,
    min_new_turns: int = 1,
) -> DistillResult:
    """Distil the turns of one session that no DailyActivity note covers yet (see the module
    doc): a session flushed before its context was compacted is distilled on from there, and
    one wholly distilled is skipped, as is a tail of fewer than ``min_new_turns`` turns."""
    result = DistillResult(session.id, session.format, session.path, engine.name)
    done = distilled_turns(brain, session, tz)
    if session.turn_base + len(session.turns) - max(done, session.turn_base) < max(min_new_turns, 1):
        result.skipped = True
        return result
    if done > session.turn_base:
        session = session.after(done)
    # The engine (maybe an LLM call of several seconds) runs before taking the lock; the
    # transaction re-reads everything and re-checks the marker.
    existing = brain._read_doc(brain.memory_path, brain.memory_schema).entries()
    d = _clean(engine.distill(session, existing), brain, result, session)
    # Imported here: its ~60 patterns take ~13 ms to compile, which every process importing
    # memlane.brain (a SessionStart hook reading task memory) would pay without distilling.
    from memlane.brain.capture import capture

    captures = [c for c in capture(session.turns) if _passes(brain, result, session, c.text)] if promote else []
    d = _without_captured(d, captures)
    when = _started(session, tz)  # a part of a session: when that part started
    day, time = when.date().isoformat(), when.strftime("%H:%M")
    daily = brain.daily_dir / f"{day}.md"
    topic = " ".join(d.topic.split()) or session.id
    heading = f"## {time} | {topic}"
    with brain.transaction(when.date()) as txn:
        if any(_marker(session) in txn.text(p) for p in _daily_files(brain, session, tz)):
            result.skipped = True
            return result
        tail = f"{DAILY_DIR}/{day}.md § {time} | {topic}"
        promoted = _promote(brain, txn, session, d.items if promote else [], tail, result)
        promoted += _write_captures(brain, txn, session, captures, tail, result)
        if result.added:
            result.archived = [e.key for e in brain._archive_overflow(txn, False)]
        txn.put(daily, _insert_daily(txn.text(daily), day, render_daily_entry(session, d, heading, promoted), time))
        txn.event(
            "distill",
            session=session.id,
            path=session.path,
            added=len(result.added),
            superseded=len(result.superseded),
            withheld=len(result.withheld),
            captured=len(result.captured),
        )
    result.daily = str(daily)
    result.heading = heading
    return result


def distill(
    source: str | PathLike[str],
    *,
    brain: Brain | None = None,
    engine: str | Engine = "extractive",
    session_id: str | None = None,
    promote: bool = True,
    tz: tzinfo | None = None,
    format: str | None = None,
    model_id: str | None = None,
    region: str | None = None,
    min_new_turns: int = 1,
) -> list[DistillResult]:
    """Distil every session of a transcript file (or one indexed session by id): the turns no
    earlier distillation covered.

    Args:
        source: A transcript file, or a session id the brain's home has indexed.
        brain: Where to write (default: ``Brain()``).
        engine: ``extractive`` (offline), ``bedrock``, or an :class:`Engine`.
        session_id: Only this session of the file.
        promote: Also add entries to MEMORY.md (else only the DailyActivity note).
        tz: Time zone for the note's date and time (default: local).
        format: Force the transcript format instead of auto-detection.
        model_id: Bedrock model id.
        region: Bedrock region.
        min_new_turns: Skip a session with fewer new turns than this (a flush while the
            session goes on waits for enough to say something).

    Returns:
        One result per session, in file order.

    Raises:
        FileNotFoundError: ``source`` is neither a file nor an indexed session.
        memlane.errors.InvalidDataError: The file holds no conversation.
        MemoryGuardError: The note or an entry still tripped the guard; nothing was written.
        DistillError: The LLM call failed.
    """
    brain = brain or Brain()
    path = resolve_source(source, brain.home)
    if path.is_dir():
        raise InvalidArgumentError(f"{path} is a folder: distill one transcript file at a time")
    by_id = not Path(source).expanduser().exists()
    sessions = load_sessions(path, session_id=session_id or (str(source) if by_id else None), format=format)
    eng = make_engine(engine, model_id=model_id, region=region)
    return [distill_session(s, brain, eng, promote=promote, tz=tz, min_new_turns=min_new_turns) for s in sessions]
