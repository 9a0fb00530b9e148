"""N processes writing to one brain at once lose nothing (file lock + atomic rename)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from conftest import write_jsonl

from memlane.brain import Brain
from memlane.brain.document import MEMORY_SCHEMA, parse

PROCESSES = 6
ADDS_EACH = 8


def _add_many(brain_dir: str, home: str, worker: int, start: multiprocessing.synchronize.Event) -> None:
    brain = Brain(brain_dir, home=home, caps={"RC": None, "LL": None})
    start.wait()
    for i in range(ADDS_EACH):
        brain.add("rc" if i % 2 else "ll", f"worker {worker} note {i}", on="2026-04-01")


def _distill(path: str, brain_dir: str, home: str, start: multiprocessing.synchronize.Event) -> None:
    from datetime import timezone

    from memlane.brain import distill

    start.wait()
    distill(path, brain=Brain(brain_dir, home=home), tz=timezone.utc)


def _run(target, args_for, n: int = PROCESSES) -> None:
    # spawn, not fork: forking a process that imported the native extension is unsafe and
    # warns on recent Pythons.
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=target, args=(*args_for(i), start)) for i in range(n)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * n


def test_concurrent_adds_lose_nothing(tmp_path: Path):
    brain_dir, home = str(tmp_path / "brain"), str(tmp_path / "home")
    _run(_add_many, lambda n: (brain_dir, home, n))
    doc = parse((tmp_path / "brain" / "MEMORY.md").read_text(), MEMORY_SCHEMA)
    entries = doc.entries()
    assert len(entries) == PROCESSES * ADDS_EACH
    assert len({e.key for e in entries}) == len(entries)
    assert {e.text for e in entries} == {f"worker {w} note {i}" for w in range(PROCESSES) for i in range(ADDS_EACH)}
    # Keys of each section are dense: no two writers ever took the same number.
    for prefix in ("LL", "RC"):
        numbers = sorted(e.number for e in entries if e.prefix == prefix)
        assert numbers == list(range(1, PROCESSES * ADDS_EACH // 2 + 1))
    # The index lists every entry exactly once.
    assert sum(line.startswith("- [") for line in doc.preamble) == len(entries)
    events = [json.loads(line) for line in (tmp_path / "home" / "events.jsonl").read_text().splitlines()]
    assert sum(e["type"] == "add" for e in events) == len(entries)


def test_concurrent_distills_of_one_session_write_it_once(tmp_path: Path):
    rows = [
        {
            "role": "user",
            "content": "Which queue for the exporter?",
            "timestamp": "2026-03-02T10:00:00Z",
            "session_id": "q1",
        },
        {
            "role": "assistant",
            "content": "We decided to use SQS FIFO queues for `exporter.py` because ordering matters.",
            "timestamp": "2026-03-02T10:01:00Z",
            "session_id": "q1",
        },
    ]
    path = str(write_jsonl(tmp_path / "q1.jsonl", rows))
    brain_dir, home = str(tmp_path / "brain"), str(tmp_path / "home")
    _run(_distill, lambda n: (path, brain_dir, home), n=4)
    daily = (tmp_path / "brain" / "DailyActivity" / "2026-03-02.md").read_text()
    assert daily.count("memlane:session id=q1 ") == 1
    assert [e.key for e in Brain(brain_dir, home=home).entries()] == ["KD01"]
