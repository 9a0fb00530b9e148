"""Current-first rate on the reversal corpus, feature on vs off, through Memory.index → Memory.search.

Writes :mod:`reversal_corpus` (Claude Code, Codex, generic JSONL and markdown daily notes) to a
temporary folder, indexes it with the real embedder (default ``local``), then asks every query
twice: with the product defaults (recency and temporal affinity on) and with both off. A query
is answered at rank r when the r-th hit quotes the answering statement.

    python benches/bench_recency.py [--embedder local|none] [--seed 11] [--k 10] [--json] [--verbose]

Reports per part (``tune``: the subjects the rules were developed on; ``heldout``: never looked
at while tuning) and kind (``current``, ``past``, ``unique``): first-place rate (for ``current``:
the current-first rate), recall@5, recall@k and MRR; and, among the top k of every query, the
hits marked ``superseded_by``: true marks (an earlier statement of the asked subject) and false
marks (anything else). ``--verbose`` prints the misses and false marks of the ``tune`` part
only, so the held-out part stays unseen.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memlane  # noqa: E402
from reversal_corpus import FORMATS, PARTS, write_corpus  # noqa: E402

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


def run(embedder: str, k: int, verbose: bool, seed: int = 11) -> dict:
    """Index the corpus in a fresh home and score every query with the feature on and off."""
    with tempfile.TemporaryDirectory(prefix="memlane-reversal-") as tmp:
        corpus = write_corpus(Path(tmp) / "src", seed=seed)
        with memlane.open(Path(tmp) / "home", embedder=embedder) as mem:
            for fmt in FORMATS:
                mem.index([Path(tmp) / "src" / fmt], format=fmt, embed=embedder != "none")
            chunks = mem.status()["chunks"]
            ranks: dict[str, dict[str, dict[str, list[int | None]]]] = {p: {s: {} for s in SETTINGS} for p in PARTS}
            # Marks among the hits a user sees (the top k): true = an earlier statement of the
            # query's own subject; false = anything else (the answer, another subject's statement,
            # a neighbour, filler): telling an agent a memory is outdated when it is not misleads it.
            marks = {p: {"true_marks": 0, "false_marks": 0, "earlier_in_top_k": 0, "earlier_total": 0} for p in PARTS}
            for q in corpus.queries:
                for setting, options in SETTINGS.items():
                    hits = mem.search(q.text, k=k, **options)
                    rank = _rank(hits, q.answer)
                    ranks[q.part][setting].setdefault(q.kind, []).append(rank)
                    if setting == "on":
                        m = marks[q.part]
                        earlier = [any(e in h.text for e in q.earlier) for h in hits]
                        m["earlier_in_top_k"] += sum(earlier)
                        m["earlier_total"] += len(q.earlier)
                        m["true_marks"] += sum(bool(h.superseded_by) and e for h, e in zip(hits, earlier))
                        m["false_marks"] += sum(bool(h.superseded_by) and not e for h, e in zip(hits, earlier))
                    wrong = setting == "on" and any(h.superseded_by and not e for h, e in zip(hits, earlier))
                    if verbose and q.part == "tune" and setting == "on" and (rank != 1 or wrong):
                        print(f"[{q.kind}] rank {rank}: {q.text}", file=sys.stderr)
                        for i, h in enumerate(hits[:10 if wrong else 4], 1):
                            mark = f" superseded_by={h.superseded_by}" if h.superseded_by else ""
                            print(f"   {i}. {h.score:.3f} {h.timestamp[:10]} {h.id}{mark} {h.text[:110]!r}", file=sys.stderr)
    return {
        "embedder": embedder,
        "k": k,
        "files": len(corpus.files),
        "chunks": chunks,
        "seed": seed,
        "earlier_statements": marks,
        "results": {p: {s: {kind: _summary(r, k) for kind, r in sorted(by_kind.items())} for s, by_kind in by_setting.items()}
                    for p, by_setting in ranks.items()},
    }


def main() -> int:
    """Command line entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedder", default="local")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--seed", type=int, default=11, help="picks paraphrases, days and formats")
    p.add_argument("--json", action="store_true")
    p.add_argument("--verbose", action="store_true", help="print the top hits of every query not answered first")
    args = p.parse_args()
    result = run(args.embedder, args.k, args.verbose, args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"reversal corpus (seed {args.seed}): {result['files']} files, {result['chunks']} chunks, "
          f"embedder {result['embedder']}, k {result['k']}")
    print(f"| part | kind | queries | first (on / off) | recall@5 (on / off) | recall@{args.k} (on / off) | MRR (on / off) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for part, by_setting in result["results"].items():
        on, off = by_setting["on"], by_setting["off"]
        for kind in on:
            a, b = on[kind], off[kind]
            cells = " | ".join(f"{100 * a[m]:.1f} / {100 * b[m]:.1f}" for m in ("first", "recall@5", f"recall@{args.k}"))
            print(f"| {part} | {kind} | {a['queries']} | {cells} | {a['mrr']:.3f} / {b['mrr']:.3f} |")
    for part, m in result["earlier_statements"].items():
        print(f"{part}: marked superseded in the top {args.k}: {m['true_marks']} earlier statements of the asked subject "
              f"(of {m['earlier_in_top_k']} there, {m['earlier_total']} in the corpus), {m['false_marks']} other hits (false marks)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
