"""The knowledge library (DESIGN.md §1, level L3): where memlane looks for markdown notes.

The Rust core does the work: a ``.md``/``.markdown`` file found by ``Memory.index`` is split into
sections (``#``/``##`` headings; ``## HH:MM`` entries in ``DailyActivity/YYYY-MM-DD.md`` and
other date-named notes; one entry per item in ``signals/`` notes), each chunk keeps its file,
heading path, time, frontmatter and tags, and is searched with ``source="knowledge"`` beside
the transcripts. The brain's own files (``MEMORY.md``, ``EVOLUTION.md``, ``Archives/``) are
skipped by folder walks: the brain injects them whole, so indexing them would store them twice.

Whose notes they are follows where the library lies. A library inside a git repository is that
repository's project: its notes are filed under the repository's key, and only a search of that
project (or an unscoped one) finds them. A library in no repository — a personal notes folder,
``$MEMLANE_LIBRARY``, the brain's ``DailyActivity`` journal — is the user's own, as user-level
memory is in Claude Code: its notes join every project's search (``--project``, the hooks'
session project, MCP and agent roles), while another project's transcripts and repository
notes stay out. ``memlane status`` lists the libraries and marks the global ones
(:meth:`memlane.Memory.libraries`); the distinction is read from the folders when searching,
so a home indexed before it existed has it at once.

Example:
    >>> import os, tempfile
    >>> os.environ["MEMLANE_LIBRARY"] = tempfile.mkdtemp()
    >>> library_dirs(tempfile.mkdtemp())[0] == __import__("pathlib").Path(os.environ.pop("MEMLANE_LIBRARY"))
    True
"""

from __future__ import annotations

import os
from os import PathLike
from pathlib import Path

from memlane._paths import default_brain_dir

LIBRARY_ENV = "MEMLANE_LIBRARY"


def library_dirs(home: str | PathLike[str] | None = None) -> list[Path]:
    """Markdown folders indexed when no path is named: ``$MEMLANE_LIBRARY`` (``os.pathsep``-separated),
    then the brain folder of ``home`` for its DailyActivity notes; only those that exist."""
    named = [Path(p).expanduser() for p in os.environ.get(LIBRARY_ENV, "").split(os.pathsep) if p.strip()]
    found: list[Path] = []
    for folder in [*named, default_brain_dir(home)]:
        if folder.is_dir() and folder not in found:
            found.append(folder)
    return found
