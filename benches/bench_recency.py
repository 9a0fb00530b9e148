"""Current-first rate on the reversal corpus, feature on vs off, through Memory.index → Memory.search.

Writes :mod:`reversal_corpus` (Claude Code, Codex and generic JSONL) to a temporary folder,
indexes it with the real embedder (default ``local``), then asks every query twice: with the
product defaults (recency and temporal affinity on) and with both off. A query is answered at
rank r when the r-th hit quotes the answering statement.

    python benches/bench_recency.py [--embedder local|none] [--k 10] [--json] [--verbose]

Reports per kind (``current``, ``past``, ``unique``): first-place rate (for ``current``: the
current-first rate), recall@5, recall@10 and MRR.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memlane  # noqa: E402
from reversal_corpus import FORMATS, write_corpus  # noqa: E402

SETTINGS = {"on": {"recency": True, "temporal": True}, "off": {"recency": False, "temporal": False}}


def _rank(hits: list[memlane.Hit], answer: str) -> int | None:
    return next((i for i, h in enumerate(hits, 1) if answer in h.text), None)


def _summary(ranks: list[int | None], k: int) -> dict[str, float]:
    n = max(len(ranks), 1)
    return {
        "queries": len(ranks),
        "first": round(sum(r == 1 for r in ranks) / n, 4),
        "recall@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 4),
        f"recall@{k}": round(sum(r is not None for r in ranks) / n, 4),
        "mrr": round(sum(1 / r for r in ranks if r) / n, 4),
    }


def run(embedder: str, k: int, verbose: bool) -> dict:
    """Index the corpus in a fresh home and score every query with the feature on and off."""
    with tempfile.TemporaryDirectory(prefix="memlane-reversal-") as tmp:
        corpus = write_corpus(Path(tmp) / "src")
        with memlane.open(Path(tmp) / "home", embedder=embedder) as mem:
            for fmt in FORMATS:
                mem.index([Path(tmp) / "src" / fmt], format=fmt, embed=embedder != "none")
            chunks = mem.status()["chunks"]
            ranks: dict[str, dict[str, list[int | None]]] = {s: {} for s in SETTINGS}
            marks = {"earlier_total": 0, "earlier_in_top_k": 0, "earlier_marked": 0}
            for q in corpus.queries:
                for setting, options in SETTINGS.items():
                    hits = mem.search(q.text, k=k, **options)
                    rank = _rank(hits, q.answer)
                    ranks[setting].setdefault(q.kind, []).append(rank)
                    if q.kind == "current" and setting == "on" and rank is not None:
                        earlier = [h for h in hits if any(e in h.text for e in q.earlier)]
                        marks["earlier_in_top_k"] += len(earlier)
                        marks["earlier_total"] += len(q.earlier)
                        marks["earlier_marked"] += sum(h.superseded_by == hits[rank - 1].id for h in earlier)
                    if verbose and setting == "on" and rank != 1:
                        print(f"[{q.kind}] rank {rank}: {q.text}", file=sys.stderr)
                        for i, h in enumerate(hits[:4], 1):
                            mark = f" superseded_by={h.superseded_by}" if h.superseded_by else ""
                            print(f"   {i}. {h.score:.3f} {h.timestamp[:10]} {h.id}{mark} {h.text[:110]!r}", file=sys.stderr)
    return {
        "embedder": embedder,
        "k": k,
        "files": len(corpus.files),
        "chunks": chunks,
        "earlier_statements": marks,
        "results": {s: {kind: _summary(r, k) for kind, r in sorted(by_kind.items())} for s, by_kind in ranks.items()},
    }


def main() -> int:
    """Command line entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedder", default="local")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--json", action="store_true")
    p.add_argument("--verbose", action="store_true", help="print the top hits of every query not answered first")
    args = p.parse_args()
    result = run(args.embedder, args.k, args.verbose)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"reversal corpus: {result['files']} files, {result['chunks']} chunks, embedder {result['embedder']}, k {result['k']}")
    print(f"| kind | queries | first (on / off) | recall@5 (on / off) | recall@{args.k} (on / off) | MRR (on / off) |")
    print("|---|---:|---:|---:|---:|---:|")
    on, off = result["results"]["on"], result["results"]["off"]
    for kind in on:
        a, b = on[kind], off[kind]
        cells = " | ".join(f"{100 * a[m]:.1f} / {100 * b[m]:.1f}" for m in ("first", "recall@5", f"recall@{args.k}"))
        print(f"| {kind} | {a['queries']} | {cells} | {a['mrr']:.3f} / {b['mrr']:.3f} |")
    m = result["earlier_statements"]
    print(f"\nearlier statements of current-state answers: {m['earlier_in_top_k']} of {m['earlier_total']} in the top {args.k}, "
          f"{m['earlier_marked']} of those marked superseded_by the current one")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
