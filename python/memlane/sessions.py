"""The sessions a home holds: one row per transcript session, and a session's chunks in order.

The rows come from the core's catalog (``Store.sessions``), which reads only the keyword
index's term dictionaries, postings and fast columns: listing 10k sessions never reads the
chunks themselves. A session's path and format live only in its stored chunks, so
:func:`describe` fetches one chunk per session shown, for a page of rows, not for all.

Example:
    >>> import memlane, tempfile
    >>> catalog(memlane.open(tempfile.mkdtemp(), embedder="none")._store)
    []
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import NamedTuple

from memlane import _core
from memlane.ranking.hit import Hit


class Session(NamedTuple):
    """One transcript session of the home.

    Attributes:
        session_id: As hits show it.
        chunks: Its live chunks.
        first_ms: Time of its first chunk (ms since the epoch), if known.
        last_ms: Time of its last chunk, if known.
        project: The project its turns were written in ("" when unknown).
        branch: The git branch, when the source records it.
        key: One of its chunks (the earliest), for :func:`describe`.
        path: Its source file (filled by :func:`describe`).
        format: The file's format (filled by :func:`describe`).
    """

    session_id: str
    chunks: int
    first_ms: int | None
    last_ms: int | None
    project: str
    branch: str
    key: int
    path: str = ""
    format: str = ""

    # Formatted when read (and a tuple, not a dataclass): a catalog of 10k sessions is built
    # after every index run and shown 50 at a time.
    @property
    def first(self) -> str | None:
        """Time of its first chunk (ISO-8601 UTC), if known."""
        return _iso(self.first_ms)

    @property
    def last(self) -> str | None:
        """Time of its last chunk (ISO-8601 UTC), if known."""
        return _iso(self.last_ms)


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def catalog(store: _core.Store) -> list[Session]:
    """Every transcript session of ``store``, the most recent first."""
    return [Session(*row) for row in store.sessions()]


def describe(store: _core.Store, sessions: Sequence[Session]) -> list[Session]:
    """``sessions`` with their path and format, read from one stored chunk each."""
    stored = {c["key"]: c for c in store.get([s.key for s in sessions], reload=False)}
    return [
        s._replace(path=stored[s.key]["path"], format=stored[s.key]["format"]) if s.key in stored else s
        for s in sessions
    ]


def chunks_of(store: _core.Store, session_id: str) -> list[Hit]:
    """The live chunks of a session, in turn order (looked up, so without scores)."""
    found = store.get(store.session_keys(session_id))
    found.sort(key=lambda c: (c["turn_start"], c["turn_end"], c["key"]))
    return [Hit._from_stored(c) for c in found]
