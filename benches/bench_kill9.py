"""Crash safety under kill -9: index, kill the indexer at a random moment, check the home.

Each round starts ``memlane index`` on a generated archive (keyword index and local-free fake
vectors are not used: ``--embed none``), waits a random time, kills it with SIGKILL, then
checks that the home opens, ``verify`` finds no problem (notes such as chunks left by the
interrupted run are allowed) and a search answers. After the last round an undisturbed
index run completes the home, whose chunk ids must equal a clean build's.

Usage (from the repository root, after ``make install``):

    .venv/bin/python benches/bench_kill9.py --rounds 20 --files 300
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import memlane


def write_archive(root: Path, files: int, pairs: int, seed: int) -> None:
    rng = random.Random(seed)
    words = [
        "deploy",
        "billing",
        "postgres",
        "cache",
        "worker",
        "queue",
        "timeout",
        "retry",
        "shard",
        "replica",
        "ledger",
        "invoice",
    ]
    for f in range(files):
        lines = []
        for p in range(pairs):
            q = " ".join(rng.choice(words) for _ in range(12))
            a = " ".join(rng.choice(words) for _ in range(80))
            lines.append(json.dumps({"role": "user", "content": f"q{f}-{p} {q}", "session_id": f"s{f}"}))
            lines.append(json.dumps({"role": "assistant", "content": f"a{f}-{p} {a}", "session_id": f"s{f}"}))
        (root / f"s{f:05d}.jsonl").write_text("\n".join(lines) + "\n")


def chunk_ids(home: Path) -> set[int]:
    manifest = json.loads((home / "manifest.json").read_text())
    return {k for e in manifest["files"].values() for k in e["keys"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-delay", type=float, default=3.0, help="kill within this many seconds of the start")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="memlane-kill9-"))
    src, home, clean = work / "src", work / "home", work / "clean"
    src.mkdir()
    write_archive(src, args.files, args.pairs, args.seed)
    memlane_cli = [sys.executable, "-m", "memlane.cli"]
    failed_opens = unsound = killed = 0
    for n in range(args.rounds):
        proc = subprocess.Popen(
            [*memlane_cli, "--home", str(home), "index", str(src), "--embed", "none"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.05, args.max_delay))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
        try:
            mem = memlane.open(home, embedder="none")
            report = mem.verify()
            mem.search("billing postgres replica")
        except Exception as exc:
            failed_opens += 1
            print(f"round {n}: home does not open: {exc}")
            continue
        problems = [f for f in report["findings"] if f["severity"] == "problem"]
        if problems:
            unsound += 1
            print(f"round {n}: unsound: {problems}")
        # Every few rounds new bytes arrive, as in a live archive.
        if n % 5 == 4:
            write_archive(src, args.files + n, args.pairs, args.seed)
    subprocess.run(
        [*memlane_cli, "--home", str(home), "index", str(src), "--embed", "none"], check=True, stdout=subprocess.DEVNULL
    )
    subprocess.run(
        [*memlane_cli, "--home", str(clean), "index", str(src), "--embed", "none"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    same = chunk_ids(home) == chunk_ids(clean)
    print(
        json.dumps(
            {
                "rounds": args.rounds,
                "killed": killed,
                "failed_opens": failed_opens,
                "unsound_after_kill": unsound,
                "identical_to_clean_build": same,
            }
        )
    )
    shutil.rmtree(work, ignore_errors=True)
    return 0 if failed_opens == 0 and unsound == 0 and same else 1


if __name__ == "__main__":
    sys.exit(main())
