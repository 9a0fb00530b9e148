"""Run a benchmark through the product pipeline and score it.

For every conversation: a fresh temporary home, the haystack written as a file the product's
own parser reads, :meth:`memlane.Memory.index` (parser, chunker, BM25, embeddings, HNSW), then
every question through :meth:`memlane.Memory.search` with ``k = max(ks)``. Hits are scored
against the gold evidence at session and turn granularity (:mod:`memlane.bench.metrics`).

Example:
    >>> from memlane.bench.datasets import load_dataset
    >>> ds = load_dataset("locomo", "tests/fixtures/bench/locomo_mini.json", "dev")
    >>> result = run_benchmark(ds, embedder="none")
    >>> result["results"]["session"]["groups"]["all"]["metrics"]["recall_any@10"]
    1.0
"""

from __future__ import annotations

import inspect
import json
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import memlane
from memlane import _core
from memlane.bench.datasets import GRANULARITIES, Dataset, Question, sha256_file
from memlane.bench.metrics import aggregate, score, session_ranking, turn_ranking
from memlane.embed import Embedder, make_embedder
from memlane.errors import InvalidArgumentError

__all__ = ["DEFAULT_KS", "default_result_path", "git_revision", "run_benchmark", "save_result", "search_defaults"]

DEFAULT_KS = (1, 3, 5, 10)
# Hits the session_top ranking is built from: ten chunk hits cover only about seven distinct
# sessions, so a session ranking deep enough for @10 needs more of them.
SESSION_DEPTH = 50
# Search options a run may override; everything else stays at the product default.
SEARCH_OPTIONS = ("fusion", "vector_weight", "threshold", "recency", "temporal")

Progress = Callable[[str], None]


def search_defaults() -> dict[str, Any]:
    """The product defaults of the tunable :meth:`memlane.Memory.search` options.

    Read from the signature, so a result file records what the engine really used.

    Example:
        >>> sorted(search_defaults())
        ['fusion', 'recency', 'temporal', 'threshold', 'vector_weight']
    """
    params = inspect.signature(memlane.Memory.search).parameters
    return {name: params[name].default for name in SEARCH_OPTIONS}


def git_revision(root: Path | None = None) -> tuple[str, bool | None]:
    """``git rev-parse HEAD`` of the source tree and whether tracked files are modified.

    Args:
        root: Repository; default: the one holding the imported ``memlane`` package.

    Returns:
        ``(revision, dirty)``; ``("unknown", None)`` outside a git checkout.

    Example:
        >>> rev, dirty = git_revision(Path("/"))
        >>> rev
        'unknown'
    """
    root = root or Path(memlane.__file__).resolve().parents[2]
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        )
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown", None
    return rev.stdout.strip() or "unknown", bool(status.stdout.strip())


def default_result_path(dataset: str, split: str, when: datetime | None = None) -> Path:
    """``bench-results/<dataset>-<split>-<UTC timestamp>.json`` under the current directory.

    Example:
        >>> from datetime import datetime, timezone
        >>> default_result_path("locomo", "dev", datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)).as_posix()
        'bench-results/locomo-dev-20260102T030405Z.json'
    """
    when = when or datetime.now(timezone.utc)
    return Path("bench-results") / f"{dataset}-{split}-{when.strftime('%Y%m%dT%H%M%SZ')}.json"


def save_result(result: dict[str, Any], path: str | Path | None = None) -> Path:
    """Write a result document as JSON (creating folders); returns the path.

    Example:
        >>> import tempfile, pathlib
        >>> p = save_result({"dataset": "x"}, pathlib.Path(tempfile.mkdtemp()) / "r" / "x.json")
        >>> p.read_text()[:16]
        '{\\n  "dataset": "'
    """
    p = Path(path) if path else default_result_path(result["dataset"], result["split"])
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return p


def _embedder(spec: str | Embedder | None) -> tuple[str | Embedder, str]:
    if spec is None or spec == "none":
        return "none", "none"
    if isinstance(spec, str):
        # Built once and shared by every conversation's home: loading the model is the slow part.
        built = make_embedder(spec)
        return built, built.id
    return spec, spec.id


def _indexed_turn_ids(home: Path, path: Path, fmt: str) -> set[str]:
    """Turn ids of the chunks the home really holds.

    Gold outside this set cannot be retrieved at all: its turn had no text, or its chunk had
    the same text as another one and the store kept one copy (chunk keys are content hashes).
    """
    keys = sorted({chunk["key"] for chunk in _core.chunk_file(str(path), fmt)})
    stored = _core.Store(str(home)).get(keys)
    return {t for chunk in stored if chunk for t in (chunk.get("meta") or {}).get("turn_ids") or []}


class _Tally:
    """Per-granularity accumulation of question scores by group and category."""

    def __init__(self, granularities: Sequence[str], groups: dict[str, Callable[[Question], bool]]) -> None:
        self.granularities = granularities
        self.groups = {"all": lambda q: True, **groups}
        self.rows: dict[str, dict[str, list[dict[str, float]]]] = {g: {} for g in granularities}
        self.categories: dict[str, dict[str, list[dict[str, float]]]] = {g: {} for g in granularities}
        self.skipped: dict[str, Counter[str]] = {g: Counter() for g in granularities}

    def add(self, gran: str, q: Question, row: dict[str, float]) -> None:
        for name, member in self.groups.items():
            if member(q):
                self.rows[gran].setdefault(name, []).append(row)
        self.categories[gran].setdefault(q.category, []).append(row)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for gran in self.granularities:
            out[gran] = {
                "groups": {
                    name: {
                        "questions": len(self.rows[gran].get(name, [])),
                        "metrics": aggregate(self.rows[gran].get(name, [])),
                    }
                    for name in self.groups
                },
                "categories": {
                    cat: {"questions": len(rows), "metrics": aggregate(rows)}
                    for cat, rows in sorted(self.categories[gran].items())
                },
            }
        return out


def run_benchmark(
    dataset: Dataset,
    *,
    embedder: str | Embedder | None = "local",
    ks: Iterable[int] = DEFAULT_KS,
    granularities: Sequence[str] = GRANULARITIES,
    search: dict[str, Any] | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Index each conversation into a fresh home and score every question.

    Args:
        dataset: From :func:`memlane.bench.datasets.load_dataset`.
        embedder: ``"local"`` (default), ``"local:int8"``, ``"none"`` (BM25 only) or an
            :class:`memlane.embed.Embedder` instance.
        ks: Cut-offs; every query asks for ``max(ks)`` hits.
        granularities: Subset of :data:`~memlane.bench.datasets.GRANULARITIES`.
        search: Overrides of ``fusion``, ``vector_weight``, ``threshold``, ``recency``, ``temporal``
            (defaults: the product's).
        limit: Only the first ``limit`` conversations (quick runs).
        progress: Called with one line per conversation.

    Returns:
        The result document (see ``benches/README.md``): identity of data, code and embedder,
        parameters, metrics per granularity by group and category, counts, seconds, and a
        per-question log under ``"questions"``.

    Raises:
        memlane.errors.InvalidArgumentError: Bad ``ks``, ``granularities``, ``search`` keys or ``limit``.

    Example:
        >>> run_benchmark(None, ks=[0])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        memlane.errors.InvalidArgumentError: k values must be positive integers, got [0]
    """
    ks = sorted(set(ks))
    if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
        raise InvalidArgumentError(f"k values must be positive integers, got {ks}")
    bad = [g for g in granularities if g not in GRANULARITIES]
    if bad or not granularities:
        raise InvalidArgumentError(f"granularities must be among {', '.join(GRANULARITIES)}, got {list(granularities)}")
    unknown = sorted(set(search or {}) - set(SEARCH_OPTIONS))
    if unknown:
        raise InvalidArgumentError(f"unknown search options {unknown}: allowed {', '.join(SEARCH_OPTIONS)}")
    if limit is not None and limit < 1:
        raise InvalidArgumentError("limit must be at least 1")
    search_kwargs = {**search_defaults(), **(search or {})}
    search_k = ks[-1]
    emb, embedder_id = _embedder(embedder)
    revision, dirty = git_revision()
    # HEAD alone does not say which engine ran: the native module may be built from a modified tree.
    core_sha256 = sha256_file(_core.__file__)

    tally = _Tally(granularities, dataset.groups)
    counts: Counter[str] = Counter()
    evidence: Counter[str] = Counter()
    conversion: Counter[str] = Counter()
    records_skipped: Counter[str] = Counter()
    log: list[dict[str, Any]] = []
    conversations: list[str] = []
    seconds = {"index": 0.0, "search": 0.0}
    distinct_sessions: list[int] = []
    started = time.perf_counter()

    for n, conv in enumerate(dataset.conversations):
        if limit is not None and n >= limit:
            break
        conversations.append(conv.cid)
        evidence.update(conv.evidence_issues)
        conversion.update(conv.conversion_issues)
        with tempfile.TemporaryDirectory(prefix="memlane-bench-") as tmp:
            src = Path(tmp) / "src"
            src.mkdir()
            path = conv.write(src)
            home = Path(tmp) / "home"
            t0 = time.perf_counter()
            with memlane.open(home, embedder=emb) as mem:
                report = mem.index([path], embed=embedder_id != "none", format=conv.fmt)
                seconds["index"] += time.perf_counter() - t0
                indexable = _indexed_turn_ids(home, path, conv.fmt)
                counts["chunks"] += report.chunks_added
                counts["chunks_embedded"] += report.chunks_embedded
                counts["embed_cache_hits"] += report.embed_cache_hits
                records_skipped.update(report.records_skipped)
                t1 = time.perf_counter()
                for q in conv.questions:
                    counts["questions"] += 1
                    hits = mem.search(q.text, k=search_k, **search_kwargs)
                    # A separate, deeper query rather than a slice of one: k sizes the rerank
                    # pool, so the first k of a deeper list need not be the k-hit answer.
                    deep = (
                        mem.search(q.text, k=max(SESSION_DEPTH, search_k), **search_kwargs)
                        if "session_top" in granularities
                        else []
                    )
                    counts["empty_results"] += not hits
                    counts["gold_turns_not_indexed"] += len(q.gold_turns - indexable)
                    rankings = {
                        "session": session_ranking(h.session_id for h in hits),
                        "session_top": session_ranking(h.session_id for h in deep),
                        "turn": turn_ranking(h.meta.get("turn_ids") or [] for h in hits),
                    }
                    distinct_sessions.append(len(rankings["session"]))
                    entry: dict[str, Any] = {
                        "id": q.qid,
                        "conversation": conv.cid,
                        "category": q.category,
                        "question": q.text,
                        "evidence": q.raw_evidence,
                        "gold": {g: sorted(q.gold(g)) for g in granularities},
                        "hits": [
                            {"session": h.session_id, "turn_ids": list(h.meta.get("turn_ids") or []), "score": h.score}
                            for h in hits
                        ],
                        "metrics": {},
                        "skipped": {},
                    }
                    for gran in granularities:
                        reason = q.skip_reason(gran)
                        if reason:
                            tally.skipped[gran][reason] += 1
                            entry["skipped"][gran] = reason
                            continue
                        row = score(rankings[gran], q.gold(gran), ks)
                        tally.add(gran, q, row)
                        entry["metrics"][gran] = row
                    log.append(entry)
                seconds["search"] += time.perf_counter() - t1
        if progress:
            progress(
                f"{dataset.name} {n + 1}: {conv.cid}: {report.chunks_added} chunks, {len(conv.questions)} questions, "
                f"{time.perf_counter() - started:.0f}s elapsed"
            )

    results = tally.summary()
    scored = {g: results[g]["groups"]["all"]["questions"] for g in granularities}
    searched = max(counts["questions"], 1)
    return {
        "dataset": dataset.name,
        "split": dataset.split,
        "file": str(dataset.path),
        "file_sha256": dataset.sha256,
        "file_verified": dataset.verified,
        "embedder": embedder_id,
        "git_revision": revision,
        "git_dirty": dirty,
        "memlane_version": memlane.__version__,
        "core_sha256": core_sha256,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "parameters": {
            "k": ks,
            "search_k": search_k,
            "session_depth": SESSION_DEPTH,
            "granularities": list(granularities),
            "search": search_kwargs,
            "limit": limit,
        },
        "notes": dataset.notes,
        "conversations": conversations,
        "results": results,
        "counts": {
            "conversations": len(conversations),
            "questions": counts["questions"],
            "questions_scored": scored,
            "questions_skipped": {g: dict(sorted(tally.skipped[g].items())) for g in granularities},
            "empty_results": counts["empty_results"],
            "mean_distinct_sessions_in_hits": round(sum(distinct_sessions) / len(distinct_sessions), 3)
            if distinct_sessions
            else 0.0,
            "gold_turns_not_indexed": counts["gold_turns_not_indexed"],
            "evidence_strings": evidence.pop("evidence_strings", 0),
            "evidence_issues": dict(sorted(evidence.items())),
            "conversion": dict(sorted(conversion.items())),
            "chunks": counts["chunks"],
            "chunks_embedded": counts["chunks_embedded"],
            "embed_cache_hits": counts["embed_cache_hits"],
            "records_skipped": dict(sorted(records_skipped.items())),
        },
        "seconds": {
            "index": round(seconds["index"], 3),
            "search": round(seconds["search"], 3),
            "search_ms_per_question": round(1000 * seconds["search"] / searched, 3),
            "total": round(time.perf_counter() - started, 3),
        },
        "questions": log,
    }
