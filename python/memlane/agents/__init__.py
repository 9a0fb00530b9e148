"""What coding agents talk to: hooks, install-hooks and doctor, the MCP server, and their CLI.

- :mod:`memlane.agents.hooks` — ``memlane hook CLIENT EVENT``: context in at session start and
  first prompt, transcripts queued for a detached indexer when a turn or session ends;
- :mod:`memlane.agents.queue` — that queue and the detached worker that indexes and distils it;
- :mod:`memlane.agents.install` — ``memlane install-hooks`` and ``memlane doctor``;
- :mod:`memlane.agents.mcp` — ``memlane mcp``, the MCP server on stdio;
- :mod:`memlane.agents.cli` — those subcommands, added to the main parser by :mod:`memlane.cli`.

The package sits just below the CLI: it uses :class:`memlane.Memory` and the brain, and nothing
below it imports it. Its modules load on demand (a hook is a process per agent event).

:func:`agent_transcript_dirs` lists the agents' transcript folders that exist on this machine
(what a bare ``memlane index`` indexes), so a script can index them without naming an agent
that is not installed.

Example:
    >>> from memlane.agents import agent_transcript_dirs
    >>> all(folder.is_dir() for folder in agent_transcript_dirs())
    True
"""

from memlane._paths import agent_transcript_dirs

__all__ = ["agent_transcript_dirs"]
