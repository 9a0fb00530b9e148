"""Recall latency on a generated home: `Memory.recall` end to end, against plain `Memory.search`.

The home holds a generated Claude Code archive (benches/archive.py) and a brain of generated
MEMORY.md entries (a tenth of them superseded). Queries are 2–6 words of the archive's
vocabulary. Measured per query, warm, through the product API:

  * `Memory.search(q, k=50)` — the hybrid candidates recall asks for;
  * `Memory.recall(q, max_tokens)` — search + brain scoring + MMR + assembly;
  * `session_snapshot` first call (renders and writes) and repeat call (reads).

`--embed none` (default): keyword-only home and queries, so no embedding is timed.
`--embed local`: the real local MiniLM embeds the archive (cached by content hash in
~/.cache/memlane, so only a first run pays) and every query — query embedding is included in
both search and recall latency, and reported on its own.

Run: `python benches/bench_recall.py` (defaults: 300 files × 40 exchanges, 200 queries) or
`python benches/bench_recall.py --embed local --files 40 --pairs 20`.
`--mask-ab` also times every query's recall without secret masking (``show_secrets=True``),
interleaved with the masked one, and reports both CPU p50s and their ratio.
Results print as a markdown table and are saved to bench-results/recall.json.

`--mmr-check ../shared/data/locomo/locomo10.json` instead checks that the near-duplicate
collapse drops no distinct item, on LoCoMo dev (conversations 0–4) with the local embedder:
every question's recall without a budget against the search candidates it was built from —
candidates dropped, and gold turns the candidates held that the recall lost — then the gold
turns recalls of 2k, 4k and 15k tokens keep for MMR λ of 0.5, 0.7, 0.85 and 1.0 (the sweep
that chose the default; dev split only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from archive import generate, words

import memlane
from memlane.brain import Brain
from memlane.recall import session_snapshot

SECTIONS = ["kd", "ll", "rc", "ot", "coe"]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def fill_brain(home: Path, entries: int, rng: random.Random) -> None:
    """`entries` MEMORY.md entries of archive words, one in ten superseded by a newer one."""
    brain = Brain(home=home, caps={s.upper(): None for s in SECTIONS})  # all stay in MEMORY.md
    for i in range(entries):
        section = SECTIONS[i % len(SECTIONS)]
        text = " ".join(words(rng, rng.randint(8, 18))).capitalize() + "."
        entry = brain.add(section, text, on=f"2026-0{1 + i % 6}-{1 + i % 28:02d}")
        if i % 10 == 0 and section == "kd":
            brain.supersede(entry.key, " ".join(words(rng, 12)).capitalize() + ".", on="2026-07-01")


def timed(fn, *args, **kwargs) -> tuple[float, float]:
    """Wall and CPU (all threads of the process) milliseconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args, **kwargs)
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


SWEEP_LAMBDAS = (0.5, 0.7, 0.85, 1.0)
SWEEP_BUDGETS = (2_000, 4_000, 15_000)


def mmr_check(path: Path, embed: str) -> None:
    """What the near-duplicate collapse drops, and gold turns kept by budget and MMR λ, on LoCoMo dev."""
    import memlane.recall as recall_module
    from memlane.bench.datasets import load_locomo
    from memlane.ranking.relevance import FLOOR

    default_lambda = recall_module._MMR_LAMBDA
    totals = {
        "questions": 0,
        "candidates": 0,
        "dropped": 0,
        "gold": 0,
        "gold_in_candidates": 0,
        "gold_lost_by_collapse": 0,
    }
    kept_by = {(lam, budget): 0 for lam in SWEEP_LAMBDAS for budget in SWEEP_BUDGETS}
    for conv in load_locomo(path, split="dev").conversations:
        with tempfile.TemporaryDirectory(prefix="memlane-mmr-") as tmp:
            src = conv.write(Path(tmp))
            mem = memlane.open(Path(tmp) / "home", embedder=embed)
            mem.index([src], format=conv.fmt, embed=embed != "none")
            for q in conv.questions:
                # The largest pool recall draws from (200 candidates), and the turns each holds.
                pool = [
                    h
                    for h in mem.search(q.text, k=200, sources=["transcript", "knowledge"])
                    if (h.relevance or 0) >= FLOOR
                ]
                turns = {h.id: set(h.meta.get("turn_ids") or []) for h in pool}

                def gold_kept(r: memlane.recall.Recall, q=q, turns=turns) -> set[str]:
                    return set().union(*(turns.get(i.id, set()) for i in r.items)) & q.gold_turns

                recall_module._MMR_LAMBDA = default_lambda
                unbounded = mem.recall(q.text, max_tokens=10**9, include_brain=False)
                in_pool = set().union(*turns.values()) & q.gold_turns
                totals["questions"] += 1
                totals["candidates"] += len(pool)
                totals["dropped"] += len(pool) - len(unbounded.items)
                totals["gold"] += len(q.gold_turns)
                totals["gold_in_candidates"] += len(in_pool)
                totals["gold_lost_by_collapse"] += len(in_pool - gold_kept(unbounded))
                for lam in SWEEP_LAMBDAS:
                    recall_module._MMR_LAMBDA = lam
                    for budget in SWEEP_BUDGETS:
                        kept_by[(lam, budget)] += len(
                            gold_kept(mem.recall(q.text, max_tokens=budget, include_brain=False))
                        )
            recall_module._MMR_LAMBDA = default_lambda
            mem.close()
    print(json.dumps(totals, indent=2))
    print("\n| λ | " + " | ".join(f"{b:,} tokens" for b in SWEEP_BUDGETS) + " |\n|---|" + "---|" * len(SWEEP_BUDGETS))
    for lam in SWEEP_LAMBDAS:
        mark = " (default)" if lam == default_lambda else ""
        print(f"| {lam}{mark} | " + " | ".join(f"{kept_by[(lam, b)]:,}" for b in SWEEP_BUDGETS) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--pairs", type=int, default=40, help="exchanges per file")
    ap.add_argument("--brain", type=int, default=100, help="MEMORY.md entries")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--max-tokens", type=int, default=15_000)
    ap.add_argument("--embed", choices=["none", "local"], default="none")
    ap.add_argument("--workdir", type=Path, default=None, help="where to generate (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=Path("bench-results/recall.json"))
    ap.add_argument(
        "--mmr-check", type=Path, metavar="LOCOMO_JSON", help="check the near-duplicate collapse on LoCoMo dev instead"
    )
    ap.add_argument(
        "--mask-ab", action="store_true", help="also time recall without secret masking, interleaved query by query"
    )
    args = ap.parse_args()
    if args.mmr_check:
        mmr_check(args.mmr_check, "local" if args.embed == "none" else args.embed)
        return

    work = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-bench-recall-"))
    archive, home = work / "archive", work / "home"
    size = generate(archive, args.files, args.pairs)
    mem = memlane.open(home, embedder=args.embed)
    t = time.perf_counter()
    mem.index([archive], embed=args.embed != "none")
    print(f"indexed {size / 1e6:.0f} MB in {time.perf_counter() - t:.0f}s at {work}", file=sys.stderr)
    rng = random.Random(13)
    fill_brain(home, args.brain, rng)
    chunks = mem.status()["chunks"]

    queries = [" ".join(words(rng, rng.randint(2, 6))) for _ in range(args.queries)]
    for q in queries[:10]:  # warm: readers open, model loaded, brain vectors cached
        mem.recall(q, args.max_tokens)
    search_ms, search_cpu = zip(*(timed(mem.search, q, k=50) for q in queries))
    recall_ms, recall_cpu = zip(*(timed(mem.recall, q, args.max_tokens) for q in queries))
    if args.mask_ab:
        # The same recall with and without masking, alternating per query: a busy machine slows both alike.
        masked_cpu, plain_cpu = [], []
        for q in queries:
            masked_cpu.append(timed(mem.recall, q, args.max_tokens)[1])
            plain_cpu.append(timed(mem.recall, q, args.max_tokens, show_secrets=True)[1])
    recalls = [mem.recall(q, args.max_tokens) for q in queries]
    items, tokens, empty = [len(r.items) for r in recalls], [r.tokens for r in recalls], sum(not r for r in recalls)
    # A query not seen before, so the memoised last query vector does not hide the cost.
    embed_ms = [timed(mem.embedder.embed_query, q + " x")[0] for q in queries] if mem.embedder is not None else []

    first_snapshot = timed(session_snapshot, mem, "bench-session")[0]
    repeat_snapshot = statistics.median(timed(session_snapshot, mem, "bench-session")[0] for _ in range(50))

    results = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "embed": args.embed,
        "archive_mb": round(size / 1e6, 1),
        "chunks": chunks,
        "brain_entries": args.brain,
        "queries": args.queries,
        "max_tokens": args.max_tokens,
        "load_average_1m": round(os.getloadavg()[0], 1),
        "search_k50_ms_p50": round(pct(search_ms, 0.5), 2),
        "search_k50_ms_p99": round(pct(search_ms, 0.99), 2),
        "search_k50_cpu_ms_p50": round(pct(search_cpu, 0.5), 2),
        "recall_ms_p50": round(pct(recall_ms, 0.5), 2),
        "recall_ms_p99": round(pct(recall_ms, 0.99), 2),
        "recall_cpu_ms_p50": round(pct(recall_cpu, 0.5), 2),
        "recall_cpu_ms_p99": round(pct(recall_cpu, 0.99), 2),
        "query_embed_ms_p50": round(pct(embed_ms, 0.5), 2) if embed_ms else None,
        "recall_items_median": statistics.median(items),
        "recall_tokens_median": statistics.median(tokens),
        "empty_recalls": empty,
        "snapshot_first_ms": round(first_snapshot, 2),
        "snapshot_repeat_ms_p50": round(repeat_snapshot, 3),
    }
    if args.mask_ab:
        results["mask_ab_cpu_ms_p50"] = {
            "masked": round(pct(masked_cpu, 0.5), 2),
            "unmasked": round(pct(plain_cpu, 0.5), 2),
            "ratio": round(pct(masked_cpu, 0.5) / pct(plain_cpu, 0.5), 3),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    mode = "keyword-only, no embedding" if args.embed == "none" else "local MiniLM, query embedding included"
    print(
        f"\n{results['machine']}, load average {results['load_average_1m']}; {chunks} chunks ({results['archive_mb']} MB), "
        f"{args.brain} brain entries; {mode}\n"
    )
    print("| measure | wall p50 | wall p99 | CPU p50 |\n|---|---|---|---|")
    print(
        f"| Memory.search k=50 | {results['search_k50_ms_p50']} ms | {results['search_k50_ms_p99']} ms | {results['search_k50_cpu_ms_p50']} ms |"
    )
    print(
        f"| Memory.recall max_tokens={args.max_tokens} | {results['recall_ms_p50']} ms | {results['recall_ms_p99']} ms | {results['recall_cpu_ms_p50']} ms |"
    )
    if embed_ms:
        print(f"| query embedding alone | {results['query_embed_ms_p50']} ms | | |")
    print(
        f"| session_snapshot first / repeat | {results['snapshot_first_ms']} ms | {results['snapshot_repeat_ms_p50']} ms | |"
    )
    print(
        f"\nrecall: median {results['recall_items_median']} items, {results['recall_tokens_median']} tokens; "
        f"{empty} of {args.queries} empty"
    )
    if args.mask_ab:
        ab = results["mask_ab_cpu_ms_p50"]
        print(
            f"secret masking, interleaved: recall CPU p50 {ab['masked']} ms masked vs {ab['unmasked']} ms unmasked (×{ab['ratio']})"
        )


if __name__ == "__main__":
    main()
