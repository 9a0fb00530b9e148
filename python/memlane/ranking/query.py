"""How much of a query is searched: its first :data:`MAX_QUERY_CHARS` characters.

A search costs time in proportion to its query: every word is a posting list to walk, and the
time-aware reordering runs its regexes over the whole text. A pasted 5 MB log made a hook take
1.5–4 s and logged 10 MB a call. Bounded, a query costs what an ordinary long prompt costs:

* cost (a home of 32k generated chunks, ``Memory.search``, best of 3): 2 ms at 1,000
  characters, 8 ms at 4,000, 15 ms at 16,000, 0.8 s at 1,000,000 — it grows with the query
  and flattens only where the query is cut;
* what is lost: a prompt made of a chunk's own words followed by 1 MB of pasted text from the
  same vocabulary finds that chunk in its top 10 for 60/60 chunks cut at 1,000 characters,
  58/60 at 2,000, 52/60 at 4,000, 42/60 at 8,000 and 0/60 at 16,000 (pasted words drown the
  user's); real prompts are far shorter (the shared Claude Code samples: p99 410 characters).

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
