"""Throughput and latency of the local embedder's modes, measured side by side in one process.

Documents are ~500-token chunks of English technical prose (the standard
library's own docstrings, so the corpus needs no download and is the same on
every machine with the same Python); queries are 3-8 word snippets of it.

The modes take turns: each repeat embeds every chunk once per mode, the order of the modes
alternating between repeats, so a busy machine slows all of them alike and the ratio to the
first mode holds where the absolute rates do not. Both wall time and this process's CPU time
(all threads) are reported.

Run from the repository root:

    .venv/bin/python benches/bench_embed_local.py --chunks 64 --queries 200 --repeats 4   # after `make install`

2026-11-26, AMD EPYC (Zen 3, AVX2, no AVX-512/VNNI), 2 vCPUs, onnxruntime 1.32, machine busy
(other builds, load 3-6), 64 chunks x 500 tokens, 4 repeats:

    see benches/LOG.md, "Embeddings: the q8 default against fp32", for the table of this run

"build s" is the one-off cost of writing the graph into an empty cache;
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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from memlane.embed.local import LocalEmbedder

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


def load(mode: str, threads: int | None) -> tuple[LocalEmbedder, float, float]:
    """The embedder of ``mode``, with its one-off build time (cold cache) and its load time (warm)."""
    from memlane.embed import local
    from memlane.embed.local import LocalEmbedder

    build_s = float("nan")
    if mode in ("fp32", "q8"):
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
    return emb, build_s, time.perf_counter() - start


def query_latencies(emb: LocalEmbedder, queries: list[str]) -> tuple[float, float]:
    """p50 and p95 milliseconds of embedding ``queries`` one by one."""
    for q in queries[:10]:
        emb.embed_query(q)
    latencies = []
    for q in queries:
        start = time.perf_counter()
        emb.embed_query(q)
        latencies.append((time.perf_counter() - start) * 1000)
    latencies.sort()
    return statistics.median(latencies), latencies[int(0.95 * (len(latencies) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=64, help="number of ~500-token chunks")
    parser.add_argument("--tokens", type=int, default=500, help="word pieces per chunk")
    parser.add_argument("--queries", type=int, default=200, help="number of short queries timed one by one")
    parser.add_argument("--repeats", type=int, default=4, help="passes over the chunks, per mode, interleaved")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads (default: all cores)")
    parser.add_argument("--modes", default="fp32,q8", help="comma-separated modes; ratios are to the first")
    args = parser.parse_args()

    from tokenizers import Tokenizer

    from memlane.embed.weights import minilm_dir

    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    text = corpus_text()
    chunks = make_chunks(text, tokenizer, args.tokens, args.chunks)
    queries = make_queries(text, args.queries)

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{len(chunks)} chunks x {args.tokens} tokens, {len(queries)} queries, {cores} cores, "
          f"{args.repeats} interleaved repeats, load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    modes = args.modes.split(",")
    loaded = {mode: load(mode, args.threads) for mode in modes}
    windows = {mode: sum(len(m) for m in emb.embed_documents(chunks)) for mode, (emb, _, _) in loaded.items()}
    wall = dict.fromkeys(modes, 0.0)
    cpu = dict.fromkeys(modes, 0.0)
    for repeat in range(args.repeats):
        for mode in modes if repeat % 2 == 0 else modes[::-1]:
            emb = loaded[mode][0]
            start, cpu_start = time.perf_counter(), time.process_time()
            emb.embed_documents(chunks)
            wall[mode] += time.perf_counter() - start
            cpu[mode] += time.process_time() - cpu_start

    header = (
        "mode", "threads", "build s", "load s", "windows", "windows/s", "chunks/s", "windows/cpu-s", "x wall", "x cpu",
        "query p50 ms", "query p95 ms",
    )  # fmt: skip
    print("  ".join(header))
    base = modes[0]
    for mode in modes:
        emb, build_s, load_s = loaded[mode]
        p50, p95 = query_latencies(emb, queries)
        rate = windows[mode] * args.repeats / wall[mode]
        row = (
            mode,
            str(args.threads or cores),
            "-" if math.isnan(build_s) else f"{build_s:.2f}",
            f"{load_s:.2f}",
            str(windows[mode]),
            f"{rate:.1f}",
            f"{len(chunks) * args.repeats / wall[mode]:.1f}",
            f"{windows[mode] * args.repeats / cpu[mode]:.2f}",
            f"{wall[base] / wall[mode]:.2f}",
            f"{cpu[base] / cpu[mode]:.2f}",
            f"{p50:.2f}",
            f"{p95:.2f}",
        )
        print("  ".join(cell.rjust(len(h)) for cell, h in zip(row, header)))


if __name__ == "__main__":
    main()
