"""The injection audit's size: bytes per injected item, and the log against its cap.

1. A generated home (benches/archive.py, plus a brain of generated MEMORY.md entries) answers
   realistic injections through the product paths: the first-prompt hook
   (``hooks.user_prompt_submit``, transcripts only, about 8 items in its 2,375-token budget) and
   the MCP ``recall`` tool (``MemoryTools.recall``, 4,000 tokens, brain entries too), queries of
   2–6 archive words. Measured from ``injections.jsonl``: each item's bytes (its JSON object,
   with the comma between items) and each record's bytes divided by its items (the per-injection
   fields, the masked query among them, shared out), mean and max; and the largest item that can
   be written (a 32-hex key, every part present with four decimals, a five-digit token count).
2. The records of step 1, appended again in turn through ``memlane.audit.record`` until
   ``--appends`` (20,000) injections were written: the files' sizes at the end against the cap
   (``memlane.audit.MAX_BYTES``, or ``$MEMLANE_INJECTIONS_MAX_BYTES``), and the time of an
   append and of a viewer's reads (``Injections``: the first read of the whole log, a read after
   one more append, a page filtered by key).

Run: `python benches/bench_injections.py` (defaults: 80 files × 30 exchanges, 200 injections,
20,000 appends). Prints one JSON document.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from archive import generate, words
from bench_recall import fill_brain

import memlane
from memlane import audit
from memlane.agents import hooks
from memlane.agents.mcp import MemoryTools


def item_bytes(record: dict) -> list[int]:
    """Each item's bytes in the record's line: its JSON object and the separator after it."""
    return [len(json.dumps(i, ensure_ascii=False).encode()) + 2 for i in record["items"]]


def stats(values: list[float]) -> dict[str, float]:
    return {"mean": round(statistics.fmean(values), 1), "max": round(max(values), 1), "n": len(values)}


def ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return round((time.perf_counter() - start) * 1000, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=80)
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--brain", type=int, default=40, help="MEMORY.md entries")
    ap.add_argument("--injections", type=int, default=200, help="realistic injections (half hook, half MCP)")
    ap.add_argument("--appends", type=int, default=20_000, help="injections in the log at the end")
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="memlane-bench-injections-"))
    home, archive = root / "home", root / "archive"
    generate(archive, args.files, args.pairs)
    rng = random.Random(11)
    started = time.perf_counter()
    with memlane.open(home, embedder="none") as mem:
        mem.index([archive], embed=False)
        chunks = mem.status()["chunks"]
    fill_brain(home, args.brain, rng)
    build_s = time.perf_counter() - started

    tools = MemoryTools(home, embedder="none")
    for n in range(args.injections):
        query = " ".join(words(rng, rng.randint(2, 6)))
        if n % 2:
            tools.recall(query)
        else:
            hooks.user_prompt_submit(home, {"session_id": f"bench-{n}", "prompt": query})
    records = audit.Injections(home).records(limit=args.injections)
    items = [b for r in records for b in item_bytes(r)]
    line_bytes = [len(json.dumps(r, ensure_ascii=False).encode()) + 1 for r in records]
    shared = [b / len(r["items"]) for r, b in zip(records, line_bytes) if r["items"]]
    widest = {
        "key": "f" * 32,
        "src": "transcript",
        "rank": 200,
        "rel": 0.1234,
        "bm25": 0.1234,
        "vec": -0.1234,
        "cov": 0.1234,
        "kw": 0.1234,
        "tok": 99_999,
    }

    # Step 2: the same records again until the log has seen --appends injections.
    log_path = home / audit.INJECTIONS_NAME
    append_ms = []
    for n in range(args.appends - len(records)):
        r = records[n % len(records)]
        fields = {k: r[k] for k in ("client", "session", "event", "project", "query", "tokens", "items")}
        start = time.perf_counter()
        audit.record(home, **fields)
        append_ms.append((time.perf_counter() - start) * 1000)
    files = {p.name: p.stat().st_size for p in sorted(home.glob(audit.INJECTIONS_NAME + "*")) if p.suffix != ".lock"}
    reader = audit.Injections(home)
    first_ms = ms(reader.records)
    kept = reader.count()
    r = records[0]
    audit.record(home, **{k: r[k] for k in ("client", "session", "event", "project", "query", "tokens", "items")})
    again_ms = ms(reader.records)
    key = records[0]["items"][0]["key"]
    by_key_ms = ms(lambda: reader.records(key=key))

    print(
        json.dumps(
            {
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                "home": {"chunks": chunks, "brain_entries": args.brain, "build_s": round(build_s, 1)},
                "injections_measured": len(records),
                "items_per_injection": {
                    client: stats([len(r["items"]) for r in records if r["client"] == client])
                    for client in sorted({r["client"] for r in records})
                },
                "item_bytes": stats(items),
                "record_bytes_per_item": stats(shared),
                "widest_item_bytes": len(json.dumps(widest).encode()) + 2,
                "appends": args.appends,
                "append_ms": {"p50": round(statistics.median(append_ms), 3), "max": round(max(append_ms), 3)},
                "cap_bytes": audit.max_bytes(),
                "files_bytes": files,
                "total_bytes": sum(files.values()),
                "largest_file_under_cap": max(files.values()) <= audit.max_bytes(),
                "injections_kept": kept,
                "reader_ms": {"first_read": first_ms, "after_one_append": again_ms, "filter_by_key": by_key_ms},
                "log": str(log_path),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
