"""What the home's copies of transcripts cost (issue 39's target: <= 0.35 bytes of archive a byte
of JSONL), through `memlane index`: the shared transcripts indexed whole, then the largest of them
fed line by line in N appends with an index after each (a session the Stop hook indexes turn by
turn), and the no-change re-index time.

    .venv/bin/python benches/bench_archive.py [--appends 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import memlane

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts"


def ratio(home: Path) -> tuple[int, int]:
    s = memlane.open(home, embedder="none").status()
    return s["archived_bytes"], s["archive_disk_bytes"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=200)
    args = parser.parse_args()
    if not SHARED.is_dir():
        raise SystemExit(f"skipped: {SHARED} is missing (the shared transcripts)")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "whole"
        mem = memlane.open(home, embedder="none")
        mem.index([SHARED], embed=False)
        raw, disk = ratio(home)
        print(f"shared transcripts, indexed whole: {raw:,} B kept in {disk:,} B = {disk / raw:.3f} B a byte")
        times = []
        for _ in range(5):
            t = time.perf_counter()
            mem.index([SHARED], embed=False)
            times.append(time.perf_counter() - t)
        print(
            f"re-index, nothing changed: {min(times) * 1000:.1f} ms best of 5, {sorted(times)[2] * 1000:.1f} ms median"
        )

        largest = max((p for p in SHARED.rglob("*.jsonl")), key=lambda p: p.stat().st_size)
        lines = largest.read_bytes().splitlines(keepends=True)
        step = max(1, len(lines) // args.appends)
        src = Path(tmp) / "src" / largest.name
        src.parent.mkdir()
        home = Path(tmp) / "appended"
        mem = memlane.open(home, embedder="none")
        t = time.perf_counter()
        for i in range(0, len(lines), step):
            with src.open("ab") as f:
                f.write(b"".join(lines[i : i + step]))
            mem.index([src.parent], embed=False)
        raw, disk = ratio(home)
        runs = -(-len(lines) // step)
        print(
            f"{largest.name} ({largest.stat().st_size:,} B) in {runs} appends, indexed after each "
            f"({(time.perf_counter() - t) / runs * 1000:.1f} ms a run): {raw:,} B kept in {disk:,} B = {disk / raw:.3f} B a byte"
        )


if __name__ == "__main__":
    main()
