"""Where memlane keeps its data: the home (indexes) and the shared cache (embeddings, models)."""

from __future__ import annotations

import os
from os import PathLike
from pathlib import Path


def default_home() -> Path:
    """``$MEMLANE_HOME``, else ``$XDG_DATA_HOME/memlane`` (``~/.local/share/memlane``)."""
    if env := os.environ.get("MEMLANE_HOME"):
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data).expanduser() / "memlane"


def default_brain_dir(home: str | PathLike[str] | None = None) -> Path:
    """``$MEMLANE_BRAIN_DIR``, else ``<home>/brain`` (home: ``$MEMLANE_HOME`` or the XDG data dir).

    Example:
        >>> default_brain_dir("/tmp/h").name if "MEMLANE_BRAIN_DIR" not in __import__("os").environ else "brain"
        'brain'
    """
    if env := os.environ.get("MEMLANE_BRAIN_DIR"):
        return Path(env).expanduser()
    return (Path(home).expanduser() if home is not None else default_home()) / "brain"


def default_cache_dir() -> Path:
    """``$MEMLANE_CACHE_DIR``, else ``$XDG_CACHE_HOME/memlane`` (``~/.cache/memlane``).

    Shared by every home on the machine, so rebuilding an index never re-embeds.
    """
    if env := os.environ.get("MEMLANE_CACHE_DIR"):
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache).expanduser() / "memlane"


def agent_transcript_dirs() -> list[Path]:
    """The transcript folders of agents installed on this machine (those that exist)."""
    home = Path.home()
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR", home / ".claude"))
    codex = Path(os.environ.get("CODEX_HOME", home / ".codex"))
    candidates = [
        claude / "projects",
        codex / "sessions",
        codex / "archived_sessions",
        home / ".gemini" / "tmp",
        Path(os.environ.get("OPENCLAW_STATE_DIR", home / ".openclaw")) / "agents",
        home / ".pi" / "agent" / "sessions",
        home / ".cursor" / "projects",
        home / ".copilot" / "session-state",
        Path(os.environ.get("HERMES_HOME", home / ".hermes")) / "sessions",
    ]
    return [p for p in candidates if p.is_dir()]


# Transcript formats the core parses (names of `--format`); `memlane index` also takes
# `markdown` notes, distillation only transcripts.
TRANSCRIPT_FORMATS = [
    "claude-code",
    "codex",
    "openclaw",
    "gemini",
    "cursor",
    "copilot",
    "hermes",
    "aider",
    "chatgpt",
    "claude-ai",
    "slack",
    "generic",
    "longmemeval",
    "locomo",
]
