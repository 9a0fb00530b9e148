"""Query speed at scale (DESIGN.md §5: 1M chunks p50 ≤ 5 ms, open + first query ≤ 50 ms).

Builds a home of about `--chunks` chunks through the product's index path: generic-format
JSONL transcripts (about one user/assistant pair per chunk, Zipf words as in archive.py) indexed
by `Memory.index`, then one synthetic 384-dim vector per chunk through the writer, as
bench_pipeline.py does (embedding is excluded by design). Then measures, like
bench_pipeline.py, the warm hybrid query through `Memory.search` (and the core alone), open
+ first query, and vector bytes per chunk.

Run: `python benches/bench_scale.py --chunks 1000000 --workdir /tmp/scale` (about 4 GB of
disk; `--keep` keeps the home, and a later run with the same `--workdir` measures it again
without rebuilding). Results are saved to bench-results/scale.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from archive import _CUM_WEIGHTS, VOCAB
from bench_pipeline import DIM, add_random_vectors, measure_queries

import memlane

PAIRS_PER_FILE = 250


def generate(root: Path, chunks: int, seed: int = 7) -> int:
    """Write `chunks` user/assistant pairs as generic JSONL, `PAIRS_PER_FILE` per session file;
    returns total bytes. Questions are 5-40 words, replies 20-220: most pairs fit one chunk
    (500 tokens), a few split in two and a few short ones are packed together (2,500 pairs give
    2,460 chunks)."""
    rng = np.random.default_rng(seed)
    vocab = np.array(VOCAB, dtype=object)
    cum = np.array(_CUM_WEIGHTS) / _CUM_WEIGHTS[-1]
    root.mkdir(parents=True, exist_ok=True)
    total, t0 = 0, 1_767_225_600  # 2026-01-01
    for f in range((chunks + PAIRS_PER_FILE - 1) // PAIRS_PER_FILE):
        pairs = min(PAIRS_PER_FILE, chunks - f * PAIRS_PER_FILE)
        lengths = np.stack([rng.integers(5, 41, pairs), rng.integers(20, 221, pairs)], axis=1).ravel()
        words = vocab[np.searchsorted(cum, rng.random(int(lengths.sum())))]
        ends = np.cumsum(lengths)
        lines = []
        for i, end in enumerate(ends):
            ts = t0 + f * 3600 + i * 30
            lines.append(
                json.dumps(
                    {
                        "session_id": f"s{f:06d}",
                        "role": "user" if i % 2 == 0 else "assistant",
                        "content": " ".join(words[end - lengths[i] : end]),
                        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts)),
                    }
                )
            )
        text = "\n".join(lines) + "\n"
        (root / f"s{f:06d}.jsonl").write_text(text)
        total += len(text)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument(
        "--quantization", default="i8", choices=["f16", "i8", "f32"], help="vector storage (default: the product's, i8)"
    )
    ap.add_argument("--workdir", type=Path, default=None, help="where to build (default: a temp dir, deleted after)")
    ap.add_argument("--keep", action="store_true", help="keep the archive and home")
    ap.add_argument("--out", type=Path, default=Path("bench-results/scale.json"))
    args = ap.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-scale-"))
    archive, home = work / "archive", work / "home"
    build = {}
    if not (home / "vectors.usearch").exists():
        t = time.perf_counter()
        size = generate(archive, args.chunks)
        build["generate_s"] = round(time.perf_counter() - t, 1)
        print(f"generated {size / 1e6:.0f} MB in {build['generate_s']}s at {work}", file=sys.stderr)
        t, cpu = time.perf_counter(), time.process_time()
        report = memlane.open(home, embedder="none", quantization=args.quantization).index(
            [archive], embed=False, format="generic"
        )
        build["index_s"] = round(time.perf_counter() - t, 1)
        build["index_cpu_s"] = round(time.process_time() - cpu, 1)
        build["archive_mb"] = round(size / 1e6, 1)
        print(f"indexed {report.chunks_added} chunks in {build['index_s']}s", file=sys.stderr)
        t, cpu = time.perf_counter(), time.process_time()
        build["vectors"] = add_random_vectors(home)
        build["vectors_s"] = round(time.perf_counter() - t, 1)
        build["vectors_cpu_s"] = round(time.process_time() - cpu, 1)
        print(f"added {build['vectors']} vectors in {build['vectors_s']}s", file=sys.stderr)

    results = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average": os.getloadavg(),
        "quantization": args.quantization,
        **build,
        **measure_queries(home, args.queries, args.quantization),
    }
    results["vector_bytes_per_chunk"] = round((home / "vectors.usearch").stat().st_size / results["chunks"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    print(
        f"\n| stage ({results['chunks']} chunks, {DIM} dims, {args.quantization}) | measured | target |\n|---|---|---|"
    )
    print(
        f"| hybrid query, warm, Memory.search, no query embedding | p50 {results['hybrid_query_ms_p50']} ms, "
        f"p99 {results['hybrid_query_ms_p99']} ms | 1M: p50 ≤ 5 ms |"
    )
    print(f"| open + first query | {results['open_and_first_query_ms']} ms | ≤ 50 ms at 1M |")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
