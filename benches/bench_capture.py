"""Capture (corrections, preferences, competences, failures) on the labelled set and on real transcripts.

Reports, for ``tests/fixtures/capture_labelled.jsonl`` (user turns written for memlane, each
labelled ``correction | preference | competence | failure | none``, split in half ``dev`` /
``heldout``): precision and recall of :func:`memlane.brain.capture.classify` per kind and split.
The detectors were tuned on ``dev`` only; ``heldout`` is the figure to quote (targets:
precision ≥ 0.9, recall ≥ 0.6). Misses and false alarms are listed for ``dev`` only, so that
reading the output never tunes on ``heldout``.

Then, when ``../shared/data/transcripts`` is present, every session the product reads there
goes through :func:`memlane.brain.capture.capture` (what distillation runs): the captures are
printed in full to be read for false positives, with the CPU time per user turn.

Run: ``python benches/bench_capture.py`` (``--json`` for one JSON document).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from memlane.brain.capture import KINDS, capture, classify, evaluate
from memlane.brain.distill import load_sessions

ROOT = Path(__file__).resolve().parent.parent
LABELLED = ROOT / "tests" / "fixtures" / "capture_labelled.jsonl"
TRANSCRIPTS = ROOT.parent / "shared" / "data" / "transcripts"


def labelled() -> dict:
    """Precision and recall per split and kind, with dev's errors."""
    rows = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: dict = {"rows": len(rows), "splits": {}}
    for split in ("dev", "heldout"):
        part = [r for r in rows if r["split"] == split]
        out["splits"][split] = {"rows": len(part), "scores": evaluate(part)}
    out["dev_errors"] = [
        {"label": r["label"], "got": got, "text": r["text"]}
        for r in rows
        if r["split"] == "dev" and (got := classify(r["text"])) != r["label"]
    ]
    return out


def real() -> dict | None:
    """Captures over every real session the parser reads, or ``None`` without the data."""
    if not TRANSCRIPTS.is_dir():
        return None
    files = sessions = user_turns = 0
    found: list[dict] = []
    cpu = 0.0
    for path in sorted(TRANSCRIPTS.rglob("*")):
        if not path.is_file() or path.name == "PROVENANCE.md":
            continue
        try:
            parsed = load_sessions(path)
        except ValueError:
            continue  # a format the parser does not read
        files += 1
        for s in parsed:
            sessions += 1
            user_turns += sum(t["role"] == "user" for t in s.turns)
            start = time.process_time()
            caps = capture(s.turns)
            cpu += time.process_time() - start
            found += [
                {
                    "path": str(path.relative_to(TRANSCRIPTS)),
                    "session": s.id,
                    "kind": c.kind,
                    "turns": list(c.turns),
                    "text": c.text,
                }
                for c in caps
            ]
    return {
        "files": files,
        "sessions": sessions,
        "user_turns": user_turns,
        "captures": len(found),
        "cpu_us_per_user_turn": round(cpu / max(user_turns, 1) * 1e6, 1),
        "found": found,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    report = {"labelled": labelled(), "real": real()}
    if args.json:
        json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
        print()
        return
    lab = report["labelled"]
    print(f"labelled set: {lab['rows']} user turns ({LABELLED.relative_to(ROOT)})")
    print(f"{'split':<8} {'kind':<11} {'precision':>9} {'recall':>7} {'support':>7} {'predicted':>9}")
    for split, part in lab["splits"].items():
        for kind in (*KINDS, "all"):
            s = part["scores"][kind]
            print(
                f"{split:<8} {kind:<11} {s['precision']:>9.3f} {s['recall']:>7.3f} {s['support']:>7} {s['predicted']:>9}"
            )
    for e in lab["dev_errors"]:
        print(f"  dev {e['label']} → {e['got']}: {e['text']!r}")
    live = report["real"]
    if live is None:
        print(f"real transcripts: skipped ({TRANSCRIPTS} not found)")
        return
    print(
        f"real transcripts: {live['files']} files, {live['sessions']} sessions, {live['user_turns']} user turns → "
        f"{live['captures']} captures ({live['cpu_us_per_user_turn']} CPU µs per user turn)"
    )
    for c in live["found"]:
        print(f"  {c['kind']:<11} {c['path']} turns {c['turns'][0]}-{c['turns'][1]}: {c['text']}")


if __name__ == "__main__":
    main()
