"""Task memory: the open items of the plans agents keep for themselves, carried across sessions.

Claude Code's ``TodoWrite`` and Codex's ``update_plan`` replace the agent's whole plan each time
they are called. The core's parser keeps the last plan each turn wrote, and an index run reports,
per file and session, the last plan read and the items its earlier plans held that it dropped
(``IndexReport.files[i]["plans"]``). :func:`record` folds those into the home's ``tasks.json``:

- a task is one item per project, known by its normalised text (the same words in a later
  session are the same task);
- the newest observation wins: a task written ``completed`` in a later session closes, one
  written ``pending`` again re-opens; an older transcript indexed late changes nothing newer;
- an item a session put in its plan and then left out of a later plan is ``dropped`` (the agent
  rewrote its plan without it): closed, never carried to the next session.

Open tasks (``pending``, ``in_progress``) of a project are what session-start injects as "open
from last time" (:func:`carried_block`). :func:`export` writes one project's tasks in the
design's ``tasks.json`` schema (id, priority, status, description, acceptance_criteria, created,
completed, blocked_by).

Example:
    >>> import tempfile
    >>> home = tempfile.mkdtemp()
    >>> plan = {"session_id": "s1", "cwd": "/w/app", "timestamp": 1772445660000, "dropped": [],
    ...         "items": [{"text": "Add retry to the exporter", "status": "in_progress"},
    ...                   {"text": "Write the changelog", "status": "completed"}]}
    >>> record(home, [{"path": "/t/s1.jsonl", "plans": [plan]}])
    2
    >>> [(t.description, t.status) for t in open_tasks(home, "/w/app")]
    [('Add retry to the exporter', 'in_progress')]
    >>> record(home, [{"path": "/t/s1.jsonl", "plans": [plan]}])  # the same run again: nothing new
    0
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from os import PathLike
from pathlib import Path
from typing import Any

from memlane import _core
from memlane._fs import atomic_write, brain_lock

TASKS_NAME = "tasks.json"
OPEN = ("pending", "in_progress")
"""Statuses of a task still to do."""
_STATUS_WORDS = {"in-progress": "in_progress", "inprogress": "in_progress", "active": "in_progress",
                 "todo": "pending", "not_started": "pending", "done": "completed", "complete": "completed"}  # fmt: skip
_SCHEMA_VERSION = 1


@dataclass
class Task:
    """One item of an agent's plan, as last seen.

    Attributes:
        id: Stable id: the project and the item's normalised text, hashed.
        project: The project key (repository root) of the session that wrote it.
        description: The item's text.
        status: ``pending``, ``in_progress``, ``completed`` or ``dropped`` (left out of a later plan).
        priority: As the agent gave it (TodoWrite's ``priority``), else None.
        session_id: The session that last changed it; ``path`` its transcript.
        created: When it was first seen (ISO-8601 UTC); ``updated`` when it last changed;
            ``completed`` when it was closed.
    """

    id: str
    project: str
    description: str
    status: str
    priority: str | None = None
    session_id: str = ""
    path: str = ""
    created: str = ""
    updated: str = ""
    completed: str | None = None
    blocked_by: list[str] = field(default_factory=list)

    @property
    def is_open(self) -> bool:
        """Whether it is still to do."""
        return self.status in OPEN

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _status(raw: str) -> str:
    s = raw.strip().lower().replace(" ", "_")
    return _STATUS_WORDS.get(s, s if s in (*OPEN, "completed") else "pending")


def task_id(project: str, text: str) -> str:
    """A task's stable id: ``T`` and 10 hex digits of its project and normalised text.

    >>> task_id("/w/app", "Add  retry") == task_id("/w/app", "add retry")
    True
    """
    return "T" + hashlib.sha1(f"{project}\n{_normalise(text)}".encode()).hexdigest()[:10]


def _iso(ms: int | None) -> str:
    when = datetime.fromtimestamp(ms / 1000, timezone.utc) if ms is not None else datetime.now(timezone.utc)
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")


def _path(home: str | PathLike[str]) -> Path:
    return Path(home).expanduser() / TASKS_NAME


def load(home: str | PathLike[str]) -> list[Task]:
    """Every task the home knows (an unreadable or missing file: none)."""
    try:
        doc = json.loads(_path(home).read_text(encoding="utf-8"))
        return [Task(**t) for t in doc.get("tasks", [])]
    except (OSError, ValueError, TypeError, AttributeError):
        return []


def _save(home: Path, tasks: Iterable[Task]) -> None:
    doc = {
        "version": _SCHEMA_VERSION,
        "tasks": [t.to_dict() for t in sorted(tasks, key=lambda t: (t.project, t.created, t.id))],
    }
    atomic_write(_path(home), json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


def record(home: str | PathLike[str], files: Iterable[dict[str, Any]]) -> int:
    """Fold the plans an index run read into the home's tasks; returns how many tasks were added
    or changed. ``files`` are the run's file reports (``IndexReport.files``): each carries, per
    session whose agent wrote a plan in the turns read, its last plan and the items it dropped.

    Idempotent: the same reports folded again change nothing.
    """
    observed = [(str(f.get("path") or ""), p) for f in files for p in f.get("plans") or ()]
    if not observed:
        return 0
    home = Path(home).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    changed = 0
    with brain_lock(home):  # two workers, or a worker and `memlane index`, may fold at once
        tasks = {t.id: t for t in load(home)}
        for path, plan in observed:
            project = _core.project_of(plan["cwd"]) if plan.get("cwd") else ""
            when = _iso(plan.get("timestamp"))
            session = str(plan.get("session_id") or "")
            seen = [(str(i["text"]), _status(str(i.get("status") or "")), i.get("priority")) for i in plan["items"]]
            # Rewritten out of the plan (in these turns, or since an earlier run): closed.
            kept = {task_id(project, text) for text, _, _ in seen}
            earlier = [
                t.description
                for t in tasks.values()
                if t.session_id == session and t.project == project and t.is_open and t.id not in kept
            ]
            # What was done stays done; the rest the agent gave up on.
            for item in plan.get("dropped", []):
                status = _status(str(item.get("status") or ""))
                seen.append(
                    (str(item["text"]), "completed" if status == "completed" else "dropped", item.get("priority"))
                )
            seen += [(text, "dropped", None) for text in earlier]
            for text, status, priority in seen:
                tid = task_id(project, text)
                old = tasks.get(tid)
                if old is not None and old.updated > when:
                    continue  # a newer session already said more about it
                if old is not None and old.status == status and (priority or old.priority) == old.priority:
                    continue
                changed += 1
                closed = status in ("completed", "dropped")
                tasks[tid] = Task(
                    id=tid,
                    project=project,
                    description=text,
                    status=status,
                    priority=priority or (old.priority if old else None),
                    session_id=session,
                    path=path,
                    created=old.created if old else when,
                    updated=when,
                    completed=((old.completed if old and old.completed else None) or when) if closed else None,
                )
        if changed:
            _save(home, tasks.values())
    return changed


def _in_project(task: Task, project: str | None) -> bool:
    if project is None:
        return True
    return task.project == project or (bool(task.project) and Path(task.project).name == project)


def tasks_of(home: str | PathLike[str], project: str | None = None, *, include_closed: bool = False) -> list[Task]:
    """The home's tasks of ``project`` (a key or a repository's name; None: every project),
    open ones first, most recently touched first."""
    found = [t for t in load(home) if _in_project(t, project) and (include_closed or t.is_open)]
    found.sort(key=lambda t: t.updated, reverse=True)
    found.sort(key=lambda t: (not t.is_open, t.status != "in_progress"))
    return found


def open_tasks(home: str | PathLike[str], project: str | None) -> list[Task]:
    """Open tasks of ``project``, ``in_progress`` first."""
    return tasks_of(home, project)


def carried_block(home: str | PathLike[str], project: str | None, max_chars: int) -> str:
    """The "open from last time" block a session of ``project`` starts with ('' when none or
    when not even its heading and one item fit ``max_chars``)."""
    if not project:
        return ""
    items = open_tasks(home, project)
    if not items:
        return ""
    lines = [f"## Open from last time ({Path(project).name}: the agents' own plans; `memlane tasks` lists them)"]
    for t in items:
        when = t.updated[:10]
        line = f"- [{t.status}] {t.description} (session {t.session_id[:8]}, {when})"
        if sum(len(x) + 1 for x in lines) + len(line) > max_chars:
            break
        lines.append(line)
    return "\n".join(lines) if len(lines) > 1 else ""


def export(home: str | PathLike[str], project: str | None, *, include_closed: bool = True) -> dict[str, Any]:
    """One project's tasks in the design's ``tasks.json`` schema."""
    return {
        "project": project,
        "tasks": [
            {
                "id": t.id,
                "priority": t.priority,
                "status": t.status,
                "description": t.description,
                "acceptance_criteria": [],
                "created": t.created,
                "completed": t.completed,
                "blocked_by": t.blocked_by,
                "session_id": t.session_id,
                "source": t.path,
            }
            for t in tasks_of(home, project, include_closed=include_closed)
        ],
    }


def forget_session(home: str | PathLike[str], session_id: str) -> int:
    """Drop the tasks a session last wrote (``memlane forget --session``); returns how many."""
    home = Path(home).expanduser()
    if not _path(home).exists():
        return 0
    with brain_lock(home):
        tasks = load(home)
        kept = [t for t in tasks if t.session_id != session_id]
        if len(kept) != len(tasks):
            _save(home, kept)
    return len(tasks) - len(kept)
