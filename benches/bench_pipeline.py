"""Speed of the product pipeline on a generated archive, against the targets of DESIGN.md §5.

Measures, through memlane's own API (index → search), with embedding off or excluded:
  * parse + chunk + BM25 throughput (MB/s of JSONL)
  * re-index with nothing changed
  * append one exchange to one transcript, re-index (p50 / p90 wall and CPU, and the bytes it
    parsed), for Claude Code sessions, Codex rollouts and generic JSONL files (the latter two in
    a side folder of 20 files each, indexed after the no-op measurement)
  * hybrid query latency excluding query embedding (p50 / p99), vectors of 384 dims
  * open a home and answer the first query
  * vector index bytes per chunk

Run: `make bench` (release build), or `python benches/bench_pipeline.py --files 1500 --pairs 70`.
Results print as a markdown table and are saved to bench-results/pipeline.json.
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
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from archive import codex_lines, generate, generic_lines, session_lines, words

import memlane
from memlane import _core

DIM = 384


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


_CENTROIDS = np.random.default_rng(0).standard_normal((256, DIM), dtype=np.float32)


def clustered_unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit vectors around 256 topic centroids: sentence embeddings cluster by topic, and
    uniform random vectors would make HNSW look slower than it is on real data."""
    picks = rng.integers(0, len(_CENTROIDS), size=n)
    vecs = _CENTROIDS[picks] + 0.6 * rng.standard_normal((n, DIM), dtype=np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def add_random_vectors(home: Path, seed: int = 3) -> int:
    """Give every chunk a synthetic unit vector (embedding is excluded by design of this bench)."""
    rng = np.random.default_rng(seed)
    store = _core.Store(str(home))
    with store.writer() as w:
        keys = w.pending_vectors()
        for start in range(0, len(keys), 8192):
            batch = keys[start : start + 8192]
            vecs = clustered_unit_vectors(rng, len(batch))
            w.add_vectors("bench/random/384", np.ascontiguousarray(batch), np.ones(len(batch), dtype=np.uint64), vecs)
        w.commit()
    return len(keys)


class GivenVectors:
    """An embedder that answers the bench queries with their pre-made vectors: what
    `Memory.search` costs a user, minus the query embedding."""

    id = "bench/random/384"
    dim = DIM
    max_window_tokens = 256

    def __init__(self, queries: list[str], vectors: np.ndarray) -> None:
        self.vectors = dict(zip(queries, vectors))

    def embed_query(self, text: str) -> np.ndarray:
        return self.vectors[text]

    def embed_documents(self, texts: list[str]) -> list[np.ndarray]:
        raise NotImplementedError("the bench adds document vectors itself")


def measure_queries(home: Path, n: int, quantization: str) -> dict:
    """Warm hybrid query latency through `Memory.search` (k=10, product defaults) and the core
    alone, CPU time per query, and opening a home to answer a first query."""
    rng = random.Random(11)
    queries = [" ".join(words(rng, rng.randint(2, 6))) for _ in range(n)]
    qvecs = clustered_unit_vectors(np.random.default_rng(5), n)
    embedder = GivenVectors(queries, qvecs)

    t = time.perf_counter()
    fresh = memlane.Memory(home, embedder=embedder, quantization=quantization)
    fresh.search(queries[-1], k=10)
    open_first_ms = (time.perf_counter() - t) * 1000

    mem = memlane.Memory(home, embedder=embedder, quantization=quantization)
    store = _core.Store(str(home), quantization)
    for q in queries[:20]:  # warm
        mem.search(q, k=10)
    lat, core_lat = [], []
    cpu = time.process_time()
    for q in queries:
        t = time.perf_counter()
        mem.search(q, k=10)
        lat.append((time.perf_counter() - t) * 1000)
    cpu_ms = (time.process_time() - cpu) * 1000 / n
    for q, v in zip(queries, qvecs):
        t = time.perf_counter()
        store.search(q, k=10, vector=v, embedder_id=embedder.id)
        core_lat.append((time.perf_counter() - t) * 1000)
    return {
        "chunks": store.status()["chunks"],
        "hybrid_query_ms_p50": round(pct(lat, 0.5), 2),
        "hybrid_query_ms_p99": round(pct(lat, 0.99), 2),
        "hybrid_query_cpu_ms": round(cpu_ms, 2),
        "core_query_ms_p50": round(pct(core_lat, 0.5), 2),
        "core_query_ms_p99": round(pct(core_lat, 0.99), 2),
        "open_and_first_query_ms": round(open_first_ms, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=1500)
    ap.add_argument("--pairs", type=int, default=70, help="exchanges per file")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument(
        "--quantization", default="i8", choices=["f16", "i8", "f32"], help="vector storage (default: the product's, i8)"
    )
    ap.add_argument("--workdir", type=Path, default=None, help="where to generate (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=Path("bench-results/pipeline.json"))
    args = ap.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-bench-"))
    if work.exists() and any(work.iterdir()):
        # A previous run's home would make indexing a no-op and its appends change the archive.
        sys.exit(f"--workdir {work} is not empty: give a new or empty folder")
    archive, home = work / "archive", work / "home"
    t = time.perf_counter()
    size = generate(archive, args.files, args.pairs)
    print(
        f"generated {args.files} files, {size / 1e6:.0f} MB in {time.perf_counter() - t:.0f}s at {work}",
        file=sys.stderr,
    )

    mem = memlane.open(home, embedder="none", quantization=args.quantization)
    first = mem.index([archive], embed=False)
    mbps = first.bytes_parsed / 1e6 / first.keyword_seconds
    chunks = mem.status()["chunks"]

    noop = [mem.index([archive], embed=False).seconds for _ in range(5)]

    # Codex rollouts and generic files of the same conversations, next to the archive.
    side = work / "side"
    start = datetime(2026, 3, 1, tzinfo=timezone.utc)
    srng = random.Random(13)
    for i in range(20):
        sid = f"0199{i:04x}-0000-7000-8000-{i:012x}"
        codex = side / "codex" / f"rollout-2026-03-01T00-00-00-{sid}.jsonl"
        codex.parent.mkdir(parents=True, exist_ok=True)
        codex.write_text("\n".join(codex_lines(srng, sid, args.pairs, start)) + "\n")
        generic = side / "generic" / f"log-{i}.jsonl"
        generic.parent.mkdir(parents=True, exist_ok=True)
        generic.write_text("\n".join(generic_lines(srng, f"g{i}", args.pairs, start)) + "\n")
    mem.index([archive, side], embed=False)

    rng = random.Random(11)
    victims = {
        "claude-code": sorted(archive.rglob("*.jsonl")),
        "codex": sorted((side / "codex").glob("*.jsonl")),
        "generic": sorted((side / "generic").glob("*.jsonl")),
    }
    appends: dict[str, dict[str, list[float]]] = {
        k: {"wall": [], "cpu": [], "bytes": [], "resumed": []} for k in victims
    }
    when = datetime(2026, 6, 1, tzinfo=timezone.utc)
    for i in range(90):
        kind = list(victims)[i % 3]
        path = rng.choice(victims[kind])
        if kind == "claude-code":
            last = json.loads(path.read_text().rstrip("\n").rsplit("\n", 1)[-1])
            lines = session_lines(rng, path.stem, 1, when, parent=last["uuid"], uuid_prefix=f"{path.stem}-x{i}")
        elif kind == "codex":
            lines = codex_lines(rng, path.stem[-36:], 1, when, header=False)
        else:
            lines = generic_lines(rng, f"{path.stem}-x{i}", 1, when)
        with path.open("a") as f:
            f.write("\n".join(lines) + "\n")
        cpu = time.process_time()
        report = mem.index([archive, side], embed=False)
        appends[kind]["cpu"].append(time.process_time() - cpu)
        appends[kind]["wall"].append(report.seconds)
        appends[kind]["bytes"].append(report.bytes_parsed)
        appends[kind]["resumed"].append(report.files_resumed)
    append_times, append_bytes = appends["claude-code"]["wall"], appends["claude-code"]["bytes"]

    t = time.perf_counter()
    vectors = add_random_vectors(home)
    vector_seconds = time.perf_counter() - t

    timings = measure_queries(home, args.queries, args.quantization)

    vec_bytes = (home / "vectors.usearch").stat().st_size
    results = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "archive_mb": round(size / 1e6, 1),
        "files": args.files,
        "chunks": chunks,
        "quantization": args.quantization,
        "parse_chunk_bm25_mb_per_s": round(mbps, 1),
        "noop_reindex_s_median": round(statistics.median(noop), 3),
        "append_reindex_ms_p50": round(pct(append_times, 0.5) * 1000, 1),
        "append_reindex_ms_p90": round(pct(append_times, 0.9) * 1000, 1),
        "append_bytes_parsed_median": statistics.median(append_bytes),
        "append_by_format": {
            kind: {
                "wall_ms_p50": round(pct(m["wall"], 0.5) * 1000, 1),
                "wall_ms_p90": round(pct(m["wall"], 0.9) * 1000, 1),
                "cpu_ms_p50": round(pct(m["cpu"], 0.5) * 1000, 1),
                "cpu_ms_p90": round(pct(m["cpu"], 0.9) * 1000, 1),
                "bytes_parsed_median": statistics.median(m["bytes"]),
                "resumed": int(sum(m["resumed"])),
                "appends": len(m["wall"]),
            }
            for kind, m in appends.items()
        },
        "manifest_bytes": (home / "manifest.json").stat().st_size,
        "load": os.getloadavg(),
        "vectors_added": vectors,
        "vector_insert_per_s": round(vectors / vector_seconds),
        **{k: v for k, v in timings.items() if k != "chunks"},
        "vector_bytes_per_chunk": round(vec_bytes / max(vectors, 1)),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    rows = [
        ("parse + chunk + BM25", f"{results['parse_chunk_bm25_mb_per_s']} MB/s", "≥ 50 MB/s"),
        (f"re-index, nothing changed ({args.files} files)", f"{results['noop_reindex_s_median']} s", "≤ 1 s"),
        *(
            (
                f"append to one {kind} transcript, re-index",
                f"p50 {m['wall_ms_p50']} ms (p90 {m['wall_ms_p90']}), CPU p50 {m['cpu_ms_p50']} ms, "
                f"{m['bytes_parsed_median'] / 1e3:.1f} kB parsed, {m['resumed']}/{m['appends']} resumed",
                "≤ 250 ms p50",
            )
            for kind, m in results["append_by_format"].items()
        ),
        (
            f"hybrid query, warm, {chunks} chunks, Memory.search without query embedding",
            f"p50 {results['hybrid_query_ms_p50']} ms, p99 {results['hybrid_query_ms_p99']} ms "
            f"({results['hybrid_query_cpu_ms']} ms CPU; core alone p50 {results['core_query_ms_p50']} ms)",
            "100k: p50 ≤ 1.5 ms, p99 ≤ 10 ms",
        ),
        (f"open + first query ({chunks} chunks)", f"{results['open_and_first_query_ms']} ms", "≤ 50 ms at 1M"),
        (
            f"vector index per chunk ({args.quantization}, {DIM} dims)",
            f"{results['vector_bytes_per_chunk']} B",
            "≤ 600 B",
        ),
    ]
    print(
        f"\n{results['machine']}; archive {results['archive_mb']} MB, {chunks} chunks; manifest {results['manifest_bytes'] / 1e6:.1f} MB; "
        f"load {results['load'][0]:.1f}\n"
    )
    print("| stage | measured | target |\n|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")


if __name__ == "__main__":
    main()
