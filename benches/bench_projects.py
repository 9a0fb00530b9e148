"""What the project and branch filters cost a query (issue 25), measured inside one process.

Generates a Claude Code archive spread over 12 repositories and two branches (the generator's
sessions with their `cwd` and `gitBranch` set per file), indexes it keyword-first, gives every
chunk a synthetic 384-dim vector, then asks each query three ways, interleaved so that load
from other processes hits every mode alike: no filter, `project=` one repository, `branch=`.
Reports wall p50/p99 and CPU per query for each, and the filtered/unfiltered ratios.

Run: `python benches/bench_projects.py --files 600 --pairs 40 --queries 300`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from archive import generate, words
from bench_pipeline import GivenVectors, add_random_vectors, clustered_unit_vectors, pct

import memlane

PROJECTS = 12


def spread_over_projects(root: Path) -> None:
    """Give the n-th session the working directory of repository n % 12 and a branch."""
    for i, path in enumerate(sorted(root.rglob("*.jsonl"))):
        cwd, branch = f"/home/dev/project{i % PROJECTS}", ("main", "feature")[i % 2]
        text = path.read_text().replace('"cwd": "/home/dev/project"', f'"cwd": "{cwd}", "gitBranch": "{branch}"')
        path.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=600)
    ap.add_argument("--pairs", type=int, default=40, help="exchanges per file")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--out", type=Path, default=Path("bench-results/projects.json"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "archive", Path(tmp) / "home"
        generate(root, args.files, args.pairs)
        spread_over_projects(root)
        memlane.open(home, embedder="none").index([root], embed=False)
        add_random_vectors(home)

        rng = random.Random(11)
        queries = [" ".join(words(rng, rng.randint(2, 6))) for _ in range(args.queries)]
        mem = memlane.Memory(
            home, embedder=GivenVectors(queries, clustered_unit_vectors(np.random.default_rng(5), len(queries)))
        )
        projects = sorted(mem.projects())
        assert len(projects) == PROJECTS, projects
        modes = {
            "unfiltered": lambda q, i: mem.search(q, k=10),
            "project": lambda q, i: mem.search(q, k=10, project=projects[i % PROJECTS]),
            "branch": lambda q, i: mem.search(q, k=10, branch="feature"),
        }
        for i, q in enumerate(queries[:20]):  # warm
            for run in modes.values():
                run(q, i)
        wall: dict[str, list[float]] = {m: [] for m in modes}
        cpu = dict.fromkeys(modes, 0.0)
        order = list(modes)
        for i, q in enumerate(queries):
            order = order[1:] + order[:1]  # rotate: no mode always runs first (cold) or last
            for m in order:
                c, t = time.process_time(), time.perf_counter()
                hits = modes[m](q, i)
                wall[m].append((time.perf_counter() - t) * 1000)
                cpu[m] += time.process_time() - c
                if m == "project":
                    assert all(h.project == projects[i % PROJECTS] for h in hits)
        chunks = mem.status()["chunks"]

    results = {"chunks": chunks, "queries": len(queries), "projects": PROJECTS}
    for m in modes:
        results[m] = {"p50_ms": round(pct(wall[m], 0.5), 3), "p99_ms": round(pct(wall[m], 0.99), 3),
                      "cpu_ms": round(cpu[m] * 1000 / len(queries), 3)}  # fmt: skip
    for m in ("project", "branch"):
        results[f"{m}_vs_unfiltered_cpu"] = round(results[m]["cpu_ms"] / results["unfiltered"]["cpu_ms"], 3)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"{chunks:,} chunks in {PROJECTS} projects, {len(queries)} queries, Memory.search k=10 without query embedding"
    )
    print("| mode | p50 ms | p99 ms | CPU ms/query |\n|---|---|---|---|")
    for m in modes:
        r = results[m]
        print(f"| {m} | {r['p50_ms']} | {r['p99_ms']} | {r['cpu_ms']} |")
    print(
        f"CPU ratio vs unfiltered: project {results['project_vs_unfiltered_cpu']}, branch {results['branch_vs_unfiltered_cpu']}"
    )


if __name__ == "__main__":
    main()
