"""Keyword ingest (parse, chunk, BM25; no embedding) on 1, 2, … cores, and the answers it gives
(issue 41 item 4).

Each core count is one fresh home indexed by a child process pinned with `taskset` to that many
cores: rayon's pool and tantivy's indexing threads size themselves from the affinity mask. A
child reports its wall time, the CPU of all its threads and the CPU of its calling thread alone:
that thread adds the chunks to the index in order, the one part of the run that does not spread
over cores, so `1 / its CPU per MB` bounds the rate that any number of cores can reach.

Every home then answers the same queries; the bench fails unless all give the same chunks with
the same scores (tantivy puts documents in segments by thread timing, and answers must not
depend on it).

Run: `python benches/bench_keyword_cores.py [--files 600 --pairs 70] [--cores 1,2]`.
Results print as a markdown table and are saved to bench-results/keyword_cores.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from archive import generate, words

_CHILD = """
import json, sys, time
import memlane
home, archive, queries = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
mem = memlane.open(home, embedder="none")
wall, cpu, caller = time.perf_counter(), time.process_time(), time.thread_time()
report = mem.index([archive], embed=False)
wall, cpu, caller = time.perf_counter() - wall, time.process_time() - cpu, time.thread_time() - caller
answers = [[(h.id, h.score) for h in mem.search(q, k=10)] for q in queries]
print(json.dumps({"wall": wall, "cpu": cpu, "caller": caller, "bytes": report.bytes_parsed,
                  "chunks": report.chunks_added, "answers": answers}))
"""


def run(cores: int, home: Path, archive: Path, queries: list[str]) -> dict:
    cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:cores])
    out = subprocess.run(
        ["taskset", "-c", cpus, sys.executable, "-c", _CHILD, str(home), str(archive), json.dumps(queries)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=600)
    ap.add_argument("--pairs", type=int, default=70)
    ap.add_argument("--cores", default="", help="core counts, comma-separated (default: 1, 2, 4, … up to all)")
    ap.add_argument("--repeats", type=int, default=2, help="runs per core count, interleaved")
    args = ap.parse_args()
    available = len(os.sched_getaffinity(0))
    counts = [int(c) for c in args.cores.split(",")] if args.cores else sorted({*(2**i for i in range(7)), available})
    counts = [c for c in counts if c <= available]
    rng = random.Random(11)
    queries = [" ".join(words(rng, 3)) for _ in range(40)]
    rows: dict[int, list[dict]] = {c: [] for c in counts}
    with tempfile.TemporaryDirectory(prefix="memlane-kwcores-") as tmp:
        archive = Path(tmp) / "archive"
        size = generate(archive, args.files, args.pairs)
        for r in range(args.repeats):
            for c in counts:
                rows[c].append(run(c, Path(tmp) / f"home-{c}-{r}", archive, queries))
    reference = rows[counts[0]][0]["answers"]
    differ = [(c, i) for c in counts for i, row in enumerate(rows[c]) if row["answers"] != reference]
    mb = size / 1e6
    print(f"archive: {args.files} files, {mb:.1f} MB, {rows[counts[0]][0]['chunks']} chunks; {available} cores here")
    print("| cores | MB/s | CPU-ms per MB | calling thread, CPU-ms per MB | ceiling it sets, MB/s |")
    print("|---:|---|---|---|---|")
    for c in counts:
        fmt = lambda vals, spec: " / ".join(format(v, spec) for v in vals)  # noqa: E731
        print(
            f"| {c} | {fmt([mb / x['wall'] for x in rows[c]], '.1f')} | {fmt([1e3 * x['cpu'] / mb for x in rows[c]], '.1f')}"
            f" | {fmt([1e3 * x['caller'] / mb for x in rows[c]], '.2f')} | {fmt([mb / x['caller'] for x in rows[c]], '.0f')} |"
        )
    print(f"answers to {len(queries)} queries: " + ("identical in every home" if not differ else f"DIFFER in {differ}"))
    out = Path("bench-results")
    out.mkdir(exist_ok=True)
    (out / "keyword_cores.json").write_text(
        json.dumps(
            {
                "when": datetime.now(timezone.utc).isoformat(),
                "machine": platform.platform(),
                "cores_available": available,
                "archive_mb": mb,
                "runs": {c: [{k: v for k, v in x.items() if k != "answers"} for x in rows[c]] for c in counts},
                "answers_identical": not differ,
            },
            indent=1,
        )
    )
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
