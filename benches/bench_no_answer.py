"""How often recall injects something when memory has no answer, through Memory.index → Memory.recall.

Asks the no-answer set (:mod:`no_answer`) of three archives, each indexed into a fresh home
with the real embedder (default ``local``):

* ``locomo-dev`` — LoCoMo conversations 0–4 (the tuning split) in one home; off-topic questions
  and unknown people (``personal``); also every answerable LoCoMo dev question, to count how
  often recall wrongly comes back empty;
* ``transcripts`` — the real coding-agent samples in ``../shared/data/transcripts``; off-topic
  questions and unknown services (``engineering``);
* ``reversal`` — the reversal corpus (``reversal_corpus.py``, seed 11); the same.

A question counts as *injected* when :meth:`memlane.Memory.recall` returns a non-empty block
(the brain is empty, so anything in it came from the search). Reported per archive, kind
(``off_topic``, ``unknown_entity``) and part (``tune``: looked at while choosing the floor, on
LoCoMo dev only; ``heldout``: never).

    python benches/bench_no_answer.py [--corpus locomo-dev|transcripts|reversal]... [--embedder local]
                                      [--data ../shared/data] [--json] [--verbose]

``--verbose`` prints the best hit of every injected tune-part question with its relevance
(never the held-out ones).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from no_answer import PARTS, Question, questions

import memlane
from memlane.bench.datasets import load_dataset

CORPORA = ("locomo-dev", "transcripts", "reversal")
DOMAIN = {"locomo-dev": "personal", "transcripts": "engineering", "reversal": "engineering"}


@contextmanager
def home_of(corpus: str, data: Path, embedder: str) -> Iterator[tuple[memlane.Memory, list[str]]]:
    """A fresh home holding ``corpus``, and its answerable questions (LoCoMo dev only)."""
    with tempfile.TemporaryDirectory(prefix=f"memlane-noanswer-{corpus}-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        answerable: list[str] = []
        with memlane.open(Path(tmp) / "home", embedder=embedder) as mem:
            embed = embedder != "none"
            if corpus == "locomo-dev":
                dataset = load_dataset("locomo", data / "locomo" / "locomo10.json", "dev")
                for conv in dataset.conversations:
                    mem.index([conv.write(src)], embed=embed, format=conv.fmt)
                    answerable += [q.text for q in conv.questions]
            elif corpus == "transcripts":
                folder = data / "transcripts"
                if not folder.is_dir():
                    raise SystemExit(f"{folder} is missing: pass --data DIR (the shared evaluation data)")
                mem.index([folder], embed=embed)
            else:
                from reversal_corpus import FORMATS, write_corpus

                write_corpus(src, seed=11)
                for fmt in FORMATS:
                    mem.index([src / fmt], format=fmt, embed=embed)
            yield mem, answerable


def _rate(flags: list[bool]) -> dict[str, float]:
    return {"questions": len(flags), "count": sum(flags), "rate": round(sum(flags) / max(len(flags), 1), 4)}


def run(corpus: str, data: Path, embedder: str, verbose: bool = False) -> dict[str, Any]:
    """Index one archive and ask it every no-answer question (and LoCoMo's answerable ones)."""
    asked = questions("off_topic") + questions("unknown_entity", DOMAIN[corpus])
    with home_of(corpus, data, embedder) as (mem, answerable):
        chunks = mem.status()["chunks"]
        flags: dict[tuple[str, str], list[bool]] = {}
        for q in asked:
            injected = bool(mem.recall(q.text))
            flags.setdefault((q.kind, q.part), []).append(injected)
            if verbose and injected and q.part == "tune":
                _explain(mem, q)
        empty = [not mem.recall(text) for text in answerable]
    result: dict[str, Any] = {"corpus": corpus, "embedder": embedder, "chunks": chunks, "no_answer": {}}
    for kind in ("off_topic", "unknown_entity"):
        result["no_answer"][kind] = {part: _rate(flags.get((kind, part), [])) for part in PARTS}
        result["no_answer"][kind]["all"] = _rate([f for part in PARTS for f in flags.get((kind, part), [])])
    if answerable:
        result["answerable_empty"] = _rate(empty)
    return result


def _explain(mem: memlane.Memory, q: Question) -> None:
    hits = mem.search(q.text, k=1, sources=["transcript", "knowledge"])
    best = hits[0] if hits else None
    detail = (
        f"relevance {best.relevance:.3f} {best.scores} {' '.join(best.text.split())[:100]!r}"
        if best
        else "(brain only)"
    )
    print(f"[{q.kind}] {q.text} → {detail}", file=sys.stderr)


def main() -> int:
    """Command line entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", action="append", choices=CORPORA, help="archive to ask (repeatable; default: all three)")
    p.add_argument("--embedder", default="local")
    p.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    p.add_argument("--json", action="store_true")
    p.add_argument("--verbose", action="store_true", help="print the best hit of each injected tune-part question")
    args = p.parse_args()
    results = [run(c, args.data, args.embedder, args.verbose) for c in args.corpus or CORPORA]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"no-answer questions for which recall injects anything (embedder {args.embedder})")
    print(
        "| archive | chunks | off-topic tune / held-out / all | unknown entity tune / held-out / all | answerable → empty |"
    )
    print("|---|---:|---:|---:|---:|")
    for r in results:
        cells = []
        for kind in ("off_topic", "unknown_entity"):
            by = r["no_answer"][kind]
            cells.append(
                " / ".join(f"{by[part]['count']}/{by[part]['questions']}" for part in (*PARTS, "all"))
                + f" ({100 * by['all']['rate']:.1f}%)"
            )
        empty = r.get("answerable_empty")
        tail = f"{empty['count']}/{empty['questions']} ({100 * empty['rate']:.1f}%)" if empty else "–"
        print(f"| {r['corpus']} | {r['chunks']} | {cells[0]} | {cells[1]} | {tail} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
