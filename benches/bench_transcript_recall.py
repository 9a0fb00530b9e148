"""Known-item recall on agent transcripts: does a search find the exchange a line came from?

LoCoMo scores retrieval on chat; nothing else scored it on what memlane mostly holds, agent
transcripts with code and tool output. This bench indexes the shared real transcript samples
(every format in ``../shared/data/transcripts``) through the product, ``Memory.index`` into a
fresh home and embedding cache with the local embedder (``--embedder``), then asks ``Memory.search`` for every
line of five words or more that a chunk holds (its first 24 words, the ``User:``/``Assistant:``
label cut), once hybrid (the product's default fusion) and once by vectors alone
(``vector_weight=1``). A query's gold is every chunk holding all its words; it is answered at
rank r when a gold chunk is the r-th hit. Queries are split by kind: ``prose`` when letters and
spaces are 85% of it or more, else ``code``.

A line asked back verbatim is the easiest question a transcript memory gets, so the figures
measure how faithfully each chunk's vectors keep what it says (vectors alone) and what the
product returns (hybrid). Compare two builds by running each (an old checkout on
``PYTHONPATH``). Also printed: the chunks, their windows and the index's CPU-seconds (this
process, all threads, the model loaded before timing).

Run from the repository root:

    .venv/bin/python benches/bench_transcript_recall.py
    PYTHONPATH=/tmp/old/python .venv/bin/python benches/bench_transcript_recall.py
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_embed_first_index import cpu_seconds

import memlane

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RESULTS = Path(__file__).resolve().parents[1] / "bench-results" / "transcript_recall.json"
_LABEL = re.compile(r"^(User|Assistant): ")


def queries(texts: dict[int, str]) -> dict[str, str]:
    """Every line of five words or more of the chunks, its first 24 words, with its kind."""
    found: dict[str, str] = {}
    for text in texts.values():
        for line in text.splitlines():
            words = _LABEL.sub("", line.strip()).split()
            if len(words) < 5:
                continue
            query = " ".join(words[:24])
            prose = sum(c.isalpha() or c == " " for c in query) >= 0.85 * len(query)
            found.setdefault(query, "prose" if prose else "code")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DATA / "transcripts", help="a folder of transcripts")
    parser.add_argument("--embedder", default="local", help="embedder spec (default local, q8)")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"{args.corpus} is missing: put the shared data beside the repository (../shared/data)")

    with tempfile.TemporaryDirectory() as tmp:
        mem = memlane.open(Path(tmp) / "home", embedder=args.embedder, cache_dir=Path(tmp) / "cache")
        assert mem.embedder is not None
        mem.embedder.embed_query("load the model before timing")
        start = cpu_seconds()
        mem.index(args.corpus)
        cpu = cpu_seconds() - start
        status = mem.status()
        with mem._store.writer() as writer:
            texts = {key: text for key, _, text in writer.chunk_texts([int(k) for k in mem._store.keys()])}

        counts: dict[tuple[str, str], list[float]] = {}
        for query, kind in queries(texts).items():
            gold = {key for key, text in texts.items() if all(word in text for word in query.split())}
            for mode, weight in (("hybrid", 0.6), ("vectors", 1.0)):
                hits = mem.search(
                    query, k=10, vector_weight=weight, threshold=0.0, recency=False, temporal=False, hierarchy=False
                )
                rank = next((i + 1 for i, hit in enumerate(hits) if int(hit.id, 16) in gold), None)
                for group in ((kind, mode), ("all", mode)):
                    c = counts.setdefault(group, [0, 0, 0, 0, 0.0])
                    c[0] += 1
                    for j, k in enumerate((1, 5, 10), start=1):
                        c[j] += rank is not None and rank <= k
                    c[4] += 1 / rank if rank else 0.0

    rows = {
        f"{kind} {mode}": {
            "queries": int(n),
            "recall@1": 100 * r1 / n,
            "recall@5": 100 * r5 / n,
            "recall@10": 100 * r10 / n,
            "mrr": mrr / n,
        }
        for (kind, mode), (n, r1, r5, r10, mrr) in sorted(counts.items())
    }
    summary = {"chunks": status["chunks"], "windows": status["vectors"], "index_cpu_s": round(cpu, 2)}
    print(f"{args.corpus}: {summary['chunks']} chunks, {summary['windows']} windows, index {cpu:.1f} CPU-s")
    print("| queries | n | recall@1 | recall@5 | recall@10 | MRR |\n|---|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['queries']} | {r['recall@1']:.2f} | {r['recall@5']:.2f} | {r['recall@10']:.2f} | {r['mrr']:.4f} |"
        )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"corpus": str(args.corpus), **summary, "results": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
