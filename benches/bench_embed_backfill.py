"""Vector backfill through the product, fp32 against int8: speed, 100k-chunk extrapolation, fidelity.

A real sample (default: BEAM conversation 0, long technical chat whose turn-pair chunks
average ~390 word pieces, close to the ~500-token chunks of coding-agent archives) is
indexed keyword-only into a home; then, per mode, a copy of that home is backfilled with
``Memory.embed_pending`` into an empty embedding cache (every chunk embedded: the cold cost),
and another copy from the now warm cache (an index rebuild: zero embedding calls). The time
for a 100k-chunk archive is extrapolated from the measured chunks/s; it holds for chunks of
the sample's length, and is stated with the sample's tokens per chunk for that reason.

Fidelity: per window, the cosine between the int8 and fp32 vectors of the same text (as
stored in the cache, float16).

Run from the repository root (data beside the repo in ../shared/data):

    PYTHONPATH=python .venv/bin/python benches/bench_embed_backfill.py
    PYTHONPATH=python .venv/bin/python benches/bench_embed_backfill.py --dataset locomo --conversations 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import memlane
from memlane.bench.datasets import load_dataset
from memlane.embed import make_embedder

# Beside the repository, as DESIGN.md §7 lays it out; --data points elsewhere (e.g. from a worktree).
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SOURCES = {"beam": "beam/100K", "locomo": "locomo/locomo10.json"}
ARCHIVE_CHUNKS = 100_000


class Counting:
    """Wraps an embedder to count the texts it is asked to embed."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.id, self.dim, self.max_window_tokens = inner.id, inner.dim, inner.max_window_tokens
        self.texts = 0

    def embed_documents(self, texts):
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def sample_home(data: Path, dataset: str, conversations: int, root: Path) -> tuple[Path, list[tuple[int, str, str]]]:
    """A keyword-only home of the sample, and its ``(key, hash, text)`` chunks."""
    split = "dev" if dataset == "locomo" else "all"
    ds = load_dataset(dataset, data / SOURCES[dataset], split)
    src = root / "src"
    src.mkdir()
    home = root / "base"
    mem = memlane.open(home, embedder="none")
    for conv in ds.conversations[:conversations]:
        mem.index([conv.write(src)], embed=False, format=conv.fmt)
    with mem._store.writer() as writer:
        rows = writer.chunk_texts([int(k) for k in writer.pending_vectors()])
    return home, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=sorted(SOURCES), default="beam")
    parser.add_argument("--data", type=Path, default=DATA, help=f"the shared data folder (default {DATA})")
    parser.add_argument("--conversations", type=int, default=1, help="conversations in the sample (default 1)")
    parser.add_argument("--modes", default="local,local:int8", help="embedder specs, comma-separated")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="memlane-bench-backfill-") as tmp:
        root = Path(tmp)
        base, rows = sample_home(args.data, args.dataset, args.conversations, root)
        hashes = [h for _, h, _ in rows]
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        print(f"sample: {args.dataset}, {args.conversations} conversation(s), {len(rows)} chunks; "
              f"{cores} cores, load average {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
        header = (
            "mode", "load s", "windows", "tok/chunk", "cold s", "cpu s", "chunks/s", "windows/s", "100k chunks",
            "100k by cpu", "warm s", "warm chunks/s", "calls warm",
        )  # fmt: skip
        print("  ".join(header), flush=True)
        stored: dict[str, dict[str, np.ndarray]] = {}
        for spec in args.modes.split(","):
            t0 = time.perf_counter()
            emb = make_embedder(spec)
            load_s = time.perf_counter() - t0
            tokens = [
                len(e.ids) for e in emb._tokenizer.encode_batch([t for _, _, t in rows], add_special_tokens=False)
            ]
            cache = root / f"cache-{spec.replace(':', '-')}"
            timings = []
            for run in ("cold", "warm"):
                home = root / f"home-{spec.replace(':', '-')}-{run}"
                shutil.copytree(base, home)
                counting = Counting(emb)
                with memlane.Memory(home, embedder=counting, cache_dir=cache) as mem:
                    t0, cpu0 = time.perf_counter(), time.process_time()
                    done = mem.embed_pending()
                    timings.append((time.perf_counter() - t0, time.process_time() - cpu0, counting.texts, done))
                    if run == "cold":
                        stored[spec] = mem.cache.get_many(emb.id, hashes)
            (cold_s, cold_cpu, _, done), (warm_s, _, warm_calls, _) = timings
            windows = sum(v.shape[0] for v in stored[spec].values())
            per_s = done / cold_s
            row = (
                spec, f"{load_s:.2f}", str(windows), f"{statistics.mean(tokens):.0f}", f"{cold_s:.1f}", f"{cold_cpu:.1f}",
                f"{per_s:.1f}", f"{windows / cold_s:.1f}", f"{ARCHIVE_CHUNKS / per_s / 3600:.2f} h",
                f"{ARCHIVE_CHUNKS * cold_cpu / done / cores / 3600:.2f} h", f"{warm_s:.2f}", f"{done / warm_s:.0f}", str(warm_calls),
            )  # fmt: skip
            print("  ".join(cell.rjust(len(h)) for cell, h in zip(row, header)), flush=True)

        specs = args.modes.split(",")
        if len(specs) == 2:
            a, b = (stored[s] for s in specs)
            cosines = np.concatenate([(a[h] * b[h]).sum(axis=1) for h in hashes if a[h].shape == b[h].shape])
            q = np.percentile(cosines, [1, 5, 50])
            print(
                f"fidelity {specs[1]} vs {specs[0]} over {len(cosines)} windows: mean cosine {cosines.mean():.4f}, "
                f"median {q[2]:.4f}, p5 {q[1]:.4f}, p1 {q[0]:.4f}, min {cosines.min():.4f}, "
                f"share >= 0.99: {(cosines >= 0.99).mean():.1%}"
            )


if __name__ == "__main__":
    main()
