"""MemPalace half of ``benches/side_by_side.py``; runs inside the MemPalace venv, never imports memlane.

Reads a job (JSON) naming conversations, each as transcript files and questions; for each
conversation it mines the files into a fresh palace with MemPalace's own conversation miner
(``mempalace.convo_miner.mine_convos``, what ``mempalace mine --mode convos`` runs) and asks
every question through its own search API (``mempalace.searcher.search_memories``, what the
MCP server and ``mempalace search`` call), with the product defaults except ``n_results``.
Writes the ranked hits (source file name, drawer text) as JSON. Scoring is the caller's job.

Usage (the caller sets MEMPALACE_CONFIG_DIR to a temporary folder):
    .venv-mempalace/bin/python benches/mempalace_worker.py JOB.json OUT.json
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path


def _search(search_memories, q: dict, palace: str, n: int, cid: str) -> list[dict[str, str]]:
    res = search_memories(q["text"], palace, n_results=n)
    if "error" in res:
        raise RuntimeError(f"{cid} {q['qid']}: {res['error']}")
    return [{"source_file": h["source_file"], "text": h["text"]} for h in res["results"]]


def run(job: dict) -> dict:
    """Mine and search every conversation of ``job``; returns ``{"conversations": [...]}``."""
    from mempalace.convo_miner import mine_convos
    from mempalace.searcher import search_memories

    out = []
    for conv in job["conversations"]:
        with tempfile.TemporaryDirectory(prefix="mempalace-bench-") as tmp:
            convo_dir = Path(tmp) / "convos"
            convo_dir.mkdir()
            for name, text in conv["files"].items():
                (convo_dir / name).write_text(text, encoding="utf-8")
            palace = str(Path(tmp) / "palace")
            t0 = time.perf_counter()
            # The miner prints a progress report on stdout; stdout of this process is not the result channel.
            with contextlib.redirect_stdout(sys.stderr):
                mine_convos(str(convo_dir), palace, wing="bench")
            t1 = time.perf_counter()
            answers: dict[str, dict[str, list[dict[str, str]]]] = {}
            for q in conv["questions"]:
                # As memlane's harness does: the k-hit answer, and a deeper one for the session ranking.
                answers[q["qid"]] = {
                    name: _search(search_memories, q, palace, n, conv["cid"])
                    for name, n in (("hits", job["k"]), ("deep", job["depth"]))
                }
            out.append(
                {
                    "cid": conv["cid"],
                    "answers": answers,
                    "seconds": {"mine": t1 - t0, "search": time.perf_counter() - t1},
                }
            )
        print(
            f"mempalace {conv['cid']}: mined {t1 - t0:.0f}s, searched {len(conv['questions'])} questions",
            file=sys.stderr,
        )
    return {"conversations": out}


def main() -> None:
    """Entry point: ``mempalace_worker.py JOB.json OUT.json``."""
    job_path, out_path = sys.argv[1:3]
    result = run(json.loads(Path(job_path).read_text(encoding="utf-8")))
    Path(out_path).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main()
