"""How much of a query is searched: its first :data:`MAX_QUERY_CHARS` characters.

A search costs time in proportion to its query: every word is a posting list to walk, and the
time-aware reordering runs its regexes over the whole text, so a pasted log would make every
hook slow. Bounded, a query costs what an ordinary long prompt costs. Little is lost: the
words a person types come first, and past a few thousand characters pasted text drowns them
anyway; real prompts are far shorter than the bound.

4,000 characters (about 1,000 tokens) keeps the whole of nearly every prompt a person types,
with room for a pasted error, and the cut is made at a word boundary. :meth:`memlane.Memory.search`
and :func:`memlane.recall.recall` apply it where a query enters, so hooks, the MCP server,
the CLI and the API all search alike.

Example:
    >>> len(bounded("word " * 2000)) <= MAX_QUERY_CHARS
    True
    >>> bounded("which database does billing use?")
    'which database does billing use?'
"""

from __future__ import annotations

MAX_QUERY_CHARS = 4000
"""Characters of a query that are searched (see the module doc for the measurement)."""

# A cut inside a word would search a fragment ("postg"): back up to the last space, unless
# the text has none near the end (one long token, base64), then cut where the bound falls.
_WORD_SLACK = 100


def bounded(query: str) -> str:
    """The part of ``query`` that is searched: all of it up to :data:`MAX_QUERY_CHARS`
    characters, else its start cut at a word boundary."""
    if len(query) <= MAX_QUERY_CHARS:
        return query
    cut = query[:MAX_QUERY_CHARS]
    space = max(cut.rfind(" ", MAX_QUERY_CHARS - _WORD_SLACK), cut.rfind("\n", MAX_QUERY_CHARS - _WORD_SLACK))
    return cut[:space] if space > 0 else cut
