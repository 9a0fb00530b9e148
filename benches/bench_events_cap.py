"""The events log stays under its cap however large the prompts: N first-prompt hooks, each with
a pasted prompt of M MB, run in process (``memlane.agents.hooks.main``, the payload on stdin as a
client sends it) against a home of the shared transcripts (or an empty one without them).

Run: `python benches/bench_events_cap.py` (defaults: 10,000 calls of 1 MB). Prints the size of
``events.jsonl`` and its rotated generations at the end, against ``memlane.events.MAX_LOG_BYTES``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import memlane
from memlane.agents import hooks
from memlane.events import MAX_LOG_BYTES, EventLog

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--mb", type=float, default=1.0, help="size of each prompt in MB")
    args = ap.parse_args()

    home = Path(tempfile.mkdtemp(prefix="memlane-events-cap-"))
    samples = REPO.parent / "shared" / "data" / "transcripts"
    if samples.is_dir():
        memlane.open(home, embedder="none").index([samples], embed=False)
    paste = (
        "the exporter got exit code 137 again, see the log: "
        + "ERROR worker-7 OOMKilled retry=3 batch=5000 " * int(args.mb * 1e6 / 45)
    )
    log = EventLog(home)
    largest = 0
    started = time.perf_counter()
    for n in range(args.calls):
        payload = json.dumps({"session_id": f"cap-{n}", "cwd": "/project", "prompt": paste}).encode()
        sys.stdin = io.TextIOWrapper(io.BytesIO(payload), encoding="utf-8")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            code = hooks.main(["claude-code", "user-prompt-submit", "--home", str(home)])
        if code != 0:
            raise SystemExit(f"call {n}: exit {code}: {err.getvalue().strip()}")
        largest = max(largest, log.path.stat().st_size)
        if n % 1000 == 999:
            print(
                f"{n + 1} calls, {time.perf_counter() - started:.0f} s, events.jsonl {log.path.stat().st_size / 2**20:.1f} MiB",
                file=sys.stderr,
            )
    sizes = {p.name: p.stat().st_size for p in log.generations()}
    print(
        json.dumps(
            {
                "calls": args.calls,
                "prompt_mb": args.mb,
                "cap_bytes": MAX_LOG_BYTES,
                "largest_events_jsonl_bytes": largest,
                "files": sizes,
                "events_kept": len(log.read()),
                "seconds": round(time.perf_counter() - started),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
