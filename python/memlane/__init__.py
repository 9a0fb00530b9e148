"""memlane: a memory for AI agents that lasts across sessions.

Index transcript archives (Claude Code, Codex, OpenClaw, Gemini CLI, generic JSONL) and
search them hybrid (BM25 + vectors), in milliseconds, with provenance.

Example:
    >>> import memlane, tempfile
    >>> mem = memlane.open(tempfile.mkdtemp(), embedder="none")
    >>> mem.index([]).files_seen
    0
"""

from memlane._core import __version__
from memlane.errors import (
    CorruptIndexError,
    EmbedderMismatchError,
    IndexLockedError,
    MemlaneError,
    ParseError,
)
from memlane.memory import Hit, IndexReport, Memory, open

__all__ = [
    "CorruptIndexError",
    "EmbedderMismatchError",
    "Hit",
    "IndexLockedError",
    "IndexReport",
    "MemlaneError",
    "Memory",
    "ParseError",
    "__version__",
    "open",
]
