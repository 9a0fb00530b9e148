"""Dreaming reads the searches the events log recorded since its last run."""

from __future__ import annotations

import json
from pathlib import Path

from memlane.timeline.dream import _search_signals


def test_dreaming_reads_the_searches_of_a_log_that_rotated_since_its_last_run(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    line = lambda q: json.dumps({"type": "search", "query": q, "results": 0}) + "\n"  # noqa: E731
    log.write_text(line("before the last run") + line("after it"))
    offset = len(line("before the last run"))
    # The log rotated: what followed the offset is in events.jsonl.1, and a new log began.
    log.rename(tmp_path / "events.jsonl.1")
    log.write_text(line("in the new log"))
    events, end = _search_signals(tmp_path, offset)
    assert [e["query"] for e in events] == ["after it", "in the new log"]
    assert end == log.stat().st_size
    assert _search_signals(tmp_path, end) == ([], end)
