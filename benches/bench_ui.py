"""The viewer's page times (`memlane ui`), in the server, on a large home and on 10k sessions.

Each page is asked through the application itself (Starlette's test client, in process) and
timed by the ``Server-Timing`` header the viewer sends with every answer: the time from the
request reaching the app to its answer, rendering included (not the browser's). Reported per
page: the first answer after the viewer starts (``cold``: it builds the session catalog, runs
the health check; for the secrets page, the wall time until its report replaces the "scanning"
page) and the p50/p99 of ``--runs`` answers after it.

1. **The large home**: ``--home`` (e.g. the 161k-chunk home `benches/bench_pipeline.py --workdir
   DIR` leaves in DIR/home), else one generated here like bench_pipeline's (1,500 files × 70
   exchanges, keyword-only). Before timing, ``--injections`` recalls are recorded in its audit
   (the first-prompt hook's path: search, then ``memlane.audit.record``) and a brain of 200
   entries is written, so those pages have something to show. Searches run keyword-only (the
   bench home's vectors are random ones).
2. **10k sessions**: ``--sessions`` transcript files of 2 exchanges each, indexed keyword-only:
   the session list's first page, cold and warm, and a page deep in the list.

Run: `python benches/bench_ui.py --home /tmp/memlane-bench-XXXX/home` (or without --home: it
generates, ~3 min on 2 cores). Prints one JSON document; `--out` writes it too.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from archive import WORDS, generate
from starlette.testclient import TestClient

import memlane
from memlane import audit
from memlane.ui import create_app
from memlane.ui.guard import Access

QUERIES = ["billing database migration", "exit code 137 worker", "deploy rollback proxy timeout", "cache invalidation"]


def server_ms(response: Any) -> float:
    """The page's time in the server, from its ``Server-Timing`` header."""
    assert response.status_code == 200, (response.status_code, response.text[:300])
    return float(response.headers["server-timing"].split("dur=")[1])


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def time_pages(client: TestClient, pages: dict[str, list[str]], runs: int) -> dict[str, dict[str, float]]:
    """Per page: the first answer (cold), then p50/p99 over ``runs`` answers cycling its URLs."""
    out = {}
    for name, urls in pages.items():
        started = time.perf_counter()
        cold = server_ms(answer := client.get(urls[0]))
        if 'id="scanning"' in answer.text:  # the secrets scan runs on a thread: cold is the wait for its report
            while 'id="scanning"' in client.get(urls[0]).text:
                time.sleep(0.05)
            cold = (time.perf_counter() - started) * 1000
        warm = [server_ms(client.get(urls[i % len(urls)])) for i in range(runs)]
        out[name] = {
            "cold_ms": round(cold, 1),
            "p50_ms": round(statistics.median(warm), 1),
            "p99_ms": round(percentile(warm, 99), 1),
        }
        print(
            f"{name:<14} cold {cold:8.1f} ms   p50 {out[name]['p50_ms']:7.1f}   p99 {out[name]['p99_ms']:7.1f}",
            file=sys.stderr,
        )
    return out


def record_injections(mem: memlane.Memory, n: int) -> None:
    """``n`` injections as the first-prompt hook records them: a search, its hits as items."""
    for i in range(n):
        query = QUERIES[i % len(QUERIES)] + f" {WORDS[i % len(WORDS)]}"
        hits = mem.search(query, 8)
        items = [
            {"key": h.id, "src": h.source, "rank": r, "rel": round(h.relevance or 0, 4),
             "bm25": round(h.scores.get("bm25") or 0, 4), "cov": round(h.scores.get("coverage") or 0, 4), "tok": 240}
            for r, h in enumerate(hits, 1)
        ]  # fmt: skip
        audit.record(mem.home, client="claude-code", session=f"agent-{i % 50}", event="user-prompt-submit",
                     project=None, query=query, tokens=240 * len(items), items=items)  # fmt: skip


def large_home(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    if args.home:
        home = args.home
    else:
        home = work / "large"
        generate(work / "archive", 1500, 70)
        memlane.open(home, embedder="none").index([work / "archive"], embed=False)
    mem = memlane.open(home, embedder="none")
    record_injections(mem, args.injections)
    # A brain of 200 entries (past the default caps: the page must hold a big one), a tenth superseded.
    unbounded = {"KD": None, "LL": None}
    brain = memlane.Brain(home / "brain", home=home, caps=unbounded, char_caps=unbounded)
    for i in range(200):
        entry = brain.add(
            "KD" if i % 2 else "LL", f"Decision {i}: {' '.join(WORDS[i % 80 : i % 80 + 8])}.", on="2026-03-01"
        )
        if i % 10 == 0:
            brain.supersede(
                entry.key, f"Decision {i}, revised: {' '.join(WORDS[i % 70 : i % 70 + 6])}.", on="2026-04-01"
            )
    sessions = mem.sessions()
    chunk = mem.session(sessions[len(sessions) // 2].session_id)[0].id
    client = TestClient(create_app(memlane.open(home, embedder="none"), Access("127.0.0.1", 8765)),
                        base_url="http://127.0.0.1:8765")  # fmt: skip
    pages = {
        "overview": ["/"],
        "search": [f"/search?q={q.replace(' ', '+')}" for q in QUERIES],
        "sessions": ["/sessions", "/sessions?page=2", "/sessions?page=20"],
        "session": [f"/session?id={s.session_id}" for s in sessions[:: max(1, len(sessions) // 20)]],
        "chunk": [f"/chunk?id={chunk}"],
        "brain": ["/brain"],
        "injections": ["/injections", "/injections?page=3", f"/injections?key={chunk}"],
        "secrets": ["/secrets"],
    }
    status = mem.status()
    return {
        "home": str(home),
        "chunks": status["chunks"],
        "sessions": len(sessions),
        "injections": args.injections,
        "pages": time_pages(client, pages, args.runs),
    }


def many_sessions(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    home = work / "sessions"
    t = time.perf_counter()
    generate(work / "small", args.sessions, 2)
    memlane.open(home, embedder="none").index([work / "small"], embed=False)
    print(f"{args.sessions} sessions indexed in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    client = TestClient(create_app(memlane.open(home, embedder="none"), Access("127.0.0.1", 8765)),
                        base_url="http://127.0.0.1:8765")  # fmt: skip
    last = args.sessions // 50
    return {
        "sessions": len(memlane.open(home, embedder="none").sessions()),
        "pages": time_pages(
            client, {"sessions": ["/sessions"], "sessions_deep": [f"/sessions?page={last}"]}, args.runs
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, help="a large home to time (written to: injections and a brain are added)")
    ap.add_argument("--sessions", type=int, default=10_000, help="sessions of the session-list home (default 10,000)")
    ap.add_argument("--injections", type=int, default=2_000, help="injections recorded first (default 2,000)")
    ap.add_argument("--runs", type=int, default=40, help="answers timed per page after the first (default 40)")
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlane-bench-ui-") as tmp:
        result = {
            "machine": f"{platform.machine()} · {platform.processor() or platform.system()}",
            "large": large_home(args, Path(tmp)),
            "many_sessions": many_sessions(args, Path(tmp)),
        }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
