"""The design's own episodic format (tool records without ``content``) is indexed by ``memlane index``
as it is, without ``--format generic``."""

from __future__ import annotations

import json

from conftest import write_jsonl

from memlane.cli import main

EPISODE = [
    {
        "role": "user",
        "content": "Why does the exporter crash on empty batches?",
        "timestamp": "2026-03-01T10:00:00Z",
        "session_id": "ep-7",
    },
    {
        "role": "tool_call",
        "name": "Bash",
        "input": {"command": "pytest tests/test_exporter.py -q"},
        "timestamp": "2026-03-01T10:00:05Z",
        "session_id": "ep-7",
    },
    {
        "role": "tool_result",
        "output": "1 failed: IndexError in exporter.flush",
        "timestamp": "2026-03-01T10:00:09Z",
        "session_id": "ep-7",
    },
    {
        "role": "assistant",
        "tool_call": {"name": "Edit", "input": {"file_path": "exporter.py"}},
        "timestamp": "2026-03-01T10:00:15Z",
        "session_id": "ep-7",
    },
    {
        "role": "assistant",
        "content": "flush() read batch[0] of an empty batch; it returns early now.",
        "timestamp": "2026-03-01T10:00:20Z",
        "session_id": "ep-7",
    },
]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_memlane_index_reads_an_episodic_session(tmp_path, capsys):
    path = write_jsonl(tmp_path / "episodes" / "ep-7.jsonl", EPISODE)
    home = str(tmp_path / "home")
    code, out, err = run(capsys, "--home", home, "--json", "index", str(path), "--embed", "none")
    assert code == 0, err
    report = json.loads(out)
    # Before, detection wanted `content` on every record: unknown_format, nothing indexed.
    assert (report["files_indexed"], report["records_skipped"]) == (1, {})
    assert report["chunks_added"] >= 1

    # The tool call, its output and the answer are searchable, in the session they belong to.
    code, out, _ = run(
        capsys, "--home", home, "--json", "search", "IndexError exporter.flush pytest", "--embed", "none"
    )
    [hit] = json.loads(out)
    assert code == 0 and hit["path"] == str(path) and hit["session_id"] == "ep-7"
    assert "[tool Bash] pytest tests/test_exporter.py -q" in hit["text"]
    assert "[result] 1 failed: IndexError in exporter.flush" in hit["text"]
    assert "[tool Edit] exporter.py" in hit["text"] and "returns early now" in hit["text"]
