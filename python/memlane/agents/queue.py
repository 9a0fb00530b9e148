"""The hooks' queue: transcripts to index (and distil), and the detached worker that drains it.

A hook on ``stop``, ``session-end``, ``pre-compact`` or Codex ``notify`` writes one entry per
transcript to ``<home>/queue/`` (:func:`queue_entry`) and starts a detached worker
(:func:`spawn_worker`: ``memlane hook drain``); it returns at once and never blocks the agent.

The worker holds ``<home>/queue/worker.lock``, indexes each queued transcript incrementally,
distils it when the entry asks for it (``--distill`` on ``session-end``), then starts
compaction or dreaming when they are due (:mod:`memlane.timeline.schedule`: detached, under
their lease) and exits when the queue is empty. Entries are renamed to ``*.taken`` while they
are worked on and deleted when done, so a crashed worker leaves them for the next one and a
hook re-queuing the same file meanwhile is never lost.

Example:
    >>> import tempfile
    >>> home = tempfile.mkdtemp()
    >>> payload = {"session_id": "s1", "transcript_path": "/nonexistent/s1.jsonl", "hook_event_name": "Stop"}
    >>> queue_entry(home, payload, client="claude-code", event="stop").name.endswith(".json")
    True
    >>> [e["session_id"] for e in pending(home)]
    ['s1']
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

QUEUE_DIR = "queue"
_TAKEN = ".taken"
_MAX_ATTEMPTS = 3
_MAX_LOG_BYTES = 1 << 20
DISTILL_ENV = "MEMLANE_DISTILL"
"""Distillation engine of the session hooks: ``extractive`` (the default, offline), ``bedrock``, or ``off``."""
_DISTILLING = {
    ("claude-code", "session-end"): 1,
    ("claude-code", "pre-compact"): 1,
    ("codex", "stop"): 20,
    ("codex", "notify"): 20,
}


def distill_min_turns(client: str, event: str) -> int | None:
    """The fewest new turns worth distilling at ``event`` (None: the event does not distil).

    A session that ends, or is about to lose its context to compaction, is distilled however
    little is new (the turns no distillation covered yet); Codex has no session-end, so its
    per-turn events distil once twenty turns have gathered.
    """
    return _DISTILLING.get((client, event))


def _queue(home: str | os.PathLike[str]) -> Path:
    return Path(home).expanduser() / QUEUE_DIR


def codex_transcript(thread_id: str, codex_home: Path | None = None) -> Path | None:
    """The rollout file of a Codex thread (``sessions/YYYY/MM/DD/rollout-…-<id>.jsonl``), if found."""
    root = codex_home or Path(os.environ.get("CODEX_HOME", Path.home() / ".codex"))
    if not thread_id:
        return None
    found = sorted((root / "sessions").glob(f"*/*/*/rollout-*{thread_id}.jsonl"))
    return found[-1] if found else None


def _transcript(payload: dict[str, Any], event: str) -> tuple[str | None, str]:
    """(transcript path, session id) from a hook or notify payload."""
    if event == "notify":  # Codex notify: hyphenated keys, no transcript path
        thread = str(payload.get("thread-id") or "")
        path = codex_transcript(thread)
        if path is None:  # the sessions folder re-indexes incrementally: only the new file costs
            folder = Path(os.environ.get("CODEX_HOME", Path.home() / ".codex")) / "sessions"
            return (str(folder) if folder.is_dir() else None), thread
        return str(path), thread
    return payload.get("transcript_path") or None, str(payload.get("session_id") or "")


def queue_entry(
    home: str | os.PathLike[str],
    payload: dict[str, Any],
    *,
    client: str,
    event: str,
    embed: str = "local",
    distill: str | None = None,
) -> Path | None:
    """Queue the payload's transcript for indexing (and distillation); None if it names none.

    One entry per transcript: a later event for the same file replaces the entry, keeping a
    distillation or an embedding an earlier event asked for. Claude Code's per-turn ``stop``
    indexes keywords only (searchable at once, no embedding model loaded every turn); its
    ``pre-compact`` and ``session-end`` embed whatever chunks still lack vectors. Codex has no
    session-end event, so each of its turns embeds.
    """
    path, session_id = _transcript(payload, event)
    if not path:
        return None
    queue = _queue(home)
    queue.mkdir(parents=True, exist_ok=True)
    target = queue / f"{hashlib.sha1(path.encode('utf-8')).hexdigest()[:20]}.json"
    try:
        earlier = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = {}
    # The first queuing time stays: doctor flags an entry no worker has taken for an hour.
    entry = {
        "path": path,
        "session_id": session_id,
        "client": client,
        "event": event,
        "embed": embed,
        "vectors": not (client == "claude-code" and event == "stop") or bool(earlier.get("vectors")),
        "distill": distill or earlier.get("distill"),
        "distill_min_turns": min(
            distill_min_turns(client, event) or 1 if distill else 1_000_000,
            int(earlier.get("distill_min_turns", 1_000_000)),
        ),
        "queued_at": earlier.get("queued_at") or datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    _write_entry(target, entry)
    return target


def _write_entry(target: Path, entry: dict[str, Any]) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entry, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, target)


def pending(home: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Queued entries not yet indexed (including those a crashed worker left taken)."""
    out = []
    for f in _entry_files(_queue(home)):
        try:
            out.append(json.loads(f.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return out


def _entry_files(queue: Path) -> list[Path]:
    if not queue.is_dir():
        return []
    return sorted(
        p
        for p in queue.iterdir()
        if p.is_file()
        and (p.name.endswith(".json") or p.name.endswith(".json" + _TAKEN))
        and not p.name.startswith(".")
    )


def spawn_worker(home: str | os.PathLike[str]) -> None:
    """Start ``memlane hook drain`` detached: own session, no inherited stdio, output to the worker log."""
    queue = _queue(home)
    queue.mkdir(parents=True, exist_ok=True)
    with open(queue / "worker.log", "ab") as log:
        kwargs: dict[str, Any] = {
            "stdin": subprocess.DEVNULL,
            "stdout": log,
            "stderr": log,
            "close_fds": True,
            "cwd": str(queue),
        }
        if sys.platform == "win32":
            kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
        else:
            kwargs["start_new_session"] = True
        subprocess.Popen(
            [sys.executable, "-m", "memlane.cli", "hook", "drain", "--home", str(Path(home).expanduser())], **kwargs
        )


@dataclass
class DrainReport:
    """What one ``memlane hook drain`` run did."""

    indexed: list[str] = field(default_factory=list)
    distilled: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    locked: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def _log(queue: Path, message: str) -> None:
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    log = queue / "worker.log"
    with contextlib.suppress(OSError):
        if log.stat().st_size > _MAX_LOG_BYTES:  # one line per indexed turn adds up: keep the last two megabytes
            os.replace(log, log.with_name("worker.log.1"))
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"{stamp} {message}\n")


def drain(home: str | os.PathLike[str]) -> DrainReport:
    """Index (and distil) every queued transcript, then return; a no-op if another worker runs.

    After releasing the lock the queue is checked once more, so an entry queued while the last
    pass was ending is not left waiting for the next hook.
    """
    from memlane._fs import _try_lock, _unlock

    queue = _queue(home)
    queue.mkdir(parents=True, exist_ok=True)
    report = DrainReport()
    while True:
        fd = os.open(queue / "worker.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _try_lock(fd):
                report.locked = True
                return report
            try:
                while (files := _entry_files(queue)) and _drain_pass(Path(home).expanduser(), queue, files, report):
                    pass
            finally:
                _unlock(fd)
        finally:
            os.close(fd)
        if report.locked or not _entry_files(queue):
            return report


def _drain_pass(home: Path, queue: Path, files: list[Path], report: DrainReport) -> bool:
    """Work through ``files``; False if the home's index is locked (the rest stays queued)."""
    from memlane.errors import IndexLockedError

    for f in files:
        taken = f if f.name.endswith(_TAKEN) else f.with_name(f.name + _TAKEN)
        if taken is not f:
            try:
                os.replace(f, taken)
            except FileNotFoundError:
                continue
        try:
            entry = json.loads(taken.read_text(encoding="utf-8"))
            path = entry["path"]
        except (OSError, ValueError, KeyError, TypeError):
            _log(queue, f"dropped unreadable entry {taken.name}")
            taken.unlink(missing_ok=True)
            continue
        try:
            _process(home, entry, report)
        except FileNotFoundError:
            _log(queue, f"dropped {path}: the transcript is gone")
            report.dropped.append(path)
        except IndexLockedError:
            # Another writer (a manual `memlane index`) holds the home: the next hook's worker retries.
            _log(queue, f"home locked by another writer; {path} stays queued")
            if not f.exists():
                os.replace(taken, f)
            report.locked = True
            return False
        except Exception as exc:
            entry["attempts"] = int(entry.get("attempts", 0)) + 1
            _log(queue, f"failed {path} (attempt {entry['attempts']}): {type(exc).__name__}: {exc}")
            if entry["attempts"] < _MAX_ATTEMPTS and not f.exists():
                _write_entry(f, entry)
            else:
                report.failed.append(path)
        taken.unlink(missing_ok=True)
    return True


def _distill(mem: Any, entry: dict[str, Any], report: DrainReport) -> None:
    """Distil the entry's transcript (the turns no distillation covered yet) into the brain, and
    index the daily notes it wrote, so they are searchable when the worker ends."""
    from memlane.brain import Brain, default_brain_dir
    from memlane.brain.distill import distill

    path, home = entry["path"], mem.home
    brain = Brain(default_brain_dir(home), home=home)
    results = distill(path, brain=brain, engine=entry["distill"], min_new_turns=int(entry.get("distill_min_turns", 1)))
    written = [r for r in results if not r.skipped]
    report.distilled.append(path)
    added = [k for res in written for k in res.added]
    _log(
        _queue(home),
        f"distilled {path}: {len(written)} of {len(results)} session(s), added {', '.join(added) or 'nothing'}",
    )
    if written:
        mem.index(sorted({r.daily for r in written if r.daily}))  # embedded as the home embeds, if it does
        if entry.get("event") != "session-end":
            brain.log(
                "memory:flush",
                path=path,
                event=entry.get("event"),
                sessions=[r.session_id for r in written],
                added=len(added),
            )


def _process(home: Path, entry: dict[str, Any], report: DrainReport) -> None:
    import memlane

    path = entry["path"]
    embed = entry.get("embed") or "local"
    # One Memory for the transcript and for what distillation writes: the embedder loads once.
    with memlane.open(home, embedder=embed) as mem:
        r = mem.index([path], embed=embed != "none" and entry.get("vectors", True))
        report.indexed.append(path)
        _log(_queue(home), f"indexed {path}: +{r.chunks_added} chunks, {r.chunks_embedded} embedded")
        if entry.get("distill"):
            _distill(mem, entry, report)
    if entry.get("distill"):
        # A new daily may complete a week or wake dreaming: the jobs run detached, never in the hook.
        from memlane.brain import default_brain_dir
        from memlane.timeline.schedule import run_due

        queue = _queue(home)
        try:
            started = run_due(home, default_brain_dir(home), queue / "timeline.log", embed)
        except Exception as exc:
            _log(queue, f"timeline scheduling failed: {type(exc).__name__}: {exc}")
        else:
            if started:
                _log(queue, f"started {' and '.join(started)} (log: {queue / 'timeline.log'})")
