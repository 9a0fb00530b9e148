"""Do two builds answer the same? Dump every answer of one build, or compare two dumps.

A refactoring is proved by indexing the same sources with each build (an old checkout and its
extension on ``PYTHONPATH``, then the new one) and comparing what ``Memory.search`` returns:
ids, scores, relevance and supersession for every query, through the product's own pipeline.

    PYTHONPATH=/old/tree/python python benches/bench_same_answers.py dump before.json
    python benches/bench_same_answers.py dump after.json
    python benches/bench_same_answers.py compare before.json after.json

Sources: the shared real transcripts (every format), LoCoMo conversation 5 (held out from tuning)
and the reversal corpus (seed 11). Queries: LoCoMo conversation 5's questions and the reversal
corpus's and a few more, each asked of every home as a user asks and without the floor and the
time-aware reordering.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memlane

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _homes(src: Path) -> tuple[dict[str, list[tuple[Path, str | None]]], list[str]]:
    from reversal_corpus import FORMATS, write_corpus

    from memlane.bench.datasets import load_dataset

    written = write_corpus(src / "reversal", seed=11)
    conv = load_dataset("locomo", SHARED / "locomo" / "locomo10.json", "test").conversations[0]
    locomo = src / "locomo"
    locomo.mkdir()
    homes = {
        "transcripts": [(SHARED / "transcripts", None)],
        "locomo5": [(conv.write(locomo), conv.fmt)],
        "reversal": [(src / "reversal" / fmt, fmt) for fmt in FORMATS],
    }
    queries = [q.text for q in conv.questions] + [q.text for q in written.queries]
    queries += ["what do we use now instead of the old one", "which test failed and why", "billing"]
    return homes, queries


def _answer(hit: memlane.Hit) -> list[object]:
    return [hit.id, hit.score, hit.relevance, hit.superseded_by, hit.source, hit.turn_start, hit.turn_end]


def dump(out: Path, embedder: str, k: int) -> int:
    if not (SHARED / "transcripts").is_dir():
        print(f"{SHARED} is missing: the shared data this proof reads", file=sys.stderr)
        return 1
    answers: dict[str, list[list[list[object]]]] = {}
    # One fixed folder: a note's chunk id is built from its path, so two builds compared must
    # index the same paths (ties rank by id).
    tmp = Path(tempfile.gettempdir()) / "memlane-same-answers"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        src = tmp / "src"
        src.mkdir()
        homes, queries = _homes(src)
        for name, folders in homes.items():
            with memlane.open(tmp / name, embedder=embedder) as mem:
                for path, fmt in folders:
                    mem.index([path], format=fmt, embed=embedder != "none")
                answers[name] = [[_answer(h) for h in mem.search(q, k=k)] for q in queries]
                plain = dict(recency=False, temporal=False, hierarchy=False, threshold=0.0)
                answers[name + "/plain"] = [[_answer(h) for h in mem.search(q, k=k, **plain)] for q in queries]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out.write_text(json.dumps({"queries": queries, "answers": answers}))
    print(f"{sum(len(a) for a in answers.values())} answers from {memlane.__file__} -> {out}")
    return 0


def compare(a: Path, b: Path) -> int:
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    differ = 0
    for name in sorted(set(left["answers"]) | set(right["answers"])):
        la, ra = left["answers"].get(name, []), right["answers"].get(name, [])
        bad = [i for i in range(max(len(la), len(ra))) if i >= len(la) or i >= len(ra) or la[i] != ra[i]]
        differ += len(bad)
        print(
            f"{name}: {len(la)} queries, {len(bad)} differ" + (f" (first: {left['queries'][bad[0]]!r})" if bad else "")
        )
    print(f"total: {differ} differ")
    return 1 if differ else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--embedder", default="local")
    d.add_argument("--k", type=int, default=10)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args()
    return dump(args.out, args.embedder, args.k) if args.cmd == "dump" else compare(args.a, args.b)


if __name__ == "__main__":
    raise SystemExit(main())
