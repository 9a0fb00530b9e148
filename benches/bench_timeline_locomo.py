"""LoCoMo with each session's turns as a daily: recall with the hierarchy off and on (issue 24).

Every session of a conversation becomes ``DailyActivity/<its date>.md`` (two sessions on one
day share the file), each turn an entry ``## HH:MM | D3:7 Caroline`` at the session's time plus
one minute per turn. The conversation's brain is indexed (``Memory.index``), its questions asked
(``Memory.search``, k = 10), then ``compact`` runs (offline engine, today = 30 days after the
last session) and the questions are asked again with the summaries indexed, ranked on their own
(``naive``) and through the hierarchy (``on``). Turn-level evidence recall@10 (share of gold
turns found) and recall_any@5 are reported; ``summary_above_evidence`` counts questions where a
summary ranks above the first gold turn (or is there with none in the ten). With ``--dream`` an offline
``dream`` run follows (its entity pages cite the dailies naming a speaker, a place, a book) and the
questions are asked again (``on_wiki``, and ``on_wiki_naive`` with pages ranked on their own), once per
``--wiki-weights`` value (the weight of a page none of whose cited entries matches). LoCoMo sessions are days to weeks
apart, so few weeks hold the three dailies a weekly needs: ``--min-dailies 1`` also compacts
thin weeks, to load the hierarchy harder. Tune on dev only::

    nice -n 10 .venv/bin/python benches/bench_timeline_locomo.py --split dev --embed local [--min-dailies 1] [--dream --wiki-weights 1.5,1.1,0.9,0.7,0.5]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import memlane
from memlane.bench.datasets import LOCOMO_SPLITS, load_locomo
from memlane.brain import Brain
from memlane.ranking import hierarchy as hierarchy_mod
from memlane.timeline import compact as compact_mod

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo10.json"
_DIA = re.compile(r"\bD\d+:\d+\b")


def write_dailies(sample: dict[str, Any], brain: Path) -> datetime:
    """The conversation's sessions as dailies; returns the last session's time."""
    conv = sample["conversation"]
    last = datetime(2000, 1, 1)
    clock: dict[str, datetime] = {}
    texts: dict[str, list[str]] = {}
    n = 1
    while f"session_{n}" in conv:
        when = datetime.strptime(
            conv[f"session_{n}_date_time"].replace("am", "AM").replace("pm", "PM"), "%I:%M %p on %d %B, %Y"
        )
        day = when.date().isoformat()
        t = max(when, clock.get(day, when))
        for turn in conv[f"session_{n}"]:
            text = " ".join(str(turn.get("text", "")).split())
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            texts.setdefault(day, [f"# {day}\n"]).append(
                f"\n## {min(t, t.replace(hour=23, minute=59)):%H:%M} | {turn['dia_id']} {turn['speaker']}\n{text}\n"
            )
            t += timedelta(minutes=1)
        clock[day] = t
        last = max(last, when)
        n += 1
    for day, parts in texts.items():
        path = brain / "DailyActivity" / f"{day}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(parts), encoding="utf-8")
    return last


def _scores(mem: Any, questions: list[Any], hierarchy: bool) -> dict[str, Any]:
    recall10, any5, buried, n = 0.0, 0, 0, 0
    for q in questions:
        if q.skip_reason("turn") or not q.gold_turns:
            continue
        n += 1
        hits = mem.search(q.text, k=10, hierarchy=hierarchy)
        ids = [set(_DIA.findall(h.heading)) if h.source == "knowledge" else set() for h in hits]
        found = set().union(*ids) if ids else set()
        recall10 += len(found & q.gold_turns) / len(q.gold_turns)
        any5 += bool(set().union(*ids[:5]) & q.gold_turns) if ids else False
        first_gold = next((i for i, s in enumerate(ids) if s & q.gold_turns), len(hits))
        buried += any(h.source == "summary" for h in hits[:first_gold])
    return {
        "questions": n,
        "evidence_recall@10": round(recall10 / max(n, 1), 4),
        "recall_any@5": round(any5 / max(n, 1), 4),
        "summary_above_evidence": buried,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev", choices=["dev", "test"])
    parser.add_argument("--embed", default="local")
    parser.add_argument(
        "--min-dailies",
        type=int,
        default=compact_mod.MIN_DAILIES,
        help="dailies a week needs for a weekly (default: the product's)",
    )
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--dream", action="store_true", help="also run dreaming (offline) and measure with the wiki")
    parser.add_argument(
        "--wiki-weights", default="", help="with --dream: comma-separated weights of an unmatched wiki page to sweep"
    )
    args = parser.parse_args(argv)
    compact_mod.MIN_DAILIES = args.min_dailies
    samples = json.loads(Path(args.data).read_text(encoding="utf-8"))
    dataset = load_locomo(args.data, args.split)
    parts = ["off", "naive", "on"] + (["on_wiki", "on_wiki_naive"] if args.dream else [])
    weights = [float(w) for w in args.wiki_weights.split(",") if w] if args.dream else []
    parts += [f"wiki_weight_{w}" for w in weights]
    totals: dict[str, list[dict[str, Any]]] = {part: [] for part in parts}
    summaries = pages = 0
    with tempfile.TemporaryDirectory(prefix="bench-locomo-daily-") as tmp:
        for i, conv in zip(LOCOMO_SPLITS[args.split], dataset.conversations):
            work = Path(tmp) / conv.cid
            brain_dir, home = work / "brain", work / "home"
            last = write_dailies(samples[i], brain_dir)
            mem = memlane.open(home, embedder=args.embed)
            mem.index([brain_dir], embed=args.embed != "none", format="markdown")
            totals["off"].append(_scores(mem, conv.questions, hierarchy=True))
            report = compact_mod.compact(
                mem, Brain(brain_dir, home=home), today=(last + timedelta(days=30)).date(), questions=[], force=True
            )
            summaries += len(report.summaries)
            totals["naive"].append(_scores(mem, conv.questions, hierarchy=False))
            totals["on"].append(_scores(mem, conv.questions, hierarchy=True))
            if args.dream:
                from memlane.timeline.dream import dream

                today = (last + timedelta(days=30)).date()
                pages += sum(
                    dream(mem, Brain(brain_dir, home=home), today=today, questions=[], force=True).counts().values()
                )
                totals["on_wiki"].append(_scores(mem, conv.questions, hierarchy=True))
                totals["on_wiki_naive"].append(_scores(mem, conv.questions, hierarchy=False))
                kept = hierarchy_mod.WIKI_WEIGHT
                try:
                    for w in weights:
                        hierarchy_mod.WIKI_WEIGHT = w
                        totals[f"wiki_weight_{w}"].append(_scores(mem, conv.questions, hierarchy=True))
                finally:
                    hierarchy_mod.WIKI_WEIGHT = kept
            print(
                json.dumps(
                    {
                        "conversation": conv.cid,
                        "summaries": len(report.summaries),
                        **{k: v[-1] for k, v in totals.items()},
                    }
                ),
                flush=True,
            )
            mem.close()
    out = {
        "split": args.split,
        "embed": args.embed,
        "min_dailies": args.min_dailies,
        "summaries": summaries,
        "wiki_operations": pages,
    }
    for part, rows in totals.items():
        n = sum(r["questions"] for r in rows)
        out[part] = {
            "questions": n,
            "evidence_recall@10": round(sum(r["evidence_recall@10"] * r["questions"] for r in rows) / max(n, 1), 4),
            "recall_any@5": round(sum(r["recall_any@5"] * r["questions"] for r in rows) / max(n, 1), 4),
            "summary_above_evidence": sum(r["summary_above_evidence"] for r in rows),
        }
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
