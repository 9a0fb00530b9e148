"""memlane: a memory for AI agents that lasts across sessions.

Index transcript archives (Claude Code, Codex, OpenClaw, Gemini CLI, Cursor, Copilot CLI,
Aider, Hermes, ChatGPT / Claude.ai / Slack exports, generic JSONL) and search them hybrid (BM25 + vectors), in milliseconds, with provenance.

Example:
    >>> import memlane, tempfile
    >>> mem = memlane.open(tempfile.mkdtemp(), embedder="none")
    >>> mem.index([]).files_seen
    0
"""

from typing import TYPE_CHECKING

from memlane._core import __version__
from memlane.errors import (
    CorruptIndexError,
    EmbedderMismatchError,
    IndexLockedError,
    MemlaneError,
    ParseError,
)
from memlane.memory import IndexReport, Memory, open
from memlane.ranking.hit import Hit

if TYPE_CHECKING:  # what __getattr__ imports on first use, for the type checker
    from memlane.brain import Brain, MemoryGuardError
    from memlane.cluster import open_index
    from memlane.cluster.client import connect

__all__ = [
    "Brain",
    "CorruptIndexError",
    "EmbedderMismatchError",
    "Hit",
    "IndexLockedError",
    "IndexReport",
    "MemlaneError",
    "Memory",
    "MemoryGuardError",
    "ParseError",
    "__version__",
    "connect",
    "open",
    "open_index",
]


def __getattr__(name: str) -> object:
    # The brain (MEMORY.md, guard rules) loads on first use so `import memlane` stays fast.
    if name in ("Brain", "MemoryGuardError"):
        import memlane.brain

        return getattr(memlane.brain, name)
    if name == "connect":
        # A served index (`memlane serve`) over HTTP: the client imports no Ray.
        from memlane.cluster.client import connect

        return connect
    if name == "open_index":
        # A sharded index (memlane.cluster), searched in this process.
        import memlane.cluster

        return getattr(memlane.cluster, name)
    raise AttributeError(f"module 'memlane' has no attribute {name!r}")
