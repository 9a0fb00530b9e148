"""When the hooks start compaction and dreaming: cheap checks, then a detached ``memlane … --if-due``.

The agent hooks call :func:`run_due` after their worker has indexed and distilled a session. It
decides from files alone (no index is opened) and starts at most one detached process per job;
the job itself takes its lease, honours its cooldown (``--if-due``) and goes through its gate.

* ``compact`` is due when a complete week holds at least three dailies and has no weekly yet;
* ``dream`` is due when at least :data:`DREAM_MIN_DAILIES` dailies came after its watermark and
  its cooldown (a day) has passed — like Claude Code's own consolidation, at most once a day and
  every five sessions.

Example:
    >>> import tempfile
    >>> due(tempfile.mkdtemp(), tempfile.mkdtemp())
    []
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import date
from os import PathLike
from pathlib import Path
from typing import Any

from memlane.timeline import notes
from memlane.timeline.compact import MIN_DAILIES
from memlane.timeline.lease import COOLDOWNS, Jobs

DREAM_MIN_DAILIES = 5
# Detached jobs started by this process: held so that a short-lived hook does not warn about a
# child it never waits for (it outlives the hook on purpose).
_SPAWNED: list[subprocess.Popen[bytes]] = []


def due(home: str | PathLike[str], brain_dir: str | PathLike[str], *, today: date | None = None) -> list[str]:
    """The timeline jobs worth starting now (``compact``, ``dream``)."""
    home, brain_dir = Path(home).expanduser(), Path(brain_dir).expanduser()
    days = notes.dailies(brain_dir)
    if not days:
        return []
    today = today or date.today()
    out = []
    weeks: dict[str, int] = {}
    for day in days:
        weeks[notes.iso_week(day)] = weeks.get(notes.iso_week(day), 0) + 1
    if any(
        n >= MIN_DAILIES and notes.week_days(w)[1] < today and not (brain_dir / notes.WEEKLY_DIR / f"{w}.md").exists()
        for w, n in weeks.items()
    ):
        out.append("compact")
    state = Jobs(home).status("dream")
    last = (json.loads(state["watermark"]) if state["watermark"] else {}).get("daily")
    fresh = sum(1 for d in days if last is None or d.isoformat() > last)
    cooled = state["last_success"] is None or time.time() >= state["last_success"] + COOLDOWNS["dream"]
    if fresh >= DREAM_MIN_DAILIES and cooled and state["held_by"] is None:
        out.append("dream")
    return out


def spawn(home: str | PathLike[str], brain_dir: str | PathLike[str], job: str, log: Path, embed: str = "local") -> None:
    """Start ``memlane JOB --if-due`` detached (own session, output appended to ``log``); ``embed`` is the home's embedder."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        kwargs: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": out, "stderr": out, "close_fds": True}
        if sys.platform == "win32":
            kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
        else:
            kwargs["start_new_session"] = True
        cmd = [
            sys.executable,
            "-m",
            "memlane.cli",
            job,
            "--if-due",
            "--home",
            os.fspath(home),
            "--brain",
            os.fspath(brain_dir),
            "--embed",
            embed,
        ]
        _SPAWNED.append(subprocess.Popen(cmd, **kwargs))


def run_due(home: str | PathLike[str], brain_dir: str | PathLike[str], log: Path, embed: str = "local") -> list[str]:
    """Start every due job (see :func:`due`); returns their names."""
    jobs = due(home, brain_dir)
    for job in jobs:
        spawn(home, brain_dir, job, log, embed)
    return jobs
