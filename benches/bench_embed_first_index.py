"""First index with local vectors: CPU-seconds per MB of transcripts, embedders side by side.

Each repeat indexes the corpus once per embedder (the order alternating between repeats)
through the product, ``memlane.Memory.index`` into a fresh home with an empty embedding
cache: parsing, chunking, BM25, every chunk embedded, HNSW. The cost is this process's CPU
time (all threads) per MB of input files, which a busy machine inflates far less than wall
time; the embedders are loaded (their graphs built) before timing.

It also reports the cosine between the first two embedders' vectors of the same windows,
and how much of what is embedded is text that carries little meaning for a vector
(base64-like runs, log-like lines, lines repeated across chunks), as word pieces.

Run from the repository root (data beside the repo in ../shared/data):

    .venv/bin/python benches/bench_embed_first_index.py
    .venv/bin/python benches/bench_embed_first_index.py --corpus ~/.claude/projects --repeats 1
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

import memlane
from memlane.embed import make_embedder
from memlane.embed.cache import EmbeddingCache

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
# A run of 64+ base64 characters without a space: images, keys, blobs.
_BASE64 = re.compile(r"[A-Za-z0-9+/=_-]{64,}")
# A log line: starts with a timestamp, a level or a stack-frame marker.
_LOG_LINE = re.compile(
    r"^\s*(\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?(DEBUG|INFO|WARN|WARNING|ERROR|TRACE)\b|at \S+\(|File \")"
)


def cpu_seconds() -> float:
    """User + system CPU of this process, all threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def corpus_bytes(paths: list[Path]) -> int:
    """Bytes of every file under ``paths``."""
    return sum(f.stat().st_size for p in paths for f in (p.rglob("*") if p.is_dir() else [p]) if f.is_file())


def junk_share(texts: list[str], tokenizer: object) -> dict[str, float]:
    """Share of word pieces in base64-like runs, log-like lines and lines repeated in 3+ chunks."""
    line_counts = Counter(line.strip() for t in texts for line in set(t.splitlines()) if len(line.strip()) > 20)
    total = base64 = logs = repeated = 0
    for text in texts:
        total += len(tokenizer.encode(text, add_special_tokens=False).ids)
        base64 += sum(len(tokenizer.encode(m, add_special_tokens=False).ids) for m in _BASE64.findall(text))
        for line in text.splitlines():
            if _LOG_LINE.match(line):
                logs += len(tokenizer.encode(line, add_special_tokens=False).ids)
            elif line_counts.get(line.strip(), 0) >= 3:
                repeated += len(tokenizer.encode(line, add_special_tokens=False).ids)
    return {"tokens": total, "base64": base64 / total, "log lines": logs / total, "repeated lines": repeated / total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, nargs="+", default=[DATA / "transcripts"], help="files or folders to index"
    )
    parser.add_argument("--embedders", default="local:fp32,local", help="embedder specs; ratios are to the first")
    parser.add_argument("--repeats", type=int, default=2, help="first indexes per embedder, interleaved")
    args = parser.parse_args()

    mb = corpus_bytes(args.corpus) / 1e6
    specs = args.embedders.split(",")
    embedders = {spec: make_embedder(spec) for spec in specs}
    print(f"corpus: {', '.join(map(str, args.corpus))} ({mb:.2f} MB); {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}; {args.repeats} interleaved repeats", flush=True)  # fmt: skip
    runs: dict[str, list[tuple[float, float, int, int]]] = {spec: [] for spec in specs}
    with tempfile.TemporaryDirectory(prefix="memlane-bench-first-index-") as tmp:
        for repeat in range(args.repeats):
            for spec in specs if repeat % 2 == 0 else specs[::-1]:
                run = Path(tmp) / f"{repeat}-{spec.replace(':', '-')}"
                with memlane.Memory(run / "home", embedder=embedders[spec], cache_dir=run / "cache") as mem:
                    start, cpu_start = time.perf_counter(), cpu_seconds()
                    report = mem.index(args.corpus)
                    cpu, wall = cpu_seconds() - cpu_start, time.perf_counter() - start
                    windows = mem.status()["vectors"]
                runs[spec].append((cpu, wall, report.chunks_embedded, windows))
                print(
                    f"  {spec}: {cpu:.1f} CPU s, {wall:.1f} s wall, {report.chunks_embedded} chunks, {windows} windows",
                    flush=True,
                )

        header = ("embedder", "chunks", "windows", "CPU s", "CPU-s/MB", "wall s", "MB/s wall", "x CPU")
        print("  ".join(header))
        base = statistics.median(r[0] for r in runs[specs[0]])
        for spec in specs:
            cpu = statistics.median(r[0] for r in runs[spec])
            wall = statistics.median(r[1] for r in runs[spec])
            _, _, chunks, windows = runs[spec][0]
            row = (
                spec,
                str(chunks),
                str(windows),
                f"{cpu:.1f}",
                f"{cpu / mb:.1f}",
                f"{wall:.1f}",
                f"{mb / wall:.3f}",
                f"{base / cpu:.2f}",
            )
            print("  ".join(cell.rjust(len(h)) for cell, h in zip(row, header)))

        mem = memlane.Memory(Path(tmp) / "keyword", embedder="none")
        mem.index(args.corpus)
        with mem._store.writer() as writer:
            rows = writer.chunk_texts([int(k) for k in writer.pending_vectors()])
        texts = [t for _, _, t in rows]
        if len(specs) >= 2:
            a, b = (
                EmbeddingCache(Path(tmp) / f"0-{spec.replace(':', '-')}" / "cache" / "embeddings.sqlite")
                for spec in specs[:2]
            )
            hashes = [h for _, h, _ in rows]
            va, vb = (c.get_many(embedders[spec].id, hashes) for c, spec in zip((a, b), specs))
            cos = np.concatenate([(va[h] * vb[h]).sum(axis=1) for h in hashes if h in va and h in vb])
            print(f"cosine {specs[1]} vs {specs[0]} over {len(cos)} windows (float16 as cached): mean {cos.mean():.4f}, "
                  f"p1 {np.percentile(cos, 1):.4f}, min {cos.min():.4f}")  # fmt: skip
        share = junk_share(texts, embedders[specs[0]]._tokenizer)
        print(f"of {share.pop('tokens')} word pieces embedded: " + ", ".join(f"{k} {v:.1%}" for k, v in share.items()))


if __name__ == "__main__":
    main()
