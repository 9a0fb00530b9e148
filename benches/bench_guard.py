"""MemoryGuard on the held-out corpus (benches/guard_corpus.py): block rate, pass rate, cost.

Every text goes through the product's own check, ``MemoryGuard.scan`` (what every brain
write runs), and a secret note also through ``Brain.add`` (refused, nothing written). Reports:

* attacks blocked, overall and per family, and whether the rule that fired is of the
  attack's family;
* ordinary engineering notes that pass (each false positive is listed with its rule);
* notes holding a secret that are refused, with the kind named;
* the cost of a scan per note and of screening a MEMORY.md made of every note (CPU time);
* the cost of masking secrets (what recall, hooks, MCP and the CLI pay on every output): CPU
  µs per KB over the real transcripts in ../shared/data/transcripts when present (chunked by
  the product), else over the notes, and what a fresh process pays once (import, patterns).

Run: ``python benches/bench_guard.py`` (``--json`` for one JSON document).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from guard_corpus import ATTACKS, NOTES, SECRET_NOTES

from memlane.brain import Brain, MemoryGuard, MemoryGuardError


def evaluate() -> dict:
    """Block, pass and refusal rates on the corpus, with every miss and false positive."""
    guard = MemoryGuard()
    missed, wrong_family, per_family = [], [], Counter()
    for family, text in ATTACKS:
        rules = [f.rule for f in guard.scan(text)]
        if not rules:
            missed.append({"family": family, "text": text})
            continue
        per_family[family] += 1
        if family not in {r.split(".", 1)[0] for r in rules}:
            wrong_family.append({"family": family, "rules": rules, "text": text})
    flagged = [{"text": t, "rules": [f.rule for f in guard.scan(t)]} for t in NOTES if guard.scan(t)]
    refused, not_refused = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        brain = Brain(Path(tmp) / "brain", home=Path(tmp) / "home")
        for kind, text in SECRET_NOTES:
            try:
                brain.add("kd", text, on="2026-04-01")
                not_refused.append({"kind": kind, "text": text[:40]})
            except MemoryGuardError as err:
                refused += err.rule == f"secret.{kind}"
    families = Counter(f for f, _ in ATTACKS)
    return {
        "attacks": len(ATTACKS),
        "blocked": len(ATTACKS) - len(missed),
        "block_rate": round(1 - len(missed) / len(ATTACKS), 4),
        "blocked_by_family": {f: f"{per_family[f]}/{n}" for f, n in sorted(families.items())},
        "missed": missed,
        "blocked_under_another_family": wrong_family,
        "notes": len(NOTES),
        "passed": len(NOTES) - len(flagged),
        "pass_rate": round(1 - len(flagged) / len(NOTES), 4),
        "false_positives": flagged,
        "secret_notes": len(SECRET_NOTES),
        "secrets_refused_with_their_kind": refused,
        "secrets_not_refused": not_refused,
    }


def cost() -> dict:
    """CPU milliseconds: one scan per note (a write), and screening a MEMORY.md of every note (a read)."""
    guard = MemoryGuard()
    texts = [t for _, t in ATTACKS] + NOTES
    for t in texts:  # compile the patterns, load the homoglyph table
        guard.scan(t)
    start = time.process_time()
    for _ in range(5):
        for t in texts:
            guard.scan(t)
    per_scan = (time.process_time() - start) / (5 * len(texts)) * 1000
    memory = "".join(
        f"- [LL{i:02d}] 2026-04-01 — {n}\n  <!-- valid_from: 2026-04-01 -->\n" for i, n in enumerate(NOTES)
    )
    start = time.process_time()
    for _ in range(5):
        MemoryGuard().withheld(memory)
    screen = (time.process_time() - start) / 5 * 1000
    return {
        "scan_cpu_ms_per_text": round(per_scan, 3),
        "memory_md_bytes": len(memory.encode()),
        "screen_memory_md_cpu_ms": round(screen, 1),
        **mask_cost(),
    }


def mask_cost() -> dict:
    """CPU µs per KB of :func:`memlane.secrets.mask_many` on recall-sized batches, and a fresh process's one-time cost."""
    from memlane import _core, secrets

    shared = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts"
    texts = []
    for path in sorted(shared.rglob("*")) if shared.is_dir() else []:
        try:
            texts += [c["text"] for c in _core.chunk_file(path)]
        except (OSError, ValueError):
            continue  # README, provenance notes: not transcripts
    source = "shared transcripts" if texts else "corpus notes"
    texts = texts or NOTES * 20
    batches = [texts[i : i + 50] for i in range(0, len(texts), 50)]  # recall's median: 50 items
    size = sum(len(t.encode()) for t in texts) / 1000
    secrets.mask("warm")
    start = time.process_time()
    for _ in range(3):
        for batch in batches:
            secrets.mask_many(batch)
    per_kb = (time.process_time() - start) / 3 / size * 1e6
    once = subprocess.run([sys.executable, "-c", ONE_TIME], capture_output=True, text=True, check=True).stdout
    return {"mask_source": f"{source}, {size:,.0f} KB", "mask_cpu_us_per_kb": round(per_kb, 1), **json.loads(once)}


ONE_TIME = """
import json, time
import memlane
t = time.process_time(); from memlane import secrets; imported = time.process_time() - t
t = time.process_time(); secrets.mask("x"); compiled = time.process_time() - t
print(json.dumps({"mask_import_cpu_ms": round(imported * 1000, 2), "mask_compile_cpu_ms": round(compiled * 1000, 2)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    result = {**evaluate(), **cost()}
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    print(
        f"attacks blocked: {result['blocked']}/{result['attacks']} ({result['block_rate']:.1%}); by family {result['blocked_by_family']}"
    )
    for m in result["missed"]:
        print(f"  missed [{m['family']}] {m['text'][:100]!r}")
    for w in result["blocked_under_another_family"]:
        print(f"  blocked as {w['rules']} (expected {w['family']}): {w['text'][:80]!r}")
    print(f"ordinary notes passed: {result['passed']}/{result['notes']} ({result['pass_rate']:.1%})")
    for f in result["false_positives"]:
        print(f"  flagged {f['rules']}: {f['text'][:100]!r}")
    print(
        f"notes with a secret refused, kind named: {result['secrets_refused_with_their_kind']}/{result['secret_notes']}"
    )
    for n in result["secrets_not_refused"]:
        print(f"  not refused [{n['kind']}]")
    print(
        f"cost: {result['scan_cpu_ms_per_text']} CPU ms per scan; screening a {result['memory_md_bytes']:,}-byte MEMORY.md "
        f"of every note: {result['screen_memory_md_cpu_ms']} CPU ms (then remembered per content hash)"
    )
    print(
        f"masking: {result['mask_cpu_us_per_kb']} CPU µs per KB ({result['mask_source']}); once per process: import "
        f"{result['mask_import_cpu_ms']} ms, patterns {result['mask_compile_cpu_ms']} ms"
    )


if __name__ == "__main__":
    main()
