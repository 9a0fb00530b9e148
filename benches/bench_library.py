"""Speed of the knowledge library (markdown notes) through the product pipeline, embedding off.

Generates a library of DailyActivity journals (`## HH:MM | topic` entries), design notes
(frontmatter, `#`/`##` sections, code blocks) and signal lists, then measures with
`Memory.index` (scan → parse → section chunks → tantivy → manifest):
  * the full first index;
  * a sync with nothing changed;
  * a sync after editing 1–3 files (an entry appended to today's journal, a section edited in
    a note, sometimes a note deleted or a new one added) — p50 / p90 over repeats.

The issue's target: a typical session's sync (1–3 changed files) well under a second,
excluding embedding.

Run: `python benches/bench_library.py --files 2000 --repeats 30`. Results print as a markdown
table and are saved to bench-results/library.json.
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
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from archive import FILES, _paragraph, words

import memlane


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def daily_entry(rng: random.Random, hour: int, minute: int) -> str:
    topic = " ".join(words(rng, rng.randint(2, 5)))
    bullets = [
        f"- **Done:** {_paragraph(rng, 1)}",
        f"- **Decisions:** {_paragraph(rng, 1)}",
        f"- **Files:** `{rng.choice(FILES)}`",
    ]
    return f"## {hour:02d}:{minute:02d} | {topic}\n" + "\n".join(bullets[: rng.randint(1, 3)]) + "\n"


def daily_note(rng: random.Random, day: date) -> str:
    times = sorted({(rng.randint(7, 22), rng.choice((0, 15, 30, 45))) for _ in range(rng.randint(2, 7))})
    return f"# {day.isoformat()}\n\n" + "\n".join(daily_entry(rng, h, m) for h, m in times)


def design_note(rng: random.Random, n: int) -> str:
    tags = ", ".join(words(rng, 2))
    out = [
        f"---\ntitle: Design {n}\ndate: 2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}\ntags: [{tags}]\n---\n# Design {n}\n",
        _paragraph(rng, 2),
        "",
    ]
    for _ in range(rng.randint(3, 9)):
        out.append(f"## {' '.join(words(rng, rng.randint(1, 4))).capitalize()}")
        for _ in range(rng.randint(1, 4)):
            out += [_paragraph(rng, rng.randint(1, 5)), ""]
        if rng.random() < 0.3:
            out += ["```bash", f"## not a heading: {rng.choice(FILES)}", "make test", "```", ""]
    return "\n".join(out)


def signal_note(rng: random.Random) -> str:
    start = date(2026, 1, 1)
    items = [
        f"- {(start + timedelta(days=rng.randint(0, 300))).isoformat()} {' '.join(words(rng, rng.randint(6, 20)))}"
        for _ in range(rng.randint(10, 40))
    ]
    return "# Signals\n\n" + "\n".join(sorted(items)) + "\n"


def generate(root: Path, files: int, seed: int = 5) -> int:
    """About half journals, 45% design notes, 5% signal lists; returns bytes written."""
    rng = random.Random(seed)
    size = 0
    dailies = files // 2
    signals = max(1, files // 20)
    day0 = date(2021, 1, 1)
    for i in range(files):
        if i < dailies:
            day = day0 + timedelta(days=i)
            path, text = root / "DailyActivity" / f"{day.isoformat()}.md", daily_note(rng, day)
        elif i < dailies + signals:
            path, text = root / "signals" / f"signals-{i}.md", signal_note(rng)
        else:
            path, text = root / "notes" / f"design-{i}.md", design_note(rng, i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        size += len(text.encode())
    (root / "MEMORY.md").write_text("# MEMORY\n\n## Key decisions\n")  # the brain's: skipped
    return size


def session_edits(rng: random.Random, root: Path, round_: int) -> int:
    """What a working session does to a library: 1–3 files changed; returns how many."""
    dailies = sorted((root / "DailyActivity").glob("*.md"))
    notes = sorted((root / "notes").glob("*.md"))
    changed = rng.randint(1, 3)
    today = dailies[-1]
    with today.open("a") as f:
        f.write("\n" + daily_entry(rng, 23, round_ % 60))
    for _ in range(changed - 1):
        action = rng.random()
        if action < 0.7:
            note = rng.choice(notes)
            text = note.read_text()
            cut = text.find("\n## ", rng.randrange(len(text)))
            note.write_text(
                text[:cut] + f"\nEdited in round {round_}: {_paragraph(rng, 1)}\n" + text[cut:]
                if cut > 0
                else text + "\nEdited.\n"
            )
        elif action < 0.85:
            rng.choice(notes).unlink()
            notes = sorted((root / "notes").glob("*.md"))
        else:
            (root / "notes" / f"new-{round_}.md").write_text(design_note(rng, 10_000 + round_))
    return changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=30, help="sessions of 1-3 edits, each followed by a sync")
    ap.add_argument("--workdir", type=Path, default=None, help="where to generate (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=Path("bench-results/library.json"))
    args = ap.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="memlane-library-bench-"))
    library, home = work / "library", work / "home"
    size = generate(library, args.files)
    print(f"generated {args.files} markdown files, {size / 1e6:.1f} MB at {work}", file=sys.stderr)

    mem = memlane.open(home, embedder="none")
    first = mem.index([library], embed=False)
    status = mem.status()
    noop = [mem.index([library], embed=False).seconds for _ in range(5)]

    rng = random.Random(17)
    syncs, changed = [], []
    for r in range(args.repeats):
        changed.append(session_edits(rng, library, r))
        report = mem.index([library], embed=False)
        assert report.files_indexed + report.files_removed >= 1, report
        syncs.append(report.seconds)

    results = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "files": first.files_seen,
        "library_mb": round(size / 1e6, 1),
        "chunks": status["chunks"],
        "full_index_s": round(first.seconds, 3),
        "full_index_mb_per_s": round(first.bytes_parsed / 1e6 / first.keyword_seconds, 1),
        "noop_sync_ms_median": round(statistics.median(noop) * 1000, 1),
        "session_sync_ms_p50": round(pct(syncs, 0.5) * 1000, 1),
        "session_sync_ms_p90": round(pct(syncs, 0.9) * 1000, 1),
        "session_sync_files_changed_mean": round(statistics.mean(changed), 2),
        "repeats": args.repeats,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(
        f"\n{results['machine']}; {results['files']} files, {results['library_mb']} MB, {results['chunks']} chunks, embedding off\n"
    )
    print("| stage | measured | target |\n|---|---|---|")
    print(
        f"| full index ({results['files']} files) | {results['full_index_s']} s ({results['full_index_mb_per_s']} MB/s) | — |"
    )
    print(f"| sync, nothing changed | {results['noop_sync_ms_median']} ms median | — |")
    print(
        f"| sync after a session (1–3 files changed, {args.repeats} repeats) | p50 {results['session_sync_ms_p50']} ms (p90 {results['session_sync_ms_p90']}) | well under 1 s |"
    )


if __name__ == "__main__":
    main()
