"""Recall inside the agent loop: what memory knows about a query, as one token-budgeted block.

:func:`recall` gathers candidates from the brain (every MEMORY.md and EVOLUTION.md entry,
archives included) and from a hybrid search over the knowledge library and the transcripts,
then:

1. keeps nothing unless a candidate's relevance (an absolute scale, see
   :mod:`memlane.ranking.relevance`) reaches the floor — no recall beats wrong recall — and then
   the hits that reach the item floor and the brain entries that reach the floor;
2. weighs what is left: a superseded brain entry ×0.1; with ``half_life_days`` a dated item
   ×0.5 per half-life of age (MEMORY.md entries and topic-named notes are evergreen; notes
   named by a date, like ``DailyActivity/2026-04-02.md``, and transcripts decay);
3. orders by maximal marginal relevance, collapsing near-duplicates (word-set Jaccard ≥ 0.8:
   the same turns indexed twice, a note pasted into a chat) while distinct items stay;
4. assembles the best items that fit ``max_tokens``, each under a provenance line:
   ``path › heading · date`` for notes and brain entries, ``session … · turns a-b · date``
   for transcripts.

The always-injected part of memory is :func:`session_snapshot`, frozen per session so the
prompt prefix stays byte-identical; :func:`focus_query` is the query asked before a session's
first message.

Example:
    >>> import memlane, tempfile
    >>> r = memlane.open(tempfile.mkdtemp(), embedder="none").recall("billing database")
    >>> bool(r), r.text
    (False, '')
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import math
import os
import re
import stat
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, ForwardRef, Protocol, TypedDict, TypeVar

from memlane.embed.backfill import embed_chunks
from memlane.errors import ArgumentTypeError, InvalidArgumentError
from memlane.ranking.query import bounded as bounded_query
from memlane.ranking.relevance import FLOOR, ITEM_FLOOR, entry_relevance

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import numpy as np
    from typing_extensions import Unpack

    from memlane.brain import Brain, Entry
    from memlane.embed import Embedder
    from memlane.embed.cache import EmbeddingCache
    from memlane.ranking.hit import Hit

DRIFT_CAVEAT = "Memory is a snapshot of the past: verify names, paths and flags before acting on them."
"""The caveat every injected memory block carries."""

DAMAGED_INDEX = (
    "The index is damaged: run `memlane repair`, which rebuilds it from the sources and the embedding "
    "cache without an embedding call; until then recall may find nothing."
)
"""The line a snapshot or a hook gives in place of recall when the index is damaged."""

DEFAULT_THRESHOLD = FLOOR
"""The relevance floor: nothing is recalled unless a candidate reaches it (the search's)."""

SUPERSEDED_WEIGHT = 0.1
"""Weight of a superseded brain entry (the brain's :attr:`Entry.weight`)."""

# MMR trade-off between relevance and novelty (1.0: relevance only): on LoCoMo dev, 0.85 keeps
# as many gold turns as relevance alone at 4k and 15k tokens (0.7 loses 9 of 1,138 at 4k).
# Then the word-set similarity from which two items count as the same text: in LoCoMo dev,
# distinct turn pairs of one conversation stay under 0.53 but for one-line farewells ("Bye
# Nate!" / "Bye Joanna!"); re-indexed or pasted copies score about 1.
_MMR_LAMBDA = 0.85
_DUPLICATE_SIMILARITY = 0.8
# Hybrid candidates: at least 50 (so a small budget picks from the same pool as a large one,
# and MMR has room to skip duplicates), more for big budgets: one per 300 tokens, about two
# candidates per full-size transcript chunk that fits.
_TOKENS_PER_CANDIDATE = 300
_MIN_CANDIDATES = 50
_MAX_CANDIDATES = 200

SNAPSHOT_DIR = "snapshots"
# Snapshots unused for this long are pruned; a resumed session past that gets a fresh one
# (its provider-side prompt cache is long gone anyway).
_SNAPSHOT_MAX_AGE_S = 14 * 86_400
_SNAPSHOT_MAX_COUNT = 256

_WORD = re.compile(r"[a-z0-9]+")
_DATE_IN_NAME = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class Memory(Protocol):
    """What recall reads of a :class:`memlane.Memory`.

    Recall sits below ``memory.py`` (which calls it) and does not import it: it asks for a
    search, the home, and the memory's embedding helpers, so that brain entries are scored
    with the query vector and embedding cache of the search they are ranked beside.
    """

    home: Path
    _store: Any
    _embedder_spec: Any

    @property
    def embedder(self) -> Embedder | None: ...

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        sources: Sequence[str] | None = None,
        threshold: float = FLOOR,
        project: str | None = None,
        branch: str | None = None,
    ) -> list[Hit]: ...

    def project_keys(self, project: str) -> list[str]: ...

    @property
    def cache(self) -> EmbeddingCache: ...

    def _query_vector(self, embedder: Embedder, query: str) -> np.ndarray: ...


def estimate_tokens(text: str) -> int:
    """Tokens by the core's cheap estimate: four UTF-8 bytes per token, rounded up.

    The same rule as ``memlane-core``'s ``chunk::estimate_tokens``, so chunk sizes and recall
    budgets are counted alike.

    Example:
        >>> estimate_tokens("exit code 137")
        4
    """
    return (len(text.encode("utf-8")) + 3) // 4


@dataclass(frozen=True)
class RecallItem:
    """One recalled piece of memory.

    Attributes:
        id: Chunk id, or the brain entry's key (``KD15``).
        source: ``brain`` | ``knowledge`` | ``transcript``.
        text: The text injected under the provenance line.
        score: Final score: relevance × weight (superseded 0.1) × decay.
        provenance: One line: ``MEMORY.md › Key Decisions › KD15 · 2026-04-02``,
            ``notes/billing.md › Storage · 2026-04-10`` or ``session 0b5c… · turns 12-15 · 2026-04-02 14:03``.
        timestamp: ISO date or time of the item, if known.
        superseded: A brain entry another entry replaced, or a hit the search marked
            ``superseded_by`` a newer one (an earlier statement; it keeps its score).
        relevance: The item's relevance on the absolute scale the floor is set on (before
            weighting and decay), when known.
        parts: What the relevance was made of: a hit's ``bm25``, ``vector`` and ``coverage``
            (:attr:`memlane.ranking.hit.Hit.scores`), a brain entry's ``keyword`` score and
            ``vector`` similarity (None in keyword-only mode); None when not known.
    """

    id: str
    source: str
    text: str
    score: float
    provenance: str
    timestamp: str | None
    superseded: bool = False
    relevance: float | None = None
    parts: dict[str, float | None] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class Recall:
    """The result of :meth:`memlane.Memory.recall`: the items and the block to inject.

    ``str(recall)`` is the block; an empty recall is falsy and its text is ``""``.

    Attributes:
        query: The query asked.
        items: What made it into the block, best first.
        text: The assembled block (``""`` when nothing is relevant).
        tokens: Estimated tokens of ``text`` (never more than the budget).
    """

    query: str
    items: list[RecallItem]
    text: str
    tokens: int

    def __str__(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        return bool(self.items)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the CLI's ``--json`` shape)."""
        return {
            "query": self.query,
            "tokens": self.tokens,
            "text": self.text,
            "items": [i.to_dict() for i in self.items],
        }


@dataclass
class _Candidate:
    item: RecallItem
    words: frozenset[str]
    tokens: int


# ---------------------------------------------------------------------------- weighting


def _date_in_name(path: str) -> datetime | None:
    m = _DATE_IN_NAME.search(Path(path).name)
    if not m:
        return None
    with contextlib.suppress(ValueError):
        return datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=timezone.utc)
    return None


def _parse_iso(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def decay(source: str, path: str, timestamp: str | None, now: datetime, half_life_days: float | None) -> float:
    """The temporal weight of an item: 1.0 when evergreen or decay is off.

    Brain entries and notes whose file name carries no date are evergreen; a date-named note
    ages from the date in its name, a transcript from its timestamp.

    Example:
        >>> now = datetime(2026, 4, 30, tzinfo=timezone.utc)
        >>> decay("knowledge", "DailyActivity/2026-04-20.md", None, now, 10.0)
        0.5
        >>> decay("knowledge", "notes/billing.md", "2020-01-01", now, 10.0)
        1.0
    """
    if half_life_days is None or source == "brain":
        return 1.0
    when = _date_in_name(path)
    if when is None:
        if source == "knowledge":
            return 1.0
        when = _parse_iso(timestamp)
    if when is None:
        return 1.0
    age_days = max(0.0, (now - when).total_seconds() / 86_400)
    return float(0.5 ** (age_days / half_life_days))


# ---------------------------------------------------------------------------- provenance


def _display_path(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home) :] if path.startswith(home + os.sep) else path


def _when(timestamp: str | None) -> str:
    if not timestamp:
        return "undated"
    return timestamp[:16].replace("T", " ") + (" UTC" if len(timestamp) > 10 else "")


def hit_provenance(hit: Hit, *, project: bool = False) -> str:
    """The provenance line of a search hit; an earlier statement names the hit superseding it;
    with ``project``, the project it comes from (its name: the key's last part).

    Example:
        >>> from memlane.ranking.hit import Hit
        >>> h = Hit("c1", "transcript", "...", 0.9, {}, "/x/s1.jsonl", "s1", 12, 15, "2026-04-02T14:03:00Z", "")
        >>> hit_provenance(h)
        'session s1 · turns 12-15 · 2026-04-02 14:03 UTC'
    """
    earlier = f" · earlier statement, superseded by {hit.superseded_by}" if hit.superseded_by else ""
    if context := hit.meta.get("context"):
        earlier += f" · via {context}"
    if project:
        earlier = f" · project {Path(hit.project).name or hit.project or '(none)'}{earlier}"
    if hit.source == "transcript":
        turns = f"turn {hit.turn_start}" if hit.turn_start == hit.turn_end else f"turns {hit.turn_start}-{hit.turn_end}"
        return f"session {hit.session_id} · {turns} · {_when(hit.timestamp)}{earlier}"
    # A note's date is the one in its name, else its own (a file time: the day is enough).
    named = _date_in_name(hit.path)
    date = named.date().isoformat() if named else (hit.timestamp or "undated")[:10]
    where = " › ".join(p for p in (_display_path(hit.path), hit.heading) if p)
    return f"{where} · {date}{earlier}"


def entry_provenance(entry: Entry, brain_dir: Path) -> str:
    """The provenance line of a brain entry: file › section › key · date · state."""
    try:
        where = str(Path(entry.source).relative_to(brain_dir))
    except ValueError:
        where = _display_path(entry.source)
    line = f"{where} › {entry.section} › {entry.key} · {entry.date or 'undated'}"
    if entry.superseded:
        line += f" · superseded by {entry.superseded_by}" if entry.superseded_by else " · superseded"
    elif entry.resolved:
        line += f" · {entry.meta['status']}"
    return line


# ---------------------------------------------------------------------------- candidates


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def _candidate(item: RecallItem) -> _Candidate:
    # Counted with a four-digit item number so the block's real numbering never exceeds it.
    return _Candidate(item, _words(item.text), estimate_tokens(_render_item(9999, item)))


def _hit_candidates(
    mem: Memory, query: str, k: int, threshold: float, half_life: float | None, now: datetime, scope: _Scope
) -> list[_Candidate]:
    # Summaries too: one that matches hands its place to the entries it cites (ranking.hierarchy).
    hits = mem.search(
        query,
        k=k,
        sources=["transcript", "knowledge", "summary"],
        threshold=threshold,
        project=scope.project,
        branch=scope.branch,
    )
    # The search answers only when a candidate reaches the floor, and then with every candidate:
    # the weakest stay out (a lower bar than the floor's, which would lose gold turns).
    item_floor = min(threshold, ITEM_FLOOR)
    hits = [h for h in hits if h.relevance is not None and h.relevance >= item_floor]
    # Answers from several repositories side by side: each says which one it is about.
    label = scope.label or len({h.project for h in hits if h.project}) > 1
    out = []
    for h in hits:
        score = h.score * decay(h.source, h.path, h.timestamp, now, half_life)
        provenance = hit_provenance(h, project=label)
        item = RecallItem(
            h.id,
            h.source,
            h.text.strip(),
            round(score, 6),
            provenance,
            h.timestamp,
            h.superseded_by is not None,
            h.relevance,
            dict(h.scores),
        )
        out.append(_candidate(item))
    return out


@dataclass(frozen=True)
class _Scope:
    """Which memories a recall reads: one project's (and one branch's), or all; whether hits
    name their project."""

    project: str | None = None
    branch: str | None = None
    label: bool = False


@dataclass
class _BrainView:
    """The brain's entries as of one state of its files, with their vectors per embedder."""

    signature: tuple[tuple[str, int, int, int], ...]
    entries: list[Entry]
    vectors: dict[str, list[np.ndarray]]


# Parsed brains by folder: a long-lived process (the MCP server) parses and embeds the brain
# once per change, not once per recall.
_BRAIN_VIEWS: dict[Path, _BrainView] = {}


def _brain_view(brain: Brain) -> _BrainView:
    from memlane.brain.brain import EVOLUTION_FILE, MEMORY_FILE

    files = [brain.dir / MEMORY_FILE, brain.dir / EVOLUTION_FILE]
    if brain.archive_dir.is_dir():
        files += sorted(brain.archive_dir.glob("*-archive-*.md"))
    signature = []
    for p in files:
        with contextlib.suppress(FileNotFoundError):
            st = p.stat()
            # Writes replace the file atomically: a new inode even within one mtime tick.
            signature.append((str(p), st.st_ino, st.st_mtime_ns, st.st_size))
    view = _BRAIN_VIEWS.get(brain.dir)
    if view is None or view.signature != tuple(signature):
        view = _BrainView(tuple(signature), brain.entries(include_archived=True, evolution=True), {})
        _BRAIN_VIEWS[brain.dir] = view
    return view


def _brain_similarities(mem: Memory, query: str, view: _BrainView) -> list[float] | None:
    """Cosine of the query with each entry, or ``None`` in keyword-only mode.

    Entry vectors come from the embedding cache (keyed by content hash), so only new or
    edited entries cost an embedding call.
    """
    if not view.entries or mem._embedder_spec == "none" or not mem._store.meta().get("embedder_id"):
        return None
    embedder = mem.embedder
    if embedder is None:
        return None
    vectors = view.vectors.get(embedder.id)
    if vectors is None:
        texts = [" ".join([e.text, *e.aliases]) for e in view.entries]
        rows = [(i, hashlib.blake2b(t.encode("utf-8"), digest_size=16).hexdigest(), t) for i, t in enumerate(texts)]
        _, vectors, _ = embed_chunks(mem.cache, rows, embedder)
        view.vectors[embedder.id] = vectors
    q = mem._query_vector(embedder, query)
    return [float((v @ q).max()) for v in vectors]


def _brain_candidates(mem: Memory, brain: Brain, query: str, threshold: float, project: str | None) -> list[_Candidate]:
    from memlane.brain.keywords import STOPWORDS, keyword_scores
    from memlane.brain.scopes import in_project

    view = _brain_view(brain)
    if not view.entries:
        return []
    # Scoped to a project: entries bound to another project stay out (the unbound are everyone's).
    keys = mem.project_keys(project) if project is not None else None
    # The keyword score is the share of the query's IDF mass an entry matches: function words
    # would dilute it, so only the content terms are scored.
    terms = " ".join(w for w in _WORD.findall(query.lower()) if w not in STOPWORDS)
    keyword = {e.key: s / e.weight for e, s in keyword_scores(view.entries, terms)} if terms else {}
    sims = _brain_similarities(mem, query, view)
    out = []
    for i, e in enumerate(view.entries):
        if e.withheld:  # fails MemoryGuard on read (a hand edit): never injected
            continue
        if keys is not None and not in_project(e, keys):
            continue
        kw = keyword.get(e.key, 0.0)
        relevance = entry_relevance(kw, None if sims is None else sims[i])
        if relevance < threshold:
            continue
        text = e.text + (f"\nDetail: {e.detail}" if e.detail else "")
        weight = SUPERSEDED_WEIGHT if e.superseded else 1.0
        item = RecallItem(
            e.key,
            "brain",
            text,
            round(relevance * weight, 6),
            entry_provenance(e, brain.dir),
            e.date,
            e.superseded,
            round(relevance, 6),
            {"keyword": round(kw, 6), "vector": None if sims is None else round(sims[i], 6)},
        )
        out.append(_candidate(item))
    brain.log("search", query=query, results=len(out), path=str(brain.dir))
    return out


# ---------------------------------------------------------------------------- selection


def _bitsets(pool: list[_Candidate]) -> list[int]:
    """Each candidate's word set as the bits of one int over the pool's vocabulary.

    Jaccard over Python ints (``&`` and ``bit_count``) is about a hundred times faster than
    over sets of strings, which matters: MMR compares every pick with every candidate left.
    """
    vocab: dict[str, int] = {}
    out = []
    for c in pool:
        ids = [vocab.setdefault(w, len(vocab)) for w in c.words]
        bits = bytearray((max(ids, default=0) >> 3) + 1)
        for i in ids:
            bits[i >> 3] |= 1 << (i & 7)
        out.append(int.from_bytes(bits, "little"))
    return out


def select(candidates: list[_Candidate], budget: int) -> list[_Candidate]:
    """MMR order within ``budget`` tokens, near-duplicates of a chosen item dropped.

    Each step takes the candidate with the best ``λ·score − (1−λ)·max Jaccard similarity of
    its words to the chosen``; a candidate at least :data:`_DUPLICATE_SIMILARITY` similar to a
    chosen one is dropped, and one too big for what is left of the budget is skipped.
    """
    pool = sorted(candidates, key=lambda c: (-c.item.score, c.item.id))  # equal scores: same order every time
    bits = _bitsets(pool)
    sizes = [len(c.words) for c in pool]
    max_sim = [0.0] * len(pool)
    alive = [c.tokens <= budget for c in pool]
    chosen: list[_Candidate] = []
    left = budget
    while True:
        best, best_value = -1, -math.inf
        for i, c in enumerate(pool):
            if alive[i]:
                value = _MMR_LAMBDA * c.item.score - (1 - _MMR_LAMBDA) * max_sim[i]
                if value > best_value:
                    best, best_value = i, value
        if best < 0:
            return chosen
        alive[best] = False
        chosen.append(pool[best])
        left -= pool[best].tokens
        for i, c in enumerate(pool):
            if not alive[i]:
                continue
            if c.tokens > left:
                alive[i] = False
                continue
            shared = (bits[best] & bits[i]).bit_count()
            union = sizes[best] + sizes[i] - shared
            sim = shared / union if union else 1.0
            if sim >= _DUPLICATE_SIMILARITY:
                alive[i] = False
            max_sim[i] = max(max_sim[i], sim)


# ---------------------------------------------------------------------------- assembly


def _header(query: str) -> str:
    q = " ".join(query.split())
    if len(q) > 200:
        q = q[:199] + "…"
    return f"# Recalled memory · {q}\n{DRIFT_CAVEAT}\n"


class RecallOptions(TypedDict, total=False):
    """The keyword options of a recall, defined once for every entry point: :func:`recall`,
    :meth:`memlane.Memory.recall` and a served index's
    :meth:`memlane.cluster.client.RemoteMemory.recall` (defaults: :data:`RECALL_DEFAULTS`).

    Attributes:
        half_life_days: Temporal decay of dated items (``None``: off, the default).
        include_brain: Also recall MEMORY.md and EVOLUTION.md entries.
        show_secrets: Leave keys and passwords as the sources have them (else masked:
            ``AKIA…8WVY``); for a user at a terminal, never for an agent.
        project: Only this project's memories (see :meth:`memlane.Memory.search`): its
            transcripts and notes, and brain entries not bound to another project.
        branch: Only transcripts written on this git branch.
        label_projects: Name each hit's project in its provenance line (done anyway when
            the hits come from more than one project).
    """

    half_life_days: float | None
    include_brain: bool
    show_secrets: bool
    project: str | None
    branch: str | None
    label_projects: bool


DEFAULT_MAX_TOKENS = 15_000
"""The budget of a recall block when none is given."""
RECALL_DEFAULTS: RecallOptions = {
    "half_life_days": None,
    "include_brain": True,
    "show_secrets": False,
    "project": None,
    "branch": None,
    "label_projects": False,
}
"""Every :class:`RecallOptions` key with its default, in the order a request to a server lists them."""


_Function = TypeVar("_Function", bound="Callable[..., Any]")


def shows_recall_options(function: _Function) -> _Function:
    """``function``, whose ``**options`` are :class:`RecallOptions`, introspected (``help()``,
    :func:`inspect.signature`) with those options as keyword parameters and their defaults, as
    if each entry point had written them out.

    Example:
        >>> @shows_recall_options
        ... def ask(query: str, **options: Any) -> None: ...
        >>> str(inspect.signature(ask)).startswith("(query: 'str', *, half_life_days: 'float | None' = None")
        True
    """
    signature = inspect.signature(function)
    kept = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    hints = RecallOptions.__annotations__
    options = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=default,
            annotation=hints[name].__forward_arg__ if isinstance(hints[name], ForwardRef) else hints[name],
        )
        for name, default in RECALL_DEFAULTS.items()
    ]
    function.__signature__ = signature.replace(parameters=[*kept, *options])  # type: ignore[attr-defined]
    return function


def recall_options(options: Mapping[str, Any]) -> RecallOptions:
    """``options`` completed with the defaults; a name that is no option is refused as Python
    refuses an unknown keyword argument.

    Example:
        >>> recall_options({"project": "alpha"})["project"], recall_options({})["include_brain"]
        ('alpha', True)
        >>> recall_options({"budget": 5})
        Traceback (most recent call last):
        ...
        memlane.errors.ArgumentTypeError: recall got an unexpected keyword argument 'budget'
    """
    unknown = sorted(set(options) - set(RECALL_DEFAULTS))
    if unknown:
        raise ArgumentTypeError(f"recall got an unexpected keyword argument {unknown[0]!r}")
    completed: RecallOptions = {**RECALL_DEFAULTS, **options}  # type: ignore[typeddict-item]
    return completed


def _render_item(n: int, item: RecallItem) -> str:
    return f"\n[{n}] {item.provenance}\n{item.text}\n"


@shows_recall_options
def recall(
    mem: Memory,
    query: str,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    now: datetime | None = None,
    **options: Unpack[RecallOptions],
) -> Recall:
    """Brain entries and hybrid hits for ``query``, assembled within ``max_tokens``.

    Args:
        mem: The memory to recall from (its home's brain folder is read too).
        query: Free text: the user's words, focus keywords, an error message.
        max_tokens: Budget of the whole block by :func:`estimate_tokens`.
        threshold: The relevance floor: nothing unless a candidate reaches it; then hits down to
            :data:`~memlane.ranking.relevance.ITEM_FLOOR` (or the floor, if lower) and brain
            entries that reach it.
        now: The reference time of the decay (default: now).
        **options: :class:`RecallOptions` (``half_life_days``, ``include_brain``,
            ``show_secrets``, ``project``, ``branch``, ``label_projects``).

    Returns:
        The recall; empty (``""``) when nothing clears the threshold or fits the budget.

    Raises:
        memlane.errors.InvalidArgumentError: ``max_tokens`` < 1 or ``half_life_days`` ≤ 0 (a ValueError).
        memlane.errors.ArgumentTypeError: An argument has the wrong type or name (a TypeError).
    """
    from memlane import _check

    chosen_options = recall_options(options)
    half_life_days, project = chosen_options["half_life_days"], chosen_options["project"]
    _check.text("query", query)
    _check.integer("max_tokens", max_tokens, minimum=1)
    if half_life_days is not None:
        _check.positive("half_life_days", half_life_days)
    query = bounded_query(query)  # the brain's keyword scoring and the header mask read it too
    if not query.strip():
        return Recall(query, [], "", 0)
    now = now or datetime.now(timezone.utc)
    k = max(_MIN_CANDIDATES, min(_MAX_CANDIDATES, max_tokens // _TOKENS_PER_CANDIDATE))
    scope = _Scope(project, chosen_options["branch"], chosen_options["label_projects"])
    candidates = _hit_candidates(mem, query, k, threshold, half_life_days, now, scope)
    if chosen_options["include_brain"]:
        from memlane.brain import Brain

        candidates += _brain_candidates(mem, Brain(home=mem.home), query, threshold, project)
    from memlane import secrets

    show_secrets = chosen_options["show_secrets"]
    header = _header(query if show_secrets else secrets.mask(query))
    chosen = select(candidates, max_tokens - estimate_tokens(header))
    if not chosen:
        return Recall(query, [], "", 0)
    # Transcripts keep secrets verbatim; what goes to an agent shows them masked (never longer).
    texts = [c.item.text for c in chosen]
    items = [replace(c.item, text=t) for c, t in zip(chosen, texts if show_secrets else secrets.mask_many(texts))]
    text = header + "".join(_render_item(n, it) for n, it in enumerate(items, 1))
    return Recall(query, items, text, estimate_tokens(text))


# ---------------------------------------------------------------------------- session start


def _snapshot_path(mem: Memory, session_id: str) -> Path:
    sid = session_id.strip()
    if not sid:
        raise InvalidArgumentError("session id is empty")
    name = sid if _SAFE_ID.match(sid) else hashlib.blake2b(sid.encode("utf-8"), digest_size=16).hexdigest()
    return mem.home / SNAPSHOT_DIR / f"{name}.md"


def _not_regular(*paths: Path) -> Path | None:
    """The first of ``paths`` that exists and is no regular file: a FIFO, a socket or a device,
    which an ``open()`` could wait on forever (a FIFO blocks until a writer comes)."""
    for p in paths:
        try:
            if not stat.S_ISREG(p.stat().st_mode):
                return p
        except (OSError, ValueError):  # absent (or unreadable, or a NUL in its name: reading it says so)
            continue
    return None


def _brain_block(brain: Brain, keys: list[str] | None) -> str:
    """MEMORY.md and EVOLUTION.md as injected, or why they are left out."""
    from memlane.brain.brain import VERDICTS_FILE

    odd = _not_regular(brain.memory_path, brain.evolution_path, brain.home / VERDICTS_FILE)
    if odd is not None:
        return (
            f"(MEMORY.md and EVOLUTION.md left out: {odd} is not a regular file, and memlane opens no FIFO or device.)"
        )
    return brain.inject(keys).rstrip("\n") or "(MEMORY.md and EVOLUTION.md are empty.)"


def _index_summary(mem: Memory) -> str:
    s = mem._store.status()
    if not s["chunks"]:
        return "Nothing indexed yet: `memlane index` adds transcripts and notes."
    vectors = "hybrid (keywords + vectors)" if s["chunks_with_vectors"] else "keywords only"
    return (
        f"{s['chunks']:,} chunks from {s['sessions']:,} sessions in {s['files']:,} files are searchable, {vectors}: "
        "recall them on demand (`memlane recall QUERY`, or the memlane MCP tools)."
    )


def render_snapshot(mem: Memory, session_id: str, project: str | None = None) -> str:
    """The always-injected block as of now: caveat, MEMORY.md, EVOLUTION.md (with ``project``,
    entries bound to another project left out), index summary.

    A damaged index leaves the brain in and says to run ``memlane repair`` where the summary
    would be (:data:`DAMAGED_INDEX`): MEMORY.md does not depend on the index.
    """
    return _render_snapshot(mem, session_id, project)[0]


def _render_snapshot(mem: Memory, session_id: str, project: str | None) -> tuple[str, bool]:
    """:func:`render_snapshot`'s text, and whether the index could be read (else the text is
    not frozen: the next start, after a repair, renders it again)."""
    from memlane.brain import Brain
    from memlane.errors import CorruptIndexError

    taken = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    readable = True
    try:
        keys = mem.project_keys(project) if project is not None else None
    except CorruptIndexError:  # a project name is resolved through the index: unbound entries only
        keys, readable = [], False
    try:
        summary = _index_summary(mem)
    except CorruptIndexError:
        summary, readable = DAMAGED_INDEX, False
    parts = [
        f"# memlane memory · session {session_id} · snapshot taken {taken}",
        f"{DRIFT_CAVEAT} It was frozen when this session started; what is written during the session "
        "is on disk and shows up in the next one.",
        _brain_block(Brain(home=mem.home), keys),
        "## Searchable memory\n" + summary,
    ]
    return "\n\n".join(parts) + "\n", readable


def _prune_snapshots(folder: Path, keep: Path) -> None:
    cutoff = time.time() - _SNAPSHOT_MAX_AGE_S
    snaps = []
    for p in folder.glob("*.md"):
        with contextlib.suppress(FileNotFoundError):
            snaps.append((p.stat().st_mtime, p))
    snaps.sort(reverse=True)
    for n, (mtime, p) in enumerate(snaps):
        if p != keep and (mtime < cutoff or n >= _SNAPSHOT_MAX_COUNT):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()


def session_snapshot(mem: Memory, session_id: str, project: str | None = None) -> str:
    """The always-injected block of a session, frozen at its first call.

    The first call for a session id renders the brain (MEMORY.md and EVOLUTION.md in full),
    a summary of the index and the drift caveat, and stores it as
    ``<home>/snapshots/<session id>.md``; later calls return the stored text byte for byte,
    whatever changed on disk since, so the prompt prefix stays cacheable. Snapshots unused
    for 14 days, or beyond the 256 most recent, are pruned. ``project`` (the session's) leaves
    brain entries bound to another project out.

    Raises:
        memlane.errors.InvalidArgumentError (a ValueError): The session id is empty.

    Example:
        >>> import memlane, tempfile
        >>> mem = memlane.open(tempfile.mkdtemp(), embedder="none")
        >>> session_snapshot(mem, "s1") == session_snapshot(mem, "s1")
        True
    """
    path = _snapshot_path(mem, session_id)
    if _not_regular(path) is not None:  # never opened; a snapshot of now, not frozen
        return render_snapshot(mem, session_id, project)
    with contextlib.suppress(FileNotFoundError):
        text = path.read_bytes().decode("utf-8")
        os.utime(path)  # last use, for pruning
        return text
    path.parent.mkdir(parents=True, exist_ok=True)
    text, readable = _render_snapshot(mem, session_id, project)
    if not readable:
        return text
    fd, tmp = tempfile.mkstemp(prefix=".snapshot.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
        # link() refuses to overwrite: when two hooks of one session race, the first
        # snapshot wins and both return it.
        try:
            os.link(tmp, path)
        except FileExistsError:
            return path.read_bytes().decode("utf-8")
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _prune_snapshots(path.parent, path)
    return text


# ---------------------------------------------------------------------------- focus query

_FOCUS_TERMS = 24
_RECENT_SESSIONS = 2
_USER_TURNS_PER_SESSION = 3


def _claude_project_dir(cwd: str) -> Path:
    # Claude Code's folder name for a project: the cwd with every non-alphanumeric made "-".
    slug = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    return Path(os.environ.get("CLAUDE_CONFIG_DIR", Path.home() / ".claude")) / "projects" / slug


def _session_terms(path: Path) -> list[str]:
    from memlane.brain.distill import load_sessions
    from memlane.brain.engines import files
    from memlane.brain.keywords import keywords

    try:
        sessions = load_sessions(path)
    except (ValueError, OSError):
        return []
    terms: list[str] = []
    for s in sessions:
        asks = [t["text"] for t in s.turns if t.get("role") == "user" and t.get("text", "").strip()]
        for text in reversed(asks[-_USER_TURNS_PER_SESSION:]):
            terms += keywords(text, 4)
        terms += [Path(f).name for f in files(s)[-3:]]
        if s.title:
            terms += keywords(s.title, 3)
    return terms


def _regular_files(paths: Any) -> list[tuple[Path, float]]:
    """The regular files among ``paths``, each with its modification time."""
    out = []
    for p in paths:
        with contextlib.suppress(OSError, ValueError):
            st = p.stat()
            if stat.S_ISREG(st.st_mode):
                out.append((p, st.st_mtime))
    return out


def focus_query(mem: Memory, cwd: str | None = None, transcript_path: str | None = None) -> str:
    """The pre-session query: keywords of what this project was busy with lately.

    Derived, in this order, from:

    1. the project folder's name (``cwd``);
    2. the current transcript when the session is resumed (its last user turns);
    3. the two most recent earlier sessions of the project: the sibling transcripts of
       ``transcript_path`` (Claude Code keeps one folder per project), else the Claude Code
       folder of ``cwd`` — their last three user turns, the files touched and the title;
    4. the brain's active open threads (``OT`` entries);
    5. the topics of the latest DailyActivity note.

    Each text gives its telling words (identifiers, names, long words) by the brain's
    :func:`~memlane.brain.keywords.keywords`; the first 24 distinct ones are joined by spaces.
    Returns ``""`` when nothing is known yet. Only regular files are read: a FIFO named
    ``*.jsonl`` beside the transcript would make ``open()`` wait for a writer forever.

    Example:
        >>> import memlane, tempfile
        >>> focus_query(memlane.open(tempfile.mkdtemp(), embedder="none"), cwd="/src/billing-service")
        'billing-service'
    """
    from memlane.brain import Brain
    from memlane.brain.keywords import keywords

    terms: list[str] = [Path(cwd).name] if cwd else []
    current = Path(transcript_path).expanduser() if transcript_path else None
    if current is not None and current.is_file():
        terms += _session_terms(current)
    folder = current.parent if current is not None else (_claude_project_dir(cwd) if cwd else None)
    if folder is not None and folder.is_dir():
        earlier = sorted(
            _regular_files(p for p in folder.glob("*.jsonl") if p != current), key=lambda f: f[1], reverse=True
        )
        for p, _ in earlier[:_RECENT_SESSIONS]:
            terms += _session_terms(p)
    brain = Brain(home=mem.home)
    for e in brain.entries() if _not_regular(brain.memory_path) is None else []:
        if e.prefix == "OT" and e.active and not e.withheld:
            terms += keywords(e.text, 4)
    daily = sorted(brain.daily_dir.glob("*.md")) if brain.daily_dir.is_dir() else []
    if daily and _not_regular(daily[-1]) is None:
        for line in daily[-1].read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("## ") and "|" in line:
                terms += keywords(line.split("|", 1)[1], 3)
    seen = list(dict.fromkeys(t.lower() for t in terms if t and t.strip()))
    return " ".join(seen[:_FOCUS_TERMS])
