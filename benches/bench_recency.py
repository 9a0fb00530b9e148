"""Current-first rate on the reversal corpus, feature on vs off, through Memory.index → Memory.search.

Writes :mod:`reversal_corpus` (Claude Code, Codex, generic JSONL and markdown daily notes) to a
temporary folder, indexes it with the real embedder (default ``local``), then asks every query
twice: with the product defaults (recency and temporal affinity on) and with both off. A query
is answered at rank r when the r-th hit quotes the answering statement.

    python benches/bench_recency.py [--embedder local|none] [--seed 11] [--k 10] [--json] [--verbose]

Reports per part (``tune``: the subjects the rules were developed on; ``heldout``: never looked
at while tuning) and kind (``current``, ``past``, ``unique``): first-place rate (for ``current``:
the current-first rate), recall@5, recall@k and MRR; for ``current`` also how often the answer is
in the top k above every earlier statement of its subject (the order the issue is about: a stale
statement ranked over the current one, whatever else ranks first); and, among the top k of every
query, the hits marked ``superseded_by``: true marks (an earlier statement of the asked subject) and false
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

from reversal_corpus import FORMATS, PARTS, Query, write_corpus

import memlane

SETTINGS = {"on": {"recency": True, "temporal": True}, "off": {"recency": False, "temporal": False}}


def _rank(texts: list[str], answer: str) -> int | None:
    return next((i for i, t in enumerate(texts, 1) if answer in t), None)


def _above_earlier(texts: list[str], q: Query) -> bool:
    """The answer is among the hits, and no earlier statement of its subject ranks above it."""
    for t in texts:
        if q.answer in t:
            return True
        if any(e in t for e in q.earlier):
            return False
    return False


def summarize(queries: list[Query], answers: list[list[str]], k: int) -> dict[str, dict[str, dict[str, float]]]:
    """Per part and kind: first-place rate, recall@5, recall@k and MRR of the ranked hit texts
    answering each query (``answers[i]`` for ``queries[i]``); for ``current`` also
    ``above_earlier``."""
    ranks: dict[str, dict[str, list[int | None]]] = {p: {} for p in PARTS}
    above: dict[str, list[bool]] = {p: [] for p in PARTS}
    for q, texts in zip(queries, answers):
        ranks[q.part].setdefault(q.kind, []).append(_rank(texts[:k], q.answer))
        if q.kind == "current":
            above[q.part].append(_above_earlier(texts[:k], q))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for part, by_kind in ranks.items():
        out[part] = {}
        for kind, r in sorted(by_kind.items()):
            n = max(len(r), 1)
            out[part][kind] = {
                "queries": len(r),
                "first": round(sum(x == 1 for x in r) / n, 4),
                "recall@5": round(sum(x is not None and x <= 5 for x in r) / n, 4),
                f"recall@{k}": round(sum(x is not None for x in r) / n, 4),
                "mrr": round(sum(1 / x for x in r if x) / n, 4),
            } | ({"above_earlier": round(sum(above[part]) / n, 4)} if kind == "current" else {})
    return out


def run(embedder: str, k: int, verbose: bool, seed: int = 11) -> dict:
    """Index the corpus in a fresh home and score every query with the feature on and off."""
    with tempfile.TemporaryDirectory(prefix="memlane-reversal-") as tmp:
        corpus = write_corpus(Path(tmp) / "src", seed=seed)
        with memlane.open(Path(tmp) / "home", embedder=embedder) as mem:
            for fmt in FORMATS:
                mem.index([Path(tmp) / "src" / fmt], format=fmt, embed=embedder != "none")
            chunks = mem.status()["chunks"]
            answers: dict[str, list[list[str]]] = {setting: [] for setting in SETTINGS}
            # Marks among the hits a user sees (the top k): true = an earlier statement of the
            # query's own subject; false = anything else (the answer, another subject's statement,
            # a neighbour, filler): telling an agent a memory is outdated when it is not misleads it.
            marks = {p: {"true_marks": 0, "false_marks": 0, "earlier_in_top_k": 0, "earlier_total": 0} for p in PARTS}
            for q in corpus.queries:
                for setting, options in SETTINGS.items():
                    hits = mem.search(q.text, k=k, **options)
                    answers[setting].append([h.text for h in hits])
                    if setting != "on":
                        continue
                    m = marks[q.part]
                    earlier = [any(e in h.text for e in q.earlier) for h in hits]
                    m["earlier_in_top_k"] += sum(earlier)
                    m["earlier_total"] += len(q.earlier)
                    m["true_marks"] += sum(bool(h.superseded_by) and e for h, e in zip(hits, earlier))
                    m["false_marks"] += sum(bool(h.superseded_by) and not e for h, e in zip(hits, earlier))
                    wrong = any(h.superseded_by and not e for h, e in zip(hits, earlier))
                    rank = _rank(answers[setting][-1], q.answer)
                    if verbose and q.part == "tune" and (rank != 1 or wrong):
                        print(f"[{q.kind}] rank {rank}: {q.text}", file=sys.stderr)
                        for i, h in enumerate(hits[: 10 if wrong else 4], 1):
                            mark = f" superseded_by={h.superseded_by}" if h.superseded_by else ""
                            print(
                                f"   {i}. {h.score:.3f} {h.timestamp[:10]} {h.id}{mark} {h.text[:110]!r}",
                                file=sys.stderr,
                            )
    results = {setting: summarize(corpus.queries, texts, k) for setting, texts in answers.items()}
    return {
        "embedder": embedder,
        "k": k,
        "files": len(corpus.files),
        "chunks": chunks,
        "seed": seed,
        "earlier_statements": marks,
        "results": {p: {setting: results[setting][p] for setting in SETTINGS} for p in PARTS},
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
    print(
        f"reversal corpus (seed {args.seed}): {result['files']} files, {result['chunks']} chunks, "
        f"embedder {result['embedder']}, k {result['k']}"
    )
    print(
        f"| part | kind | queries | first (on / off) | recall@5 (on / off) | recall@{args.k} (on / off) | MRR (on / off) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for part, by_setting in result["results"].items():
        on, off = by_setting["on"], by_setting["off"]
        for kind in on:
            a, b = on[kind], off[kind]
            cells = " | ".join(
                f"{100 * a[m]:.1f} / {100 * b[m]:.1f}" for m in ("first", "recall@5", f"recall@{args.k}")
            )
            print(f"| {part} | {kind} | {a['queries']} | {cells} | {a['mrr']:.3f} / {b['mrr']:.3f} |")
    for part, by_setting in result["results"].items():
        on, off = by_setting["on"]["current"], by_setting["off"]["current"]
        print(
            f"{part}: current statement in the top {args.k} above every earlier statement of its subject: "
            f"{100 * on['above_earlier']:.1f} / {100 * off['above_earlier']:.1f} (on / off)"
        )
    for part, m in result["earlier_statements"].items():
        print(
            f"{part}: marked superseded in the top {args.k}: {m['true_marks']} earlier statements of the asked subject "
            f"(of {m['earlier_in_top_k']} there, {m['earlier_total']} in the corpus), {m['false_marks']} other hits (false marks)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
